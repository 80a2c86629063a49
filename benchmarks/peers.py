"""The host side by side with its peers and with the physical floors, in one run.

Peers (install them with ``pip install -e '.[bench]'``; a missing one is skipped):
LangGraph (a one-node graph appending a reply, ``InMemorySaver`` / ``SqliteSaver``),
pydantic-ai (``FunctionModel`` returning a fixed reply; it keeps no history itself: the
caller passes ``message_history``) and openai-agents (a fake ``Model``, ``SQLiteSession``).
No network: every model is an offline stand-in.

Measures, each at history N small and large (10 and 1,000; --full: 10 and 10,000):

    fork        one fork at the last turn and the bytes it keeps (tracemalloc)
                host: turn.fork(); LangGraph: update_state on the thread's checkpoint;
                pydantic-ai: list(history) (it has no fork: copying the list is the branch);
                openai-agents: a new in-memory SQLiteSession given the parent's items.
                floors: a parent pointer (a two-slot object), a list slice of N.
    read-back   reading a history of 5,000 turns (500 by default) back
                host: session.turns(); LangGraph: get_state().values; pydantic-ai:
                result.all_messages(); openai-agents: session.get_items(). floor: list slice.
    turn        one turn with the offline model, in memory
                host: session.send (EchoModel, MemoryStore); LangGraph: invoke;
                pydantic-ai: agent.run(message_history=...); openai-agents: Runner.run.
                floor: anyio.sleep(0).
    durable     one turn written to SQLite, and the bytes a fork adds to the file
                host: SqliteStore; LangGraph: SqliteSaver; openai-agents: SQLiteSession
                on a file; floor: a bare INSERT+COMMIT with SqliteStore's pragmas
                (journal_mode WAL, synchronous FULL) and a row holding a parent pointer.
    startup     a fresh process importing the library and setting up one agent/host;
                floor: an empty anyio.run.

Prints the figures, each peer's cost over the host's ("x host") and the host's over the floor.

    python benchmarks/peers.py [--full] [--only fork,read-back,turn,durable,startup]
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import operator
import os
import sqlite3
import statistics
import subprocess
import sys
import tempfile
import time
import tracemalloc
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Annotated, Any, TypedDict

import anyio

import fork_cost
from host_sim import EchoModel, Host, MemoryStore, SqliteStore
from modular_sdk import AiPromptMessage

MEASURES = ("fork", "read-back", "turn", "durable", "startup")
PEERS = ("langgraph", "pydantic-ai", "openai-agents")

Figure = float | None
"""Seconds or bytes; ``None``: the peer is not installed, or has no such operation."""


def median_sync(action: Callable[[], object], runs: int) -> float:
    times: list[float] = []
    gc.collect()
    gc.disable()
    try:
        for _ in range(runs):
            start = time.perf_counter()
            action()
            times.append(time.perf_counter() - start)
    finally:
        gc.enable()
    return statistics.median(times)


async def median_async(action: Callable[[], Awaitable[object]], runs: int) -> float:
    times: list[float] = []
    gc.collect()
    gc.disable()
    try:
        for _ in range(runs):
            start = time.perf_counter()
            await action()
            times.append(time.perf_counter() - start)
    finally:
        gc.enable()
    return statistics.median(times)


def kept_bytes(action: Callable[[], object], runs: int) -> float:
    """Bytes still allocated per call after ``runs`` calls (results kept, as a store keeps forks)."""
    kept: list[object] = []
    gc.collect()
    tracemalloc.start()
    before, _ = tracemalloc.get_traced_memory()
    for _ in range(runs):
        kept.append(action())
    gc.collect()
    after, _ = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    return (after - before) / runs


def file_bytes(path: Path) -> int:
    return sum(Path(f"{path}{s}").stat().st_size for s in ("", "-wal") if Path(f"{path}{s}").exists())


# -- the peers, each behind an import that may fail ---------------------------------------


class LangGraph:
    """A one-node graph whose node appends a reply to ``messages`` (``operator.add``)."""

    def __init__(self, checkpointer: Any) -> None:
        from langgraph.graph import END, START, StateGraph

        class State(TypedDict):
            messages: Annotated[list[dict[str, str]], operator.add]

        def reply(state: State) -> dict[str, list[dict[str, str]]]:
            return {"messages": [{"role": "assistant", "content": "ok"}]}

        graph = StateGraph(State)
        graph.add_node("reply", reply)
        graph.add_edge(START, "reply")
        graph.add_edge("reply", END)
        self.app: Any = graph.compile(checkpointer=checkpointer)
        self.config: dict[str, Any] = {"configurable": {"thread_id": "t"}}

    def fill(self, n: int) -> None:
        """A thread holding ``n`` messages (one invoke: its input and the reply)."""
        self.app.invoke({"messages": [{"role": "user", "content": f"m {i}"} for i in range(n - 1)]}, self.config)

    def turn(self) -> None:
        self.app.invoke({"messages": [{"role": "user", "content": "hello"}]}, self.config)

    def fork(self) -> Any:
        return self.app.update_state(self.app.get_state(self.config).config, {"messages": []})

    def read(self) -> list[Any]:
        messages: list[Any] = self.app.get_state(self.config).values["messages"]
        return messages


def langgraph_memory() -> LangGraph:
    from langgraph.checkpoint.memory import InMemorySaver

    return LangGraph(InMemorySaver())


def pydantic_agent() -> Any:
    from pydantic_ai import Agent
    from pydantic_ai.messages import ModelResponse, TextPart
    from pydantic_ai.models.function import FunctionModel

    def reply(messages: Any, info: Any) -> ModelResponse:
        return ModelResponse(parts=[TextPart("ok")])

    return Agent(FunctionModel(reply))


def pydantic_history(n: int) -> list[Any]:
    from pydantic_ai.messages import ModelRequest, ModelResponse, TextPart, UserPromptPart

    out: list[Any] = []
    for i in range(n // 2):
        out.append(ModelRequest(parts=[UserPromptPart(f"m {i}")]))
        out.append(ModelResponse(parts=[TextPart("ok")]))
    return out


def openai_agent() -> Any:
    from agents import Agent, ModelResponse, Usage, set_tracing_disabled
    from agents.models.interface import Model
    from openai.types.responses import ResponseOutputMessage, ResponseOutputText

    set_tracing_disabled(True)

    class FakeModel(Model):
        async def get_response(self, *args: Any, **kwargs: Any) -> ModelResponse:
            text = ResponseOutputText(text="ok", type="output_text", annotations=[])
            message = ResponseOutputMessage(id="m", type="message", role="assistant", status="completed", content=[text])
            return ModelResponse(output=[message], usage=Usage(), response_id=None)

        def stream_response(self, *args: Any, **kwargs: Any) -> Any:
            raise NotImplementedError("the benchmark does not stream")

    return Agent(name="bench", model=FakeModel())


def openai_items(n: int) -> list[Any]:
    return [
        {"role": "user", "content": f"m {i}"} if i % 2 == 0 else {"role": "assistant", "content": "ok"} for i in range(n)
    ]


def installed(peer: str) -> bool:
    module = {"langgraph": "langgraph.graph", "pydantic-ai": "pydantic_ai", "openai-agents": "agents"}[peer]
    try:
        __import__(module)
    except ImportError:
        return False
    return True


# -- measures -----------------------------------------------------------------------------


class Table:
    """Rows of one measure: the host, each peer, the floor; ratios against the host and the floor."""

    def __init__(self, title: str, unit: str) -> None:
        self.unit = unit
        print(f"\n== {title} ==", flush=True)
        print(f"{'':<22} {'host':>11} " + " ".join(f"{p:>13}" for p in PEERS) + f" {'floor':>11}   host/floor  " + "  ".join(f"{p[:6]}/host" for p in PEERS))

    def fmt(self, value: Figure) -> str:
        if value is None:
            return "-"
        if self.unit == "s":
            return f"{value * 1e6:,.1f} us" if value < 0.01 else f"{value * 1e3:,.1f} ms"
        return f"{value:,.0f} B" if value < 2**20 else f"{value / 2**20:,.2f} MiB"

    def row(self, label: str, host: Figure, peers: dict[str, Figure], floor: Figure) -> None:
        ratios = "  ".join(f"{_times(peers.get(p), host):>12}" for p in PEERS)
        over_floor = _times(host, floor)
        print(
            f"{label:<22} {self.fmt(host):>11} "
            + " ".join(f"{self.fmt(peers.get(p)):>13}" for p in PEERS)
            + f" {self.fmt(floor):>11}   {over_floor:>10}  {ratios}",
            flush=True,
        )


def _times(a: Figure, b: Figure) -> str:
    """``a / b`` as a factor, or ``-``."""
    if a is None or not b:
        return "-"
    r = a / b
    return f"{r:.2f}x" if r < 10 else f"{r:,.0f}x"


class _Pointer:
    __slots__ = ("anchor", "parent")

    def __init__(self, parent: object, anchor: int) -> None:
        self.parent = parent
        self.anchor = anchor


def fork_measure(sizes: tuple[int, int], have: set[str]) -> None:
    table = Table("fork: time and bytes kept per fork, at history N", "s")
    figures: dict[int, tuple[Figure, dict[str, Figure], Figure, Figure, dict[str, Figure], Figure]] = {}
    anyio.run(fork_cost.measure, 10, 50, 100)  # warm up: the first forks of a process pay for imports and caches
    for n in sizes:
        t_host, _, b_host = anyio.run(fork_cost.measure, n, 300, 2000)
        times: dict[str, Figure] = {}
        kept: dict[str, Figure] = {}
        if "langgraph" in have:
            lg = langgraph_memory()
            lg.fill(n)
            lg.fork()
            times["langgraph"] = median_sync(lg.fork, 30)
            kept["langgraph"] = kept_bytes(lg.fork, 10)
        if "pydantic-ai" in have:
            history = pydantic_history(n)
            times["pydantic-ai"] = median_sync(lambda: list(history), 300)
            kept["pydantic-ai"] = kept_bytes(lambda: list(history), 100)
        if "openai-agents" in have:
            times["openai-agents"] = asyncio.run(openai_fork_time(n))
            kept["openai-agents"] = None  # the items live in SQLite, out of tracemalloc's sight
        parent = _Pointer(None, 0)
        t_floor = median_sync(lambda: _Pointer(parent, n), 2000)
        b_floor = kept_bytes(lambda: _Pointer(parent, n), 2000)
        figures[n] = (t_host, times, t_floor, b_host, kept, b_floor)
        table.row(f"time, N={n:,}", t_host, times, t_floor)
    byte_table = Table("fork: bytes kept per fork", "B")
    for n, figure in figures.items():
        byte_table.row(f"bytes, N={n:,}", figure[3], figure[4], figure[5])
    small, large = sizes
    growth = {p: _ratio(figures[large][1].get(p), figures[small][1].get(p)) for p in PEERS}
    print(f"growth t(N={large:,})/t(N={small}): host {_ratio(figures[large][0], figures[small][0])}, " + ", ".join(f"{p} {g}" for p, g in growth.items()))
    history_list = list(range(large))
    print(f"list slice of {large:,} (a copying fork's floor): {median_sync(lambda: history_list[:], 300) * 1e6:,.1f} us")


async def openai_fork_time(n: int) -> float:
    from agents import SQLiteSession

    parent = SQLiteSession("parent")
    await parent.add_items(openai_items(n))
    counter = iter(range(10**9))

    async def fork() -> None:
        child = SQLiteSession(f"fork-{next(counter)}")
        await child.add_items(await parent.get_items())
        child.close()

    return await median_async(fork, 20)


def _ratio(a: Figure, b: Figure) -> str:
    return "-" if a is None or not b else f"{a / b:.2f}x"


def read_measure(n: int, have: set[str]) -> None:
    table = Table(f"read-back: a history of {n:,} turns", "s")

    async def host_read() -> float:
        async with Host(model=EchoModel(), store=MemoryStore(), handler_timeout=None) as host:
            chat = await host.sessions.create()
            for i in range(n):
                await chat.send(AiPromptMessage(text=f"m {i}"))
            return await median_async(chat.turns, 50)

    t_host = anyio.run(host_read)
    peers: dict[str, Figure] = {}
    if "langgraph" in have:
        lg = langgraph_memory()
        lg.fill(2 * n)
        peers["langgraph"] = median_sync(lg.read, 50)
    if "pydantic-ai" in have:
        result = pydantic_agent().run_sync("m", message_history=pydantic_history(2 * n - 2))
        peers["pydantic-ai"] = median_sync(result.all_messages, 50)
    if "openai-agents" in have:
        peers["openai-agents"] = asyncio.run(openai_read(2 * n))
    history = list(range(n))
    table.row(f"read {n:,} turns", t_host, peers, median_sync(lambda: history[:], 300))


async def openai_read(items: int) -> float:
    from agents import SQLiteSession

    session = SQLiteSession("read")
    await session.add_items(openai_items(items))
    return await median_async(session.get_items, 20)


def turn_measure(sizes: tuple[int, int], have: set[str]) -> None:
    table = Table("turn: one turn in memory with the offline model, at history N", "s")
    by_n: dict[int, tuple[Figure, dict[str, Figure]]] = {}
    floor = anyio.run(median_async, lambda: anyio.sleep(0), 2000)
    for n in sizes:

        async def host_turn() -> float:
            async with Host(model=EchoModel(), store=MemoryStore(), handler_timeout=None) as host:
                chat = await host.sessions.create()
                for i in range(n):
                    await chat.send(AiPromptMessage(text=f"m {i}"))
                return await median_async(lambda: chat.send(AiPromptMessage(text="hello")), 200)

        t_host = anyio.run(host_turn)
        peers: dict[str, Figure] = {}
        if "langgraph" in have:
            lg = langgraph_memory()
            lg.fill(2 * n)
            peers["langgraph"] = median_sync(lg.turn, 30)
        if "pydantic-ai" in have:
            peers["pydantic-ai"] = asyncio.run(pydantic_turn(2 * n))
        if "openai-agents" in have:
            peers["openai-agents"] = asyncio.run(openai_turn(2 * n))
        by_n[n] = (t_host, peers)
        table.row(f"turn, N={n:,}", t_host, peers, floor)
    small, large = sizes
    print(
        f"growth t(N={large:,})/t(N={small}): host {_ratio(by_n[large][0], by_n[small][0])}, "
        + ", ".join(f"{p} {_ratio(by_n[large][1].get(p), by_n[small][1].get(p))}" for p in PEERS)
    )


async def pydantic_turn(messages: int) -> float:
    agent = pydantic_agent()
    history = pydantic_history(messages)

    async def turn() -> None:
        result = await agent.run("hello", message_history=history)
        history.extend(result.new_messages())

    return await median_async(turn, 20)


async def openai_turn(items: int) -> float:
    from agents import Runner, SQLiteSession

    agent = openai_agent()
    session = SQLiteSession("turns")
    await session.add_items(openai_items(items))
    return await median_async(lambda: Runner.run(agent, "hello", session=session), 30)


def durable_measure(n: int, folder: Path, have: set[str]) -> None:
    table = Table(f"durable: one turn written to SQLite, at history N={n:,}", "s")
    forks = 100
    t_host, b_host = anyio.run(host_durable, folder / "host.sqlite", n, forks)
    times: dict[str, Figure] = {}
    fork_bytes: dict[str, Figure] = {}
    if "langgraph" in have:
        times["langgraph"], fork_bytes["langgraph"] = langgraph_durable(folder / "langgraph.sqlite", n)
    if "openai-agents" in have:
        times["openai-agents"], fork_bytes["openai-agents"] = asyncio.run(openai_durable(folder / "agents.sqlite", n))
    t_floor, b_floor = sqlite_floor(folder / "floor.sqlite")
    table.row("turn on disk", t_host, times, t_floor)
    Table(f"durable: bytes a fork adds to the file, at history N={n:,}", "B").row("fork on disk", b_host, fork_bytes, b_floor)


async def host_durable(path: Path, n: int, forks: int) -> tuple[float, float]:
    async with Host(store=SqliteStore(path), handler_timeout=None) as host:
        chat = await host.sessions.create()
        for i in range(n):
            await chat.send(AiPromptMessage(text=f"m {i}"))
        t = await median_async(lambda: chat.send(AiPromptMessage(text="hello")), 50)
        chat_id = chat.id
    before = file_bytes(path)
    async with Host(store=SqliteStore(path), handler_timeout=None) as host:
        last = (await (await host.sessions.get(chat_id)).turns())[-1]
        for _ in range(forks):
            await last.fork()
    return t, (file_bytes(path) - before) / forks


def langgraph_durable(path: Path, n: int) -> tuple[float, float]:
    from langgraph.checkpoint.sqlite import SqliteSaver

    conn = sqlite3.connect(path, check_same_thread=False)
    lg = LangGraph(SqliteSaver(conn))
    lg.fill(2 * n)
    t = median_sync(lg.turn, 20)
    conn.close()
    before = file_bytes(path)
    conn = sqlite3.connect(path, check_same_thread=False)
    lg = LangGraph(SqliteSaver(conn))
    forks = 10
    for _ in range(forks):
        lg.fork()
    conn.close()
    return t, (file_bytes(path) - before) / forks


async def openai_durable(path: Path, n: int) -> tuple[float, float]:
    from agents import Runner, SQLiteSession

    agent = openai_agent()
    session = SQLiteSession("chat", db_path=path)
    await session.add_items(openai_items(2 * n))
    t = await median_async(lambda: Runner.run(agent, "hello", session=session), 20)
    session.close()
    before = file_bytes(path)
    parent = SQLiteSession("chat", db_path=path)
    items = await parent.get_items()
    forks = 10
    for i in range(forks):
        child = SQLiteSession(f"fork-{i}", db_path=path)
        await child.add_items(items)
        child.close()
    parent.close()
    return t, (file_bytes(path) - before) / forks


def sqlite_floor(path: Path) -> tuple[float, float]:
    """A bare INSERT+COMMIT with SqliteStore's pragmas, and the bytes of a row holding a parent pointer."""
    conn = sqlite3.connect(path, isolation_level=None)
    conn.execute("PRAGMA journal_mode = WAL")
    conn.execute("PRAGMA synchronous = FULL")
    conn.execute("CREATE TABLE forks (id TEXT PRIMARY KEY, parent TEXT NOT NULL, anchor INTEGER NOT NULL)")
    counter = iter(range(10**9))

    def insert() -> None:
        conn.execute("BEGIN IMMEDIATE")
        conn.execute("INSERT INTO forks VALUES (?, ?, ?)", (f"ses_{next(counter):012d}", "ses_000000000000", 10_000))
        conn.execute("COMMIT")

    t = median_sync(insert, 200)
    conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    before = file_bytes(path)
    rows = 2000
    for _ in range(rows):
        insert()
    conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    conn.close()
    return t, (file_bytes(path) - before) / rows


STARTUP = {
    "floor": "import anyio\nasync def main() -> None: pass\nanyio.run(main)",
    "host": "import anyio\nfrom host_sim import Host\nasync def main():\n    async with Host(): pass\nanyio.run(main)",
    "host-import": "import host_sim",
    "langgraph": (
        "import operator\nfrom typing import Annotated, TypedDict\n"
        "from langgraph.checkpoint.memory import InMemorySaver\nfrom langgraph.graph import END, START, StateGraph\n"
        "class State(TypedDict):\n    messages: Annotated[list, operator.add]\n"
        "graph = StateGraph(State)\ngraph.add_node('reply', lambda state: {'messages': []})\n"
        "graph.add_edge(START, 'reply')\ngraph.add_edge('reply', END)\ngraph.compile(checkpointer=InMemorySaver())"
    ),
    "pydantic-ai": "from pydantic_ai import Agent\nfrom pydantic_ai.models.test import TestModel\nAgent(TestModel())",
    "openai-agents": "from agents import Agent\nAgent(name='bench')",
}
"""What a fresh process runs: import the library and set up one host, graph or agent."""


def startup_measure(have: set[str]) -> None:
    table = Table("startup: a fresh process, import and one host or agent", "s")
    figures: dict[str, Figure] = {}
    for name, code in STARTUP.items():
        if name in PEERS and name not in have:
            figures[name] = None
            continue
        command = [sys.executable, "-c", code]
        subprocess.run(command, check=True)  # warm the page cache and the compiled files
        figures[name] = median_sync(lambda: subprocess.run(command, check=True), 5)
    table.row("start-up", figures["host"], {p: figures[p] for p in PEERS}, figures["floor"])
    print(f"import host_sim alone: {figures['host-import'] or 0:.3f} s, {_times(figures['host-import'], figures['floor'])} the floor")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--full", action="store_true", help="history N up to 10,000 and read-back of 5,000 (default 1,000 and 500)")
    parser.add_argument("--only", default=",".join(MEASURES), help=f"comma-separated measures (default: {','.join(MEASURES)})")
    args = parser.parse_args()
    only = set(args.only.split(","))
    if only - set(MEASURES):
        parser.error(f"unknown measures {sorted(only - set(MEASURES))}; choose from {','.join(MEASURES)}")
    have = {p for p in PEERS if installed(p)}
    missing = [p for p in PEERS if p not in have]
    if missing:
        print(f"not installed, skipped: {', '.join(missing)} (pip install -e '.[bench]')")
    large = 10_000 if args.full else 1_000
    sizes = (10, large)
    print(f"history N = {sizes[0]} and {large:,}; Python {sys.version.split()[0]}; {os.cpu_count()} cores")
    with tempfile.TemporaryDirectory(prefix="host-sim-peers-") as folder:
        if "fork" in only:
            fork_measure(sizes, have)
        if "read-back" in only:
            read_measure(5_000 if args.full else 500, have)
        if "turn" in only:
            turn_measure(sizes, have)
        if "durable" in only:
            durable_measure(large, Path(folder), have)
        if "startup" in only:
            startup_measure(have)
    return 0


if __name__ == "__main__":
    sys.exit(main())

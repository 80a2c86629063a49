"""How the host's costs grow: issue 10's rows, each at a small and a large size, with targets.

For each row, prints the figure at both sizes, their ratio (or growth exponent) and PASS or
FAIL against the target. Only public names (``host_sim``, ``modular_sdk``) are used, so the
script measures whatever the host's internals are today.

    turn        one ``send`` (EchoModel, MemoryStore) in a session of N = 10 vs 10,000
                turns: median of --sends sends.                   target t(large)/t(small) <= 1.5
    fork-read   ``turns()`` of a fork holding k turns of a 10,000-turn parent vs of a
                k-turn root (k = 1 and 100): median of 300 calls. target <= 3x
    open        ``Host`` enter on a SqliteStore of 100 sessions holding 1,000 vs 1,000,000
                turns in all.                                      target <= 3x
    open-chain  ``Host`` enter on a SqliteStore holding a fork chain 1,000 vs 10,000
                deep (``session.fork()`` of the previous fork).   target: exponent <= 1.1
    add-edge    ``host.lineage.add_edge`` into one hub holding 1,000 vs 10,000 edges:
                median of 200 edges.                               target <= 1.5x (flat)
    lineage     ``host-sim lineage`` (a subprocess) on a store holding a fork chain
                1,000 vs 100,000 deep: wall time and bytes printed per session.
                                                 target: exit 0, time exponent <= 1.1, <= 64 B/session
    fork        ``turn.fork()`` and ``session.fork()`` at N = 10 vs 10,000 turns, and
                the bytes the host keeps per fork (benchmarks/fork_cost.py's measure).
                                                 target: t and bytes ratio <= 1.5, <= 1 KiB/fork

How the stores are written: the 1,000-turn store through a ``Host`` (100 sessions, 10 sends
each, sessions concurrently so that their writes share commits); the 1,000,000-turn store
is a copy of it whose turns are cloned by SQL (``INSERT ... SELECT`` on the ``turns`` table,
ordinals shifted, ids and message ids suffixed) -- the only place this script knows the
schema, and it fails with a clear message if ``turns`` changes shape. The open-chain stores
are written by a ``Host`` (one send, then ``session.fork()`` of the last fork, N times); the
lineage stores through ``SqliteStore.create_session`` (records built directly, concurrent
calls in batches of 2,000, one commit each). --keep DIR keeps the stores and reuses them
on the next run.

Default sizes are a tenth of the issue's (a short run); --full runs the issue's sizes.

    python benchmarks/growth.py [--full] [--rows turn,open,...] [--keep DIR] [--backend asyncio|trio]
"""

from __future__ import annotations

import argparse
import gc
import math
import shutil
import sqlite3
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Awaitable, Callable
from datetime import UTC, datetime
from pathlib import Path

import anyio

import fork_cost
from host_sim import (
    EchoModel,
    Host,
    LineageArtifact,
    LineageEdge,
    MemoryStore,
    SessionNode,
    SessionRecord,
    SqliteStore,
)
from modular_sdk import AiPromptMessage, AiRunnerId, ForkLineage, RootLineage, SessionId

ROWS = ("turn", "fork-read", "open", "open-chain", "add-edge", "lineage", "fork")


class Sizes:
    """The small and large size of every row; ``scale`` divides the large ones (a short run)."""

    def __init__(self, full: bool) -> None:
        d = 1 if full else 10
        self.full = full
        self.history = (10, 10_000 // d)
        self.fork_parent = 10_000 // d
        self.fork_read_k = (1, 100 // d)
        self.store_sessions = 100
        self.store_turns = (1_000, 1_000_000 // d)
        self.chain = (1_000 // d, 10_000 // d)
        self.hub = (1_000 // d, 10_000 // d)
        self.lineage = (1_000, 100_000 // d)
        self.fork = (10, 10_000 // d)


class Report:
    """Rows of figures, and whether every target held."""

    def __init__(self) -> None:
        self.failed: list[str] = []

    def row(self, name: str, what: str, small: str, large: str, ratio: str, ok: bool, target: str) -> None:
        verdict = "PASS" if ok else "FAIL"
        if not ok:
            self.failed.append(name)
        print(f"{name:<11} {what:<56} {small:>12} {large:>12} {ratio:>10}  {verdict}  ({target})", flush=True)


def us(seconds: float) -> str:
    return f"{seconds * 1e6:,.1f} us" if seconds < 0.01 else f"{seconds * 1e3:,.1f} ms"


def exponent(ratio: float, size_ratio: float) -> float:
    return math.log(ratio) / math.log(size_ratio)


async def median_call(action: Callable[[], Awaitable[object]], runs: int) -> float:
    """Median wall time of ``runs`` awaits of ``action`` (collector off, as timeit does)."""
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


# -- turn, fork-read ----------------------------------------------------------------------


async def history_rows(sizes: Sizes, sends: int, report: Report, rows: set[str]) -> None:
    per_turn: dict[int, float] = {}
    fork_reads: list[tuple[int, int, float, float]] = []
    for n in sizes.history:
        async with Host(model=EchoModel(), store=MemoryStore(), handler_timeout=None) as host:
            chat = await host.sessions.create()
            for i in range(n):
                await chat.send(AiPromptMessage(text=f"turn {i}"))
            if "turn" in rows:
                counter = iter(range(10**9))
                per_turn[n] = await median_call(lambda: chat.send(AiPromptMessage(text=f"more {next(counter)}")), sends)
            if "fork-read" in rows and n == sizes.history[1]:
                parent_turns = await chat.turns()
                for k in sizes.fork_read_k:
                    fork = await parent_turns[k - 1].fork()
                    root = await host.sessions.create()
                    for i in range(k):
                        await root.send(AiPromptMessage(text=f"root {i}"))
                    t_fork = await median_call(fork.turns, 300)
                    t_root = await median_call(root.turns, 300)
                    assert len(await fork.turns()) == len(await root.turns()) == k
                    fork_reads.append((k, len(parent_turns), t_root, t_fork))
    if "turn" in rows:
        small, large = sizes.history
        ratio = per_turn[large] / per_turn[small]
        report.row(
            "turn", f"send (EchoModel), history N={small} vs {large:,}", us(per_turn[small]), us(per_turn[large]),
            f"{ratio:.2f}x", ratio <= 1.5, "<= 1.5x",
        )
    for k, parent, t_root, t_fork in fork_reads:
        report.row(
            "fork-read", f"turns() k={k}: k-turn root vs fork of {parent:,}-turn parent", us(t_root), us(t_fork),
            f"{t_fork / t_root:.2f}x", t_fork / t_root <= 3, "<= 3x",
        )


# -- open, open-chain ---------------------------------------------------------------------


async def timed_enter(path: Path, runs: int, budget: float) -> float:
    """Median time of ``Host`` enter on the store at ``path`` (exit not counted); stops early past ``budget`` s."""
    times: list[float] = []
    spent = 0.0
    while len(times) < runs and (not times or spent < budget):
        gc.collect()
        host = Host(store=SqliteStore(path))
        start = time.perf_counter()
        await host.__aenter__()
        elapsed = time.perf_counter() - start
        await host.__aexit__(None, None, None)
        times.append(elapsed)
        spent += elapsed
    return statistics.median(times)


async def write_seed_store(path: Path, sessions: int, turns_each: int) -> None:
    """``sessions`` root sessions of ``turns_each`` sends each, through a Host."""

    async def fill(host: Host) -> None:
        chat = await host.sessions.create()
        for i in range(turns_each):
            await chat.send(AiPromptMessage(text=f"turn {i}"))

    async with Host(store=SqliteStore(path), handler_timeout=None) as host:
        async with anyio.create_task_group() as tg:
            for _ in range(sessions):
                tg.start_soon(fill, host)


def clone_turns(path: Path, copies: int, turns_each: int) -> None:
    """Multiply each session's turns by ``copies`` with SQL: ordinals shifted, ids suffixed."""
    conn = sqlite3.connect(path, isolation_level=None)
    try:
        columns = [row[1] for row in conn.execute("PRAGMA table_info(turns)")]
        needed = {"id", "session_id", "ordinal", "message_id"}
        if not needed <= set(columns):
            raise SystemExit(
                f"{path}: the turns table has columns {columns}, not {sorted(needed)}; "
                "update clone_turns in benchmarks/growth.py to the new schema"
            )
        (base,) = conn.execute("SELECT max(rowid) FROM turns").fetchone()
        shifted = {
            "id": "id || '~' || :k",
            "message_id": "message_id || '~' || :k",
            "ordinal": f"ordinal + :k * {turns_each}",
        }
        select = ", ".join(shifted.get(c, c) for c in columns)
        sql = f"INSERT INTO turns ({', '.join(columns)}) SELECT {select} FROM turns WHERE rowid <= {base} ORDER BY rowid"
        conn.execute("PRAGMA synchronous = OFF")
        conn.execute("BEGIN")
        for k in range(1, copies):
            conn.execute(sql, {"k": k})
        conn.execute("COMMIT")
        conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    finally:
        conn.close()


def copy_store(source: Path, target: Path) -> None:
    for suffix in ("", "-wal"):
        if Path(f"{source}{suffix}").exists():
            shutil.copyfile(f"{source}{suffix}", f"{target}{suffix}")


async def open_rows(sizes: Sizes, folder: Path, report: Report, rows: set[str]) -> None:
    if "open" in rows:
        per_session = [t // sizes.store_sessions for t in sizes.store_turns]
        paths = [folder / f"turns-{t}.sqlite" for t in sizes.store_turns]
        if not paths[0].exists():
            started = time.perf_counter()
            await write_seed_store(paths[0], sizes.store_sessions, per_session[0])
            print(f"  (wrote {paths[0].name} through a Host in {time.perf_counter() - started:.1f} s)", flush=True)
        if not paths[1].exists():
            started = time.perf_counter()
            copy_store(paths[0], paths[1])
            clone_turns(paths[1], per_session[1] // per_session[0], per_session[0])
            print(f"  (cloned {paths[1].name} by SQL in {time.perf_counter() - started:.1f} s)", flush=True)
        t_small = await timed_enter(paths[0], 5, 10.0)
        t_large = await timed_enter(paths[1], 5, 10.0)
        mib = paths[1].stat().st_size / 2**20
        report.row(
            "open", f"Host enter, {sizes.store_turns[0]:,} vs {sizes.store_turns[1]:,} turns ({mib:.0f} MiB)",
            us(t_small), us(t_large), f"{t_large / t_small:.2f}x", t_large / t_small <= 3, "<= 3x",
        )
    if "open-chain" in rows:
        times: list[float] = []
        for depth in sizes.chain:
            path = folder / f"chain-{depth}.sqlite"
            if not path.exists():
                started = time.perf_counter()
                async with Host(store=SqliteStore(path), handler_timeout=None) as host:
                    fork = await host.sessions.create()
                    await fork.send(AiPromptMessage(text="hello"))
                    for _ in range(depth):
                        fork = await fork.fork()
                print(f"  (wrote {path.name} through a Host in {time.perf_counter() - started:.1f} s)", flush=True)
            times.append(await timed_enter(path, 5, 10.0))
        small, large = sizes.chain
        e = exponent(times[1] / times[0], large / small)
        report.row(
            "open-chain", f"Host enter, fork chain {small:,} vs {large:,} deep", us(times[0]), us(times[1]),
            f"exp {e:.2f}", e <= 1.1, "exponent <= 1.1: linear or better",
        )


# -- add-edge -----------------------------------------------------------------------------


async def edge_row(sizes: Sizes, report: Report) -> None:
    small, large = sizes.hub
    per_edge: dict[int, float] = {}
    async with Host(store=MemoryStore(), handler_timeout=None) as host:
        hub = await host.sessions.create()
        others = [await host.sessions.create() for _ in range(large + 100)]
        added = 0
        for mark in (small, large):
            while added < mark - 100:
                await host.lineage.add_edge(others[added].id, hub.id, "used_result_of")
                added += 1
            sources = iter(others[added : added + 200])
            per_edge[mark] = await median_call(lambda: host.lineage.add_edge(next(sources).id, hub.id, "used_result_of"), 200)
            added += 200
    ratio = per_edge[large] / per_edge[small]
    report.row(
        "add-edge", f"add_edge into a hub of {small:,} vs {large:,} edges", us(per_edge[small]), us(per_edge[large]),
        f"{ratio:.2f}x", ratio <= 1.5, "<= 1.5x: flat",
    )


# -- lineage ------------------------------------------------------------------------------

T0 = datetime(2026, 1, 1, tzinfo=UTC)
RUNNER = AiRunnerId("echo")


async def write_chain_records(path: Path, depth: int) -> None:
    """A root and ``depth`` forks, each of the previous one, as records (no turns)."""
    store = SqliteStore(path)
    await store.open()
    try:

        async def create(i: int) -> None:
            sid = SessionId(f"c-{i}")
            if i == 0:
                record = SessionRecord(id=sid, lineage=RootLineage(), metadata=None, model="echo", cwd="/", runner_id=RUNNER, created_at=T0)
                await store.create_session(record, SessionNode(session_id=sid, created_at=T0), None)
                return
            parent = SessionId(f"c-{i - 1}")
            lineage = ForkLineage(parent_session_id=parent, parent_turn_ordinal=0, parent_runner_id=RUNNER, depth=i, forked_at=T0)
            record = SessionRecord(id=sid, lineage=lineage, metadata=None, model="echo", cwd="/", runner_id=RUNNER, created_at=T0)
            artifact = LineageArtifact(type="turn", source_id="c-0/t-0", label="turn 0")
            edge = LineageEdge(from_session_id=parent, to_session_id=sid, relation="branched_from", created_at=T0, artifact=artifact)
            await store.create_session(record, SessionNode(session_id=sid, created_at=T0), edge)

        for start in range(0, depth + 1, 2_000):
            async with anyio.create_task_group() as tg:  # concurrent calls share one commit
                for i in range(start, min(start + 2_000, depth + 1)):
                    tg.start_soon(create, i)
    finally:
        await store.close()


async def lineage_row(sizes: Sizes, folder: Path, report: Report) -> None:
    figures: list[tuple[float, int, int]] = []
    for depth in sizes.lineage:
        path = folder / f"lineage-{depth}.sqlite"
        if not path.exists():
            started = time.perf_counter()
            await write_chain_records(path, depth)
            print(f"  (wrote {path.name} by SqliteStore.create_session in {time.perf_counter() - started:.1f} s)", flush=True)
        start = time.perf_counter()
        done = subprocess.run(
            [sys.executable, "-m", "host_sim", "lineage", "--store", str(path)], capture_output=True, check=False
        )
        elapsed = time.perf_counter() - start
        if done.returncode != 0:
            last = done.stderr.decode(errors="replace").strip().splitlines()[-1:] or ["(no output)"]
            print(f"  host-sim lineage exited {done.returncode} at depth {depth:,}: {last[0]}", flush=True)
        figures.append((elapsed, len(done.stdout), done.returncode))
    (t_small, _, rc_small), (t_large, bytes_large, rc_large) = figures
    small, large = sizes.lineage
    e = exponent(t_large / t_small, large / small)
    per_session = bytes_large / (large + 1)
    ok = rc_small == rc_large == 0 and e <= 1.1 and per_session <= 64
    report.row(
        "lineage", f"host-sim lineage, chain {small:,} vs {large:,} deep", f"{t_small:.2f} s", f"{t_large:.2f} s",
        f"exp {e:.2f}", ok, f"exit {rc_large}, {per_session:.0f} B/session at {large:,}; exp <= 1.1, <= 64 B",
    )


# -- fork ---------------------------------------------------------------------------------


def fork_row(sizes: Sizes, backend: str, report: Report) -> None:
    results = [anyio.run(fork_cost.measure, n, 300, 4000, backend=backend) for n in sizes.fork]
    (turn_s, session_s, bytes_s), (turn_l, session_l, bytes_l) = results
    small, large = sizes.fork
    for what, a, b in (("turn.fork()", turn_s, turn_l), ("session.fork()", session_s, session_l)):
        report.row("fork", f"{what}, history N={small} vs {large:,}", us(a), us(b), f"{b / a:.2f}x", b / a <= 1.5, "<= 1.5x")
    # fork_cost.measure gives three figures: handles dropped, turn.fork's kept, session.fork's kept
    for what, b_s, b_l in zip(("", ", turn.fork kept", ", session.fork kept"), bytes_s, bytes_l, strict=True):
        report.row(
            "fork", f"bytes kept per fork{what}, N={small} vs {large:,}", f"{b_s:,.0f} B", f"{b_l:,.0f} B",
            f"{b_l / b_s:.2f}x", b_l / b_s <= 1.5 and max(b_s, b_l) <= 1024, "<= 1.5x and <= 1 KiB",
        )


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--full", action="store_true", help="the issue's sizes (default: a tenth of the large ones)")
    parser.add_argument("--rows", default=",".join(ROWS), help=f"comma-separated rows to run (default: all of {','.join(ROWS)})")
    parser.add_argument("--sends", type=int, default=200, help="sends timed per history size")
    parser.add_argument("--keep", metavar="DIR", help="write the stores here and reuse them on the next run")
    parser.add_argument("--backend", choices=("asyncio", "trio"), default="asyncio")
    args = parser.parse_args()
    rows = set(args.rows.split(","))
    unknown = rows - set(ROWS)
    if unknown:
        parser.error(f"unknown rows {sorted(unknown)}; choose from {','.join(ROWS)}")
    sizes = Sizes(args.full)
    report = Report()
    print(f"sizes: {'the issue' if args.full else 'a tenth of the issue (--full for its sizes)'}; backend {args.backend}")
    print(f"{'row':<11} {'what':<56} {'small':>12} {'large':>12} {'ratio':>10}  verdict (target)")
    temporary = None if args.keep else tempfile.TemporaryDirectory(prefix="host-sim-growth-")
    folder = Path(args.keep) if args.keep else Path(temporary.name if temporary else ".")
    folder.mkdir(parents=True, exist_ok=True)
    try:
        if rows & {"turn", "fork-read"}:
            anyio.run(history_rows, sizes, args.sends, report, rows, backend=args.backend)
        if rows & {"open", "open-chain"}:
            anyio.run(open_rows, sizes, folder, report, rows, backend=args.backend)
        if "add-edge" in rows:
            anyio.run(edge_row, sizes, report, backend=args.backend)
        if "lineage" in rows:
            anyio.run(lineage_row, sizes, folder, report, backend=args.backend)
        if "fork" in rows:
            fork_row(sizes, args.backend, report)
    finally:
        if temporary is not None:
            temporary.cleanup()
    print("all targets met" if not report.failed else f"targets missed: {', '.join(dict.fromkeys(report.failed))}")
    return 1 if report.failed else 0


if __name__ == "__main__":
    sys.exit(main())

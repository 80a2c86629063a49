"""PostgresStore beside SqliteStore: turns per second with 1, 2 and 4 host processes, fork cost,
cross-host event latency and the cost of the erasure check.

Starts a throwaway PostgreSQL server from the Debian binaries (``tests/host/postgres_server.py``,
durable settings: fsync on, ``synchronous_commit = on``) and measures, on this machine:

- **turns/s, distinct sessions**: H host processes (1, 2, 4), each sending TURNS prompts
  (EchoModel) to a session of its own, one after another; all start together.
- **turns/s, one shared session**: the same H processes all sending to one session (turns
  of one session run one at a time across hosts: this is the serialized case).
- **fork**: a session of N turns (N = 10 and 10,000, bulk-loaded), forked 100 times by a
  host that has the session loaded: time per fork and bytes per fork (the fork's rows;
  and the database or file growth over the 100 forks, divided by 100).

- **cross-host event latency**: a host process runs TURNS turns; a host in this process
  subscribes; for each of the other host's ``turn_finished`` events, the time from its
  ``at`` (when it was published there) to when the subscriber here reads it: p50 and p95.
- **scaling**: distinct-session turns/s of 2 and 4 host processes over 1.
- **write transactions per turn and per fork**: counted by the server itself, as the
  transaction ids PostgreSQL assigned (``pg_snapshot_xmax(pg_current_snapshot())`` before
  and after, on an otherwise idle database: only a transaction that writes gets one) over
  100 turns and 100 forks of one host.
- **ms per turn at N = 10 and 1,000, beside LangGraph's PostgresSaver** (the ``bench``
  extra, same server, same run): a session (a LangGraph thread) of N turns, then 100
  turns more, one at a time; and **ms per fork at N/2**: the host forks at the turn of
  ordinal N/2, LangGraph branches from the checkpoint holding the first N/2 turns
  (``update_state`` on that checkpoint's config).
- **the floor**: the median time of the smallest durable write transaction this server
  commits from Python (``BEGIN; INSERT; COMMIT``, one round trip; a turn needs two), a
  turn on `MemoryStore` (the host's own work), and what 15x LangGraph's turn at N = 1,000
  would allow a turn beside two floors and that.
- **the erasure check**: the one indexed read a turn makes when it takes its session lock
  (pipelined with the lock: one round trip), as the time it adds to taking the lock, and
  as a share of a whole turn's time.

The same rows for `SqliteStore` (one writer: 1 host process only; a second host on the file
gets StoreLockedError). Prints a Markdown table (what docs/performance.md shows).

    python benchmarks/postgres.py [--turns 200]
"""

from __future__ import annotations

import argparse
import json
import os
import sqlite3
import statistics
import subprocess
import sys
import tempfile
import time
from datetime import UTC, datetime
from pathlib import Path

import anyio

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tests"))

from host.postgres_server import MISSING, PostgresServer, find_binaries  # noqa: E402
from host_sim import Host, MemoryStore, PostgresStore, SqliteStore, Store  # noqa: E402

FORKS = 100


# -- a host process -------------------------------------------------------------------------


async def worker(spec: str, session_id: str, turns: int) -> None:
    """Open a host, say 'open', wait for 'go', send ``turns`` prompts, print the seconds taken."""
    async with Host(store=_store(spec)) as host:
        session = await host.sessions.get(session_id)
        print("open", flush=True)
        await anyio.to_thread.run_sync(sys.stdin.readline)
        started = time.perf_counter()
        for i in range(turns):
            await session.run(f"prompt {i}")
        print(json.dumps({"seconds": time.perf_counter() - started}), flush=True)


def _store(spec: str) -> Store:
    return SqliteStore(spec[len("sqlite:") :]) if spec.startswith("sqlite:") else PostgresStore(spec)


def turns_per_second(spec: str, sessions: list[str], turns: int) -> float:
    """Start one host process per entry of ``sessions`` (ids may repeat), run them together."""
    processes = [
        subprocess.Popen(
            [sys.executable, __file__, "--worker", spec, session_id, str(turns)],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
        )
        for session_id in sessions
    ]
    try:
        for p in processes:
            assert p.stdout is not None and p.stdout.readline() == "open\n", "a host did not open"
        started = time.perf_counter()
        for p in processes:
            assert p.stdin is not None
            p.stdin.write("go\n")
            p.stdin.flush()
        for p in processes:
            assert p.stdout is not None
            json.loads(p.stdout.readline())
        elapsed = time.perf_counter() - started
    finally:
        for p in processes:
            p.wait(timeout=600)
    return turns * len(sessions) / elapsed


async def new_sessions(spec: str, count: int) -> list[str]:
    async with Host(store=_store(spec)) as host:
        return [(await host.sessions.create()).id for _ in range(count)]


# -- forks ----------------------------------------------------------------------------------


async def one_turn(spec: str) -> str:
    async with Host(store=_store(spec)) as host:
        chat = await host.sessions.create()
        await host.submit(chat, "the first turn")
        return chat.id


_BULK_PG = (
    "INSERT INTO host_sim.turns (id, session_id, ordinal, message, message_id, author, runner_id, status, "
    "reply, error, started_at, finished_at) SELECT 'bulk-' || g, session_id, g, message, 'm-bulk-' || g, "
    "author, runner_id, status, reply, error, started_at, finished_at "
    "FROM host_sim.turns, generate_series(1, %s) g WHERE session_id = %s"
)
_BULK_SQLITE = (
    "WITH RECURSIVE g(n) AS (SELECT 1 UNION ALL SELECT n + 1 FROM g WHERE n < ?) "
    "INSERT INTO turns (id, session_id, ordinal, message, message_id, author, runner_id, status, reply, error, "
    "started_at, finished_at) SELECT 'bulk-' || n, session_id, n, message, 'm-bulk-' || n, author, runner_id, "
    "status, reply, error, started_at, finished_at FROM turns, g WHERE session_id = ?"
)


def bulk_load(spec: str, session_id: str, n: int) -> None:
    """Give the session ``n`` turns in all (copies of its first), written straight into the store."""
    if n <= 1:
        return
    if spec.startswith("sqlite:"):
        with sqlite3.connect(spec[len("sqlite:") :]) as conn:
            conn.execute(_BULK_SQLITE, (n - 1, session_id))
        conn.close()
    else:
        import psycopg

        with psycopg.connect(spec, autocommit=True) as conn:
            conn.execute(_BULK_PG, (n - 1, session_id))
            conn.execute("VACUUM ANALYZE")


def size_of(spec: str) -> int:
    if spec.startswith("sqlite:"):
        path = Path(spec[len("sqlite:") :])
        return sum(p.stat().st_size for p in path.parent.glob(path.name + "*") if not p.name.endswith("-lock"))
    import psycopg

    with psycopg.connect(spec, autocommit=True) as conn:
        row = conn.execute("SELECT pg_database_size(current_database())").fetchone()
    assert row is not None
    return int(row[0])


def fork_row_bytes(spec: str, fork_id: str) -> int:
    """Bytes of the rows one fork adds: its session record, lineage node and edge."""
    queries = [
        ("sessions", "id"),
        ("nodes", "session_id"),
        ("edges", "to_session_id"),
    ]
    if spec.startswith("sqlite:"):
        with sqlite3.connect(spec[len("sqlite:") :]) as conn:
            total = 0
            for table, key in queries:
                columns = [r[1] for r in conn.execute(f"PRAGMA table_info({table})")]
                lengths = " + ".join(f"coalesce(length(CAST({c} AS BLOB)), 0)" for c in columns)
                (size,) = conn.execute(f"SELECT sum({lengths}) FROM {table} WHERE {key} = ?", (fork_id,)).fetchone()
                total += int(size or 0)
        conn.close()
        return total
    import psycopg

    with psycopg.connect(spec, autocommit=True) as conn:
        total = 0
        for table, key in queries:
            row = conn.execute(
                f"SELECT sum(pg_column_size(t.*)) FROM host_sim.{table} t WHERE {key} = %s".encode(), (fork_id,)
            ).fetchone()
            total += int(row[0] or 0) if row is not None else 0
    return total


async def fork_cost(spec: str, n: int) -> tuple[float, int, int]:
    """(ms per fork, bytes of one fork's rows, store growth per fork) for a session of ``n`` turns."""
    session_id = await one_turn(spec)
    bulk_load(spec, session_id, n)
    before = size_of(spec)
    async with Host(store=_store(spec)) as host:
        chat = await host.sessions.get(session_id)
        assert len(await chat.turns()) == n
        started = time.perf_counter()
        forks = [await chat.fork() for _ in range(FORKS)]
        per_fork = (time.perf_counter() - started) / FORKS
    growth = (size_of(spec) - before) // FORKS
    return per_fork * 1000, fork_row_bytes(spec, forks[-1].id), growth


# -- several hosts as one: events and the erasure check ---------------------------------------


async def event_latency(dsn: str, turns: int) -> tuple[float, float]:
    """(p50, p95) ms from another host process publishing turn_finished to a subscriber here reading it."""
    (chat,) = await new_sessions(dsn, 1)
    process = await anyio.open_process([sys.executable, __file__, "--worker", dsn, chat, str(turns)])
    latencies: list[float] = []
    try:
        assert process.stdout is not None and process.stdin is not None
        opened = await process.stdout.receive()
        assert opened.startswith(b"open"), opened
        async with Host(store=PostgresStore(dsn)) as host, host.subscribe(buffer=100_000) as events:
            await process.stdin.send(b"go\n")
            with anyio.fail_after(600):
                async for event in events:
                    if event.kind == "turn_finished":
                        latencies.append((datetime.now(UTC) - event.at).total_seconds() * 1000)
                        if len(latencies) == turns:
                            break
    finally:
        await process.wait()
    latencies.sort()
    return latencies[len(latencies) // 2], latencies[int(len(latencies) * 0.95) - 1]


async def erasure_check_cost(dsn: str, turns: int) -> tuple[float, float]:
    """(ms the erasure check adds to a turn, ms of one whole turn), one host, one session.

    The check rides in the round trip that takes the session's lock (a pipeline: the lock,
    then one indexed read of the generation); what it adds is timed as the difference
    between taking the lock with it and without it, on one connection.
    """
    async with Host(store=PostgresStore(dsn)) as host:
        chat = await host.sessions.create()
        for i in range(10):  # warm the pool
            await chat.run(f"warm {i}")
        started = time.perf_counter()
        for i in range(turns):
            await chat.run(f"prompt {i}")
        per_turn = (time.perf_counter() - started) / turns
    import psycopg

    from host_sim.stores._postgres import SELECT_ERASURE_GENERATION

    lock, unlock = "SELECT pg_advisory_lock(1, 2)", "SELECT pg_advisory_unlock(1, 2)"
    with psycopg.connect(dsn, autocommit=True) as conn:

        def plain() -> None:
            conn.execute(lock)
            conn.execute(unlock)

        def checked() -> None:
            with conn.pipeline():
                conn.execute(lock)
                conn.execute(SELECT_ERASURE_GENERATION).fetchone()
            conn.execute(unlock)

        timings = {}
        for _ in range(3):  # interleaved rounds, the best of each
            for name, step in (("plain", plain), ("checked", checked)):
                began = time.perf_counter()
                for _ in range(turns * 5):
                    step()
                took = (time.perf_counter() - began) / (turns * 5)
                timings[name] = min(timings.get(name, took), took)
    return max(0.0, timings["checked"] - timings["plain"]) * 1000, per_turn * 1000


# -- write transactions, and beside LangGraph's PostgresSaver (API.md section 23) ---------------


def _next_xid(dsn: str) -> int:
    import psycopg

    with psycopg.connect(dsn, autocommit=True) as conn:
        row = conn.execute("SELECT pg_snapshot_xmax(pg_current_snapshot())::text::bigint").fetchone()
    assert row is not None
    return int(row[0])


async def write_transactions(dsn: str, count: int = 100) -> tuple[float, float, float]:
    """(write transactions per turn, per fork, per ``sessions.delete`` of a session of one
    turn), counted as the transaction ids the server assigned."""
    async with Host(store=PostgresStore(dsn)) as host:
        doomed = [await host.sessions.create() for _ in range(count)]
        for session in doomed:
            await session.run("to be deleted")
        chat = await host.sessions.create()
        for i in range(5):  # warm the pool
            await chat.run(f"warm {i}")
        anchor = (await chat.turns())[-1]
        await anyio.sleep(1.5)  # the link's first looks are done
        before = await anyio.to_thread.run_sync(_next_xid, dsn)
        for i in range(count):
            await chat.run(f"prompt {i}")
        middle = await anyio.to_thread.run_sync(_next_xid, dsn)
        for _ in range(count):
            await anchor.fork()
        after = await anyio.to_thread.run_sync(_next_xid, dsn)
        for session in doomed:
            await host.sessions.delete(session.id)
        await anyio.sleep(0.5)  # an event the delete left to the writer is written by now
        deleted = await anyio.to_thread.run_sync(_next_xid, dsn)
    # each _next_xid is a read: it assigns no id
    return (middle - before) / count, (after - middle) / count, (deleted - after) / count


async def host_turns_and_fork(dsn: str, n: int, turns: int) -> tuple[float, float]:
    """(ms per turn, ms per fork at N/2) of a host on a session of ``n`` turns."""
    session_id = await one_turn(dsn)
    bulk_load(dsn, session_id, n)
    async with Host(store=PostgresStore(dsn)) as host:
        chat = await host.sessions.get(session_id)
        history = await chat.turns()
        assert len(history) == n
        half = history[n // 2 - 1]
        await chat.run("warm")
        started = time.perf_counter()
        for i in range(turns):
            await chat.run(f"prompt {i}")
        per_turn = (time.perf_counter() - started) / turns
        started = time.perf_counter()
        for _ in range(FORKS):
            await half.fork()
        per_fork = (time.perf_counter() - started) / FORKS
    return per_turn * 1000, per_fork * 1000


def commit_floor(dsn: str, count: int = 300) -> float:
    """The median ms of the smallest durable write transaction this server commits from
    Python: ``BEGIN; INSERT one short row; COMMIT`` as one round trip (a turn needs two)."""
    import psycopg

    times: list[float] = []
    with psycopg.connect(dsn, autocommit=True) as conn:
        conn.execute("CREATE TABLE IF NOT EXISTS floor (id bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY, note text)")
        for i in range(count):
            started = time.perf_counter()
            conn.execute(f"BEGIN; INSERT INTO floor (note) VALUES ('row {i}'); COMMIT")
            times.append((time.perf_counter() - started) * 1000)
    return statistics.median(times)


async def memory_turn(turns: int = 500) -> float:
    """ms per turn of a host on `MemoryStore`: a turn's own work, with no store to wait for."""
    async with Host(store=MemoryStore()) as host:
        chat = await host.sessions.create()
        for i in range(20):
            await chat.run(f"warm {i}")
        started = time.perf_counter()
        for i in range(turns):
            await chat.run(f"prompt {i}")
    return (time.perf_counter() - started) / turns * 1000


def langgraph_turns_and_fork(dsn: str, n: int, turns: int) -> tuple[float, float] | None:
    """The same with LangGraph's PostgresSaver (a one-node graph appending its reply), or
    ``None`` when the ``bench`` extra is not installed."""
    try:
        from langgraph.checkpoint.postgres import PostgresSaver
    except ImportError:
        return None
    from peers import LangGraph

    with PostgresSaver.from_conn_string(dsn) as saver:
        saver.setup()
        graph = LangGraph(saver)
        graph.fill(n)  # the first N/2 turns (N messages: prompts and replies), one checkpoint
        half = graph.app.get_state(graph.config).config
        graph.app.invoke({"messages": [{"role": "user", "content": f"m {i}"} for i in range(n - 1)]}, graph.config)
        graph.turn()
        started = time.perf_counter()
        for _ in range(turns):
            graph.turn()
        per_turn = (time.perf_counter() - started) / turns
        started = time.perf_counter()
        for _ in range(FORKS):
            graph.app.update_state(half, {"messages": []})
        per_fork = (time.perf_counter() - started) / FORKS
    return per_turn * 1000, per_fork * 1000


# -- the report -------------------------------------------------------------------------------


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--turns", type=int, default=200, help="prompts each host process sends (default 200)")
    parser.add_argument("--worker", nargs=3, metavar=("STORE", "SESSION", "TURNS"), help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.worker:
        spec, session_id, turns = args.worker
        anyio.run(worker, spec, session_id, int(turns))
        return 0
    binaries = find_binaries()
    if binaries is None:
        print(f"benchmarks/postgres.py: {MISSING}", file=sys.stderr)
        return 1
    server = PostgresServer(binaries, durable=True)
    rows: list[tuple[str, str, str]] = []
    distinct_rate: dict[int, float] = {}
    try:
        with tempfile.TemporaryDirectory(prefix="host-sim-bench-") as tmp:
            per_turn, per_fork, per_delete = anyio.run(write_transactions, server.database("xacts"))
            rows.append(("write transactions per turn / per fork (server-assigned transaction ids; target 2 / 1)", f"{per_turn:.2f} / {per_fork:.2f}", "-"))
            rows.append(("write transactions per `sessions.delete` of a session of one turn", f"{per_delete:.2f}", "-"))
            print(f"  write transactions: {per_turn:.2f} per turn, {per_fork:.2f} per fork, {per_delete:.2f} per delete", flush=True)
            floor = commit_floor(server.database("floor"))
            alone = anyio.run(memory_turn)
            rows.append(("the floor: one durable `BEGIN; INSERT; COMMIT` round trip from Python, ms (median of 300); a turn needs two", f"{floor:.3f}", "-"))
            rows.append(("a turn on MemoryStore, ms (the host's own work, no store)", f"{alone:.3f}", "-"))
            print(f"  floor: {floor:.3f} ms per durable transaction; a MemoryStore turn {alone:.3f} ms", flush=True)
            for n in (10, 1_000):
                host_ms = anyio.run(host_turns_and_fork, server.database("turns"), n, 100)
                lg_ms = langgraph_turns_and_fork(server.database("langgraph"), n, 100)
                if lg_ms is not None and n == 1_000:
                    rows.append(
                        (
                            "ms a turn may take to be 15x LangGraph at N = 1,000 (the issue's target) / two floors and a MemoryStore turn",
                            f"{lg_ms[0] / 15:.3f} / {2 * floor + alone:.3f}",
                            "-",
                        )
                    )
                lg_turn = "not installed" if lg_ms is None else f"{lg_ms[0]:.2f} (host {lg_ms[0] / host_ms[0]:.1f}x faster)"
                lg_fork = "not installed" if lg_ms is None else f"{lg_ms[1]:.2f} (host {lg_ms[1] / host_ms[1]:.1f}x faster)"
                rows.append((f"ms per turn, session of N = {n:,} turns (LangGraph PostgresSaver in the third column)", f"{host_ms[0]:.2f}", lg_turn))
                rows.append((f"ms per fork at N/2, N = {n:,} (LangGraph: update_state on that checkpoint)", f"{host_ms[1]:.2f}", lg_fork))
                print(f"  N={n}: host turn {host_ms[0]:.2f} ms, fork {host_ms[1]:.2f} ms; langgraph {lg_ms}", flush=True)
            p50, p95 = anyio.run(event_latency, server.database("events"), args.turns)
            rows.append(("cross-host event latency (turn_finished, another process's subscriber): p50 / p95 ms", f"{p50:.1f} / {p95:.1f}", "-"))
            print(f"  event latency: p50 {p50:.1f} ms, p95 {p95:.1f} ms", flush=True)
            check, turn = anyio.run(erasure_check_cost, server.database("check"), args.turns)
            rows.append(("erasure check per turn (read with the session lock): ms added / share of a turn", f"{check:.3f} / {check / turn:.1%}", "-"))
            print(f"  erasure check: {check:.2f} ms of a {turn:.2f} ms turn ({check / turn:.1%})", flush=True)
            for hosts in (1, 2, 4):
                dsn = server.database("bench")
                distinct = turns_per_second(dsn, anyio.run(new_sessions, dsn, hosts), args.turns)
                distinct_rate[hosts] = distinct
                shared_id = anyio.run(new_sessions, dsn, 1)[0]
                shared = turns_per_second(dsn, [shared_id] * hosts, args.turns)
                sqlite = "-"
                if hosts == 1:
                    spec = f"sqlite:{Path(tmp) / 'turns.sqlite'}"
                    sqlite = f"{turns_per_second(spec, anyio.run(new_sessions, spec, 1), args.turns):,.0f}"
                else:
                    sqlite = "one writer (StoreLockedError)"
                rows.append((f"turns/s, {hosts} host process{'es' if hosts > 1 else ''}, distinct sessions", f"{distinct:,.0f}", sqlite))
                rows.append((f"turns/s, {hosts} host process{'es' if hosts > 1 else ''}, one shared session", f"{shared:,.0f}", sqlite))
                print(f"  {hosts} host(s): distinct {distinct:,.0f}/s, shared {shared:,.0f}/s, sqlite {sqlite}", flush=True)
            rows.append(
                (
                    "scaling, distinct sessions: 2 / 4 host processes over 1",
                    f"{distinct_rate[2] / distinct_rate[1]:.2f}x / {distinct_rate[4] / distinct_rate[1]:.2f}x",
                    "-",
                )
            )
            for n in (10, 10_000):
                pg = anyio.run(fork_cost, server.database("fork"), n)
                sq = anyio.run(fork_cost, f"sqlite:{Path(tmp) / f'fork-{n}.sqlite'}", n)
                rows.append((f"fork a session of {n:,} turns: ms per fork", f"{pg[0]:.2f}", f"{sq[0]:.2f}"))
                rows.append((f"fork at N = {n:,}: bytes of its rows (session, node, edge)", f"{pg[1]:,}", f"{sq[1]:,}"))
                rows.append((f"fork at N = {n:,}: store growth per fork ({FORKS} forks)", f"{pg[2]:,}", f"{sq[2]:,}"))
                print(f"  fork N={n}: postgres {pg}, sqlite {sq}", flush=True)
    finally:
        server.stop()
    version = server.binaries.parent.name
    print()
    print(f"| measure ({args.turns} prompts per host process, EchoModel, {os.cpu_count()} cores) | PostgresStore (PostgreSQL {version}, fsync on) | SqliteStore (synchronous=FULL), or the peer named |")
    print("|---|---:|---:|")
    for measure, pg_value, sqlite_value in rows:
        print(f"| {measure} | {pg_value} | {sqlite_value} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())

"""PostgresStore beside SqliteStore: turns per second with 1, 2 and 4 host processes, fork cost.

Starts a throwaway PostgreSQL server from the Debian binaries (``tests/host/postgres_server.py``,
durable settings: fsync on, ``synchronous_commit = on``) and measures, on this machine:

- **turns/s, distinct sessions**: H host processes (1, 2, 4), each sending TURNS prompts
  (EchoModel) to a session of its own, one after another; all start together.
- **turns/s, one shared session**: the same H processes all sending to one session (turns
  of one session run one at a time across hosts: this is the serialized case).
- **fork**: a session of N turns (N = 10 and 10,000, bulk-loaded), forked 100 times by a
  host that has the session loaded: time per fork and bytes per fork (the fork's rows;
  and the database or file growth over the 100 forks, divided by 100).

The same rows for `SqliteStore` (one writer: 1 host process only; a second host on the file
gets StoreLockedError). Prints a Markdown table (what docs/performance.md shows).

    python benchmarks/postgres.py [--turns 200]
"""

from __future__ import annotations

import argparse
import json
import os
import sqlite3
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import anyio

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tests"))

from host.postgres_server import MISSING, PostgresServer, find_binaries  # noqa: E402

from host_sim import Host, PostgresStore, SqliteStore, Store  # noqa: E402

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
    try:
        with tempfile.TemporaryDirectory(prefix="host-sim-bench-") as tmp:
            for hosts in (1, 2, 4):
                dsn = server.database("bench")
                distinct = turns_per_second(dsn, anyio.run(new_sessions, dsn, hosts), args.turns)
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
    print(f"| measure ({args.turns} prompts per host process, EchoModel, {os.cpu_count()} cores) | PostgresStore (PostgreSQL {version}, fsync on) | SqliteStore (synchronous=FULL) |")
    print("|---|---:|---:|")
    for measure, pg_value, sqlite_value in rows:
        print(f"| {measure} | {pg_value} | {sqlite_value} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())

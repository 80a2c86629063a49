"""Scopes (API.md §14): one tenant's reads cost what they return, however many other tenants.

One tenant (``{"user": "tenant"}``) owns 50 sessions, 20 of them with a notification and
20 with a finished job. Around it, ``--others`` sessions of 1,000 other users, one in 20
with a notification and one in 20 with a job. Through ``host.scoped({"user": "tenant"})``
it times (median of 30) the tenant's first page of sessions (``limit=50``), its inbox
(``notifications()``) and its first page of jobs (``jobs(limit=50)``), among ``--others``
and among 100 other sessions. Target: within 1.5x.

No existence oracle by timing (API.md §24): with another tenant's sessions loaded in this
host's memory (it served them), the tenant's view reads an id of theirs and an id that
does not exist, alternately, ``--oracle-rounds`` times each, through ``sessions.get``,
``transcript`` and ``lineage.node``; it prints the median of each and their ratio (the
slower over the faster). Target: within 1.5x (an outside id takes the missing id's path).

    python benchmarks/scopes.py [--others 100000] [--stores memory,sqlite,postgres] [--backend asyncio|trio]
        [--oracle-rounds 400]

``postgres`` starts its own server from Debian's binaries (as the tests do).
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from collections.abc import Awaitable, Callable
from pathlib import Path

import anyio

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tests"))

from host.postgres_server import MISSING, PostgresServer, find_binaries  # noqa: E402
from host_sim import Host, MemoryStore, PostgresStore, SqliteStore, Store  # noqa: E402
from modular_sdk import UnknownSessionError  # noqa: E402

TENANT = {"user": "tenant"}
ROUNDS = 30


async def fill(host: Host, others: int) -> None:
    """The tenant's sessions, notifications and jobs, among ``others`` sessions of other users."""

    async def other(i: int) -> None:
        session = await host.sessions.create(tags={"user": f"u{i % 1000}"})
        if i % 20 == 0:
            await session.notify(title="build", body=f"#{i}")
        if i % 20 == 10:
            await (await host.start(session, f"job {i}")).wait()

    async def mine(i: int) -> None:
        view = host.scoped(TENANT)
        session = await view.sessions.create()
        if i < 20:
            await session.notify(title="build", body=f"tenant #{i}")
        if i >= 30:
            await (await view.start(session, f"tenant job {i}")).wait()

    batch = 1000
    for start in range(0, others, batch):
        async with anyio.create_task_group() as tg:  # concurrent writes share commits
            for i in range(start, min(start + batch, others)):
                tg.start_soon(other, i)
            if start == 0:
                for i in range(50):
                    tg.start_soon(mine, i)
    if others == 0:
        for i in range(50):
            await mine(i)


async def median(read: Callable[[], Awaitable[int]], expect: int) -> float:
    times = []
    for _ in range(ROUNDS):
        start = time.perf_counter()
        got = await read()
        times.append(time.perf_counter() - start)
        assert got == expect, (got, expect)
    return statistics.median(times)


async def measure(make: Callable[[], Store], others: int, reopen: bool) -> dict[str, float]:
    async with Host(store=make()) as host:
        await fill(host, others)
        if not reopen:
            return await reads(host)
    async with Host(store=make()) as host:  # a fresh host reads the store, not its memory
        return await reads(host)


async def reads(host: Host) -> dict[str, float]:
    view = host.scoped(TENANT)

    async def page() -> int:
        return len((await view.sessions.list(limit=50)).sessions)

    async def inbox() -> int:
        return len(await view.notifications())

    async def jobs() -> int:
        return len((await view.jobs(limit=50)).jobs)

    return {"sessions page": await median(page, 50), "notifications": await median(inbox, 20), "jobs page": await median(jobs, 20)}


OUTSIDER = {"user": "outsider"}


async def oracle(make: Callable[[], Store], rounds: int) -> dict[str, tuple[float, float]]:
    """Median seconds of a scoped read of another tenant's (cached) id and of a missing id."""
    async with Host(store=make()) as host:
        theirs = [await host.scoped(OUTSIDER).sessions.create() for _ in range(20)]
        for session in theirs:  # their sessions are in this host's memory, as after serving them
            await host.scoped(OUTSIDER).transcript(session)
        view = host.scoped(TENANT)
        await view.sessions.create()
        reads: dict[str, Callable[[str], Awaitable[object]]] = {
            "get": view.sessions.get,
            "transcript": view.transcript,
            "node": view.lineage.node,
        }
        results: dict[str, tuple[float, float]] = {}
        for name, read in reads.items():
            times: dict[bool, list[float]] = {True: [], False: []}
            for i in range(-40, rounds * 2):  # the first 40 warm up, untimed
                outside = i % 2 == 0
                session_id = theirs[i % len(theirs)].id if outside else f"ses_{i:012x}"
                start = time.perf_counter()
                try:
                    await read(session_id)
                except UnknownSessionError:
                    if i >= 0:
                        times[outside].append(time.perf_counter() - start)
                else:
                    raise AssertionError(f"{name}({session_id!r}) answered through a scope that does not see it")
            results[name] = (statistics.median(times[True]), statistics.median(times[False]))
        return results


async def main(others: int, stores: list[str], server: PostgresServer | None, rounds: int) -> None:
    failed = False
    for kind in stores:
        if kind == "memory":
            continue
        with tempfile.TemporaryDirectory() as folder:
            if kind == "sqlite":
                path = Path(folder) / "oracle.sqlite"
                timed = await oracle(lambda: SqliteStore(path), rounds)
            else:
                assert server is not None
                dsn = server.database("oracle")
                timed = await oracle(lambda: PostgresStore(dsn), rounds)
        for read, (outside, missing) in timed.items():
            ratio = max(outside, missing) / min(outside, missing)
            verdict = "PASS" if ratio <= 1.5 else "FAIL"
            failed |= verdict == "FAIL"
            print(
                f"{kind:7} {read:10} outside id: {outside * 1e6:7.1f} us  missing id: {missing * 1e6:7.1f} us  "
                f"ratio {ratio:4.2f}x  (target <= 1.5x) {verdict}"
            )
    for kind in stores:
        results: dict[int, dict[str, float]] = {}
        for count in (100, others):
            with tempfile.TemporaryDirectory() as folder:
                if kind == "sqlite":
                    path = Path(folder) / "scopes.sqlite"
                    results[count] = await measure(lambda: SqliteStore(path), count, reopen=True)
                elif kind == "postgres":
                    assert server is not None
                    dsn = server.database("scopes")
                    results[count] = await measure(lambda: PostgresStore(dsn), count, reopen=True)
                else:
                    memory = MemoryStore()
                    results[count] = await measure(lambda: memory, count, reopen=False)
        for read in results[100]:
            small, large = results[100][read], results[others][read]
            ratio = large / small
            verdict = "PASS" if ratio <= 1.5 else "FAIL"
            failed |= verdict == "FAIL"
            print(
                f"{kind:7} {read:14} among 100: {small * 1e3:7.3f} ms  among {others:,}: "
                f"{large * 1e3:7.3f} ms  ratio {ratio:4.2f}x  (target <= 1.5x) {verdict}"
            )
    if failed:
        raise SystemExit(1)


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--others", type=int, default=100_000)
    parser.add_argument("--stores", default="memory,sqlite")
    parser.add_argument("--backend", default="asyncio", choices=("asyncio", "trio"))
    parser.add_argument("--oracle-rounds", type=int, default=400)
    args = parser.parse_args()
    kinds = args.stores.split(",")
    server = None
    if "postgres" in kinds:
        binaries = find_binaries()
        if binaries is None:
            raise SystemExit(f"benchmarks/scopes.py: {MISSING}")
        server = PostgresServer(binaries)
    try:
        anyio.run(main, args.others, kinds, server, args.oracle_rounds, backend=args.backend)
    finally:
        if server is not None:
            server.stop()

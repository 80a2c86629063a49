"""Seed 000's compliance query, "every session that used this card": what it costs as the store grows.

For each store, N sessions are written (each with a ``used_result_of`` edge from a source
session carrying its own ``canvas_card`` artifact), plus 5 sessions that used one card, the
one looked up. ``host.lineage.find_by_artifact("canvas_card", card)`` is then timed (median
of many calls). The query must cost what it returns (5 sessions), not the number of other
sessions: the ratio of the largest N to the smallest should be near 1 (target <= 1.5x).

    python benchmarks/artifact.py [--sizes 100,100000] [--backend asyncio|trio]
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path

import anyio

from host_sim import (
    Host,
    LineageArtifact,
    LineageEdge,
    MemoryStore,
    PostgresStore,
    SessionNode,
    SessionRecord,
    SqliteStore,
    Store,
)
from modular_sdk import RootLineage, SessionId

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests"))
from host.postgres_server import PostgresServer, find_binaries  # noqa: E402

NOW = datetime(2026, 1, 1, tzinfo=UTC)
USERS_OF_THE_CARD = 5


def _session(index: int) -> tuple[SessionRecord, SessionNode]:
    session_id = SessionId(f"ses_{index:012x}")
    record = SessionRecord(
        id=session_id,
        lineage=RootLineage(),
        metadata=None,
        model="echo",
        cwd="/",
        runner_id=f"run_{index}",
        created_at=NOW,
    )
    return record, SessionNode(session_id=session_id, created_at=NOW)


async def _fill(store: Store, size: int) -> None:
    """``size`` sessions, each the end of an edge carrying its own card; the looked-up card's users last."""
    await store.open()
    source, node = _session(0)
    await store.create_session(source, node, None)
    for index in range(1, size + USERS_OF_THE_CARD + 1):
        record, node = _session(index)
        await store.create_session(record, node, None)
        card = "card-wanted" if index > size else f"card-{index}"
        await store.save_edge(
            LineageEdge(
                from_session_id=source.id,
                to_session_id=record.id,
                relation="used_result_of",
                created_at=NOW,
                artifact=LineageArtifact(type="canvas_card", source_id=card, label=f"card {card}"),
            )
        )
    await store.close()


async def _query_time(store: Store, calls: int) -> float:
    async with Host(store=store) as host:
        found = await host.lineage.find_by_artifact("canvas_card", "card-wanted")
        assert len(found) == USERS_OF_THE_CARD, found
        times = []
        for _ in range(calls):
            start = time.perf_counter()
            await host.lineage.find_by_artifact("canvas_card", "card-wanted")
            times.append(time.perf_counter() - start)
    return statistics.median(times)


async def main(sizes: list[int]) -> None:
    memories: dict[int, MemoryStore] = {}  # reopening is using the same object
    kinds: dict[str, Callable[[Path, int], Store]] = {
        "MemoryStore": lambda folder, size: memories.setdefault(size, MemoryStore()),
        "SqliteStore": lambda folder, size: SqliteStore(folder / f"store-{size}.sqlite"),
    }
    binaries = find_binaries()
    server = None if binaries is None else PostgresServer(binaries, durable=True)
    if server is not None:
        dsns: dict[int, str] = {}
        kinds["PostgresStore"] = lambda folder, size: PostgresStore(dsns.setdefault(size, server.database("artifact")))
    else:
        print("(PostgreSQL binaries not installed: PostgresStore skipped)")
    print(f"find_by_artifact of one card used by {USERS_OF_THE_CARD} sessions, among N other sessions' cards")
    try:
        await _each(kinds, sizes)
    finally:
        if server is not None:
            server.stop()


async def _each(kinds: dict[str, Callable[[Path, int], Store]], sizes: list[int]) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        for kind, make in kinds.items():
            medians: list[float] = []
            for size in sizes:
                await _fill(make(Path(tmp), size), size)
                medians.append(await _query_time(make(Path(tmp), size), 300))
                print(f"  {kind:12} N = {size:>7,}: {medians[-1] * 1e6:8.1f} us")
            print(f"  {kind:12} ratio N = {sizes[-1]:,} / N = {sizes[0]:,}: {medians[-1] / medians[0]:.2f}x (target <= 1.5x)")


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default="100,100000")
    parser.add_argument("--backend", default="asyncio", choices=["asyncio", "trio"])
    args = parser.parse_args()
    anyio.run(main, [int(s) for s in args.sizes.split(",")], backend=args.backend)

"""What memory costs as it grows (API.md section 20, issue 34), on a SqliteStore (and MemoryStore for compaction).

    write      ``host.memory.record`` (a record citing one turn): mean per record, with 1,000
               and with 100,000 records in the store (flat: one write, two index rows)
    forward    ``host.lineage.forward`` of a turn with 10 records resting on it, among 1,000
               and among 100,000 records (indexed by turn: within 2x)
    search     ``host.memory.search`` of a word 10 records hold, over 1,000 and 100,000
               records (SQLite FTS5: within 3x)
    compacted  a session under ``ContextPolicy(max_tokens=2000, keep_recent=4)`` at 100 and
               at 10,000 turns: the size of its model requests (characters of history and
               prompt, mean of the last 50) and the time to build them (flat: ratio <= 1.2)

    python benchmarks/memory.py [--records 100000] [--turns 10000] [--backend asyncio|trio]
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
import time
from datetime import UTC, datetime
from pathlib import Path

import anyio

from host_sim import ContextPolicy, EchoModel, Host, MemoryStore, ModelRequest, SqliteStore
from host_sim.memory._book import new_record_id
from host_sim.memory._compaction import Compactor
from modular_sdk import AiPromptMessage, HostAuthor, MemoryRecord, SessionId, TurnId

_WORDS = ("alpha", "bravo", "charlie", "delta", "echo", "foxtrot", "golf", "hotel")


async def _fill(store: SqliteStore, session_id: SessionId, turn_ids: list[TurnId], count: int, start: int) -> None:
    """``count`` records citing the turns round-robin, written 500 at a time (concurrent
    writers share one commit: filling is not what is measured)."""
    at = datetime.now(UTC)
    for base in range(start, start + count, 500):
        async with anyio.create_task_group() as tg:
            for i in range(base, min(base + 500, start + count)):
                turn = turn_ids[i % len(turn_ids)]
                text = f"{_WORDS[i % len(_WORDS)]} {_WORDS[(i // 8) % len(_WORDS)]} record {i}"
                record = MemoryRecord(
                    id=new_record_id(), session_id=session_id, kind="fact", text=text, cites=(turn,),
                    made_by=HostAuthor(), created_at=at,
                )  # fmt: skip
                tg.start_soon(store.add_record, record, [turn])


async def records(total: int) -> dict[str, tuple[float, float]]:
    """write, forward and search at 1,000 and at ``total`` records: seconds per call at each size."""
    out: dict[str, list[float]] = {"write": [], "forward": [], "search": []}
    with tempfile.TemporaryDirectory() as folder:
        store = SqliteStore(Path(folder) / "memory.sqlite")
        async with Host(store=store) as host:
            chat = await host.sessions.create()
            turns = [await chat.send(AiPromptMessage(text=f"turn {i}")) for i in range(200)]
            hot, ids = turns[-1], [t.id for t in turns[:-1]]  # no later turn: what rests on it is its own 10
            for i in range(10):
                await host.memory.record(chat, f"zulu hot record {i}", kind="fact", cites=(hot.id,))
            size = 10
            for target in (1_000, total):
                await _fill(store, chat.id, ids, target - size, size)
                started = time.perf_counter()
                for i in range(100):
                    await host.memory.record(chat, f"measured {i}", kind="fact", cites=(ids[i],))
                out["write"].append((time.perf_counter() - started) / 100)
                size = target + 100
                started = time.perf_counter()
                for _ in range(20):
                    fwd = await host.lineage.forward(hot.id)
                out["forward"].append((time.perf_counter() - started) / 20)
                assert len(fwd.records) == 10
                started = time.perf_counter()
                for _ in range(20):
                    hits = await host.memory.search("zulu hot", limit=10)
                out["search"].append((time.perf_counter() - started) / 20)
                assert len(hits) == 10
    return {k: (v[0], v[1]) for k, v in out.items()}


async def compacted(turns: int) -> tuple[int, float]:
    """The mean size (characters) of the last 50 requests (it saws between compactions) and the mean time to build their history."""
    sizes: list[int] = []

    def measure(request: ModelRequest) -> None:
        sizes.append(sum(len(e.text) + len(e.reply) for e in request.history) + len(request.text))

    build: list[float] = []
    original = Compactor.history

    async def timed(self: Compactor, **kwargs: object) -> object:
        started = time.perf_counter()
        found = await original(self, **kwargs)  # type: ignore[arg-type]
        build.append(time.perf_counter() - started)
        measure(ModelRequest(session_id="", model="", kind="prompt", text=str(kwargs["prompt"]), message=AiPromptMessage(text="x"), history=found))  # type: ignore[arg-type]
        return found

    Compactor.history = timed  # type: ignore[assignment, method-assign]
    try:
        async with Host(store=MemoryStore(), model=EchoModel(), context=ContextPolicy(max_tokens=2000, keep_recent=4)) as host:
            chat = await host.sessions.create()
            for i in range(turns):
                await chat.send(AiPromptMessage(text=f"turn {i}: " + " ".join(_WORDS)))
    finally:
        Compactor.history = original  # type: ignore[method-assign]
    return round(statistics.mean(sizes[-50:])), statistics.mean(build[-50:])


async def main(total: int, turns: int) -> None:
    figures = await records(total)
    print(f"memory records on SqliteStore: 1,000 vs {total:,}")
    for name, limit in (("write", 1.5), ("forward", 2.0), ("search", 3.0)):
        small, large = figures[name]
        print(f"  {name:8} {small * 1e3:8.3f} ms  {large * 1e3:8.3f} ms  ratio {large / small:5.2f}  (target <= {limit})")
    small_size, small_time = await compacted(100)
    large_size, large_time = await compacted(turns)
    print(f"compacted session (max_tokens=2000, keep_recent=4), 100 vs {turns:,} turns")
    print(f"  request  {small_size:8,} ch  {large_size:8,} ch  ratio {large_size / small_size:5.2f}  (target <= 1.2)")
    print(f"  build    {small_time * 1e3:8.3f} ms  {large_time * 1e3:8.3f} ms  ratio {large_time / small_time:5.2f}  (flat)")


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--records", type=int, default=100_000)
    parser.add_argument("--turns", type=int, default=10_000)
    parser.add_argument("--backend", choices=("asyncio", "trio"), default="asyncio")
    options = parser.parse_args()
    anyio.run(main, options.records, options.turns, backend=options.backend)

"""What forgetting a turn costs: a 10,000-turn session with 1,000 forks, on MemoryStore and SqliteStore.

The session's turns are sent through a ``Host`` (EchoModel); 1,000 forks are anchored at
evenly spread turns, each with one turn of its own. Then turn 5,000 (the middle) is:

    forward    ``host.lineage.forward(id)``: the provenance walk alone
    dry run    ``host.lineage.forget(id)``: the plan (the same walk)
    erase      ``host.lineage.forget(id, dry_run=False)``: the plan carried out, one transaction
    reopen     a new ``Host`` on the same SqliteStore, then ``sessions.turn(id)``

and, for a turn near the end (9,990: few turns rest on it), the same, to show that the walk
costs what the plan holds. "What it touched" counts the store calls and the rows they
returned (a pass-through wrapper), so a reader can check that nothing scans.

    python benchmarks/provenance.py [--turns 10000] [--forks 1000] [--backend asyncio|trio]
"""

from __future__ import annotations

import argparse
import tempfile
import time
from collections import Counter
from collections.abc import Awaitable, Callable, Sequence
from pathlib import Path
from typing import cast

import anyio

from host_sim import Host, MemoryStore, SqliteStore, Store
from modular_sdk import AiPromptMessage, AiTurnHandle


class Touch:
    """Passes every store call through, counting calls and rows returned per method."""

    def __init__(self, inner: Store) -> None:
        self._inner = inner
        self.calls: Counter[str] = Counter()
        self.rows: Counter[str] = Counter()

    def __getattr__(self, name: str) -> Callable[..., Awaitable[object]]:
        method = getattr(self._inner, name)

        async def call(*args: object) -> object:
            result = await method(*args)
            self.calls[name] += 1
            if isinstance(result, Sequence) and not isinstance(result, str):
                self.rows[name] += len(result)
            elif result is not None:
                self.rows[name] += 1
            return result

        return call

    def take(self) -> str:
        text = ", ".join(f"{n} x{self.calls[n]} ({self.rows[n]} rows)" for n in sorted(self.calls))
        self.calls.clear()
        self.rows.clear()
        return text


async def build(store: Store, turns: int, forks: int) -> list[AiTurnHandle]:
    async with Host(store=store) as host:
        chat = await host.sessions.create()
        sent = [await chat.send(AiPromptMessage(text=f"turn {i}")) for i in range(turns)]
        step = max(1, turns // forks)
        for i in range(forks):
            fork = await sent[(i * step) % turns].fork()
            await fork.send(AiPromptMessage(text=f"in fork {i}"))
        return sent


async def measure(label: str, make_store: Callable[[], Store], turns: int, forks: int) -> None:
    start = time.perf_counter()
    sent = await build(make_store(), turns, forks)
    print(f"\n{label}: built {turns:,} turns and {forks:,} forks in {time.perf_counter() - start:.1f} s")
    for victim in (turns // 2, turns - 10):
        touch = Touch(make_store())
        async with Host(store=cast(Store, touch)) as host:
            touch.take()
            target = sent[victim].id
            t0 = time.perf_counter()
            fwd = await host.lineage.forward(target)
            t1 = time.perf_counter()
            print(
                f"  turn {victim:,}: forward {1e3 * (t1 - t0):8.1f} ms  {len(fwd.sessions):,} sessions, "
                f"{len(fwd.turns):,} turns resting, {len(fwd.edges)} edges"
            )
            print(f"      touched: {touch.take()}")
            t0 = time.perf_counter()
            plan = await host.lineage.forget(target)
            t1 = time.perf_counter()
            print(f"    dry run {1e3 * (t1 - t0):8.1f} ms  plan of {len(plan.turns):,} turns")
            touch.take()
            t0 = time.perf_counter()
            done = await host.lineage.forget(target, dry_run=False)
            t1 = time.perf_counter()
            print(f"    erase   {1e3 * (t1 - t0):8.1f} ms  erased {len(done.turns):,} turns")
            print(f"      touched: {touch.take()}")
        t0 = time.perf_counter()
        async with Host(store=make_store()) as again:
            turn = await again.sessions.turn(target)
            assert turn.erased_at is not None
        print(f"    reopen + sessions.turn {1e3 * (time.perf_counter() - t0):8.1f} ms (erased_at set)")


async def main(turns: int, forks: int) -> None:
    memory = MemoryStore()
    await measure("MemoryStore", lambda: memory, turns, forks)
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "s.sqlite"
        await measure("SqliteStore", lambda: SqliteStore(path), turns, forks)
        size = sum(f.stat().st_size for f in Path(folder).iterdir())
        print(f"  files after close: {size / 1024:,.0f} KiB")


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--turns", type=int, default=10_000)
    parser.add_argument("--forks", type=int, default=1_000)
    parser.add_argument("--backend", choices=("asyncio", "trio"), default="asyncio")
    args = parser.parse_args()
    anyio.run(main, args.turns, args.forks, backend=args.backend)

"""Fork cost against history length: forks must stay flat.

For N = 10, 100, 1,000 and 10,000 completed turns in a session, prints the median time of
``turn.fork()`` (at the last turn) and ``session.fork()``, the bytes the host retains per
fork (tracemalloc over --memory-forks forks, after gc; the host, its lineage graph and its
MemoryStore all count): with the handles dropped, and with the caller keeping every handle
of ``turn.fork()`` and of ``session.fork()``; and the ratio t(10,000) / t(10).
Targets: ratio <= 1.5 and <= 1 KB per fork.

    python benchmarks/fork_cost.py [--forks 300] [--backend asyncio|trio]
"""

from __future__ import annotations

import argparse
import gc
import statistics
import time
import tracemalloc
from collections.abc import Awaitable, Callable

import anyio

from host_sim import EchoModel, Host, MemoryStore
from modular_sdk import AiPromptMessage

SIZES = (10, 100, 1_000, 10_000)


async def measure(n_turns: int, n_forks: int, n_memory_forks: int) -> tuple[float, float, tuple[float, float, float]]:
    # event_history=0: the events a host keeps for resuming are a bounded ring (10,000 by
    # default), not what a fork costs; with it on, each fork also holds its session_created
    async with Host(model=EchoModel(), store=MemoryStore(), handler_timeout=None, event_history=0) as host:
        chat = await host.sessions.create()
        last = None
        for i in range(n_turns):
            last = await chat.send(AiPromptMessage(text=f"turn {i}"))
        assert last is not None
        turn_times: list[float] = []
        session_times: list[float] = []
        for _ in range(20):  # warm up
            await last.fork()
        gc.collect()
        gc.disable()  # as timeit does: time the fork, not the collector
        for _ in range(n_forks):
            start = time.perf_counter()
            await last.fork()
            turn_times.append(time.perf_counter() - start)
            start = time.perf_counter()
            await chat.fork()
            session_times.append(time.perf_counter() - start)
        gc.enable()
        memory = (
            await retained(last.fork, n_memory_forks, keep=False),  # what the host keeps
            await retained(last.fork, n_memory_forks, keep=True),  # and the caller's handles
            await retained(chat.fork, n_memory_forks, keep=True),
        )
        return statistics.median(turn_times), statistics.median(session_times), memory


async def retained(fork: Callable[[], Awaitable[object]], n: int, *, keep: bool) -> float:
    """Bytes retained per fork over ``n`` forks (tracemalloc, after gc): by the host alone, or
    also by the caller holding every handle (``keep``: the list's 8 bytes a handle included)."""
    gc.collect()
    tracemalloc.start()
    before, _ = tracemalloc.get_traced_memory()
    handles = []
    for _ in range(n):
        handle = await fork()
        if keep:
            handles.append(handle)
    gc.collect()
    after, _ = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    del handles
    return (after - before) / n


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--forks", type=int, default=300, help="forks timed per size")
    parser.add_argument("--memory-forks", type=int, default=4000, help="forks measured for memory (amortizes dict growth)")
    parser.add_argument("--backend", choices=("asyncio", "trio"), default="asyncio")
    args = parser.parse_args()
    results: dict[int, tuple[float, float, tuple[float, float, float]]] = {}
    print(f"backend={args.backend} forks per size={args.forks}")
    print(
        f"{'turns':>7} {'turn.fork us':>13} {'session.fork us':>16} {'B/fork host':>12} "
        f"{'B/fork turn.fork kept':>22} {'B/fork session.fork kept':>25}"
    )
    for n in SIZES:
        t_turn, t_session, memory = anyio.run(measure, n, args.forks, args.memory_forks, backend=args.backend)
        results[n] = (t_turn, t_session, memory)
        host, turn_kept, session_kept = memory
        print(f"{n:>7} {t_turn * 1e6:>13.1f} {t_session * 1e6:>16.1f} {host:>12.0f} {turn_kept:>22.0f} {session_kept:>25.0f}")
    lo, hi = results[SIZES[0]], results[SIZES[-1]]
    turn_ratio, session_ratio = hi[0] / lo[0], hi[1] / lo[1]
    worst_bytes = max(max(r[2]) for r in results.values())
    print(f"ratio t({SIZES[-1]:,})/t({SIZES[0]}): turn.fork {turn_ratio:.2f}, session.fork {session_ratio:.2f} (target <= 1.5)")
    print(f"max bytes retained per fork, handles kept or not: {worst_bytes:.0f} (target <= 1024)")


if __name__ == "__main__":
    main()

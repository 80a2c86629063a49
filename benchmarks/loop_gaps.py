"""How long a host's event loop is held up while tasks send to one SqliteStore.

A ticker task sleeps 1 ms in a loop and records by how much each sleep overran; N tasks
(1, 10, 40) run turns on their own sessions for 3 s. Prints sends and the ticker's gaps
(p50, p95, max) for each N. The SQLite store's calls block the loop's thread in slices
while they run (host_sim/stores/_handoff.py), so these gaps are what the loop's other work
(HTTP, streaming) waits beside busy writers (docs/performance.md, "Writers beside busy
readers").

    python benchmarks/loop_gaps.py [--backend asyncio|trio]
"""

from __future__ import annotations

import argparse
import os
import statistics
import tempfile
import time
from pathlib import Path

import anyio

from host_sim import EchoModel, Host, SessionHandle, SqliteStore


async def one(n: int) -> str:
    with tempfile.TemporaryDirectory() as folder:
        async with Host(model=EchoModel(), store=SqliteStore(Path(folder) / "chat.sqlite")) as host:
            sessions = [await host.sessions.create() for _ in range(n)]
            gaps: list[float] = []
            done = anyio.Event()
            sent = 0

            async def ticker() -> None:
                last = time.perf_counter()
                while not done.is_set():
                    await anyio.sleep(0.001)
                    now = time.perf_counter()
                    gaps.append(now - last - 0.001)
                    last = now

            async def sender(session: SessionHandle) -> None:
                nonlocal sent
                end = time.perf_counter() + 3
                while time.perf_counter() < end:
                    await session.run("hi")
                    sent += 1

            async with anyio.create_task_group() as tg:
                tg.start_soon(ticker)
                async with anyio.create_task_group() as senders:
                    for session in sessions:
                        senders.start_soon(sender, session)
                done.set()
    gaps.sort()
    return (
        f"{n:>3} senders  {sent:>6} sends  ticker gap p50 {statistics.median(gaps) * 1e3:5.1f} ms  "
        f"p95 {gaps[int(len(gaps) * 0.95)] * 1e3:5.1f} ms  max {gaps[-1] * 1e3:6.1f} ms"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--backend", choices=("asyncio", "trio"), default="asyncio")
    args = parser.parse_args()
    for n in (1, 10, 40):
        print(anyio.run(one, n, backend=args.backend))
    print("load average", " ".join(f"{x:.2f}" for x in os.getloadavg()))


if __name__ == "__main__":
    main()

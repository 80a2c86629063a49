"""The integrator's surface under load: idle subscribers and listing by owner.

    subscribers  turns/s (EchoModel, MemoryStore) with 0, 1 and 100 subscribers that never
                 read (each with the default buffer): target within 10% of 0.
    listing      ``sessions.list(tags={"user": u}, limit=50)`` on a SqliteStore holding
                 100,000 sessions of 1,000 users, against the same on 1,000 sessions of 10
                 users (same page size): a page costs what it returns (target within 3x),
                 and the rows the query visits (SQLite's plan) are the owner's only.

    python benchmarks/integrator.py [--sessions 100000] [--turns 3000] [--backend asyncio|trio]
"""

from __future__ import annotations

import argparse
import sqlite3
import statistics
import tempfile
import time
from contextlib import AsyncExitStack
from pathlib import Path

import anyio

from host_sim import Host, SqliteStore
from modular_sdk import AiPromptMessage


async def turns_per_second(subscribers: int, turns: int) -> float:
    async with Host() as host, AsyncExitStack() as stack:
        for _ in range(subscribers):
            await stack.enter_async_context(host.subscribe())  # never read
        chat = await host.sessions.create()
        for i in range(200):  # warm up
            await chat.send(AiPromptMessage(text=f"w{i}"))
        start = time.perf_counter()
        for i in range(turns):
            await chat.send(AiPromptMessage(text=f"m{i}"))
        return turns / (time.perf_counter() - start)


async def fill(path: Path, sessions: int, users: int) -> None:
    async with Host(store=SqliteStore(path)) as host:
        batch = 2000
        for start in range(0, sessions, batch):
            async with anyio.create_task_group() as tg:  # concurrent creates share commits
                for i in range(start, min(start + batch, sessions)):
                    tg.start_soon(lambda i=i: host.sessions.create(tags={"user": f"u{i % users}"}))


async def page_time(path: Path, user: str) -> float:
    async with Host(store=SqliteStore(path)) as host:
        times = []
        for _ in range(30):
            start = time.perf_counter()
            page = await host.sessions.list(tags={"user": user}, limit=50)
            times.append(time.perf_counter() - start)
            assert len(page.sessions) == 50
        return statistics.median(times)


def plan(path: Path) -> str:
    conn = sqlite3.connect(path)
    try:
        rows = conn.execute(
            "EXPLAIN QUERY PLAN SELECT s.id FROM session_tags t JOIN sessions s ON s.rowid = t.position "
            "WHERE t.key = 'user' AND t.value = 'u1' AND t.position < 999999999 ORDER BY t.position DESC LIMIT 51"
        ).fetchall()
    finally:
        conn.close()
    return "; ".join(str(r[-1]) for r in rows)


async def main(sessions: int, turns: int) -> None:
    print("subscribers (turns/s, median of 3):")
    base = 0.0
    for count in (0, 1, 100):
        rate = statistics.median([await turns_per_second(count, turns) for _ in range(3)])
        base = base or rate
        verdict = "PASS" if rate >= 0.9 * base else "FAIL"
        print(f"  {count:>3} idle subscribers: {rate:8,.0f} turns/s  {rate / base:5.2f}x of none  {verdict} (>= 0.90x)")
    with tempfile.TemporaryDirectory() as folder:
        small, large = Path(folder) / "small.sqlite", Path(folder) / "large.sqlite"
        await fill(small, 1_000, 10)
        t0 = time.perf_counter()
        await fill(large, sessions, sessions // 100)
        print(f"\nlisting (wrote {sessions:,} tagged sessions in {time.perf_counter() - t0:.1f} s):")
        a, b = await page_time(small, "u1"), await page_time(large, "u1")
        verdict = "PASS" if b <= 3 * a else "FAIL"
        print(f"  a page of 50 of one owner: {1e3 * a:.2f} ms at 1,000 sessions, {1e3 * b:.2f} ms at {sessions:,}: {b / a:.2f}x  {verdict} (<= 3x)")
        print(f"  plan: {plan(large)}")


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sessions", type=int, default=100_000)
    parser.add_argument("--turns", type=int, default=3000)
    parser.add_argument("--backend", choices=("asyncio", "trio"), default="asyncio")
    args = parser.parse_args()
    anyio.run(main, args.sessions, args.turns, backend=args.backend)

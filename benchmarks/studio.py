"""What the studio costs a person waiting in the browser (API.md section 22, issue 37).

1. **First paint** with a store of N sessions (default 1,000): from ``driver.get(url)`` to the
   page having drawn the session tree (``document.body.dataset.ready``). Target: < 1 s.
2. **Selecting a long session** of T turns (default 10,000; paged: the newest 200 are drawn):
   from the click on its tree entry to its turns drawn. Target: < 300 ms.
3. **Every session's pending actions**: from ``driver.get(url)`` to the list drawn (read once
   after the first paint, then a session at a time as turns finish), and ``GET /api/pending``
   alone. It asks each session in turn (no store-wide query), so its cost grows with N.
   No target; printed so a store-wide query can be judged against it. The selection is
   timed after the list is drawn (the studio is not also reading it).

Debian's Chromium (headless) through Selenium, the studio as a real subprocess on a SQLite
store seeded before it starts.

    python benchmarks/studio.py [--sessions 1000] [--turns 10000] [--rounds 5]
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path

import anyio

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from host_sim import Host, SqliteStore  # noqa: E402
from modular_sdk import AiPromptMessage, AiSessionDisplayMetadata  # noqa: E402
from tests.cli._browser import chromium  # noqa: E402


async def seed(store: Path, sessions: int, turns: int) -> str:
    async with Host(store=SqliteStore(store)) as host:
        long = await host.sessions.create(metadata=AiSessionDisplayMetadata(label="long"))
        for index in range(turns):
            await long.send(AiPromptMessage(text=f"turn {index}"))
        for index in range(sessions - 1):
            await host.sessions.create(metadata=AiSessionDisplayMetadata(label=f"session {index}"))
        return str(long.id)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--sessions", type=int, default=1000)
    parser.add_argument("--turns", type=int, default=10_000)
    parser.add_argument("--rounds", type=int, default=5)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as folder:
        store = Path(folder) / "bench.sqlite"
        started = time.perf_counter()
        long_id = anyio.run(seed, store, args.sessions, args.turns)
        print(f"seeded {args.sessions} sessions, one of {args.turns} turns, in {time.perf_counter() - started:.1f} s")
        process = subprocess.Popen(
            [sys.executable, "-m", "host_sim", "studio", "--store", str(store)], stdout=subprocess.PIPE, text=True
        )
        try:
            assert process.stdout is not None
            url = process.stdout.readline().strip()
            paints: list[float] = []
            selects: list[float] = []
            listed: list[float] = []
            with chromium(Path(folder) / "profile") as browser:
                for _ in range(args.rounds):
                    begin = time.perf_counter()
                    browser.get(url)
                    while not browser.execute_script("return document.body.dataset.ready === 'true'"):
                        time.sleep(0.005)
                    paints.append(time.perf_counter() - begin)
                    shown = browser.execute_script("return document.querySelectorAll('#sessions button').length")
                    assert shown == args.sessions, shown
                    while not browser.execute_script("return document.body.dataset.pending === 'loaded'"):
                        time.sleep(0.005)  # every session's pending actions listed (read after the paint)
                    listed.append(time.perf_counter() - begin)
                    browser.execute_script("document.getElementById('turns').replaceChildren()")
                    begin = time.perf_counter()
                    browser.execute_script(f"document.querySelector('[data-session=\"{long_id}\"]').click()")
                    while not browser.execute_script("return document.querySelectorAll('#turns article').length > 0"):
                        time.sleep(0.005)
                    selects.append(time.perf_counter() - begin)
            pendings: list[float] = []
            for _ in range(args.rounds):
                begin = time.perf_counter()
                with urllib.request.urlopen(url.replace("/?", "/api/pending?"), timeout=60) as answer:
                    answer.read()
                pendings.append(time.perf_counter() - begin)
        finally:
            process.terminate()
            process.wait(timeout=15)
    paint, select = statistics.median(paints), statistics.median(selects)
    print(f"first paint, {args.sessions} sessions: median {paint * 1000:.0f} ms (target < 1000 ms; ratio {paint / 1.0:.2f})")
    print(f"select a {args.turns}-turn session: median {select * 1000:.0f} ms (target < 300 ms; ratio {select / 0.3:.2f})")
    pending = statistics.median(pendings)
    print(f"every session's pending actions listed, {args.sessions} sessions: median {statistics.median(listed) * 1000:.0f} ms after the page was asked for")
    print(f"every session's pending actions, {args.sessions} sessions: median {pending * 1000:.0f} ms ({pending / args.sessions * 1e6:.0f} us a session)")


if __name__ == "__main__":
    main()

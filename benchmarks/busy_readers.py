"""Writers beside busy readers: durable sends in a fixed time, with 0 and with 4 readers
that poll ``session.turns()`` in a loop, yielding with ``sleep(0)`` (a host serving many
clients that never lets its event loop idle).

Each row is the number of ``session.send`` calls that completed (each one committed: a
durable write) in --seconds, on one store and backend. The ratio is sends with 4 readers
over sends with none; reads/send is how many reads the four readers made per send (how
many passes of theirs a send waited through: about 4 when a send takes one turn of the
loop, hundreds when it waits on a commit thread). --switch-interval sets
``sys.setswitchinterval`` (how long a thread waits for the GIL before asking the thread
holding it to let go; CPython's default is 0.005 s) to isolate what the commit thread
waits for. ``--before`` adds, for each SQLite row, the same two runs with the store's
calls awaited as they were before the handoff (``anyio.to_thread.run_sync``: the awaiting
task lets the loop run on and the thread waits for the GIL), interleaved with the runs of
the handoff, so one run of the script shows both on the same load.

    target: ratio >= 0.5 on every store and backend

    python benchmarks/busy_readers.py [--seconds 3] [--stores memory,sqlite] [--backends asyncio,trio]
                                      [--switch-interval 0.005] [--before]
"""

from __future__ import annotations

import argparse
import importlib.util
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

import anyio

from host_sim import Host, MemoryStore, SqliteStore, Store
from host_sim.stores import _handoff
from modular_sdk import AiPromptMessage

TARGET = 0.5


async def sends(store: Store, readers: int, seconds: float) -> tuple[int, int]:
    """Sends completed in ``seconds`` while ``readers`` tasks poll the session's turns, and
    the reads they made."""
    done = 0
    reads = 0
    async with Host(store=store) as host:
        chat = await host.sessions.create()
        deadline = time.monotonic() + seconds

        async def read() -> None:
            nonlocal reads
            while time.monotonic() < deadline:
                await chat.turns()
                reads += 1
                await anyio.sleep(0)

        async def write() -> None:
            nonlocal done
            while time.monotonic() < deadline:
                await chat.send(AiPromptMessage(text=f"message {done}"))
                done += 1

        async with anyio.create_task_group() as tg:
            for _ in range(readers):
                tg.start_soon(read)
            tg.start_soon(write)
    return done, reads


def measure(kind: str, backend: str, readers: int, seconds: float) -> tuple[int, int]:
    with tempfile.TemporaryDirectory() as folder:
        store: Store = MemoryStore() if kind == "memory" else SqliteStore(Path(folder) / "bench.sqlite")
        return anyio.run(sends, store, readers, seconds, backend=backend)


async def _to_thread(self: _handoff.ConnectionThread, fn: Callable[..., object], *args: object) -> object:
    """How a SqliteStore awaited its thread before the handoff (``--before``, measured only)."""
    return await anyio.to_thread.run_sync(fn, *args)


def run(kind: str, backend: str, readers: int, seconds: float, before: bool) -> tuple[int, int]:
    handoff = _handoff.ConnectionThread.run
    if before:
        _handoff.ConnectionThread.run = _to_thread  # type: ignore[method-assign,assignment]
    try:
        return measure(kind, backend, readers, seconds)
    finally:
        _handoff.ConnectionThread.run = handoff  # type: ignore[method-assign]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--seconds", type=float, default=3.0)
    parser.add_argument("--stores", default="memory,sqlite")
    parser.add_argument("--backends", default="asyncio,trio" if importlib.util.find_spec("trio") else "asyncio")
    parser.add_argument("--switch-interval", type=float, default=None, help="sys.setswitchinterval, in seconds")
    parser.add_argument("--before", action="store_true", help="also SQLite as awaited before the handoff, interleaved")
    args = parser.parse_args()
    if args.switch_interval is not None:
        sys.setswitchinterval(args.switch_interval)
    failed = False
    print(f"switch interval {sys.getswitchinterval() * 1000:g} ms; load average {_load()}")
    print(
        f"{'store':15} {'backend':8} {'0 readers':>10} {'4 readers':>10} {'reads/send':>11} {'ratio':>7}  target >= {TARGET}"
    )
    for kind in args.stores.split(","):
        for backend in args.backends.split(","):
            variants = [False, True] if args.before and kind == "sqlite" else [False]
            runs: dict[bool, list[tuple[int, int]]] = {v: [] for v in variants}
            for readers in (0, 4):
                for before in variants:  # interleaved: both see the same load
                    runs[before].append(run(kind, backend, readers, args.seconds, before))
            for before in variants:
                (alone, _), (busy, reads) = runs[before]
                ratio = busy / alone if alone else 0.0
                per_send = reads / busy if busy else float(reads)
                name = f"{kind} (before)" if before else kind
                verdict = "was" if before else "PASS" if ratio >= TARGET else "FAIL"
                failed = failed or (not before and ratio < TARGET)
                print(f"{name:15} {backend:8} {alone:>10,} {busy:>10,} {per_send:>11.1f} {ratio:>7.2f}  {verdict}", flush=True)
    print(f"load average {_load()}")
    raise SystemExit(1 if failed else 0)


def _load() -> str:
    try:
        return " ".join(Path("/proc/loadavg").read_text().split()[:3])
    except OSError:
        return "unknown"


if __name__ == "__main__":
    main()

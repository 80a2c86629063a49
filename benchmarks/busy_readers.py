"""Writers beside busy readers: durable sends in a fixed time, with 0 and with 4 readers
that poll ``session.turns()`` in a loop, yielding with ``sleep(0)`` (a host serving many
clients that never lets its event loop idle).

Each row is the number of ``session.send`` calls that completed (each one committed: a
durable write) in --seconds, on one store and backend. The ratio is sends with 4 readers
over sends with none.

    target: ratio >= 0.5 on every store and backend

    python benchmarks/busy_readers.py [--seconds 3] [--stores memory,sqlite] [--backends asyncio,trio]
"""

from __future__ import annotations

import argparse
import importlib.util
import tempfile
import time
from pathlib import Path

import anyio

from host_sim import Host, MemoryStore, SqliteStore, Store
from modular_sdk import AiPromptMessage

TARGET = 0.5


async def sends(store: Store, readers: int, seconds: float) -> int:
    """Sends completed in ``seconds`` while ``readers`` tasks poll the session's turns."""
    done = 0
    async with Host(store=store) as host:
        chat = await host.sessions.create()
        deadline = time.monotonic() + seconds

        async def read() -> None:
            while time.monotonic() < deadline:
                await chat.turns()
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
    return done


def measure(kind: str, backend: str, readers: int, seconds: float) -> int:
    with tempfile.TemporaryDirectory() as folder:
        store: Store = MemoryStore() if kind == "memory" else SqliteStore(Path(folder) / "bench.sqlite")
        return anyio.run(sends, store, readers, seconds, backend=backend)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--seconds", type=float, default=3.0)
    parser.add_argument("--stores", default="memory,sqlite")
    parser.add_argument("--backends", default="asyncio,trio" if importlib.util.find_spec("trio") else "asyncio")
    args = parser.parse_args()
    failed = False
    print(f"{'store':8} {'backend':8} {'0 readers':>10} {'4 readers':>10} {'ratio':>7}  target >= {TARGET}")
    for kind in args.stores.split(","):
        for backend in args.backends.split(","):
            alone = measure(kind, backend, 0, args.seconds)
            busy = measure(kind, backend, 4, args.seconds)
            ratio = busy / alone if alone else 0.0
            verdict = "PASS" if ratio >= TARGET else "FAIL"
            failed = failed or ratio < TARGET
            print(f"{kind:8} {backend:8} {alone:>10,} {busy:>10,} {ratio:>7.2f}  {verdict}", flush=True)
    raise SystemExit(1 if failed else 0)


if __name__ == "__main__":
    main()

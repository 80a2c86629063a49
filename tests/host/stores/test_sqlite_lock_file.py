"""A SQLite store leaves no ``-lock`` file after a clean close, and removing it never lets
two writers in: hosts opening and closing one file as fast as they can are never open
together (the lock taken is always the file at the path, not one a closing host removed)."""

from __future__ import annotations

import subprocess
import sys
import time
from pathlib import Path

import anyio

from host_sim import SqliteStore


def test_a_clean_close_leaves_only_the_store(tmp_path: Path) -> None:
    async def main() -> None:
        store = SqliteStore(tmp_path / "s.sqlite")
        await store.open()
        assert (tmp_path / "s.sqlite-lock").exists()  # held while open
        await store.close()

    anyio.run(main)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["s.sqlite"]


CONTENDER = """
import sys, time, anyio
from host_sim import SqliteStore, StoreLockedError

async def main(path: str, start: float) -> None:
    held = []
    time.sleep(max(0.0, start - time.time()))  # all begin together, imports done
    until = start + 3.0
    while time.time() < until:
        store = SqliteStore(path)
        try:
            await store.open()
        except StoreLockedError:
            continue
        began = time.time()
        time.sleep(0.002)  # hold it a moment, as a host does
        held.append(f"{began} {time.time()}")
        await store.close()
    print("\\n".join(held))

anyio.run(main, sys.argv[1], float(sys.argv[2]))
"""


def test_writers_racing_to_open_and_close_one_file_are_never_open_together(tmp_path: Path) -> None:
    path = tmp_path / "s.sqlite"
    anyio.run(_touch, path)
    start = time.time() + 10.0
    contenders = [
        subprocess.Popen([sys.executable, "-c", CONTENDER, str(path), str(start)], stdout=subprocess.PIPE, text=True)
        for _ in range(4)
    ]
    spans = sorted(
        (float(a), float(b))
        for contender in contenders
        for line in contender.communicate(timeout=120)[0].splitlines()
        if line.strip()
        for a, b in [line.split()]
    )
    assert len(spans) > 4  # they took turns
    overlaps = [(x, y) for x, y in zip(spans, spans[1:]) if y[0] < x[1]]
    assert not overlaps, f"{len(overlaps)} times two writers had the store open at once"


async def _touch(path: Path) -> None:
    store = SqliteStore(path)
    await store.open()
    await store.close()

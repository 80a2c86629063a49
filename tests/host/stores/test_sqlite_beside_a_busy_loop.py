"""A SQLite host whose event loop never idles still commits (issue 36, item 15).

The store runs its connection in a thread, which needs the GIL to take a call and after
each ``sqlite3`` step; a loop kept busy by tasks yielding with ``sleep(0)`` let go of the
GIL only for an instant at each pass, so a send waited through hundreds (on a loaded
machine) to tens of thousands (on a quiet one) of passes of the other tasks. Now the task
that awaits the thread hands it the GIL (``host_sim/stores/_handoff.py``), and a send waits
through a few. These tests count passes of the loop, never time;
benchmarks/busy_readers.py measures the sends.
"""

from __future__ import annotations

import statistics
from pathlib import Path

import anyio
import pytest

from host_sim import Host, SqliteStore
from modular_sdk import AiPromptMessage

pytestmark = pytest.mark.anyio

READERS = 4


async def test_a_durable_send_waits_through_a_few_passes_of_four_readers_polling_turns_not_hundreds(
    tmp_path: Path,
) -> None:
    # A send is two commits (the turn begins, then finishes) and a few turns of the loop of
    # its own: handed the GIL, it waits through about 6 passes of the readers (median 24 to 26
    # reads, 60 at most, at load 21 on 2 cores). Awaited as before it waited through 96 to
    # 1,270 reads (median of 12 sends, load 3 to 22) and ~93,000 on a quiet machine. A pass
    # more for every switch interval a commit's fsync takes; the median leaves out a send
    # whose fsync stalled.
    sends = 12
    store = SqliteStore(tmp_path / "store.sqlite")
    async with Host(store=store) as host:
        chat = await host.sessions.create()
        reads = 0
        finished = anyio.Event()

        async def poll() -> None:
            nonlocal reads
            while not finished.is_set():
                await chat.turns()
                reads += 1
                await anyio.sleep(0)

        per_send: list[int] = []
        async with anyio.create_task_group() as tg:
            for _ in range(READERS):
                tg.start_soon(poll)
            for i in range(sends):
                before = reads
                await chat.send(AiPromptMessage(text=f"message {i}"))
                per_send.append(reads - before)
            finished.set()
        assert reads > 0, "the readers never ran"
    passes = statistics.median(per_send) / READERS
    assert passes <= 12, f"a send waited through {passes:g} passes of {READERS} polling readers (reads per send: {per_send})"

    async with Host(store=SqliteStore(tmp_path / "store.sqlite")) as reopened:  # and every send was committed
        assert len(await (await reopened.sessions.get(chat.id)).turns()) == sends


"""A host serving readers that poll ``session.turns()`` still commits (issue 36, item 15).

A read used to make a new handle for every turn of the history, so readers polling a long
session held the event loop (and the GIL the store's commit thread needs) for longer with
every turn, and the writer starved (docs/performance.md, "Writers beside busy readers").
These tests count work and turns of the loop, never time; benchmarks/busy_readers.py
measures the throughput.
"""

from __future__ import annotations

import gc
import sys
from collections.abc import Awaitable, Callable
from types import FrameType

import anyio
import pytest

from host_sim import Host, MemoryStore
from modular_sdk import AiPromptMessage, AiTurnHandle

from ..conftest import StoreFactory

pytestmark = pytest.mark.anyio



async def python_calls(read: Callable[[], Awaitable[list[AiTurnHandle]]]) -> int:
    """How many Python functions ``read`` calls (the work it does, counted, not timed; no
    garbage collection meanwhile, whose finalizers would count)."""
    calls = 0

    def count(frame: FrameType, event: str, arg: object) -> None:
        nonlocal calls
        if event == "call":
            calls += 1

    collecting = gc.isenabled()
    gc.disable()
    sys.setprofile(count)
    try:
        await read()
    finally:
        sys.setprofile(None)
        if collecting:
            gc.enable()
    return calls


async def test_a_reader_polling_turns_pays_for_the_turns_added_since_its_last_read_not_the_whole_history(
    any_store: StoreFactory,
) -> None:
    async with Host(store=any_store()) as host:
        chat = await host.sessions.create()
        reader = await host.sessions.get(chat.id)  # a dashboard's handle, polling

        async def read_after_one_send() -> int:
            """The fewest calls of five polls, each after one more send: another task of the
            host that runs while a read waits (on PostgreSQL, its claim and event readers) is
            counted too, and the fewest leaves it out."""
            counts: list[int] = []
            for _ in range(5):
                await reader.turns()  # the poll before
                await chat.send(AiPromptMessage(text="one more"))
                counts.append(await python_calls(reader.turns))
            return min(counts)

        short = await read_after_one_send()  # a history of 1 to 5 turns
        for i in range(300):
            await chat.send(AiPromptMessage(text=f"message {i}"))
        long = await read_after_one_send()  # 306 to 310 turns
        # no work per turn of history: one call for each of the 300 turns sent between would add
        # 300 (the old read built a handle per turn, ~10 calls each); a store's own bookkeeping
        # may add a few calls that do not grow with the history
        assert long - short < 100, f"a read after one send made {short} calls at 1 turn but {long} at 306"
        turns = await reader.turns()
        assert [t.ordinal for t in turns] == list(range(310))
        assert [t.id for t in turns] == [t.id for t in await (await host.sessions.get(chat.id)).turns()]


async def test_a_handle_that_read_turns_before_a_forget_shows_the_turn_erased_on_its_next_read(
    any_store: StoreFactory,
) -> None:
    async with Host(store=any_store()) as host:
        chat = await host.sessions.create()
        first = await chat.send(AiPromptMessage(text="my card is 4111"))
        await chat.send(AiPromptMessage(text="and my name"))
        fork = await first.fork()
        await fork.send(AiPromptMessage(text="in the fork"))
        before = await fork.turns()  # the fork's handles, the parent's first turn inherited
        assert [t.message.text for t in before] == ["my card is 4111", "in the fork"]  # type: ignore[union-attr]

        await host.lineage.forget(first.id, dry_run=False)

        after = await fork.turns()
        assert [t.id for t in after] == [t.id for t in before]
        assert after[0].erased_at is not None and "4111" not in repr(after[0].message)
        after.clear()  # the caller's own list: changing it changes no later read
        assert len(await fork.turns()) == 2


async def test_a_writer_beside_four_polling_readers_sends_while_each_reads_at_most_twice_per_send() -> None:
    sends = 200
    reads = [0, 0, 0, 0]
    async with Host(store=MemoryStore()) as host:
        chat = await host.sessions.create()
        finished = anyio.Event()

        async def poll(index: int) -> None:
            while not finished.is_set():
                await chat.turns()
                reads[index] += 1
                await anyio.sleep(0)

        async with anyio.create_task_group() as tg:
            for index in range(len(reads)):
                tg.start_soon(poll, index)
            for i in range(sends):
                await chat.send(AiPromptMessage(text=f"message {i}"))
            finished.set()
        assert len(await chat.turns()) == sends
    assert all(0 < n <= 2 * sends for n in reads), f"{sends} sends took {reads} reads of four polling readers"

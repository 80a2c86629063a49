"""No counting oracle (API.md §24): ``seq`` as a scope sees it counts only the scope's events,
so tenant A's stream is the same whatever tenant B does; ``lagged(missed=N)`` counts A's
events only, and ``subscribe(after=seq)`` resumes from the seqs A saw."""

from __future__ import annotations

import anyio
import pytest
from hypothesis import HealthCheck, Phase, given, settings
from hypothesis import strategies as st

from host_sim import EchoModel, Host, HostEvent, Lagged, MemoryStore

from ..conftest import StoreFactory

A = {"org": "a"}
B = {"org": "b"}


async def drain(stream: object) -> list[HostEvent]:
    """What a stream holds now (it waits a moment for more, then stops)."""
    events: list[HostEvent] = []
    while True:
        with anyio.move_on_after(0.3) as waited:  # a shared store delivers a moment later
            events.append(await stream.__anext__())  # type: ignore[attr-defined]
        if waited.cancelled_caught:
            return events


def seen(events: list[HostEvent]) -> list[tuple[int | None, str]]:
    return [(e.seq, e.kind) for e in events if e.kind != "reply_delta"]


async def run(program: list[tuple[int, int]], with_b: bool) -> list[tuple[int | None, str]]:
    """A's stream while A sends ``program`` messages; B acts between them when ``with_b``."""
    async with Host(store=MemoryStore(), model=EchoModel()) as host:
        a, b = host.scoped(A), host.scoped(B)
        async with a.subscribe(buffer=10_000) as events:
            mine = await a.sessions.create()
            theirs = await b.sessions.create() if with_b else None
            for a_turns, b_turns in program:
                for i in range(a_turns):
                    await a.submit(mine, f"a {i}")
                for i in range(b_turns if theirs is not None else 0):
                    assert theirs is not None
                    await b.submit(theirs, f"b {i}")
                    await theirs.notify(title="b", body="b")
            return seen(await drain(events))


@settings(max_examples=10, deadline=None, phases=[Phase.explicit, Phase.generate], suppress_health_check=[HealthCheck.too_slow])
@given(
    program=st.lists(st.tuples(st.integers(0, 3), st.integers(0, 3)), min_size=1, max_size=6),
    backend=st.sampled_from(["asyncio", "trio"]),
)
def test_a_tenants_seqs_are_gap_free_and_the_same_whatever_another_tenant_does(
    program: list[tuple[int, int]], backend: str
) -> None:
    alone = anyio.run(run, program, False, backend=backend)
    among = anyio.run(run, program, True, backend=backend)
    assert among == alone  # nothing of B's activity shows in A's stream, its seqs included
    assert [seq for seq, _ in among] == list(range(1, len(among) + 1))


@pytest.mark.anyio
async def test_lagged_counts_only_the_scopes_events_it_missed() -> None:
    async with Host(store=MemoryStore(), model=EchoModel()) as host:
        a, b = host.scoped(A), host.scoped(B)
        mine, theirs = await a.sessions.create(), await b.sessions.create()
        async with a.subscribe(buffer=4) as slow, a.subscribe(buffer=10_000) as fast:
            for i in range(6):
                await a.submit(mine, f"a {i}")
                for _ in range(3):
                    await b.submit(theirs, "b")
            everything = [e for e in await drain(fast) if e.seq is not None]
            read = await drain(slow)
        lagged = [e for e in read if isinstance(e, Lagged)]
        assert len(lagged) == 1
        after = [e for e in read if e.seq is not None and not isinstance(e, Lagged)]
        # what it missed plus what it read is every event of A's, and nothing of B's
        assert lagged[0].missed + len(after) == len(everything)
        assert [e.seq for e in after] == [e.seq for e in everything][lagged[0].missed :]
        assert lagged[0].seq == everything[lagged[0].missed - 1].seq  # the last one it missed, as on Host


@pytest.mark.anyio
async def test_a_scoped_client_resumes_after_the_last_seq_it_saw(any_store: StoreFactory) -> None:
    async with Host(store=any_store(), model=EchoModel()) as host:
        a, b = host.scoped(A), host.scoped(B)
        mine, theirs = await a.sessions.create(), await b.sessions.create()
        async with a.subscribe() as events:
            await a.submit(mine, "one")
            first = [e for e in await drain(events) if e.seq is not None]
        await b.submit(theirs, "meanwhile")
        await a.submit(mine, "two")
        await b.submit(theirs, "meanwhile again")
        async with a.subscribe(after=first[-1].seq) as events:
            resumed = [e for e in await drain(events) if e.seq is not None]
        async with a.subscribe(after=0) as events:
            everything = [e for e in await drain(events) if e.seq is not None]
        assert [e.seq for e in everything] == list(range(1, len(everything) + 1))
        assert [(e.seq, e.kind) for e in resumed] == [(e.seq, e.kind) for e in everything if e.seq > first[-1].seq]  # type: ignore[operator]
        assert resumed[0].seq == first[-1].seq + 1  # type: ignore[operator]
        assert all(getattr(e, "session_id", mine.id) == mine.id for e in everything)
        async with a.subscribe(after=10_000) as events:  # a seq never given to this scope: only what is new
            await a.submit(mine, "three")
            new = [e for e in await drain(events) if e.seq is not None]
        assert new and new[0].seq == everything[-1].seq + 1  # type: ignore[operator]

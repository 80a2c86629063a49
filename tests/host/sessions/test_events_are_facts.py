"""Events are facts frozen when they happen; a deleted session takes nothing more; a client resumes.

An integrator's SSE endpoint subscribes, a user forgets a message, another deletes a chat,
a browser reconnects with ``Last-Event-ID``: on every store the events it reads say what
was true when each was published, the erasure is its own event, and nothing is sent to,
forked or spawned from a deleted chat.
"""

from __future__ import annotations

import contextlib
import time
from collections.abc import Awaitable, Callable
from pathlib import Path

import anyio
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from host_sim import (
    Host,
    HostEvent,
    Lagged,
    MemoryStore,
    PostgresStore,
    SessionDeleted,
    SqliteStore,
    Store,
    TurnErased,
    TurnFinished,
    TurnStarted,
)
from modular_sdk import (
    AiNotificationMessage,
    AiPromptMessage,
    InvalidArgumentError,
    ModMetadata,
    SessionDeletedError,
    SlashCommandContext,
    define_mod,
    slash_command,
)

StoreFactory = Callable[[], Store]


@pytest.fixture(params=["memory", "sqlite", "postgres"])
def make_store(request: pytest.FixtureRequest, tmp_path: Path) -> StoreFactory:
    """Store objects that all see the same data, on each of the three stores."""
    if request.param == "memory":
        memory = MemoryStore()
        return lambda: memory
    if request.param == "postgres":
        dsn: str = request.getfixturevalue("postgres_dsn")
        return lambda: PostgresStore(dsn)
    path = tmp_path / "store.sqlite"
    return lambda: SqliteStore(path)


async def drain(events: object, count: int) -> list[HostEvent]:
    out: list[HostEvent] = []
    with anyio.fail_after(10):
        async for event in events:  # type: ignore[attr-defined]
            out.append(event)
            if len(out) == count:
                break
    return out


@pytest.mark.anyio
async def test_a_turn_finished_read_after_a_forget_still_shows_its_reply_and_the_erasure_follows(
    make_store: StoreFactory,
) -> None:
    store = make_store()
    async with Host(store=store) as host:
        chat = await host.sessions.create()
        async with host.subscribe() as events:
            result = await chat.run("my card is 4111")
            await host.lineage.forget(result.turn.id, dry_run=False)
            started, finished, erased = await drain(events, 3)
        assert isinstance(started, TurnStarted) and isinstance(finished, TurnFinished) and isinstance(erased, TurnErased)
        snapshot = (started.message, finished.reply)
        if started.message == AiPromptMessage(text=""):
            # Read after the erasure returned (the event rows of a shared store, the resume
            # history of any other, API.md section 23): erased, both of them, never a mix.
            assert snapshot == (AiPromptMessage(text=""), "")
        else:
            assert snapshot == (AiPromptMessage(text="my card is 4111"), "echo: my card is 4111")
        assert (erased.session_id, erased.turn_id) == (chat.id, result.turn.id)
        assert started.seq is not None and finished.seq is not None and erased.seq is not None
        assert started.seq < finished.seq < erased.seq
        assert finished.host_id == erased.host_id != ""


@pytest.mark.anyio
async def test_deleting_a_session_publishes_each_erased_turn_then_session_deleted(make_store: StoreFactory) -> None:
    async with Host(store=make_store()) as host:
        chat = await host.sessions.create()
        one, two = await chat.run("one"), await chat.run("two")
        async with host.subscribe() as events:
            await host.sessions.delete(chat.id)
            got = await drain(events, 3)
    assert [type(e) for e in got] == [TurnErased, TurnErased, SessionDeleted]
    assert {e.turn_id for e in got if isinstance(e, TurnErased)} == {one.turn.id, two.turn.id}
    assert isinstance(got[2], SessionDeleted) and got[2].session_id == chat.id


async def spawn_from(argument: str | None, ctx: SlashCommandContext) -> str:
    other = await ctx.ai.sessions.get(argument or "")
    child = await other.spawn()
    return child.id


spawner = define_mod(
    metadata=ModMetadata(display_name="Spawner", description="Spawns from a session named by id"),
    commands=[slash_command(id="spawn-from", description="Spawn from a session", argument_hint="<id>", run=spawn_from)],
)


@pytest.mark.anyio
async def test_a_deleted_session_refuses_sends_forks_spawns_and_jobs_but_stays_readable(
    make_store: StoreFactory,
) -> None:
    async with Host(mods=[spawner], store=make_store()) as host:
        chat = await host.sessions.create()
        await chat.run("hello")
        await host.sessions.delete(chat.id)
        attempts: dict[str, Callable[[], Awaitable[object]]] = {
            "run": lambda: chat.run("again"),
            "send": lambda: chat.send(AiPromptMessage(text="again")),
            "notify": lambda: chat.send(AiNotificationMessage(title="ping", body="")),
            "fork": lambda: chat.fork(),
            "submit": lambda: host.submit(chat, "again"),
            "start": lambda: host.start(chat, "again"),
        }
        for name, attempt in attempts.items():  # each refused, naming the session
            with pytest.raises(SessionDeletedError, match=rf"session {chat.id!r}: it was deleted at .*create a new session") as caught:
                await attempt()
            assert caught.value.session_id == chat.id, name
        other = await host.sessions.create()
        refused = await host.submit(other, f"/spawn-from {chat.id}")
        assert refused.error is not None and "it was deleted" in refused.error
        again = await host.sessions.get(chat.id)
        assert again.deleted_at is not None
        assert [t.erased_at is not None for t in await again.turns()] == [True]
        assert "hello" not in await host.transcript(chat)


@pytest.mark.anyio
async def test_a_client_resumes_after_the_last_seq_it_saw_even_with_nobody_subscribed_meanwhile(
    make_store: StoreFactory,
) -> None:
    async with Host(store=make_store()) as host:
        chat = await host.sessions.create()
        async with host.subscribe() as events:
            await chat.run("one")
            seen = await drain(events, 2)
        last = seen[-1].seq
        assert last is not None
        await chat.run("two")  # nobody listens: the host keeps the events anyway
        await chat.run("three")
        async with host.subscribe(after=last) as events:
            rest = await drain(events, 4)
        assert [e.kind for e in rest] == ["turn_started", "turn_finished"] * 2
        assert [getattr(e, "reply", None) for e in rest if isinstance(e, TurnFinished)] == ["echo: two", "echo: three"]
        assert rest[0].seq is not None and rest[0].seq > last


async def read_after_the_host_closed(make_store: StoreFactory, *, buffer: int, history: int, turns: int) -> list[HostEvent]:
    """A subscriber that reads nothing while the host runs ``turns`` turns, then everything
    once the host (and its store) has closed; checks what every such read must be, and
    returns it."""
    async with contextlib.AsyncExitStack() as outlives_the_host:
        async with Host(store=make_store(), event_history=history) as host:
            chat = await host.sessions.create()
            events = await outlives_the_host.enter_async_context(host.subscribe(buffer=buffer))
            for i in range(turns):  # 2 events each: turn_started and turn_finished
                await chat.run(f"m{i}")
        got: list[HostEvent] = []
        with anyio.fail_after(10):
            async for event in events:
                got.append(event)
    lagged = [e for e in got if isinstance(e, Lagged)]
    rest = [e for e in got if not isinstance(e, Lagged)]
    assert len(lagged) <= 1 and (not lagged or got[0] is lagged[0]), got
    assert sum(e.missed for e in lagged) + len(rest) == 2 * turns, got
    seqs = [e.seq for e in rest if e.seq is not None]
    assert len(seqs) == len(rest) and all(a < b for a, b in zip(seqs, seqs[1:], strict=False)), seqs
    assert isinstance(rest[-1], TurnFinished) and rest[-1].reply == f"echo: m{turns - 1}", got
    return got


@pytest.mark.anyio
async def test_a_subscriber_behind_its_buffer_when_the_host_closes_gets_what_is_left_and_a_lagged_then_ends(
    make_store: StoreFactory,
) -> None:
    """A dashboard that stopped reading while the host ran on: once the host has closed, its
    store with it, the stream still ends cleanly (it once raised "store is not open" on a
    shared store, reading the rows it had fallen behind on from the closed store): what the
    host still holds in memory, a `Lagged` for what only the store had, nothing twice."""
    got = await read_after_the_host_closed(make_store, buffer=2, history=4, turns=5)
    assert isinstance(got[0], Lagged) and got[0].missed == 10 - (len(got) - 1)


@settings(max_examples=12, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture])
@given(
    buffer=st.integers(1, 8),
    history=st.integers(0, 8),
    turns=st.integers(1, 6),
    backend=st.sampled_from(["asyncio", "trio"]),
)
def test_a_stream_read_after_its_host_closed_counts_every_event_it_does_not_deliver(
    make_store: StoreFactory, buffer: int, history: int, turns: int, backend: str
) -> None:
    """Whatever the stream's buffer and the host's history: read after the host (and its
    store) closed, a stream delivers the events it still can, in order and once each, after
    at most one `Lagged` that counts every other one, and ends."""

    async def story() -> None:
        await read_after_the_host_closed(make_store, buffer=buffer, history=history, turns=turns)

    anyio.run(story, backend=backend)


@pytest.mark.anyio
async def test_resuming_from_events_the_host_no_longer_keeps_starts_with_lagged() -> None:
    async with Host(event_history=4) as host:
        chat = await host.sessions.create()  # seq 1
        for i in range(5):  # seqs 2..11
            await chat.run(f"m{i}")
        async with host.subscribe(after=1) as events:
            lagged, *kept = await drain(events, 5)
    assert isinstance(lagged, Lagged) and lagged.missed == 6 and lagged.seq == 7
    assert [e.seq for e in kept] == [8, 9, 10, 11]


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture])
@given(history=st.integers(0, 12), turns=st.integers(0, 8), data=st.data())
def test_a_resumed_stream_is_exactly_what_followed_minus_what_was_dropped(history: int, turns: int, data: st.DataObject) -> None:
    """Whatever the history size and the seq resumed from: no event twice, none out of order,
    and every one missing is counted by one lagged event first."""

    async def story() -> None:
        async with Host(event_history=history) as host:
            chat = await host.sessions.create()
            for i in range(turns):
                await chat.run(f"m{i}")
            published = 1 + 2 * turns
            after = data.draw(st.integers(0, published), label="after")
            want = list(range(after + 1, published + 1))
            async with host.subscribe(after=after) as events:
                got: list[HostEvent] = []
                if want:
                    kept = min(len(want), history)
                    got = await drain(events, kept + (1 if kept < len(want) else 0))
            if len(want) > history:
                first = got[0]
                assert isinstance(first, Lagged) and first.missed == len(want) - history
                got = got[1:]
            assert [e.seq for e in got] == want[len(want) - len(got) :]
            assert len(got) == min(len(want), history)

    anyio.run(story, backend=data.draw(st.sampled_from(["asyncio", "trio"]), label="backend"))


@pytest.mark.anyio
async def test_subscribe_refuses_an_after_that_is_no_seq() -> None:
    async with Host() as host:
        for bad in (-1, "7", True, 1.5):
            with pytest.raises(InvalidArgumentError, match=r"after must be None or the seq .* got") as caught:
                async with host.subscribe(after=bad):  # type: ignore[arg-type]
                    pass
            assert caught.value.argument == "after"
    with pytest.raises(InvalidArgumentError, match=r"event_history must be an int >= 0 .* got -1"):
        Host(event_history=-1)


@pytest.mark.anyio
async def test_closing_a_host_right_after_start_is_quick_and_raises_nothing(make_store: StoreFactory) -> None:
    store = make_store()
    async with Host(store=store) as host:
        chat = await host.sessions.create()
    for _ in range(3):
        began = time.perf_counter()
        async with Host(store=make_store()) as host:
            job = await host.start(chat.id, "quick")
        assert time.perf_counter() - began < 5
        assert job.status in ("interrupted", "finished")


@pytest.mark.anyio
async def test_every_event_a_host_publishes_survives_its_row_unchanged_but_for_seq_and_host() -> None:
    """What a shared store writes of an event (`event_row`) reads back (`event_of`) equal."""
    from host_sim.testing import event_of, event_row

    seen: list[HostEvent] = []
    async with Host(mods=[spawner]) as host:
        async with host.subscribe() as events:
            chat = await host.sessions.create()
            result = await chat.run("hello")
            await chat.send(AiNotificationMessage(title="ping", body="pong"))
            await host.submit(chat, f"/spawn-from {chat.id}")
            await host.lineage.forget(result.turn.id, dry_run=False)
            await host.sessions.delete(chat.id)
            with anyio.fail_after(10):
                async for event in events:
                    seen.append(event)
                    if event.kind == "session_deleted":
                        break
    kinds = {e.kind for e in seen}
    assert {"session_created", "turn_started", "turn_finished", "notification", "command_finished", "turn_erased"} <= kinds
    for event in seen:
        assert event_of(event.seq, event.host_id, event_row(event).event) == event

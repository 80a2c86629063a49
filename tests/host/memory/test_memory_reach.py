"""Where memory records reach (API.md section 20): ``lineage --backward`` and a scope's lineage
take a record id, and every change to a record is said by an event: forgetting a record by its
id (``memory_erased`` for it and each record derived from it), retracting a turn that summaries
rest on (``memory_retracted`` for each summary it retracts). On every store, both backends; a
property test tries random records, forgets and retractions against the events."""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Literal, TypeAlias

import anyio
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from host_sim import (
    ContextPolicy,
    EventStream,
    HistoryEntry,
    Host,
    HostEvent,
    MemoryErased,
    MemoryRetracted,
    MemoryStore,
    RecordId,
    RecordOrigin,
    ScriptedModel,
    SessionCreated,
    SqliteStore,
    Store,
    TurnErased,
    TurnRetracted,
    Window,
)
from modular_sdk import AiPromptMessage, AiSessionHandle, AiTurnHandle, MemoryRecord, UnknownRecordError

from ..conftest import StoreFactory

pytestmark = pytest.mark.anyio


async def say(session: AiSessionHandle, text: str) -> AiTurnHandle:
    return await session.send(AiPromptMessage(text=text))


async def joined(entries: Sequence[HistoryEntry]) -> str:
    return "summary: " + " | ".join(e.text for e in entries)


async def until_marker(host: Host, events: EventStream) -> list[HostEvent]:
    """Every event published before a marker session is created now, in order (so an event
    that should not be there would show)."""
    marker = await host.sessions.create(tags={"marker": "yes"})
    seen: list[HostEvent] = []
    with anyio.fail_after(10):
        async for event in events:
            if isinstance(event, SessionCreated) and event.session_id == marker.id:
                return seen
            seen.append(event)
    raise AssertionError("the event stream ended before the marker")


def memory_events(events: Sequence[HostEvent]) -> list[tuple[str, str]]:
    return [(e.kind, e.record_id) for e in events if isinstance(e, (MemoryErased, MemoryRetracted))]


# -- lineage --backward and scoped lineage take a record id ------------------------------------


def run_cli(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "host_sim", *args], capture_output=True, text=True, timeout=120, check=False
    )


async def test_host_sim_lineage_backward_walks_a_record_back_to_the_turns_and_records_it_was_read_from(
    tmp_path: Path,
) -> None:
    path = tmp_path / "store.sqlite"
    async with Host(store=SqliteStore(path)) as h:
        chat = await h.sessions.create()
        t1 = await say(chat, "I'm Alice")
        t2 = await say(chat, "I live in Lisbon")
        t3 = await say(chat, "and I work at Acme")
        city = await h.memory.record(chat, "Alice lives in Lisbon", kind="state", read_from=Window(first=t1.id, last=t2.id))
        profile = await h.memory.record(chat, "Alice: Lisbon, Acme", kind="profile", cites=(t3.id,), derived_from=(city.id,))
    shown = await anyio.to_thread.run_sync(lambda: run_cli("lineage", "--store", str(path), "--backward", profile.id, "--json"))
    assert shown.returncode == 0, shown.stderr
    data = json.loads(shown.stdout)
    assert data["of"] == {"session_id": chat.id, "record_id": profile.id, "kind": "profile"}
    assert [r["turn_id"] for r in data["read_from"]] == [t3.id]
    assert data["passages"] == [] and [r["record_id"] for r in data["records"]] == [city.id]
    shown = await anyio.to_thread.run_sync(lambda: run_cli("lineage", "--store", str(path), "--backward", city.id))
    assert shown.returncode == 0, shown.stderr
    assert f"record {city.id} (state, made in {chat.id}), backward: read from 2 turn(s)" in shown.stdout
    assert t1.id in shown.stdout and t2.id in shown.stdout and t3.id not in shown.stdout
    assert f"passages (1): {t1.id}..{t2.id}" in shown.stdout
    missing = await anyio.to_thread.run_sync(lambda: run_cli("lineage", "--store", str(path), "--backward", "mem_0000000000000000"))
    assert missing.returncode == 1 and "no memory record by this id" in missing.stderr and missing.stdout == ""


async def test_a_scope_walks_its_own_records_and_an_outside_record_fails_exactly_like_a_missing_one(
    any_store: StoreFactory,
) -> None:
    async with Host(store=any_store()) as h:
        alice, bob = h.scoped({"user": "alice"}), h.scoped({"user": "bob"})
        chat = await alice.sessions.create()
        t1 = await say(chat, "I live in Lisbon")
        rec = await alice.memory.record(chat, "Alice lives in Lisbon", kind="state", cites=(t1.id,))
        note = await alice.memory.record(chat, "a note on it", kind="note", derived_from=(rec.id,))
        back = await alice.lineage.backward(RecordId(rec.id))
        assert isinstance(back, RecordOrigin) and [t.turn_id for t in back.read_from] == [t1.id]
        assert back == await h.lineage.backward(RecordId(rec.id))
        assert [r.record_id for r in (await alice.lineage.forward(rec.id)).records] == [note.id]
        plan = await alice.lineage.forget(rec.id)
        assert [r.record_id for r in plan.records] == [rec.id, note.id] and not plan.erased
        missing = "mem_" + "0" * 16
        for walk in (bob.lineage.backward, bob.lineage.forward, bob.lineage.forget):
            with pytest.raises(UnknownRecordError) as outside:
                await walk(rec.id)
            with pytest.raises(UnknownRecordError) as absent:
                await walk(missing)
            assert str(outside.value).replace(rec.id, "ID") == str(absent.value).replace(missing, "ID")
            assert outside.value.id == rec.id
        assert (await h.memory.get(rec.id)).text == "Alice lives in Lisbon"  # bob's forget erased nothing


async def test_a_scope_never_lists_another_scopes_record_a_record_was_derived_from(any_store: StoreFactory) -> None:
    async with Host(store=any_store()) as h:
        alice, bob = h.scoped({"user": "alice"}), h.scoped({"user": "bob"})
        a_chat, b_chat = await alice.sessions.create(), await bob.sessions.create()
        a1, b1 = await say(a_chat, "alice's words"), await say(b_chat, "bob's words")
        theirs = await h.memory.record(b_chat, "about bob", kind="fact", cites=(b1.id,))
        mine = await h.memory.record(a_chat, "about both", kind="fact", cites=(a1.id,), derived_from=(theirs.id,))
        back = await alice.lineage.backward(RecordId(mine.id))
        assert [t.turn_id for t in back.read_from] == [a1.id] and back.records == ()
        assert (await alice.lineage.forward(a1.id)).records[0].record_id == mine.id
        assert [r.record_id for r in (await bob.lineage.forward(theirs.id)).records] == []


# -- events: every change to a record is said ---------------------------------------------------


async def test_forgetting_a_record_alone_publishes_memory_erased_for_it_and_each_record_derived_from_it(
    any_store: StoreFactory,
) -> None:
    async with Host(store=any_store()) as h:
        chat = await h.sessions.create()
        t1 = await say(chat, "I live in Lisbon")
        city = await h.memory.record(chat, "Alice lives in Lisbon", kind="state", cites=(t1.id,))
        profile = await h.memory.record(chat, "Alice: Lisbon", kind="profile", derived_from=(city.id,))
        about = await h.memory.record(chat, "about the profile", kind="note", derived_from=(profile.id,))
        other = await h.memory.record(chat, "unrelated", kind="fact", cites=(t1.id,))
        async with h.subscribe() as events:
            await h.lineage.forget(city.id)  # a dry run says nothing
            assert memory_events(await until_marker(h, events)) == []
            await h.lineage.forget(profile.id, dry_run=False)
            seen = await until_marker(h, events)
            assert memory_events(seen) == [("memory_erased", profile.id), ("memory_erased", about.id)]
            assert not any(isinstance(e, TurnErased) for e in seen)  # no turn was erased
            erased = [e for e in seen if isinstance(e, MemoryErased)]
            assert all(e.session_id == chat.id and e.seq > 0 for e in erased)
            await h.lineage.forget(city.id, dry_run=False)  # the rest of the chain was erased before
            assert memory_events(await until_marker(h, events)) == [("memory_erased", city.id)]
            await h.lineage.forget(city.id, dry_run=False)  # forgetting again erases, and says, nothing
            assert memory_events(await until_marker(h, events)) == []
        assert (await h.memory.get(other.id)).text == "unrelated"


async def test_retracting_a_turn_publishes_memory_retracted_for_each_summary_it_retracts(any_store: StoreFactory) -> None:
    policy = ContextPolicy(max_tokens=60, keep_recent=1, summarize=joined)
    async with Host(store=any_store(), model=ScriptedModel(lambda request: "ok"), context=policy) as h:
        chat = await h.sessions.create()
        turns = [await say(chat, f"message {i} with some words") for i in range(9)]
        summaries = (await h.memory.list(session=chat, kind="summary")).records
        assert len(summaries) >= 2, "the budget makes several summaries, each derived from the last"
        fact = await h.memory.record(chat, "a fact", kind="fact", cites=(turns[0].id,))
        async with h.subscribe() as events:
            await h.lineage.retract(turns[0].id, reason="it was wrong")
            seen = await until_marker(h, events)
            kinds = [e.kind for e in seen if isinstance(e, (TurnRetracted, MemoryRetracted))]
            assert kinds == ["turn_retracted"] + ["memory_retracted"] * len(summaries)
            assert memory_events(seen) == [("memory_retracted", s.id) for s in summaries]
            await h.lineage.retract(turns[0].id, reason="again")  # nothing more is retracted, nothing said
            assert [e for e in await until_marker(h, events) if isinstance(e, (TurnRetracted, MemoryRetracted))] == []
        for summary in summaries:
            assert (await h.memory.get(summary.id)).retracted_at is not None
        assert (await h.memory.get(fact.id)).retracted_at is None  # a fact is the integrator's to re-check


async def test_forgetting_a_turn_names_the_records_it_erased_in_turn_erased_and_publishes_no_memory_erased(
    any_store: StoreFactory,
) -> None:
    async with Host(store=any_store()) as h:
        chat = await h.sessions.create()
        t1 = await say(chat, "I live in Lisbon")
        city = await h.memory.record(chat, "Alice lives in Lisbon", kind="state", cites=(t1.id,))
        async with h.subscribe() as events:
            await h.lineage.forget(t1.id, dry_run=False)
            seen = await until_marker(h, events)
        assert memory_events(seen) == []
        assert [e.records for e in seen if isinstance(e, TurnErased)] == [(city.id,)]


async def test_a_record_resting_only_on_a_turn_erased_before_is_said_by_memory_erased_when_forget_reaches_it(
    any_store: StoreFactory,
) -> None:
    async with Host(store=any_store()) as h:
        chat = await h.sessions.create()
        t1 = await say(chat, "I live in Lisbon")
        await h.lineage.forget(t1.id, dry_run=False)
        late = await h.memory.record(chat, "made after the erasure", kind="fact", cites=(t1.id,))
        async with h.subscribe() as events:
            await h.lineage.forget(t1.id, dry_run=False)  # no turn is erased again: no turn_erased names it
            seen = await until_marker(h, events)
        assert memory_events(seen) == [("memory_erased", late.id)]
        assert (await h.memory.get(late.id)).text == "(erased)"


# -- property: the events say exactly what changed ------------------------------------------

Op: TypeAlias = tuple[Literal["send", "record", "derive", "forget", "forget_record", "retract", "retract_record"], int, int]
_OPS = st.lists(
    st.tuples(
        st.sampled_from(["send", "send", "record", "derive", "derive", "forget", "forget_record", "retract", "retract_record"]),
        st.integers(0, 60),
        st.integers(0, 60),
    ),
    min_size=1,
    max_size=20,
)


async def _states(host: Host, session: AiSessionHandle) -> dict[str, MemoryRecord]:
    page = await host.memory.list(session=session, include_retracted=True, limit=1000)
    assert page.next is None
    return {r.id: r for r in page.records}


async def _run(ops: list[Op], store: Store) -> None:
    policy = ContextPolicy(max_tokens=50, keep_recent=1, summarize=joined)
    async with Host(store=store, model=ScriptedModel(lambda request: "ok"), context=policy) as host:
        chat = await host.sessions.create()
        turns = [await say(chat, f"opening words number {i}") for i in range(3)]
        async with host.subscribe(buffer=10_000) as events:
            for index, (what, a, b) in enumerate(ops):
                before = await _states(host, chat)
                ids = sorted(before)
                if what == "send":
                    turns.append(await say(chat, f"more words number {index}"))
                elif what == "record":
                    await host.memory.record(chat, f"fact {index}", kind="fact", cites=(turns[a % len(turns)].id,))
                elif what == "derive" and ids:
                    parents = tuple(dict.fromkeys((ids[a % len(ids)], ids[b % len(ids)])))
                    await host.memory.record(chat, f"derived {index}", kind="note", derived_from=parents)
                elif what == "forget":
                    await host.lineage.forget(turns[a % len(turns)].id, dry_run=False)
                elif what == "forget_record" and ids:
                    await host.lineage.forget(ids[a % len(ids)], dry_run=False)
                elif what == "retract":
                    await host.lineage.retract(turns[a % len(turns)].id, reason=f"wrong {index}")
                elif what == "retract_record" and ids:
                    await host.memory.retract(ids[a % len(ids)], reason=f"wrong {index}")
                seen = await until_marker(host, events)
                after = await _states(host, chat)
                newly_erased = [i for i in ids if before[i].erased_at is None and after[i].erased_at is not None]
                newly_retracted = [i for i in ids if before[i].retracted_at is None and after[i].retracted_at is not None]
                said_erased = [e.record_id for e in seen if isinstance(e, MemoryErased)]
                said_retracted = [e.record_id for e in seen if isinstance(e, MemoryRetracted)]
                named = {r for e in seen if isinstance(e, TurnErased) for r in e.records}
                assert len(set(said_erased)) == len(said_erased) and not set(said_erased) & named  # said once
                assert set(said_erased) <= set(newly_erased)  # never an erasure that did not happen
                assert set(newly_erased) <= set(said_erased) | named  # every erasure is said
                if what == "forget_record":
                    assert sorted(said_erased) == newly_erased
                assert sorted(said_retracted) == newly_retracted and len(set(said_retracted)) == len(said_retracted)


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(ops=_OPS)
@pytest.mark.parametrize("backend", ["asyncio", "trio"])
def test_memory_events_say_exactly_which_records_were_erased_or_retracted(backend: str, ops: list[Op]) -> None:
    anyio.run(_run, ops, MemoryStore(), backend=backend)


@settings(max_examples=6, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(ops=_OPS)
def test_the_same_holds_on_a_sqlite_store(tmp_path_factory: pytest.TempPathFactory, ops: list[Op]) -> None:
    folder = tmp_path_factory.mktemp("reach")
    anyio.run(_run, ops, SqliteStore(folder / "store.sqlite"))


async def test_another_host_on_the_same_database_hears_a_record_forgotten_and_a_summary_retracted(postgres_dsn: str) -> None:
    from host_sim import PostgresStore

    policy = ContextPolicy(max_tokens=60, keep_recent=1, summarize=joined)
    async with (
        Host(store=PostgresStore(postgres_dsn), model=ScriptedModel(lambda request: "ok"), context=policy) as a,
        Host(store=PostgresStore(postgres_dsn)) as b,
    ):
        chat = await a.sessions.create()
        turns = [await say(chat, f"message {i} with some words") for i in range(6)]
        summaries = (await a.memory.list(session=chat, kind="summary")).records
        assert summaries
        fact = await a.memory.record(chat, "a fact", kind="fact", cites=(turns[-1].id,))
        async with b.subscribe() as events:
            await a.lineage.forget(fact.id, dry_run=False)
            await a.lineage.retract(turns[0].id, reason="it was wrong")
            heard: list[tuple[str, str]] = []
            with anyio.fail_after(20):
                async for event in events:
                    if isinstance(event, (MemoryErased, MemoryRetracted)):
                        heard.append((event.kind, event.record_id))
                        assert event.host_id != ""
                    if len(heard) == 1 + len(summaries):
                        break
        assert heard == [("memory_erased", fact.id), *(("memory_retracted", s.id) for s in summaries)]

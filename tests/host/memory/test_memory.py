"""Memory records (API.md section 20, seed 001): a conversation read into records that rest
on its words; lineage follows a turn forward to them and a record back to its words; forget
walks the same edges; corrections retract. On every store, both backends."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

import attrs
import pytest

from host_sim import (
    Host,
    HostAuthor,
    MemoryRecorded,
    MemoryRetracted,
    ModelRequest,
    RecordOrigin,
    RecordRef,
    ScriptedModel,
    Store,
    ToolCall,
    TurnErased,
    UnknownRecordError,
    Window,
)
from modular_sdk import (
    AiContributions,
    AiPromptMessage,
    AiSessionHandle,
    AiTurnHandle,
    InvalidArgumentError,
    ModAuthor,
    ModMetadata,
    RecordId,
    ToolContext,
    TurnId,
    UnknownSessionError,
    define_mod,
    tool,
)

from ..conftest import StoreFactory

pytestmark = pytest.mark.anyio


async def say(session: AiSessionHandle, text: str) -> AiTurnHandle:
    return await session.send(AiPromptMessage(text=text))


@asynccontextmanager
async def host(store: Store, **kwargs: object) -> AsyncIterator[Host]:
    async with Host(store=store, **kwargs) as h:  # type: ignore[arg-type]
        yield h


async def test_a_record_rests_on_a_window_and_cites_and_reads_back_after_reopen(any_store: StoreFactory) -> None:
    async with host(any_store()) as h:
        chat = await h.sessions.create()
        t1 = await say(chat, "I'm Alice")
        t2 = await say(chat, "I live in Lisbon")
        t3 = await say(chat, "and I work at Acme")
        rec = await h.memory.record(
            chat, "Alice lives in Lisbon", kind="state", read_from=Window(first=t1.id, last=t3.id), cites=(t2.id,),
            data={"city": "Lisbon"},
        )
        assert rec.id.startswith("mem_") and rec.session_id == chat.id and rec.kind == "state"
        assert rec.read_from == Window(first=t1.id, last=t3.id) and rec.cites == (t2.id,)
        assert rec.data == {"city": "Lisbon"} and rec.made_by == HostAuthor()
        assert rec.retracted_at is None and rec.erased_at is None
    async with host(any_store()) as h:
        assert await h.memory.get(rec.id) == rec
        back = await h.lineage.backward(RecordId(rec.id))
        assert isinstance(back, RecordOrigin)
        assert [r.turn_id for r in back.read_from] == [t1.id, t2.id, t3.id]
        assert back.passages == (Window(first=t1.id, last=t3.id),) and back.records == ()
        assert back.of == RecordRef(record_id=rec.id, session_id=chat.id, kind="state")


async def test_forward_of_a_turn_lists_every_record_resting_on_it_transitively_and_forget_erases_exactly_them(
    any_store: StoreFactory,
) -> None:
    async with host(any_store()) as h:
        chat = await h.sessions.create()
        t1 = await say(chat, "I live in Lisbon")
        t2 = await say(chat, "unrelated")
        t3 = await say(chat, "I work at Acme")
        city = await h.memory.record(chat, "Alice lives in Lisbon", kind="state", cites=(t1.id,), data={"c": "Lisbon"})
        job = await h.memory.record(chat, "Alice works at Acme", kind="state", read_from=Window(first=t3.id, last=t3.id))
        profile = await h.memory.record(chat, "Alice: Lisbon, Acme", kind="profile", derived_from=(city.id, job.id))
        about = await h.memory.record(chat, "about the profile", kind="note", derived_from=(profile.id,))
        fwd = await h.lineage.forward(t1.id)
        # t2 and t3 saw t1 in their history, so what rests on them rests on t1 too
        assert [r.record_id for r in fwd.records] == [city.id, job.id, profile.id, about.id]
        fwd2 = await h.lineage.forward(t3.id)
        assert [r.record_id for r in fwd2.records] == [job.id, profile.id, about.id]
        of_record = await h.lineage.forward(city.id)
        assert isinstance(of_record.of, RecordRef) and [r.record_id for r in of_record.records] == [profile.id, about.id]
        plan = await h.lineage.forget(t3.id)
        assert plan.records == fwd2.records and not plan.erased
        assert (await h.memory.get(job.id)).text == "Alice works at Acme"  # a dry run erases nothing
        done = await h.lineage.forget(t3.id, dry_run=False)
        assert done.records == fwd2.records
        for kept in (city,):
            assert (await h.memory.get(kept.id)).text == kept.text
        for gone in (job, profile, about):
            after = await h.memory.get(gone.id)
            assert (after.text, after.data, after.kind, after.erased_at) == ("(erased)", None, gone.kind, after.erased_at)
            assert after.erased_at is not None and after.created_at == gone.created_at
        assert t2.id not in {r.turn_id for r in done.turns}
    async with host(any_store()) as h:
        assert (await h.memory.get(profile.id)).text == "(erased)"
        assert (await h.memory.get(city.id)).data == {"c": "Lisbon"}


async def test_forgetting_a_record_erases_it_and_what_was_derived_from_it_but_never_the_turns(any_store: StoreFactory) -> None:
    async with host(any_store()) as h:
        chat = await h.sessions.create()
        t1 = await say(chat, "I live in Lisbon")
        city = await h.memory.record(chat, "Alice lives in Lisbon", kind="state", cites=(t1.id,))
        derived = await h.memory.record(chat, "Alice is in Portugal", kind="state", derived_from=(city.id,))
        plan = await h.lineage.forget(city.id)
        assert isinstance(plan.of, RecordRef) and plan.turns == ()
        assert [r.record_id for r in plan.records] == [city.id, derived.id]
        await h.lineage.forget(city.id, dry_run=False)
        assert (await h.memory.get(derived.id)).text == "(erased)"
        turn = await h.sessions.turn(t1.id)
        assert turn.erased_at is None and turn.message.type == "prompt"


async def test_a_record_must_rest_on_completed_turns_of_its_own_history() -> None:
    async with Host() as h:
        chat = await h.sessions.create()
        other = await h.sessions.create()
        t1 = await say(chat, "one")
        t2 = await say(chat, "two")
        elsewhere = await say(other, "elsewhere")
        with pytest.raises(InvalidArgumentError, match="must rest on something") as caught:
            await h.memory.record(chat, "floating", kind="fact")
        with pytest.raises(InvalidArgumentError, match=f"{elsewhere.id!r}.*not a turn of session {chat.id!r}") as caught:
            await h.memory.record(chat, "x", kind="fact", cites=(elsewhere.id,))
        assert caught.value.argument == "cites" and caught.value.value == elsewhere.id
        with pytest.raises(InvalidArgumentError, match="runs backwards") as caught:
            await h.memory.record(chat, "x", kind="fact", read_from=Window(first=t2.id, last=t1.id))
        assert caught.value.argument == "read_from"
        with pytest.raises(InvalidArgumentError, match="'turn_nope'") as caught:
            await h.memory.record(chat, "x", kind="fact", read_from=Window(first=t1.id, last=TurnId("turn_nope")))
        assert caught.value.argument == "read_from.last"
        with pytest.raises(InvalidArgumentError, match="kind must be non-empty"):
            await h.memory.record(chat, "x", kind=" ", cites=(t1.id,))
        with pytest.raises(UnknownRecordError, match="no memory record by this id in this host: 'mem_missing'") as unknown:
            await h.memory.record(chat, "x", kind="fact", derived_from=("mem_missing",))
        assert unknown.value.id == "mem_missing"
        with pytest.raises(UnknownRecordError, match="no memory record by this id in this host: 'mem_nope'") as unknown:
            await h.memory.get("mem_nope")
        assert unknown.value.id == "mem_nope"
        with pytest.raises(UnknownRecordError, match="'mem_nope'"):
            await h.lineage.forward("mem_nope")
        with pytest.raises(UnknownRecordError, match="'mem_nope'"):
            await h.lineage.backward("mem_nope")
        with pytest.raises(UnknownSessionError):
            await h.memory.record("ses_nope", "x", kind="fact", cites=(t1.id,))


async def test_a_fork_may_rest_on_inherited_turns_up_to_its_anchor_only() -> None:
    async with Host() as h:
        chat = await h.sessions.create()
        t1 = await say(chat, "one")
        t2 = await say(chat, "two")
        fork = await t1.fork()
        f1 = await say(fork, "fork one")
        rec = await h.memory.record(fork, "fork summary", kind="summary", read_from=Window(first=t1.id, last=f1.id))
        back = await h.lineage.backward(RecordId(rec.id))
        assert [r.turn_id for r in back.read_from] == [t1.id, f1.id]
        with pytest.raises(InvalidArgumentError, match=f"{t2.id!r}"):
            await h.memory.record(fork, "leak", kind="fact", cites=(t2.id,))


async def test_retraction_keeps_the_record_marks_it_once_and_hides_it_from_search_and_listing(any_store: StoreFactory) -> None:
    async with host(any_store()) as h:
        chat = await h.sessions.create()
        t1 = await say(chat, "I live in Lisbon")
        rec = await h.memory.record(chat, "Alice lives in Lisbon", kind="state", cites=(t1.id,))
        async with h.subscribe() as events:
            first = await h.memory.retract(rec.id, reason="she moved")
            again = await h.memory.retract(rec.id, reason="another reason")
            retracted = [e async for e in _take(events, 1)]
        assert first.retracted_at is not None and first.retraction_reason == "she moved"
        assert again == first
        assert isinstance(retracted[0], MemoryRetracted) and retracted[0].record_id == rec.id
        assert await h.memory.search("Lisbon") == ()
        assert (await h.memory.list(session=chat)).records == ()
        assert (await h.memory.list(session=chat, include_retracted=True)).records == (first,)
        assert [r.record_id for r in (await h.lineage.forward(t1.id)).records] == [rec.id]  # what to re-check


async def _take(events: object, n: int) -> AsyncIterator[object]:
    count = 0
    async for event in events:  # type: ignore[attr-defined]
        if isinstance(event, (MemoryRecorded, MemoryRetracted, TurnErased)):
            yield event
            count += 1
            if count == n:
                return


async def test_search_is_ranked_excludes_erased_records_and_pages_list_in_writing_order(any_store: StoreFactory) -> None:
    async with host(any_store()) as h:
        chat = await h.sessions.create()
        t1 = await say(chat, "facts")
        lisbon = await h.memory.record(chat, "Alice lives in Lisbon, Lisbon is sunny", kind="state", cites=(t1.id,))
        acme = await h.memory.record(chat, "Alice works at Acme in Lisbon", kind="state", cites=(t1.id,))
        await h.memory.record(chat, "Bob lives in Porto", kind="state", cites=(t1.id,))
        hits = await h.memory.search("lisbon alice")
        assert [r.id for r in hits] == [lisbon.id, acme.id]
        assert [r.id for r in await h.memory.search("acme")] == [acme.id]
        assert await h.memory.search("  ") == ()
        page = await h.memory.list(limit=2)
        assert [r.id for r in page.records] == [lisbon.id, acme.id] and page.next is not None
        rest = await h.memory.list(limit=2, after=page.next)
        assert [r.text for r in rest.records] == ["Bob lives in Porto"] and rest.next is None
        await h.lineage.forget(t1.id, dry_run=False)
        assert await h.memory.search("Lisbon") == ()


async def test_a_scope_sees_and_writes_only_its_sessions_records(any_store: StoreFactory) -> None:
    async with host(any_store()) as h:
        alice, bob = h.scoped({"user": "alice"}), h.scoped({"user": "bob"})
        a_chat = await alice.sessions.create()
        b_chat = await bob.sessions.create()
        a1 = await say(a_chat, "alice's secret")
        b1 = await say(b_chat, "bob's secret")
        a_rec = await alice.memory.record(a_chat, "alice secret", kind="fact", cites=(a1.id,))
        await bob.memory.record(b_chat, "bob secret", kind="fact", cites=(b1.id,))
        assert [r.id for r in await alice.memory.search("secret")] == [a_rec.id]
        assert [r.id for r in (await alice.memory.list()).records] == [a_rec.id]
        with pytest.raises(UnknownRecordError, match=repr(a_rec.id)):
            await bob.memory.get(a_rec.id)
        with pytest.raises(UnknownSessionError):
            await bob.memory.record(a_chat, "steal", kind="fact", cites=(a1.id,))
        assert len(await h.memory.search("secret")) == 2


async def test_a_tool_the_model_calls_remembers_stamped_with_its_mod_and_tool(any_store: StoreFactory) -> None:
    @attrs.frozen
    class Fact:
        fact: str

    async def remember(args: Fact, ctx: ToolContext) -> str:
        turns = [t for t in await ctx.session.turns() if t.status == "completed"]
        rec = await ctx.ai.memory.record(ctx.session, args.fact, kind="fact", cites=(turns[-1].id,))
        assert [r.id for r in await ctx.ai.memory.search(args.fact)] == [rec.id]
        assert await ctx.ai.memory.get(rec.id) == rec
        return rec.id

    mod = define_mod(
        id="notebook",
        metadata=ModMetadata(display_name="Notebook", description="remembers"),
        ai=AiContributions(tools=[tool(name="remember", description="Remember a fact", input_type=Fact, run=remember)]),
    )

    def respond(request: ModelRequest) -> str | ToolCall:
        if request.text.startswith("remember") and not request.tool_results:
            return ToolCall(name="remember", input={"fact": "Alice lives in Lisbon"})
        return "ok" if not request.tool_results else f"remembered {request.tool_results[-1].output}"

    async with host(any_store(), mods=[mod], model=ScriptedModel(respond)) as h:
        chat = await h.sessions.create()
        said = await say(chat, "I live in Lisbon")
        async with h.subscribe() as events:
            turn = await say(chat, "remember that")
            recorded = [e async for e in _take(events, 1)]
        assert turn.reply is not None and turn.reply.startswith("remembered mem_")
        rec = await h.memory.get(turn.reply.removeprefix("remembered "))
        assert rec.made_by == ModAuthor(mod_id="notebook", tool_name="remember") and rec.cites == (said.id,)
        assert isinstance(recorded[0], MemoryRecorded) and recorded[0].record_id == rec.id
        assert [r.record_id for r in (await h.lineage.forward(said.id)).records] == [rec.id]


async def test_forget_reports_the_erased_records_and_a_deleted_session_erases_its_records(any_store: StoreFactory) -> None:
    async with host(any_store()) as h:
        chat = await h.sessions.create()
        t1 = await say(chat, "I live in Lisbon")
        rec = await h.memory.record(chat, "Alice lives in Lisbon", kind="state", cites=(t1.id,))
        t2 = await say(chat, "more")
        other = await h.memory.record(chat, "more text", kind="note", cites=(t2.id,))
        async with h.subscribe() as events:
            await h.lineage.forget(t1.id, dry_run=False)
            erased = [e async for e in _take(events, 1)]
        assert isinstance(erased[0], TurnErased) and erased[0].turn_id == t1.id
        assert erased[0].records == (rec.id, other.id)  # the erasure names the records it erased
        assert (await h.memory.get(other.id)).text == "(erased)"  # t2 saw t1: it rests on it
        assert (await h.memory.get(rec.id)).erased_at is not None
        chat2 = await h.sessions.create()
        u1 = await say(chat2, "keep me")
        kept = await h.memory.record(chat2, "kept text", kind="note", cites=(u1.id,))
        await h.sessions.delete(chat2.id)
        assert (await h.memory.get(kept.id)).text == "(erased)"


async def test_the_lineage_page_shows_a_sessions_records_as_data_never_markup() -> None:
    hostile = "</script><script>alert(1)</script><!-- @DATA@ \u2028"
    async with Host() as h:
        chat = await h.sessions.create()
        t1 = await say(chat, "hello")
        rec = await h.memory.record(chat, hostile, kind="fact", cites=(t1.id,))
        page = await h.lineage.html()
        own = await h.lineage.html(chat.id)
    for shown in (page, own):
        assert rec.id in shown and "alert(1)" in shown
        assert "</script><script>alert" not in shown and "\u2028" not in shown
        assert shown.count("<script") == page.count("<script")

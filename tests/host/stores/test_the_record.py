"""The record, complete (API.md section 17): what a turn did is kept with the turn, on
every store, read back after a reopen, shown by transcripts, and erased with the turn."""

from __future__ import annotations

import json
import secrets
import sqlite3
from datetime import UTC, datetime, timedelta
from pathlib import Path

import anyio
import attrs
import pytest

from host_sim import (
    ActionRecord,
    Host,
    Invocation,
    ModelRequest,
    RecordingModel,
    ReplayModel,
    ScriptedModel,
    SqliteStore,
    ToolCall,
    ToolCallRecord,
    TurnRetracted,
    TurnRunningError,
)
from host_sim.testing import ERASED_LABEL
from host_sim.testing import SQLITE_ERASURE_RULES as _ERASURE_RULES
from modular_sdk import (
    ActionContext,
    AiContributions,
    AiTurnHandle,
    InvalidArgumentError,
    ModMetadata,
    SlashCommandContext,
    ToolContext,
    UnknownTurnError,
    action,
    define_mod,
    slash_command,
    to_json,
    tool,
)

from ..conftest import StoreFactory

pytestmark = pytest.mark.anyio


@attrs.frozen
class Lookup:
    """What to look up."""

    word: str


async def define(query: Lookup, ctx: ToolContext) -> str:
    if query.word == "boom":
        raise RuntimeError(f"the dictionary is on fire near {query.word!r}")
    return f"{query.word}: a word"


DICTIONARY = define_mod(
    metadata=ModMetadata(display_name="Dictionary", description="Looks words up"),
    ai=AiContributions(tools=[tool(name="define", description="Define a word", input_type=Lookup, run=define)]),
)


def lookups(*words: str) -> ScriptedModel:
    """A model that looks up each word in turn (one tool call per word), then answers; a
    word ``tool:word`` is looked up with that tool instead."""

    def respond(request: ModelRequest) -> str | ToolCall:
        done = len(request.tool_results)
        if done < len(words):
            name, _, word = words[done].rpartition(":")
            return ToolCall(name=name or "define", input={"word": word}, call_id=f"call-{done}")
        return "looked up: " + "; ".join(r.output or f"error {r.error}" for r in request.tool_results)

    return ScriptedModel(respond)


async def turns_of(host: Host, session_id: str) -> list[AiTurnHandle]:
    """The session's turns, as a host that opened the store reads them."""
    return await (await host.sessions.get(session_id)).turns()


async def test_a_turn_keeps_every_tool_call_it_made_with_input_output_and_times(any_store: StoreFactory) -> None:
    async with Host(mods=[DICTIONARY], model=lookups("apple", "pear"), store=any_store()) as host:
        chat = await host.sessions.create()
        result = await chat.run("define two fruits")
        turn = await host.sessions.turn(result.turn.id)

    first, second = turn.tool_calls
    assert isinstance(first, ToolCallRecord)
    assert (first.call_id, first.name, dict(first.input), first.output, first.error) == (
        "call-0", "define", {"word": "apple"}, "apple: a word", None,
    )  # fmt: skip
    assert (second.call_id, dict(second.input), second.output) == ("call-1", {"word": "pear"}, "pear: a word")
    assert turn.started_at <= first.started_at <= first.finished_at <= second.started_at <= second.finished_at
    assert turn.finished_at is not None and second.finished_at <= turn.finished_at


async def test_tool_calls_are_read_back_after_a_reopen_and_shown_by_the_transcript(any_store: StoreFactory) -> None:
    async with Host(mods=[DICTIONARY], model=lookups("apple", "thesaurus:pear", "boom"), store=any_store()) as host:
        chat = await host.sessions.create()
        await host.submit(chat, "look these up")
        live = (await turns_of(host, chat.id))[0].tool_calls

    async with Host(mods=[DICTIONARY], model=lookups(), store=any_store()) as host:  # a new host: only the store
        (turn,) = await turns_of(host, chat.id)
        assert turn.tool_calls == live
        assert [c.call_id for c in turn.tool_calls] == ["call-0", "call-1", "call-2"]
        refused, failed = turn.tool_calls[1:]
        assert refused.output is None and refused.error == "unknown tool 'thesaurus'; the tools are: 'define'"
        assert failed.output is None and failed.error is not None and "the dictionary is on fire" in failed.error
        assert turn.status == "failed"  # a tool that raised fails its turn; the call is kept all the same
        transcript = await host.transcript(chat.id)

    lines = transcript.splitlines()
    assert lines[0] == "#0 [user] look these up"
    assert lines[1] == f"    id {turn.id}"  # what forget and lineage --forward take
    assert lines[2] == """    tool 'define' {"word": "apple"} -> apple: a word"""
    assert lines[3] == """    tool 'thesaurus' {"word": "pear"} -> error: unknown tool 'thesaurus'; the tools are: 'define'"""
    assert lines[4].startswith("""    tool 'define' {"word": "boom"} -> error: tool 'define' of mod""")
    assert lines[5].startswith("    FAILED: ")


async def test_a_turn_that_called_no_tool_has_no_tool_calls(any_store: StoreFactory) -> None:
    async with Host(mods=[DICTIONARY], model=lookups(), store=any_store()) as host:
        chat = await host.sessions.create()
        result = await chat.run("just talk")
        assert (await host.sessions.turn(result.turn.id)).tool_calls == ()
    async with Host(mods=[DICTIONARY], model=lookups(), store=any_store()) as host:
        (turn,) = await turns_of(host, chat.id)
        assert turn.tool_calls == ()


async def test_forgetting_a_turn_erases_its_tool_calls_inputs_and_outputs_but_keeps_which_tools_ran(
    any_store: StoreFactory,
) -> None:
    marker = f"mk{secrets.token_hex(6)}"
    async with Host(mods=[DICTIONARY], model=lookups(marker, "boom"), store=any_store()) as host:
        chat = await host.sessions.create()
        result = await host.submit(chat, f"define {marker}")
        assert result.turn is not None and marker in repr(result.turn.tool_calls)
        await host.lineage.forget(result.turn.id, dry_run=False)
        (turn,) = await turns_of(host, chat.id)
        assert marker not in repr(turn.tool_calls) and marker not in await host.transcript(chat)

    async with Host(mods=[DICTIONARY], model=lookups(), store=any_store()) as host:
        (turn,) = await turns_of(host, chat.id)
        assert [(c.call_id, c.name, dict(c.input), c.output) for c in turn.tool_calls] == [
            ("call-0", "define", {}, None),
            ("call-1", "define", {}, None),
        ]
        assert turn.tool_calls[1].error == ERASED_LABEL  # it failed: that it did stays, not why
        assert turn.tool_calls[0].error is None
        assert marker not in await host.transcript(chat.id)


async def test_a_tool_input_that_cannot_be_stored_is_kept_with_its_bad_text_escaped(any_store: StoreFactory) -> None:
    async with Host(mods=[DICTIONARY], model=lookups("bad \ud800 text"), store=any_store()) as host:
        chat = await host.sessions.create()
        result = await chat.run("look up a broken word")
        (call,) = (await host.sessions.turn(result.turn.id)).tool_calls
        assert call.input == {"word": "bad \\ud800 text"}
    async with Host(mods=[DICTIONARY], model=lookups(), store=any_store()) as host:
        (turn,) = await turns_of(host, chat.id)
        assert turn.tool_calls == (call,)


async def test_a_sqlite_store_made_before_tool_calls_and_retraction_gets_them_once_a_host_writes_it(tmp_path: Path) -> None:
    path = tmp_path / "older.sqlite"
    async with Host(mods=[DICTIONARY], model=lookups(), store=SqliteStore(path)) as host:
        chat = await host.sessions.create()
        await chat.run("before tool calls were kept")
    conn = sqlite3.connect(path)
    conn.executescript(  # as an older host-sim made it: no such columns, the rule before them
        "DROP TRIGGER finished_turns_never_change;\n"
        "ALTER TABLE turns DROP COLUMN tool_calls;\n"
        "ALTER TABLE turns DROP COLUMN retracted_at;\n"
        "ALTER TABLE turns DROP COLUMN retraction_reason;\n" + _ERASURE_RULES
    )
    conn.close()

    async with Host(mods=[DICTIONARY], model=lookups(), store=SqliteStore(path, read_only=True)) as host:
        (old,) = await turns_of(host, chat.id)  # a reader reads it as it is
        assert old.tool_calls == ()
    async with Host(mods=[DICTIONARY], model=lookups("apple"), store=SqliteStore(path)) as host:
        session = await host.sessions.get(chat.id)
        await session.run("after")
    async with Host(mods=[DICTIONARY], model=lookups(), store=SqliteStore(path)) as host:
        old, new = await turns_of(host, chat.id)
        assert old.tool_calls == () and [c.output for c in new.tool_calls] == ["apple: a word"]
        retracted = await host.lineage.retract(old.id, reason="written before retraction existed")  # its rule too
        assert retracted.retraction_reason == "written before retraction existed"


# -- decisions are records ------------------------------------------------------------------


@attrs.frozen
class Refund:
    """A refund a model proposes."""

    amount: int


async def refund(payload: Refund, ctx: ActionContext) -> str:
    return f"refunded {payload.amount}"


BILLING = define_mod(
    metadata=ModMetadata(display_name="Billing", description="Refunds the user approves"),
    actions=[action(type="billing.refund", description="Refund", payload_type=Refund, run=refund)],
)


def proposes(*amounts: int) -> ScriptedModel:
    """A model whose every reply proposes one refund per amount."""
    tags = "".join(f'<mod-action type="billing.refund">{{"amount": {a}}}</mod-action>' for a in amounts)
    return ScriptedModel(lambda request: f"I suggest: {tags}")


async def test_who_decided_and_why_are_kept_with_each_decision_and_read_back_after_a_reopen(
    any_store: StoreFactory,
) -> None:
    async with Host(mods=[BILLING], model=proposes(10, 20, 30), store=any_store()) as host:
        chat = await host.sessions.create()
        proposed = await host.submit(chat, "the parcel never came")
        first, second, third = proposed.actions
        done = await host.confirm(first.id, by="alice", reason="tracking shows it lost")
        assert done.text == "refunded 10"
        await host.dismiss(second.id, by="bob", reason="already refunded in #4411")
        await host.dismiss(third.id)  # who and why are optional

    async with Host(mods=[BILLING], model=proposes(), store=any_store()) as host:
        records = await host.actions(chat.id)
    assert [(r.id, r.status, r.decided_by, r.reason) for r in records] == [
        (first.id, "confirmed", "alice", "tracking shows it lost"),
        (second.id, "dismissed", "bob", "already refunded in #4411"),
        (third.id, "dismissed", None, None),
    ]
    assert all(isinstance(r, ActionRecord) and r.decided_at is not None for r in records)
    assert records[0].decided_at is not None and records[0].decided_at >= records[0].created_at
    assert (records[0].type, records[0].mod_id, dict(records[0].payload), records[0].turn_id) == (
        "billing.refund", "billing", {"amount": 10}, first.turn_id,
    )  # fmt: skip


async def test_actions_lists_pending_ones_too_and_filters_by_status(any_store: StoreFactory) -> None:
    async with Host(mods=[BILLING], model=proposes(1, 2), store=any_store()) as host:
        chat = await host.sessions.create()
        first, second = (await host.submit(chat, "two refunds")).actions
        await host.confirm(first.id, by="alice")
        assert [(r.id, r.status, r.decided_at) for r in await host.actions(chat, status="pending")] == [
            (second.id, "pending", None)
        ]
        assert [r.id for r in await host.actions(chat, status="confirmed")] == [first.id]
        assert await host.actions(chat, status="dismissed") == []
        assert await host.actions(await host.sessions.create()) == []
        with pytest.raises(InvalidArgumentError, match=r"status=.*got 'approved'") as bad:
            await host.actions(chat, status="approved")  # type: ignore[arg-type]
        assert bad.value.argument == "status"


@pytest.mark.parametrize("by, reason", [("", None), (None, "   "), (42, None), ("alice", "bad \ud800")])
async def test_a_decision_with_who_or_why_that_is_not_text_is_refused_and_leaves_the_action_pending(
    by: object, reason: object
) -> None:
    async with Host(mods=[BILLING], model=proposes(5)) as host:
        chat = await host.sessions.create()
        (pending,) = (await host.submit(chat, "refund")).actions
        with pytest.raises(InvalidArgumentError, match=r"must be .*host\.confirm\(action_id, by='alice'"):
            await host.confirm(pending.id, by=by, reason=reason)  # type: ignore[arg-type]
        with pytest.raises(InvalidArgumentError):
            await host.dismiss(pending.id, by=by, reason=reason)  # type: ignore[arg-type]
        assert [r.status for r in await host.actions(chat)] == ["pending"]


async def test_deleting_the_session_erases_why_a_decision_was_made_but_keeps_who_and_when(
    any_store: StoreFactory,
) -> None:
    marker = f"mk{secrets.token_hex(6)}"
    async with Host(mods=[BILLING], model=proposes(7), store=any_store()) as host:
        chat = await host.sessions.create()
        (pending,) = (await host.submit(chat, "refund")).actions
        await host.dismiss(pending.id, by="carol", reason=f"customer said {marker}")
        await host.sessions.delete(chat.id)
        (record,) = await host.actions(chat.id)
        assert marker not in repr(record)
    async with Host(mods=[BILLING], model=proposes(), store=any_store()) as host:
        (record,) = await host.actions(chat.id)
    assert (record.status, record.decided_by, record.reason, dict(record.payload)) == (
        "dismissed", "carol", ERASED_LABEL, {},
    )  # fmt: skip


async def test_forgetting_the_turn_that_proposed_an_action_erases_the_reason_for_its_decision(
    any_store: StoreFactory,
) -> None:
    async with Host(mods=[BILLING], model=proposes(3), store=any_store()) as host:
        chat = await host.sessions.create()
        proposed = await host.submit(chat, "refund")
        (pending,) = proposed.actions
        await host.confirm(pending.id, by="dave", reason="the secret plan")
        assert proposed.turn is not None
        await host.lineage.forget(proposed.turn.id, dry_run=False)
        (record,) = await host.actions(chat)
        assert (record.status, record.decided_by, record.reason) == ("confirmed", "dave", ERASED_LABEL)


# -- retraction -----------------------------------------------------------------------------


def remembers() -> ScriptedModel:
    """A model that answers with what it saw of the history: each entry's reply, and whether
    (and why) it was retracted."""

    def respond(request: ModelRequest) -> str:
        seen = [
            f"{e.reply} [retracted: {e.retraction_reason}]" if e.retracted else e.reply for e in request.history
        ]
        return f"re {request.text} | saw {seen}"

    return ScriptedModel(respond)


async def test_a_retracted_turn_stays_in_the_history_and_later_model_calls_see_it_retracted_with_the_reason(
    any_store: StoreFactory,
) -> None:
    async with Host(model=remembers(), store=any_store()) as host:
        chat = await host.sessions.create()
        wrong = (await chat.run("revenue 2023?")).turn
        fork = await chat.fork()
        record = await host.lineage.retract(wrong.id, reason="the figures were from 2019")
        assert record.retracted_at is not None and record.retraction_reason == "the figures were from 2019"

        turn = await host.sessions.turn(wrong.id)
        assert (turn.retracted_at, turn.retraction_reason) == (record.retracted_at, "the figures were from 2019")
        assert turn.reply is not None and turn.reply.startswith("re revenue 2023?")  # nothing erased
        later = await chat.run("and 2024?")
        assert "[retracted: the figures were from 2019]" in later.text
        in_fork = await fork.run("compare")  # a fork made before shares the turn: it sees it too
        assert "[retracted: the figures were from 2019]" in in_fork.text
        assert "RETRACTED: the figures were from 2019" in await host.transcript(chat)

    async with Host(model=remembers(), store=any_store()) as host:  # durable
        turn = await host.sessions.turn(wrong.id)
        assert (turn.retracted_at, turn.retraction_reason) == (record.retracted_at, "the figures were from 2019")
        reopened = await host.sessions.get(chat.id)
        assert "[retracted: the figures were from 2019]" in (await reopened.run("again")).text


async def test_retracting_again_changes_nothing_and_keeps_the_first_reason(any_store: StoreFactory) -> None:
    async with Host(model=remembers(), store=any_store()) as host:
        chat = await host.sessions.create()
        turn = (await chat.run("a claim")).turn
        first = await host.lineage.retract(turn.id, reason="wrong source")
        again = await host.lineage.retract(turn.message_id, reason="a different story")
        assert again == first and again.retraction_reason == "wrong source"
    async with Host(model=remembers(), store=any_store()) as host:
        again = await host.lineage.retract(turn.id, reason="a third story")
        assert (again.retracted_at, again.retraction_reason) == (first.retracted_at, "wrong source")


async def test_retraction_publishes_one_turn_retracted_event_and_forward_lists_what_to_recheck() -> None:
    async with Host(model=remembers()) as host:
        chat = await host.sessions.create()
        wrong = (await chat.run("a claim")).turn
        resting = (await chat.run("built on it")).turn
        async with host.subscribe() as events:
            await host.lineage.retract(wrong.id, reason="wrong source")
            await host.lineage.retract(wrong.id, reason="again")
            await chat.run("after")  # its events follow; a second turn_retracted would come before them
            seen = []
            async for event in events:
                seen.append(event)
                if event.kind == "turn_finished":
                    break
        retracted = [e for e in seen if isinstance(e, TurnRetracted)]
        assert [(e.session_id, e.turn_id, e.reason) for e in retracted] == [(chat.id, wrong.id, "wrong source")]
        assert seen[0] is retracted[0]
        as_json = json.loads(to_json(retracted[0]))  # what an SSE stream sends
        assert (as_json["kind"], as_json["turn_id"], as_json["reason"]) == ("turn_retracted", wrong.id, "wrong source")
        to_recheck = await host.lineage.forward(wrong.id)
        assert resting.id in [t.turn_id for t in to_recheck.turns]


async def test_forgetting_a_retracted_turn_erases_the_reason_but_keeps_that_it_was_retracted(
    any_store: StoreFactory,
) -> None:
    marker = f"mk{secrets.token_hex(6)}"
    async with Host(model=remembers(), store=any_store()) as host:
        chat = await host.sessions.create()
        turn = (await chat.run("a claim")).turn
        retracted = await host.lineage.retract(turn.id, reason=f"because {marker}")
        await host.lineage.forget(turn.id, dry_run=False)
        after = await host.sessions.turn(turn.id)
        assert (after.retracted_at, after.retraction_reason) == (retracted.retracted_at, ERASED_LABEL)
        assert marker not in await host.transcript(chat)
    async with Host(model=remembers(), store=any_store()) as host:
        after = await host.sessions.turn(turn.id)
        assert (after.retracted_at, after.retraction_reason) == (retracted.retracted_at, ERASED_LABEL)


@pytest.mark.parametrize("reason", ["", "   ", None, 42, "bad \ud800", "nul \x00"])
async def test_a_retraction_without_a_reason_in_text_is_refused(reason: object) -> None:
    async with Host(model=remembers()) as host:
        chat = await host.sessions.create()
        turn = (await chat.run("a claim")).turn
        with pytest.raises(InvalidArgumentError, match=r"retract\(\) takes the reason as non-empty text.*e\.g\.") as bad:
            await host.lineage.retract(turn.id, reason=reason)  # type: ignore[arg-type]
        assert bad.value.argument == "reason"
        assert (await host.sessions.turn(turn.id)).retracted_at is None


async def test_retracting_an_unknown_turn_or_a_running_one_is_refused() -> None:
    entered, release = anyio.Event(), anyio.Event()

    async def slow(request: ModelRequest) -> str:
        entered.set()
        await release.wait()
        return "done"

    async with Host(model=ScriptedModel(slow)) as host:
        with pytest.raises(UnknownTurnError, match="no turn or message by this id") as unknown:
            await host.lineage.retract("turn_nope", reason="wrong")
        assert unknown.value.id == "turn_nope"
        chat = await host.sessions.create()
        async with anyio.create_task_group() as tg:
            tg.start_soon(chat.run, "slow")
            await entered.wait()
            (running,) = await chat.turns()
            with pytest.raises(TurnRunningError, match="is still running.*wait for it") as busy:
                await host.lineage.retract(running.id, reason="wrong")
            assert busy.value.running_id == running.id
            release.set()
        await host.lineage.retract(running.id, reason="wrong")  # once finished, it can be


async def test_a_sqlite_store_refuses_any_other_change_to_a_retracted_turn(tmp_path: Path) -> None:
    path = tmp_path / "rules.sqlite"
    async with Host(model=remembers(), store=SqliteStore(path)) as host:
        chat = await host.sessions.create()
        turn = (await chat.run("a claim")).turn
        await host.lineage.retract(turn.id, reason="wrong source")
    conn = sqlite3.connect(path)
    try:
        for change in (
            "retraction_reason = 'another reason'",  # the first reason stays
            "retracted_at = NULL, retraction_reason = NULL",  # it stays retracted
            "reply = 'rewritten'",  # the record stays as it was
        ):
            with pytest.raises(sqlite3.IntegrityError, match="never changes"):
                conn.execute(f"UPDATE turns SET {change} WHERE id = ?", (turn.id,))
    finally:
        conn.close()


# -- when a session was active ----------------------------------------------------------------


class Ticking:
    """A host clock that moves one minute per reading."""

    def __init__(self) -> None:
        self.now = datetime(2026, 1, 1, 9, 0, tzinfo=UTC)

    def __call__(self) -> datetime:
        self.now += timedelta(minutes=1)
        return self.now


async def echo_command(argument: str | None, ctx: SlashCommandContext) -> str:
    return f"echo {argument}"


ECHO = define_mod(
    metadata=ModMetadata(display_name="Echo", description="Echoes"),
    commands=[slash_command(id="echo", description="Echo", run=echo_command)],
)


async def test_a_session_shows_when_it_was_created_and_last_active_across_a_reopen(any_store: StoreFactory) -> None:
    clock = Ticking()
    async with Host(mods=[ECHO], model=remembers(), store=any_store(), clock=clock) as host:
        chat = await host.sessions.create()
        assert chat.last_activity_at == chat.created_at  # nothing happened yet
        turn = (await chat.run("hello")).turn
        assert chat.last_activity_at == turn.started_at > chat.created_at
        typed = await host.submit(chat, "/echo hi")  # a command invocation is activity too
        (invocation,) = [e for e in await host.log(chat) if isinstance(e, Invocation)]
        assert typed.error is None and chat.last_activity_at == invocation.started_at > turn.started_at
        fork = await chat.fork()
        assert fork.last_activity_at == fork.created_at  # inherited turns happened before it existed

    async with Host(mods=[ECHO], model=remembers(), store=any_store(), clock=clock) as host:
        listed = {s.id: s for s in (await host.sessions.list()).sessions}
        assert listed[chat.id].created_at == chat.created_at
        assert listed[chat.id].last_activity_at == invocation.started_at
        assert listed[fork.id].last_activity_at == fork.created_at


async def test_a_recorded_model_call_keeps_whether_an_earlier_turn_was_retracted_so_replay_tells_them_apart(
    tmp_path: Path,
) -> None:
    cassette = tmp_path / "retracted.jsonl"
    async with Host(model=RecordingModel(remembers(), cassette)) as host:
        chat = await host.sessions.create()
        turn = (await chat.run("a claim")).turn
        await chat.run("before")
        await host.lineage.retract(turn.id, reason="wrong source")
        await chat.run("after")
    calls = [json.loads(line) for line in cassette.read_text(encoding="utf-8").splitlines() if '"call"' in line]
    before, after = calls[1]["request"]["history"], calls[2]["request"]["history"]
    assert "retracted" not in before[0]  # entries of turns nobody retracted keep older cassettes' bytes
    assert (after[0]["retracted"], after[0]["retraction_reason"]) == (True, "wrong source")
    async with Host(model=ReplayModel(cassette)) as host:  # the same story replays, retraction and all
        chat = await host.sessions.create()
        turn = (await chat.run("a claim")).turn
        await chat.run("before")
        await host.lineage.retract(turn.id, reason="wrong source")
        assert "[retracted: wrong source]" in (await chat.run("after")).text


_BEFORE_THE_RECORD_POSTGRES = """
DROP TRIGGER finished_turns_never_change ON host_sim.turns;
DROP TRIGGER action_outcomes_never_change ON host_sim.action_outcomes;
ALTER TABLE host_sim.turns DROP COLUMN tool_calls;
ALTER TABLE host_sim.turns DROP COLUMN retracted_at;
ALTER TABLE host_sim.turns DROP COLUMN retraction_reason;
ALTER TABLE host_sim.action_outcomes DROP COLUMN decided_by;
ALTER TABLE host_sim.action_outcomes DROP COLUMN reason;
ALTER TABLE host_sim.action_outcomes DROP COLUMN session_id;
ALTER TABLE host_sim.action_outcomes DROP COLUMN turn_id;
CREATE TRIGGER action_outcomes_never_change BEFORE UPDATE ON host_sim.action_outcomes
    FOR EACH ROW EXECUTE FUNCTION host_sim.refuse('a decision about an action never changes');
"""


async def test_a_postgresql_store_made_before_the_record_was_complete_gets_it_when_a_host_opens_it(
    request: pytest.FixtureRequest,
) -> None:
    import psycopg

    from host_sim import PostgresStore
    from host_sim.testing import POSTGRES_ERASURE_RULES as _POSTGRES_ERASURE_RULES

    dsn: str = request.getfixturevalue("postgres_dsn")
    async with Host(mods=[DICTIONARY, BILLING], model=lookups(), store=PostgresStore(dsn)) as host:
        before = await host.sessions.create()
        old = (await before.run("written by an older host")).turn
    with psycopg.connect(dsn, autocommit=True) as conn:  # as an older host-sim left it
        for statement in (_BEFORE_THE_RECORD_POSTGRES + _POSTGRES_ERASURE_RULES).split(";\n"):
            if statement.strip():
                conn.execute(statement.replace("%%", "%"))

    async with Host(mods=[DICTIONARY, BILLING], model=lookups("apple"), store=PostgresStore(dsn)) as host:
        (turn,) = await turns_of(host, before.id)
        assert turn.tool_calls == () and turn.retracted_at is None
        chat = await host.sessions.create()
        called = await host.sessions.turn((await chat.run("look it up")).turn.id)
        assert [c.output for c in called.tool_calls] == ["apple: a word"]
        retracted = await host.lineage.retract(old.id, reason="an older answer")
        assert retracted.retraction_reason == "an older answer"
    async with Host(mods=[BILLING], model=proposes(9), store=PostgresStore(dsn)) as host:
        chat = await host.sessions.create()
        (pending,) = (await host.submit(chat, "refund")).actions
        await host.dismiss(pending.id, by="erin", reason="duplicate")
        await host.sessions.delete(chat.id)  # the decision's reason is erased under the new rule
        (record,) = await host.actions(chat.id)
        assert (record.decided_by, record.reason) == ("erin", ERASED_LABEL)


@pytest.mark.parametrize("name", ["", "   ", "bad \ud800 name"])
async def test_a_tool_call_with_a_name_no_tool_has_is_kept_as_the_model_made_it(name: str) -> None:
    def respond(request: ModelRequest) -> str | ToolCall:
        if not request.tool_results:
            return ToolCall(name=name, input={}, call_id="call-0")
        return f"told: {request.tool_results[-1].error}"

    async with Host(mods=[DICTIONARY], model=ScriptedModel(respond)) as host:
        chat = await host.sessions.create()
        result = await chat.run("call a tool that is not there")
        (call,) = (await host.sessions.turn(result.turn.id)).tool_calls
        assert call.name.strip() and call.error is not None and call.error.startswith("unknown tool")


async def test_a_tool_input_too_deep_to_keep_is_recorded_as_not_kept_and_the_turn_goes_on(any_store: StoreFactory) -> None:
    deep: object = "x"
    for _ in range(5000):
        deep = [deep]

    def respond(request: ModelRequest) -> str | ToolCall:
        if not request.tool_results:
            return ToolCall(name="define", input={"word": deep}, call_id="call-0")  # type: ignore[dict-item]
        return f"told: {request.tool_results[-1].error}"

    async with Host(mods=[DICTIONARY], model=ScriptedModel(respond), store=any_store()) as host:
        chat = await host.sessions.create()
        result = await chat.run("go deep")
        assert result.text.startswith("told: invalid input for tool 'define'")
    async with Host(mods=[DICTIONARY], model=lookups(), store=any_store()) as host:
        (turn,) = await turns_of(host, chat.id)
        (call,) = turn.tool_calls
        assert list(call.input) == ["not_kept"] and "nested" in str(call.input["not_kept"])

"""Token usage (API.md section 15): a model reports what each call used, a turn keeps the sum
on every store, and ``complete_session`` without metrics computes seed 000's aggregates
from the record."""

from __future__ import annotations

import sqlite3
from collections.abc import AsyncIterator
from pathlib import Path

import attrs
import pytest

from host_sim import (
    EchoModel,
    Host,
    ModelRequest,
    Reply,
    ScriptedModel,
    SessionMetrics,
    SqliteStore,
    ToolCall,
    Usage,
)
from modular_sdk import AiContributions, ModDefinitionError, ModMetadata, ToolContext, define_mod, tool

from ..conftest import StoreFactory

pytestmark = pytest.mark.anyio


@attrs.frozen
class Word:
    """A word to look up."""

    word: str


async def define(query: Word, ctx: ToolContext) -> str:
    return f"{query.word}: a word"


async def delegate(query: Word, ctx: ToolContext) -> str:
    child = await ctx.session.spawn()
    return f"spawned {child.id} for {query.word}"


DICTIONARY = define_mod(
    metadata=ModMetadata(display_name="Dictionary", description="Looks words up"),
    ai=AiContributions(
        tools=[
            tool(name="define", description="Define a word", input_type=Word, run=define),
            tool(name="delegate", description="Hand a word to a helper session", input_type=Word, run=delegate),
        ]
    ),
)


def metered(*tools: str) -> ScriptedModel:
    """A model that calls each tool once (10 in, 1 out per call), then answers (100 in, 20 out)."""

    def respond(request: ModelRequest) -> Reply | ToolCall:
        done = len(request.tool_results)
        if done < len(tools):
            return ToolCall(name=tools[done], input={"word": "apple"}, usage=Usage(input_tokens=10, output_tokens=1))
        return Reply(text="done", usage=Usage(input_tokens=100, output_tokens=20))

    return ScriptedModel(respond)


async def test_a_turn_keeps_the_usage_of_all_its_model_calls_added_up_after_a_reopen(any_store: StoreFactory) -> None:
    async with Host(mods=[DICTIONARY], model=metered("define", "define"), store=any_store()) as host:
        chat = await host.sessions.create()
        result = await chat.run("define apple twice")
        assert result.text == "done"  # a Reply is its text to everyone else
        live = await host.sessions.turn(result.turn.id)
        assert live.usage == Usage(input_tokens=120, output_tokens=22)

    async with Host(mods=[DICTIONARY], model=EchoModel(), store=any_store()) as host:
        (turn,) = await (await host.sessions.get(chat.id)).turns()
        assert turn.usage == Usage(input_tokens=120, output_tokens=22)
        assert turn.usage.total_tokens == 142


async def test_a_model_that_returns_plain_text_leaves_the_turn_without_usage(any_store: StoreFactory) -> None:
    async with Host(model=EchoModel(), store=any_store()) as host:
        chat = await host.sessions.create()
        result = await chat.run("hello")
        assert (await host.sessions.turn(result.turn.id)).usage is None
    async with Host(model=EchoModel(), store=any_store()) as host:
        (turn,) = await (await host.sessions.get(chat.id)).turns()
        assert turn.usage is None


async def test_a_turn_whose_reply_is_refused_still_keeps_the_usage_its_call_spent() -> None:
    bad = ScriptedModel(lambda request: Reply(text="x" * 200, usage=Usage(input_tokens=5, output_tokens=50)))
    async with Host(model=bad, max_reply_bytes=100) as host:
        chat = await host.sessions.create()
        submission = await host.submit(chat, "say a lot")
        assert submission.turn is not None and submission.turn.status == "failed"
        assert submission.turn.usage == Usage(input_tokens=5, output_tokens=50)


class MeteredStream:
    """A streaming model that reports its usage as the stream's last item."""

    name = "metered-stream"

    async def respond(self, request: ModelRequest) -> str:
        raise AssertionError("the host streams a model that can")

    async def stream(self, request: ModelRequest) -> AsyncIterator[str | ToolCall | Usage]:
        yield "Hello"
        yield " there"
        yield Usage(input_tokens=7, output_tokens=2)


async def test_a_streaming_model_reports_usage_as_a_final_item_which_is_never_reply_text() -> None:
    async with Host(model=MeteredStream()) as host:
        chat = await host.sessions.create()
        result = await chat.run("hi")
        assert result.text == "Hello there"
        assert (await host.sessions.turn(result.turn.id)).usage == Usage(input_tokens=7, output_tokens=2)


async def test_forgetting_a_turn_keeps_its_usage_which_holds_no_text(any_store: StoreFactory) -> None:
    async with Host(mods=[DICTIONARY], model=metered("define"), store=any_store()) as host:
        chat = await host.sessions.create()
        result = await chat.run("define apple")
        await host.lineage.forget(result.turn.id, dry_run=False)
    async with Host(mods=[DICTIONARY], model=EchoModel(), store=any_store()) as host:
        (turn,) = await (await host.sessions.get(chat.id)).turns()
        assert turn.erased_at is not None and turn.usage == Usage(input_tokens=110, output_tokens=21)


async def test_complete_session_without_metrics_computes_them_from_the_record(any_store: StoreFactory) -> None:
    async with Host(mods=[DICTIONARY], model=metered("define", "delegate"), store=any_store()) as host:
        chat = await host.sessions.create()
        await chat.run("define apple, then delegate it")  # 2 tool calls, 1 spawn (its own turn: none)
        fork = await chat.fork()
        node = await host.lineage.complete_session(chat.id)

    async with Host(mods=[DICTIONARY], model=EchoModel(), store=any_store()) as host:
        (turn,) = await (await host.sessions.get(chat.id)).turns()
        assert turn.finished_at is not None
        duration = round((turn.finished_at - turn.started_at).total_seconds() * 1000)
        assert node.metrics == SessionMetrics(
            tool_calls=2, token_usage=10 + 1 + 10 + 1 + 100 + 20, duration_ms=duration, sessions_spawned=1
        )  # the fork is no spawn
        assert node.completed_at is not None
        stored = await host.lineage.node(chat.id)
        assert stored.metrics == node.metrics
        forked = await host.lineage.complete_session(fork.id)  # a fork's inherited turns are its parent's work
        assert forked.metrics == SessionMetrics(tool_calls=0, token_usage=0, duration_ms=0, sessions_spawned=0)


async def test_complete_session_with_metrics_still_stamps_the_ones_given() -> None:
    async with Host(model=EchoModel()) as host:
        chat = await host.sessions.create()
        given = SessionMetrics(tool_calls=3, token_usage=900, duration_ms=1200, sessions_spawned=0)
        assert (await host.lineage.complete_session(chat.id, given)).metrics == given


async def test_a_scoped_host_computes_the_metrics_of_its_own_sessions() -> None:
    async with Host(mods=[DICTIONARY], model=metered("define")) as host:
        alice = host.scoped({"tenant": "acme", "user": "alice"})
        chat = await alice.sessions.create()
        await chat.run("define apple")
        node = await alice.lineage.complete_session(chat.id)
        assert node.metrics is not None and (node.metrics.tool_calls, node.metrics.token_usage) == (1, 131)


def test_usage_refuses_counts_that_are_not_non_negative_ints() -> None:
    with pytest.raises(ModDefinitionError, match=r"Usage.input_tokens must be an int >= 0, got -1") as caught:
        Usage(input_tokens=-1, output_tokens=0)
    assert caught.value.field == "input_tokens" and caught.value.value == -1
    with pytest.raises(ModDefinitionError, match=r"Usage.output_tokens must be an int >= 0, got True"):
        Usage(input_tokens=0, output_tokens=True)
    with pytest.raises(ModDefinitionError, match=r"Reply.usage must be a Usage or None, got 12; pass e.g. Usage"):
        Reply(text="hi", usage=12)  # type: ignore[arg-type]
    with pytest.raises(ModDefinitionError, match=r"ToolCall.usage must be a Usage or None"):
        ToolCall(name="define", usage={"input_tokens": 1})  # type: ignore[arg-type]


async def test_a_sqlite_store_made_before_usage_gets_the_column_once_a_host_writes_it(tmp_path: Path) -> None:
    path = tmp_path / "older.sqlite"
    async with Host(model=EchoModel(), store=SqliteStore(path)) as host:
        chat = await host.sessions.create()
        await chat.run("before usage was kept")
    conn = sqlite3.connect(path)
    conn.executescript("DROP TRIGGER finished_turns_never_change;\nALTER TABLE turns DROP COLUMN usage;\n")
    conn.close()

    async with Host(model=EchoModel(), store=SqliteStore(path, read_only=True)) as host:
        (old,) = await (await host.sessions.get(chat.id)).turns()  # a reader reads it as it is
        assert old.usage is None
    metered_once = ScriptedModel(lambda request: Reply(text="ok", usage=Usage(input_tokens=3, output_tokens=4)))
    async with Host(model=metered_once, store=SqliteStore(path)) as host:
        await (await host.sessions.get(chat.id)).run("after")
    async with Host(model=EchoModel(), store=SqliteStore(path)) as host:
        old, new = await (await host.sessions.get(chat.id)).turns()
        assert old.usage is None and new.usage == Usage(input_tokens=3, output_tokens=4)
    conn = sqlite3.connect(path)
    with pytest.raises(sqlite3.DatabaseError, match="a finished turn never changes"):  # a retraction keeps usage
        conn.execute(
            "UPDATE turns SET usage = NULL, retracted_at = '2026-01-01T00:00:00+00:00', retraction_reason = 'x' "
            "WHERE usage IS NOT NULL"
        )
    conn.close()

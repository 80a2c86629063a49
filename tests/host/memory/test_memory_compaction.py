"""Compaction (API.md section 20): a long conversation reaches its model as a summary record
plus its recent turns; exact at forks; forget and retraction reach summaries."""

from __future__ import annotations

from collections.abc import Sequence

import pytest

from host_sim import (
    ContextPolicy,
    EchoModel,
    HistoryEntry,
    Host,
    ModelRequest,
    RecordId,
    RecordOrigin,
    ScriptedModel,
    SessionCompacted,
)
from modular_sdk import AiPromptMessage, AiSessionHandle, AiTurnHandle, InvalidArgumentError

from ..conftest import StoreFactory

pytestmark = pytest.mark.anyio


async def say(session: AiSessionHandle, text: str) -> AiTurnHandle:
    return await session.send(AiPromptMessage(text=text))


async def joined(entries: Sequence[HistoryEntry]) -> str:
    """A summarizer whose text is made of the words it was given (so a leak would show)."""
    return " | ".join(e.text for e in entries)


def recorder() -> tuple[ScriptedModel, list[ModelRequest]]:
    seen: list[ModelRequest] = []

    def respond(request: ModelRequest) -> str:
        seen.append(request)
        return "ok"

    return ScriptedModel(respond), seen


async def test_a_long_session_reaches_its_model_as_a_summary_and_its_recent_turns(any_store: StoreFactory) -> None:
    model, seen = recorder()
    policy = ContextPolicy(max_tokens=60, keep_recent=2, summarize=joined)
    async with Host(store=any_store(), model=model, context=policy) as h:
        chat = await h.sessions.create()
        async with h.subscribe() as events:
            turns = [await say(chat, f"message number {i} with some words") for i in range(12)]
            compacted: list[SessionCompacted] = []
            async for event in events:
                if isinstance(event, SessionCompacted):
                    compacted.append(event)
                if event.kind == "turn_finished" and getattr(event, "turn_id", None) == turns[-1].id:
                    break
        assert compacted, "a history over its budget is compacted"
        last = seen[-1].history
        assert last[0].kind == "summary" and last[0].covers is not None and last[0].covers[0] == 0
        assert [e.kind for e in last[1:]] == ["prompt"] * (len(last) - 1) and len(last) - 1 >= 2
        summaries = (await h.memory.list(session=chat, kind="summary")).records
        assert len(summaries) == len(compacted)
        assert all(later.derived_from == (earlier.id,) for earlier, later in zip(summaries, summaries[1:]))
        back = await h.lineage.backward(RecordId(summaries[0].id))
        assert isinstance(back, RecordOrigin) and back.read_from[0].turn_id == turns[0].id
        assert [r.record_id for r in (await h.lineage.forward(turns[0].id)).records] == [s.id for s in summaries]
        # besides the summary (as long as the summarizer makes it), each call carries at most the budget
        sizes = [sum(len(e.text) + len(e.reply) for e in r.history if e.kind != "summary") + len(r.text) for r in seen[-4:]]
        assert max(sizes) <= 60 * 4


async def test_echo_model_summarizes_deterministically_with_one_model_call() -> None:
    async with Host(model=EchoModel(), context=ContextPolicy(max_tokens=40, keep_recent=1)) as h:
        chat = await h.sessions.create()
        for i in range(8):
            await say(chat, f"turn {i} says something")
        summaries = (await h.memory.list(session=chat, kind="summary")).records
        assert summaries and all(s.text.startswith("echo: Summarize the conversation") for s in summaries)


async def test_a_fork_never_sees_a_summary_whose_window_runs_past_its_anchor() -> None:
    model, seen = recorder()
    policy = ContextPolicy(max_tokens=60, keep_recent=1, summarize=joined)
    async with Host(model=model, context=policy) as h:
        chat = await h.sessions.create()
        turns = [await say(chat, f"parent words {i} here") for i in range(10)]
        assert (await h.memory.list(session=chat, kind="summary")).records
        anchor = turns[2]
        fork = await anchor.fork()
        seen.clear()
        await say(fork, "fork asks")
        for entry in seen[-1].history:
            for later in range(3, 10):
                assert f"parent words {later} here" not in entry.text, entry


async def test_forgetting_a_turn_inside_a_summary_erases_it_and_the_next_call_compacts_from_what_remains() -> None:
    model, seen = recorder()
    policy = ContextPolicy(max_tokens=60, keep_recent=1, summarize=joined)
    async with Host(model=model, context=policy) as h:
        chat = await h.sessions.create()
        turns = [await say(chat, f"secret{i} words here") for i in range(8)]
        summaries = (await h.memory.list(session=chat, kind="summary")).records
        assert summaries and "secret0" in summaries[0].text
        plan = await h.lineage.forget(turns[0].id, dry_run=False)
        assert {s.id for s in summaries} <= {r.record_id for r in plan.records}
        assert [(await h.memory.get(s.id)).text for s in summaries] == ["(erased)"] * len(summaries)
        await say(chat, "after the forget")
        assert not any("secret0" in e.text for e in seen[-1].history)


async def test_retracting_a_turn_marks_the_summaries_on_it_for_compaction_again() -> None:
    model, seen = recorder()
    policy = ContextPolicy(max_tokens=60, keep_recent=1, summarize=joined)
    async with Host(model=model, context=policy) as h:
        chat = await h.sessions.create()
        turns = [await say(chat, f"fact{i} words here") for i in range(8)]
        first = (await h.memory.list(session=chat, kind="summary")).records[0]
        await h.lineage.retract(turns[0].id, reason="wrong")
        assert (await h.memory.get(first.id)).retracted_at is not None
        await say(chat, "go on")
        fresh = (await h.memory.list(session=chat, kind="summary")).records
        assert fresh and fresh[-1].created_at >= first.created_at and fresh[-1].id != first.id


async def test_a_context_policy_refuses_a_bad_budget() -> None:
    with pytest.raises(InvalidArgumentError, match="max_tokens must be an int >= 1"):
        ContextPolicy(max_tokens=0)
    with pytest.raises(InvalidArgumentError, match="takes a ContextPolicy"):
        Host(context=8000)  # type: ignore[arg-type]


async def test_a_record_made_gets_a_create_memory_span_inside_the_turn_that_compacted() -> None:
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import SimpleSpanProcessor
    from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    policy = ContextPolicy(max_tokens=40, keep_recent=1, summarize=joined)
    async with Host(context=policy, tracer_provider=provider) as h:
        chat = await h.sessions.create()
        for i in range(6):
            await say(chat, f"turn {i} says something")
        summary = (await h.memory.list(session=chat, kind="summary")).records[0]
    spans = exporter.get_finished_spans()
    made = [s for s in spans if s.name == "create_memory summary"]
    assert made and made[0].attributes is not None
    assert made[0].attributes["host_sim.memory.id"] == summary.id
    assert made[0].attributes["gen_ai.operation.name"] == "create_memory"
    parents = {s.context.span_id: s for s in spans if s.context is not None}
    assert made[0].parent is not None and parents[made[0].parent.span_id].name.startswith("invoke_agent")

"""The summarizer is a model call like any other (API.md section 20, section 15): the default
one (a call of the session's model) gets its own chat span inside the turn that compacted, and
every summarizer (the default, or ``summarize=``) is bounded by the host's ``model_timeout``. A
summarizer that hangs or fails fails the turn that needed the summary, with an error saying
so; never the host, nor another session, nor the next turn that needs no summary."""

from __future__ import annotations

from collections.abc import Sequence

import anyio
import pytest

from host_sim import ContextPolicy, EchoModel, HistoryEntry, Host, ModelRequest
from host_sim.testing import SUMMARY_INSTRUCTION
from modular_sdk import AiPromptMessage, AiSessionHandle, AiTurnHandle

from ..conftest import StoreFactory

pytestmark = pytest.mark.anyio


async def say(session: AiSessionHandle, text: str) -> AiTurnHandle:
    return await session.send(AiPromptMessage(text=text))


class HangsWhenSummarizing:
    """A model that answers prompts at once and never answers the summary instruction."""

    name = "hangs-when-summarizing"

    def __init__(self) -> None:
        self.summaries_asked = 0

    async def respond(self, request: ModelRequest) -> str:
        if request.text == SUMMARY_INSTRUCTION:
            self.summaries_asked += 1
            await anyio.sleep_forever()
        return "ok"


async def test_the_default_summarizer_call_gets_its_own_chat_span_inside_the_turn_that_compacted() -> None:
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import SimpleSpanProcessor
    from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    async with Host(model=EchoModel(), context=ContextPolicy(max_tokens=40, keep_recent=1), tracer_provider=provider) as h:
        chat = await h.sessions.create()
        for i in range(8):
            await say(chat, f"turn {i} says something")
        summaries = (await h.memory.list(session=chat, kind="summary")).records
    assert summaries, "the budget makes the host compact"
    spans = exporter.get_finished_spans()
    chats = [s for s in spans if s.name.startswith("chat ")]
    assert len(chats) == 8 + len(summaries)  # one per turn, one per summary: every model call is seen
    parents = {s.context.span_id: s for s in spans if s.context is not None}
    for span in chats:
        assert span.parent is not None and parents[span.parent.span_id].name.startswith("invoke_agent")
    made = [s for s in spans if s.name == "create_memory summary"]
    for record in made:  # the summary's chat span ends before its record is made, in the same turn
        assert record.parent is not None
        siblings = [c for c in chats if c.parent is not None and c.parent.span_id == record.parent.span_id]
        assert len(siblings) == 2 and min(c.end_time or 0 for c in siblings) <= (record.start_time or 0)


async def test_a_hanging_default_summarizer_fails_its_own_turn_on_model_timeout_and_the_host_goes_on(
    any_store: StoreFactory,
) -> None:
    model = HangsWhenSummarizing()
    policy = ContextPolicy(max_tokens=40, keep_recent=1)
    async with Host(store=any_store(), model=model, context=policy, model_timeout=0.3) as h:
        chat = await h.sessions.create()
        other = await h.sessions.create()
        with anyio.fail_after(30):  # the host never waits on a hung summarizer past its limit
            submissions = [await h.submit(chat, f"turn {i} says something") for i in range(8)]
        failed = [s for s in submissions if s.error is not None]
        assert failed and model.summaries_asked >= 1
        for submission in failed:
            assert submission.error_kind == "timeout" and submission.turn is not None
            assert submission.turn.status == "failed" and submission.error is not None
            assert "could not be compacted" in submission.error and "summarizing" in submission.error
            assert "model_timeout (0.3s)" in submission.error
        assert (await say(other, "hello")).status == "completed"  # another session is not hurt
        assert (await h.memory.list(session=chat, kind="summary")).records == ()  # nothing half made


async def test_a_hanging_summarize_function_is_bounded_by_model_timeout_too() -> None:
    started: list[int] = []

    async def never(entries: Sequence[HistoryEntry]) -> str:
        started.append(len(entries))
        await anyio.sleep_forever()
        raise AssertionError("unreachable")

    async with Host(model=EchoModel(), context=ContextPolicy(max_tokens=40, keep_recent=1, summarize=never), model_timeout=0.2) as h:
        chat = await h.sessions.create()
        with anyio.fail_after(30):
            submissions = [await h.submit(chat, f"turn {i} says something") for i in range(6)]
        failed = [s.error for s in submissions if s.error is not None]
        assert failed and started and all(s.error_kind == "timeout" for s in submissions if s.error is not None)
        assert all("the context policy's summarize" in e and "model_timeout (0.2s)" in e for e in failed)


async def test_a_raising_summarize_function_fails_its_own_turn_naming_the_error() -> None:
    async def broken(entries: Sequence[HistoryEntry]) -> str:
        raise ValueError("the summary service is down")

    async with Host(model=EchoModel(), context=ContextPolicy(max_tokens=40, keep_recent=1, summarize=broken)) as h:
        chat = await h.sessions.create()
        submissions = [await h.submit(chat, f"turn {i} says something") for i in range(6)]
        failed = [s for s in submissions if s.error is not None]
        assert failed and all(s.error_kind == "model_failed" for s in failed)
        assert all(s.error is not None and "the summary service is down" in s.error for s in failed)

"""`OpenAIModel` under OpenTelemetry (API §15): it carries the ``traceparent`` of its chat span,
and the usage the server reports reaches that span."""

from __future__ import annotations

import pytest
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from host_sim import Host, ModelRequest, OpenAIModel, Reply, ToolCall

from ._fake_openai import FakeOpenAI, events, reply, streamed_reply, usage_chunk


@pytest.mark.anyio
@pytest.mark.parametrize("streams", [False, True])
async def test_each_request_carries_the_traceparent_of_its_chat_span(fake: FakeOpenAI, streams: bool) -> None:
    fake.answer(streamed_reply("Hel", "lo") if streams else reply("Hello"))
    openai = OpenAIModel("gpt-test", base_url=fake.base_url, api_key="sk-test-123")
    model = openai if streams else _NotStreaming(openai)
    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    async with Host(model=model, tracer_provider=provider) as host:
        chat = await host.sessions.create()
        assert (await host.submit(chat, "hi")).text == "Hello"

    (chat_span,) = [s for s in exporter.get_finished_spans() if s.name == "chat gpt-test"]
    assert chat_span.context is not None
    (received,) = fake.received
    context = chat_span.context
    assert (chat_span.attributes or {})["gen_ai.provider.name"] == ("openai" if streams else "host_sim")
    assert received.headers["traceparent"] == f"00-{context.trace_id:032x}-{context.span_id:016x}-{int(context.trace_flags):02x}"


@pytest.mark.anyio
async def test_a_request_made_outside_any_span_carries_no_traceparent(fake: FakeOpenAI) -> None:
    fake.answer(reply("Hello"))
    async with Host(model=_NotStreaming(OpenAIModel("gpt-test", base_url=fake.base_url))) as host:
        chat = await host.sessions.create()
        await host.submit(chat, "hi")
    (received,) = fake.received
    assert "traceparent" not in received.headers


@pytest.mark.anyio
async def test_the_usage_the_server_reports_is_on_the_chat_span(fake: FakeOpenAI) -> None:
    fake.answer(
        events(
            {"id": "c", "object": "chat.completion.chunk", "choices": [{"index": 0, "delta": {"content": "Hello"}}]},
            usage_chunk(21, 5),
            b"data: [DONE]\n\n",
        )
    )
    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    async with Host(model=OpenAIModel("gpt-test", base_url=fake.base_url), tracer_provider=provider) as host:
        chat = await host.sessions.create()
        assert (await host.submit(chat, "hi")).text == "Hello"
    (chat_span,) = [s for s in exporter.get_finished_spans() if s.name == "chat gpt-test"]
    attributes = dict(chat_span.attributes or {})
    assert (attributes["gen_ai.usage.input_tokens"], attributes["gen_ai.usage.output_tokens"]) == (21, 5)
    assert attributes["gen_ai.response.finish_reasons"] == ("stop",)


class _NotStreaming:
    """The model without its ``stream``: the host calls ``respond`` (one plain POST)."""

    def __init__(self, inner: OpenAIModel) -> None:
        self._inner = inner

    @property
    def name(self) -> str:
        return self._inner.name

    async def respond(self, request: ModelRequest) -> str | Reply | ToolCall:
        return await self._inner.respond(request)

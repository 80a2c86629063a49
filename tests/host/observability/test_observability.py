"""OpenTelemetry (API §15): the spans and metrics a host emits, read back from the SDK's
in-memory exporter and metric reader, and once over the wire through OTLP/HTTP."""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Iterator, Sequence
from importlib import metadata

import attrs
import pytest
from opentelemetry.sdk.metrics import MeterProvider
from opentelemetry.sdk.metrics.export import HistogramDataPoint, InMemoryMetricReader
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.trace import SpanKind, StatusCode

from host_sim import Host, ModelRequest, Reply, ScriptedModel, ToolCall, Usage
from host_sim.observability import CAPTURE_CONTENT_ENV
from modular_sdk import (
    AiContributions,
    AiSessionDisplayMetadata,
    InvalidArgumentError,
    ModMetadata,
    SlashCommandContext,
    ToolContext,
    define_mod,
    slash_command,
    tool,
)

from .._otlp_receiver import OtlpReceiver


@attrs.frozen
class Query:
    """What to look for."""

    pattern: str


def search(query: Query, ctx: ToolContext) -> str:
    if query.pattern == "boom":
        raise ValueError("the index is gone")
    return f"found {query.pattern}"


async def delegate(query: Query, ctx: ToolContext) -> str:
    child = await ctx.session.spawn()
    return (await child.run(query.pattern)).text


async def ask(argument: str | None, ctx: SlashCommandContext) -> str:
    return (await ctx.session.run(argument or "nothing")).text


async def hand_off(argument: str | None, ctx: SlashCommandContext) -> str:
    child = await ctx.session.spawn()
    return (await child.run(argument or "nothing")).text


mod = define_mod(
    metadata=ModMetadata(display_name="Search", description="Let the model search"),
    ai=AiContributions(
        tools=[
            tool(name="search", description="Find a pattern", input_type=Query, run=search),
            tool(name="delegate", description="Ask a spawned session", input_type=Query, run=delegate),
        ]
    ),
    commands=[
        slash_command(id="ask", description="Ask the model as the mod", run=ask),
        slash_command(id="hand_off", description="Ask a spawned session", run=hand_off),
    ],
)


def model() -> ScriptedModel:
    """``search X`` / ``delegate X`` call that tool once, then the reply quotes its result; ``fail`` raises."""

    def respond(request: ModelRequest) -> str | ToolCall:
        if request.text == "fail":
            raise RuntimeError("the model is down")
        if request.tool_results:
            result = request.tool_results[-1]
            return f"tool said {result.output or result.error}"
        verb, _, rest = request.text.partition(" ")
        if verb in ("search", "delegate") and rest:
            return ToolCall(name=verb, input={"pattern": rest}, call_id=f"call_{verb}")
        return f"reply to {request.text}"

    return ScriptedModel(respond)


@attrs.define
class Telemetry:
    """An SDK tracer and meter provider that keep everything in memory."""

    exporter: InMemorySpanExporter
    tracer_provider: TracerProvider
    reader: InMemoryMetricReader
    meter_provider: MeterProvider

    def spans(self) -> tuple[ReadableSpan, ...]:
        return tuple(self.exporter.get_finished_spans())

    def named(self, prefix: str) -> list[ReadableSpan]:
        return [s for s in self.spans() if s.name.startswith(prefix)]

    def host(self, **options: object) -> Host:
        return Host(
            mods=[mod],
            model=model(),
            tracer_provider=self.tracer_provider,
            meter_provider=self.meter_provider,
            **options,  # type: ignore[arg-type]
        )

    def points(self, name: str) -> list[HistogramDataPoint]:
        data = self.reader.get_metrics_data()
        found: list[HistogramDataPoint] = []
        if data is None:
            return found
        for resource in data.resource_metrics:
            for scope in resource.scope_metrics:
                for metric in scope.metrics:
                    if metric.name == name:
                        found += [p for p in metric.data.data_points if isinstance(p, HistogramDataPoint)]
        return found


@pytest.fixture
def otel() -> Iterator[Telemetry]:
    exporter = InMemorySpanExporter()
    tracer_provider = TracerProvider()
    tracer_provider.add_span_processor(SimpleSpanProcessor(exporter))
    reader = InMemoryMetricReader()
    meter_provider = MeterProvider(metric_readers=[reader])
    yield Telemetry(exporter, tracer_provider, reader, meter_provider)
    tracer_provider.shutdown()
    meter_provider.shutdown()


def parent_of(span: ReadableSpan) -> int | None:
    return None if span.parent is None else span.parent.span_id


def span_id(span: ReadableSpan) -> int:
    assert span.context is not None
    found: int = span.context.span_id
    return found


def attributes(span: ReadableSpan) -> dict[str, object]:
    return dict(span.attributes or {})


def text_of(spans: Sequence[ReadableSpan]) -> str:
    """Everything the spans say: names, attributes, events, status descriptions."""
    parts: list[str] = []
    for span in spans:
        parts += [span.name, repr(dict(span.attributes or {})), repr(span.status.description)]
        parts += [repr((e.name, dict(e.attributes or {}))) for e in span.events]
    return "\n".join(parts)


# -- spans of a turn ----------------------------------------------------------------------


@pytest.mark.anyio
async def test_a_turn_is_an_invoke_agent_span_holding_a_chat_span_per_model_call_and_an_execute_tool_span(
    otel: Telemetry,
) -> None:
    async with otel.host() as host:
        chat = await host.sessions.create(metadata=AiSessionDisplayMetadata(label="Review"))
        submitted = await host.submit(chat, "search parser")
    assert submitted.error is None and submitted.turn is not None

    (turn,) = otel.named("invoke_agent")
    chats = otel.named("chat ")
    (run,) = otel.named("execute_tool")
    assert turn.name == "invoke_agent Review" and turn.kind == SpanKind.INTERNAL
    assert attributes(turn) == {
        "gen_ai.operation.name": "invoke_agent",
        "gen_ai.agent.name": "Review",
        "gen_ai.conversation.id": chat.id,
        "gen_ai.provider.name": "host_sim",
        "gen_ai.request.model": "scripted",
        "host_sim.turn.id": submitted.turn.id,
        "host_sim.turn.ordinal": 0,
        "host_sim.author.kind": "user",
    }
    assert turn.status.status_code == StatusCode.UNSET and turn.parent is None
    assert [c.name for c in chats] == ["chat scripted", "chat scripted"]  # asked, then told the tool's result
    assert all(c.kind == SpanKind.CLIENT and parent_of(c) == span_id(turn) for c in chats)
    assert [attributes(c)["gen_ai.response.finish_reasons"] for c in chats] == [("tool_call",), ("stop",)]
    assert attributes(chats[0])["gen_ai.operation.name"] == "chat"
    assert attributes(chats[0])["gen_ai.request.model"] == "scripted"
    assert "gen_ai.usage.input_tokens" not in attributes(chats[0])  # the model reports no usage
    assert run.name == "execute_tool search" and parent_of(run) == span_id(turn)
    assert attributes(run) == {
        "gen_ai.operation.name": "execute_tool",
        "gen_ai.tool.name": "search",
        "gen_ai.tool.call.id": "call_search",
        "gen_ai.tool.type": "function",
        "gen_ai.conversation.id": chat.id,
    }
    assert {s.context.trace_id for s in otel.spans() if s.context is not None} == {trace_of(turn)}  # one trace
    scope = turn.instrumentation_scope
    assert scope is not None and (scope.name, scope.version) == ("host_sim", metadata.version("modular-chat-sdk"))


def trace_of(span: ReadableSpan) -> int:
    assert span.context is not None
    found: int = span.context.trace_id
    return found


@pytest.mark.anyio
async def test_a_session_without_a_label_names_its_turn_spans_invoke_agent_session(otel: Telemetry) -> None:
    async with otel.host() as host:
        chat = await host.sessions.create()
        await host.submit(chat, "hello")
    assert [s.name for s in otel.spans()] == ["chat scripted", "invoke_agent session"]


@pytest.mark.anyio
async def test_a_command_is_a_host_sim_command_span_and_the_turn_it_sends_is_its_child_by_the_mod(otel: Telemetry) -> None:
    async with otel.host() as host:
        chat = await host.sessions.create()
        submitted = await host.submit(chat, "/ask hello")
    assert submitted.error is None

    (command,) = otel.named("host_sim.command")
    (turn,) = otel.named("invoke_agent")
    assert command.name == "host_sim.command ask" and command.kind == SpanKind.INTERNAL
    assert attributes(command)["host_sim.command.id"] == "ask"
    assert attributes(command)["host_sim.mod.id"] == mod.id
    assert attributes(command)["gen_ai.conversation.id"] == chat.id
    assert parent_of(turn) == span_id(command)
    assert attributes(turn)["host_sim.author.kind"] == "mod"
    assert attributes(turn)["host_sim.mod.id"] == mod.id


# -- failures -----------------------------------------------------------------------------


@pytest.mark.anyio
async def test_a_failed_model_call_marks_its_chat_and_turn_spans_error_with_error_type(otel: Telemetry) -> None:
    async with otel.host() as host:
        chat = await host.sessions.create()
        submitted = await host.submit(chat, "fail")
    assert submitted.error_kind == "model_failed"

    (call,) = otel.named("chat ")
    (turn,) = otel.named("invoke_agent")
    assert call.status.status_code == StatusCode.ERROR and attributes(call)["error.type"] == "RuntimeError"
    assert turn.status.status_code == StatusCode.ERROR and attributes(turn)["error.type"] == "model_failed"
    assert "the model is down" not in text_of(otel.spans())  # an error's text is content: not captured


@pytest.mark.anyio
async def test_a_failing_tool_marks_its_execute_tool_span_error_and_the_turn_goes_on(otel: Telemetry) -> None:
    async with otel.host() as host:
        chat = await host.sessions.create()
        submitted = await host.submit(chat, "search boom")

    (run,) = otel.named("execute_tool")
    (turn,) = otel.named("invoke_agent")
    assert submitted.error_kind == "handler_failed"
    assert run.status.status_code == StatusCode.ERROR and attributes(run)["error.type"] == "ValueError"
    assert turn.status.status_code == StatusCode.ERROR and attributes(turn)["error.type"] == "handler_failed"


@pytest.mark.anyio
async def test_a_failed_command_marks_its_span_error_with_its_error_kind(otel: Telemetry) -> None:
    async with otel.host() as host:
        chat = await host.sessions.create()
        submitted = await host.submit(chat, "/ask fail")
    assert submitted.error_kind == "handler_failed"
    (command,) = otel.named("host_sim.command")
    assert command.status.status_code == StatusCode.ERROR and attributes(command)["error.type"] == "handler_failed"


# -- forks and spawns ---------------------------------------------------------------------


@pytest.mark.anyio
async def test_a_fork_is_an_event_on_the_current_span_and_its_first_turn_links_to_the_anchor_turn(otel: Telemetry) -> None:
    tracer = otel.tracer_provider.get_tracer("app")
    async with otel.host() as host:
        chat = await host.sessions.create()
        first = await host.submit(chat, "hello")
        assert first.turn is not None
        with tracer.start_as_current_span("request") as request:
            fork = await first.turn.fork()
        await host.submit(fork, "again")
        await host.submit(fork, "and again")

    turns = otel.named("invoke_agent")
    anchor = next(s for s in turns if attributes(s)["host_sim.turn.id"] == first.turn.id)
    forked = [s for s in turns if attributes(s)["gen_ai.conversation.id"] == fork.id]
    assert [[link.context.span_id for link in s.links] for s in forked] == [[span_id(anchor)], []]
    (made,) = otel.named("request")[0].events
    assert made.name == "host_sim.session.fork"
    assert dict(made.attributes or {}) == {"host_sim.session.id": fork.id, "host_sim.parent.turn.id": first.turn.id}
    assert request.get_span_context().is_valid


@pytest.mark.anyio
async def test_a_spawn_from_a_tool_is_an_event_on_the_tool_span_and_the_child_turn_links_to_the_parent_turn(
    otel: Telemetry,
) -> None:
    async with otel.host() as host:
        chat = await host.sessions.create()
        submitted = await host.submit(chat, "delegate sub-task")
    assert submitted.error is None

    turns = otel.named("invoke_agent")
    parent = next(s for s in turns if attributes(s)["gen_ai.conversation.id"] == chat.id)
    child = next(s for s in turns if attributes(s)["gen_ai.conversation.id"] != chat.id)
    (run,) = otel.named("execute_tool delegate")
    assert [link.context.span_id for link in child.links] == [span_id(parent)]
    assert parent_of(child) == span_id(run)  # sent from inside the tool: a child of its span
    assert [e.name for e in run.events] == ["host_sim.session.spawn"]


@pytest.mark.anyio
async def test_a_spawn_from_a_command_is_an_event_on_the_command_span_and_the_child_turn_links_to_it(otel: Telemetry) -> None:
    async with otel.host() as host:
        chat = await host.sessions.create()
        assert (await host.submit(chat, "/hand_off hello")).error is None
    (command,) = otel.named("host_sim.command hand_off")
    (child,) = otel.named("invoke_agent")
    assert [e.name for e in command.events] == ["host_sim.session.spawn"]
    assert dict(command.events[0].attributes or {}) == {"host_sim.session.id": attributes(child)["gen_ai.conversation.id"]}
    assert [link.context.span_id for link in child.links] == [span_id(command)] and parent_of(child) == span_id(command)


# -- content ------------------------------------------------------------------------------


@pytest.mark.anyio
async def test_no_message_content_is_recorded_unless_capture_is_switched_on(
    otel: Telemetry, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv(CAPTURE_CONTENT_ENV, raising=False)
    async with otel.host() as host:
        chat = await host.sessions.create()
        await host.submit(chat, "search SECRET-PATTERN")
        await host.submit(chat, "/ask SECRET-ARGUMENT")
    said = text_of(otel.spans())
    assert "SECRET" not in said
    assert "gen_ai.input.messages" not in said and "gen_ai.tool.call.arguments" not in said


@pytest.mark.anyio
async def test_with_capture_on_prompts_replies_and_tool_input_and_output_are_recorded(
    otel: Telemetry, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(CAPTURE_CONTENT_ENV, "true")
    async with otel.host() as host:
        chat = await host.sessions.create()
        await host.submit(chat, "search parser")

    (turn,) = otel.named("invoke_agent")
    (run,) = otel.named("execute_tool")
    first, second = otel.named("chat ")
    assert attributes(turn)["gen_ai.input.messages"] == '[{"role": "user", "parts": [{"type": "text", "content": "search parser"}]}]'
    assert "tool said found parser" in str(attributes(turn)["gen_ai.output.messages"])
    assert attributes(run)["gen_ai.tool.call.arguments"] == '{"pattern": "parser"}'
    assert attributes(run)["gen_ai.tool.call.result"] == "found parser"
    assert '"type": "tool_call", "id": "call_search", "name": "search"' in str(attributes(first)["gen_ai.output.messages"])
    assert '"response": "found parser"' in str(attributes(second)["gen_ai.input.messages"])


@pytest.mark.anyio
async def test_erased_text_appears_in_no_span_exported_after_the_forget(otel: Telemetry, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(CAPTURE_CONTENT_ENV, "true")
    async with otel.host() as host:
        chat = await host.sessions.create()
        secret = await host.submit(chat, "search SECRET-42")
        assert secret.turn is not None and "SECRET-42" in text_of(otel.spans())  # captured while it was there
        await host.lineage.forget(secret.turn.id, dry_run=False)
        otel.exporter.clear()
        await host.submit(chat, "next")  # its model call sees the erased turn in its history
        fork = await chat.fork()
        await host.submit(fork, "search more")
    after = otel.spans()
    assert len(after) >= 5 and "SECRET-42" not in text_of(after)


# -- context ------------------------------------------------------------------------------


@pytest.mark.anyio
async def test_a_jobs_spans_are_children_of_the_span_current_at_host_start(otel: Telemetry) -> None:
    tracer = otel.tracer_provider.get_tracer("app")
    async with otel.host() as host:
        chat = await host.sessions.create()
        with tracer.start_as_current_span("http request") as request:
            job = await host.start(chat, "hello")
            command_job = await host.start(chat, "/ask hi")
        await job.wait()
        await command_job.wait()

    (turn,) = [s for s in otel.named("invoke_agent") if attributes(s)["host_sim.author.kind"] == "user"]
    (command,) = otel.named("host_sim.command")
    assert parent_of(turn) == request.get_span_context().span_id
    assert parent_of(command) == request.get_span_context().span_id


# -- metrics ------------------------------------------------------------------------------


@pytest.mark.anyio
async def test_each_model_call_records_its_duration_with_error_type_when_it_failed(otel: Telemetry) -> None:
    async with otel.host() as host:
        chat = await host.sessions.create()
        await host.submit(chat, "search parser")
        await host.submit(chat, "fail")

    points = otel.points("gen_ai.client.operation.duration")
    by_outcome = {dict(p.attributes or {}).get("error.type"): p for p in points}
    assert set(by_outcome) == {None, "RuntimeError"}
    ok = by_outcome[None]
    assert ok.count == 2 and ok.sum >= 0
    assert dict(ok.attributes or {}) == {
        "gen_ai.operation.name": "chat",
        "gen_ai.provider.name": "host_sim",
        "gen_ai.request.model": "scripted",
    }
    assert by_outcome["RuntimeError"].count == 1
    assert otel.points("gen_ai.client.token.usage") == []  # no usage reported: none recorded


@pytest.mark.anyio
async def test_the_usage_a_model_reports_is_on_its_chat_span_and_in_the_token_metric(otel: Telemetry) -> None:
    def respond(request: ModelRequest) -> Reply | ToolCall:
        if not request.tool_results:
            return ToolCall(name="search", input={"pattern": "parser"}, call_id="call_1", usage=Usage(input_tokens=40, output_tokens=7))
        return Reply(text="done", usage=Usage(input_tokens=60, output_tokens=2))

    async with Host(mods=[mod], model=ScriptedModel(respond), tracer_provider=otel.tracer_provider, meter_provider=otel.meter_provider) as host:
        chat = await host.sessions.create()
        submitted = await host.submit(chat, "search")
    assert submitted.turn is not None and submitted.turn.usage == Usage(input_tokens=100, output_tokens=9)

    counts = [(attributes(s)["gen_ai.usage.input_tokens"], attributes(s)["gen_ai.usage.output_tokens"]) for s in otel.named("chat ")]
    assert counts == [(40, 7), (60, 2)]
    (turn,) = otel.named("invoke_agent")  # the turn's span carries what all its model calls spent
    assert (attributes(turn)["gen_ai.usage.input_tokens"], attributes(turn)["gen_ai.usage.output_tokens"]) == (100, 9)
    points = {dict(p.attributes or {})["gen_ai.token.type"]: p for p in otel.points("gen_ai.client.token.usage")}
    assert {kind: (p.count, p.sum) for kind, p in points.items()} == {"input": (2, 100), "output": (2, 9)}
    assert dict(points["input"].attributes or {}) == {
        "gen_ai.operation.name": "chat",
        "gen_ai.provider.name": "host_sim",
        "gen_ai.request.model": "scripted",
        "gen_ai.token.type": "input",
    }


@pytest.mark.anyio
async def test_a_tool_call_without_an_id_is_paired_across_spans_by_the_id_the_host_gave_it(
    otel: Telemetry, monkeypatch: pytest.MonkeyPatch
) -> None:
    """GenAI conventions: the call part in the first chat span's output, the assistant call
    then the tool response in the next chat span's input, and execute_tool: one id."""
    monkeypatch.setenv(CAPTURE_CONTENT_ENV, "true")

    def respond(request: ModelRequest) -> str | ToolCall:
        if not request.tool_results:
            return ToolCall(name="search", input={"pattern": "parser"})  # no call_id, as many models
        return f"tool said {request.tool_results[-1].output}"

    async with Host(mods=[mod], model=ScriptedModel(respond), tracer_provider=otel.tracer_provider) as host:
        chat = await host.sessions.create(metadata=AiSessionDisplayMetadata(label="Researcher"))
        await host.submit(chat, "search")
    (run,) = otel.named("execute_tool")
    call_id = attributes(run)["gen_ai.tool.call.id"]
    assert isinstance(call_id, str) and call_id.startswith("call_")
    first, second = otel.named("chat ")
    (asked,) = json.loads(str(attributes(first)["gen_ai.output.messages"]))
    assert asked["parts"] == [{"type": "tool_call", "id": call_id, "name": "search", "arguments": {"pattern": "parser"}}]
    user, assistant, tool = json.loads(str(attributes(second)["gen_ai.input.messages"]))
    assert user["role"] == "user"
    assert assistant == {"role": "assistant", "parts": [asked["parts"][0]]}  # the call, before its response
    assert tool == {"role": "tool", "parts": [{"type": "tool_call_response", "id": call_id, "response": "found parser"}]}
    (turn,) = otel.named("invoke_agent")
    assert turn.name == "invoke_agent Researcher" and attributes(turn)["gen_ai.agent.name"] == "Researcher"


# -- providers ----------------------------------------------------------------------------


@pytest.mark.parametrize("argument", ["tracer_provider", "meter_provider"])
@pytest.mark.parametrize("value", ["otel", 42, object()])
def test_a_provider_that_is_not_one_is_refused_naming_the_argument_and_value(argument: str, value: object) -> None:
    with pytest.raises(InvalidArgumentError, match=rf"Host's {argument} must be an OpenTelemetry .* got ") as raised:
        Host(**{argument: value})  # type: ignore[arg-type]
    assert raised.value.argument == argument and raised.value.value is value


def test_importing_host_sim_and_modular_sdk_imports_nothing_of_opentelemetry() -> None:
    code = "import sys, host_sim, modular_sdk\nprint(sorted(m for m in sys.modules if m.split('.')[0] == 'opentelemetry'))"
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60, check=True)
    assert result.stdout.strip() == "[]"


def test_without_the_extra_a_host_runs_turns_and_tools_and_imports_nothing_of_it() -> None:
    code = (
        "import sys\n"
        "sys.modules['opentelemetry'] = None  # as if the extra were not installed\n"
        "import anyio, host_sim\n"
        "async def main():\n"
        "    async with host_sim.Host() as host:\n"
        "        chat = await host.sessions.create()\n"
        "        print((await host.submit(chat, 'hello')).error)\n"
        "        job = await host.start(chat, 'again')\n"
        "        print((await job.wait()).error)\n"
        "anyio.run(main)\n"
        "print(sorted(m for m in sys.modules if m.startswith('opentelemetry') and sys.modules[m] is not None))\n"
    )
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60, check=True)
    assert result.stdout.split() == ["None", "None", "[]"]


def test_with_no_provider_given_the_global_providers_set_before_the_host_opens_are_used() -> None:
    code = """
import anyio, host_sim
from opentelemetry import metrics, trace
from opentelemetry.sdk.metrics import MeterProvider
from opentelemetry.sdk.metrics.export import InMemoryMetricReader
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

exporter, reader = InMemorySpanExporter(), InMemoryMetricReader()
provider = TracerProvider()
provider.add_span_processor(SimpleSpanProcessor(exporter))
trace.set_tracer_provider(provider)
metrics.set_meter_provider(MeterProvider(metric_readers=[reader]))

async def main():
    async with host_sim.Host() as host:
        await host.submit(await host.sessions.create(), "hello")

anyio.run(main)
data = reader.get_metrics_data()
print(sorted(s.name for s in exporter.get_finished_spans()))
print(sorted(m.name for r in data.resource_metrics for s in r.scope_metrics for m in s.metrics))
"""
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60, check=True)
    assert result.stdout.split("\n")[:2] == ["['chat echo', 'invoke_agent session']", "['gen_ai.client.operation.duration']"]


def test_a_provider_given_without_opentelemetry_api_is_refused_when_the_host_opens_naming_the_extra() -> None:
    code = """
import sys
sys.modules['opentelemetry'] = None  # as if the extra were not installed
import anyio, host_sim
from modular_sdk import InvalidArgumentError

class Provider:
    def get_tracer(self, *args, **kwargs): ...

async def main():
    try:
        async with host_sim.Host(tracer_provider=Provider()):
            pass
    except InvalidArgumentError as refused:
        print(refused.argument)
        print(refused)

anyio.run(main)
"""
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60, check=True)
    argument, message = result.stdout.splitlines()[:2]
    assert argument == "tracer_provider"
    assert message.startswith("Host's tracer_provider needs opentelemetry-api, which cannot be imported")
    assert message.endswith("install it with pip install 'modular-chat-sdk[otel]'")


@pytest.mark.anyio
async def test_with_no_provider_given_and_none_configured_globally_nothing_is_recorded(otel: Telemetry) -> None:
    async with Host(mods=[mod], model=model()) as host:  # the global providers: the API's no-op proxies
        chat = await host.sessions.create()
        assert (await host.submit(chat, "search parser")).error is None
        assert type(host._open().telemetry).__name__ == "Telemetry"  # the no-op: nothing built per turn
    assert otel.spans() == ()


# -- over the wire ------------------------------------------------------------------------


@pytest.mark.anyio
async def test_spans_reach_an_otlp_http_collector_over_the_wire() -> None:
    from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter

    receiver = OtlpReceiver()
    receiver.thread.start()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(OTLPSpanExporter(endpoint=receiver.endpoint, timeout=10)))
    try:
        async with Host(mods=[mod], model=model(), tracer_provider=provider) as host:
            chat = await host.sessions.create()
            await host.submit(chat, "/ask search parser")
        provider.force_flush()
    finally:
        provider.shutdown()
        receiver.server.shutdown()
        receiver.server.server_close()

    assert set(receiver.paths) == {"/v1/traces"}
    names = {name: (kind, attrs) for name, kind, attrs in receiver.spans}
    assert set(names) == {"host_sim.command ask", "invoke_agent session", "chat scripted", "execute_tool search"}
    assert names["chat scripted"][0] == 3  # SPAN_KIND_CLIENT
    assert names["execute_tool search"][1]["gen_ai.tool.name"] == "search"
    assert names["invoke_agent session"][1]["gen_ai.conversation.id"] == chat.id
    assert {attrs["scope"] for _, _, attrs in receiver.spans} == {"host_sim"}


@pytest.mark.anyio
async def test_a_turn_the_sampler_drops_records_no_spans_yet_its_model_calls_are_still_measured() -> None:
    from opentelemetry.sdk.trace.sampling import ALWAYS_OFF

    exporter = InMemorySpanExporter()
    provider = TracerProvider(sampler=ALWAYS_OFF)
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    reader = InMemoryMetricReader()
    meters = MeterProvider(metric_readers=[reader])
    async with Host(mods=[mod], model=model(), tracer_provider=provider, meter_provider=meters) as host:
        chat = await host.sessions.create()
        assert (await host.submit(chat, "search parser")).error is None
    assert exporter.get_finished_spans() == ()
    measured = Telemetry(exporter, provider, reader, meters).points("gen_ai.client.operation.duration")
    assert sum(p.count for p in measured) == 2


@pytest.mark.anyio
async def test_captured_text_a_tool_returns_with_a_lone_surrogate_is_exported_escaped(monkeypatch: pytest.MonkeyPatch) -> None:
    from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter

    async def odd(query: Query, ctx: ToolContext) -> str:
        return "half \ud800 a pair"

    odd_mod = define_mod(
        metadata=ModMetadata(display_name="Odd", description="Returns odd text"),
        ai=AiContributions(tools=[tool(name="search", description="Find a pattern", input_type=Query, run=odd)]),
    )
    monkeypatch.setenv(CAPTURE_CONTENT_ENV, "true")
    with OtlpReceiver() as receiver:
        provider = TracerProvider()
        provider.add_span_processor(SimpleSpanProcessor(OTLPSpanExporter(endpoint=receiver.endpoint, timeout=10)))
        try:
            async with Host(mods=[odd_mod], model=model(), tracer_provider=provider) as host:
                chat = await host.sessions.create()
                submitted = await host.submit(chat, "search x")
        finally:
            provider.shutdown()
    assert submitted.error_kind == "model_failed"  # the model quoted it back: that reply cannot be stored
    (run,) = [attributes for name, _, attributes in receiver.spans if name == "execute_tool search"]
    assert run["gen_ai.tool.call.result"] == "half \\ud800 a pair"

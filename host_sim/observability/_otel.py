"""The instrumentation itself: spans and metrics following the OpenTelemetry GenAI
semantic conventions, through opentelemetry-api. Imported only by `telemetry_for`.

A provider that records nothing (the API's no-op or proxy provider: nothing configured)
leaves this out entirely; a span its sampler drops gets no attributes after its start, and
a dropped turn's model and tool calls get no spans.
Message content is read only when ``OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT``
is ``true``, and only when a span ends, from the live turn: text erased by then is gone.
"""

from __future__ import annotations

import functools
import json
import os
import time
from collections.abc import Mapping
from contextvars import Token
from importlib import metadata
from types import TracebackType
from typing import TYPE_CHECKING, Generic, Literal, TypeVar

from opentelemetry import context as otel_context
from opentelemetry import metrics, trace
from opentelemetry.trace import Link, Span, SpanContext, SpanKind, Status, StatusCode
from opentelemetry.util.types import AttributeValue

from modular_sdk._frozen import thaw_object
from modular_sdk._messages import text_of

from ..lanes._ext_host import HandlerFailed
from ..models._cassette import RecordingModel
from ..models._openai import OpenAIModel
from ..models._protocol import ToolCall
from ._telemetry import CAPTURE_CONTENT_ENV, ChatCall, CommandRun, Telemetry, ToolRun, TurnSpan

if TYPE_CHECKING:
    from contextlib import AbstractContextManager

    from modular_sdk import Usage
    from modular_sdk._frozen import FrozenJsonObject

    from ..models._protocol import Model, ModelRequest, ToolResult
    from ._telemetry import CommandOutcome, SessionView, TurnView

__all__ = ["OtelTelemetry"]

SCOPE = "host_sim"
KEPT_SPANS = 4096  # turn spans (and pending links) remembered for the links of forks and spawns, at least
# The semantic conventions' advised buckets: seconds of a model call, and tokens.
DURATION_BUCKETS = [0.01, 0.02, 0.04, 0.08, 0.16, 0.32, 0.64, 1.28, 2.56, 5.12, 10.24, 20.48, 40.96, 81.92]
TOKEN_BUCKETS = [1, 4, 16, 64, 256, 1024, 4096, 16384, 65536, 262144, 1048576, 4194304, 16777216, 67108864]

Attributes = dict[str, AttributeValue]
_Kept = TypeVar("_Kept")
_STOP = ("stop",)  # gen_ai.response.finish_reasons
_TOOL_CALL = ("tool_call",)


def provider_name(model: Model) -> str:
    """``gen_ai.provider.name`` for ``model``: ``openai`` for `OpenAIModel` (recorded or not), else ``host_sim``."""
    while isinstance(model, RecordingModel):
        model = model._inner
    return "openai" if isinstance(model, OpenAIModel) else "host_sim"


@functools.cache
def _version() -> str:
    """The package's version (read once: importlib.metadata is slow)."""
    try:
        return metadata.version("modular-chat-sdk")
    except metadata.PackageNotFoundError:
        return "0"


def _records(provider: object, kinds: tuple[type, ...], proxy: str) -> bool:
    """Whether a provider can record: not the API's no-op, nor its proxy with nothing behind it."""
    return not isinstance(provider, kinds) and type(provider).__name__ != proxy


class OtelTelemetry(Telemetry):
    """Spans through ``tracer`` and metrics through ``meter`` (either may be ``None``: not recorded)."""

    __slots__ = ("_capture", "_duration", "_links", "_models", "_provider", "_tokens", "_tracer", "_turn_spans")

    def __init__(self, tracer: trace.Tracer | None, meter: metrics.Meter | None, provider: str, capture: bool) -> None:
        self._tracer = tracer
        self._provider = provider
        self._capture = capture
        self._turn_spans: _Recent[SpanContext] = _Recent()  # turn id -> its span
        self._links: _Recent[SpanContext] = _Recent()  # new session id -> the span its first turn links to
        self._models: _Recent[_ModelAttributes] = _Recent()  # model name -> its constant attributes
        self._duration: metrics.Histogram | None = None
        self._tokens: metrics.Histogram | None = None
        if meter is not None:
            self._duration = meter.create_histogram(
                "gen_ai.client.operation.duration",
                unit="s",
                description="GenAI operation duration",
                explicit_bucket_boundaries_advisory=DURATION_BUCKETS,
            )
            self._tokens = meter.create_histogram(
                "gen_ai.client.token.usage",
                unit="{token}",
                description="Number of input and output tokens used",
                explicit_bucket_boundaries_advisory=TOKEN_BUCKETS,
            )

    @classmethod
    def create(cls, tracer_provider: object, meter_provider: object, model: Model) -> OtelTelemetry | None:
        """The instrumentation for these providers (``None``: the global ones), or ``None``
        when neither records anything."""
        tracers = tracer_provider if tracer_provider is not None else trace.get_tracer_provider()
        meters = meter_provider if meter_provider is not None else metrics.get_meter_provider()
        tracer: trace.Tracer | None = None
        meter: metrics.Meter | None = None
        if _records(tracers, (trace.NoOpTracerProvider, trace.ProxyTracerProvider), "ProxyTracerProvider"):
            tracer = tracers.get_tracer(SCOPE, _version())  # type: ignore[attr-defined]
        if _records(meters, (metrics.NoOpMeterProvider,), "_ProxyMeterProvider"):
            meter = meters.get_meter(SCOPE, _version())  # type: ignore[attr-defined]
        if tracer is None and meter is None:
            return None
        capture = os.environ.get(CAPTURE_CONTENT_ENV, "").strip().lower() == "true"
        return cls(tracer, meter, provider_name(model), capture)

    # -- turns ----------------------------------------------------------------------------
    def turn(self, session: SessionView, turn: TurnView) -> TurnSpan:
        if self._tracer is None:
            return super().turn(session, turn)
        record, author = session.record, turn.author
        label = record.metadata.label if record.metadata is not None else "session"
        attributes: Attributes = {
            "gen_ai.operation.name": "invoke_agent",
            "gen_ai.agent.name": label,  # the span's name is invoke_agent {gen_ai.agent.name}
            "gen_ai.conversation.id": session.id,
            "gen_ai.provider.name": self._provider,
            "gen_ai.request.model": record.model,
            "host_sim.turn.id": turn.id,
            "host_sim.turn.ordinal": turn.ordinal,
            "host_sim.author.kind": author.kind,
        }
        if author.kind == "mod":
            attributes["host_sim.mod.id"] = author.mod_id
        if record.agent_id is not None:
            attributes["gen_ai.agent.id"] = record.agent_id
        parent = self._links.pop(session.id)
        span = self._tracer.start_span(
            f"invoke_agent {label}",
            kind=SpanKind.INTERNAL,
            attributes=attributes,
            links=None if parent is None else [Link(parent, {"host_sim.link": "parent_turn"})],
        )
        context = span.get_span_context()
        if context.is_valid:
            self._turn_spans.put(turn.id, context)
        return _TurnSpan(span, self._capture)

    def chat(self, session: SessionView, turn: TurnView, request: ModelRequest) -> AbstractContextManager[ChatCall]:
        tracer = self._tracer
        if tracer is not None:
            context = otel_context.get_current()  # read once: the parent, the drop check, the new current
            if not _dropped(context):
                return _Chat(self, turn, request, self._model(request.model), tracer, context)
        if self._duration is None:
            return super().chat(session, turn, request)
        return _Chat(self, turn, request, self._model(request.model), None, None)

    def tool(self, turn: TurnView, call_id: str, name: str, arguments: FrozenJsonObject) -> AbstractContextManager[ToolRun]:
        tracer = self._tracer
        if tracer is None:
            return super().tool(turn, call_id, name, arguments)
        context = otel_context.get_current()
        if _dropped(context):
            return super().tool(turn, call_id, name, arguments)
        return _Tool(tracer, context, self._capture, turn, call_id, name, arguments)

    def _model(self, model: str) -> _ModelAttributes:
        """The constant attributes of calls to ``model`` (made once: the same dicts are recorded each call)."""
        found = self._models.get(model)
        if found is None:
            found = _ModelAttributes(self._provider, model)
            self._models.put(model, found)
        return found

    def command(
        self, *, invocation_id: str, session_id: str | None, mod_id: str, command_id: str, argument: str | None
    ) -> AbstractContextManager[CommandRun]:
        if self._tracer is None:
            return super().command(
                invocation_id=invocation_id, session_id=session_id, mod_id=mod_id, command_id=command_id, argument=argument
            )
        attributes: Attributes = {
            "host_sim.command.id": command_id,
            "host_sim.mod.id": mod_id,
            "host_sim.invocation.id": invocation_id,
        }
        if session_id is not None:
            attributes["gen_ai.conversation.id"] = session_id
        span = self._tracer.start_span(f"host_sim.command {command_id}", kind=SpanKind.INTERNAL, attributes=attributes)
        return _Command(span, self._capture, argument)

    def session_made(self, kind: Literal["fork", "spawn"], session_id: str, parent_turn_id: str | None) -> None:
        if self._tracer is None:
            return
        current = trace.get_current_span()
        parent = self._turn_spans.get(parent_turn_id) if parent_turn_id is not None else None
        if parent is None:  # a spawn from a command, a fork of a turn an earlier process ran
            parent = current.get_span_context()
        if parent.is_valid:
            self._links.put(session_id, parent)
        if current.is_recording():
            event: Attributes = {"host_sim.session.id": session_id}
            if parent_turn_id is not None:
                event["host_sim.parent.turn.id"] = parent_turn_id
            current.add_event(f"host_sim.session.{kind}", event)

    def carried(self) -> AbstractContextManager[object]:
        return _Attached(otel_context.get_current())

    def memory_made(self, record_id: str, kind: str, session_id: str) -> None:
        tracer = self._tracer
        if tracer is None:
            return
        context = otel_context.get_current()
        if _dropped(context):
            return
        attributes: Attributes = {
            "gen_ai.operation.name": "create_memory",
            "host_sim.memory.id": record_id,
            "host_sim.memory.kind": kind,
            "host_sim.session.id": session_id,
        }
        tracer.start_span(f"create_memory {kind}", context=context, kind=SpanKind.INTERNAL, attributes=attributes).end()


def _dropped(context: otel_context.Context) -> bool:
    """Whether the span current in ``context`` is one its sampler dropped (a turn's): its
    model and tool calls get no spans either, as a parent-based sampler (the SDK's default)
    would decide, and cost no attributes. Its context stays current, so traceparent still carries it."""
    current = trace.get_current_span(context)
    return not current.is_recording() and current.get_span_context().is_valid


class _Recent(Generic[_Kept]):
    """The values put last by key: at least the last `KEPT_SPANS`, at most twice as many.
    Two generations, the older dropped whole when the newer fills: O(1) a put (dropping
    one oldest key of a dict at a time makes each drop walk the holes the earlier ones left)."""

    __slots__ = ("_new", "_old")

    def __init__(self) -> None:
        self._new: dict[str, _Kept] = {}
        self._old: dict[str, _Kept] = {}

    def put(self, key: str, value: _Kept) -> None:
        new = self._new
        new[key] = value
        if len(new) >= KEPT_SPANS:
            self._old, self._new = new, {}

    def get(self, key: str) -> _Kept | None:
        found = self._new.get(key)
        return self._old.get(key) if found is None else found

    def pop(self, key: str) -> _Kept | None:
        found = self._new.pop(key, None)
        old = self._old.pop(key, None)
        return old if found is None else found


def _error(span: Span, kind: str, description: str | None) -> None:
    span.set_attribute("error.type", kind)
    span.set_status(Status(StatusCode.ERROR, None if description is None else _text(description)))


def _text(value: str) -> str:
    """Captured text as an exporter can encode it: a lone surrogate (a handler's output can
    hold one) quoted as an escape, as the record keeps it. (JSON attributes are escaped by json.dumps.)"""
    return value if value.isascii() else value.encode("utf-8", "backslashreplace").decode("utf-8")


def _failure_kind(exc: BaseException) -> str:
    """``error.type`` of an exception ending a model or tool call."""
    if isinstance(exc, HandlerFailed):
        if exc.timed_out:
            return "timeout"
        return type(exc.cause).__qualname__ if exc.cause is not None else "cancelled"
    return type(exc).__qualname__


def _message(role: str, text: str) -> dict[str, object]:
    return {"role": role, "parts": [{"type": "text", "content": text}]}


class _TurnSpan(TurnSpan):
    __slots__ = ("_capture", "_span")

    def __init__(self, span: Span, capture: bool) -> None:
        self._span = span
        self._capture = capture

    def current(self) -> AbstractContextManager[object]:
        return _Attached(trace.set_span_in_context(self._span))  # current, not ended on exit

    def end(self, turn: TurnView) -> None:
        span = self._span
        if span.is_recording():
            if turn.status != "completed":
                _error(span, turn.failure or "model_failed", turn.error if self._capture and turn.erased_at is None else None)
            usage = turn.usage
            if usage is not None:  # what every model call of the turn spent
                span.set_attribute("gen_ai.usage.input_tokens", usage.input_tokens)
                span.set_attribute("gen_ai.usage.output_tokens", usage.output_tokens)
            if self._capture and turn.erased_at is None:
                role = "system" if turn.message.type == "notification" else "user"
                span.set_attribute("gen_ai.input.messages", json.dumps([_message(role, text_of(turn.message))]))
                if turn.reply is not None:
                    span.set_attribute("gen_ai.output.messages", json.dumps([_message("assistant", turn.reply)]))
        span.end()


class _ModelAttributes:
    """The attributes every call to one model records alike, made once per model and never
    changed: the SDK copies what it is given, so the same dicts serve every call."""

    __slots__ = ("call", "input_tokens", "output_tokens")

    def __init__(self, provider: str, model: str) -> None:
        self.call: Attributes = {"gen_ai.operation.name": "chat", "gen_ai.provider.name": provider, "gen_ai.request.model": model}
        self.input_tokens: Attributes = {**self.call, "gen_ai.token.type": "input"}
        self.output_tokens: Attributes = {**self.call, "gen_ai.token.type": "output"}


class _Chat(ChatCall):
    """A ``chat {model}`` span (CLIENT, current while the model is called) and the duration
    metric. Entered at once: ``context`` is the one current when it was made (read once)."""

    __slots__ = ("_context", "_model", "_owner", "_reply", "_request", "_span", "_started", "_token", "_tracer", "_turn", "_usage")

    def __init__(
        self,
        owner: OtelTelemetry,
        turn: TurnView,
        request: ModelRequest,
        model: _ModelAttributes,
        tracer: trace.Tracer | None,
        context: otel_context.Context | None,
    ) -> None:
        self._owner = owner
        self._turn = turn
        self._request = request
        self._model = model
        self._tracer = tracer  # None: measured, not traced
        self._context = context
        self._span: Span | None = None
        self._token: Token[otel_context.Context] | None = None
        self._reply: object = None
        self._usage: Usage | None = None
        self._started = 0

    def __enter__(self) -> ChatCall:
        tracer, context = self._tracer, self._context
        if tracer is not None and context is not None:
            # One clock reading for the span's start and the duration metric (time_ns is the SDK's clock).
            self._started = started = time.time_ns()
            request = self._request
            attributes = {**self._model.call, "gen_ai.conversation.id": request.session_id}
            span = tracer.start_span(
                f"chat {request.model}", context=context, kind=SpanKind.CLIENT, attributes=attributes, start_time=started
            )
            self._span = span
            self._token = otel_context.attach(trace.set_span_in_context(span, context))
        else:
            self._started = time.perf_counter_ns()
        return self

    def replied(self, reply: object, *, usage: Usage | None = None) -> None:
        self._reply, self._usage = reply, usage

    def __exit__(self, kind: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None) -> None:
        span = self._span
        ended = time.time_ns() if span is not None else time.perf_counter_ns()
        seconds = max(ended - self._started, 0) / 1e9  # a wall clock stepped back mid-call: 0, never negative
        reply, usage = self._reply, self._usage
        failure: str | None = None
        if exc is not None:
            failure = _failure_kind(exc)
        elif not isinstance(reply, (str, ToolCall)):
            failure = "invalid_reply"
        owner, model = self._owner, self._model
        if owner._duration is not None:
            owner._duration.record(seconds, model.call if failure is None else {**model.call, "error.type": failure})
            if usage is not None and owner._tokens is not None:
                owner._tokens.record(usage.input_tokens, model.input_tokens)
                owner._tokens.record(usage.output_tokens, model.output_tokens)
        if span is None:
            return
        if self._token is not None:
            otel_context.detach(self._token)
        if span.is_recording():
            if failure is not None:
                _error(span, failure, None)
            else:  # one at a time: the SDK checks a mapping given at once against two ABCs first
                span.set_attribute("gen_ai.response.finish_reasons", _TOOL_CALL if isinstance(reply, ToolCall) else _STOP)
            if usage is not None:
                span.set_attribute("gen_ai.usage.input_tokens", usage.input_tokens)
                span.set_attribute("gen_ai.usage.output_tokens", usage.output_tokens)
            if owner._capture and self._turn.erased_at is None:
                self._content(span, reply)
        span.end(end_time=ended)

    def _content(self, span: Span, reply: object) -> None:
        turn, request = self._turn, self._request
        role = "system" if turn.message.type == "notification" else "user"
        messages: list[dict[str, object]] = [_message(role, text_of(turn.message))]
        for result in request.tool_results:  # each call the model made, then its answer: a backend pairs them by id
            call = {"type": "tool_call", "id": result.call_id, "name": result.name, "arguments": _plain(result.input)}
            messages.append({"role": "assistant", "parts": [call]})
            messages.append(
                {"role": "tool", "parts": [{"type": "tool_call_response", "id": result.call_id, "response": result.output or result.error}]}
            )
        span.set_attribute("gen_ai.input.messages", json.dumps(messages))
        if isinstance(reply, ToolCall):
            part: dict[str, object] = {"type": "tool_call", "id": reply.call_id, "name": reply.name, "arguments": _plain(reply.input)}
            span.set_attribute("gen_ai.output.messages", json.dumps([{"role": "assistant", "parts": [part], "finish_reason": "tool_call"}]))
        elif isinstance(reply, str):
            span.set_attribute("gen_ai.output.messages", json.dumps([{**_message("assistant", reply), "finish_reason": "stop"}]))


def _plain(value: object) -> object:
    """A tool input as JSON data (a frozen mapping thawed), or its repr when it is not JSON."""
    thawed = thaw_object(value) if isinstance(value, Mapping) else value
    try:
        json.dumps(thawed)
    except (TypeError, ValueError):
        return repr(thawed)
    return thawed


class _Tool(ToolRun):
    """An ``execute_tool {tool}`` span, current while the tool runs. Entered at once:
    ``context`` is the one current when it was made (read once)."""

    __slots__ = ("_arguments", "_call_id", "_capture", "_context", "_name", "_result", "_span", "_token", "_tracer", "_turn")

    def __init__(
        self,
        tracer: trace.Tracer,
        context: otel_context.Context,
        capture: bool,
        turn: TurnView,
        call_id: str,
        name: str,
        arguments: FrozenJsonObject,
    ) -> None:
        self._tracer = tracer
        self._context = context
        self._capture = capture
        self._turn = turn
        self._call_id = call_id
        self._name = name
        self._arguments = arguments
        self._result: ToolResult | None = None
        self._span: Span | None = None
        self._token: Token[otel_context.Context] | None = None

    def __enter__(self) -> ToolRun:
        name, context = self._name, self._context
        attributes: Attributes = {
            "gen_ai.operation.name": "execute_tool",
            "gen_ai.tool.name": name,
            "gen_ai.tool.call.id": self._call_id,
            "gen_ai.tool.type": "function",
            "gen_ai.conversation.id": self._turn.session_id,
        }
        self._span = span = self._tracer.start_span(f"execute_tool {name}", context=context, attributes=attributes)
        self._token = otel_context.attach(trace.set_span_in_context(span, context))
        return self

    def finished(self, result: ToolResult) -> None:
        self._result = result

    def __exit__(self, kind: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None) -> None:
        span = self._span
        assert span is not None
        if self._token is not None:
            otel_context.detach(self._token)
        if span.is_recording():
            result = self._result
            if exc is not None:
                _error(span, _failure_kind(exc), None)
            elif result is not None and result.error is not None:
                _error(span, "tool_error", result.error if self._capture and self._turn.erased_at is None else None)
            if self._capture and self._turn.erased_at is None:
                captured: Attributes = {"gen_ai.tool.call.arguments": json.dumps(_plain(self._arguments))}
                if result is not None and result.output is not None:
                    captured["gen_ai.tool.call.result"] = _text(result.output)
                span.set_attributes(captured)
        span.end()


class _Command(CommandRun):
    """A ``host_sim.command {command_id}`` span, current while the command runs."""

    __slots__ = ("_argument", "_capture", "_span", "_submission", "_token")

    def __init__(self, span: Span, capture: bool, argument: str | None) -> None:
        self._span = span
        self._capture = capture
        self._argument = argument
        self._submission: CommandOutcome | None = None
        self._token: Token[otel_context.Context] | None = None

    def __enter__(self) -> CommandRun:
        self._token = otel_context.attach(trace.set_span_in_context(self._span))
        return self

    def finished(self, submission: CommandOutcome) -> None:
        self._submission = submission

    def __exit__(self, kind: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None) -> None:
        span = self._span
        if self._token is not None:
            otel_context.detach(self._token)
        submission = self._submission
        if span.is_recording():
            if exc is not None:
                _error(span, type(exc).__qualname__, None)
            elif submission is not None and submission.error is not None:
                _error(span, submission.error_kind or "handler_failed", submission.error if self._capture else None)
            if self._capture:
                if self._argument is not None:
                    span.set_attribute("host_sim.command.argument", _text(self._argument))
                if submission is not None:
                    span.set_attribute("host_sim.command.output", _text(submission.text))
        span.end()


class _Attached:
    """A context made current inside ``with`` (a turn's span; a job's caller's context, captured in another task)."""

    __slots__ = ("_context", "_token")

    def __init__(self, context: otel_context.Context) -> None:
        self._context = context
        self._token: Token[otel_context.Context] | None = None

    def __enter__(self) -> object:
        self._token = otel_context.attach(self._context)
        return None

    def __exit__(self, kind: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None) -> None:
        if self._token is not None:
            otel_context.detach(self._token)

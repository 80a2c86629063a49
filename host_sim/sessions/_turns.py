"""One turn of a session, run: the model asked, its tool calls run, its reply checked and kept.

`TurnRunner` is what `Engine.send` calls once the session's queue (and, with a shared
store, its lock) is held: it writes the turn ``running`` before the model is called, asks
the model (streamed or not) and runs the tools it calls, round after round, checks the
reply (size, type, storable text), places its widgets, and finishes the turn once:
durable, then shown, then ``turn_finished``. A completed turn's proposed actions are
recorded before the next turn of the session starts (``after_turn``).
"""

from __future__ import annotations

import json
from collections.abc import Awaitable, Callable, Mapping, Sequence
from datetime import datetime
from typing import TYPE_CHECKING, Protocol, TypeVar

import anyio
import attrs

from modular_sdk import (
    AiMessage,
    AiNotificationMessage,
    Author,
    ReplyValidationError,
    SerializationError,
    SessionId,
    ToolContext,
    TurnId,
    TurnStatus,
)
from modular_sdk._frozen import FrozenJsonObject, freeze_object, thaw_object
from modular_sdk._json import parse_json_text, structure, unstructure
from modular_sdk._messages import text_of
from modular_sdk._rules import MAX_DEPTH, unstorable_text
from modular_sdk._schema import JsonValue, SchemaError, json_schema

from ..lanes._calling import Actor, HandlerFrame, sessions_in_turn_var
from ..lanes._ext_host import HandlerFailed, call_handler
from ..memory._compaction import CompactionError, Compactor
from ..models._protocol import (
    HistoryEntry,
    Model,
    ModelRequest,
    Reply,
    ToolCall,
    ToolResult,
    ToolSpec,
    Usage,
    add_usage,
)
from ..models._secrets import KeyFilter, scrub_data, scrubber_of
from ..observability import Telemetry
from ..stores._errors import StoreError
from ..stores._protocol import Store
from ..stores._records import ToolCallRecord, TurnRecord
from ._events import (
    EventHub,
    HostEvent,
    NotificationEvent,
    ReplyDelta,
    ToolCalled,
    ToolFinished,
    TurnFinished,
    TurnStarted,
)
from ._ids import new_call_id, new_message_id, new_turn_id
from ._state import HistoryView, SessionState, TurnState, completed_turn_at, history_chain, history_view
from ._widget_tags import place_widgets

if TYPE_CHECKING:
    from ..mcp._client import McpTools
    from ._cache import SessionCache
    from ._tables import ModTables

__all__ = [
    "JobCall",
    "TurnObserver",
    "TurnRunner",
    "output_schema",
    "parse_reply",
    "enclosing_sessions",
    "enclosing_turns",
    "storable",
]

T = TypeVar("T")


class JobCall(Protocol):
    """The job a send runs in, handed down its call path (``host.start``): never ambient."""

    @property
    def id(self) -> str: ...

    async def turn_began(self, turn_id: TurnId) -> None:
        """The job's turn is durable and about to call its model."""
        ...


class TurnObserver(Protocol):
    """What a completed turn is shown to before its session's next turn starts (the engine's
    proposals: what the reply proposed is recorded by the host's action book)."""

    async def after_turn(self, session: SessionState, turn: TurnState) -> None: ...


class TurnRunner:
    """Runs the turns of every session of one engine, one call of `run` per turn.

    Made by the `Engine` with what a turn needs, and nothing else: the mods' tables (tools,
    widgets, agents), the model, the store the turn is written to, the events and the
    telemetry it reports to, the limits (``Host(handler_timeout=..., model_timeout=...,
    max_tool_rounds=..., max_reply_bytes=...)``), ``now`` (the engine's checked clock),
    ``tool_context`` (the context a tool handler gets) and ``after_turn`` (what a
    completed turn's reply proposed, recorded before the session's next turn).
    """

    def __init__(
        self,
        *,
        tables: ModTables,
        model: Model,
        store: Store,
        events: EventHub,
        telemetry: Telemetry,
        now: Callable[[], datetime],
        tool_context: Callable[[SessionState, HandlerFrame], ToolContext],
        handler_timeout: float | None,
        model_timeout: float | None,
        max_tool_rounds: int,
        max_reply_bytes: int,
        cache: SessionCache,
        mcp: McpTools | None = None,
        after_turn: TurnObserver | None = None,
        context: Compactor | None = None,
    ) -> None:
        self._tables = tables
        self._cache = cache  # its erasure gate: a turn begins and reads its history holding it
        self._context = context  # Host(context=...): compacts a history over its budget (docs/memory.md)
        self._model = model
        self._store = store
        self._events = events
        self._telemetry = telemetry
        self._now = now
        self._tool_context = tool_context  # made by the handles module: this module never imports it
        self._handler_timeout = handler_timeout
        self._model_timeout = model_timeout
        self._max_tool_rounds = max_tool_rounds
        self._max_reply_bytes = max_reply_bytes
        self._mcp = mcp  # the mods' MCP servers: their tools beside the mods' own (docs/mcp.md)
        self._after_turn = after_turn
        # The one filter every outside text of a turn passes (docs/embedding.md): what the model answers,
        # what a tool (a mod's or an MCP server's) gives back, what a failing call says, before
        # any of it reaches the record, an event, a span or the next model call.
        self._scrub = scrubber_of(model)
        self._tool_specs = tuple(
            ToolSpec(name=t.name, description=t.description, input_schema=t.input_schema)
            for _, t in tables.tools.values()
        )

    async def run(
        self,
        session: SessionState,
        message: AiMessage,
        author: Author,
        actor: Actor,
        output_schema: JsonValue,
        closing: anyio.CancelScope,
        started: list[TurnState],
        job: JobCall | None = None,
        turn_id: TurnId | None = None,
    ) -> TurnState:
        """Run a turn; call holding the session's queue. ``started`` receives the turn once it
        exists; ``closing`` is the scope the engine's ``close`` cancels. The turn is written
        ``running`` before the model is called and finished once (durable, then shown); a
        completed turn's proposed actions are recorded (``after_turn``) before this returns."""
        # Begun and its history read holding the erasure gate shared: an erasure of this host
        # runs wholly before (this turn reads the history after it) or after (this turn is then
        # running, and the erasure refuses, docs/embedding.md).
        async with self._cache.reading():
            if session.deleted_at is not None:  # deleted by an erasure that held the gate
                await self._cache.refuse_deleted(session, "send to")
            turn = TurnState(
                id=turn_id or new_turn_id(),
                session_id=session.id,
                ordinal=session.next_ordinal,
                message=message,
                message_id=new_message_id(),
                author=author,
                runner_id=session.runner_id(),
                started_at=self._now(),
                done=anyio.Event(),
            )
            reported: list[Callable[[int, datetime], HostEvent]] = [
                lambda seq, at: TurnStarted(
                    seq=seq,
                    at=at,
                    session_id=session.id,
                    turn_id=turn.id,
                    ordinal=turn.ordinal,
                    author=author,
                    message=message,
                    job_id=None if job is None else job.id,
                )
            ]
            if isinstance(message, AiNotificationMessage):
                reported.append(
                    lambda seq, at: NotificationEvent(
                        seq=seq, at=at, session_id=session.id, turn_id=turn.id, title=message.title, body=message.body
                    )
                )
            try:
                with anyio.CancelScope(shield=True), self._events.committing(*reported):  # its events commit with it
                    await self._store.begin_turn(turn.record())  # durable before the model is called
            except StoreError as exc:
                if exc.retryable:  # in doubt: it may have been stored; if so it is finished, failed, once
                    await self._settle_in_doubt(session, turn.record())
                raise
            started.append(turn)
            session.add_turn(turn)
            seen = history_view(session)  # the completed turns before this one, as of now
        span = self._telemetry.turn(session, turn)  # ended below, once the turn is durable
        try:
            if job is not None:  # inside the try: a store that fails this fails the turn, finished
                await job.turn_began(turn.id)
            with span.current():
                await self._run_turn(session, turn, actor, output_schema, seen)
        except BaseException as exc:
            if turn.status == "running":
                turn.status = "failed"
                turn.error = (
                    "the host closed before it completed"
                    if closing.cancel_called
                    else "cancelled before it completed"
                    if isinstance(exc, anyio.get_cancelled_exc_class())
                    else f"host error: {self._clean(repr(exc))}"
                )
            raise
        finally:
            if turn.status == "running":
                turn.status, turn.error = "failed", "did not complete"
            finished_at = self._now()
            finished = attrs.evolve(turn.record(), finished_at=finished_at)
            # What is shown is what is durable (docs/the-record.md): readers see the turn running until
            # its record is written, so nobody forks at a turn a crash could still lose.
            outcome, turn.status = turn.status, "running"
            stored = False
            try:
                with anyio.CancelScope(shield=True), self._events.committing(_turn_finished(turn, outcome)):
                    await self._store.finish_turn(finished)
                stored = True
            except BaseException:
                if outcome == "completed":  # not durable: nobody may fork at it
                    outcome, turn.reply = "failed", None
                    turn.error = "its result could not be stored"
                raise
            finally:
                turn.status, turn.finished_at = outcome, finished_at
                if turn.status == "completed":
                    session.add_entry(turn)
                    session.last_completed = turn
                elif turn.failure is None:
                    turn.failure = "model_failed"
                if not stored:  # the store was away: written (with its one turn_finished) once it is back
                    failed = attrs.evolve(finished, status=turn.status, reply=turn.reply, error=turn.error)
                    self._events.retry(lambda: self._store.finish_turn(failed), _turn_finished(turn, turn.status))
                span.end(turn)
                assert turn.done is not None
                turn.done.set()
        if turn.status == "completed" and self._after_turn is not None:
            await self._after_turn.after_turn(session, turn)  # proposed actions, before the next turn
        return turn

    async def _settle_in_doubt(self, session: SessionState, began: TurnRecord) -> None:
        """A turn whose begin failed with the store away may have been stored all the same: it is
        finished as failed (and said so, once) if it was, and nothing happens if it was not.
        (Several hosts: the link writes it once the store is back; the next turn of the
        session waits for it, as for any turn running elsewhere.)"""
        failed = attrs.evolve(began, status="failed", error=_AWAY, finished_at=self._now())
        finished = _record_finished(failed)
        if self._events.replay is not None:  # several hosts: the link writes it once the store is back
            self._events.retry(lambda: self._store.finish_turn(failed), finished)
            return
        try:
            with anyio.CancelScope(shield=True):
                await self._store.finish_turn(failed)
        except StoreError:
            return  # never stored (refused: no such running turn), or the store is still away
        session.add_turn(TurnState.from_record(failed))  # it holds its ordinal
        self._events.publish(finished)

    async def _run_turn(
        self, session: SessionState, turn: TurnState, actor: Actor, output_schema: JsonValue, seen: HistoryView
    ) -> None:
        token = sessions_in_turn_var.set(sessions_in_turn_var.get() | {session.id})
        inside = (
            enclosing_sessions(actor) | {session.id},
            enclosing_turns(actor) | {turn.id},
        )
        try:
            message = turn.message
            try:
                history = await self._history(session, turn, message, seen)
            except CompactionError as failed:
                turn.status, turn.error = "failed", self._clean(str(failed))
                turn.failure = "timeout" if failed.timed_out else "model_failed"
                return
            request = ModelRequest(
                session_id=session.id,
                model=session.record.model,
                kind=message.type,
                text=text_of(message),
                message=message,
                history=history,  # the completed turns before this one (a summary in place of a compacted window)
                output_schema=output_schema,
                instructions=self._instructions(session),
                tools=self._tool_specs if self._mcp is None else (*self._tool_specs, *await self._mcp.specs()),
            )
            rounds = 0
            while True:
                try:
                    with self._telemetry.chat(session, turn, request) as call:
                        reply, usage = await self._ask_model(session, turn, request)
                        if isinstance(reply, ToolCall) and reply.call_id is None:  # its id from the start, span included
                            reply = attrs.evolve(reply, call_id=new_call_id())
                        call.replied(reply, usage=usage)
                except HandlerFailed as failed:
                    turn.status, turn.error = "failed", storable(failed.reason)
                    turn.failure = "timeout" if failed.timed_out else "model_failed"
                    return
                turn.usage = add_usage(turn.usage, usage)  # spent even when the reply is refused below
                if isinstance(reply, ToolCall):
                    rounds += 1
                    if rounds > self._max_tool_rounds:
                        turn.status = "failed"
                        turn.error = (
                            f"the model asked for more than {self._max_tool_rounds} tool calls in one "
                            "turn; raise Host(max_tool_rounds=...) if that is expected"
                        )
                        return
                    try:
                        result = await self._call_tool(session, turn, reply, inside)
                    except HandlerFailed as failed:
                        turn.status, turn.error = "failed", storable(failed.reason)
                        turn.failure = "timeout" if failed.timed_out else "handler_failed"
                        return
                    request = attrs.evolve(request, tool_results=(*request.tool_results, result))
                    continue
                if isinstance(reply, str):
                    size = utf8_size(reply)
                    reply = ReplyTooLong(size=size, streamed=False) if size > self._max_reply_bytes else reply
                if isinstance(reply, ReplyTooLong):
                    turn.status, turn.error = "failed", reply.error(self._max_reply_bytes)
                    return
                if not isinstance(reply, str):
                    turn.status = "failed"
                    turn.error = self._clean(f"the model returned {reply!r}; a model must return reply text or a ToolCall")
                    return
                problem = unstorable_text(reply)
                if problem is not None:
                    turn.status = "failed"
                    turn.error = f"the model's reply {problem}; a reply must be valid Unicode text"
                    return
                turn.reply, turn.status = reply, "completed"
                turn.widgets, turn.widget_errors = place_widgets(reply, self._tables.widgets)  # kept with the record
                return
        finally:
            sessions_in_turn_var.reset(token)

    async def _history(
        self, session: SessionState, turn: TurnState, message: AiMessage, view: HistoryView
    ) -> Sequence[HistoryEntry]:
        """What the model is given of the session's earlier turns (``view``: those completed
        when the turn began, read holding the erasure gate): all of them, or (with a context
        policy) a summary in place of the oldest, compacting first when over budget. The
        summarizer runs like the turn's model calls: bounded by ``model_timeout``, and the
        default one (a call of the session's model) inside its own chat span."""
        if self._context is None:
            return view

        async def call(request: ModelRequest | None, run: Callable[[], Awaitable[object]]) -> object:
            what = "the context policy's summarize" if request is None else f"model {self._model.name!r} (summarizing)"
            try:
                if request is None:
                    return await self._outside(what, run, (), self._model_timeout)
                with self._telemetry.chat(session, turn, request) as span:
                    answer = await self._outside(what, run, (), self._model_timeout)
                    span.replied(answer.text if isinstance(answer, Reply) else answer, usage=answer.usage if isinstance(answer, Reply) else None)
                    return answer
            except HandlerFailed as failed:
                if failed.timed_out:
                    raise CompactionError(
                        f"the history could not be compacted: {what} gave no summary within the host's "
                        f"model_timeout ({self._model_timeout:g}s); make it answer sooner or raise Host(model_timeout=...)",
                        timed_out=True,
                    ) from None
                raise CompactionError(f"the history could not be compacted: {failed.reason}") from None

        last = session.last_completed
        usage = None if last is None else last.usage

        def turn_of(index: int) -> tuple[TurnId, int]:
            found = completed_turn_at(session, index)
            return found.id, found.ordinal

        return await self._context.history(
            session_id=session.id,
            model_name=session.record.model,
            chain=history_chain(session),
            view=view,
            turn_of=turn_of,
            prompt=text_of(message),
            last_input_tokens=None if usage is None else usage.input_tokens,
            call=call,
        )

    async def _ask_model(self, session: SessionState, turn: TurnState, request: ModelRequest) -> tuple[object, Usage | None]:
        """One model call: its answer, and the `Usage` it reported (``None``: none).

        Every model call of the host goes through here, so this is the one place that
        sees each call's reply and usage. The answer is ``respond(request)`` (a `Reply`
        becomes its text), or, for a model that streams (has ``stream``), its text chunks,
        each published as ``reply_delta`` (a `ToolCall` it yields ends the stream, a
        `Usage` it yields is the call's usage). The streamed reply is every chunk of the
        turn joined, text streamed before a tool call included, so it always equals the
        deltas the turn published. Raises `HandlerFailed` like `call_handler`."""
        stream = getattr(self._model, "stream", None)
        if stream is None or not callable(stream):
            answer = await self._outside(f"model {self._model.name!r}", self._model.respond, (request,), self._model_timeout)
            if isinstance(answer, Reply):
                return self._clean_answer(answer.text), answer.usage
            return self._clean_answer(answer), answer.usage if isinstance(answer, ToolCall) else None
        what = f"model {self._model.name!r}"
        usage: Usage | None = None

        if turn.streamed is None:
            turn.streamed = []
        chunks = turn.streamed  # across the turn's rounds

        limit = self._max_reply_bytes
        size = sum(utf8_size(c) for c in chunks)  # text of earlier rounds counts too
        shown = KeyFilter(self._scrub)  # a chunk's end waits while it could be part of a secret

        def show(text: str) -> None:
            if text:
                chunks.append(text)
                self._events.publish(_delta(session.id, turn.id, text))

        async def consume() -> object:
            nonlocal size, usage
            iterator = stream(request)
            try:
                async for chunk in iterator:
                    if isinstance(chunk, Usage):
                        usage = chunk  # the last one counts
                        continue
                    if isinstance(chunk, ToolCall):
                        usage = chunk.usage if chunk.usage is not None else usage
                        show(shown.flush())
                        return self._clean_answer(chunk)
                    if not isinstance(chunk, str):
                        return self._clean_answer(chunk)  # refused below like any bad reply
                    size += utf8_size(chunk)
                    if size > limit:  # read no further; keep nothing of it
                        chunks.clear()
                        return ReplyTooLong(size=size, streamed=True)
                    show(shown.feed(chunk))
            finally:  # a stream left early (a ToolCall, a bad chunk) is closed now, not by the GC
                aclose = getattr(iterator, "aclose", None)
                if callable(aclose):
                    await aclose()
            show(shown.flush())
            return "".join(chunks)

        answer = await self._outside(what, consume, (), self._model_timeout)
        return answer, usage

    async def _outside(self, what: str, fn: Callable[..., object], args: tuple[object, ...], timeout: float | None) -> object:
        """``call_handler`` for a call whose failure text comes from outside (a model, a tool):
        the reason it fails with passes the secret filter."""
        try:
            return await call_handler(what, fn, args, timeout=timeout)
        except HandlerFailed as failed:
            if self._scrub is None:
                raise
            raise HandlerFailed(self._clean(failed.reason), cause=failed.cause, timed_out=failed.timed_out) from None

    def _clean(self, text: str) -> str:
        """Outside text as a sink may hold it: storable, every secret replaced."""
        text = storable(text)
        return text if self._scrub is None else self._scrub(text)

    def _clean_answer(self, answer: object) -> object:
        """A model's answer with every secret replaced: its text, or a tool call's name, id
        and input (other answers are refused by the caller, their repr cleaned there)."""
        scrub = self._scrub
        if scrub is None:
            return answer
        if isinstance(answer, str):
            return scrub(answer)
        if isinstance(answer, ToolCall):
            data = scrub_data(thaw_object(answer.input), scrub)
            return attrs.evolve(
                answer,
                name=scrub(answer.name) if isinstance(answer.name, str) else answer.name,
                call_id=scrub(answer.call_id) if isinstance(answer.call_id, str) else answer.call_id,
                input=data if isinstance(data, dict) else answer.input,
            )
        return answer

    def _instructions(self, session: SessionState) -> str | None:
        agent_id = session.record.agent_id
        if agent_id is None or agent_id not in self._tables.agents:
            return None
        return self._tables.agents[agent_id][1].instructions

    async def _call_tool(
        self,
        session: SessionState,
        turn: TurnState,
        call: ToolCall,
        inside: tuple[frozenset[SessionId], frozenset[TurnId]],
    ) -> ToolResult:
        """Run one tool call of ``turn``, publishing ``tool_called`` then ``tool_finished``."""
        call_id = call.call_id or new_call_id()
        started_at = self._now()
        recorded = _recorded_input(call.input)  # what the record and the event log can hold
        self._events.publish(
            lambda seq, at: ToolCalled(
                seq=seq,
                at=at,
                session_id=session.id,
                turn_id=turn.id,
                call_id=_label(call_id),
                tool_name=_label(call.name),
                input=thaw_object(recorded),
            )
        )
        error: str | None = None
        result: ToolResult | None = None
        try:
            with self._telemetry.tool(turn, _label(call_id), _label(call.name), recorded) as run:
                result = self._clean_result(await self._run_tool(session, turn, call, call_id, inside))
                run.finished(result)
            error = result.error
        except HandlerFailed as failed:
            error = failed.reason
            raise
        finally:
            output = None if result is None else result.output
            turn.tool_calls = (
                *turn.tool_calls,
                ToolCallRecord(
                    call_id=_label(call_id),
                    name=_label(call.name),
                    input=recorded,
                    output=None if output is None else storable(output),
                    error=storable(error) if error is not None else None if result is not None else "it did not finish",
                    started_at=started_at,
                    finished_at=self._now(),
                ),
            )  # kept with the turn's record (docs/the-record.md)
            done = turn.tool_calls[-1]
            self._events.publish(
                lambda seq, at: ToolFinished(
                    seq=seq, at=at, session_id=session.id, turn_id=turn.id, call_id=done.call_id, output=done.output, error=error and done.error
                )
            )
        return result

    def _clean_result(self, result: ToolResult) -> ToolResult:
        """What a tool (a mod's or an MCP server's) gave back, every secret replaced: before
        the record, the events, the span and the model's next call see it."""
        if self._scrub is None:
            return result
        return attrs.evolve(
            result,
            output=None if result.output is None else self._scrub(result.output),
            error=None if result.error is None else self._scrub(result.error),
        )

    async def _run_tool(
        self,
        session: SessionState,
        turn: TurnState,
        call: ToolCall,
        call_id: str,
        inside: tuple[frozenset[SessionId], frozenset[TurnId]],
    ) -> ToolResult:

        def refused(error: str) -> ToolResult:
            """Told to the model instead of running the tool: its own mistake to correct."""
            return ToolResult(call_id=call_id, name=call.name, input=call.input, output=None, error=error)

        if self._mcp is not None and call.name not in self._tables.tools and self._mcp.serves(call.name):
            return await self._mcp.call(session.id, turn.id, call, call_id)
        entry = self._tables.tools.get(call.name)
        if entry is None:
            known = ", ".join(repr(n) for n in self._tables.tools) or "none"
            return refused(f"unknown tool {call.name!r}; the tools are: {known}")
        mod, declared = entry
        try:
            value = structure(call.input, declared.input_type)
        except (SerializationError, RecursionError) as exc:
            problem = "it is nested too deeply" if isinstance(exc, RecursionError) else str(exc)
            return refused(f"invalid input for tool {call.name!r}: {problem}")
        frame = HandlerFrame(
            mod_id=mod.id,
            kind="tool",
            tool_name=declared.name,
            call_id=call_id,
            turn_id=turn.id,
            session_id=session.id,
            enclosing_sessions=inside[0],
            enclosing_turns=inside[1],
        )
        ctx = self._tool_context(session, frame)
        output = await self._outside(f"tool {declared.name!r} of mod {mod.id!r}", declared.run, (value, ctx), self._handler_timeout)
        return ToolResult(call_id=call_id, name=call.name, input=call.input, output=_render_output(output))


def output_schema(output_type: type[object]) -> JsonValue:
    """The JSON Schema the model is asked to match, when the type has one."""
    try:
        return json_schema(output_type)
    except SchemaError:
        return None


def parse_reply(turn: TurnState, output_type: type[T]) -> T:
    """The reply parsed as JSON and structured into ``output_type``, never coerced."""
    raw = turn.reply or ""
    name = getattr(output_type, "__name__", repr(output_type))
    try:
        data = parse_json_text(raw)  # the one rule for numbers from outside
    except (json.JSONDecodeError, RecursionError, SerializationError) as exc:
        why = (
            f"{exc.msg} at position {exc.pos}"
            if isinstance(exc, json.JSONDecodeError)
            else str(exc) if isinstance(exc, SerializationError) else "nested too deeply"
        )
        raise ReplyValidationError(
            f"the reply to run(..., output_type={name}) is not JSON ({why}): {raw[:200]!r}; "
            "ask the model for JSON matching the schema",
            raw=raw,
            output_type=name,
        ) from None
    try:
        value: T = structure(data, output_type)
    except (SerializationError, RecursionError) as exc:
        raise ReplyValidationError(
            f"the reply does not match output_type={name}: {exc if isinstance(exc, SerializationError) else 'nested too deeply'}",
            raw=raw,
            output_type=name,
        ) from None
    return value


@attrs.frozen
class ReplyTooLong:
    """A reply over ``Host(max_reply_bytes=...)``: ``size`` bytes (so far, when ``streamed``)."""

    size: int
    streamed: bool

    def error(self, limit: int) -> str:
        fix = "raise Host(max_reply_bytes=...) if replies this long are expected"
        if self.streamed:
            return (
                f"the model's streamed reply passed the limit of {limit} bytes (Host(max_reply_bytes={limit})) "
                f"after {self.size} bytes; the host stopped reading it and kept nothing of it; {fix}"
            )
        return (
            f"the model's reply is {self.size} bytes, over the limit of {limit} bytes "
            f"(Host(max_reply_bytes={limit})); nothing of it was kept; {fix}"
        )


def utf8_size(text: str) -> int:
    """Bytes of ``text`` in UTF-8 (a lone surrogate counts 3)."""
    return len(text) if text.isascii() else len(text.encode("utf-8", "surrogatepass"))


def enclosing_sessions(actor: Actor) -> frozenset[SessionId]:
    """The sessions whose turns ``actor`` (a handler) runs inside: none for the user."""
    return frozenset() if actor is None else actor.enclosing_sessions


def enclosing_turns(actor: Actor) -> frozenset[TurnId]:
    """The turns ``actor`` (a handler) runs inside: none for the user."""
    return frozenset() if actor is None else actor.enclosing_turns


def storable(text: str) -> str:
    """A message of ours made storable: lone surrogates quoted as escapes."""
    return text.encode("utf-8", "backslashreplace").decode("utf-8")


def _label(value: object) -> str:
    """A model's call id or tool name as the record keeps it: storable, never empty."""
    text = value if isinstance(value, str) else repr(value)
    return storable(text) if text.strip() else repr(text)


def _recorded_input(value: object) -> FrozenJsonObject:
    """A model's tool input as the record keeps it: each text `storable`; input that is not
    a JSON object the record can hold (nested past `MAX_DEPTH`, not JSON) is kept as what it was."""
    try:
        return freeze_object(_storable_json(value, 0), type_name="a tool call's input")
    except (SerializationError, RecursionError) as exc:
        problem = "it is nested too deeply" if isinstance(exc, RecursionError) else str(exc)
        return freeze_object({"not_kept": storable(f"the input could not be recorded: {problem}"[:500])})


def _storable_json(value: object, depth: int) -> object:
    """JSON data from outside (a model's tool input) made storable: each text `storable`."""
    if depth > MAX_DEPTH:
        raise SerializationError("it is nested too deeply", value=None, type_name="a tool call's input")
    if isinstance(value, str):
        return storable(value)
    if isinstance(value, Mapping):
        return {storable(str(k)): _storable_json(v, depth + 1) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_storable_json(v, depth + 1) for v in value]
    return value


def _render_output(value: object) -> str:
    if value is None:
        return ""
    if isinstance(value, str):
        return value
    if attrs.has(type(value)) or isinstance(value, (dict, list, tuple, int, float, bool)):
        return json.dumps(unstructure(value), sort_keys=True)
    return str(value)


def _delta(session_id: SessionId, turn_id: TurnId, text: str) -> Callable[[int, datetime], ReplyDelta]:
    return lambda seq, at: ReplyDelta(seq=None, at=at, session_id=session_id, turn_id=turn_id, text=text)


def _turn_finished(turn: TurnState, status: TurnStatus) -> Callable[[int, datetime], HostEvent]:
    """The ``turn_finished`` event of ``turn`` finishing as ``status`` (a snapshot made now)."""
    reply, error = turn.reply, turn.error
    return lambda seq, at: TurnFinished(
        seq=seq, at=at, session_id=turn.session_id, turn_id=turn.id, status=status, reply=reply, error=error
    )


_AWAY = "the store was away when it began; send it again (with the same request_id, it is stored once)"


def _record_finished(record: TurnRecord) -> Callable[[int, datetime], HostEvent]:
    return lambda seq, at: TurnFinished(
        seq=seq, at=at, session_id=record.session_id, turn_id=record.id, status=record.status, reply=record.reply, error=record.error
    )

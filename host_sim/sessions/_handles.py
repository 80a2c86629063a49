"""The handles and contexts the host gives to handlers and integrators.

None has a public constructor: obtain sessions from ``host.sessions`` or ``ctx.session``,
turns from a session's ``send``/``notify``/``turns``, contexts as handler arguments.

Authority is the handle: each carries the actor it was given (``None``: the user; else the
mod handler's frame) and passes it to every handle reached from it. What a handle sends
is stamped with that actor, whatever task, thread or ``contextvars`` context sends it.
"""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Mapping
from datetime import datetime
from typing import TYPE_CHECKING, TypeVar, final, overload

import attrs

from modular_sdk import (
    Agent,
    AgentHandle,
    AiMessage,
    AiNotificationMessage,
    AiRunnerId,
    AiRunResult,
    AiSessionDisplayMetadata,
    AiSessionHandle,
    AiSessionLineage,
    AiTurnHandle,
    Author,
    HostAuthor,
    InvalidArgumentError,
    MemoryAuthor,
    ModularError,
    SessionId,
    TurnId,
    TurnStatus,
    Usage,
    WidgetPlacement,
)
from modular_sdk._rules import show, unstorable_text

from .._host_made import NoPublicConstructor
from ..lanes._calling import Actor, HandlerFrame
from ..memory._book import Memory
from ..stores._records import ToolCallRecord
from ..traces._errors import TraceError
from ..traces._service import unknown_trace
from ._explain import close_names, turn_failed
from ._memory_events import MemoryEvents
from ._scope import Scope, check_trace, scope_of, session_state, turn_record
from ._state import SessionState, TurnState, turn_at
from ._turns import output_schema, parse_reply

if TYPE_CHECKING:
    from ._engine import Engine

__all__ = [
    "AgentHandleImpl",
    "AiAgentsImpl",
    "UnknownAgentError",
    "AiContextImpl",
    "AiSessionsImpl",
    "CommandContextImpl",
    "EffectContextImpl",
    "SessionHandle",
    "SlashCommandContextImpl",
    "ToolContextImpl",
    "TurnHandle",
]

T = TypeVar("T")


@final
class TurnHandle(metaclass=NoPublicConstructor):
    """One turn of a session (implements `modular_sdk.AiTurnHandle`).

    Obtain one from `SessionHandle.send`, `SessionHandle.notify` or `SessionHandle.turns`.
    """

    __slots__ = ("_actor", "_engine", "_session", "_turn")

    def __init__(self, engine: Engine, session: SessionState, turn: TurnState, actor: Actor) -> None:
        self._engine = engine
        self._session = session  # the session this handle forks (it was read through)
        self._turn = turn
        self._actor = actor

    @property
    def id(self) -> TurnId:
        return self._turn.id

    @property
    def ordinal(self) -> int:
        return self._turn.ordinal

    @property
    def session_id(self) -> SessionId:
        return self._turn.session_id

    @property
    def status(self) -> TurnStatus:
        return self._turn.status

    @property
    def message(self) -> AiMessage:
        return self._turn.message

    @property
    def message_id(self) -> str:
        return self._turn.message_id

    @property
    def author(self) -> Author:
        return self._turn.author

    @property
    def reply(self) -> str | None:
        return self._turn.reply

    @property
    def error(self) -> str | None:
        return self._turn.error

    @property
    def runner_id(self) -> AiRunnerId:
        return self._turn.runner_id

    @property
    def started_at(self) -> datetime:
        """When the turn began (host clock)."""
        return self._turn.started_at

    @property
    def finished_at(self) -> datetime | None:
        """When it completed or failed; ``None`` while it runs."""
        return self._turn.finished_at

    @property
    def erased_at(self) -> datetime | None:
        """When the user forgot it (``host.lineage.forget``): its text is gone. ``None`` otherwise."""
        return self._turn.erased_at

    @property
    def retracted_at(self) -> datetime | None:
        """When someone found the turn wrong (``host.lineage.retract``); ``None`` otherwise. The turn stays."""
        return self._turn.retracted_at

    @property
    def retraction_reason(self) -> str | None:
        """Why it was retracted (the first reason given); ``None`` if it was not."""
        return self._turn.retraction_reason

    @property
    def tool_calls(self) -> tuple[ToolCallRecord, ...]:
        """The tool calls the turn made, in the order made (docs/the-record.md).

        Durable with the turn: read back after a reopen. A forgotten turn keeps its calls'
        ids, tool names and times; their inputs, outputs and errors are erased.
        """
        return self._turn.tool_calls

    @property
    def usage(self) -> Usage | None:
        """The tokens the turn's model calls used, added up (docs/observability.md).

        ``None`` when no call reported usage (a model that returns plain text). Durable
        with the turn, and kept when it is forgotten (counts are not text).
        """
        return self._turn.usage

    @property
    def widgets(self) -> tuple[WidgetPlacement, ...]:
        """The widgets the reply placed (docs/the-record.md), in reply order.

        Each ``<mod-widget type="ID">{json}</mod-widget>`` tag of a completed reply that
        names a loaded widget and whose JSON fits its ``data_type``; the others were
        reported in ``Submission.widget_errors``. Durable with the turn; a forgotten turn
        keeps each placement's widget id and index, its data is erased.
        """
        return self._turn.widgets

    async def fork(self, *, metadata: AiSessionDisplayMetadata | None = None) -> SessionHandle:
        """A new session whose history is exactly turns ``0..ordinal``.

        Waits for a running turn; raises `TurnFailedError` for a failed one, and
        `ReentrantTurnError` at once when called from inside the turn itself.
        """
        engine = self._engine
        engine.check_open(f"fork turn {self._turn.id!r}")
        turn = await engine.wait_completed(self._turn, self._actor)
        state = await engine.fork(self._session, turn, metadata, self._actor)
        return SessionHandle._create(engine, state, self._actor)

    def __eq__(self, other: object) -> bool:
        return isinstance(other, TurnHandle) and other._turn is self._turn and other._session is self._session

    def __hash__(self) -> int:
        return hash((id(self._turn), id(self._session)))

    def __repr__(self) -> str:
        return f"<TurnHandle {self.id} #{self.ordinal} of {self.session_id} {self.status}>"


@final
class SessionHandle(metaclass=NoPublicConstructor):
    """An AI session (implements `modular_sdk.AiSessionHandle`).

    Obtain one from ``host.sessions.create()``/``get()``, ``ctx.session``, or another
    handle's ``fork``, ``spawn``, ``parent`` and ``children``.
    """

    __slots__ = ("_actor", "_engine", "_state", "_turn_handles")

    def __init__(self, engine: Engine, state: SessionState, actor: Actor) -> None:
        self._engine = engine
        self._state = state
        self._actor = actor
        # The handles `turns` made, one per ordinal from 0: a history only grows (a turn is
        # appended, then changed in place, never replaced), so a read makes handles for the
        # new turns only. Made on first use: most handles never read their turns.
        self._turn_handles: list[TurnHandle] | None = None

    @property
    def id(self) -> SessionId:
        return self._state.record.id

    @property
    def lineage(self) -> AiSessionLineage:
        return self._state.record.lineage

    @property
    def metadata(self) -> AiSessionDisplayMetadata | None:
        return self._state.record.metadata

    @property
    def tags(self) -> Mapping[str, str]:
        """The tags the session was created with (forks and spawns inherit them). Read-only."""
        return self._state.record.tags

    @property
    def created_at(self) -> datetime:
        """When the session was created (host clock)."""
        return self._state.record.created_at

    @property
    def last_activity_at(self) -> datetime:
        """The start of its latest turn or command invocation, else `created_at` (for a listing UI).

        Its own turns only: a fork's inherited turns happened before it was created.
        """
        return self._state.last_activity_at

    @property
    def deleted_at(self) -> datetime | None:
        """When ``host.sessions.delete`` deleted it (its content is gone); ``None`` otherwise."""
        return self._state.deleted_at

    @property
    def model(self) -> str:
        return self._state.record.model

    @property
    def cwd(self) -> str:
        return self._state.record.cwd

    def _turn(self, turn: TurnState) -> TurnHandle:
        return TurnHandle._create(self._engine, self._state, turn, self._actor)

    async def send(self, message: AiMessage, *, request_id: str | None = None) -> TurnHandle:
        """Drive one turn with ``message`` and wait for it; raises `TurnFailedError`.

        ``request_id``: the caller's key for this request; a retry with the same key (after a
        retryable `StoreError`) returns the turn the first attempt stored instead of storing
        the message twice (docs/embedding.md)."""

        turn = await self._engine.send(self._state, message, self._actor, request_id=request_id)
        if turn.status != "completed":
            raise turn_failed(turn)
        return self._turn(turn)

    @overload
    async def run(self, prompt: str) -> AiRunResult: ...

    @overload
    async def run(self, prompt: str, *, output_type: type[T]) -> T: ...

    async def run(self, prompt: str, *, output_type: type[T] | None = None) -> AiRunResult | T:
        """Send a prompt and wait for the answer, structured into ``output_type`` if given."""
        engine = self._engine
        if output_type is None:
            turn = await engine.run(self._state, prompt, self._actor)
            return AiRunResult(text=turn.reply or "", turn=self._turn(turn))
        if isinstance(output_type, type) and dataclasses.is_dataclass(output_type):
            raise InvalidArgumentError(
                f"output_type {output_type.__name__!r} is a dataclass; records are attrs classes here, as "
                "for a tool's input_type: decorate it with @attrs.frozen instead of @dataclass",
                argument="output_type",
                value=output_type,
            )
        turn = await engine.run(self._state, prompt, self._actor, output_schema(output_type))
        return parse_reply(turn, output_type)

    async def notify(self, *, title: str, body: str) -> TurnHandle:
        """Deliver a system event: ``send(AiNotificationMessage(title=..., body=...))``."""
        return await self.send(AiNotificationMessage(title=title, body=body))

    async def fork(self, *, metadata: AiSessionDisplayMetadata | None = None) -> SessionHandle:
        """Copy the conversation through its last completed turn into a new session."""
        state = await self._engine.fork(self._state, None, metadata, self._actor)
        return SessionHandle._create(self._engine, state, self._actor)

    async def spawn(self, *, metadata: AiSessionDisplayMetadata | None = None) -> SessionHandle:
        """A fresh child (empty history); only inside a command or tool handler."""
        state = await self._engine.spawn(self._state, metadata, self._actor)
        return SessionHandle._create(self._engine, state, self._actor)

    async def parent(self) -> SessionHandle | None:
        parent = self._state.parent
        return None if parent is None else SessionHandle._create(self._engine, parent, self._actor)

    async def children(self) -> list[AiSessionHandle]:
        children = await self._engine.children(self._state)
        return [SessionHandle._create(self._engine, c, self._actor) for c in children]

    async def turns(self) -> list[AiTurnHandle]:
        # A copy of the list of handles this handle keeps, the turns added since its last
        # read appended first: a read costs a list copy whatever the history's length, not a
        # new handle per turn (readers polling it starved writers: docs/performance.md,
        # "Writers beside busy readers").
        state = self._state
        await self._engine.caught_up(state)  # several hosts: what others finished
        handles = self._turn_handles
        if handles is None:
            handles = self._turn_handles = []
        for ordinal in range(len(handles), state.next_ordinal):
            turn = turn_at(state, ordinal)
            assert turn is not None, f"session {state.id!r} holds no turn {ordinal} below its next ordinal"
            handles.append(self._turn(turn))
        return list(handles)

    def __eq__(self, other: object) -> bool:
        """Handles of the same session are equal, whoever they act as."""
        return isinstance(other, SessionHandle) and other._state is self._state

    def __hash__(self) -> int:
        return hash(self.id)

    def __repr__(self) -> str:
        return f"<SessionHandle {self.id} {self.lineage.kind}>"


@attrs.frozen(kw_only=True)
class SessionPage:
    """One page of ``host.sessions.list(...)``: ``sessions`` newest first; ``next`` is the
    cursor of the following page (pass it as ``after=``), ``None`` on the last. Immutable."""

    sessions: tuple[SessionHandle, ...]
    next: str | None


def encode_cursor(position: int) -> str:
    return f"p{position}"


_CURSOR = re.compile(r"p[0-9]{1,19}")  # a store position: a signed 64-bit integer


def decode_cursor(cursor: object) -> int:
    """The position a cursor from `SessionPage.next` names; `InvalidArgumentError` (``after``)
    naming it otherwise (also for a position no store holds: over 2**63 - 1)."""
    if isinstance(cursor, str) and _CURSOR.fullmatch(cursor) and int(cursor[1:]) < 2**63:
        return int(cursor[1:])
    raise InvalidArgumentError(
        f"{show(cursor)} is not a page cursor; pass the `next` of a SessionPage this host returned",
        argument="after",
        value=cursor,
    )



def check_list_tags(tags: object) -> Mapping[str, str]:
    """Tags to filter by (``None``: none), checked: a mapping of str to str, else `InvalidArgumentError`."""
    if tags is None:
        return {}
    try:
        pairs = list(tags.items()) if isinstance(tags, Mapping) else None
    except Exception:  # a mapping whose items() raises is not tags either
        pairs = None
    if pairs is None or not all(isinstance(k, str) and isinstance(v, str) for k, v in pairs):
        raise InvalidArgumentError(
            f"tags must map str to str, like {{'user': 'alice'}}, got {show(tags)}", argument="tags", value=tags
        )
    for key, value in pairs:
        why = unstorable_text(key) or unstorable_text(value)
        if why is not None:
            raise InvalidArgumentError(
                f"the tag {show(key)}: {show(value)} {why}; tags are text a store can hold",
                argument="tags",
                value=tags,
            )
    return dict(pairs)


@final
class AiSessionsImpl(metaclass=NoPublicConstructor):
    """The session catalogue (``host.sessions``, ``ctx.ai.sessions``).

    Obtain it as ``host.sessions`` (acting as the user), ``host.scoped(tags).sessions``
    (the user, within a scope) or ``ctx.ai.sessions`` (acting as the handler's mod, within
    the tags of the session it runs in).
    """

    __slots__ = ("_actor", "_engine", "_scope")

    def __init__(self, engine: Engine, actor: Actor, scope: Scope | None = None) -> None:
        self._engine = engine
        self._actor = actor
        self._scope = scope  # None: every session; else only those the scope sees (docs/embedding.md)

    async def _state(self, session_id: str) -> SessionState:
        if self._scope is None:
            return await self._engine.load(session_id)
        return await session_state(self._engine, self._scope, session_id)

    async def create(
        self,
        *,
        metadata: AiSessionDisplayMetadata | None = None,
        model: str | None = None,
        cwd: str | None = None,
        tags: Mapping[str, str] | None = None,
        trace: str | None = None,
    ) -> SessionHandle:
        """A new, empty root session (``session.create`` hooks run first). With
        ``trace`` (a trace id from ``host.traces``; user handles only: a mod never names a
        trace) the session works on that trace.

        ``tags`` (str keys and values, like ``{"user": "alice"}``) are fixed at creation;
        forks and spawns inherit them, and `list` filters by them. In a scope, the session gets
        the scope's tags; ``tags`` may add more, and raises `InvalidArgumentError` when it
        would change one of the scope's.
        """
        if self._scope is not None:
            tags = self._scope.merged(tags)
            await check_trace(self._engine.store, self._scope, trace)
        state = await self._engine.create_root(metadata=metadata, model=model, cwd=cwd, actor=self._actor, trace_id=_trace_arg(trace, self._actor), tags=tags)
        return SessionHandle._create(self._engine, state, self._actor)

    async def get(self, session_id: str) -> SessionHandle:
        """The session with this id; raises `UnknownSessionError`."""
        self._engine.check_open(f"get session {show(session_id)}")
        return SessionHandle._create(self._engine, await self._state(session_id), self._actor)

    async def turn(self, turn_id: str) -> TurnHandle:
        """The turn with this turn id or message id, in whichever session ran it.

        Raises `modular_sdk.UnknownTurnError` for an id this host's store does not hold.
        """
        self._engine.check_open("get a turn")
        if self._scope is not None:
            await turn_record(self._engine.store, self._scope, turn_id)  # outside: as if missing
        session, turn = await self._engine.load_turn(turn_id)
        return TurnHandle._create(self._engine, session, turn, self._actor)

    async def list(
        self,
        *,
        tags: Mapping[str, str] | None = None,
        roots_only: bool = False,
        limit: int = 50,
        after: str | None = None,
    ) -> SessionPage:
        """A page of sessions, newest first: those whose tags include every one of ``tags``
        (roots only with ``roots_only``), at most ``limit``, continuing after the cursor
        ``after`` (a page's ``next``). Deleted sessions are left out. Served by an index: a
        page costs what it returns, not the number of other sessions.
        """
        engine = self._engine
        engine.check_open("list sessions")
        checked = check_list_tags(tags) if self._scope is None else self._scope.merged(tags)
        if isinstance(limit, bool) or not isinstance(limit, int) or not 1 <= limit <= 10_000:
            raise InvalidArgumentError(f"limit must be an int from 1 to 10000, got {show(limit)}", argument="limit", value=limit)
        if not isinstance(roots_only, bool):
            raise InvalidArgumentError(f"roots_only must be True or False, got {show(roots_only)}", argument="roots_only", value=roots_only)
        before = None if after is None else decode_cursor(after)
        records, last = await engine.page_sessions(checked, roots_only, limit, before)
        sessions = tuple([SessionHandle._create(engine, await engine.load(r.id), self._actor) for r in records])
        return SessionPage(sessions=sessions, next=None if last is None else encode_cursor(last))

    async def delete(self, session_id: str) -> None:
        """Delete a session: erase the content of its own turns (through ``lineage.forget``,
        so turns elsewhere whose model read them go too) and of its command invocations, and
        hide it from `list`. Its forks keep working; `get` still returns it, with
        ``deleted_at`` set, so lineage stays walkable.
        """
        engine = self._engine
        engine.check_open(f"delete session {show(session_id)}")
        state = await self._state(session_id)
        await engine.delete(state)


@final
class AgentHandleImpl(metaclass=NoPublicConstructor):
    """A declared agent. Obtain one from ``ctx.ai.agents.get(id)``."""

    __slots__ = ("_actor", "_agent", "_engine", "_scope")

    def __init__(self, engine: Engine, agent: Agent, actor: Actor, scope: Scope | None = None) -> None:
        self._engine = engine
        self._agent = agent
        self._actor = actor
        self._scope = scope

    @property
    def id(self) -> str:
        return self._agent.id

    async def spawn(self, *, metadata: AiSessionDisplayMetadata | None = None) -> SessionHandle:
        """A new root session configured by this agent (not a child of the current one); it
        gets the tags of the session whose handler starts it (its scope)."""
        state = await self._engine.create_root(
            metadata=metadata,
            model=None,
            cwd=None,
            actor=self._actor,
            agent=self._agent,
            tags=None if self._scope is None else self._scope.tags,
        )
        return SessionHandle._create(self._engine, state, self._actor)


class UnknownAgentError(ModularError, LookupError):
    """No loaded mod declares an agent with this id; ``agent_id`` is the id asked for.

    A `LookupError`, as ``ctx.ai.agents.get`` documents.
    """

    def __init__(self, message: str, *, agent_id: str) -> None:
        super().__init__(message)
        self.agent_id = agent_id

    def __str__(self) -> str:  # LookupError subclasses would quote the message
        return str(self.args[0])


@final
class AiAgentsImpl(metaclass=NoPublicConstructor):
    """The agents declared by loaded mods. Obtain it as ``ctx.ai.agents``."""

    __slots__ = ("_actor", "_engine", "_scope")

    def __init__(self, engine: Engine, actor: Actor, scope: Scope | None = None) -> None:
        self._engine = engine
        self._actor = actor
        self._scope = scope

    def get(self, agent_id: str) -> AgentHandle:
        entry = self._engine.agent(agent_id)
        if entry is None:
            known = self._engine.agent_ids()
            close = close_names(agent_id, known)
            hint = f"; did you mean {close[0]!r}?" if close else ""
            raise UnknownAgentError(
                f"no agent {agent_id!r}{hint} (declared agents: {', '.join(map(repr, known)) or 'none'}); "
                "declare it with AiContributions(agents=[agent(id=...)])",
                agent_id=agent_id,
            )
        return AgentHandleImpl._create(self._engine, entry[1], self._actor, self._scope)


@final
class AiContextImpl(metaclass=NoPublicConstructor):
    """``ctx.ai``: sessions and agents. Obtain it from a handler's context.

    A handler running in a tagged session acts within those tags (docs/embedding.md): what it
    creates gets them, and it finds only sessions that carry them.
    """

    __slots__ = ("_actor", "_agents", "_engine", "_scope", "_sessions")

    def __init__(self, engine: Engine, actor: Actor, scope: Scope | None = None) -> None:
        self._sessions = AiSessionsImpl._create(engine, actor, scope)
        self._agents = AiAgentsImpl._create(engine, actor, scope)
        self._engine, self._actor, self._scope = engine, actor, scope

    @property
    def memory(self) -> Memory:
        """What this handler remembers (docs/memory.md): records stamped with its mod and
        command or tool, within the tags of the session it runs in."""
        engine, actor = self._engine, self._actor
        author: MemoryAuthor = HostAuthor() if actor is None else actor.author
        return Memory._create(
            engine.store,
            clock=engine.now,
            author=author,
            tags=None if self._scope is None else self._scope.tags,
            notices=MemoryEvents(engine.events, engine.telemetry),
        )

    @property
    def sessions(self) -> AiSessionsImpl:
        return self._sessions

    @property
    def agents(self) -> AiAgentsImpl:
        return self._agents


class _Context:
    __slots__ = ("_ai", "_frame")

    def __init__(self, engine: Engine, frame: HandlerFrame, scope: Scope | None = None) -> None:
        self._ai = AiContextImpl._create(engine, frame, scope)
        self._frame = frame

    @property
    def ai(self) -> AiContextImpl:
        return self._ai

    @property
    def mod_id(self) -> str:
        return self._frame.mod_id


@final
class SlashCommandContextImpl(_Context, metaclass=NoPublicConstructor):
    """What a slash command's ``run(argument, ctx)`` gets. Made by the host per call."""

    __slots__ = ("_session",)

    def __init__(self, *, engine: Engine, session: SessionState, frame: HandlerFrame) -> None:
        super().__init__(engine, frame, scope_of(session))
        self._session = SessionHandle._create(engine, session, frame)

    @property
    def session(self) -> SessionHandle:
        """The chat session the command was typed into (acting as this command's mod)."""
        return self._session

    @property
    def command_id(self) -> str:
        assert self._frame.command_id is not None
        return self._frame.command_id

    async def report_output(self, *, kind: str, output_id: str) -> None:
        """Report an output this handler produced; the host links it to this session's trace."""
        await _report_output(self._session, self._frame, kind, output_id)


@final
class CommandContextImpl(_Context, metaclass=NoPublicConstructor):
    """What a palette command's ``run(ctx)`` gets (no session). Made by the host per call."""

    __slots__ = ()

    def __init__(self, *, engine: Engine, frame: HandlerFrame, scope: Scope | None = None) -> None:
        super().__init__(engine, frame, scope)

    @property
    def command_id(self) -> str:
        assert self._frame.command_id is not None
        return self._frame.command_id


@final
class ToolContextImpl(_Context, metaclass=NoPublicConstructor):
    """What a tool's ``run(input, ctx)`` gets. Made by the host per call."""

    __slots__ = ("_session",)

    def __init__(self, *, engine: Engine, session: SessionHandle, frame: HandlerFrame) -> None:
        super().__init__(engine, frame, scope_of(session._state))
        self._session = session

    @property
    def session(self) -> SessionHandle:
        """The session whose turn called this tool (acting as this tool's mod)."""
        return self._session

    @property
    def tool_name(self) -> str:
        assert self._frame.tool_name is not None
        return self._frame.tool_name

    @property
    def call_id(self) -> str:
        assert self._frame.call_id is not None
        return self._frame.call_id

    async def report_output(self, *, kind: str, output_id: str) -> None:
        """Report an output this handler produced; the host links it to this session's trace."""
        await _report_output(self._session, self._frame, kind, output_id)


@final
class EffectContextImpl(_Context, metaclass=NoPublicConstructor):
    """What an effect's ``activate(ctx)`` gets. Made by the host when it opens."""

    __slots__ = ("_effect_id",)

    def __init__(self, *, engine: Engine, frame: HandlerFrame, effect_id: str) -> None:
        super().__init__(engine, frame)
        self._effect_id = effect_id

    @property
    def effect_id(self) -> str:
        return self._effect_id


def tool_context(engine: Engine, session: SessionState, frame: HandlerFrame) -> ToolContextImpl:
    """The context a tool handler gets: its session's handle, acting as the tool's mod."""
    return ToolContextImpl._create(session=SessionHandle._create(engine, session, frame), engine=engine, frame=frame)


def _trace_arg(trace: object, actor: Actor) -> str | None:
    """``sessions.create(trace=...)``: a trace id, from the user only."""
    if trace is None:
        return None
    if actor is not None:
        raise InvalidArgumentError(
            f"mod {actor.mod_id!r} passed trace={trace!r} to sessions.create(); a mod never names a "
            "trace: the host links forks and spawns itself, and ctx.report_output links outputs",
            argument="trace",
            value=trace,
        )
    if not isinstance(trace, str) or not trace:
        raise InvalidArgumentError(
            f"trace must be a trace id (str), got {show(trace)}; pass trace=trace.id of a trace from host.traces",
            argument="trace",
            value=trace,
        )
    if unstorable_text(trace):  # an id no store could hold is an unknown id, never an encoding error
        raise unknown_trace(trace)
    return trace


async def _report_output(session: SessionHandle, frame: HandlerFrame, kind: str, output_id: str) -> None:
    """Link an output to ``session``'s trace, with where ``frame`` ran (a tool's turn, a
    command's session position), so that forgetting that turn erases it."""
    engine = session._engine
    engine.check_open(f"report output {show(output_id)}")
    if not engine.links_outputs:
        raise TraceError(
            "this engine links no outputs (it was not made by a Host); call report_output in a "
            "handler a Host runs"
        )
    await engine.report_output(session.id, kind, output_id, frame.turn_id, frame.position)

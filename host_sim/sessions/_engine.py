"""The engine behind `Host`: session state, turns, forks, spawns, hooks and tools.

Turns of one session run one at a time in arrival order: each send waits in the session's
FIFO queue. Different sessions run concurrently. Everything runs in the task of whoever
asked for it (``send``, ``submit``...), so the host starts no task it does not own. Each
operation is one store transaction, written before the live state changes.
"""

from __future__ import annotations

import contextlib
import json
from collections.abc import Awaitable, Callable, Iterator, Mapping, Sequence
from datetime import datetime
from typing import TYPE_CHECKING, Any, Protocol, TypeVar

import anyio
import attrs

from modular_sdk import (
    ActionDeniedError,
    ActionEvent,
    Agent,
    AiMessage,
    AiNotificationMessage,
    AiPromptMessage,
    AiSessionDisplayMetadata,
    Allow,
    Author,
    BeforeActionHook,
    Deny,
    ForkLineage,
    HostClosedError,
    InvalidArgumentError,
    Mod,
    ModDefinitionError,
    NoConversationError,
    PaletteCommand,
    ReentrantTurnError,
    SessionDeletedError,
    ReplyValidationError,
    RootLineage,
    SerializationError,
    SessionId,
    SpawnTrigger,
    SlashCommand,
    SpawnContextError,
    SpawnLineage,
    Tool,
    ToolContext,
    TurnFailedError,
    TurnId,
    UnknownSessionError,
    View,
    Widget,
)
from modular_sdk._frozen import FrozenJsonObject, freeze_object, thaw_object
from modular_sdk._json import parse_json_text, structure, unstructure
from modular_sdk._rules import MAX_DEPTH, show
from modular_sdk._schema import JsonValue, SchemaError, json_schema

from ..lanes._calling import Actor, HandlerFrame, author_of, running_turns_var
from ..lanes._ext_host import HandlerFailed, call_handler
from ..lineage._provenance import delete_session, find_turn
from ..lineage._types import LineageEdge, SessionNode
from ..models._protocol import Model, ModelRequest, Reply, ToolCall, ToolResult, ToolSpec, Usage, add_usage
from ..observability import Telemetry
from ..stores._protocol import LogStore, Store
from ..stores._invariants import fork_artifact
from ..stores._errors import StoreError
from ..stores._records import SessionRecord, ToolCallRecord, TurnRecord
from ..stores._shared import SharedStore
from ._across_hosts import across_hosts, catch_up, running_elsewhere
from ._widget_tags import place_widgets
from ._events import (
    EventHub,
    NotificationEvent,
    ReplyDelta,
    SessionCreated,
    SessionDeleted,
    ToolCalled,
    ToolFinished,
    TurnErased,
    TurnFinished,
    TurnRetracted,
    TurnStarted,
)
from ._explain import turn_failed
from ._ids import new_call_id, new_message_id, new_session_id, new_turn_id
from ._state import SessionState, TurnState, apply_erasure, apply_retraction, history_view, text_of, turn_at

if TYPE_CHECKING:
    from ..lineage._graph import LineageGraph
    from modular_sdk._mcp import McpServer

    from ..mcp._client import McpTools

__all__ = ["Engine", "JobCall", "ModTables"]

T = TypeVar("T")


class JobCall(Protocol):
    """The job a send runs in, handed down its call path (``host.start``): never ambient."""

    @property
    def id(self) -> str: ...

    async def turn_began(self, turn_id: TurnId) -> None:
        """The job's turn is durable and about to call its model."""
        ...


@attrs.frozen
class ModTables:
    """Every mod's declarations, indexed for dispatch; built once when the host opens."""

    mods: tuple[Mod, ...]
    slash: dict[str, tuple[Mod, SlashCommand[str]]]
    palette: dict[str, tuple[Mod, PaletteCommand[str]]]
    tools: dict[str, tuple[Mod, Tool[object]]]
    agents: dict[str, tuple[Mod, Agent]]
    host_hooks: dict[str, list[tuple[Mod, BeforeActionHook[str]]]]
    command_hooks: dict[tuple[str, str], list[tuple[Mod, BeforeActionHook[str]]]]
    views: dict[str, tuple[Mod, View[object]]]
    widgets: dict[str, tuple[Mod, Widget[object]]]
    mcp_servers: dict[str, tuple[Mod, McpServer]] = attrs.field(factory=dict)  # by server id

    @classmethod
    def build(
        cls, mods: Sequence[object], *, skip_bad: bool = False, positions: Sequence[int] | None = None
    ) -> tuple[ModTables, tuple[tuple[int, ModDefinitionError], ...]]:
        """Index ``mods`` for dispatch; with ``skip_bad``, leave out each mod that cannot load.

        A mod is bad when it is not a `Mod`, repeats a loaded mod's id, or declares a
        command, tool, agent or view a mod before it already declared. Without ``skip_bad``
        every problem is raised at once (`ModDefinitionError`); with it, each bad mod is left
        out whole (none of its declarations load) and described by one `ModDefinitionError`
        in the second value, with its position, in ``mods`` order. ``positions`` are the indexes messages
        show for ``mods`` (the caller's own list, when it left some out before).
        """
        problems: list[str] = []
        skipped: list[tuple[int, ModDefinitionError]] = []
        loaded: list[Mod] = []
        seen_mods: dict[str, int] = {}
        slash: dict[str, tuple[Mod, SlashCommand[str]]] = {}
        palette: dict[str, tuple[Mod, PaletteCommand[str]]] = {}
        tools: dict[str, tuple[Mod, Tool[object]]] = {}
        agents: dict[str, tuple[Mod, Agent]] = {}
        views: dict[str, tuple[Mod, View[object]]] = {}
        widgets: dict[str, tuple[Mod, Widget[object]]] = {}
        mcp_servers: dict[str, tuple[Mod, McpServer]] = {}
        host_hooks: dict[str, list[tuple[Mod, BeforeActionHook[str]]]] = {}
        command_hooks: dict[tuple[str, str], list[tuple[Mod, BeforeActionHook[str]]]] = {}

        def claims(mod: Mod) -> list[tuple[dict[str, tuple[Mod, Any]], str, object, str]]:
            """Every (table, key, declaration, what) the mod adds to the tables."""
            out: list[tuple[dict[str, tuple[Mod, Any]], str, object, str]] = []
            for cmd in mod.commands:
                if isinstance(cmd, SlashCommand):
                    out.append((slash, cmd.id, cmd, "slash command /"))
                else:
                    out.append((palette, cmd.id, cmd, "palette command"))
            out += [(tools, t.name, t, "tool") for t in mod.ai.tools]
            out += [(agents, a.id, a, "agent") for a in mod.ai.agents]
            out += [(views, v.id, v, "view") for v in mod.views]
            out += [(widgets, w.id, w, "widget") for w in mod.widgets]
            out += [(mcp_servers, m.id, m, "MCP server") for m in mod.ai.mcp_servers]
            return out

        for at, mod in enumerate(mods):
            index = at if positions is None else positions[at]
            if not isinstance(mod, Mod):
                mine = [f"mods[{index}] must be a Mod from define_mod(...) or a mod spec string, got {mod!r}"]
            elif mod.id in seen_mods:
                mine = [f"mod id {mod.id!r} is loaded twice (mods[{seen_mods[mod.id]}] and mods[{index}])"]
            else:
                wanted = claims(mod)
                mine = [
                    f"{what} {key!r} is declared by both mod {table[key][0].id!r} and mod {mod.id!r}; rename one of them"
                    for table, key, _, what in wanted
                    if key in table
                ]
                if not mine or not skip_bad:
                    seen_mods[mod.id] = index
                    loaded.append(mod)
                    for table, key, value, _ in wanted:
                        table.setdefault(key, (mod, value))
                    for hook in mod.hooks:
                        if hook.target.startswith("command:"):
                            command_hooks.setdefault((mod.id, hook.target), []).append((mod, hook))
                        else:
                            host_hooks.setdefault(hook.target, []).append((mod, hook))
            if mine and skip_bad:
                name = f"mod {mod.id!r}" if isinstance(mod, Mod) else f"mods[{index}]"
                error = ModDefinitionError(f"{name} was not loaded: {'; '.join(mine)}", field=f"mods[{index}]", value=mod)
                skipped.append((index, error))
            else:
                problems += mine
        if problems:
            lines = "\n".join(f"  - {p}" for p in problems)
            raise ModDefinitionError(f"cannot load these mods together:\n{lines}", field="mods", value=list(mods))
        tables = cls(
            mods=tuple(loaded),
            slash=slash,
            palette=palette,
            tools=tools,
            agents=agents,
            host_hooks=host_hooks,
            command_hooks=command_hooks,
            views=views,
            widgets=widgets,
            mcp_servers=mcp_servers,
        )
        return tables, tuple(skipped)


class Engine:
    """Owns the live sessions and runs everything the handles ask for.

    Every method that acts takes the ``actor`` it acts for: the `HandlerFrame` a handle
    carries, or ``None`` for the user. Authors, spawn triggers and re-entrancy come from it.
    """

    def __init__(
        self,
        *,
        tables: ModTables,
        model: Model,
        store: Store,
        graph: LineageGraph,
        clock: Callable[[], datetime],
        handler_timeout: float | None,
        model_timeout: float | None,
        max_tool_rounds: int,
        cwd: str,
        tool_context: Callable[[Engine, SessionState, HandlerFrame], ToolContext],
        log: LogStore,
        events: EventHub,
        max_reply_bytes: int = 1_000_000,
        mcp: McpTools | None = None,
        erasure_generation: int = 0,
        link_session: Callable[[SessionRecord, SessionNode, LineageEdge | None, str | None], Awaitable[None]] | None = None,
        after_turn: Callable[[SessionState, TurnState], Awaitable[None]] | None = None,
        report_output: Callable[[SessionId, str, str, TurnId | None, int | None], Awaitable[None]] | None = None,
        telemetry: Telemetry | None = None,
    ) -> None:
        self.tables = tables
        self.model = model
        self.store = store
        # Asked once: a runtime Protocol check walks every member of SharedStore (about
        # 10 us), and forks and sends ask on every call.
        self.shared: SharedStore | None = store if isinstance(store, SharedStore) else None
        self.graph = graph
        self.clock = clock
        self.handler_timeout = handler_timeout
        self.model_timeout = model_timeout
        self.max_tool_rounds = max_tool_rounds
        self.max_reply_bytes = max_reply_bytes
        self.cwd = cwd
        self.tool_context = tool_context  # made by the handles module: the engine never imports it
        self.mcp = mcp  # the mods' MCP servers: their tools beside the mods' own (API section 16)
        self.telemetry = telemetry if telemetry is not None else Telemetry()  # OpenTelemetry (API section 15)
        self.sessions: dict[SessionId, SessionState] = {}
        self.tool_specs = tuple(
            ToolSpec(name=t.name, description=t.description, input_schema=t.input_schema)
            for _, t in tables.tools.values()
        )
        self._loading = anyio.Lock()
        self.events = events
        self.log = log  # the integrator's records: the store itself, or a MemoryLog over it
        self.erasure_generation = erasure_generation  # a shared store's erasure generation this host's sessions reflect
        self._inflight: set[anyio.CancelScope] = set()  # turns running in callers' tasks
        self._idle: anyio.Event | None = None
        self._closed = False
        # Traces (host_sim/traces), passed by the host. ``link_session`` writes a new session
        # and its trace link in one transaction (a fork or spawn joins its parent's trace);
        # ``after_turn`` records what a completed turn's reply proposed (mod actions);
        # ``report_output`` is what ``ctx.report_output`` calls (session, kind, output id, and
        # the turn and session position of the handler's frame).
        self.link_session = link_session
        self.after_turn = after_turn
        self.report_output = report_output

    async def close(self) -> None:
        """Cancel every turn still running or queued (in whatever task sent it) and wait until
        each has recorded its failure, so nothing writes to the store after the host closes it."""
        self._closed = True
        for scope in list(self._inflight):
            scope.cancel()
        if self._inflight:
            self._idle = anyio.Event()
            with anyio.CancelScope(shield=True):
                await self._idle.wait()

    @contextlib.contextmanager
    def tracked(self) -> Iterator[anyio.CancelScope]:
        """Run work the host must wait for before it closes its store (a command and its
        durable record): `close` cancels it and waits until it has written its end."""
        with anyio.CancelScope() as scope:
            self._inflight.add(scope)
            try:
                yield scope
            finally:
                self._inflight.discard(scope)
                if not self._inflight and self._idle is not None:
                    self._idle.set()

    def check_open(self, what: str) -> None:
        if self._closed:
            raise HostClosedError(
                f"cannot {what}: its host is closed; use handles of an open Host "
                "(inside 'async with Host(...) as host:')"
            )

    # -- time ---------------------------------------------------------------------------
    def now(self) -> datetime:
        return checked_now(self.clock)

    # -- lookup (lazy: a session is read from the store the first time it is touched) ----
    async def load(self, session_id: object) -> SessionState:
        """The live state of a session, read from the store (with its fork chain) on first use.

        Costs one dictionary lookup for a session already touched; otherwise two reads per
        session of its not-yet-touched ancestry (its record and its own turns).
        """
        if not isinstance(session_id, str):
            raise InvalidArgumentError(
                f"a session id is a str (a SessionId), got {show(session_id)}; pass session.id",
                argument="session_id",
                value=session_id,
            )
        state = self.sessions.get(SessionId(session_id))
        if state is not None:
            return state
        if _unstorable(session_id) is not None:  # no store holds it (nor could be asked for it)
            raise UnknownSessionError(
                f"no session {show(session_id)} in this host or its store (a session id is valid text); "
                "use an id from host.sessions.create() or a handle's .id",
                session_id=session_id,
            )
        async with self._loading:  # one reader builds a session's state; the rest reuse it
            return await self._load(SessionId(session_id))

    async def _load(self, session_id: SessionId) -> SessionState:
        chain: list[SessionRecord] = []  # the session, then ancestors not yet live (iterative)
        current = session_id
        while current not in self.sessions:
            record = await self.store.get_session(current)
            if record is None:
                if not chain:
                    raise UnknownSessionError(
                        f"no session {session_id!r} in this host or its store; use an id from "
                        "host.sessions.create() or a handle's .id",
                        session_id=session_id,
                    )
                child = chain[-1]
                raise _damaged(
                    self.store,
                    f"session {child.id!r} is a {child.lineage.kind} of {current!r}, which the store does not hold",
                )
            chain.append(record)
            if record.lineage.kind == "root":
                break
            current = record.lineage.parent_session_id
        for record in reversed(chain):
            self.sessions[record.id] = await self._materialize(record)
        return self.sessions[session_id]

    async def _materialize(self, record: SessionRecord) -> SessionState:
        """A session's live state from its record and own turns; its parent is already live."""
        lineage = record.lineage
        parent: SessionState | None = None
        anchor: TurnState | None = None
        if lineage.kind != "root":
            parent = self.sessions[lineage.parent_session_id]
            if lineage.kind == "fork":
                anchor = turn_at(parent, lineage.parent_turn_ordinal)
                if anchor is None:  # forked by another host at a turn this one has not seen yet
                    await catch_up(self.shared, parent, self.now)
                    anchor = turn_at(parent, lineage.parent_turn_ordinal)
                if anchor is None or anchor.status != "completed":
                    raise _damaged(
                        self.store,
                        f"fork {record.id!r} is anchored at turn {lineage.parent_turn_ordinal} of "
                        f"{parent.id!r}, which is {'missing' if anchor is None else anchor.status}",
                    )
        state = SessionState(record=record, parent=parent, anchor=anchor)
        state.deleted_at = await self.log.deleted_at(record.id)
        invoked = [i.started_at for i in await self.log.invocations_of(record.id)]
        state.last_invocation_at = max(invoked, default=None)
        for turn_record in await self.store.get_turns(record.id):
            if running_elsewhere(self.shared, turn_record):
                break  # another host runs it: caught up once it has finished
            turn = TurnState.from_record(turn_record)
            if turn.ordinal != state.next_ordinal:
                raise _damaged(
                    self.store,
                    f"session {record.id!r} has turn {turn.ordinal} where turn {state.next_ordinal} belongs",
                )
            state.add_turn(turn)
            if turn.status == "completed":
                state.add_entry(turn)
                state.last_completed = turn
        return state

    async def load_turn(self, turn_or_message_id: object) -> tuple[SessionState, TurnState]:
        """A turn (by turn id or message id) and the session that ran it; `UnknownTurnError` otherwise."""
        record = await find_turn(self.store, turn_or_message_id)
        session = await self.load(record.session_id)
        turn = turn_at(session, record.ordinal)
        if turn is None and record.status != "running":  # another host finished it a moment ago
            await catch_up(self.shared, session, self.now)
            turn = turn_at(session, record.ordinal)
        if turn is None or turn.id != record.id:
            raise _damaged(self.store, f"turn {record.id!r} is not at ordinal {record.ordinal} of {session.id!r}")
        return session, turn

    def apply_erasure(self, records: Sequence[TurnRecord]) -> None:
        """What an erasure (this host's or another's) made true, made true of the live sessions this host holds."""
        for record in records:
            session = self.sessions.get(record.session_id)
            if session is not None:
                apply_erasure(session, record)

    def erased(self, records: Sequence[TurnRecord]) -> None:
        """This host erased ``records`` (forget, delete): its live sessions say so, and one
        ``turn_erased`` event per erased turn says so to subscribers (earlier events stay as
        they were). A record without ``erased_at`` is a turn that lost only its error (it
        quoted erased text): no event, it was not erased."""
        self.apply_erasure(records)
        for record in records:
            if record.erased_at is not None:
                self.events.publish(_turn_erased(record))

    def apply_retraction(self, record: TurnRecord, first: bool) -> None:
        """A retraction, made true of the live sessions this host holds; ``first``: this call
        retracted it (publishes ``turn_retracted``), else it was retracted before."""
        session = self.sessions.get(record.session_id)
        if session is not None:
            apply_retraction(session, record)
        reason = record.retraction_reason or ""
        if first:
            self.events.publish(
                lambda seq, at: TurnRetracted(
                    seq=seq, at=at, session_id=record.session_id, turn_id=record.id, reason=reason
                )
            )

    async def delete(self, state: SessionState) -> None:
        """Delete a session: erase it through the one erasure walk (its own turns as forget
        does, and all it holds), then hide it (`LogStore`)."""
        await delete_session(self.store, self.log, state.id, now=self.now, applied=self.erased)
        at = self.now()
        await self.log.delete_session(state.id, at)
        first = state.deleted_at is None
        state.deleted_at = state.deleted_at or at
        if first:
            self.events.publish(lambda seq, at: SessionDeleted(seq=seq, at=at, session_id=state.id))
        await self.events.written()  # its turn_erased and session_deleted, before the caller goes on

    async def refuse_deleted(self, session: SessionState, what: str) -> None:
        """Raise `SessionDeletedError` when ``session`` was deleted, on this host or (a shared
        store: one indexed read) on another."""
        if session.deleted_at is None and self.shared is not None:
            session.deleted_at = await self.log.deleted_at(session.id)
        if session.deleted_at is not None:
            raise SessionDeletedError(
                f"cannot {what} session {session.id!r}: it was deleted at {session.deleted_at.isoformat()}; "
                "its history stays readable (erased), but nothing more can be sent to it, forked or "
                "spawned from it: create a new session (or fork one of its forks made before the deletion)",
                session_id=session.id,
            )

    async def children(self, state: SessionState) -> list[SessionState]:
        """The forks and spawns of a session, in creation order (read from the store)."""
        return [await self.load(r.id) for r in await self.store.child_sessions(state.id)]

    # -- hooks --------------------------------------------------------------------------
    async def before(
        self,
        action: str,
        session_id: SessionId | None,
        author: Author,
        *,
        owner: Mod | None = None,
        anchor: TurnState | None = None,
        trigger: SpawnTrigger | None = None,
    ) -> None:
        """Run the ``before_action`` hooks for ``action``; raise `ActionDeniedError` on Deny.

        ``anchor`` (a fork's) and ``trigger`` (a spawn's) are shown to the hooks.
        """
        if owner is not None:
            hooks = self.tables.command_hooks.get((owner.id, action), [])
        else:
            hooks = self.tables.host_hooks.get(action, [])
        if not hooks:
            return
        event = ActionEvent(
            action=action,
            session_id=session_id,
            author=author,
            anchor_ordinal=None if anchor is None else anchor.ordinal,
            anchor_turn_id=None if anchor is None else anchor.id,
            trigger=trigger,
        )
        where = f" on session {session_id!r}" if session_id is not None else ""
        for mod, hook in hooks:
            try:
                decision = await call_handler(
                    f"before_action hook {hook.target!r} of mod {mod.id!r}",
                    hook.handle,
                    (event,),
                    timeout=self.handler_timeout,
                )
            except HandlerFailed as failed:
                raise ActionDeniedError(
                    f"{action}{where} was denied because {failed.reason} (a failing hook denies; fix the hook)",
                    action=action,
                    reason=failed.reason,
                    mod_id=mod.id,
                ) from failed.cause
            if isinstance(decision, Deny):
                raise ActionDeniedError(
                    f"{action}{where} was denied by mod {mod.id!r}: {decision.reason}",
                    action=action,
                    reason=decision.reason,
                    mod_id=mod.id,
                )
            if not isinstance(decision, Allow):
                reason = f"hook returned {decision!r}; a hook must return Allow() or Deny(reason=...)"
                raise ActionDeniedError(
                    f"{action}{where} was denied: mod {mod.id!r} {reason}",
                    action=action,
                    reason=reason,
                    mod_id=mod.id,
                )

    # -- sessions -----------------------------------------------------------------------
    async def _add_session(self, state: SessionState, edge: LineageEdge | None, trace_id: str | None = None) -> SessionState:
        """Write the session, its node and its edge in one transaction, then make it live."""
        record = state.record
        node = SessionNode(session_id=record.id, created_at=record.created_at, agent_id=record.agent_id)
        self.check_open(f"create session {record.id!r}")
        with anyio.CancelScope(shield=True):  # a started write always finishes and is seen
            if self.link_session is not None:  # traces: the session's trace link in the same transaction
                await self.link_session(record, node, edge, trace_id)
            else:
                await self.store.create_session(record, node, edge)
        # A reader (list, children) may have loaded it from the store meanwhile: keep one state.
        live = self.sessions.setdefault(record.id, state)
        self.events.publish(
            lambda seq, at: SessionCreated(seq=seq, at=at, session_id=record.id, lineage=record.lineage, tags=record.tags)
        )
        await self.events.written()  # numbered before the caller (or another host) uses the session
        return live

    async def create_root(
        self,
        *,
        metadata: AiSessionDisplayMetadata | None,
        model: str | None,
        cwd: str | None,
        actor: Actor,
        agent: Agent | None = None,
        trace_id: str | None = None,
        tags: Mapping[str, str] | None = None,
    ) -> SessionState:
        _check_metadata(metadata)
        _check_text("model", model)
        _check_text("cwd", cwd)
        checked_tags = _check_tags(tags)
        self.check_open("create a session")
        await self.before("session.create", None, author_of(actor))
        session_id = new_session_id()
        model_name = model or (agent.model if agent is not None else None) or self.model.name
        record = SessionRecord(
            id=session_id,
            lineage=RootLineage(),
            metadata=metadata,
            model=model_name,
            cwd=cwd or self.cwd,
            created_at=self.now(),
            agent_id=agent.id if agent is not None else None,
            tags=checked_tags,
        )
        edge: LineageEdge | None = None
        delegator = actor.session_id if actor is not None and agent is not None else None
        if delegator is not None:  # an agent a handler started: the host records who delegated
            parent = self.sessions.get(delegator)
            if parent is not None and not checked_tags:
                record = attrs.evolve(record, tags=parent.record.tags)  # the delegating chat's owner
            edge = LineageEdge(
                from_session_id=delegator, to_session_id=session_id, relation="delegated_from", created_at=record.created_at
            )
        return await self._add_session(SessionState(record=record), edge, trace_id)

    async def fork(
        self,
        parent: SessionState,
        anchor: TurnState | None,
        metadata: AiSessionDisplayMetadata | None,
        actor: Actor,
    ) -> SessionState:
        """Fork ``parent`` after ``anchor`` (default: its last completed turn)."""
        _check_metadata(metadata)
        self.check_open(f"fork session {parent.id!r}")
        await self.refuse_deleted(parent, "fork")
        if anchor is None:
            await catch_up(self.shared, parent, self.now)  # several hosts: the last turn any finished
            anchor = parent.last_completed
            if anchor is None:
                raise NoConversationError(
                    f"session {parent.id!r} has no completed turn to fork from; a fork needs a "
                    "completed turn: send a prompt first and fork once it has completed",
                    session_id=parent.id,
                )
        await self.before("session.fork", parent.id, author_of(actor), anchor=anchor)
        session_id = new_session_id()
        author = anchor.author
        now = self.now()
        record = SessionRecord(
            id=session_id,
            lineage=ForkLineage(
                parent_session_id=parent.id,
                parent_turn_ordinal=anchor.ordinal,
                parent_runner_id=anchor.runner_id,
                depth=parent.depth + 1,
                forked_at=now,
                parent_user_message_id=anchor.message_id if author.kind == "user" else None,
            ),
            metadata=metadata,
            model=parent.record.model,
            cwd=parent.record.cwd,
            created_at=now,
            agent_id=parent.record.agent_id,
            tags=parent.record.tags,
        )
        if anchor.artifact is None:  # one artifact per anchor turn, shared by its forks
            anchor.artifact = fork_artifact(anchor.id, anchor.ordinal, erased=anchor.erased_at is not None)
        edge = LineageEdge(
            from_session_id=parent.id, to_session_id=session_id, relation="branched_from", created_at=now, artifact=anchor.artifact
        )
        state = SessionState(record=record, parent=parent, anchor=anchor)
        made = await self._add_session(state, edge)
        self.telemetry.session_made("fork", made.id, anchor.id)
        return made

    async def spawn(self, parent: SessionState, metadata: AiSessionDisplayMetadata | None, actor: Actor) -> SessionState:
        _check_metadata(metadata)
        self.check_open(f"spawn from session {parent.id!r}")
        await self.refuse_deleted(parent, "spawn from")
        trigger = actor.trigger if actor is not None else None
        if trigger is None:
            where = "outside any mod handler (on a handle acting as the user)" if actor is None else f"in {_article(actor.kind)} {actor.kind} of mod {actor.mod_id!r}"
            raise SpawnContextError(
                f"spawn() of session {parent.id!r} was called {where}; a spawn needs a command or "
                "tool handler as its trigger: call it on a handle from a slash command, palette "
                "command or tool context, or use sessions.create() for a root session",
                session_id=parent.id,
            )
        await self.before("session.spawn", parent.id, author_of(actor), trigger=trigger)
        session_id = new_session_id()
        now = self.now()
        record = SessionRecord(
            id=session_id,
            lineage=SpawnLineage(
                parent_session_id=parent.id,
                parent_chat_uri=f"chat://{parent.id}",
                depth=parent.depth + 1,
                spawned_at=now,
                trigger=trigger,
            ),
            metadata=metadata,
            model=parent.record.model,
            cwd=parent.record.cwd,
            created_at=now,
            trigger_turn_id=actor.turn_id if actor is not None and trigger.kind == "tool" else None,
            tags=parent.record.tags,
        )
        edge = LineageEdge(from_session_id=parent.id, to_session_id=session_id, relation="spawned_by", created_at=now)
        made = await self._add_session(SessionState(record=record, parent=parent), edge)
        self.telemetry.session_made("spawn", made.id, actor.turn_id if actor is not None else None)
        return made

    async def wait_completed(self, turn: TurnState, actor: Actor) -> TurnState:
        """Wait for ``turn`` to finish; raise `TurnFailedError` unless it completed.

        Refuses at once (`ReentrantTurnError`) to wait for the turn the caller runs inside.
        """
        done = turn.done
        if done is not None and not done.is_set():  # running, or completed but not yet durable
            if turn.id in _running_turns(actor) or turn.session_id in running_turns_var.get():
                raise ReentrantTurnError(
                    f"a handler running inside turn {turn.ordinal} ({turn.id!r}) of session "
                    f"{turn.session_id!r} tried to fork that same turn, which would wait for itself "
                    "to complete; fork the session at its last completed turn (ctx.session.fork()) "
                    "or an earlier turn instead",
                    session_id=turn.session_id,
                )
            await done.wait()
        if turn.status != "completed":
            raise TurnFailedError(
                f"turn {turn.ordinal} ({turn.id!r}) of session {turn.session_id!r} failed "
                f"({turn.error}); only completed turns can be fork anchors: fork at an earlier "
                "completed turn",
                turn_id=turn.id,
                reason=turn.error or "failed",
            )
        return turn

    # -- turns --------------------------------------------------------------------------
    async def send(
        self,
        session: SessionState,
        message: AiMessage,
        actor: Actor,
        *,
        output_schema: JsonValue = None,
        job: JobCall | None = None,
    ) -> TurnState:
        """Run one turn of ``session`` driven by ``message``, as ``actor``; returns it finished.

        Turns of one session run one at a time, in the order their sends passed the
        ``before_action`` hooks: each waits in the session's FIFO queue (a lock), and a send
        cancelled while it waits leaves the queue without a trace. The turn is written
        ``running`` before the model is called, and finished once. The returned turn may
        have failed; the caller decides whether to raise. ``job`` is the job the send runs in
        (handed down by its caller, never ambient): its events carry its id, and it is told
        the turn once the turn is durable.
        """
        if not isinstance(message, (AiPromptMessage, AiNotificationMessage)):
            raise InvalidArgumentError(
                f"send() takes an AiPromptMessage or AiNotificationMessage, got {message!r}; "
                "use session.run(text) for a plain prompt",
                argument="message",
                value=message,
            )
        if session.id in _running_sessions(actor) or session.id in running_turns_var.get():
            raise ReentrantTurnError(
                f"a handler running inside a turn of session {session.id!r} tried to send to that "
                "same session, which would wait for itself; send to another session (fork or "
                "spawn one) or return your result from the handler instead",
                session_id=session.id,
            )
        self.check_open(f"send to session {session.id!r}")
        if session.deleted_at is not None:
            await self.refuse_deleted(session, "send to")
        author = author_of(actor)
        action = "session.notify" if isinstance(message, AiNotificationMessage) else "session.send"
        await self.before(action, session.id, author)
        queue = session.queue
        if queue is None:
            queue = session.queue = anyio.Lock()
        started: list[TurnState] = []
        with anyio.CancelScope() as closing:  # cancelled by close() if the host closes first
            self._inflight.add(closing)
            try:
                async with queue:
                    self.check_open(f"send to session {session.id!r}")  # closed while queued
                    async with across_hosts(self, session):  # several hosts: their order, their erasures
                        if session.deleted_at is not None:  # deleted while this send waited
                            await self.refuse_deleted(session, "send to")
                        turn = await self._turn(session, message, author, actor, output_schema, closing, started, job)
                        if turn.status == "completed" and self.after_turn is not None:
                            await self.after_turn(session, turn)  # proposed actions, before the next turn
                        return turn
            finally:
                self._inflight.discard(closing)
                if not self._inflight and self._idle is not None:
                    self._idle.set()
        if started:  # close() cancelled the running turn: it is recorded failed
            return started[0]
        raise HostClosedError(f"cannot send to session {session.id!r}: its host closed before the turn started")

    async def _turn(
        self,
        session: SessionState,
        message: AiMessage,
        author: Author,
        actor: Actor,
        output_schema: JsonValue,
        closing: anyio.CancelScope,
        started: list[TurnState],
        job: JobCall | None = None,
    ) -> TurnState:
        """Run a turn; call holding the session's queue. ``started`` receives the turn once it exists."""
        turn = TurnState(
            id=new_turn_id(),
            session_id=session.id,
            ordinal=session.next_ordinal,
            message=message,
            message_id=new_message_id(),
            author=author,
            runner_id=session.runner_id(),
            started_at=self.now(),
            done=anyio.Event(),
        )
        with anyio.CancelScope(shield=True):
            await self.store.begin_turn(turn.record())  # durable before the model is called
        started.append(turn)
        session.add_turn(turn)
        self.events.publish(
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
        )
        if isinstance(message, AiNotificationMessage):
            self.events.publish(
                lambda seq, at: NotificationEvent(
                    seq=seq, at=at, session_id=session.id, turn_id=turn.id, title=message.title, body=message.body
                )
            )
        span = self.telemetry.turn(session, turn)  # ended below, once the turn is durable
        try:
            if job is not None:  # inside the try: a store that fails this fails the turn, finished
                await job.turn_began(turn.id)
            with span.current():
                await self._run_turn(session, turn, actor, output_schema)
        except BaseException as exc:
            if turn.status == "running":
                turn.status = "failed"
                turn.error = (
                    "the host closed before it completed"
                    if closing.cancel_called
                    else "cancelled before it completed"
                    if isinstance(exc, anyio.get_cancelled_exc_class())
                    else f"host error: {_storable(repr(exc))}"
                )
            raise
        finally:
            if turn.status == "running":
                turn.status, turn.error = "failed", "did not complete"
            finished_at = self.now()
            finished = attrs.evolve(turn.record(), finished_at=finished_at)
            # What is shown is what is durable (API §17): readers see the turn running until
            # its record is written, so nobody forks at a turn a crash could still lose.
            outcome, turn.status = turn.status, "running"
            try:
                with anyio.CancelScope(shield=True):
                    await self.store.finish_turn(finished)
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
                self.events.publish(
                    lambda seq, at: TurnFinished(
                        seq=seq,
                        at=at,
                        session_id=session.id,
                        turn_id=turn.id,
                        status=turn.status,
                        reply=turn.reply,
                        error=turn.error,
                    )
                )
                span.end(turn)
                assert turn.done is not None
                turn.done.set()
        return turn

    async def _run_turn(self, session: SessionState, turn: TurnState, actor: Actor, output_schema: JsonValue) -> None:
        token = running_turns_var.set(running_turns_var.get() | {session.id})
        inside = (
            _running_sessions(actor) | {session.id},
            _running_turns(actor) | {turn.id},
        )
        try:
            message = turn.message
            request = ModelRequest(
                session_id=session.id,
                model=session.record.model,
                kind=message.type,
                text=text_of(message),
                message=message,
                history=history_view(session),  # the completed turns before this one
                output_schema=output_schema,
                instructions=self._instructions(session),
                tools=self.tool_specs if self.mcp is None else (*self.tool_specs, *await self.mcp.specs()),
            )
            rounds = 0
            while True:
                try:
                    with self.telemetry.chat(session, turn, request) as call:
                        reply, usage = await self._ask_model(session, turn, request)
                        call.replied(reply, usage=usage)
                except HandlerFailed as failed:
                    turn.status, turn.error = "failed", _storable(failed.reason)
                    turn.failure = "timeout" if failed.timed_out else "model_failed"
                    return
                turn.usage = add_usage(turn.usage, usage)  # spent even when the reply is refused below
                if isinstance(reply, ToolCall):
                    rounds += 1
                    if rounds > self.max_tool_rounds:
                        turn.status = "failed"
                        turn.error = (
                            f"the model asked for more than {self.max_tool_rounds} tool calls in one "
                            "turn; raise Host(max_tool_rounds=...) if that is expected"
                        )
                        return
                    try:
                        result = await self._call_tool(session, turn, reply, inside)
                    except HandlerFailed as failed:
                        turn.status, turn.error = "failed", _storable(failed.reason)
                        turn.failure = "timeout" if failed.timed_out else "handler_failed"
                        return
                    request = attrs.evolve(request, tool_results=(*request.tool_results, result))
                    continue
                if isinstance(reply, str):
                    size = utf8_size(reply)
                    reply = ReplyTooLong(size=size, streamed=False) if size > self.max_reply_bytes else reply
                if isinstance(reply, ReplyTooLong):
                    turn.status, turn.error = "failed", reply.error(self.max_reply_bytes)
                    return
                if not isinstance(reply, str):
                    turn.status = "failed"
                    turn.error = _storable(f"the model returned {reply!r}; a model must return reply text or a ToolCall")
                    return
                problem = _unstorable(reply)
                if problem is not None:
                    turn.status = "failed"
                    turn.error = (
                        f"the model's reply holds text that cannot be stored ({problem}); "
                        "a reply must be valid Unicode text"
                    )
                    return
                turn.reply, turn.status = reply, "completed"
                turn.widgets, turn.widget_errors = place_widgets(reply, self.tables.widgets)  # kept with the record
                return
        finally:
            running_turns_var.reset(token)

    async def _ask_model(self, session: SessionState, turn: TurnState, request: ModelRequest) -> tuple[object, Usage | None]:
        """One model call: its answer, and the `Usage` it reported (``None``: none).

        Every model call of the host goes through here, so this is the one place that
        sees each call's reply and usage. The answer is ``respond(request)`` (a `Reply`
        becomes its text), or, for a model that streams (has ``stream``), its text chunks,
        each published as ``reply_delta`` (a `ToolCall` it yields ends the stream, a
        `Usage` it yields is the call's usage). The streamed reply is every chunk of the
        turn joined, text streamed before a tool call included, so it always equals the
        deltas the turn published. Raises `HandlerFailed` like `call_handler`."""
        stream = getattr(self.model, "stream", None)
        if stream is None or not callable(stream):
            answer = await call_handler(f"model {self.model.name!r}", self.model.respond, (request,), timeout=self.model_timeout)
            if isinstance(answer, Reply):
                return answer.text, answer.usage
            return answer, answer.usage if isinstance(answer, ToolCall) else None
        what = f"model {self.model.name!r}"
        usage: Usage | None = None

        if turn.streamed is None:
            turn.streamed = []
        chunks = turn.streamed  # across the turn's rounds

        limit = self.max_reply_bytes
        size = sum(utf8_size(c) for c in chunks)  # text of earlier rounds counts too

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
                        return chunk
                    if not isinstance(chunk, str):
                        return chunk  # refused below like any bad reply
                    size += utf8_size(chunk)
                    if size > limit:  # read no further; keep nothing of it
                        chunks.clear()
                        return ReplyTooLong(size=size, streamed=True)
                    if chunk:
                        chunks.append(chunk)
                        self.events.publish(_delta(session.id, turn.id, chunk))
            finally:  # a stream left early (a ToolCall, a bad chunk) is closed now, not by the GC
                aclose = getattr(iterator, "aclose", None)
                if callable(aclose):
                    await aclose()
            return "".join(chunks)

        answer = await call_handler(what, consume, (), timeout=self.model_timeout)
        return answer, usage

    def _instructions(self, session: SessionState) -> str | None:
        agent_id = session.record.agent_id
        if agent_id is None or agent_id not in self.tables.agents:
            return None
        return self.tables.agents[agent_id][1].instructions

    async def _call_tool(
        self,
        session: SessionState,
        turn: TurnState,
        call: ToolCall,
        inside: tuple[frozenset[SessionId], frozenset[TurnId]],
    ) -> ToolResult:
        """Run one tool call of ``turn``, publishing ``tool_called`` then ``tool_finished``."""
        call_id = call.call_id or new_call_id()
        started_at = self.now()
        recorded = _recorded_input(call.input)  # what the record and the event log can hold
        self.events.publish(
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
            with self.telemetry.tool(turn, _label(call_id), _label(call.name), recorded) as run:
                result = await self._run_tool(session, turn, call, call_id, inside)
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
                    output=None if output is None else _storable(output),
                    error=_storable(error) if error is not None else None if result is not None else "it did not finish",
                    started_at=started_at,
                    finished_at=self.now(),
                ),
            )  # kept with the turn's record (API §17)
            done = turn.tool_calls[-1]
            self.events.publish(
                lambda seq, at: ToolFinished(
                    seq=seq, at=at, session_id=session.id, turn_id=turn.id, call_id=done.call_id, output=done.output, error=error and done.error
                )
            )
        return result

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

        if self.mcp is not None and call.name not in self.tables.tools and self.mcp.serves(call.name):
            return await self.mcp.call(session.id, turn.id, call, call_id)
        entry = self.tables.tools.get(call.name)
        if entry is None:
            known = ", ".join(repr(n) for n in self.tables.tools) or "none"
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
            running_sessions=inside[0],
            running_turns=inside[1],
        )
        ctx = self.tool_context(self, session, frame)
        output = await call_handler(
            f"tool {declared.name!r} of mod {mod.id!r}",
            declared.run,
            (value, ctx),
            timeout=self.handler_timeout,
        )
        return ToolResult(call_id=call_id, name=call.name, input=call.input, output=_render_output(output))

    async def run(self, session: SessionState, prompt: str, actor: Actor, output_schema: JsonValue = None) -> TurnState:
        """One prompt turn that must complete; raises `TurnFailedError` otherwise."""
        turn = await self.send(session, _prompt(prompt), actor, output_schema=output_schema)
        if turn.status != "completed":
            raise turn_failed(turn)
        return turn

    @staticmethod
    def output_schema(output_type: type[object]) -> JsonValue:
        """The JSON Schema the model is asked to match, when the type has one."""
        try:
            return json_schema(output_type)
        except SchemaError:
            return None

    @staticmethod
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


def checked_now(clock: Callable[[], datetime]) -> datetime:
    """``clock()``, refused unless it is a timezone-aware datetime."""
    value = clock()
    if not isinstance(value, datetime) or value.tzinfo is None or value.utcoffset() is None:
        what = "a naive datetime" if isinstance(value, datetime) else "a value that is not a datetime"
        raise InvalidArgumentError(
            f"the host clock returned {what}, {value!r}; return timezone-aware datetimes, "
            "e.g. Host(clock=lambda: datetime.now(timezone.utc))",
            argument="clock",
            value=value,
        )
    return value


def _running_sessions(actor: Actor) -> frozenset[SessionId]:
    return frozenset() if actor is None else actor.running_sessions


def _running_turns(actor: Actor) -> frozenset[TurnId]:
    return frozenset() if actor is None else actor.running_turns


def _unstorable(text: str) -> str | None:
    """Why ``text`` cannot be written to a store (a lone surrogate), or ``None``."""
    try:
        text.encode("utf-8")
    except UnicodeEncodeError as exc:
        return f"{exc.reason} at position {exc.start}"
    return None


def _storable(text: str) -> str:
    """A message of ours made storable: lone surrogates quoted as escapes."""
    return text.encode("utf-8", "backslashreplace").decode("utf-8")


def _label(value: object) -> str:
    """A model's call id or tool name as the record keeps it: storable, never empty."""
    text = value if isinstance(value, str) else repr(value)
    return _storable(text) if text.strip() else repr(text)


def _recorded_input(value: object) -> FrozenJsonObject:
    """A model's tool input as the record keeps it: each text `_storable`; input that is not
    a JSON object the record can hold (nested past `MAX_DEPTH`, not JSON) is kept as what it was."""
    try:
        return freeze_object(_storable_json(value, 0), type_name="a tool call's input")
    except (SerializationError, RecursionError) as exc:
        problem = "it is nested too deeply" if isinstance(exc, RecursionError) else str(exc)
        return freeze_object({"not_kept": _storable(f"the input could not be recorded: {problem}"[:500])})


def _storable_json(value: object, depth: int) -> object:
    """JSON data from outside (a model's tool input) made storable: each text `_storable`."""
    if depth > MAX_DEPTH:
        raise SerializationError("it is nested too deeply", value=None, type_name="a tool call's input")
    if isinstance(value, str):
        return _storable(value)
    if isinstance(value, Mapping):
        return {_storable(str(k)): _storable_json(v, depth + 1) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_storable_json(v, depth + 1) for v in value]
    return value


def _prompt(text: object) -> AiPromptMessage:
    if not isinstance(text, str):
        raise InvalidArgumentError(f"a prompt is a str, got {show(text)}; pass the text to send", argument="prompt", value=text)
    return AiPromptMessage(text=text)


def _check_text(argument: str, value: object) -> None:
    if value is not None and (not isinstance(value, str) or not value or _unstorable(value) is not None):
        raise InvalidArgumentError(
            f"{argument} must be a non-empty str of valid text or None, got {show(value)}",
            argument=argument,
            value=value,
        )


def _render_output(value: object) -> str:
    if value is None:
        return ""
    if isinstance(value, str):
        return value
    if attrs.has(type(value)) or isinstance(value, (dict, list, tuple, int, float, bool)):
        return json.dumps(unstructure(value), sort_keys=True)
    return str(value)


def _article(noun: str) -> str:
    return "an" if noun[:1] in ("a", "e", "i", "o", "u") else "a"


def _check_metadata(metadata: object) -> None:
    if metadata is not None and not isinstance(metadata, AiSessionDisplayMetadata):
        raise InvalidArgumentError(
            f"metadata must be an AiSessionDisplayMetadata, got {show(metadata)}; "
            "write metadata=AiSessionDisplayMetadata(label='Task')",
            argument="metadata",
            value=metadata,
        )


def _damaged(store: Store, problem: str) -> StoreError:
    path = getattr(store, "path", None)
    where = "the store" if path is None else f"the store {str(path)!r}"
    return StoreError(
        f"{where} is damaged: {problem}; the records themselves are wrong: see every problem "
        "with 'host-sim fsck --store PATH'",
        path=None if path is None else str(path),
    )


def _check_tags(tags: object) -> Mapping[str, str]:
    """Tags as given to ``sessions.create``: a mapping of non-empty str keys to str values."""
    if tags is None:
        return {}
    if not isinstance(tags, Mapping):
        raise InvalidArgumentError(
            f"tags must be a mapping of str to str, like {{'user': 'alice'}}, got {show(tags)}",
            argument="tags",
            value=tags,
        )
    for key, value in tags.items():
        if not isinstance(key, str) or not key or not isinstance(value, str):
            raise InvalidArgumentError(
                f"tags map non-empty str keys to str values; got {show(key)}: {show(value)}",
                argument="tags",
                value=tags,
            )
        for text in (key, value):
            problem = _unstorable(text)
            if problem is not None:
                raise InvalidArgumentError(
                    f"tag {show(key)} holds text that cannot be stored ({problem})", argument="tags", value=tags
                )
    return dict(tags)


def _turn_erased(record: TurnRecord) -> Callable[[int, datetime], TurnErased]:
    return lambda seq, at: TurnErased(seq=seq, at=at, session_id=record.session_id, turn_id=record.id)


def _delta(session_id: SessionId, turn_id: TurnId, text: str) -> Callable[[int, datetime], ReplyDelta]:
    return lambda seq, at: ReplyDelta(seq=None, at=at, session_id=session_id, turn_id=turn_id, text=text)

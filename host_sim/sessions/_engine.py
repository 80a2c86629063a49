"""The engine behind `Host`: sends, forks, spawns and hooks.

What the host keeps of the store (the sessions, their turns, deletions, other hosts'
facts) is `SessionCache`'s (``_cache.py``); the engine acts through it.

What one turn does (the model, its tools, its reply) is `TurnRunner`'s (``_turns.py``);
the engine decides when it runs. Turns of one session run one at a time in arrival order:
each send waits in the session's FIFO queue. Different sessions run concurrently. Everything runs in the task of whoever
asked for it (``send``, ``submit``...), so the host starts no task it does not own. Each
operation is one store transaction, written before the live state changes.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterator, Mapping, Sequence
from datetime import datetime
from typing import TYPE_CHECKING, Protocol, final

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
    Deny,
    ForkLineage,
    HostClosedError,
    InvalidArgumentError,
    Mod,
    NoConversationError,
    ReentrantTurnError,
    RootLineage,
    SessionId,
    SpawnContextError,
    SpawnLineage,
    SpawnTrigger,
    ToolContext,
    TurnFailedError,
    TurnId,
)
from modular_sdk._rules import show, unstorable_text
from modular_sdk._schema import JsonValue

from ..lanes._calling import Actor, HandlerFrame, author_of, sessions_in_turn_var
from ..lanes._ext_host import HandlerFailed, call_handler
from ..lineage._provenance import delete_session
from ..lineage._types import LineageEdge, SessionNode
from ..memory._compaction import Compactor
from ..models._protocol import Model
from ..observability import Telemetry
from ..stores._errors import StoreError
from ..stores._protocol import IntegratorStore, Store
from ..stores._records import SessionRecord, fork_artifact
from ._cache import SessionCache
from ._events import EventHub, EventStream, SessionCreated
from ._explain import turn_failed
from ._ids import checked_request_id, new_session_id, turn_id_for
from ._state import SessionState, TurnState
from ._tables import ModTables
from ._turns import JobCall, TurnRunner, enclosing_sessions, enclosing_turns

if TYPE_CHECKING:
    from ..lineage._graph import LineageGraph
    from ..mcp._client import McpTools
    from ..traces._service import TraceLinker

__all__ = ["Engine", "Limits", "ProposalBook"]


@attrs.frozen(kw_only=True)
class Limits:
    """What the host bounds, as given to it (``Host(handler_timeout=..., model_timeout=...,
    max_tool_rounds=..., max_reply_bytes=...)``): seconds for a handler and a model call
    (``None``: no limit), tool rounds in one turn, UTF-8 bytes of one reply. Immutable."""

    handler_timeout: float | None
    model_timeout: float | None
    max_tool_rounds: int
    max_reply_bytes: int


class ProposalBook(Protocol):
    """Where what a completed turn's reply proposed is recorded, with the engine that ran the
    turn (the host's `ActionBook`: a rule-confirmed action runs through that engine)."""

    async def after_turn(self, engine: Engine, session: SessionState, turn: TurnState) -> None: ...


@final
class _Proposals:
    """The engine's `TurnObserver`: each completed turn, shown to the `ProposalBook` with the engine."""

    __slots__ = ("_book", "_engine")

    def __init__(self, engine: Engine, book: ProposalBook) -> None:
        self._engine, self._book = engine, book

    async def after_turn(self, session: SessionState, turn: TurnState) -> None:
        await self._book.after_turn(self._engine, session, turn)


class Engine:
    """Runs everything the handles ask for, over the sessions its `SessionCache` holds.

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
        limits: Limits,
        cwd: str,
        tool_context: Callable[[Engine, SessionState, HandlerFrame], ToolContext],
        integrator_store: IntegratorStore,
        events: EventHub,
        cache: SessionCache,
        mcp: McpTools | None = None,
        linker: TraceLinker | None = None,
        actions: ProposalBook | None = None,
        telemetry: Telemetry | None = None,
        context: Compactor | None = None,
    ) -> None:
        self.tables = tables
        self.model = model  # its name is a new session's default model; the turns call it
        self.store = store
        self.graph = graph
        self.clock = clock
        self.handler_timeout = limits.handler_timeout
        self.cwd = cwd
        self.telemetry = telemetry if telemetry is not None else Telemetry()  # OpenTelemetry (docs/observability.md)
        self.cache = cache  # what this host keeps of the store: every read and fact goes through it
        self.events = events
        self.integrator_store = integrator_store  # the integrator's records: the store itself, or a MemoryIntegratorStore over it
        self._inflight: set[anyio.CancelScope] = set()  # turns running in callers' tasks
        self._idle: anyio.Event | None = None
        self._closed = False
        # Traces (host_sim/traces), passed by the host: the linker writes a new session and
        # its trace link in one transaction (a fork or spawn joins its parent's trace) and
        # links what ``ctx.report_output`` reports; ``actions`` records what a completed
        # turn's reply proposed (mod actions).
        self._linker = linker
        # What runs one turn (the model, its tools, its reply): ``send`` calls it holding the
        # session's queue. ``tool_context`` is made by the handles module (the engine never
        # imports it); ``mcp``: the mods' MCP servers, their tools beside the mods' own (docs/mcp.md).
        self.turns = TurnRunner(
            tables=tables,
            model=model,
            store=store,
            events=events,
            cache=cache,
            telemetry=self.telemetry,
            now=self.now,
            tool_context=lambda session, frame: tool_context(self, session, frame),
            handler_timeout=limits.handler_timeout,
            model_timeout=limits.model_timeout,
            max_tool_rounds=limits.max_tool_rounds,
            max_reply_bytes=limits.max_reply_bytes,
            mcp=mcp,
            after_turn=None if actions is None else _Proposals(self, actions),
            context=context,
        )

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

    @property
    def links_outputs(self) -> bool:
        """Whether ``report_output`` links outputs to traces (an engine a Host made)."""
        return self._linker is not None

    async def report_output(
        self, session_id: SessionId, kind: str, output_id: str, turn_id: TurnId | None, position: int | None
    ) -> None:
        """Link an output a handler reported to its session's trace (`TraceLinker.report_output`)."""
        assert self._linker is not None, "check links_outputs first"
        await self._linker.report_output(session_id, kind, output_id, turn_id, position)

    # -- time ---------------------------------------------------------------------------
    def now(self) -> datetime:
        return checked_now(self.clock)

    # -- lookup (lazy: a session is read from the store the first time it is touched) ----
    def agent(self, agent_id: str) -> tuple[Mod, Agent] | None:
        """The agent ``agent_id`` a loaded mod declares, with its mod (None: none declares it)."""
        return self.tables.agents.get(agent_id)

    def agent_ids(self) -> list[str]:
        """The ids of the agents the loaded mods declare, in load order."""
        return list(self.tables.agents)

    def carried(self) -> contextlib.AbstractContextManager[object]:
        """The caller's tracing context, to carry into work that runs in another task (a job)."""
        return self.telemetry.carried()

    def subscribe(self, buffer: int, after: int | None) -> contextlib.AbstractAsyncContextManager[EventStream]:
        """The host's event stream (`EventHub.subscribe`), for a scope's view of it."""
        return self.events.subscribe(buffer, after)

    async def page_sessions(
        self, tags: Mapping[str, str], roots_only: bool, limit: int, before: int | None
    ) -> tuple[Sequence[SessionRecord], int | None]:
        """One page of live sessions from the integrator's records (`IntegratorStore.page_sessions`)."""
        return await self.integrator_store.page_sessions(tags, roots_only, limit, before)

    async def session_record(self, session_id: SessionId) -> SessionRecord | None:
        """Session ``session_id`` as stored (None: not stored), read from the store, not the cache."""
        return await self.store.get_session(session_id)

    async def load(self, session_id: object) -> SessionState:
        """The session (`SessionCache.load`: read from the store on first use)."""
        return await self.cache.load(session_id)

    def held(self, session_id: SessionId) -> SessionState | None:
        """The session if this host holds it already (no read)."""
        return self.cache.held(session_id)

    async def load_turn(self, turn_or_message_id: object) -> tuple[SessionState, TurnState]:
        """A turn (by turn id or message id) and the session that ran it; `UnknownTurnError` otherwise."""
        return await self.cache.load_turn(turn_or_message_id)

    async def caught_up(self, session: SessionState) -> None:
        """What other hosts finished in ``session`` is held (`SessionCache.finished`)."""
        await self.cache.finished(session)

    async def delete(self, state: SessionState) -> None:
        """Delete a session: erase it through the one erasure walk (its own turns as forget
        does, and all it holds), then hide it (`IntegratorStore`), holding the erasure gate."""

        async def hide() -> None:
            at = self.now()
            with self.cache.deleting(state):  # its session_deleted commits with the deletion (API §23)
                await self.integrator_store.delete_session(state.id, at)
            self.cache.deleted(state, at)

        await delete_session(self.store, self.integrator_store, state.id, now=self.now, facts=self.cache, hide=hide)
        await self.events.written()  # its turn_erased and session_deleted, before the caller goes on

    async def refuse_deleted(self, session: SessionState, what: str) -> None:
        """Raise `SessionDeletedError` when ``session`` was deleted, on this host or another."""
        await self.cache.refuse_deleted(session, what)

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
        created = lambda seq, at: SessionCreated(  # noqa: E731
            seq=seq, at=at, session_id=record.id, lineage=record.lineage, tags=record.tags
        )
        # A started write always finishes and is seen; its event commits with it (docs/embedding.md).
        with anyio.CancelScope(shield=True), self.events.committing(created):
            if self._linker is not None:  # traces: the session's trace link in the same transaction
                await self._linker.link_session(record, node, edge, trace_id)
            else:
                await self.store.create_session(record, node, edge)
        # A reader (list, children) may have loaded it from the store meanwhile: keep one state.
        live = self.cache.keep(state)
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
            parent = self.cache.held(delegator)
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
        self.cache.refuse_known_deleted(parent, "fork")  # exact: the fork's transaction checks it (`child_of`)
        if anchor is None:
            await self.cache.finished(parent)  # several hosts: the last turn any finished
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
        async with self.cache.child_of(parent, "fork"):
            made = await self._add_session(state, edge)
        self.telemetry.session_made("fork", made.id, anchor.id)
        return made

    async def spawn(self, parent: SessionState, metadata: AiSessionDisplayMetadata | None, actor: Actor) -> SessionState:
        _check_metadata(metadata)
        self.check_open(f"spawn from session {parent.id!r}")
        self.cache.refuse_known_deleted(parent, "spawn from")  # exact: the spawn's transaction checks it (`child_of`)
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
        async with self.cache.child_of(parent, "spawn from"):
            made = await self._add_session(SessionState(record=record, parent=parent), edge)
        self.telemetry.session_made("spawn", made.id, actor.turn_id if actor is not None else None)
        return made

    async def wait_completed(self, turn: TurnState, actor: Actor) -> TurnState:
        """Wait for ``turn`` to finish; raise `TurnFailedError` unless it completed.

        Refuses at once (`ReentrantTurnError`) to wait for the turn the caller runs inside.
        """
        done = turn.done
        if done is not None and not done.is_set():  # running, or completed but not yet durable
            if turn.id in enclosing_turns(actor) or turn.session_id in sessions_in_turn_var.get():
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
        request_id: str | None = None,
    ) -> TurnState:
        """Run one turn of ``session`` driven by ``message``, as ``actor``; returns it finished.

        With ``request_id`` (a caller's key, docs/embedding.md) the turn's id is derived from
        it: a send with a key this session already stored returns that turn (waiting for it
        when it runs) instead of storing the message again.

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
        if session.id in enclosing_sessions(actor) or session.id in sessions_in_turn_var.get():
            raise ReentrantTurnError(
                f"a handler running inside a turn of session {session.id!r} tried to send to that "
                "same session, which would wait for itself; send to another session (fork or "
                "spawn one) or return your result from the handler instead",
                session_id=session.id,
            )
        self.check_open(f"send to session {session.id!r}")
        turn_id = None if request_id is None else turn_id_for(session.id, checked_request_id(request_id))
        if turn_id is not None and (earlier := await self._requested(session, turn_id)) is not None:
            return earlier  # a retry: the first attempt was stored
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
                    async with self.cache.for_turn(session):  # several hosts: their order, their erasures
                        if session.deleted_at is not None:  # deleted while this send waited
                            await self.refuse_deleted(session, "send to")
                        try:
                            return await self.turns.run(
                                session, message, author, actor, output_schema, closing, started, job, turn_id
                            )
                        except StoreError:
                            if turn_id is not None and (earlier := await self._requested(session, turn_id)) is not None:
                                return earlier  # the same request, stored meanwhile
                            raise
            finally:
                self._inflight.discard(closing)
                if not self._inflight and self._idle is not None:
                    self._idle.set()
        if started:  # close() cancelled the running turn: it is recorded failed
            return started[0]
        raise HostClosedError(f"cannot send to session {session.id!r}: its host closed before the turn started")

    async def _requested(self, session: SessionState, turn_id: TurnId) -> TurnState | None:
        """The turn a request stored in ``session`` (its id derived from the key), finished
        (waited for while it runs), as the store has it; ``None`` when none was stored."""
        record = await self.store.find_turn(turn_id)
        while record is not None and record.id == turn_id and record.status == "running":
            mine = next((t for t in session.own or () if t.id == turn_id and t.done is not None), None)
            if mine is not None and mine.done is not None:
                await mine.done.wait()
            else:
                await anyio.sleep(0.05)  # running on another host (several hosts)
            record = await self.store.find_turn(turn_id)
        if record is None or record.id != turn_id or record.session_id != session.id:
            return None
        mine = next((t for t in session.own or () if t.id == turn_id), None)
        if mine is not None and mine.status == record.status:
            return mine
        return TurnState.from_record(record)  # the store's word (this host's copy said otherwise)

    async def run(self, session: SessionState, prompt: str, actor: Actor, output_schema: JsonValue = None) -> TurnState:
        """One prompt turn that must complete; raises `TurnFailedError` otherwise."""
        turn = await self.send(session, _prompt(prompt), actor, output_schema=output_schema)
        if turn.status != "completed":
            raise turn_failed(turn)
        return turn


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


def _prompt(text: object) -> AiPromptMessage:
    if not isinstance(text, str):
        raise InvalidArgumentError(f"a prompt is a str, got {show(text)}; pass the text to send", argument="prompt", value=text)
    return AiPromptMessage(text=text)


def _check_text(argument: str, value: object) -> None:
    if value is not None and (not isinstance(value, str) or not value or unstorable_text(value) is not None):
        raise InvalidArgumentError(
            f"{argument} must be a non-empty str of valid text or None, got {show(value)}",
            argument=argument,
            value=value,
        )


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
            problem = unstorable_text(text)
            if problem is not None:
                raise InvalidArgumentError(
                    f"the tag {show(key)}: {show(value)} {problem}; tags are text a store can hold",
                    argument="tags",
                    value=tags,
                )
    return dict(tags)

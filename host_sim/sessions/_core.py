"""The open host: what `Host.__aenter__` builds, and the host's surface written once, with a scope.

`Host` and `ScopedHost` are two doors onto one `HostCore`. Each method here takes the
``scope`` it answers within: ``None`` is the host's own view (every session), a `Scope`
is a tenant's (``host.scoped(tags)``). Visibility is decided by `_scope` (one check per
kind of id, answering an id outside the scope exactly as a missing one), so a method is
written once and a scoped view is the same method with a scope, not a copy of it.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from datetime import datetime
from typing import TYPE_CHECKING, final

from modular_sdk import HostClosedError, InvalidArgumentError, MemoryAuthor, SessionId
from modular_sdk._rules import show

from ..lineage._graph import LineageGraph
from ..memory._book import Memory
from ..stores._records import Invocation, JobStatus
from ..traces._service import Traces, require_traces
from ..traces._types import ActionRecord, ActionStatus, PendingAction
from ._actions import ActionBook
from ._approvals import Approvals
from ._commands import Commands
from ._completions import Completions
from ._handles import AiSessionsImpl, SessionHandle, TurnHandle, check_list_tags
from ._ids import checked_request_id
from ._jobs import Job, JobBook, JobPage
from ._memory_events import MemoryEvents
from ._scope import Scope, check_action, job_record, session_state, turn_record
from ._scope_seq import ScopeNumbers
from ._state import SessionState, TurnState, history
from ._submission import Submission
from ._transcript import render_transcript

if TYPE_CHECKING:
    from ..stores._protocol import IntegratorStore
    from ._engine import Engine

__all__ = ["HostCore"]


@final
class HostCore:
    """The open host's parts (engine, lineage graph, actions, approvals, commands, jobs,
    traces, scope numbering) and the surface `Host` and `ScopedHost` share, each method
    taking the scope it answers within (``None``: every session)."""

    def __init__(
        self,
        *,
        engine: Engine,
        graph: LineageGraph,
        actions: ActionBook,
        commands: Commands,
        jobs: JobBook,
        integrator_store: IntegratorStore,
        traces: Traces | None,
        numbers: ScopeNumbers,
        now: Callable[[], datetime],
        completions: Callable[[str], Completions],
        owner: object,
    ) -> None:
        self.engine = engine
        self.completions = completions  # slash-command typeahead: the mods' commands, no tenant data
        self.owner = owner  # the Host this core is the open state of (integration layers key by it)
        self.graph = graph
        self.numbers = numbers  # each scope's own event numbering
        self._actions = actions
        self._commands = commands
        self._jobs = jobs
        self._integrator_store = integrator_store  # read marks, invocations, notifications
        self._traces = traces
        self._declared = actions.declared_types  # the actions the mods declare (what a rule may allow)
        self._now = now
        self._approvals = Approvals._create(engine, self._declared, now, None)
        self._sessions = AiSessionsImpl._create(engine, None)
        self._closed = False

    def close(self) -> None:
        """The host closed: every door onto it raises `HostClosedError` from now on."""
        self._closed = True

    def opened(self) -> Engine:
        """The engine of the open host; `HostClosedError` once it closed."""
        if self._closed:
            raise HostClosedError(
                "this Host is closed; use it inside 'async with Host(...) as host:'", state="closed"
            )
        return self.engine

    async def state(self, session: SessionHandle | SessionId | str, scope: Scope | None) -> SessionState:
        """The session a handle or id names, if ``scope`` sees it; `UnknownSessionError` (as for
        a missing id) otherwise."""
        engine = self.opened()
        if isinstance(session, SessionHandle):
            session_id: str = session.id
        elif isinstance(session, str):
            session_id = session
        else:
            raise InvalidArgumentError(
                f"expected a session handle or id, got {show(session)}; pass a handle from "
                "host.sessions or its .id",
                argument="session",
                value=session,
            )
        if scope is None:
            return await engine.load(session_id)
        return await session_state(engine, scope, session_id)

    # -- parts -------------------------------------------------------------------------------
    def sessions(self, scope: Scope | None) -> AiSessionsImpl:
        """The session catalogue within ``scope``."""
        engine = self.opened()
        return self._sessions if scope is None else AiSessionsImpl._create(engine, None, scope)

    def memory(self, author: MemoryAuthor, scope: Scope | None) -> Memory:
        """Memory records written by ``author``, of the sessions ``scope`` sees."""
        engine = self.opened()
        return Memory._create(
            engine.store,
            clock=engine.now,
            author=author,
            tags=None if scope is None else scope.tags,
            notices=MemoryEvents(engine.events, engine.telemetry),
        )

    def traces(self) -> Traces:
        """The host's traces; `TraceError` for a store that keeps none."""
        self.opened()
        if self._traces is None:
            require_traces(self.engine.store)  # TraceError naming the store
        assert self._traces is not None
        return self._traces

    def approvals(self, scope: Scope | None) -> Approvals:
        """Standing approvals within ``scope`` (a rule it allows carries the scope's tags)."""
        engine = self.opened()
        return self._approvals if scope is None else Approvals._create(engine, self._declared, self._now, scope)

    # -- what the user types ---------------------------------------------------------------
    async def submit(
        self, session: SessionHandle | SessionId | str, text: str, request_id: str | None, scope: Scope | None
    ) -> Submission:
        if request_id is not None:
            checked_request_id(request_id)
        return await self._commands.submit(await self.state(session, scope), text, None, request_id)

    async def start(
        self, session: SessionHandle | SessionId | str, text: str, request_id: str | None, scope: Scope | None
    ) -> Job:
        engine = self.opened()
        state = await self.state(session, scope)
        if not isinstance(text, str):
            raise InvalidArgumentError(f"start() takes the typed text as a str, got {show(text)}", argument="text", value=text)
        await engine.refuse_deleted(state, "start a job in")
        return await self._jobs.start(
            state.id,
            text,
            within=engine.carried(),
            request_id=None if request_id is None else checked_request_id(request_id),
        )

    async def run_command(self, command_id: str, scope: Scope | None) -> Submission:
        self.opened()
        return await self._commands.palette(command_id, scope)

    # -- reading -------------------------------------------------------------------------------
    async def log(self, session: SessionHandle | SessionId | str, scope: Scope | None) -> list[TurnHandle | Invocation]:
        engine = self.opened()
        state = await self.state(session, scope)
        return [
            item if isinstance(item, Invocation) else TurnHandle._create(engine, state, item, None)
            for item in await self._interleaved(state)
        ]

    async def transcript(self, session: SessionHandle | SessionId | str, scope: Scope | None) -> str:
        state = await self.state(session, scope)
        return render_transcript(await self._interleaved(state), state.id)

    async def _interleaved(self, state: SessionState) -> list[TurnState | Invocation]:
        """A session's turns (inherited ones included) and invocations, in the order they started."""
        invocations = sorted(await self._integrator_store.invocations_of(state.id), key=lambda i: i.position)
        out: list[TurnState | Invocation] = []
        index = 0
        for turn in history(state):
            while index < len(invocations) and invocations[index].position <= turn.ordinal:
                out.append(invocations[index])
                index += 1
            out.append(turn)
        out += invocations[index:]
        return out

    async def _check_job(self, job_id: str, scope: Scope | None) -> None:
        engine = self.opened()
        if scope is not None:
            await job_record(engine.integrator_store, engine.store, scope, job_id)

    async def job(self, job_id: str, scope: Scope | None) -> Job:
        await self._check_job(job_id, scope)
        return await self._jobs.job(job_id)

    async def cancel_job(self, job_id: str, scope: Scope | None) -> None:
        await self._check_job(job_id, scope)
        await self._jobs.cancel(job_id)

    async def jobs(
        self,
        session: SessionHandle | SessionId | str | None,
        status: JobStatus | None,
        tags: Mapping[str, str] | None,
        limit: int,
        after: str | None,
        scope: Scope | None,
    ) -> JobPage:
        self.opened()
        session_id = None if session is None else (await self.state(session, scope)).id
        return await self._jobs.page(session_id, status, tags if scope is None else scope.merged(tags), limit, after)

    async def notifications(
        self,
        session: SessionHandle | SessionId | str | None,
        unread_only: bool,
        tags: Mapping[str, str] | None,
        scope: Scope | None,
    ) -> list[TurnHandle]:
        engine = self.opened()
        checked = check_list_tags(tags if scope is None else scope.merged(tags))
        if not isinstance(unread_only, bool):
            raise InvalidArgumentError(
                f"unread_only must be True or False, got {unread_only!r}", argument="unread_only", value=unread_only
            )
        session_id = None if session is None else (await self.state(session, scope)).id
        handles: list[TurnHandle] = []
        for record in await self._integrator_store.notification_turns(session_id, unread_only, checked):
            state, turn = await engine.load_turn(record.id)
            handles.append(TurnHandle._create(engine, state, turn, None))
        return handles

    async def mark_read(self, turn_id: str, scope: Scope | None) -> None:
        engine = self.opened()
        if scope is not None:
            await turn_record(engine.store, scope, turn_id)
        _, turn = await engine.load_turn(turn_id)
        await self._integrator_store.mark_read(turn.id, engine.now())

    # -- actions -------------------------------------------------------------------------------
    async def pending_actions(self, session: SessionHandle | SessionId | str, scope: Scope | None) -> list[PendingAction]:
        return await self._actions.pending(self.engine, (await self.state(session, scope)).id)

    async def actions(
        self, session: SessionHandle | SessionId | str, status: ActionStatus | None, scope: Scope | None
    ) -> list[ActionRecord]:
        return await self._actions.decisions(self.engine, (await self.state(session, scope)).id, status)

    async def _check_action(self, action_id: str, verb: str, scope: Scope | None) -> str | None:
        """Refuse an action proposed outside ``scope`` as one never proposed; who decides by
        default: the user the scope is one of (if it is one user's)."""
        engine = self.opened()
        if scope is None:
            return None
        await check_action(engine.store, require_traces(engine.store), scope, action_id, verb)
        return scope.tags.get("user")

    async def confirm(self, action_id: str, by: str | None, reason: str | None, scope: Scope | None) -> Submission:
        user = await self._check_action(action_id, "confirm", scope)
        text, error = await self._actions.confirm(self.engine, action_id, user if by is None else by, reason)
        return Submission(kind="command", text=text, error=error)

    async def dismiss(self, action_id: str, by: str | None, reason: str | None, scope: Scope | None) -> None:
        user = await self._check_action(action_id, "dismiss", scope)
        await self._actions.dismiss(self.engine, action_id, user if by is None else by, reason)

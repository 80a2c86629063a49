"""`ScopedHost`: the host's whole surface for one tenant or owner (API.md §14).

``host.scoped({"user": "alice"})`` is what an integrator serving many users hands each
request. It is a second door onto the open host's `HostCore`, the one `Host` uses: each
method is the core's, asked with this view's scope (the core decides visibility through
`_scope`, one check per kind of id, by the session record's tags, and reads its lists
through the stores' tag index with the scope's tags added, so a scoped page costs what it
returns). The lineage, traces and event views below narrow what they wrap.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Mapping, Sequence
from contextlib import AbstractAsyncContextManager, asynccontextmanager
from typing import TYPE_CHECKING, final, overload

import attrs

from modular_sdk import HostAuthor, InvalidArgumentError, RecordId, SessionId
from modular_sdk._rules import show, unstorable_text

from .._host_made import NoPublicConstructor
from ..lineage._graph import LineageGraph, _chain_records, unknown_session_named
from ..lineage._html import DEFAULT_TITLE, render_lineage_html
from ..lineage._provenance import ErasurePlan, Provenance, RecordOrigin, TurnOrigin, is_record_id
from ..lineage._tree import LineageTree
from ..lineage._types import LineageArtifact, LineageChain, LineageEdge, LineageRelation, SessionMetrics, SessionNode
from ..memory._book import Memory
from ..stores._records import Invocation, JobStatus
from ..traces._service import Traces
from ..traces._types import ActionRecord, ActionStatus, PendingAction, TaskRef, Trace
from ._approvals import Approvals
from ._completions import Completion
from ._events import EventStream, HostEvent, Lagged
from ._handles import AiSessionsImpl, SessionHandle, TurnHandle
from ._jobs import Job, JobPage
from ._scope import Scope, memory_record, session_record, turn_record
from ._scope_seq import ScopeNumbers
from ._submission import Submission

if TYPE_CHECKING:
    from ..stores._protocol import IntegratorStore, Store
    from ..stores._records import SessionRecord
    from ._core import HostCore

__all__ = ["ScopedEventStream", "ScopedHost", "ScopedLineage", "ScopedTraces"]


@final
class ScopedHost(metaclass=NoPublicConstructor):
    """The host as one tenant or owner sees it: ``host.scoped({"user": "alice"})``.

    The same surface as `Host` (``sessions``, ``lineage``, ``memory``, ``traces``, ``submit``,
    ``start``, ``job``, ``jobs``, ``log``, ``transcript``, ``subscribe``,
    ``notifications``, ``mark_read``, ``pending_actions``, ``confirm``, ``dismiss``,
    ``run_command``, ``completions``), limited to the sessions whose tags include every
    one of ``tags``. Sessions it creates get those tags. An id outside the scope raises
    exactly what an id that does not exist raises (same error type, same message), so a
    caller cannot learn that it exists. Make one per request; it is cheap (it holds the
    open host's core and the tags).

    Obtain one from ``host.scoped(tags)`` or ``view.scoped(more)``.
    """

    __slots__ = ("_core", "_lineage", "_scope", "_sessions")

    def __init__(self, core: HostCore, scope: Scope) -> None:
        engine = core.opened()
        self._core = core  # the host's surface, each method asked with this scope
        self._scope = scope
        self._sessions = core.sessions(scope)
        self._lineage = ScopedLineage._create(core.graph, engine.store, engine.integrator_store, scope)

    @property
    def tags(self) -> Mapping[str, str]:
        """The scope: a session is visible when its tags include every one of these. Read-only."""
        return self._scope.tags

    def scoped(self, tags: Mapping[str, str]) -> ScopedHost:
        """A view narrower still: this scope's tags plus ``tags``. Raises `InvalidArgumentError`
        when ``tags`` would change one of this scope's values."""
        return ScopedHost._create(self._core, self._scope.narrowed(tags))

    # -- sessions, lineage, traces ---------------------------------------------------------
    @property
    def sessions(self) -> AiSessionsImpl:
        """The scope's sessions: ``create`` adds the scope's tags; ``get``, ``turn``, ``list`` and
        ``delete`` see only the scope's sessions (an outside id: `UnknownSessionError`)."""
        self._core.opened()
        return self._sessions

    @property
    def memory(self) -> Memory:
        """`Host.memory` limited to the scope: records of its sessions only (others raise
        what a missing id raises), written in its sessions only (API.md section 20)."""
        return self._core.memory(HostAuthor(), self._scope)

    @property
    def lineage(self) -> ScopedLineage:
        """The lineage graph within the scope: walks stop at its edge (see `ScopedLineage`)."""
        self._core.opened()
        return self._lineage

    @property
    def traces(self) -> ScopedTraces:
        """Traces as the scope sees them (see `ScopedTraces`)."""
        return ScopedTraces._create(self._core.traces(), self._scope)

    # -- what the user types ---------------------------------------------------------------
    async def submit(
        self, session: SessionHandle | SessionId | str, text: str, *, request_id: str | None = None
    ) -> Submission:
        """`Host.submit` in a session of the scope; a handler it runs acts within the session's tags."""
        return await self._core.submit(session, text, request_id, self._scope)

    async def start(self, session: SessionHandle | SessionId | str, text: str, *, request_id: str | None = None) -> Job:
        """`Host.start` in a session of the scope."""
        return await self._core.start(session, text, request_id, self._scope)

    async def run_command(self, command_id: str) -> Submission:
        """`Host.run_command`: a palette command, whose handler acts within the scope."""
        return await self._core.run_command(command_id, self._scope)

    def completions(self, text: str) -> list[Completion]:
        """`Host.completions` (slash-command typeahead: the mods' commands, no tenant data)."""
        return self._core.completions(text)

    # -- reading -----------------------------------------------------------------------------
    async def log(self, session: SessionHandle | SessionId | str) -> list[TurnHandle | Invocation]:
        """`Host.log` of a session of the scope."""
        return await self._core.log(session, self._scope)

    async def transcript(self, session: SessionHandle | SessionId | str) -> str:
        """`Host.transcript` of a session of the scope."""
        return await self._core.transcript(session, self._scope)

    async def job(self, job_id: str) -> Job:
        """A job of a session of the scope; `UnknownJobError` (as for a missing id) otherwise."""
        return await self._core.job(job_id, self._scope)

    async def cancel_job(self, job_id: str) -> None:
        """Cancel a job of the scope (`Host.cancel_job`); `UnknownJobError` otherwise."""
        await self._core.cancel_job(job_id, self._scope)

    async def jobs(
        self,
        *,
        session: SessionHandle | SessionId | str | None = None,
        status: JobStatus | None = None,
        tags: Mapping[str, str] | None = None,
        limit: int = 50,
        after: str | None = None,
    ) -> JobPage:
        """`Host.jobs` limited to the scope's sessions, served by the tag index."""
        return await self._core.jobs(session, status, tags, limit, after, self._scope)

    async def notifications(
        self,
        *,
        session: SessionHandle | SessionId | str | None = None,
        unread_only: bool = True,
        tags: Mapping[str, str] | None = None,
    ) -> list[TurnHandle]:
        """`Host.notifications`: the scope's inbox, served by the tag index."""
        return await self._core.notifications(session, unread_only, tags, self._scope)

    async def mark_read(self, turn_id: str) -> None:
        """`Host.mark_read` of a notification of the scope; `UnknownTurnError` otherwise."""
        await self._core.mark_read(turn_id, self._scope)

    # -- actions -----------------------------------------------------------------------------
    async def pending_actions(self, session: SessionHandle | SessionId | str) -> list[PendingAction]:
        """`Host.pending_actions` of a session of the scope."""
        return await self._core.pending_actions(session, self._scope)

    async def actions(
        self, session: SessionHandle | SessionId | str, *, status: ActionStatus | None = None
    ) -> list[ActionRecord]:
        """`Host.actions` of a session of the scope: what became of each action proposed in it."""
        return await self._core.actions(session, status, self._scope)

    async def confirm(self, action_id: str, *, by: str | None = None, reason: str | None = None) -> Submission:
        """`Host.confirm` of an action proposed in the scope; `ActionStateError` (as for an
        action never proposed) otherwise. ``by`` defaults to the scope's ``user`` tag."""
        return await self._core.confirm(action_id, by, reason, self._scope)

    async def dismiss(self, action_id: str, *, by: str | None = None, reason: str | None = None) -> None:
        """`Host.dismiss` of an action proposed in the scope; `ActionStateError` otherwise.
        ``by`` defaults to the scope's ``user`` tag."""
        await self._core.dismiss(action_id, by, reason, self._scope)

    @property
    def approvals(self) -> Approvals:
        """`Host.approvals` within the scope: a rule it allows carries the scope's tags (so it
        matches only the scope's sessions); ``list``, ``get`` and ``revoke`` see only the
        scope's rules (another's id: `UnknownApprovalRuleError`, as for a missing one)."""
        return self._core.approvals(self._scope)

    # -- events --------------------------------------------------------------------------------
    def subscribe(
        self, *, buffer: int = 1000, after: int | None = None
    ) -> AbstractAsyncContextManager[ScopedEventStream]:
        """`Host.subscribe`, filtered in the host: only events of the scope's sessions.

        Events that belong to no session (a palette command's ``command_finished``) are left
        out: they cannot be told apart by tenant. ``seq`` is the scope's own numbering
        (1, 2, 3, ... over the scope's events only, numbered by this host), so no gap tells of
        another tenant's activity; a ``lagged`` event's ``missed`` counts the scope's events
        this subscriber missed. ``after`` resumes after a scope seq read before (a seq never
        given here: only what is new follows).
        """
        return self._subscribe(buffer, after)

    @asynccontextmanager
    async def _subscribe(self, buffer: int, after: int | None) -> AsyncIterator[ScopedEventStream]:
        engine = self._core.opened()
        numbers = self._core.numbers
        if after is not None and (isinstance(after, bool) or not isinstance(after, int) or after < 0):
            resume: int | None = after  # the hub names what is wrong with it
        elif after is None:
            resume = None
        else:
            resume = await numbers.host_seq(self._scope, after)
            if resume is None:  # a seq this scope was never given here: what is new follows
                after = None
        if isinstance(buffer, int) and not isinstance(buffer, bool):
            numbers.keep_at_least(buffer)
        async with engine.subscribe(buffer, resume) as stream:
            if after is None:  # the scope's seq of the last event before the stream starts
                after = await numbers.upto(self._scope, stream.after)
            yield ScopedEventStream._create(stream, self._scope, numbers, after)

    def __repr__(self) -> str:
        return f"<ScopedHost {dict(self._scope.tags)!r}>"


@final
class ScopedEventStream(metaclass=NoPublicConstructor):
    """The events of one scope: ``async for event in events``, as `EventStream`.

    Obtain it from ``async with view.subscribe() as events``. The host decides which
    events pass, by the tags of the session each belongs to (read once per session). Their
    ``seq`` is the scope's own numbering (1, 2, 3, ... over the scope's events only, see
    `Host.scoped`), and a ``lagged`` event counts the scope's events this subscriber missed.
    """

    __slots__ = ("_last", "_numbers", "_owed", "_scope", "_stream")

    def __init__(self, stream: EventStream, scope: Scope, numbers: ScopeNumbers, last: int) -> None:
        self._stream = stream
        self._scope = scope
        self._numbers = numbers
        self._last = last  # the scope seq of the last event handed out, or started after
        self._owed: HostEvent | None = None  # the event after a lagged one

    def __aiter__(self) -> ScopedEventStream:
        return self

    async def __anext__(self) -> HostEvent:
        owed, self._owed = self._owed, None
        if owed is not None:
            return owed
        async for event in self._stream:
            if isinstance(event, Lagged):  # the host's events through event.seq were dropped: how many were ours
                through = await self._numbers.upto(self._scope, event.seq)
                if through > self._last:  # its seq: the scope's last missed one, as for Host.subscribe
                    missed, self._last = through - self._last, through
                    return Lagged(seq=through, at=event.at, host_id=event.host_id, missed=missed)
                continue
            if event.seq is None:  # a reply delta: live only, never numbered
                if await self._numbers.passes(self._scope, event):
                    return event
                continue
            seq = await self._numbers.number(self._scope, event)
            if seq is None or seq <= self._last:
                continue
            shown = attrs.evolve(event, seq=seq)
            missed = seq - self._last - 1  # numbered, then dropped before this stream read them
            self._last = seq
            if missed > 0:
                self._owed = shown
                return Lagged(seq=seq - 1, at=event.at, host_id=event.host_id, missed=missed)
            return shown
        raise StopAsyncIteration


@final
class ScopedLineage(metaclass=NoPublicConstructor):
    """`LineageGraph` within a scope: ``view.lineage``.

    Every method takes the same arguments as `LineageGraph`'s. A session id outside the
    scope raises `modular_sdk.UnknownSessionError`, a turn id outside it
    `modular_sdk.UnknownTurnError` and a memory record id (``mem_...``) outside it
    `modular_sdk.UnknownRecordError`, exactly as ids that do not exist. Walks (``ancestors``,
    ``descendants``, ``chain``, ``tree``) never step onto a session outside the scope;
    ``forward``, ``backward`` and ``forget`` plans list only the scope's sessions, turns
    and edges (``forget(dry_run=False)`` still erases every copy of the forgotten text,
    wherever the unscoped plan reaches). ``add_edge`` relates two sessions of the scope.

    Obtain it as ``host.scoped(tags).lineage``.
    """

    __slots__ = ("_graph", "_integrator_store", "_scope", "_store")

    def __init__(self, graph: LineageGraph, store: Store, integrator_store: IntegratorStore, scope: Scope) -> None:
        self._graph = graph
        self._store = store
        self._integrator_store = integrator_store
        self._scope = scope

    async def _check(self, session_id: object) -> SessionId:
        return (await session_record(self._store, self._scope, session_id)).id

    async def _inside(self, session_ids: Sequence[SessionId]) -> set[SessionId]:
        inside: set[SessionId] = set()
        for session_id in dict.fromkeys(session_ids):  # one read by key each: what the answer holds
            record = await self._store.get_session(session_id)
            if record is not None and self._scope.admits(record.tags):
                inside.add(session_id)
        return inside

    async def node(self, session_id: str) -> SessionNode:
        """`LineageGraph.node` of a session of the scope."""
        return await self._graph.node(await self._check(session_id))

    async def _walk(self, session_id: str, max_depth: int, *, forward: bool) -> list[SessionNode]:
        if isinstance(max_depth, bool) or not isinstance(max_depth, int) or max_depth < 0:
            raise InvalidArgumentError(
                f"max_depth must be an int >= 0 (edges to follow), got {show(max_depth)}", argument="max_depth", value=max_depth
            )
        start = await self._check(session_id)
        seen: set[SessionId] = {start}
        found: list[SessionId] = []
        frontier = [start]
        for _ in range(max_depth):  # one edge read per level; a session outside ends the path
            candidates: list[SessionId] = []
            for edge in await self._store.get_edges(frontier, "out" if forward else "in"):
                other = edge.to_session_id if forward else edge.from_session_id
                if other not in seen:
                    seen.add(other)
                    candidates.append(other)
            inside = await self._inside(candidates)
            frontier = [c for c in candidates if c in inside]
            if not frontier:
                break
            found += frontier
        return list(await self._graph._nodes(found))

    async def ancestors(self, session_id: str, max_depth: int = 10) -> list[SessionNode]:
        """`LineageGraph.ancestors`, stopping at the scope's edge."""
        return await self._walk(session_id, max_depth, forward=False)

    async def descendants(self, session_id: str, max_depth: int = 10) -> list[SessionNode]:
        """`LineageGraph.descendants`, stopping at the scope's edge."""
        return await self._walk(session_id, max_depth, forward=True)

    async def chain(self, session_id: str, max_depth: int = 10) -> LineageChain:
        """`LineageGraph.chain` within the scope: its nodes and the edges between them."""
        start = await self._graph.node(await self._check(session_id))
        nodes = [start]
        nodes += await self._walk(session_id, max_depth, forward=False)
        nodes += await self._walk(session_id, max_depth, forward=True)
        members = {n.session_id for n in nodes}
        out = await self._store.get_edges([n.session_id for n in nodes], "out")
        return LineageChain(nodes=tuple(nodes), edges=tuple(e for e in out if e.to_session_id in members))

    async def tree(self, root_id: str) -> LineageTree:
        """`LineageGraph.tree` of a session of the scope, without the branches outside it."""
        tree = await self._graph.tree(await self._check(root_id))
        return _prune(tree, self._scope)

    async def find_by_artifact(self, type: str, source_id: str) -> list[SessionNode]:
        """`LineageGraph.find_by_artifact`: only the scope's sessions."""
        nodes = await self._graph.find_by_artifact(type, source_id)
        inside = await self._inside([n.session_id for n in nodes])
        return [n for n in nodes if n.session_id in inside]

    async def add_edge(
        self, from_id: str, to_id: str, relation: LineageRelation, artifact: LineageArtifact | None = None
    ) -> LineageEdge:
        """`LineageGraph.add_edge` between two sessions of the scope; an id outside it raises
        `UnknownSessionError`, exactly as an id that does not exist."""
        if isinstance(from_id, str) and isinstance(to_id, str) and from_id != to_id:
            for role, session_id in (("from_id", from_id), ("to_id", to_id)):
                unknown = unstorable_text(session_id)  # no store holds it (nor can be asked for it)
                record = None if unknown else await self._store.get_session(SessionId(session_id))
                if record is None or not self._scope.admits(record.tags):
                    raise unknown_session_named(role, session_id)
        return await self._graph.add_edge(from_id, to_id, relation, artifact)

    async def html(self, root_id: str | None = None, *, title: str | None = None) -> str:
        """`LineageGraph.html` of the scope: its (listed) sessions, or with ``root_id`` (a
        session of the scope) that session's chain, without the sessions outside the scope."""
        if title is not None and not isinstance(title, str):
            raise InvalidArgumentError(
                f"title must be a str or None, got {show(title)}; pass the page's heading as text", argument="title", value=title
            )
        if root_id is None:
            records: list[SessionRecord] = []
            before: int | None = None
            while True:  # the scope's sessions, by the tag index, a page at a time
                page, last = await self._integrator_store.page_sessions(self._scope.tags, False, 1000, before)
                records += page
                if last is None:
                    break
                before = last
            records.sort(key=lambda record: record.created_at)
        else:
            await self._check(root_id)
            records = [r for r in await _chain_records(self._store, root_id) if self._scope.admits(r.tags)]
        turns = [t for record in records for t in await self._store.get_turns(record.id)]
        return render_lineage_html(records, turns, title=DEFAULT_TITLE if title is None else title)

    async def complete_session(self, session_id: str, metrics: SessionMetrics | None = None) -> SessionNode:
        """`LineageGraph.complete_session` of a session of the scope (computed from its record without ``metrics``)."""
        return await self._graph.complete_session(await self._check(session_id), metrics)

    async def _visible(self, turn_id: str) -> None:
        """A turn, message or memory record id of the scope; as missing (`UnknownTurnError`,
        `UnknownRecordError`) otherwise."""
        if is_record_id(turn_id):
            await memory_record(self._store, self._scope, turn_id)
        else:
            await turn_record(self._store, self._scope, turn_id)

    async def forward(self, turn_id: str) -> Provenance:
        """`LineageGraph.forward` of a turn or memory record of the scope, listing only the scope's part."""
        await self._visible(turn_id)
        found = await self._graph.forward(turn_id)
        inside = await self._inside([*found.sessions, *found.spawns, *_ends(found.edges), *(r.session_id for r in found.records)])
        return attrs.evolve(
            found,
            records=tuple(r for r in found.records if r.session_id in inside),
            sessions=tuple(s for s in found.sessions if s in inside),
            turns=tuple(t for t in found.turns if t.session_id in inside),
            spawns=tuple(s for s in found.spawns if s in inside),
            edges=tuple(e for e in found.edges if e.from_session_id in inside and e.to_session_id in inside),
        )

    @overload
    async def backward(self, turn_id: RecordId) -> RecordOrigin: ...  # type: ignore[overload-overlap]  # a record id is a str

    @overload
    async def backward(self, turn_id: str) -> TurnOrigin: ...

    async def backward(self, turn_id: str) -> TurnOrigin | RecordOrigin:
        """`LineageGraph.backward` of a turn or memory record of the scope, listing only the scope's part."""
        await self._visible(turn_id)
        if is_record_id(turn_id):
            origin = await self._graph.backward(RecordId(turn_id))
            inside = await self._inside([*(t.session_id for t in origin.read_from), *(r.session_id for r in origin.records)])
            return attrs.evolve(
                origin,
                read_from=tuple(t for t in origin.read_from if t.session_id in inside),
                records=tuple(r for r in origin.records if r.session_id in inside),
            )
        found = await self._graph.backward(turn_id)
        inside = await self._inside(found.sessions)
        return attrs.evolve(
            found,
            read_from=tuple(t for t in found.read_from if t.session_id in inside),
            sessions=tuple(s for s in found.sessions if s in inside),
        )

    async def forget(self, turn_id: str, *, dry_run: bool = True) -> ErasurePlan:
        """`LineageGraph.forget` of a turn or memory record of the scope; the plan lists only the scope's part."""
        await self._visible(turn_id)
        plan = await self._graph.forget(turn_id, dry_run=dry_run)
        inside = await self._inside(
            [*plan.sessions, *plan.spawns, *(t.session_id for t in plan.turns), *_ends(plan.edges), *(r.session_id for r in plan.records)]
        )
        return attrs.evolve(
            plan,
            records=tuple(r for r in plan.records if r.session_id in inside),
            sessions=tuple(s for s in plan.sessions if s in inside),
            turns=tuple(t for t in plan.turns if t.session_id in inside),
            spawns=tuple(s for s in plan.spawns if s in inside),
            edges=tuple(e for e in plan.edges if e.from_session_id in inside and e.to_session_id in inside),
        )

    def __repr__(self) -> str:
        return f"<ScopedLineage {dict(self._scope.tags)!r}>"


def _ends(edges: Sequence[LineageEdge]) -> list[SessionId]:
    return [s for e in edges for s in (e.from_session_id, e.to_session_id)]


def _prune(tree: LineageTree, scope: Scope) -> LineageTree:
    """The tree without the branches whose sessions the scope does not see (no recursion)."""
    order: list[LineageTree] = [tree]
    index = 0
    while index < len(order):
        order += [c for c in order[index].children if scope.admits(c.tags)]
        index += 1
    built: dict[int, LineageTree] = {}
    for node in reversed(order):
        kids = tuple(built[id(c)] for c in node.children if id(c) in built)
        built[id(node)] = node if kids == node.children else attrs.evolve(node, children=kids)
    return built[id(tree)]


@final
class ScopedTraces(metaclass=NoPublicConstructor):
    """`host.traces` within a scope: ``view.traces``.

    The scope is part of the key: the task refs, output ids and commits the scope writes
    are its own (``for_task("gh:1")`` in two scopes makes two traces), and it finds a trace
    by them, by the trace's id, by a session of the scope, or by a task ref, output or commit
    the integrator's unscoped host wrote, when a session of the scope works on that trace
    (or none does yet). The trace's ``links`` list only the scope's sessions. Anything else
    raises `UnknownTraceError`, exactly as an id that does not exist.

    Obtain it as ``host.scoped(tags).traces``.
    """

    __slots__ = ("_scope", "_traces")

    def __init__(self, traces: Traces, scope: Scope) -> None:
        self._traces = traces._within(scope.tags)
        self._scope = scope

    async def for_task(self, ref: TaskRef, snapshot: Mapping[str, object] | None = None) -> Trace:
        """`Traces.for_task` in the scope's own namespace: another scope's trace of the same task
        ref is another trace, never found or blocked from here."""
        return await self._traces.for_task(ref, snapshot)

    async def find(self, id: str) -> Trace:
        """`Traces.find` within the scope; `UnknownTraceError` for anything it does not see
        (a session, output or commit outside the scope answers as one never seen)."""
        return await self._traces.find(id)

    async def attach_task(self, trace_id: str, ref: TaskRef, snapshot: Mapping[str, object] | None = None) -> Trace:
        """`Traces.attach_task` of a trace the scope sees, with a task ref of its namespace."""
        return await self._traces.attach_task(trace_id, ref, snapshot)

    async def record_commit(self, output_id: str, commit: str) -> str:
        """`Traces.record_commit` of an output of the scope; `UnknownTraceError` otherwise."""
        return await self._traces.record_commit(output_id, commit)

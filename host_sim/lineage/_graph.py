"""The lineage graph: sessions as nodes, typed edges between them, queried breadth-first.

The host registers every session it creates and records ``branched_from`` (forks) and
``spawned_by`` (spawns) edges itself; integrators add the other relations with
`LineageGraph.add_edge`. The graph holds nothing itself: it reads the host's `Store` by
key (one read per breadth-first level, the store's indexes serving each), and every write
goes through to it. A query costs what it returns, never the size of a hub or of the graph.
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Final, final, overload

import attrs

from modular_sdk import InvalidArgumentError, MemoryRecord, RecordId, SessionId, UnknownSessionError
from modular_sdk._rules import show, unstorable_text

from ..stores._invariants import heal_index
from ..stores._memory_records import RecordStore
from . import _provenance
from ._errors import LineageEdgeError, TurnRunningError
from ._facts import LineageFacts, NoHost
from ._html import DEFAULT_TITLE, render_lineage_html
from ._provenance import ErasurePlan, Provenance, RecordOrigin, TurnOrigin
from ._tree import LineageTree, build_tree
from ._types import (
    HOST_RELATIONS,
    LineageArtifact,
    LineageChain,
    LineageEdge,
    LineageRelation,
    SessionMetrics,
    SessionNode,
)

if TYPE_CHECKING:
    from ..stores._protocol import IntegratorStore, Store
    from ..stores._records import SessionRecord, TurnRecord

__all__ = ["LineageGraph", "unknown_session_named"]


def unknown_session_named(role: str, session_id: str) -> UnknownSessionError:
    """What a lineage method answers for an argument ``role`` naming a session the host does
    not hold (or a scope does not see)."""
    return UnknownSessionError(
        f"{role} {session_id!r} names no session of this host; use the id of a session the host created (session.id)",
        session_id=session_id,
    )

_HOST_ONLY: Final = frozenset({"branched_from", "spawned_by"})


def _utc_now() -> datetime:
    return datetime.now(UTC)


@final
class LineageGraph:
    """How the sessions of a host relate: forks, spawns, and the edges integrators add.

    Get it as ``host.lineage``; the host makes it over its store. Edges point from the
    parent (or source) session to the child (or consumer). Every method accepts a
    `SessionId` or a plain ``str``, and raises `modular_sdk.UnknownSessionError` for an id
    the host's store does not hold.

    >>> await host.lineage.add_edge(old_chat.id, new_chat.id, "continued_from")  # doctest: +SKIP
    >>> [n.session_id for n in await host.lineage.ancestors(new_chat.id)]  # doctest: +SKIP
    ['s-1']
    """

    __slots__ = ("_clock", "_facts", "_integrator_store", "_store")

    def __init__(
        self,
        store: Store,
        *,
        clock: Callable[[], datetime] = _utc_now,
        integrator_store: IntegratorStore | None = None,
        facts: LineageFacts | None = None,
    ) -> None:
        """Internal: the host builds its graph over its (open) store and integrator store; users get ``host.lineage``.

        ``facts`` is who the graph tells of the erasures and retractions it makes (the
        host's cache of the store, see `LineageFacts`); none for a graph no host serves.
        """
        self._store = store
        self._clock = clock
        self._integrator_store = integrator_store
        self._facts: LineageFacts = NoHost() if facts is None else facts

    async def tree(self, root_id: str) -> LineageTree:
        """The session ``root_id`` and every session forked or spawned from it, nested, in
        creation order, with what a UI needs to draw them (see `LineageTree`); no depth cut.
        Raises `modular_sdk.UnknownSessionError` for an unknown id."""
        return await build_tree(self._store, root_id)

    async def html(self, root_id: str | None = None, *, title: str | None = None) -> str:
        """The lineage as one self-contained HTML page, the one ``host-sim lineage --html`` writes.

        Every session of the store, or with ``root_id`` only that session's chain: the
        sessions it came from (so a fork's inherited turns read whole) and every session
        forked or spawned from it. The page loads nothing from the network; labels, tags,
        prompts, replies and ``title`` (default ``"host-sim lineage"``) are shown as text,
        whatever they hold, and it names no file path unless ``title`` does. Erased turns
        show as erased, without their text. Raises `modular_sdk.UnknownSessionError` for
        an unknown ``root_id``.

        >>> page = await host.lineage.html(title="Lineage of chat 42")  # doctest: +SKIP
        >>> Path("lineage.html").write_text(page, encoding="utf-8")  # doctest: +SKIP
        """
        if title is not None and not isinstance(title, str):
            raise InvalidArgumentError(
                f"title must be a str or None, got {show(title)}; pass the page's heading as text",
                argument="title",
                value=title,
            )
        if root_id is None:
            state = await self._store.read_all()
            sessions, turns = list(state.sessions), list(state.turns)
        else:
            sessions = await _chain_records(self._store, root_id)
            turns = [t for record in sessions for t in await self._store.get_turns(record.id)]
        records = [r for record in sessions for r in await _records_of(self._store, record.id)]
        return render_lineage_html(sessions, turns, title=DEFAULT_TITLE if title is None else title, records=records)

    # -- provenance (docs/lineage.md) ----------------------------------------------------------

    async def forward(self, turn_id: str) -> Provenance:
        """What the host made of a turn: the sessions holding it, the turns resting on it, its
        spawns and edges, and the memory records resting on it (docs/memory.md).

        ``turn_id`` is a turn id or a message id, or a memory record id (``mem_...``: the
        records derived from it, at any depth). Raises `modular_sdk.UnknownTurnError` (or
        `modular_sdk.UnknownRecordError`) for an id the store does not hold. See `Provenance`.
        """
        return await _provenance.forward(self._store, turn_id)

    @overload
    async def backward(self, turn_id: RecordId) -> RecordOrigin: ...  # type: ignore[overload-overlap]  # a record id is a str

    @overload
    async def backward(self, turn_id: str) -> TurnOrigin: ...

    async def backward(self, turn_id: str) -> TurnOrigin | RecordOrigin:
        """What a turn's reply was read from: the completed turns its model saw, and their fork
        chain; or, for a memory record id (``mem_...``), the words it was read from (`RecordOrigin`).

        ``turn_id`` is a turn id or a message id; `modular_sdk.UnknownTurnError` otherwise
        (`modular_sdk.UnknownRecordError` for a record id the host does not hold). Pass
        ``record.id`` (a `RecordId`) to have the answer typed as a `RecordOrigin`.
        """
        if _provenance.is_record_id(turn_id):
            return await _provenance.backward_record(self._store, turn_id)
        return await _provenance.backward(self._store, turn_id)

    async def forget(self, turn_id: str, *, dry_run: bool = True) -> ErasurePlan:
        """What forgetting a turn removes (a dry run, by default), or remove it (``dry_run=False``).

        The plan is the turn plus exactly `forward`'s turns, sessions, spawns and edges (one
        walk computes both). Carrying it out erases the message text and reply of every
        planned turn and the labels of the planned edges' artifacts, in one transaction;
        ids, ordinals, authors, times and lineage stay, so forks, queries and later turns go
        on working, and later model calls see erased entries (`HistoryEntry.erased`). The
        same walk erases every other copy of that text the host keeps: the failed turns'
        errors, the commands typed where the planned turns were asked (argument, text,
        error), the jobs that ran them, and the actions their replies proposed (which can
        then no longer be confirmed). A `SqliteStore` keeps no copy of the erased text in its
        files. The memory records resting on the planned turns (`ErasurePlan.records`) lose
        their text and data in the same transaction. With a record id (``mem_...``) the plan is
        the record and what was derived from it, never the turns it was read from.
        Forgetting a turn again erases nothing more. Raises
        `modular_sdk.UnknownTurnError` for an unknown id and `host_sim.TurnRunningError`
        while a session the plan reaches runs a turn or a job (nothing is erased then).

        >>> plan = await host.lineage.forget(turn.id)  # doctest: +SKIP
        >>> await host.lineage.forget(turn.id, dry_run=False)  # doctest: +SKIP
        """
        if not isinstance(dry_run, bool):  # a truthy junk value must never erase
            raise InvalidArgumentError(
                f"forget(dry_run=...) takes True (show the plan) or False (erase), got {show(dry_run)}; "
                "pass dry_run=False to erase",
                argument="dry_run",
                value=dry_run,
            )
        plan = await _provenance.forget(self._store, turn_id, dry_run=dry_run, now=self._now, facts=self._facts, integrator_store=self._integrator_store)
        await self._facts.written()
        return plan

    async def retract(self, turn_id: str, *, reason: str) -> TurnRecord:
        """Mark a turn wrong without erasing it (seed 001, corrections; docs/the-record.md).

        The turn stays in every history, text and all; it gets ``retracted_at`` and
        ``retraction_reason``, later model calls see it as `HistoryEntry.retracted` with the
        reason, subscribers get a ``turn_retracted`` event, and ``forward(turn_id)`` lists
        what rests on it: what to re-check. Durable on every store. Retracting a turn again
        changes nothing and keeps the first reason (no second event). Returns the turn's
        record as stored. The reason is text: ``forget`` erases it with the turn.

        Raises `modular_sdk.UnknownTurnError` for an unknown id, `TurnRunningError` while
        the turn runs (wait for it), and `modular_sdk.InvalidArgumentError` for a reason
        that is not non-empty text.

        >>> await host.lineage.retract(turn.id, reason="the figures were from 2019")  # doctest: +SKIP
        """
        if not isinstance(reason, str) or not reason.strip() or "\x00" in reason or unstorable_text(reason) is not None:
            raise InvalidArgumentError(
                f"retract() takes the reason as non-empty text, got {reason!r}; say why the turn is "
                "wrong, e.g. retract(turn.id, reason='the figures were from 2019')",
                argument="reason",
                value=reason,
            )
        turn = await _provenance.find_turn(self._store, turn_id)
        if turn.status == "running":
            raise TurnRunningError(
                f"turn {turn.id!r} of session {turn.session_id!r} is still running; a turn is retracted "
                "once it has finished: wait for it (await session.send(...) returns then), then retract it",
                session_id=turn.session_id,
                running_id=turn.id,
            )
        record, first = turn, False
        summaries: list[MemoryRecord] = []
        if turn.retracted_at is None:
            at = self._now()
            record = await self._store.retract_turn(turn.id, at, reason)
            first = record.retracted_at == at  # else another call retracted it first
            if first:  # summaries resting on it are compacted again at the next need (docs/memory.md)
                summaries = await _provenance.retract_summaries(self._store, turn.id, at)
        self._facts.retracted(record, first, summaries)  # turn_retracted, then memory_retracted for each summary
        await self._facts.written()
        return record

    # -- queries -------------------------------------------------------------------------

    async def node(self, session_id: str) -> SessionNode:
        """The node of one session (with its metrics once `complete_session` ran)."""
        return await self._node(session_id)

    async def ancestors(self, session_id: str, max_depth: int = 10) -> list[SessionNode]:
        """Sessions this one came from, breadth-first over incoming edges, nearest first.

        Each session appears once, the start never; ``max_depth`` counts edges
        (``max_depth=1``: direct parents only; ``0``: nothing). Raises `ValueError` for a
        negative ``max_depth``.
        """
        return await self._walk(session_id, max_depth, forward=False)

    async def descendants(self, session_id: str, max_depth: int = 10) -> list[SessionNode]:
        """Sessions that came from this one, breadth-first over outgoing edges, nearest first.

        Same rules as `ancestors`: each session once, ``max_depth`` counted in edges.
        """
        return await self._walk(session_id, max_depth, forward=True)

    async def chain(self, session_id: str, max_depth: int = 10) -> LineageChain:
        """The session, its ancestors and its descendants, and every edge between them.

        ``nodes`` holds the session first, then its ancestors (nearest first), then its
        descendants (nearest first); ``edges`` every recorded edge whose two ends are among
        ``nodes``, in recording order per source session.
        """
        start = await self._node(session_id)
        nodes = [start]
        nodes += await self._walk(session_id, max_depth, forward=False)
        nodes += await self._walk(session_id, max_depth, forward=True)
        members = {n.session_id for n in nodes}
        out = await self._store.get_edges([n.session_id for n in nodes], "out")
        return LineageChain(nodes=tuple(nodes), edges=tuple(e for e in out if e.to_session_id in members))

    async def find_by_artifact(self, type: str, source_id: str) -> list[SessionNode]:
        """The sessions at the receiving end of edges that carried this artifact.

        Matches ``artifact.type`` and ``artifact.source_id`` exactly; the type set is open
        (``"canvas_card"``, ``"turn"``, or any string an integrator uses). Each session
        once, in recording order. Raises `InvalidArgumentError` unless both are str.
        """
        for argument, value in (("type", type), ("source_id", source_id)):
            if not isinstance(value, str):
                raise InvalidArgumentError(
                    f"find_by_artifact() takes the artifact's {argument} as a str, got {show(value)}",
                    argument=argument,
                    value=value,
                )
        if unstorable_text(type + source_id):  # no store holds it (nor can be asked for it)
            return []
        edges = await self._store.find_edges(type, source_id)
        return list(await self._store.get_nodes(list(dict.fromkeys(e.to_session_id for e in edges))))

    # -- writes --------------------------------------------------------------------------

    async def add_edge(
        self,
        from_id: str,
        to_id: str,
        relation: LineageRelation,
        artifact: LineageArtifact | None = None,
    ) -> LineageEdge:
        """Record that ``to_id`` relates to ``from_id`` (continued from it, used its result ...).

        For the relations an integrator records: ``continued_from``, ``used_result_of``,
        ``delegated_from``, ``planned_by``. Writing the same (from, to) pair again replaces
        the earlier edge. Stamps ``created_at`` from the host's clock and writes the edge to
        the store.

        Raises `LineageEdgeError` for ``branched_from`` / ``spawned_by`` (the host records
        those), an unknown relation, an edge from a session to itself, or a pair that already
        has a host-recorded edge; `modular_sdk.UnknownSessionError` for an unknown id.
        """
        if not isinstance(relation, str) or relation not in HOST_RELATIONS:
            allowed = ", ".join(repr(r) for r in HOST_RELATIONS)
            if isinstance(relation, str) and relation in _HOST_ONLY:
                what = "forks" if relation == "branched_from" else "spawns"
                message = (
                    f"relation {show(relation)} is recorded by the host itself for {what}; "
                    f"add_edge records only {allowed}"
                )
            else:
                message = f"unknown lineage relation {show(relation)}; use one of {allowed}"
            raise LineageEdgeError(
                message, from_session_id=from_id, to_session_id=to_id, relation=relation
            )
        if from_id == to_id:
            raise LineageEdgeError(
                f"a lineage edge cannot go from session {show(from_id)} to itself; "
                "connect two different sessions",
                from_session_id=from_id,
                to_session_id=to_id,
                relation=relation,
            )
        if artifact is not None and not isinstance(artifact, LineageArtifact):
            raise InvalidArgumentError(
                f"artifact must be a LineageArtifact or None, got {show(artifact)}; "
                "use LineageArtifact(type=..., source_id=..., label=...)",
                argument="artifact",
                value=artifact,
            )
        source = await self._node(from_id, role="from_id")
        target = await self._node(to_id, role="to_id")
        # A host-recorded edge joins a fork or spawn to its one parent, which its record
        # names: one read by key, never a scan of a hub's edges.
        record = await self._store.get_session(target.session_id)
        lineage = None if record is None else record.lineage
        if lineage is not None and lineage.kind != "root" and lineage.parent_session_id == source.session_id:
            host_relation = "branched_from" if lineage.kind == "fork" else "spawned_by"
            raise LineageEdgeError(
                f"sessions {from_id!r} -> {to_id!r} already have the host-recorded "
                f"{host_relation!r} edge, which add_edge cannot replace; "
                "record your relation between other sessions",
                from_session_id=from_id,
                to_session_id=to_id,
                relation=relation,
            )
        edge = LineageEdge(
            from_session_id=source.session_id,
            to_session_id=target.session_id,
            relation=relation,
            created_at=self._now(),
            artifact=artifact,
        )
        await self._store.save_edge(edge)
        return edge

    async def complete_session(self, session_id: str, metrics: SessionMetrics | None = None) -> SessionNode:
        """Stamp a session completed now (host clock) with its aggregate metrics.

        Without ``metrics`` they are computed from the record (docs/observability.md), over
        the turns the session ran itself (not those a fork inherited): ``tool_calls``
        counts their tool calls, ``token_usage`` adds up their ``usage`` (input and output
        tokens; a turn whose model reported none counts 0), ``duration_ms`` runs from the
        first turn's start to the last finish (0 before any turn finished), and
        ``sessions_spawned`` counts its spawns (``spawned_by`` edges; forks are not
        spawns). Returns the new node and writes it to the store. Calling it again
        replaces the metrics and the completion time.

        >>> node = await host.lineage.complete_session(session.id)  # doctest: +SKIP
        >>> node.metrics.token_usage  # doctest: +SKIP
        876
        """
        current = await self._node(session_id)
        if metrics is None:
            metrics = await self._metrics(current.session_id)
        if not isinstance(metrics, SessionMetrics):
            raise InvalidArgumentError(
                f"metrics must be a SessionMetrics, got {show(metrics)}; use SessionMetrics("
                "tool_calls=..., token_usage=..., duration_ms=..., sessions_spawned=...)",
                argument="metrics",
                value=metrics,
            )
        node = attrs.evolve(current, completed_at=self._now(), metrics=metrics)
        await self._store.save_node(node)
        return node

    # -- internals -----------------------------------------------------------------------

    async def _metrics(self, session_id: SessionId) -> SessionMetrics:
        """Seed 000's aggregates of one session, from its turn records and its edges."""
        turns = await self._store.get_turns(session_id)
        own = [t for t in turns if t.session_id == session_id]
        finished = [t.finished_at for t in own if t.finished_at is not None]
        duration = max(finished) - min(t.started_at for t in own) if finished else None
        spawns = await self._store.get_edges([session_id], "out")
        return SessionMetrics(
            tool_calls=sum(len(t.tool_calls) for t in own),
            token_usage=sum(t.usage.total_tokens for t in own if t.usage is not None),
            duration_ms=0 if duration is None else max(0, round(duration.total_seconds() * 1000)),
            sessions_spawned=sum(1 for e in spawns if e.relation == "spawned_by"),
        )

    def _now(self) -> datetime:
        now = self._clock()
        if not isinstance(now, datetime) or now.utcoffset() is None:
            raise InvalidArgumentError(
                f"the host clock returned {now!r}; it must return timezone-aware datetimes, "
                "e.g. lambda: datetime.now(timezone.utc)",
                argument="clock",
                value=now,
            )
        return now

    async def _node(self, session_id: str, *, role: str = "session_id") -> SessionNode:
        if not isinstance(session_id, str):
            raise UnknownSessionError(
                f"{role} must be a session id (a str), got {show(session_id)}; pass session.id",
                session_id=show(session_id),
            )
        unknown = unstorable_text(session_id)  # no store holds it (nor can be asked for it)
        found = [] if unknown else await self._store.get_nodes([SessionId(session_id)])
        if found:
            return found[0]
        record = None if unknown else await self._store.get_session(SessionId(session_id))
        if record is None:
            raise unknown_session_named(role, session_id)
        return await heal_index(self._store, record)  # its derived rows were lost: rebuilt

    async def _nodes(self, session_ids: list[SessionId]) -> list[SessionNode]:
        """The nodes of sessions an edge names, in order; a stored session's lost node is rebuilt."""
        found = list(await self._store.get_nodes(session_ids))
        if len(found) == len(session_ids):
            return found
        have = {n.session_id: n for n in found}
        out: list[SessionNode] = []
        for session_id in session_ids:
            node = have.get(session_id)
            if node is None:
                record = await self._store.get_session(session_id)
                if record is None:
                    continue  # an edge to a session the store does not hold: fsck reports it
                node = await heal_index(self._store, record)
            out.append(node)
        return out

    async def _lost_in_edges(self, session_ids: list[SessionId], edges: list[LineageEdge]) -> list[LineageEdge]:
        """The fork's or spawn's edge of each of ``session_ids`` that has no incoming edge,
        rebuilt from its record when its row was lost (derived data heals: docs/the-record.md).
        One read by key per session without incoming edges (a root's costs only that)."""
        have = {e.to_session_id for e in edges}
        healed: list[LineageEdge] = []
        for session_id in session_ids:
            if session_id in have:
                continue
            record = await self._store.get_session(session_id)
            if record is None or record.lineage.kind == "root":
                continue
            await heal_index(self._store, record)
            healed += await self._store.get_edges([session_id], "in")
        return healed

    async def _walk(self, session_id: str, max_depth: int, *, forward: bool) -> list[SessionNode]:
        if isinstance(max_depth, bool) or not isinstance(max_depth, int) or max_depth < 0:
            raise InvalidArgumentError(
                f"max_depth must be an int >= 0 (edges to follow), got {show(max_depth)}", argument="max_depth", value=max_depth
            )
        start = await self._node(session_id)
        seen: set[SessionId] = {start.session_id}
        found: list[SessionNode] = []
        frontier = [start.session_id]
        for _ in range(max_depth):  # one store read per level: no recursion, no scan
            following: list[SessionId] = []
            edges = list(await self._store.get_edges(frontier, "out" if forward else "in"))
            if not forward:
                edges += await self._lost_in_edges(frontier, edges)
            for edge in edges:
                other = edge.to_session_id if forward else edge.from_session_id
                if other not in seen:
                    seen.add(other)
                    following.append(other)
            if not following:
                break
            found += await self._nodes(following)
            frontier = following
        return found


async def _records_of(store: Store, session_id: SessionId) -> list[MemoryRecord]:
    """A session's memory records (retracted ones too), in writing order; none on a store without them."""
    if not isinstance(store, RecordStore):
        return []
    found: list[MemoryRecord] = []
    after: int | None = None
    while True:
        page, after = await store.page_records(session_id, None, {}, True, 1000, after)
        found += page
        if after is None:
            return found


async def _chain_records(store: Store, session_id: str) -> list[SessionRecord]:
    """``session_id``, the sessions it came from and all that came from it, in creation
    order: read by key (one read per session), without recursion."""
    start = await store.get_session(SessionId(session_id)) if isinstance(session_id, str) else None
    if start is None:
        raise UnknownSessionError(
            f"no session {session_id!r} in this host's store; pass the id of a session (session.id)",
            session_id=str(session_id),
        )
    found: dict[SessionId, SessionRecord] = {start.id: start}
    current = start
    while current.lineage.kind != "root":  # up: the forks and spawns it came from
        parent = await store.get_session(current.lineage.parent_session_id)
        if parent is None or parent.id in found:
            break
        found[parent.id] = current = parent
    frontier = [start]
    while frontier:  # down: breadth-first, every session once
        following = []
        for record in frontier:
            for child in await store.child_sessions(record.id):
                if child.id not in found:
                    found[child.id] = child
                    following.append(child)
        frontier = following
    return sorted(found.values(), key=lambda record: record.created_at)

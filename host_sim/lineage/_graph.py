"""The lineage graph: sessions as nodes, typed edges between them, queried breadth-first.

The host registers every session it creates and records ``branched_from`` (forks) and
``spawned_by`` (spawns) edges itself; integrators add the other relations with
`LineageGraph.add_edge`. Every write goes through to the host's `Store`.

Memory: one small slotted vertex per session (its node, its outgoing edges as a list, its
incoming edge held directly while there is only one). Nothing is copied per query beyond
the visited set of that query.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from datetime import datetime, timezone
from typing import TYPE_CHECKING, Final, final

import anyio.lowlevel
import attrs

from modular_sdk import SessionId, UnknownSessionError

from ._errors import LineageEdgeError
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
    from ..stores._protocol import Store

__all__ = ["LineageGraph"]

_HOST_ONLY: Final = frozenset({"branched_from", "spawned_by"})
_STRUCTURAL: Final = ("branched_from", "spawned_by")


def _utc_now() -> datetime:
    return datetime.now(timezone.utc)


class _Vertex:
    """One session: its node, edges out (a list, or None), edges in (one edge, a list, or None)."""

    __slots__ = ("inc", "node", "out")

    def __init__(self, node: SessionNode) -> None:
        self.node = node
        self.out: list[LineageEdge] | None = None
        self.inc: LineageEdge | list[LineageEdge] | None = None

    def incoming(self) -> Sequence[LineageEdge]:
        inc = self.inc
        if inc is None:
            return ()
        if isinstance(inc, LineageEdge):
            return (inc,)
        return inc

    def outgoing(self) -> Sequence[LineageEdge]:
        return self.out if self.out is not None else ()


@final
class LineageGraph:
    """How the sessions of a host relate: forks, spawns, and the edges integrators add.

    Get it as ``host.lineage``; the host makes it, loads it from its store, and keeps it
    current. Edges point from the parent (or source) session to the child (or consumer).
    Every method accepts a `SessionId` or a plain ``str``, and raises
    `modular_sdk.UnknownSessionError` for an id the host never created.

    >>> await host.lineage.add_edge(old_chat.id, new_chat.id, "continued_from")  # doctest: +SKIP
    >>> [n.session_id for n in await host.lineage.ancestors(new_chat.id)]  # doctest: +SKIP
    ['s-1']
    """

    __slots__ = ("_clock", "_store", "_vertices")

    def __init__(
        self,
        store: Store,
        *,
        clock: Callable[[], datetime] = _utc_now,
        nodes: Iterable[SessionNode] = (),
        edges: Iterable[LineageEdge] = (),
    ) -> None:
        """Internal: the host builds its graph over its store (and what the store held).

        Users get the graph as ``host.lineage``. ``nodes`` and ``edges`` are what
        `Store.open` returned; they are not written back. Raises `ValueError` for an edge
        whose end is not among ``nodes``.
        """
        self._store = store
        self._clock = clock
        self._vertices: dict[SessionId, _Vertex] = {}
        for node in nodes:
            self._vertices[node.session_id] = _Vertex(node)
        for edge in edges:
            if edge.from_session_id not in self._vertices or edge.to_session_id not in self._vertices:
                raise ValueError(
                    f"stored lineage edge {edge.from_session_id!r} -> {edge.to_session_id!r} "
                    "names a session with no stored node; the store is inconsistent"
                )
            self._link(edge)

    # -- queries -------------------------------------------------------------------------

    async def node(self, session_id: str) -> SessionNode:
        """The node of one session (with its metrics once `complete_session` ran)."""
        await anyio.lowlevel.checkpoint()
        return self._vertex(session_id).node

    async def ancestors(self, session_id: str, max_depth: int = 10) -> list[SessionNode]:
        """Sessions this one came from, breadth-first over incoming edges, nearest first.

        Each session appears once, the start never; ``max_depth`` counts edges
        (``max_depth=1``: direct parents only; ``0``: nothing). Raises `ValueError` for a
        negative ``max_depth``.
        """
        await anyio.lowlevel.checkpoint()
        return self._walk(session_id, max_depth, forward=False)

    async def descendants(self, session_id: str, max_depth: int = 10) -> list[SessionNode]:
        """Sessions that came from this one, breadth-first over outgoing edges, nearest first.

        Same rules as `ancestors`: each session once, ``max_depth`` counted in edges.
        """
        await anyio.lowlevel.checkpoint()
        return self._walk(session_id, max_depth, forward=True)

    async def chain(self, session_id: str, max_depth: int = 10) -> LineageChain:
        """The session, its ancestors and its descendants, and every edge between them.

        ``nodes`` holds the session first, then its ancestors (nearest first), then its
        descendants (nearest first); ``edges`` every recorded edge whose two ends are among
        ``nodes``, in recording order per source session.
        """
        await anyio.lowlevel.checkpoint()
        start = self._vertex(session_id).node
        nodes = [start]
        nodes += self._walk(session_id, max_depth, forward=False)
        nodes += self._walk(session_id, max_depth, forward=True)
        members = {n.session_id for n in nodes}
        edges = tuple(
            edge
            for node in nodes
            for edge in self._vertices[node.session_id].outgoing()
            if edge.to_session_id in members
        )
        return LineageChain(nodes=tuple(nodes), edges=edges)

    async def find_by_artifact(self, type: str, source_id: str) -> list[SessionNode]:
        """The sessions at the receiving end of edges that carried this artifact.

        Matches ``artifact.type`` and ``artifact.source_id`` exactly; the type set is open
        (``"canvas_card"``, ``"turn"``, or any string an integrator uses). Each session
        once, in recording order.
        """
        await anyio.lowlevel.checkpoint()
        found: list[SessionNode] = []
        seen: set[SessionId] = set()
        for vertex in self._vertices.values():
            for edge in vertex.outgoing():
                artifact = edge.artifact
                if (
                    artifact is not None
                    and artifact.type == type
                    and artifact.source_id == source_id
                    and edge.to_session_id not in seen
                ):
                    seen.add(edge.to_session_id)
                    found.append(self._vertices[edge.to_session_id].node)
        return found

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
        if relation not in HOST_RELATIONS:
            allowed = ", ".join(repr(r) for r in HOST_RELATIONS)
            if relation in _HOST_ONLY:
                what = "forks" if relation == "branched_from" else "spawns"
                message = (
                    f"relation {relation!r} is recorded by the host itself for {what}; "
                    f"add_edge records only {allowed}"
                )
            else:
                message = f"unknown lineage relation {relation!r}; use one of {allowed}"
            raise LineageEdgeError(
                message, from_session_id=from_id, to_session_id=to_id, relation=relation
            )
        if from_id == to_id:
            raise LineageEdgeError(
                f"a lineage edge cannot go from session {from_id!r} to itself; "
                "connect two different sessions",
                from_session_id=from_id,
                to_session_id=to_id,
                relation=relation,
            )
        if artifact is not None and not isinstance(artifact, LineageArtifact):
            raise TypeError(
                f"artifact must be a LineageArtifact or None, got {artifact!r}; "
                "use LineageArtifact(type=..., source_id=..., label=...)"
            )
        source = self._vertex(from_id, role="from_id")
        target = self._vertex(to_id, role="to_id")
        for old in target.incoming():
            if old.from_session_id == source.node.session_id and old.relation in _HOST_ONLY:
                raise LineageEdgeError(
                    f"sessions {from_id!r} -> {to_id!r} already have the host-recorded "
                    f"{old.relation!r} edge, which add_edge cannot replace; "
                    "record your relation between other sessions",
                    from_session_id=from_id,
                    to_session_id=to_id,
                    relation=relation,
                )
        return await self._write_edge(source, target, relation, artifact, None)

    async def complete_session(self, session_id: str, metrics: SessionMetrics) -> SessionNode:
        """Stamp a session completed now (host clock) with its aggregate metrics.

        Returns the new node and writes it to the store. Calling it again replaces the
        metrics and the completion time.
        """
        vertex = self._vertex(session_id)
        if not isinstance(metrics, SessionMetrics):
            raise TypeError(
                f"metrics must be a SessionMetrics, got {metrics!r}; use SessionMetrics("
                "tool_calls=..., token_usage=..., duration_ms=..., sessions_spawned=...)"
            )
        node = attrs.evolve(vertex.node, completed_at=self._now(), metrics=metrics)
        vertex.node = node
        await self._store.save_node(node)
        return node

    # -- host-only -----------------------------------------------------------------------

    def _add_session(self, node: SessionNode, edge: LineageEdge | None) -> None:
        """Host: add a session the host just created (and stored) with its fork or spawn edge."""
        if node.session_id in self._vertices:
            raise ValueError(f"session {node.session_id!r} is already in the lineage graph")
        self._vertices[node.session_id] = _Vertex(node)
        if edge is not None:
            self._link(edge)

    def _children(self, session_id: str) -> list[SessionId]:
        """Host: the forks and spawns of a session, in the order they were recorded."""
        return [
            edge.to_session_id
            for edge in self._vertex(session_id).outgoing()
            if edge.relation in _STRUCTURAL
        ]

    def _contains(self, session_id: str) -> bool:
        return session_id in self._vertices

    # -- internals -----------------------------------------------------------------------

    def _now(self) -> datetime:
        now = self._clock()
        if not isinstance(now, datetime) or now.utcoffset() is None:
            raise ValueError(
                f"the host clock returned {now!r}; it must return timezone-aware datetimes, "
                "e.g. lambda: datetime.now(timezone.utc)"
            )
        return now

    def _vertex(self, session_id: str, *, role: str = "session_id") -> _Vertex:
        vertex = self._vertices.get(SessionId(session_id))
        if vertex is None:
            raise UnknownSessionError(
                f"{role} {session_id!r} names no session of this host; "
                "use the id of a session the host created (session.id)",
                session_id=session_id,
            )
        return vertex

    async def _write_edge(
        self,
        source: _Vertex,
        target: _Vertex,
        relation: LineageRelation,
        artifact: LineageArtifact | None,
        at: datetime | None,
    ) -> LineageEdge:
        edge = LineageEdge(
            from_session_id=source.node.session_id,
            to_session_id=target.node.session_id,
            relation=relation,
            created_at=self._now() if at is None else at,
            artifact=artifact,
        )
        self._link(edge, source, target)
        await self._store.save_edge(edge)
        return edge

    def _link(self, edge: LineageEdge, source: _Vertex | None = None, target: _Vertex | None = None) -> None:
        """Put ``edge`` in the adjacency, replacing an earlier edge of the same pair."""
        if source is None:
            source = self._vertices[edge.from_session_id]
        if target is None:
            target = self._vertices[edge.to_session_id]
        inc = target.inc
        if inc is None:
            target.inc = edge
        elif isinstance(inc, LineageEdge):
            if inc.from_session_id == edge.from_session_id:
                target.inc = edge
                _replace(source, inc, edge)
                return
            target.inc = [inc, edge]
        else:
            for i, old in enumerate(inc):
                if old.from_session_id == edge.from_session_id:
                    inc[i] = edge
                    _replace(source, old, edge)
                    return
            inc.append(edge)
        if source.out is None:
            source.out = [edge]
        else:
            source.out.append(edge)

    def _walk(self, session_id: str, max_depth: int, *, forward: bool) -> list[SessionNode]:
        if isinstance(max_depth, bool) or not isinstance(max_depth, int) or max_depth < 0:
            raise ValueError(f"max_depth must be an int >= 0 (edges to follow), got {max_depth!r}")
        start = self._vertex(session_id)
        seen: set[SessionId] = {start.node.session_id}
        found: list[SessionNode] = []
        frontier = [start]
        for _ in range(max_depth):
            following: list[_Vertex] = []
            for vertex in frontier:
                for edge in vertex.outgoing() if forward else vertex.incoming():
                    other = edge.to_session_id if forward else edge.from_session_id
                    if other not in seen:
                        seen.add(other)
                        nxt = self._vertices[other]
                        following.append(nxt)
                        found.append(nxt.node)
            if not following:
                break
            frontier = following
        return found


def _replace(source: _Vertex, old: LineageEdge, new: LineageEdge) -> None:
    out = source.out
    assert out is not None, "an incoming edge is always in its source's outgoing list"
    for i, edge in enumerate(out):
        if edge is old:
            out[i] = new
            return
    raise AssertionError("an incoming edge is always in its source's outgoing list")

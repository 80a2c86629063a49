"""The lineage graph's data: session nodes, typed edges, artifacts, metrics.

Edges point from the parent (or source) session to the child: ``branched_from`` goes from
the forked session's parent to the fork, ``spawned_by`` from the spawner to the spawn.
"""

from __future__ import annotations

from datetime import datetime
from typing import Literal

import attrs
from typing_extensions import TypeAlias

from modular_sdk import SessionId

__all__ = [
    "HOST_RELATIONS",
    "NATIVE_ARTIFACT_TYPES",
    "LineageArtifact",
    "LineageChain",
    "LineageEdge",
    "LineageRelation",
    "SessionMetrics",
    "SessionNode",
]

LineageRelation: TypeAlias = Literal[
    "continued_from", "branched_from", "spawned_by", "used_result_of", "delegated_from", "planned_by"
]
"""How one session relates to another. Closed: consumers may switch on it exhaustively."""

HOST_RELATIONS: tuple[LineageRelation, ...] = (
    "continued_from",
    "used_result_of",
    "delegated_from",
    "planned_by",
)
"""Relations an integrator records with ``add_edge``; the host records the other two."""

NATIVE_ARTIFACT_TYPES: tuple[str, ...] = ("canvas_card", "job_result", "plan_step", "file", "checkpoint", "turn")
"""Artifact types the host knows. The set is open: never switch exhaustively on it."""


@attrs.frozen(kw_only=True)
class LineageArtifact:
    """What was carried from one session to another. Immutable; ``type`` is open."""

    type: str
    source_id: str
    label: str


@attrs.frozen(kw_only=True)
class SessionMetrics:
    """Aggregates stamped by ``complete_session``. Immutable."""

    tool_calls: int
    token_usage: int
    duration_ms: int
    sessions_spawned: int


@attrs.frozen(kw_only=True)
class SessionNode:
    """A vertex of the lineage graph: one session. Immutable (completion makes a new one)."""

    session_id: SessionId
    created_at: datetime
    summary: str | None = None
    agent_id: str | None = None
    completed_at: datetime | None = None
    metrics: SessionMetrics | None = None


@attrs.frozen(kw_only=True)
class LineageEdge:
    """A typed relation from ``from_session_id`` to ``to_session_id``. Immutable.

    Writing the same (from, to) pair again replaces the edge.
    """

    from_session_id: SessionId
    to_session_id: SessionId
    relation: LineageRelation
    created_at: datetime
    artifact: LineageArtifact | None = None


@attrs.frozen(kw_only=True)
class LineageChain:
    """A session with its ancestors and descendants, and the edges between them."""

    nodes: tuple[SessionNode, ...]
    edges: tuple[LineageEdge, ...]

"""The lineage graph's data: session nodes, typed edges, artifacts, metrics.

Edges point from the parent (or source) session to the child: ``branched_from`` goes from
the forked session's parent to the fork, ``spawned_by`` from the spawner to the spawn.
"""

from __future__ import annotations

from datetime import datetime
from typing import Literal, TypeVar, get_args

import attrs
from typing_extensions import TypeAlias

from modular_sdk import SessionId
from modular_sdk._lineage import aware_datetime, non_negative_int

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

_RELATIONS: frozenset[str] = frozenset(get_args(LineageRelation))


_S = TypeVar("_S", bound=str)


def _relation(instance: object, attribute: attrs.Attribute[_S], value: _S) -> None:
    if value not in _RELATIONS:
        raise ValueError(
            f"{type(instance).__name__}.{attribute.name} must be one of "
            f"{sorted(_RELATIONS)!r}, got {value!r}"
        )


def _str(instance: object, attribute: attrs.Attribute[_S], value: _S) -> None:
    if not isinstance(value, str):
        raise TypeError(
            f"{type(instance).__name__}.{attribute.name} must be a str, got {value!r}"
        )


@attrs.frozen(kw_only=True)
class LineageArtifact:
    """What was carried from one session to another. Immutable; ``type`` is open."""

    type: str = attrs.field(validator=_str)
    source_id: str = attrs.field(validator=_str)
    label: str = attrs.field(validator=_str)


@attrs.frozen(kw_only=True)
class SessionMetrics:
    """Aggregates stamped by ``complete_session``. Immutable."""

    tool_calls: int = attrs.field(validator=non_negative_int)
    token_usage: int = attrs.field(validator=non_negative_int)
    duration_ms: int = attrs.field(validator=non_negative_int)
    sessions_spawned: int = attrs.field(validator=non_negative_int)


@attrs.frozen(kw_only=True, weakref_slot=False)  # one per session, turn or edge: 8 bytes each without it
class SessionNode:
    """A vertex of the lineage graph: one session. Immutable (completion makes a new one)."""

    session_id: SessionId = attrs.field(validator=_str)
    created_at: datetime = attrs.field(validator=aware_datetime)
    summary: str | None = None
    agent_id: str | None = None
    completed_at: datetime | None = attrs.field(default=None, validator=attrs.validators.optional(aware_datetime))
    metrics: SessionMetrics | None = None


@attrs.frozen(kw_only=True, weakref_slot=False)  # one per session, turn or edge: 8 bytes each without it
class LineageEdge:
    """A typed relation from ``from_session_id`` to ``to_session_id``. Immutable.

    Writing the same (from, to) pair again replaces the edge.
    """

    from_session_id: SessionId = attrs.field(validator=_str)
    to_session_id: SessionId = attrs.field(validator=_str)
    relation: LineageRelation = attrs.field(validator=_relation)
    created_at: datetime = attrs.field(validator=aware_datetime)
    artifact: LineageArtifact | None = None


@attrs.frozen(kw_only=True)
class LineageChain:
    """A session with its ancestors and descendants, and the edges between them."""

    nodes: tuple[SessionNode, ...]
    edges: tuple[LineageEdge, ...]

"""The error the lineage graph raises for an edge it will not record."""

from __future__ import annotations

from modular_sdk import ModularError

__all__ = ["LineageEdgeError"]


class LineageEdgeError(ModularError, ValueError):
    """`LineageGraph.add_edge` refused an edge.

    The relation is one only the host records (``branched_from``, ``spawned_by``) or not a
    relation at all, the edge goes from a session to itself, or it would replace an edge the
    host recorded. ``from_session_id``, ``to_session_id`` and ``relation`` are the refused
    edge's.
    """

    def __init__(self, message: str, *, from_session_id: str, to_session_id: str, relation: str) -> None:
        super().__init__(message)
        self.from_session_id = from_session_id
        self.to_session_id = to_session_id
        self.relation = relation

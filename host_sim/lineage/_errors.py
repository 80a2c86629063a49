"""The errors the lineage graph raises: an edge it will not record, an erasure that must wait."""

from __future__ import annotations

from modular_sdk import ModularError

__all__ = ["LineageEdgeError", "TurnRunningError"]


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


class TurnRunningError(ModularError, RuntimeError):
    """``forget`` or ``sessions.delete`` reaches a session whose turn (or job) is still running.

    Erasing then would leave text behind: the running turn's reply may rest on what is
    erased, and a job writes its record when it ends. Wait for the turn (``await
    turn.completed()``, ``await job.wait()``) or cancel it, then erase again. Nothing was
    erased. ``session_id`` is the busy session, ``running_id`` the running turn's or job's id.
    """

    def __init__(self, message: str, *, session_id: str, running_id: str) -> None:
        super().__init__(message)
        self.session_id = session_id
        self.running_id = running_id

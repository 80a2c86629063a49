"""`MemoryStore`: the default store, keeping records in this process's memory."""

from __future__ import annotations

from typing import final

from modular_sdk import SessionId, TurnId

from ..lineage._types import LineageEdge, SessionNode
from ._errors import StoreError
from ._records import SessionRecord, StoredState, TurnRecord

__all__ = ["MemoryStore"]


@final
class MemoryStore:
    """A store that keeps what a host writes in memory, for as long as this object lives.

    The default store of `Host`. Records are kept as given (they are immutable), never
    copied. A host closed and reopened on the same `MemoryStore` sees every session, turn,
    node and edge written before; nothing survives the process. Use `SqliteStore` to keep
    them on disk.

    >>> store = MemoryStore()
    >>> async with Host(store=store) as host: ...  # doctest: +SKIP
    """

    __slots__ = ("_edges", "_extra_edges", "_nodes", "_open", "_sessions", "_turns")

    def __init__(self) -> None:
        self._open = False
        self._sessions: dict[SessionId, SessionRecord] = {}
        self._turns: dict[TurnId, TurnRecord] = {}
        self._nodes: dict[SessionId, SessionNode] = {}
        # Most sessions have one incoming edge: key it by the receiving session alone, and
        # keep the rare second edge into the same session under its (from, to) pair.
        self._edges: dict[SessionId, LineageEdge] = {}
        self._extra_edges: dict[tuple[SessionId, SessionId], LineageEdge] = {}

    def __repr__(self) -> str:
        return (
            f"<MemoryStore {len(self._sessions)} sessions, {len(self._turns)} turns, "
            f"{len(self._edges) + len(self._extra_edges)} edges>"
        )

    async def open(self) -> StoredState:
        """Open the store; returns everything written to it so far.

        Sessions, turns and nodes come in the order first written (a rewrite keeps its
        place); edges grouped by receiving session, in the order that session first received
        one. Opening an open store only reads it again.
        """
        self._open = True
        return StoredState(
            sessions=tuple(self._sessions.values()),
            turns=tuple(self._turns.values()),
            nodes=tuple(self._nodes.values()),
            edges=(*self._edges.values(), *self._extra_edges.values()),
        )

    async def close(self) -> None:
        """Close the store; the records stay, and `open` returns them again."""
        self._open = False

    async def save_session(self, record: SessionRecord) -> None:
        """Keep a session record (a record with the same id replaces it)."""
        self._check_open()
        self._sessions[record.id] = record

    async def save_turn(self, record: TurnRecord) -> None:
        """Keep a finished turn (a record with the same id replaces it)."""
        self._check_open()
        self._turns[record.id] = record

    async def save_node(self, node: SessionNode) -> None:
        """Keep a lineage node (a node of the same session replaces it)."""
        self._check_open()
        self._nodes[node.session_id] = node

    async def save_edge(self, edge: LineageEdge) -> None:
        """Keep a lineage edge (an edge between the same two sessions replaces it)."""
        self._check_open()
        first = self._edges.get(edge.to_session_id)
        if first is None or first.from_session_id == edge.from_session_id:
            self._edges[edge.to_session_id] = edge
        else:
            self._extra_edges[edge.from_session_id, edge.to_session_id] = edge

    def _check_open(self) -> None:
        if not self._open:
            raise StoreError(
                "this MemoryStore is not open; a Host opens its store when entered "
                "(async with Host(store=...)), or call 'await store.open()' first"
            )

"""`MemoryStore`: the default store, keeping records in this process's memory."""

from __future__ import annotations

from collections.abc import Sequence
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
    node and edge written before; nothing survives the process. It keeps the same rules as
    `SqliteStore`: session records never change, a turn is begun once and finished once.
    Use `SqliteStore` to keep them on disk.

    >>> store = MemoryStore()
    >>> async with Host(store=store) as host: ...  # doctest: +SKIP
    """

    __slots__ = ("_edges", "_nodes", "_open", "_ordinals", "_sessions", "_turns")

    def __init__(self) -> None:
        self._open = False
        self._sessions: dict[SessionId, SessionRecord] = {}
        self._turns: dict[TurnId, TurnRecord] = {}
        self._ordinals: set[tuple[SessionId, int]] = set()
        self._nodes: dict[SessionId, SessionNode] = {}
        self._edges: dict[tuple[SessionId, SessionId], LineageEdge] = {}

    def __repr__(self) -> str:
        return f"<MemoryStore {len(self._sessions)} sessions, {len(self._turns)} turns, {len(self._edges)} edges>"

    async def open(self) -> StoredState:
        """Open the store; returns everything written to it so far.

        Sessions, turns, nodes and edges come in the order first written (a rewrite keeps
        its place). Opening an open store only reads it again.
        """
        self._open = True
        return StoredState(
            sessions=tuple(self._sessions.values()),
            turns=tuple(self._turns.values()),
            nodes=tuple(self._nodes.values()),
            edges=tuple(self._edges.values()),
        )

    async def close(self) -> None:
        """Close the store; the records stay, and `open` returns them again."""
        self._open = False

    async def create_session(self, record: SessionRecord, node: SessionNode, edge: LineageEdge | None) -> None:
        """Keep a new session, its node and its edge; refuses an id already kept."""
        self._check_open()
        if record.id in self._sessions:
            raise StoreError(
                f"session {record.id!r} is already stored and session records never change; "
                "create a new session instead"
            )
        self._sessions[record.id] = record
        self._nodes[node.session_id] = node
        if edge is not None:
            self._edges[edge.from_session_id, edge.to_session_id] = edge

    async def begin_turn(self, record: TurnRecord) -> None:
        """Keep a turn that starts (status ``running``)."""
        self._check_open()
        key = (record.session_id, record.ordinal)
        if record.status != "running" or record.id in self._turns or key in self._ordinals:
            raise StoreError(
                f"cannot begin turn {record.ordinal} ({record.id!r}) of session "
                f"{record.session_id!r}: a turn begins once, running, at a free ordinal"
            )
        self._turns[record.id] = record
        self._ordinals.add(key)

    async def finish_turn(self, record: TurnRecord) -> None:
        """Replace a running turn by its finished record."""
        self._check_open()
        old = self._turns.get(record.id)
        if old is None or old.status != "running" or record.status == "running" or old.ordinal != record.ordinal:
            raise StoreError(
                f"cannot finish turn {record.id!r}: only a running turn can be finished, once"
            )
        self._turns[record.id] = record

    async def save_node(self, node: SessionNode) -> None:
        """Replace the node of a session kept here."""
        self._check_open()
        if node.session_id not in self._sessions:
            raise StoreError(f"no session {node.session_id!r} is stored; a node belongs to a stored session")
        self._nodes[node.session_id] = node

    async def save_edge(self, edge: LineageEdge) -> None:
        """Keep a lineage edge (an edge between the same two sessions replaces it)."""
        self._check_open()
        for end in (edge.from_session_id, edge.to_session_id):
            if end not in self._sessions:
                raise StoreError(f"no session {end!r} is stored; an edge joins two stored sessions")
        self._edges[edge.from_session_id, edge.to_session_id] = edge

    async def rebuild_index(self, nodes: Sequence[SessionNode], edges: Sequence[LineageEdge]) -> None:
        """Replace every node and edge."""
        self._check_open()
        self._nodes = {n.session_id: n for n in nodes}
        self._edges = {(e.from_session_id, e.to_session_id): e for e in edges}

    def _check_open(self) -> None:
        if not self._open:
            raise StoreError(
                "this MemoryStore is not open; a Host opens its store when entered "
                "(async with Host(store=...)), or call 'await store.open()' first"
            )

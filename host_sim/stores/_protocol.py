"""The `Store` protocol: where a host keeps sessions, turns and lineage.

Every method that writes is one transaction: when it returns, everything it was given is
durable (for a durable store) and when it raises, nothing of it is. A write that fails
fails only its own call.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol

from ..lineage._types import LineageEdge, SessionNode
from ._records import SessionRecord, StoredState, TurnRecord

__all__ = ["Store"]


class Store(Protocol):
    """Durable (or not) persistence for a `Host`: authoritative records and a derived index.

    Session and turn records are authoritative. A session record is written once and
    never changes (``create_session`` refuses an id it already holds). A turn is written
    ``running`` by ``begin_turn`` before its model is called, and finished once by
    ``finish_turn``. The lineage index (one node per session, the ``branched_from`` and
    ``spawned_by`` edges) is derived from the records: it is written with them and can be
    rebuilt from them (``rebuild_index``). Edges of other relations and node completion
    (``save_node``) are the host's own additions to the index.

    Every method raises `host_sim.StoreError` naming the problem; ``open`` raises
    `host_sim.StoreLockedError` when another host holds a store that allows one writer.
    """

    async def open(self) -> StoredState:
        """Open the store and read back everything it holds."""
        ...

    async def close(self) -> None:
        """Flush and close; the store may be opened again."""
        ...

    async def create_session(
        self, record: SessionRecord, node: SessionNode, edge: LineageEdge | None
    ) -> None:
        """Write a new session with its lineage node and (fork, spawn) its edge, in one transaction.

        Refuses a session id the store already holds: records never change.
        """
        ...

    async def begin_turn(self, record: TurnRecord) -> None:
        """Write a turn that starts now (status ``running``). Refuses a taken id or ordinal."""
        ...

    async def finish_turn(self, record: TurnRecord) -> None:
        """Replace a ``running`` turn by its finished record (same id). Refuses any other."""
        ...

    async def save_node(self, node: SessionNode) -> None:
        """Replace the lineage node of a session the store holds (completion, metrics)."""
        ...

    async def save_edge(self, edge: LineageEdge) -> None:
        """Write a lineage edge between two sessions the store holds (same pair: replaced)."""
        ...

    async def rebuild_index(self, nodes: Sequence[SessionNode], edges: Sequence[LineageEdge]) -> None:
        """Replace the whole lineage index (nodes and edges) by these, in one transaction."""
        ...

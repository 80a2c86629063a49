"""The `Store` protocol: where a host keeps sessions, finished turns and lineage."""

from __future__ import annotations

from typing import Protocol

from ..lineage._types import LineageEdge, SessionNode
from ._records import SessionRecord, StoredState, TurnRecord

__all__ = ["Store"]


class Store(Protocol):
    """Durable (or not) persistence for a `Host`.

    The host keeps its live state in memory and writes through to the store: a session
    when it is created, a turn when it finishes, lineage nodes and edges when they are
    recorded. ``open`` returns what an earlier host wrote, so a host reopened on the same
    store sees every finished turn and all lineage. Writes of one key replace the old value
    (a node completed by ``complete_session``, an edge re-added).
    """

    async def open(self) -> StoredState:
        """Open the store and read back everything it holds."""
        ...

    async def close(self) -> None:
        """Flush and close; the store may be opened again."""
        ...

    async def save_session(self, record: SessionRecord) -> None: ...

    async def save_turn(self, record: TurnRecord) -> None: ...

    async def save_node(self, node: SessionNode) -> None: ...

    async def save_edge(self, edge: LineageEdge) -> None: ...

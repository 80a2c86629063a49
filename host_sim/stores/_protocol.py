"""The `Store` protocol: where a host keeps sessions, turns and lineage.

Every method that writes is one transaction: when it returns, everything it was given is
durable (for a durable store) and when it raises, nothing of it is. A write that fails
fails only its own call. Every method that reads reads by key (an id, a session's turns, a
session's edges) and costs what it returns: a host opens a store without reading it, and
reads what it touches. This is the shape a database shared by several hosts needs.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Final, Literal, Protocol

from modular_sdk import SessionId

from ..lineage._types import LineageEdge, SessionNode
from ._records import SessionRecord, StoredState, TurnRecord

__all__ = ["INDEX_VERSION", "Store"]

INDEX_VERSION: Final = 1
"""How the derived index is built from the records; a store whose index was built another
way (or never) reports a different `Store.index_version` and the host rebuilds it."""


class Store(Protocol):
    """Durable (or not) persistence for a `Host`: authoritative records and a derived index.

    Session and turn records are authoritative. A session record is written once and
    never changes (``create_session`` refuses an id it already holds). A turn is written
    ``running`` by ``begin_turn`` before its model is called, and finished once by
    ``finish_turn``. The lineage index (one node per session, the ``branched_from`` and
    ``spawned_by`` edges) is derived from the records: it is written with them and can be
    rebuilt from them (``rebuild_index``, which also records `INDEX_VERSION`). Edges of
    other relations and node completion (``save_node``) are the host's own additions to
    the index.

    Reads come in the order things were first written (a replaced edge or node keeps its
    place). Every method raises `host_sim.StoreError` naming the problem (a row it cannot
    read included); ``open`` raises `host_sim.StoreLockedError` when another host holds a
    store that allows one writer.
    """

    async def open(self) -> None:
        """Open the store (creating it if it allows); reads none of its records."""
        ...

    async def close(self) -> None:
        """Flush and close; the store may be opened again."""
        ...

    # -- writes ---------------------------------------------------------------------------

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
        """Replace the whole lineage index by these and record `INDEX_VERSION`, in one transaction."""
        ...

    async def erase(self, turns: Sequence[TurnRecord], edges: Sequence[LineageEdge]) -> None:
        """Forget: replace finished turns by their erased records (same id, ordinal, author,
        times and status; text gone; ``erased_at`` set) and rewrite edges, in one transaction.

        Refuses a turn that is running, unknown or already erased. A durable store leaves
        no copy of the erased text in its files once this returns.
        """
        ...

    # -- reads by key ---------------------------------------------------------------------

    async def index_version(self) -> int | None:
        """The `INDEX_VERSION` the index was last rebuilt with (``None``: never). Reads no rows."""
        ...

    async def get_session(self, session_id: SessionId) -> SessionRecord | None:
        """One session's record, or ``None``."""
        ...

    async def get_turns(self, session_id: SessionId) -> Sequence[TurnRecord]:
        """A session's own turns (not those a fork inherits), in ordinal order."""
        ...

    async def turns_since(self, session_id: SessionId, ordinal: int) -> Sequence[TurnRecord]:
        """A session's own turns from ``ordinal`` on, in ordinal order (costs what it returns)."""
        ...

    async def find_turn(self, turn_or_message_id: str) -> TurnRecord | None:
        """The turn with this turn id, or else with this message id, or ``None``."""
        ...

    async def spawned_during(self, turn_id: str) -> Sequence[SessionRecord]:
        """Sessions spawned by a tool call that turn ``turn_id`` made, in creation order."""
        ...

    async def running_turns(self) -> Sequence[TurnRecord]:
        """Every turn still ``running`` (after a crash: those it interrupted)."""
        ...

    async def child_sessions(self, session_id: SessionId) -> Sequence[SessionRecord]:
        """The forks and spawns of a session, in creation order."""
        ...

    async def list_sessions(self) -> Sequence[SessionRecord]:
        """Every session, in creation order."""
        ...

    async def get_nodes(self, session_ids: Sequence[SessionId]) -> Sequence[SessionNode]:
        """The nodes of these sessions (those the index holds), in the order asked."""
        ...

    async def get_edges(
        self, session_ids: Sequence[SessionId], direction: Literal["out", "in"]
    ) -> Sequence[LineageEdge]:
        """Edges out of (or into) these sessions: per session in the order asked, then in writing order."""
        ...

    async def find_edges(self, artifact_type: str, source_id: str) -> Sequence[LineageEdge]:
        """Edges whose artifact has this type and source id, in writing order."""
        ...

    async def read_all(self) -> StoredState:
        """Everything the store holds (for checks, repair and export: it reads every row)."""
        ...

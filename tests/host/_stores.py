"""Test helpers: records to write straight to a store, and everything a store holds, as a
check or a repair reads it."""

from __future__ import annotations

from datetime import UTC, datetime

from host_sim import Store, StoredState
from host_sim.lineage import SessionNode
from host_sim.stores import SessionRecord
from modular_sdk import AiRunnerId, RootLineage, SessionId

T0 = datetime(2026, 3, 4, 5, 6, 7, tzinfo=UTC)
"""When the records these helpers make were created."""


def session(sid: str) -> SessionRecord:
    """A root session's record, created at `T0`."""
    return SessionRecord(
        id=SessionId(sid),
        lineage=RootLineage(),
        metadata=None,
        model="echo",
        cwd="/work",
        runner_id=AiRunnerId(f"echo:{sid}"),
        created_at=T0,
    )


def node(sid: str) -> SessionNode:
    """The lineage node of `session` ``sid``."""
    return SessionNode(session_id=SessionId(sid), created_at=T0)


async def read_back(store: Store) -> StoredState:
    """Open ``store`` (a no-op when it is open) and read every row it holds."""
    await store.open()
    return await store.read_all()

"""Test helper: everything a store holds, as a check or a repair reads it."""

from __future__ import annotations

from host_sim import Store, StoredState


async def read_back(store: Store) -> StoredState:
    """Open ``store`` (a no-op when it is open) and read every row it holds."""
    await store.open()
    return await store.read_all()

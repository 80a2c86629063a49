"""`SharedStore`: what a store that several hosts write at once offers beyond `Store`.

A host's engine keeps the sessions it touched in memory. With one writer (`MemoryStore`,
`SqliteStore`) that memory is the truth; with several (`PostgresStore`) another host may
have added turns since, and turns of one session must still run one at a time across
hosts. The engine asks a store for this capability with ``isinstance(store, SharedStore)``
and, when it has it:

- holds ``lock_session(id)`` from before a turn of that session begins to after it
  finishes (the database grants it to hosts in the order they asked), and first catches
  up with ``turns_since(id, next_ordinal)``, so the turn's ordinal is the next one;
- catches up (without the lock) when it reads a session's history or forks it.
"""

from __future__ import annotations

from collections.abc import Sequence
from contextlib import AbstractAsyncContextManager
from typing import Protocol, runtime_checkable

from modular_sdk import SessionId

from ._records import TurnRecord

__all__ = ["SharedStore"]


@runtime_checkable
class SharedStore(Protocol):
    """A store several hosts write at once (see the module docstring)."""

    def lock_session(self, session_id: SessionId) -> AbstractAsyncContextManager[None]:
        """Hold the session's turn lock across hosts for the ``async with`` block (waits, cancellably)."""
        ...

    async def turns_since(self, session_id: SessionId, ordinal: int) -> Sequence[TurnRecord]:
        """The session's own turns from ``ordinal`` on, in ordinal order."""
        ...

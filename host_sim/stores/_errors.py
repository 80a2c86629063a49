"""The error a store raises when it cannot be opened, read or written."""

from __future__ import annotations

from modular_sdk import ModularError

__all__ = ["StoreError"]


class StoreError(ModularError, RuntimeError):
    """A store cannot be used: a file that is not a host-sim store, a newer schema, a closed store.

    ``path`` is the store's file (``None`` for a `MemoryStore`). The message names it and
    says what to do instead.
    """

    def __init__(self, message: str, *, path: str | None = None) -> None:
        super().__init__(message)
        self.path = path

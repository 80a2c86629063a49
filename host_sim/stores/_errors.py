"""The error a store raises when it cannot be opened, read or written."""

from __future__ import annotations

from modular_sdk import ModularError

__all__ = ["StoreError", "StoreLockedError"]


class StoreError(ModularError, RuntimeError):
    """A store cannot be used: a file that is not a host-sim store, a newer schema, a closed store.

    ``path`` is the store's file (for a `PostgresStore`: its DSN without the password;
    ``None`` for a `MemoryStore`). The message names it and says what to do instead.
    ``retryable`` is true when the store was away (a server restarting, a lost connection)
    and the same call may succeed later: retry it, with the same ``request_id=`` for a
    send, submit or start, so that a first attempt that was in fact stored is not stored twice.
    """

    def __init__(self, message: str, *, path: str | None = None, retryable: bool = False) -> None:
        super().__init__(message)
        self.path = path
        self.retryable = retryable


class StoreLockedError(StoreError):
    """Another host holds the store's file: a `SqliteStore` has one writer at a time.

    ``path`` is the file and ``pid`` the process that holds it (``None`` when it cannot be
    told). Close that host first, or open the store read-only (``SqliteStore(path,
    read_only=True)``, what ``host-sim lineage`` and ``host-sim fsck`` do); several hosts on
    one store is what `PostgresStore` is for.
    """

    def __init__(self, message: str, *, path: str, pid: int | None) -> None:
        super().__init__(message, path=path)
        self.pid = pid

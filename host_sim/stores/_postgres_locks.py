"""How hosts sharing a `PostgresStore` run one session's turns one at a time: `lock_session`
(see the `PostgresStore` module docstring, "Several hosts"), part of `PostgresDriver`.

A turn of session S runs while its host holds the session-level advisory lock
``(SESSION_LOCK, hashtext(S))`` on a connection of its own; PostgreSQL grants it to waiting
hosts in the order they asked. The erasure generation is read in the same round trip, once
the lock is granted. The lock is let go by a thread of the store's own (`Unlocker`): the
turn's caller does not wait for that round trip; whoever asks for the lock next (on any
host, this one's next turn included) is granted it once the server has run the unlock.
"""

from __future__ import annotations

import contextlib
import queue
import threading
from collections.abc import AsyncIterator, Callable
from typing import TYPE_CHECKING, Any, Final

import anyio
import anyio.to_thread

from modular_sdk import SessionId

from ._errors import StoreError
from ._postgres_sql import close_quietly

__all__ = ["IDLE_LOCK_CONNECTIONS", "SELECT_ERASURE_GENERATION", "SESSION_LOCK", "PostgresLocks", "Unlocker"]

SESSION_LOCK: Final = 0x48530001  # advisory lock class: one session's turns
IDLE_LOCK_CONNECTIONS: Final = 8
SELECT_ERASURE_GENERATION: Final = "SELECT value FROM host_sim.meta WHERE key = 'erasure_generation'"


class Unlocker:
    """Lets session locks go in a thread of its own, in the order they were handed over: an
    unlocked connection goes back to the idle ones (``keep``), one whose unlock failed is
    closed (which lets its locks go too). `stop` runs what was handed over, then ends."""

    def __init__(self, unlock: Callable[[Any, SessionId], None], keep: Callable[[Any], None]) -> None:
        self._unlock = unlock
        self._keep = keep
        self._queue: queue.SimpleQueue[tuple[Any, SessionId] | None] = queue.SimpleQueue()
        self._thread = threading.Thread(target=self._run, name="host-sim session unlocker", daemon=True)
        self._thread.start()

    def release(self, conn: Any, session_id: SessionId) -> None:
        """Let ``session_id``'s lock on ``conn`` go, soon (never blocks)."""
        self._queue.put((conn, session_id))

    def stop(self) -> None:
        """In a worker thread: let every lock handed over go, then end the thread."""
        self._queue.put(None)
        self._thread.join(60)

    def _run(self) -> None:
        while (item := self._queue.get()) is not None:
            conn, session_id = item
            try:
                self._unlock(conn, session_id)
            except Exception:  # noqa: BLE001 (the connection goes, and its locks with it)
                close_quietly(conn)
            else:
                self._keep(conn)


class PostgresLocks:
    """`lock_session` of `PostgresStore` (see the module docstring)."""

    __slots__ = ()

    if TYPE_CHECKING:  # supplied by PostgresDriver
        _owner_conn: Any
        _idle_locks: list[Any]
        _psycopg: Any
        _unlocker: Unlocker | None

        def connect(self) -> Any: ...
        def closed_error(self) -> StoreError: ...
        def database_error(self, exc: BaseException, doing: str) -> StoreError: ...

    @contextlib.asynccontextmanager
    async def lock_session(
        self, session_id: SessionId, read: tuple[str, tuple[object, ...]] | None = None
    ) -> AsyncIterator[tuple[int, list[tuple[Any, ...]] | None]]:
        """Hold session ``session_id``'s turn lock across every host of this database; yields
        the erasure generation and the rows of ``read`` (a statement and its parameters;
        ``None``: nothing more), both read once the lock is granted, in the lock's round trip.

        Waits (cancellably) until no other host holds it; hosts get it in the order they
        asked. The lock is held on a connection of its own until the block ends, or until
        this host's process dies.
        """
        conn = await self._lock_connection()
        try:
            granted = await self._wait_for_lock(conn, session_id, read)
        except StoreError as exc:  # closed by _wait_for_lock
            if not exc.retryable:
                raise
            # An idle connection the server ended (a restart, pg_terminate_backend): so were
            # the others; asked again once on a fresh one (the lock was never granted).
            stale: list[Any] = []
            while self._idle_locks:  # one at a time: the unlocker's thread may put one back meanwhile
                stale.append(self._idle_locks.pop())
            for old in stale:
                await anyio.to_thread.run_sync(close_quietly, old)
            conn = await self._lock_connection()
            granted = await self._wait_for_lock(conn, session_id, read)
        try:
            yield granted
        finally:
            unlocker = self._unlocker
            if unlocker is None:  # the store closed meanwhile: closing the connection lets the lock go
                with anyio.CancelScope(shield=True):
                    await anyio.to_thread.run_sync(close_quietly, conn)
            else:
                unlocker.release(conn, session_id)

    def keep_lock_connection(self, conn: Any) -> None:
        """An unlocked connection: kept for the next lock while the store is open (up to
        `IDLE_LOCK_CONNECTIONS`), else closed. Called by the `Unlocker`'s thread."""
        if len(self._idle_locks) < IDLE_LOCK_CONNECTIONS and self._owner_conn is not None:
            self._idle_locks.append(conn)
        else:
            close_quietly(conn)

    async def _lock_connection(self) -> Any:
        if self._owner_conn is None:
            raise self.closed_error()
        while self._idle_locks:
            conn = self._idle_locks.pop()
            if not conn.closed and not conn.broken:
                return conn
        made: list[Any] = []
        try:
            await anyio.to_thread.run_sync(lambda: made.append(self.connect()))
        except BaseException:
            for conn in made:  # connected, but the caller was cancelled meanwhile
                close_quietly(conn)
            raise
        return made[0]

    async def _wait_for_lock(
        self, conn: Any, session_id: SessionId, read: tuple[str, tuple[object, ...]] | None
    ) -> tuple[int, list[tuple[Any, ...]] | None]:
        done = threading.Event()
        state = threading.Lock()  # guards ``phase``: whether the waiting thread began, or was called off
        phase = ["new"]
        failure: list[BaseException] = []
        generation: list[int] = []
        rows: list[list[tuple[Any, ...]]] = []

        def wait() -> None:
            with state:
                if phase[0] == "called off":  # cancelled before this thread ran: never ask for the lock
                    done.set()
                    return
                phase[0] = "asking"
            try:
                # Statements in one round trip, one simple query (a pipeline costs more Python
                # per statement than the round trips it saves): the reads after the lock take
                # their snapshot once the lock is granted (never one from before the wait).
                cursor = self._psycopg.ClientCursor(conn)
                statements = ["SELECT pg_advisory_lock(%s, hashtext(%s))", SELECT_ERASURE_GENERATION]
                params: list[object] = [SESSION_LOCK, session_id]
                if read is not None:
                    statements.append(read[0])
                    params += read[1]
                cursor.execute(cursor.mogrify("; ".join(statements), params), None)
                cursor.nextset()
                row = cursor.fetchone()
                generation.append(int(row[0]) if row is not None else 0)
                if read is not None:
                    cursor.nextset()
                    rows.append(cursor.fetchall())
            except BaseException as exc:  # reported below, in the caller's task
                failure.append(exc)
            finally:
                done.set()

        def cancel() -> None:
            with state:
                began = phase[0] == "asking"
                phase[0] = "called off"
            if began:
                try:
                    conn.cancel_safe(timeout=10)
                except Exception:  # noqa: BLE001 (closing the connection below ends the wait anyway)
                    pass
                done.wait(30)
            close_quietly(conn)  # a lock granted just before the cancel goes with it

        try:
            await anyio.to_thread.run_sync(wait, abandon_on_cancel=True)
        except BaseException:
            with anyio.CancelScope(shield=True):
                await anyio.to_thread.run_sync(cancel)
            raise
        if failure:
            close_quietly(conn)
            raise self.database_error(failure[0], f"cannot lock session {session_id!r}")
        return generation[0], (rows[0] if rows else None)

    def _unlock_session(self, conn: Any, session_id: SessionId) -> None:
        try:
            conn.execute("SELECT pg_advisory_unlock(%s, hashtext(%s))", (SESSION_LOCK, session_id))
        except self._psycopg.Error as exc:
            raise self.database_error(exc, f"cannot unlock session {session_id!r}") from exc

"""`SqliteStore`: a durable store in one SQLite file (stdlib ``sqlite3``).

The store is the SQL store engine (``_sql_store.py``, shared with `PostgresStore`) built
with SQLite's dialect (``_sqlite_commit.DIALECT``, ``_sql.py``) and driver (`SqliteDriver`,
below: the file, its lock and the group commit of ``_sqlite_commit.py``;
``_sqlite_schema.py`` makes and upgrades a file). Beside the driver, this module holds
what only a SQLite store does: its erasure's last steps (the full-text index merged, the
WAL checkpointed), interrupting the jobs its one writer left running, and reading the
running turns. ``_rows.py`` holds the tables, the checks made before each write and the
rows each write needs.

The tables, their columns, indexes and triggers are the statements of ``_sqlite_schema.py``
(drawn nowhere else, so nothing drifts from them); what a store keeps and guarantees is
docs/embedding.md, "What a store guarantees". Every read is by key and served by an
index; opening reads no rows, a host reads what it touches.

Durability: WAL journal, ``synchronous = FULL``. Each store call is one transaction: when
it returns, all of it is on disk; when it raises, none of it is. Calls made while another
commits are committed together (group commit: one fsync for all), each inside its own
savepoint, so a call that fails (a refused or unencodable row) rolls back only itself;
rows are encoded and checked before they join a batch, and a batch whose commit fails
reports the failure to every call in it.

One writer: while open, the store holds an exclusive ``flock`` on ``<path>-lock`` (which
holds the writer's pid); a second writer gets `StoreLockedError`. The kernel drops the lock
when the process dies, so a crashed host never blocks the next one. Readers
(``read_only=True``) take no lock and never write.

All database work runs in one thread of the store's (``_handoff.ConnectionThread``) on one
connection, one call at a time, so the store works the same under asyncio and trio; the
task awaiting a call hands that thread the GIL, so a loop that never idles does not starve
a commit.
"""

from __future__ import annotations

import fcntl
import os
import sqlite3
from collections.abc import Callable, Sequence
from datetime import datetime
from pathlib import Path
from typing import IO, TypeVar, final
from urllib.parse import quote

import anyio
import attrs

from modular_sdk import InvalidArgumentError
from modular_sdk._rules import show

from . import _rows
from . import _sqlite_schema as _schema
from ._erasure import Erasure
from ._errors import StoreError, StoreLockedError
from ._handoff import ConnectionThread
from ._records import JobRecord, LineageEdge, SessionNode, SessionRecord, StoredState, TurnRecord
from ._renamed import warn_renamed
from ._sql_store import SqlStore
from ._sqlite_commit import DIALECT, Batch, Step, Txn, commit, upsert
from ._sqlite_schema import SCHEMA_VERSION as SCHEMA_VERSION

__all__ = ["SCHEMA_VERSION", "SqliteStore"]

_R = TypeVar("_R")


@final
class SqliteStore(SqlStore):
    """A durable store in one SQLite file: a reopened host sees every acknowledged write.

    ``path`` (and its folder) is created with its schema when missing, unless
    ``create=False``, which opens only an existing store. ``read_only=True`` opens an
    existing store for reading only: it takes no lock, so it works while a host writes the
    file (what ``host-sim lineage`` and ``host-sim fsck`` do), and every write raises
    `StoreError`.

    Opening raises `StoreLockedError` (naming the path and the pid) when another host
    holds the file, and `StoreError`, naming the path and the problem, for a file that is
    not a SQLite database, a database of another application, a store written by a newer
    host-sim, a file this process may not write (unless ``read_only``), or a damaged row.

    >>> async with Host(store=SqliteStore("chats.sqlite")) as host: ...  # doctest: +SKIP
    """

    __slots__ = ()

    _driver: SqliteDriver

    def __init__(self, path: str | os.PathLike[str], *, create: bool = True, read_only: bool = False) -> None:
        super().__init__(DIALECT, SqliteDriver(_store_path(path), create=create, read_only=read_only))

    def __repr__(self) -> str:
        state = "open" if self._driver.is_open else "closed"
        mode = ", read-only" if self.read_only else ""
        return f"<SqliteStore {str(self.path)!r} ({state}{mode})>"

    @property
    def path(self) -> Path:
        """The store's file."""
        return self._driver.path

    @property
    def read_only(self) -> bool:
        """Whether this store only reads (and takes no lock)."""
        return self._driver.read_only

    async def _records(
        self, table: _rows.Table, record: type[_R], where: str, params: tuple[object, ...]
    ) -> tuple[_R, ...]:
        return await self._records_where(table, record, where, params)

    async def erase(self, erasure: Erasure) -> None:
        """Carry out an erasure over every place that keeps text, in one transaction.

        The places are ``PLACES``; then the WAL is checkpointed so no erased text is left in
        it (free pages are zeroed: ``secure_delete`` is on)."""
        steps = self._erasure_steps(erasure, self._driver.tables)
        if (erasure.records or erasure.sessions) and "memory_fts" in self._driver.tables:
            # The FTS5 triggers took the erased text out; merging drops it from every segment.
            steps.append(Step("INSERT INTO memory_fts (memory_fts) VALUES ('optimize')", (), "cannot merge the memory index"))
        await self._transact(steps)
        await self._query("PRAGMA wal_checkpoint(TRUNCATE)", ())

    # -- the integrator's records (IntegratorStore) ----------------------------------------
    # (invocations, get_job, list_jobs, job_turn_began, request_job_cancel: SqlJobs)

    async def interrupt_jobs(self, now: Callable[[], datetime]) -> int:
        running = await self._records(_rows.JOBS, JobRecord, "WHERE status = 'running' ORDER BY rowid", ())
        if running:
            at = now()
            await self._transact(
                [
                    Step(
                        upsert(_rows.JOBS),
                        _rows.JOBS.row(
                            attrs.evolve(
                                job,
                                status="interrupted",
                                finished_at=at,
                                error="the host closed before the job finished",
                                error_kind="interrupted",
                            )
                        ),
                        f"cannot write job {job.id!r}",
                    )
                    for job in running
                ]
            )
        return len(running)

    # -- reads ----------------------------------------------------------------------------

    async def turns_left_running(self) -> Sequence[TurnRecord]:
        return await self._records(_rows.TURNS, TurnRecord, "WHERE status = 'running' ORDER BY rowid", ())

    async def running_turns(self) -> Sequence[TurnRecord]:
        """Deprecated: renamed `turns_left_running` (this name warns, and goes in the next release)."""
        warn_renamed(f"{type(self).__name__}.running_turns", "turns_left_running")
        return await self.turns_left_running()

class SqliteDriver:
    """One SQLite file, opened for `SqliteStore` (see the module docstring)."""

    __slots__ = (
        "_batch",
        "_conn",
        "_create",
        "_immutable_stat",
        "_lock",
        "_lock_file",
        "_lock_made",
        "_absent_tables",
        "_tables",
        "_thread",
        "_missing",
        "_path",
        "_read_only",
        "_has_traces",
    )

    def __init__(self, path: Path, *, create: bool, read_only: bool) -> None:
        self._path = path
        self._create = create and not read_only
        self._read_only = read_only
        self._conn: sqlite3.Connection | None = None
        self._lock: anyio.Lock | None = None
        self._lock_file: IO[str] | None = None
        self._lock_made = False  # this open made the -lock file (removed again if the open fails)
        self._immutable_stat: tuple[int, int] | None = None  # a closed file read without its -shm
        self._batch = Batch()
        self._thread = ConnectionThread(f"host-sim-sqlite {path.name}")
        self._missing: frozenset[str] = frozenset()  # "table.column"s an older schema lacks (readers)
        self._has_traces = False  # TraceStore: the trace tables exist (a reader may find them absent)
        self._absent_tables: frozenset[str] = frozenset()
        self._tables: frozenset[str] = frozenset()  # every table the file has (erasure reaches those)

    @property
    def is_open(self) -> bool:
        return self._conn is not None

    @property
    def path(self) -> Path:
        return self._path

    @property
    def read_only(self) -> bool:
        return self._read_only

    @property
    def owner(self) -> None:
        return None  # one writer: the running work is this host's

    @property
    def tables(self) -> frozenset[str]:
        """Every table the file has (an erasure reaches those)."""
        return self._tables

    def lacks(self, column: str) -> bool:
        """Whether the file lacks ``table.column`` (an older schema, opened by a reader)."""
        return column in self._missing

    def absent(self, table: str) -> bool:
        """Whether an older schema lacks the table ``table`` (a reader never upgrades)."""
        return table in self._absent_tables

    def has_table(self, table: str) -> bool:
        if table == "traces":
            return self._has_traces
        return table in self._tables

    async def open(self) -> None:
        """Open (or create) the file, checking that it is a host-sim store; reads no records.

        Opening an open store does nothing. Raises `StoreLockedError` or `StoreError`
        naming the path (see the class docstring).
        """
        if self._lock is None:
            self._lock = anyio.Lock()
        async with self._lock:
            if self._conn is None:
                try:
                    self._conn = await self._thread.run(self._connect)
                except BaseException:
                    self._thread.stop()
                    raise

    async def close(self) -> None:
        """Close the connection and release the file; everything acknowledged is on disk. Idempotent.

        The store may be opened again afterwards, under asyncio or trio.
        """
        lock = self._lock
        if lock is None:
            return
        with anyio.CancelScope(shield=True):
            async with lock:
                if not self._batch.done and self._batch.txns:
                    await self._flush(self._batch)  # calls of writers cancelled while queued
                conn, self._conn = self._conn, None
                self._lock = None  # made again by the next open(), in whatever event loop runs it
                try:
                    if conn is not None:
                        await self._thread.run(self._close_connection, conn)
                finally:
                    self._thread.stop()
                self._unlock()

    async def read_all(self) -> StoredState:
        """Every record and index row, in writing order (a check or a repair reads it all)."""
        lock, conn = self._lock, self._conn
        if lock is None or conn is None:
            raise self.closed_error()
        async with lock:
            return await self._thread.run(self._read_all, conn)

    # -- the driver's calls (`_sql.Driver`) -----------------------------------------------------------------------

    async def query(self, sql: str, params: tuple[object, ...]) -> list[tuple[object, ...]]:
        lock, conn = self._lock, self._conn
        if lock is None or conn is None:
            raise self.closed_error()
        async with lock:  # one call at a time on the one connection, between commits

            def run() -> list[tuple[object, ...]]:
                try:
                    return conn.execute(sql, params).fetchall()
                except sqlite3.Error as exc:
                    raise self.fail(f"cannot be read ({exc})", "the file is damaged; run host-sim fsck on it") from exc

            return await self._thread.run(run)

    def row(self, table: _rows.Table, record: object) -> tuple[object, ...]:
        return table.row(record)

    def columns(self, table: _rows.Table, alias: str = "") -> str:
        """The table's columns; one an older schema lacks reads as NULL (a reader never upgrades)."""
        return ", ".join(
            f"NULL AS {c}" if f"{table.name}.{c}" in self._missing else f"{alias}{c}" for c in table.columns
        )

    async def transact(self, steps: list[Step]) -> None:
        lock = self._lock
        if lock is None or self._conn is None:
            raise self.closed_error()
        if self._read_only:
            raise self.fail(
                "is open read-only", "open it with SqliteStore(path) (no read_only) in the one host that writes it"
            )
        # Group commit: a call queues its transaction in the open batch; whoever holds the
        # lock next commits the whole batch at once, so concurrent writers share one fsync.
        # Each caller returns once its own transaction is committed, or raises its error.
        txn = Txn(steps)
        batch = self._batch
        batch.txns.append(txn)
        async with lock:
            if not batch.done:
                await self._flush(batch)
        if txn.error is not None:
            raise txn.error

    async def _flush(self, batch: Batch) -> None:
        """Commit ``batch`` (the open one); call with the lock held."""
        self._batch = Batch()
        conn = self._conn
        try:
            if conn is None:
                for txn in batch.txns:
                    txn.error = self.closed_error()
            elif batch.txns:
                with anyio.CancelScope(shield=True):  # a started write always finishes
                    await self._thread.run(self._commit, conn, batch.txns)
        finally:
            batch.done = True

    def closed_error(self) -> StoreError:
        return StoreError(
            f"the SQLite store {str(self._path)!r} is not open; a Host opens its store when "
            "entered (async with Host(store=...)), or call 'await store.open()' first",
            path=str(self._path),
        )

    def fail(self, problem: str, remedy: str) -> StoreError:
        return StoreError(f"{str(self._path)!r} {problem}; {remedy}", path=str(self._path))

    def refuse(self, problem: str) -> StoreError:
        """A write this store refuses (a rule of `_rows`, or a constraint the database holds)."""
        return self.fail(f"refused a write: {problem}", "records never change")

    def _commit(self, conn: sqlite3.Connection, txns: list[Txn]) -> None:
        """Run every transaction of a batch, each in its own savepoint, and commit once."""
        commit(conn, txns, refuse=self.refuse, write_error=self._write_error)

    def _write_error(self, exc: sqlite3.Error) -> StoreError:
        if isinstance(exc, sqlite3.OperationalError) and "readonly" in str(exc):
            return self.fail(
                f"is read-only ({exc})",
                "give this process write permission, or open it with read_only=True to read it",
            )
        return self.fail(f"could not be written ({exc})", "check the disk and the file's permissions")

    def _close_connection(self, conn: sqlite3.Connection) -> None:
        if not self._read_only:
            try:  # leave everything in the main file: an empty WAL holds no old page
                conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
            except sqlite3.Error:
                pass  # a reader holds it; SQLite checkpoints when the last connection closes
        conn.close()

    # -- opening -------------------------------------------------------------------------

    def _lock_path(self) -> Path:
        return self._path.with_name(self._path.name + "-lock")

    def _take_lock(self) -> None:
        """Hold ``<path>-lock``: the file at that path, locked, even while a closing host
        removes it (a lock on a file already unlinked guards nothing: take the new one)."""
        lock_path = self._lock_path()
        while True:
            handle = self._lock_once(lock_path)
            try:
                same = os.path.samestat(os.fstat(handle.fileno()), os.stat(lock_path))
            except FileNotFoundError:
                same = False
            if same:
                break
            handle.close()  # the holder removed the file as we locked it: lock the one there now
        handle.seek(0)
        handle.truncate()
        handle.write(f"{os.getpid()}\n")
        handle.flush()
        self._lock_file = handle

    def _lock_once(self, lock_path: Path) -> IO[str]:
        self._lock_made = not lock_path.exists()
        try:
            handle = open(lock_path, "a+", encoding="ascii")  # noqa: SIM115 (held while open)
        except OSError as exc:
            raise self.fail(f"cannot be locked: {lock_path} cannot be opened ({exc})", "check the folder's permissions") from exc
        try:
            fcntl.flock(handle.fileno(), fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            handle.seek(0)
            holder = handle.read().strip()
            handle.close()
            pid = int(holder) if holder.isdigit() else None
            who = f"process {pid}" if pid is not None else "another process"
            raise StoreLockedError(
                f"{str(self._path)!r} is held by another host ({who}, lock {str(lock_path)!r}); "
                "a SQLite store has one writer: close that host first, open it with "
                "SqliteStore(path, read_only=True) to read it, or use PostgresStore for several hosts",
                path=str(self._path),
                pid=pid,
            ) from None
        return handle

    def _unlock(self, *, refused: bool = False) -> None:
        """Drop the writer lock and remove its file (nothing is left beside the store after a
        clean close); ``refused``: the open failed, so only a lock file it made goes."""
        handle, self._lock_file = self._lock_file, None
        if handle is not None:
            if not refused or self._lock_made:  # still held: a host opening it now takes the next file
                self._lock_path().unlink(missing_ok=True)
            handle.close()  # closing the descriptor drops the flock

    def _connect(self) -> sqlite3.Connection:
        path = self._path
        if not self._create and not path.exists():
            raise self.fail("does not exist", "pass the path of a store a host wrote (--store PATH)")
        if path.is_dir():
            raise self.fail("is a directory", "pass a file path for the SQLite store")
        if not self._read_only:
            if not path.parent.is_dir():
                raise self.fail(
                    f"cannot be created: its folder {str(path.parent)!r} does not exist",
                    "create the folder first, or pass a path in an existing folder",
                )
            if path.exists() and not os.access(path, os.W_OK):
                raise self.fail(
                    "is read-only (this process may not write it)",
                    "give it write permission, or open it with read_only=True to read it",
                )
            self._take_lock()
        try:
            if self._read_only:
                # A reader of a WAL file needs its -shm file, and creates it (and a -wal) when
                # no host has the store open, leaving files nobody asked for (and failing in a
                # folder it may not write). With no -wal the store is closed: its main file
                # holds every committed write, so read that file as immutable; `_read_all`
                # refuses the snapshot if a host changed the file meanwhile.
                wal = path.with_name(path.name + "-wal")
                immutable = not wal.exists()
                self._immutable_stat = self._stat() if immutable else None
                conn = sqlite3.connect(
                    f"file:{quote(str(path.absolute()))}?mode=ro{'&immutable=1' if immutable else ''}",
                    uri=True,
                    isolation_level=None,
                    check_same_thread=False,
                )
            else:
                conn = sqlite3.connect(path, isolation_level=None, check_same_thread=False)
        except sqlite3.Error as exc:
            self._unlock(refused=True)
            raise self.fail(f"cannot be opened ({exc})", "check the path") from exc
        try:
            self._prepare(conn)
        except BaseException:
            conn.close()
            self._unlock(refused=True)
            raise
        return conn

    def _stat(self) -> tuple[int, int]:
        stat = self._path.stat()
        return stat.st_mtime_ns, stat.st_size

    def _prepare(self, conn: sqlite3.Connection) -> None:
        """Check the file's schema (a writer brings an older one up to date) and note what it has."""
        found = _schema.prepare(
            conn, create=self._create, read_only=self._read_only, fail=self.fail, write_error=self._write_error
        )
        self._missing, self._tables = found.missing, found.tables
        self._absent_tables, self._has_traces = found.absent_tables, found.has_traces

    def _read_all(self, conn: sqlite3.Connection) -> StoredState:
        state = StoredState(
            sessions=self._read(conn, _rows.SESSIONS, SessionRecord),
            turns=self._read(conn, _rows.TURNS, TurnRecord),
            nodes=self._read(conn, _rows.NODES, SessionNode),
            edges=self._read(conn, _rows.EDGES, LineageEdge),
        )
        if self._immutable_stat is not None and self._immutable_stat != self._stat():
            raise self.fail("changed while it was read (a host opened and wrote it)", "read it again")
        return state

    def _read(self, conn: sqlite3.Connection, table: _rows.Table, record: type[_R]) -> tuple[_R, ...]:
        out: list[_R] = []
        try:
            rows = conn.execute(f"SELECT {self.columns(table)} FROM {table.name} ORDER BY rowid").fetchall()
        except sqlite3.Error as exc:
            raise self.fail(f"cannot be read ({exc})", "the file is damaged; run host-sim fsck on it") from exc
        for row in rows:
            out.append(self.decode(table, record, row))
        return tuple(out)

    def decode(self, table: _rows.Table, record: type[_R], row: Sequence[object]) -> _R:
        return _rows.decode(table, record, row, self.damaged)

    def damaged(self, problem: str) -> StoreError:
        return self.fail(problem, "the file is damaged or was edited by hand; run host-sim fsck on it")


def _store_path(path: object) -> Path:
    """``SqliteStore``'s path checked at the door: text (or os.PathLike of text), no NUL."""
    given: object = path
    fspath = os.fspath(given) if isinstance(given, (str, os.PathLike)) else None
    if not isinstance(fspath, str) or not fspath or "\x00" in fspath:
        raise InvalidArgumentError(
            f"SqliteStore needs the store file's path as a non-empty str or os.PathLike without NUL, "
            f"got {show(given)}; pass e.g. SqliteStore('host.sqlite')",
            argument="path",
            value=given,
        )
    return Path(fspath)

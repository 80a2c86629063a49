"""`SqliteStore`: a durable store in one SQLite file (stdlib ``sqlite3``).

Layout (schema version 1)::

    meta(key PRIMARY KEY, value)             application = 'host-sim', schema_version = '1'
    sessions(id PRIMARY KEY, lineage JSON, metadata JSON, model, cwd, runner_id,
             created_at, agent_id)
    turns(id PRIMARY KEY, session_id, ordinal, message JSON, message_id, author JSON,
          runner_id, status, reply, error, started_at, finished_at)
    nodes(session_id PRIMARY KEY, created_at, summary, agent_id, completed_at, metrics JSON)
    edges(from_session_id, to_session_id, relation, created_at, artifact JSON,
          PRIMARY KEY (from_session_id, to_session_id))

JSON columns hold what the one converter (``modular_sdk._json``) writes, tags included
(a lineage's ``kind``, a message's ``type``, an author's ``kind``); times are ISO 8601
with their offset. Rows are read back in the order first written (an upsert keeps the
row). WAL journal, ``synchronous = FULL``, and every write is its own committed
transaction: once a ``save_*`` returns, the record survives a crash. Writes made while
another is being committed are committed together (group commit: one fsync for all).

All database work runs in a worker thread (``anyio.to_thread``) on one connection, one
call at a time in the order the calls were made, so the store works the same under
asyncio and trio.
"""

from __future__ import annotations

import json
import os
import sqlite3
from collections.abc import Sequence
from pathlib import Path
from typing import Final, TypeVar, final

import anyio
import anyio.to_thread
import attrs

from modular_sdk import SerializationError
from modular_sdk._json import structure, unstructure

from ..lineage._types import LineageEdge, SessionNode
from ._errors import StoreError
from ._records import SessionRecord, StoredState, TurnRecord

__all__ = ["SCHEMA_VERSION", "SqliteStore"]

SCHEMA_VERSION: Final = 1
"""The schema this host-sim writes and reads; a store with a newer one is refused."""

_APPLICATION: Final = "host-sim"

_R = TypeVar("_R")

_SCHEMA: Final = """
CREATE TABLE meta (
    key TEXT PRIMARY KEY,
    value TEXT NOT NULL
);
CREATE TABLE sessions (
    id TEXT PRIMARY KEY,
    lineage TEXT NOT NULL,
    metadata TEXT,
    model TEXT NOT NULL,
    cwd TEXT NOT NULL,
    runner_id TEXT NOT NULL,
    created_at TEXT NOT NULL,
    agent_id TEXT
);
CREATE TABLE turns (
    id TEXT PRIMARY KEY,
    session_id TEXT NOT NULL,
    ordinal INTEGER NOT NULL,
    message TEXT NOT NULL,
    message_id TEXT NOT NULL,
    author TEXT NOT NULL,
    runner_id TEXT NOT NULL,
    status TEXT NOT NULL,
    reply TEXT,
    error TEXT,
    started_at TEXT NOT NULL,
    finished_at TEXT NOT NULL
);
CREATE INDEX turns_by_session ON turns (session_id, ordinal);
CREATE TABLE nodes (
    session_id TEXT PRIMARY KEY,
    created_at TEXT NOT NULL,
    summary TEXT,
    agent_id TEXT,
    completed_at TEXT,
    metrics TEXT
);
CREATE TABLE edges (
    from_session_id TEXT NOT NULL,
    to_session_id TEXT NOT NULL,
    relation TEXT NOT NULL,
    created_at TEXT NOT NULL,
    artifact TEXT,
    PRIMARY KEY (from_session_id, to_session_id)
);
"""


@attrs.frozen
class _Table:
    """How one record type maps to a table: its columns are the record's attrs fields."""

    name: str
    record: type
    key: tuple[str, ...]
    json_columns: frozenset[str]
    columns: tuple[str, ...] = attrs.field(init=False)
    upsert: str = attrs.field(init=False)
    select: str = attrs.field(init=False)

    def __attrs_post_init__(self) -> None:
        columns = tuple(f.name for f in attrs.fields(self.record))
        updates = ", ".join(f"{c} = excluded.{c}" for c in columns if c not in self.key)
        object.__setattr__(self, "columns", columns)
        object.__setattr__(
            self,
            "upsert",
            f"INSERT INTO {self.name} ({', '.join(columns)}) "
            f"VALUES ({', '.join('?' for _ in columns)}) "
            f"ON CONFLICT ({', '.join(self.key)}) DO UPDATE SET {updates}",
        )
        object.__setattr__(
            self, "select", f"SELECT {', '.join(columns)} FROM {self.name} ORDER BY rowid"
        )

    def row(self, record: object) -> tuple[object, ...]:
        data = unstructure(record)
        return tuple(
            json.dumps(data[c], ensure_ascii=False, separators=(",", ":"))
            if c in self.json_columns and data[c] is not None
            else data[c]
            for c in self.columns
        )

    def read(self, row: Sequence[object]) -> object:
        data = {
            c: json.loads(v) if c in self.json_columns and isinstance(v, str) else v
            for c, v in zip(self.columns, row, strict=True)
        }
        return structure(data, self.record)


@attrs.define
class _Batch:
    """Rows queued for one transaction, and how it went."""

    rows: list[tuple[str, tuple[object, ...]]] = attrs.Factory(list)
    done: bool = False
    error: StoreError | None = None


_SESSIONS: Final = _Table("sessions", SessionRecord, ("id",), frozenset({"lineage", "metadata"}))
_TURNS: Final = _Table("turns", TurnRecord, ("id",), frozenset({"message", "author"}))
_NODES: Final = _Table("nodes", SessionNode, ("session_id",), frozenset({"metrics"}))
_EDGES: Final = _Table(
    "edges", LineageEdge, ("from_session_id", "to_session_id"), frozenset({"artifact"})
)
_TABLES: Final = (_SESSIONS, _TURNS, _NODES, _EDGES)


@final
class SqliteStore:
    """A durable store in one SQLite file: a reopened host sees every finished turn and all lineage.

    ``path`` (and its folder) is created with its schema when missing, unless ``create=False``, which
    opens only an existing store and never writes a schema (what ``host-sim lineage``
    does). Opening raises `StoreError`, naming the path, for a file that is not a SQLite
    database, a SQLite database of another application, or a store written by a newer
    host-sim (a newer schema version).

    >>> async with Host(store=SqliteStore("chats.sqlite")) as host: ...  # doctest: +SKIP
    """

    __slots__ = ("_batch", "_conn", "_create", "_lock", "_path")

    def __init__(self, path: str | os.PathLike[str], *, create: bool = True) -> None:
        self._path = Path(path)
        self._create = create
        self._conn: sqlite3.Connection | None = None
        self._lock: anyio.Lock | None = None
        self._batch = _Batch()

    def __repr__(self) -> str:
        state = "open" if self._conn is not None else "closed"
        return f"<SqliteStore {str(self._path)!r} ({state})>"

    @property
    def path(self) -> Path:
        """The store's file."""
        return self._path

    async def open(self) -> StoredState:
        """Open (or create) the file and read back everything it holds, in writing order.

        Opening an open store only reads it again. Raises `StoreError` naming the path
        when the file cannot be used (see the class docstring).
        """
        if self._lock is None:
            self._lock = anyio.Lock()
        async with self._lock:
            if self._conn is None:
                self._conn = await anyio.to_thread.run_sync(self._connect)
            return await anyio.to_thread.run_sync(self._read_all, self._conn)

    async def close(self) -> None:
        """Close the connection; everything written is already on disk. Idempotent.

        The store may be opened again afterwards, under asyncio or trio.
        """
        lock = self._lock
        if lock is None:
            return
        async with lock:
            if not self._batch.done and self._batch.rows:
                await self._flush(self._batch)  # rows of writers cancelled while queued
            conn, self._conn = self._conn, None
            self._lock = None  # made again by the next open(), in whatever event loop runs it
            if conn is not None:
                await anyio.to_thread.run_sync(conn.close)

    async def save_session(self, record: SessionRecord) -> None:
        """Write a session (same id: replaced) and commit."""
        await self._write(_SESSIONS, record)

    async def save_turn(self, record: TurnRecord) -> None:
        """Write a finished turn (same id: replaced) and commit."""
        await self._write(_TURNS, record)

    async def save_node(self, node: SessionNode) -> None:
        """Write a lineage node (same session: replaced) and commit."""
        await self._write(_NODES, node)

    async def save_edge(self, edge: LineageEdge) -> None:
        """Write a lineage edge (same two sessions: replaced) and commit."""
        await self._write(_EDGES, edge)

    # -- internals -----------------------------------------------------------------------

    async def _write(self, table: _Table, record: object) -> None:
        row = table.row(record)
        lock = self._lock
        if lock is None or self._conn is None:
            raise self._closed_error()
        # Group commit: a write queues its row in the open batch; whoever holds the lock
        # next commits the whole batch in one transaction, so concurrent writers share one
        # fsync. Each caller returns once its own row is committed (or raises its error).
        batch = self._batch
        batch.rows.append((table.upsert, row))
        async with lock:
            if not batch.done:
                await self._flush(batch)
        if batch.error is not None:
            raise batch.error

    async def _flush(self, batch: _Batch) -> None:
        """Commit ``batch`` (the open one); call with the lock held."""
        self._batch = _Batch()
        conn = self._conn
        try:
            if conn is None:
                batch.error = self._closed_error()
            elif batch.rows:
                with anyio.CancelScope(shield=True):  # a started write always finishes
                    await anyio.to_thread.run_sync(self._commit, conn, batch.rows)
        except StoreError as exc:
            batch.error = exc
        finally:
            batch.done = True

    def _closed_error(self) -> StoreError:
        return StoreError(
            f"the SQLite store {str(self._path)!r} is not open; a Host opens its store when "
            "entered (async with Host(store=...)), or call 'await store.open()' first",
            path=str(self._path),
        )

    def _fail(self, problem: str, remedy: str) -> StoreError:
        return StoreError(f"{str(self._path)!r} {problem}; {remedy}", path=str(self._path))

    def _commit(self, conn: sqlite3.Connection, rows: list[tuple[str, tuple[object, ...]]]) -> None:
        try:
            if len(rows) == 1:
                conn.execute(*rows[0])  # autocommit: one statement, one transaction
                return
            conn.execute("BEGIN IMMEDIATE")
            try:
                for sql, row in rows:
                    conn.execute(sql, row)
            except BaseException:
                conn.execute("ROLLBACK")
                raise
            conn.execute("COMMIT")
        except sqlite3.Error as exc:
            raise self._fail(
                f"could not be written ({exc})", "check the disk and the file's permissions"
            ) from exc

    def _connect(self) -> sqlite3.Connection:
        path = self._path
        if not self._create and not path.exists():
            raise self._fail(
                "does not exist", "pass the path of a store a host wrote (--store PATH)"
            )
        if path.is_dir():
            raise self._fail("is a directory", "pass a file path for the SQLite store")
        if self._create:
            try:  # '.host-sim/store.sqlite' in a fresh project: make the folder too
                path.parent.mkdir(parents=True, exist_ok=True)
            except OSError as exc:
                raise self._fail(f"cannot be created ({exc})", "check the path") from exc
        try:
            conn = sqlite3.connect(path, isolation_level=None, check_same_thread=False)
        except sqlite3.Error as exc:
            raise self._fail(f"cannot be opened ({exc})", "check the path") from exc
        try:
            self._prepare(conn)
        except BaseException:
            conn.close()
            raise
        return conn

    def _prepare(self, conn: sqlite3.Connection) -> None:
        try:
            tables = {
                name
                for (name,) in conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'")
            }
        except sqlite3.DatabaseError as exc:
            raise self._fail(
                f"is not a SQLite database ({exc})",
                "pass the path of a host-sim store, or a new path to create one",
            ) from exc
        if not tables:
            if not self._create:
                raise self._fail(
                    "is an empty SQLite database, not a host-sim store",
                    "pass the path of a store a host wrote",
                )
            conn.execute("PRAGMA journal_mode = WAL")
            conn.execute("BEGIN")
            for statement in _SCHEMA.split(";"):
                if statement.strip():
                    conn.execute(statement)
            conn.executemany(
                "INSERT INTO meta (key, value) VALUES (?, ?)",
                [("application", _APPLICATION), ("schema_version", str(SCHEMA_VERSION))],
            )
            conn.execute("COMMIT")
        else:
            self._check_meta(conn, tables)
            conn.execute("PRAGMA journal_mode = WAL")
        conn.execute("PRAGMA synchronous = FULL")

    def _check_meta(self, conn: sqlite3.Connection, tables: set[str]) -> None:
        meta: dict[str, str] = {}
        if "meta" in tables:
            try:
                meta = {str(k): str(v) for k, v in conn.execute("SELECT key, value FROM meta")}
            except sqlite3.DatabaseError:
                meta = {}
        if meta.get("application") != _APPLICATION:
            raise self._fail(
                f"is a SQLite database of another application (tables: {', '.join(sorted(tables))}), "
                "not a host-sim store",
                "pass the path of a host-sim store, or a new path to create one",
            )
        raw = meta.get("schema_version", "")
        try:
            version = int(raw)
        except ValueError:
            raise self._fail(
                f"has an unreadable schema version {raw!r}", "the file is damaged; use another path"
            ) from None
        if version > SCHEMA_VERSION:
            raise self._fail(
                f"was written by a newer host-sim (schema version {version}; this one reads "
                f"up to {SCHEMA_VERSION})",
                "upgrade host-sim to open it",
            )
        if version < 1:
            raise self._fail(
                f"has an unknown schema version {version}", "the file is damaged; use another path"
            )
        missing = {t.name for t in _TABLES} - tables
        if missing:
            raise self._fail(
                f"lacks the tables {', '.join(sorted(missing))}", "the file is damaged; use another path"
            )

    def _read_all(self, conn: sqlite3.Connection) -> StoredState:
        return StoredState(
            sessions=self._read(conn, _SESSIONS, SessionRecord),
            turns=self._read(conn, _TURNS, TurnRecord),
            nodes=self._read(conn, _NODES, SessionNode),
            edges=self._read(conn, _EDGES, LineageEdge),
        )

    def _read(self, conn: sqlite3.Connection, table: _Table, record: type[_R]) -> tuple[_R, ...]:
        out: list[_R] = []
        try:
            rows = conn.execute(table.select).fetchall()
        except sqlite3.Error as exc:
            raise self._fail(f"cannot be read ({exc})", "the file is damaged; use another path") from exc
        for row in rows:
            try:
                value = table.read(row)
            except (SerializationError, json.JSONDecodeError) as exc:
                key = ", ".join(repr(row[table.columns.index(k)]) for k in table.key)
                raise self._fail(
                    f"holds an unreadable {table.name} row ({key}): {exc}",
                    "the file is damaged or was edited by hand",
                ) from exc
            assert isinstance(value, record)
            out.append(value)
        return tuple(out)

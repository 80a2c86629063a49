"""How a `PostgresStore` talks to its database: a small pool of connections, one
transaction per store call (`Step`s, refused as a whole), decoding rows into records, and
the errors every failure becomes (naming the DSN, never its password). Inherited by
`PostgresStore`.

All database work runs in worker threads (``anyio.to_thread``) with psycopg 3's blocking
API; psycopg is imported when a store is opened, never before.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any, Final, TypeVar

import anyio
import anyio.to_thread

from . import _rows
from ._errors import StoreError
from ._postgres_sql import Refused, Step, close_quietly, cols, diagnosis
from ._records import LineageEdge
from ._shared import EventRow, staged_rows

__all__ = ["PostgresCommit", "redact"]

_R = TypeVar("_R")

_PASSWORD_IN_URL: Final = re.compile(r"^([a-z]+://[^:/@?#]*):[^@/?#]*@", re.IGNORECASE)
_PASSWORD_PARAM: Final = re.compile(r"(password\s*=\s*)('(?:[^'\\]|\\.)*'|[^\s&]*)", re.IGNORECASE)


def redact(dsn: str) -> str:
    """``dsn`` without its password (URL or key/value form), for messages and reprs."""
    return _PASSWORD_PARAM.sub(r"\1***", _PASSWORD_IN_URL.sub(r"\1:***@", dsn))


def _password_of(dsn: str) -> str | None:
    match = _PASSWORD_IN_URL.match(dsn)
    if match:
        whole = match.group(0)
        return whole[len(match.group(1)) + 1 : -1] or None
    found = _PASSWORD_PARAM.search(dsn)
    if found:
        return found.group(2).strip("'") or None
    return None


class PostgresCommit:
    """Connections, transactions and errors of `PostgresStore` (see the module docstring)."""

    __slots__ = ()

    if TYPE_CHECKING:  # supplied by PostgresStore
        _dsn: str
        _psycopg: Any
        _slots: anyio.Semaphore | None
        _owner_conn: Any
        _idle: list[Any]

        @property
        def path(self) -> str: ...
        def _check_event_rows(self, rows: Sequence[EventRow]) -> None: ...
        def _insert_events(self, conn: Any, rows: Sequence[EventRow]) -> int: ...

    def _row(self, table: _rows.Table, record: object) -> tuple[object, ...]:
        row = table.row(record)
        if self._psycopg is None:  # checked here too, so a closed store says so first
            raise self._closed_error()
        for column, value in zip(table.columns, row, strict=True):
            if isinstance(value, str) and "\x00" in value:
                key = ", ".join(f"{k}={getattr(record, k, '?')!r}" for k in table.key)
                raise StoreError(
                    f"cannot store {table.name}.{column} of {key} in {self.path!r}: it holds a NUL "
                    f"character (\\x00 at position {value.index(chr(0))}), which PostgreSQL text "
                    "cannot hold; remove it where the text enters",
                    path=self.path,
                )
        return row

    def _edge_row(self, edge: LineageEdge) -> tuple[object, ...]:
        artifact = edge.artifact
        return (
            *self._row(_rows.EDGES, edge),
            None if artifact is None else artifact.type,
            None if artifact is None else artifact.source_id,
        )

    async def _with_connection(self, work: Callable[[Any], _R]) -> _R:
        slots = self._slots
        if slots is None or self._owner_conn is None:
            raise self._closed_error()
        async with slots:
            # The idle connection is taken in the worker thread: a task cancelled before the
            # thread starts must not drop one it took (it would be left open, unowned).
            conn, result = await anyio.to_thread.run_sync(self._run, work)
            if self._owner_conn is not None:
                self._idle.append(conn)
            else:
                close_quietly(conn)  # the store closed meanwhile (no await: nothing may drop it)
            return result

    def _run(self, work: Callable[[Any], _R]) -> tuple[Any, _R]:
        """In a worker thread: run ``work`` on an idle connection (connecting when there is none)."""
        try:
            conn = self._idle.pop()
        except IndexError:
            conn = None
        if conn is None or conn.closed or conn.broken:
            conn = self._connect()
        try:
            return conn, work(conn)
        except BaseException as exc:
            if conn.broken or conn.info.transaction_status != self._psycopg.pq.TransactionStatus.IDLE:
                close_quietly(conn)
                if isinstance(exc, StoreError) and exc.retryable:  # the server went away: so did the idle ones
                    stale, self._idle[:] = list(self._idle), []
                    for other in stale:
                        close_quietly(other)
            else:
                self._idle.append(conn)
            raise

    async def _query(self, sql: str, params: tuple[object, ...]) -> list[tuple[Any, ...]]:
        def run(conn: Any) -> list[tuple[Any, ...]]:
            try:
                rows: list[tuple[Any, ...]] = conn.execute(sql, params).fetchall()
                return rows
            except self._psycopg.Error as exc:
                raise self._database_error(exc, "cannot be read") from exc

        try:
            return await self._with_connection(run)
        except StoreError as exc:
            if not exc.retryable:
                raise
            # An idle connection the server ended (a restart, pg_terminate_backend) fails its
            # first use; a read is tried once more on a fresh one (a write is the caller's to retry).
            return await self._with_connection(run)

    def _traces_present(self) -> bool:
        return True  # made with the store, or given to it when a host opened it

    def _approvals_present(self) -> bool:
        return True  # made with the store, or given to it when a host opened it

    def _lacks(self, column: str) -> bool:
        return False  # a database is brought up to date when a host opens it

    async def _records_where(
        self, table: _rows.Table, record: type[_R], where: str, params: tuple[object, ...]
    ) -> tuple[_R, ...]:
        return await self._records(table, record, f"SELECT {cols(table)} FROM host_sim.{table.name} {where}", params)

    async def _records(
        self, table: _rows.Table, record: type[_R], sql: str, params: tuple[object, ...]
    ) -> tuple[_R, ...]:
        rows = await self._query(sql, params)
        return tuple(self._decode(table, record, row) for row in rows)

    def _decode_all(self, conn: Any, table: _rows.Table, record: type[_R]) -> tuple[_R, ...]:
        try:
            rows = conn.execute(f"SELECT {cols(table)} FROM host_sim.{table.name} ORDER BY seq", ()).fetchall()
        except self._psycopg.Error as exc:
            raise self._database_error(exc, "cannot be read") from exc
        return tuple(self._decode(table, record, row) for row in rows)

    def _decode(self, table: _rows.Table, record: type[_R], row: Sequence[object]) -> _R:
        return _rows.decode(table, record, row, self._damaged)

    def _damaged(self, problem: str) -> StoreError:
        return self._fail(problem, "the row was edited by hand; run 'host-sim fsck --store DSN' on it")

    async def _transact(self, steps: list[Step]) -> None:
        """Run ``steps`` in one transaction, with the event rows the calling task staged for it
        (`staged`, a transactional outbox): the rows commit with the change or not at all."""
        events = staged_rows()
        if events is not None:
            self._check_event_rows(events.rows)
        first: list[int] = []

        def run(conn: Any) -> None:
            psycopg = self._psycopg
            try:
                with conn.transaction():
                    for step in steps:
                        try:
                            cursor = conn.execute(step.sql, step.params)
                        except (psycopg.IntegrityError, psycopg.errors.RaiseException) as exc:
                            raise Refused(f"{step.refusal} ({diagnosis(exc)})") from None
                        if step.expect != "any" and cursor.rowcount < 1:  # changed, or found, no row
                            raise Refused(step.refusal)
                    if events is not None:
                        first.append(self._insert_events(conn, events.rows))
            except Refused as refused:
                raise self._refuse(str(refused)) from None
            except psycopg.Error as exc:
                raise self._database_error(exc, "could not be written") from exc

        await self._with_connection(run)
        if events is not None and first:
            events.written(first[0])

    def _closed_error(self) -> StoreError:
        return StoreError(
            f"the PostgreSQL store {self.path!r} is not open; a Host opens its store when "
            "entered (async with Host(store=...)), or call 'await store.open()' first",
            path=self.path,
        )

    def _fail(self, problem: str, remedy: str) -> StoreError:
        return StoreError(f"the PostgreSQL store {self.path!r} {problem}; {remedy}", path=self.path)

    def _refuse(self, problem: str) -> StoreError:
        """A write this store refuses (a rule of `_rows`, or a constraint the database holds)."""
        return self._fail(f"refused a write: {problem}", "records never change")

    def _database_error(self, exc: BaseException, doing: str) -> StoreError:
        psycopg = self._psycopg
        text = self._scrub(diagnosis(exc))
        if psycopg is not None and isinstance(exc, psycopg.OperationalError):
            return StoreError(
                f"the PostgreSQL store {self.path!r} {doing}: the connection to the server failed ({text}); "
                "the server is away (restarting, or the connection was lost): the call is retryable once it "
                "is back (pass the same request_id= to a send, submit or start, so that it is stored once)",
                path=self.path,
                retryable=True,
            )
        if psycopg is not None and isinstance(exc, psycopg.errors.InsufficientPrivilege):
            return self._fail(f"{doing}: permission denied ({text})", "grant the role access to schema host_sim")
        if psycopg is not None and isinstance(exc, psycopg.errors.UndefinedTable):
            return self._fail(f"{doing}: its tables are gone ({text})", "the schema host_sim was dropped; restore it")
        return self._fail(f"{doing} ({text})", "see the server's log")

    def _scrub(self, text: str) -> str:
        password = _password_of(self._dsn)
        return text.replace(password, "***") if password else text

    def _import(self) -> Any:
        if self._psycopg is None:
            try:
                import psycopg
            except ImportError as exc:
                raise StoreError(
                    f"PostgresStore needs psycopg 3, which is not installed ({exc}); install the "
                    "extra: pip install 'modular-chat-sdk[postgres]'",
                    path=self.path,
                ) from None
            self._psycopg = psycopg
        return self._psycopg

    def _connect(self) -> Any:
        psycopg = self._import()
        try:
            params = psycopg.conninfo.conninfo_to_dict(self._dsn)
        except psycopg.ProgrammingError as exc:
            raise StoreError(
                f"{self.path!r} is not a PostgreSQL connection string ({self._scrub(diagnosis(exc))}); pass "
                "'postgresql://user@host:5432/dbname' or 'host=... port=... dbname=...'",
                path=self.path,
            ) from None
        # Never prepared: a prepared statement may switch to a generic plan, which cannot
        # tell that one session's turns from ordinal k on are a few rows (it scans).
        extra: dict[str, object] = {"autocommit": True, "prepare_threshold": None}
        if "application_name" not in params:
            extra["application_name"] = "host-sim"
        if "connect_timeout" not in params:
            extra["connect_timeout"] = 10
        try:
            return psycopg.connect(self._dsn, **extra)
        except psycopg.Error as exc:
            raise self._connect_error(exc) from None

    def _connect_error(self, exc: BaseException) -> StoreError:
        text = self._scrub(diagnosis(exc))
        low = text.lower()
        if "does not exist" in low and "database" in low:
            remedy = "create it first (createdb NAME, or CREATE DATABASE NAME), or pass the DSN of an existing database"
        elif "password" in low or "authentication" in low or ("role" in low and "does not exist" in low):
            remedy = "check the user and password in the DSN (or the server's pg_hba.conf)"
        else:  # the server is away (stopped, restarting, in recovery, unreachable): try again later
            remedy = (
                "start the PostgreSQL server, or check the host and port in the DSN; when the server is "
                "only restarting, the call is retryable once it is back"
            )
            return StoreError(
                f"cannot connect to the PostgreSQL store {self.path!r}: {text}; {remedy}", path=self.path, retryable=True
            )
        return StoreError(f"cannot connect to the PostgreSQL store {self.path!r}: {text}; {remedy}", path=self.path)

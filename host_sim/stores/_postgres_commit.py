"""How a `PostgresStore` talks to its database, the driver below the SQL store engine
(`_sql_store`): a small pool of connections, one transaction per store call (`Step`s,
refused as a whole, with the event rows the task staged), decoding rows into records, the
errors every failure becomes (naming the DSN, never its password), this host's liveness
claim (the owner lock), and what only PostgreSQL's connections give several hosts:
`lock_session` (`_postgres_locks`) and the event log's LISTEN/NOTIFY (`_postgres_events`).

All database work runs in worker threads (``anyio.to_thread``) with psycopg 3's blocking
API; psycopg is imported when a store is opened, never before.
"""

from __future__ import annotations

import contextlib
import re
import secrets
import threading
from collections.abc import Callable, Sequence
from datetime import timedelta
from typing import Any, Final, TypeVar

import anyio
import anyio.to_thread

from . import _rows
from ._errors import StoreError
from ._postgres_events import FORGET_GONE_LISTENERS, PostgresEvents, appended, close_listener
from ._postgres_locks import PostgresLocks, Unlocker
from ._postgres_schema import prepare
from ._postgres_sql import OWNER_LOCK, Refused, Step, close_quietly, cols, diagnosis
from ._prepared import PreparedStatements
from ._records import LineageEdge, SessionNode, SessionRecord, StoredState, TurnRecord
from ._shared import EventRow, staged_rows

__all__ = ["OWNER_LOCK", "PostgresDriver", "redact"]


_R = TypeVar("_R")

read_seen: Callable[[str, tuple[object, ...]], None] | None = None
"""A seam declared for tests: when set, `PostgresDriver.query` hands it every read's
statement and parameters before running it (tests/host/stores/test_postgres_sql.py
EXPLAINs each read the store makes). ``None`` in a host."""

_PASSWORD_IN_URL: Final = re.compile(r"^([a-z]+://[^:/@?#]*):[^@/?#]*@", re.IGNORECASE)
_PASSWORD_PARAM: Final = re.compile(r"(password\s*=\s*)('(?:[^'\\]|\\.)*'|[^\s&]*)", re.IGNORECASE)


_GUARD_MARK: Final = " rows: host-sim found no row the write expects"


def _guarded(statement: str) -> str | None:
    """``statement`` (a template: its parameters are bound after) as one that raises (invalid
    input for an integer) when it finds or changes no row, so that its transaction never
    reaches COMMIT; ``None`` when it cannot be wrapped so (a CTE or a RETURNING of its own).
    The template decides, never bound text: the caller's data may say anything."""
    head = statement.lstrip()[:7].upper()
    if " RETURNING " in statement.upper() or head.startswith("WITH"):
        return None
    refuse = f"SELECT (c.n || '{_GUARD_MARK}')::int FROM (SELECT count(*) AS n FROM s) c WHERE c.n = 0"
    if head.startswith("SELECT"):
        return f"WITH s AS ({statement}) {refuse}"
    if head.startswith(("UPDATE", "DELETE", "INSERT")):
        return f"WITH s AS ({statement} RETURNING 1) {refuse}"
    return None


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


class PostgresDriver(PostgresLocks, PostgresEvents):
    """One PostgreSQL database, opened for `PostgresStore` (see the module docstring)."""

    __slots__ = (
        "_connections",
        "_create",
        "_dsn",
        "_event_retention",
        "_listener",
        "_listening",
        "_idle",
        "_idle_locks",
        "_lock",
        "_owner",
        "_owner_conn",
        "_prepared",
        "_psycopg",
        "_unlocker",
        "_slots",
    )

    def __init__(self, dsn: str, *, create: bool, connections: int, event_retention: timedelta) -> None:
        self._event_retention = event_retention
        self._listener: Any = None
        self._listening = threading.Lock()  # held by the thread waiting on the listener
        self._dsn = dsn
        self._create = create
        self._connections = connections
        self._psycopg: Any = None
        self._prepared: PreparedStatements | None = None
        self._lock: anyio.Lock | None = None
        self._slots: anyio.Semaphore | None = None
        self._idle: list[Any] = []
        self._idle_locks: list[Any] = []
        self._unlocker: Unlocker | None = None  # lets session locks go (`lock_session`) while open
        self._owner_conn: Any = None
        self._owner = 0

    @property
    def path(self) -> str:
        """The DSN without its password: what messages and `StoreError.path` name."""
        return redact(self._dsn)

    @property
    def is_open(self) -> bool:
        return self._owner_conn is not None

    @property
    def owner(self) -> int | None:
        """This open store's owner key (the liveness claim it holds, written into the work it runs)."""
        return self._owner

    @property
    def prepared(self) -> PreparedStatements:
        """What each connection prepared (made with the first connection)."""
        if self._prepared is None:
            self._prepared = PreparedStatements(self._import())
        return self._prepared

    @property
    def psycopg(self) -> Any:
        """The psycopg module (imported when the store was opened)."""
        return self._psycopg

    # -- lifecycle -----------------------------------------------------------------------

    async def open(self) -> None:
        if self._lock is None:
            self._lock = anyio.Lock()
        async with self._lock:
            if self._owner_conn is None:
                conn, owner = await anyio.to_thread.run_sync(self._connect_owner)
                self._owner_conn, self._owner = conn, owner
                self._slots = anyio.Semaphore(self._connections)
                self._unlocker = Unlocker(self._unlock_session, self.keep_lock_connection)

    async def close(self) -> None:
        lock = self._lock
        if lock is None:
            return
        with anyio.CancelScope(shield=True):
            async with lock:
                unlocker, self._unlocker = self._unlocker, None
                if unlocker is not None:  # the locks handed over go first (their connections back to the idle ones)
                    await anyio.to_thread.run_sync(unlocker.stop)
                conns = [self._owner_conn, *self._idle, *self._idle_locks]
                self._owner_conn, self._idle, self._idle_locks = None, [], []
                listener, self._listener = self._listener, None
                if listener is not None:  # woken (a NOTIFY), then closed once no thread waits on it
                    await anyio.to_thread.run_sync(close_listener, listener, self._listening, conns[0])
                    await anyio.to_thread.run_sync(self.leave_listeners, conns[0])
                self._lock = self._slots = None
                for conn in conns:
                    if conn is not None:  # this host's locks go first, so other hosts see it gone at once
                        await anyio.to_thread.run_sync(close_quietly, conn, True)

    def _connect_owner(self) -> tuple[Any, int]:
        """In a worker thread: the first connection, the schema checked or created, and this store's owner key."""
        conn = self.connect()
        try:
            self._prepare(conn)
            with contextlib.suppress(self._psycopg.Error):  # killed hosts' rows (UndefinedTable: an old store)
                conn.execute(FORGET_GONE_LISTENERS, ())
            while True:  # a key no live store holds
                owner = secrets.randbelow(2**31 - 2) + 1
                if conn.execute("SELECT pg_try_advisory_lock(%s, %s)", (OWNER_LOCK, owner)).fetchone()[0]:
                    return conn, owner
        except BaseException:
            close_quietly(conn)
            raise

    def _prepare(self, conn: Any) -> None:
        """In a worker thread: check the schema of the database, or create it (see `_postgres_schema.prepare`)."""
        prepare(
            conn,
            create=self._create,
            psycopg=self._psycopg,
            fail=self.fail,
            database_error=self.database_error,
            scrub=self.scrub,
        )

    async def keep_claim(self) -> bool:
        """Make sure this host's liveness claim (the owner lock) is held; whether it had to be
        taken again. After a server restart or a killed connection the claim is gone with the
        connection that held it: a fresh connection takes the same key back, so the turns and
        jobs this host owns stay its own. Raises a retryable `StoreError` while the server is away."""
        if self._owner_conn is None:
            raise self.closed_error()
        return await anyio.to_thread.run_sync(self._keep_claim)

    def _keep_claim(self) -> bool:
        conn = self._owner_conn
        if conn is None:
            raise self.closed_error()
        psycopg = self._psycopg
        if not conn.closed and not conn.broken:
            try:
                conn.execute("SELECT 1", ())
                return False
            except psycopg.Error:
                pass
        fresh = self.connect()  # retryable StoreError while the server is away
        try:
            while True:
                taken = fresh.execute("SELECT pg_try_advisory_lock(%s, %s)", (OWNER_LOCK, self._owner)).fetchone()[0]
                if taken:
                    break
                # Another store took this key while the server had forgotten this one (a one
                # in two billion chance): this host goes on under a new key.
                self._owner = secrets.randbelow(2**31 - 2) + 1
        except psycopg.Error as exc:
            close_quietly(fresh)
            raise self.database_error(exc, "could not take back its liveness claim") from exc
        if self._owner_conn is None:  # closed meanwhile
            close_quietly(fresh)
            raise self.closed_error()
        old, self._owner_conn = self._owner_conn, fresh
        close_quietly(old)
        if self._listener is not None:  # a host that opened meanwhile may have taken this host's row away
            with contextlib.suppress(psycopg.Error):
                self.join_listeners(fresh)
        return True

    async def read_all(self) -> StoredState:
        def read(conn: Any) -> StoredState:
            with conn.transaction():
                conn.execute("SET TRANSACTION ISOLATION LEVEL REPEATABLE READ READ ONLY", ())
                return StoredState(
                    sessions=self._decode_all(conn, _rows.SESSIONS, SessionRecord),
                    turns=self._decode_all(conn, _rows.TURNS, TurnRecord),
                    nodes=self._decode_all(conn, _rows.NODES, SessionNode),
                    edges=self._decode_all(conn, _rows.EDGES, LineageEdge),
                )

        return await self.with_connection(read)

    # -- the driver's calls (`_sql.Driver`) ----------------------------------------------

    def row(self, table: _rows.Table, record: object) -> tuple[object, ...]:
        row = table.row(record)
        if self._psycopg is None:  # checked here too, so a closed store says so first
            raise self.closed_error()
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

    async def with_connection(self, work: Callable[[Any], _R]) -> _R:
        slots = self._slots
        if slots is None or self._owner_conn is None:
            raise self.closed_error()
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
            conn = self.connect()
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

    async def query(self, sql: str, params: tuple[object, ...]) -> list[tuple[Any, ...]]:
        if read_seen is not None:
            read_seen(sql, params)

        def run(conn: Any) -> list[tuple[Any, ...]]:
            try:
                rows: list[tuple[Any, ...]] = conn.execute(sql, params).fetchall()
                return rows
            except self._psycopg.Error as exc:
                raise self.database_error(exc, "cannot be read") from exc

        try:
            return await self.with_connection(run)
        except StoreError as exc:
            if not exc.retryable:
                raise
            # An idle connection the server ended (a restart, pg_terminate_backend) fails its
            # first use; a read is tried once more on a fresh one (a write is the caller's to retry).
            return await self.with_connection(run)

    def columns(self, table: _rows.Table, alias: str = "") -> str:
        return cols(table, alias)

    def lacks(self, column: str) -> bool:
        return False  # a database is brought up to date when a host opens it

    def has_table(self, table: str) -> bool:
        return True  # made with the store, or given to it when a host opened it

    def _decode_all(self, conn: Any, table: _rows.Table, record: type[_R]) -> tuple[_R, ...]:
        try:
            rows = conn.execute(f"SELECT {cols(table)} FROM host_sim.{table.name} ORDER BY seq", ()).fetchall()
        except self._psycopg.Error as exc:
            raise self.database_error(exc, "cannot be read") from exc
        return tuple(self.decode(table, record, row) for row in rows)

    def decode(self, table: _rows.Table, record: type[_R], row: Sequence[object]) -> _R:
        return _rows.decode(table, record, row, self.damaged)

    def damaged(self, problem: str) -> StoreError:
        return self.fail(problem, "the row was edited by hand; run 'host-sim fsck --store DSN' on it")

    async def transact(self, steps: list[Step]) -> None:
        """Run ``steps`` in one transaction, with the event rows the calling task staged for it
        (`staged`, a transactional outbox): the rows commit with the change or not at all."""
        events = staged_rows()
        if events is not None:
            self.check_event_rows(events.rows)
        first: list[tuple[int, bool]] = []  # the first row's seq, and whether the rules rewrote a row

        def run(conn: Any) -> None:
            psycopg = self._psycopg
            try:
                if self._batched(conn, steps, events.rows if events is not None else None, first):
                    return
            except psycopg.Error as exc:
                raise self.database_error(exc, "could not be written") from exc
            try:  # refused, or a statement raised: again one statement at a time, for the exact refusal
                with contextlib.ExitStack() as tail, conn.transaction():  # COMMIT ends tail's pipeline
                    for step in steps:
                        try:
                            cursor = conn.execute(step.sql, step.params)
                        except (psycopg.IntegrityError, psycopg.errors.RaiseException) as exc:
                            raise Refused(f"{step.refusal} ({diagnosis(exc)})") from None
                        if step.expect != "any" and cursor.rowcount < 1:  # changed, or found, no row
                            raise Refused(step.refusal)
                    if events is not None:
                        seq_of = self.insert_events(conn, events.rows, tail)
                if events is not None:
                    first.append(seq_of())  # (read here: the connection goes back to the pool next)
            except Refused as refused:
                raise self.refuse(str(refused)) from None
            except psycopg.Error as exc:
                raise self.database_error(exc, "could not be written") from exc

        await self.with_connection(run)
        if events is not None and first:
            events.written(first[0][0], rewritten=first[0][1])

    def _batched(
        self, conn: Any, steps: list[Step], events: Sequence[EventRow] | None, first: list[tuple[int, bool]]
    ) -> bool:
        """In a worker thread: the transaction of `transact` in one round trip (two when a step's
        expectation cannot be checked by the server); ``False``, rolled back, when a step broke
        a constraint or its expectation (the caller runs it again step by step, which names
        the refusal). The statements go as one simple query, their parameters bound by
        psycopg's client-side binding (`ClientCursor`, which quotes as the server would): a
        turn's write was a round trip per statement, BEGIN and COMMIT included."""
        psycopg = self._psycopg
        cursor = psycopg.ClientCursor(conn)
        statements = ["BEGIN"]  # templates, bound all at once below (one pass of psycopg's binding)
        params: list[object] = []
        checked: list[tuple[int, Step]] = []  # expectations checked here, before COMMIT
        for step in steps:
            text = step.sql
            if step.expect != "any":
                guarded = _guarded(text)
                if guarded is None:
                    checked.append((len(statements), step))
                else:
                    text = guarded
            statements.append(text)
            params += step.params
        inserted = -1  # the statement that appends the event rows (`event_statement`): its answer is read
        if events:
            inserted = len(statements)
            appending, appended_params = self.event_statement(events)
            statements.append(appending)
            params += appended_params
        if not checked:
            statements.append("COMMIT")
        statements = self.prepared.executing(conn, statements)
        try:
            # None, not (): the statements hold their parameters already, a percent is a percent
            cursor.execute(cursor.mogrify("; ".join(statements), params), None)
        except (
            psycopg.IntegrityError,
            psycopg.errors.RaiseException,
            psycopg.errors.InvalidTextRepresentation,
            psycopg.errors.InvalidSqlStatementName,  # its prepared statements are gone: run unprepared
        ) as exc:
            if isinstance(exc, psycopg.errors.InvalidSqlStatementName):
                self.prepared.forget(conn)
            if not conn.broken and conn.info.transaction_status != psycopg.pq.TransactionStatus.IDLE:
                conn.execute("ROLLBACK", ())
            return False
        except BaseException:
            if not conn.broken and conn.info.transaction_status != psycopg.pq.TransactionStatus.IDLE:
                with contextlib.suppress(psycopg.Error):
                    conn.execute("ROLLBACK", ())
            raise
        rowcounts: list[int] = []
        answers: list[tuple[int, bool]] = []
        while True:
            rowcounts.append(cursor.rowcount)
            if len(rowcounts) - 1 == inserted:
                answers.append(appended(cursor.fetchone()))
            if not cursor.nextset():
                break
        if checked:
            if any(rowcounts[i] < 1 for i, _ in checked):
                conn.execute("ROLLBACK", ())
                return False
            conn.execute("COMMIT", ())
        first.extend(answers)
        return True

    def closed_error(self) -> StoreError:
        return StoreError(
            f"the PostgreSQL store {self.path!r} is not open; a Host opens its store when "
            "entered (async with Host(store=...)), or call 'await store.open()' first",
            path=self.path,
        )

    def fail(self, problem: str, remedy: str) -> StoreError:
        return StoreError(f"the PostgreSQL store {self.path!r} {problem}; {remedy}", path=self.path)

    def refuse(self, problem: str) -> StoreError:
        """A write this store refuses (a rule of `_rows`, or a constraint the database holds)."""
        return self.fail(f"refused a write: {problem}", "records never change")

    def database_error(self, exc: BaseException, doing: str) -> StoreError:
        psycopg = self._psycopg
        text = self.scrub(diagnosis(exc))
        if psycopg is not None and isinstance(exc, psycopg.OperationalError):
            return StoreError(
                f"the PostgreSQL store {self.path!r} {doing}: the connection to the server failed ({text}); "
                "the server is away (restarting, or the connection was lost): the call is retryable once it "
                "is back (pass the same request_id= to a send, submit or start, so that it is stored once)",
                path=self.path,
                retryable=True,
            )
        if psycopg is not None and isinstance(exc, psycopg.errors.InsufficientPrivilege):
            return self.fail(f"{doing}: permission denied ({text})", "grant the role access to schema host_sim")
        if psycopg is not None and isinstance(exc, psycopg.errors.UndefinedFunction) and "append_events" in text:
            return self.fail(
                f"{doing}: its schema lacks the function host_sim.append_events ({text})",
                "it was made by an older host-sim and opened since only by a role that may not create "
                "functions in schema host_sim; open it once with a role that may (the store's owner)",
            )
        if psycopg is not None and isinstance(exc, psycopg.errors.UndefinedTable):
            return self.fail(f"{doing}: its tables are gone ({text})", "the schema host_sim was dropped; restore it")
        return self.fail(f"{doing} ({text})", "see the server's log")

    def scrub(self, text: str) -> str:
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

    def connect(self) -> Any:
        psycopg = self._import()
        try:
            params = psycopg.conninfo.conninfo_to_dict(self._dsn)
        except psycopg.ProgrammingError as exc:
            raise StoreError(
                f"{self.path!r} is not a PostgreSQL connection string ({self.scrub(diagnosis(exc))}); pass "
                "'postgresql://user@host:5432/dbname' or 'host=... port=... dbname=...'",
                path=self.path,
            ) from None
        # Reads are never prepared: a prepared statement may switch to a generic plan, which
        # cannot tell that one session's turns from ordinal k on are a few rows (it scans).
        # A write transaction's statements are (`PreparedStatements`): they find rows by key.
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
        text = self.scrub(diagnosis(exc))
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

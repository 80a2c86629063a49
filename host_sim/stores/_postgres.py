"""`PostgresStore`: one session graph in a PostgreSQL database, shared by several hosts.

The store is the SQL store engine (``_sql_store.py``, shared with `SqliteStore`) built
with PostgreSQL's dialect (``_postgres_sql.DIALECT``, ``_sql.py``) and driver
(``_postgres_commit.PostgresDriver``: connections, transactions, the liveness claim,
`lock_session` of ``_postgres_locks.py`` and the event log of ``_postgres_events.py``;
``_postgres_schema.py`` and ``_postgres_traces.py`` make the schema). This module holds
what only several hosts on PostgreSQL do: claiming a dead host's work, and the event
log's share of an erasure or deletion; the reads served by PostgreSQL's copied columns
are the engine's, spelled by the dialect. ``_rows.py`` holds the tables, the checks made
before each write and the rows each write needs.

The tables, their columns, indexes and triggers are the statements of
``_postgres_schema.py`` (drawn nowhere else, so nothing drifts from them); what a store
keeps and guarantees is docs/embedding.md, "What a store guarantees". Columns hold what
`SqliteStore` holds, byte for byte; every read is by key and served by an index; opening
reads no rows.

Each store call is one transaction on one connection of a small pool (``connections``),
sent as one round trip (``BEGIN``, its statements, its event rows and ``COMMIT`` in one
simple query, `PostgresDriver.transact`); a commit returns once PostgreSQL has made it durable (``synchronous_commit`` as the server
sets it: on by default). Calls of one host run concurrently on different connections, and
PostgreSQL's own group commit shares fsyncs between them.

Several hosts (`lock_session`): a turn of session S runs while its host holds the
session-level advisory lock ``(class 0x48530001, hashtext(S))`` on a connection of its own,
from before the turn is begun to after it is finished. PostgreSQL grants the lock to
waiting hosts in the order they asked, so turns of one session run one at a time in arrival
order across hosts; the host holding it first reads the turns other hosts added
(`turns_since`, in the lock's round trip), so the ordinal it writes is the next one, and ``UNIQUE (session_id,
ordinal)`` refuses anything else. A host that dies loses its connections, and with them its
locks: the next host goes on.

Who is alive (a lease that survives faults, docs/embedding.md): while open, each store holds
the advisory lock ``(0x48530002, owner)`` on a connection of its own, and writes ``owner``
into the turns and jobs it begins. A server restart or a killed connection takes the lock
away; `keep_claim` (called by the host's link every half second) takes the same key back on
a fresh connection. `absent_hosts` names the owners of running work that hold no lock;
the link declares one dead only after seeing it absent for a grace period, and then
`claim_dead` fails its turns and interrupts its jobs in one transaction with their event
rows (the turns are locked ``FOR UPDATE`` and checked again, so two hosts never both claim
one). `turns_left_running` returns, read only, the running turns whose owner holds no lock now
(nothing on PostgreSQL fails them from it: that is `claim_dead`'s, after the grace).

The event log: a host writes the events it publishes as rows of ``events``, in the
transaction of the change they report when there is one (a transactional outbox: the task
stages them, `Staged`, and `_transact` inserts them last), else a batch per transaction;
either way holding the transaction-level advisory lock ``(0x48530004, 0)`` while it takes
its seqs and commits, so rows commit in seq order and a reader that read up to N never later
finds a row below N, then ``NOTIFY host_sim_events, '<host_id>'`` when another host listens
(its owner key in ``listeners``: a host alone wakes nobody, its own listener would only let
its NOTIFY pass). Each host writes that row, LISTENs on a connection of its own, then waits
once for the event lock (an append that looked before the row was there has committed by
then), and reads the rows after the last it read when another host woke it, and at least
every second: the rows are the truth, the NOTIFY a hint. A host never reads its own rows back when it can help it: it
has their events, and hands them out from memory when they are next in seq order and no
erasure rule rewrote them (`EventHub.written_own`), else it reads. An erasure (`erase`, `delete_session`) takes the same lock and
erases the text of its turns' event rows in its transaction; a batch written after an
erasure erases its own rows of erased turns. Every erasure and deletion also bumps
``meta.erasure_generation``, which `lock_session` reads once the lock is granted.

All database work runs in worker threads (``anyio.to_thread``) with psycopg 3's blocking
API, so the store works the same under asyncio and trio (psycopg's async API needs
asyncio). psycopg is imported when a store is opened, never before.
"""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator, Callable, Sequence
from contextlib import AbstractAsyncContextManager
from datetime import datetime, timedelta
from typing import Any, Final, TypeVar, final

from modular_sdk import SessionId

from . import _rows
from ._erasure import Erasure
from ._errors import StoreError
from ._postgres_commit import OWNER_LOCK, PostgresDriver
from ._postgres_commit import redact as redact
from ._postgres_events import (
    ERASE_COMMAND_EVENTS,
    ERASE_COMMAND_EVENTS_OF,
    ERASE_EVENTS,
    ERASE_QUOTED_COMMAND_EVENTS,
    ERASE_QUOTED_TURN_EVENTS,
    LOCK_EVENTS,
)
from ._postgres_locks import SELECT_ERASURE_GENERATION as SELECT_ERASURE_GENERATION
from ._postgres_schema import POSTGRES_SCHEMA_VERSION as POSTGRES_SCHEMA_VERSION
from ._postgres_sql import DIALECT
from ._postgres_sql import Step as _Step
from ._postgres_sql import cols as _cols
from ._records import LineageEdge, SessionNode, SessionRecord, TurnRecord, interrupted
from ._renamed import warn_renamed
from ._shared import EventRow, Locked
from ._sql_store import Reads, SqlStore

__all__ = ["POSTGRES_SCHEMA_VERSION", "PostgresStore", "redact"]


_OWNER_LOCK: Final = OWNER_LOCK  # advisory lock class: a live store (its owner key; the driver takes it)

_R = TypeVar("_R")

_BUMP_ERASURE_GENERATION: Final = (  # in the transaction of every erasure and deletion
    "INSERT INTO host_sim.meta (key, value) VALUES ('erasure_generation', '1') "
    "ON CONFLICT (key) DO UPDATE SET value = (host_sim.meta.value::bigint + 1)::text"
)

# Reads (each served by an index; see tests/host/stores/test_postgres_store.py, which EXPLAINs them):
# those the engine makes (`_sql_store.Reads`, spelled for PostgreSQL), and PostgreSQL's own.
_READS: Final = Reads.of(DIALECT)
SELECT_SESSION: Final = DIALECT.select(_rows.SESSIONS, _READS.session)
SELECT_TURNS: Final = DIALECT.select(_rows.TURNS, _READS.turns)
SELECT_TURNS_SINCE: Final = DIALECT.select(_rows.TURNS, _READS.turns_since)
SELECT_TURN: Final = DIALECT.select(_rows.TURNS, _READS.turn)
SELECT_TURN_BY_MESSAGE: Final = DIALECT.select(_rows.TURNS, _READS.turn_by_message)
SELECT_SPAWNED_DURING: Final = DIALECT.select(_rows.SESSIONS, _READS.spawned_during)
SELECT_ALL_SESSIONS: Final = DIALECT.select(_rows.SESSIONS, _READS.all_sessions)
SELECT_NODES: Final = DIALECT.select(_rows.NODES, f"WHERE {DIALECT.any_of('session_id', ())[0]}")
SELECT_EDGES_OUT: Final = DIALECT.select(_rows.EDGES, f"WHERE {DIALECT.any_of('from_session_id', ())[0]} ORDER BY seq")
SELECT_EDGES_IN: Final = DIALECT.select(_rows.EDGES, f"WHERE {DIALECT.any_of('to_session_id', ())[0]} ORDER BY seq")
SELECT_INDEX_VERSION: Final = _READS.index_version
SELECT_CHILDREN: Final = DIALECT.select(_rows.SESSIONS, _READS.children)
SELECT_EDGES_BY_ARTIFACT: Final = DIALECT.select(_rows.EDGES, _READS.edges_by_artifact)
_OWNER_HELD: Final = (  # the owner lock of host {owner} is held: that host is alive
    "SELECT 1 FROM pg_catalog.pg_locks l WHERE l.locktype = 'advisory' AND l.granted "
    "AND l.database = (SELECT oid FROM pg_catalog.pg_database WHERE datname = current_database()) "
    f"AND l.classid = {_OWNER_LOCK}::oid AND l.objsubid = 2 AND l.objid = {{owner}}::bigint::oid"
)
SELECT_ORPHANED_TURNS: Final = (  # running turns whose host holds no claim at this moment (read only)
    f"SELECT t.seq, {_cols(_rows.TURNS, 't.')} FROM host_sim.turns t WHERE t.status = 'running' "
    f"AND NOT EXISTS ({_OWNER_HELD.format(owner='t.owner')}) ORDER BY t.seq"
)
_ABSENT_OWNERS: Final = (  # hosts that left work running and hold no claim now
    "SELECT DISTINCT o.owner FROM (SELECT owner FROM host_sim.turns WHERE status = 'running' "
    "UNION SELECT owner FROM host_sim.jobs WHERE status = 'running') o "
    f"WHERE o.owner IS NOT NULL AND NOT EXISTS ({_OWNER_HELD.format(owner='o.owner')})"
)
_DEAD_TURNS: Final = (  # locked: a second host claiming at once waits, then finds them finished
    f"SELECT {_cols(_rows.TURNS, 't.')} FROM host_sim.turns t WHERE t.status = 'running' AND t.owner = ANY(%s) "
    f"AND NOT EXISTS ({_OWNER_HELD.format(owner='t.owner')}) ORDER BY t.seq FOR UPDATE"
)
_INTERRUPT_DEAD_JOBS: Final = (
    "UPDATE host_sim.jobs j SET status = 'interrupted', finished_at = %s, error_kind = 'interrupted', "
    "error = 'the host closed before the job finished', owner = NULL WHERE j.status = 'running' "
    f"AND j.owner = ANY(%s) AND NOT EXISTS ({_OWNER_HELD.format(owner='j.owner')}) RETURNING j.id"
)
_SELECT_TABLES: Final = "SELECT table_name FROM information_schema.tables WHERE table_schema = 'host_sim'"


@final
class PostgresStore(SqlStore):
    """A durable store in a PostgreSQL database that several hosts share (one session graph).

    ``dsn`` is a libpq connection string (``postgresql://user@host:5432/dbname`` or
    ``"host=... dbname=..."``); the database must exist. Its tables (PostgreSQL schema
    ``host_sim``) are created on first use unless ``create=False``, which opens only a
    database that holds a store (what ``host-sim fsck`` does). ``connections`` bounds the
    pool of connections this host writes and reads with; each session with a turn running
    holds one more (its lock, see `lock_session`).

    Hosts on the same database see each other's sessions (``sessions.get``) and turns (see
    docs/embedding.md, "Several hosts"); turns of one session run one at a time in arrival
    order across hosts. They are one host: erasures and deletions hold on all at once,
    every host's events are rows every host's subscribers read (kept ``event_retention``,
    24 hours by default), and a dead host's running turns are failed by a live one. Opening raises `StoreError` naming the DSN (never its password) for
    a malformed DSN, a server that cannot be reached, a database that does not exist, a
    role that may not log in or create the tables, a schema of another application, or a
    store written by a newer host-sim. Needs the extra ``modular-chat-sdk[postgres]`` (psycopg
    3), imported when the store is opened.

    >>> async with Host(store=PostgresStore("postgresql://app@db/chats")) as host: ...  # doctest: +SKIP
    """

    __slots__ = ()

    _driver: PostgresDriver

    def __init__(
        self, dsn: str, *, create: bool = True, connections: int = 8, event_retention: timedelta = timedelta(hours=24)
    ) -> None:
        if not isinstance(dsn, str) or not dsn.strip():
            raise StoreError(
                f"a PostgresStore needs a libpq connection string, got {dsn!r}; pass e.g. "
                "'postgresql://user@host:5432/dbname'",
                path=None if not isinstance(dsn, str) else redact(dsn),
            )
        if not isinstance(connections, int) or isinstance(connections, bool) or connections < 1:
            raise StoreError(
                f"connections must be a positive int, got {connections!r}; the default is 8", path=redact(dsn)
            )
        if not isinstance(event_retention, timedelta) or event_retention <= timedelta(0):
            raise StoreError(
                f"event_retention must be a positive timedelta, got {event_retention!r}; the default is "
                "timedelta(hours=24) (how long event rows are kept for subscribe(after=...))",
                path=redact(dsn),
            )
        driver = PostgresDriver(dsn, create=create, connections=connections, event_retention=event_retention)
        super().__init__(DIALECT, driver)

    def __repr__(self) -> str:
        state = "open" if self._driver.is_open else "closed"
        return f"<PostgresStore {self.path!r} ({state})>"

    @property
    def path(self) -> str:
        """The DSN without its password: what messages and `StoreError.path` name."""
        return self._driver.path

    # -- writes ---------------------------------------------------------------------------

    async def erase(self, erasure: Erasure) -> None:
        """Carry out an erasure over every place that keeps text, in one transaction.

        The places (``PLACES``) are those among the tables this database has.

        The erased text is gone from every row a host or a query reads. PostgreSQL keeps
        old row versions in its files (a plain ``VACUUM`` only marks their space reusable)
        and in WAL segments, archives and backups; ``VACUUM FULL`` on the ``host_sim``
        tables rewrites their files without it (docs/embedding.md, "Several hosts:
        PostgresStore", Limits).
        """
        def events_of(turn: TurnRecord, row: tuple[object, ...]) -> list[_Step]:
            (message,) = _rows.TURNS.pick(row, ("message",))
            return [_Step(ERASE_EVENTS, (message, turn.id), f"cannot erase the events of turn {turn.id!r}")]

        tables = [str(name) for (name,) in await self._query(_SELECT_TABLES, ())]
        steps = [_Step(LOCK_EVENTS, (), "cannot lock the event log"), *self._erasure_steps(erasure, tables, events_of)]
        touched = sorted({session for session, _ in erasure.positions} | set(erasure.sessions))
        steps.append(_Step(ERASE_COMMAND_EVENTS_OF, (touched,), "cannot erase the events of erased commands"))
        quoted = {table: sorted(i for t, i in erasure.errors if t == table) for table in ("turns", "invocations")}
        if quoted["turns"]:
            steps.append(_Step(ERASE_QUOTED_TURN_EVENTS, (quoted["turns"],), "cannot erase the events of quoted errors"))
        if quoted["invocations"]:
            steps.append(
                _Step(ERASE_QUOTED_COMMAND_EVENTS, (quoted["invocations"],), "cannot erase the events of quoted errors")
            )
        steps.append(_Step(_BUMP_ERASURE_GENERATION, (), "cannot record the erasure generation"))
        await self._transact(steps)

    # -- reads ----------------------------------------------------------------------------

    # -- the integrator's records (IntegratorStore) ----------------------------------------
    # (invocations, get_job, list_jobs, job_turn_began, request_job_cancel: SqlJobs)

    def _session_steps(self, record: SessionRecord, node: SessionNode, edge: LineageEdge | None) -> list[_Step]:
        """The engine's steps, and for a fork or spawn first the check that its parent is not
        deleted (`SharedStore`), made once the event log's lock is held, which a deletion
        holds until it commits: a deletion committed before this write is seen by it, and
        one that commits after it waited for it (the host reads no deletion first)."""
        steps = super()._session_steps(record, node, edge)
        lineage = record.lineage
        if lineage.kind == "root":
            return steps
        parent = lineage.parent_session_id
        deleted = _rows.Need(
            table="deletions",
            column="session_id",
            value=parent,
            refusal=f"session {parent!r} is deleted: no fork or spawn of it is stored",
            absent=True,
        )
        return [_Step(LOCK_EVENTS, (), "cannot lock the event log"), DIALECT.check(deleted), *steps]

    async def interrupt_jobs(self, now: Callable[[], datetime]) -> int:
        """Mark ``interrupted`` the running jobs whose host is gone (it holds no owner lock any
        more); a job a live host runs is left alone, as its running turns are."""
        return len(await self.interrupt_dead_hosts_jobs(now))

    async def interrupt_dead_hosts_jobs(self, now: Callable[[], datetime]) -> Sequence[str]:
        """`interrupt_jobs`, returning the ids of the jobs it marked (a live host announces them)."""
        orphaned = f"j.status = 'running' AND NOT EXISTS ({_OWNER_HELD.format(owner='j.owner')})"
        if not await self._query(f"SELECT 1 FROM host_sim.jobs j WHERE {orphaned} LIMIT 1", ()):
            return ()  # (the usual case: the clock is not even read)
        rows = await self._query(  # autocommit: one statement, so two hosts never both take one
            "UPDATE host_sim.jobs j SET status = 'interrupted', finished_at = %s, error_kind = 'interrupted', "
            f"error = 'the host closed before the job finished', owner = NULL WHERE {orphaned} RETURNING j.id",
            (now().isoformat(),),
        )
        return tuple(str(r[0]) for r in rows)

    async def delete_session(self, session_id: SessionId, at: datetime) -> None:
        """Mark a stored session deleted (the engine's steps), with the event log's share in
        the same transaction: the log locked, the session's command events erased, the
        erasure generation bumped."""
        stored, deletion = self._deletion_steps(session_id, at)
        await self._transact(
            [
                stored,
                _Step(LOCK_EVENTS, (), "cannot lock the event log"),
                deletion,
                _Step(ERASE_COMMAND_EVENTS, (session_id,), f"cannot erase the command events of {session_id!r}"),
                _Step(_BUMP_ERASURE_GENERATION, (), "cannot record the erasure generation"),
            ]
        )

    async def erasure_generation(self) -> int:
        """The counter every `erase` and `delete_session` bumps in its transaction (0: none yet)."""
        rows = await self._query(SELECT_ERASURE_GENERATION, ())
        return int(rows[0][0]) if rows else 0

    async def turns_left_running(self) -> Sequence[TurnRecord]:
        """The running turns whose host holds no claim at this moment, read only.

        A turn a live host is running is never among them. Nothing is claimed and no host is
        judged dead here: a host whose connection only blinked is among them until it takes
        its claim back (within a second). Which hosts are dead is one rule, `Absences`'
        (its claim seen gone for `DEAD_HOST_GRACE` seconds on end): a live host's link then
        fails their turns with `claim_dead`, and ``host-sim fsck`` names them with `dead_turns`.
        """
        rows = await self._query(SELECT_ORPHANED_TURNS, ())
        return tuple(self._decode(_rows.TURNS, TurnRecord, row[1:]) for row in rows)

    async def running_turns(self) -> Sequence[TurnRecord]:
        """Deprecated: renamed `turns_left_running` (this name warns, and goes in the next release)."""
        warn_renamed(f"{type(self).__name__}.running_turns", "turns_left_running")
        return await self.turns_left_running()

    async def dead_turns(self, host_ids: Sequence[str]) -> Sequence[TurnRecord]:
        """The running turns of the hosts ``host_ids`` whose claim is still gone, read only.

        Nothing is claimed: ``host-sim fsck`` names them, `claim_dead` fails them."""
        owners = [int(h.removeprefix("pg-")) for h in host_ids if h.startswith("pg-") and h[3:].isdigit()]
        if not owners:
            return ()
        return await self._select(_rows.TURNS, TurnRecord, _DEAD_TURNS.removesuffix(" FOR UPDATE"), (owners,))

    # -- liveness: a claim that survives faults (docs/embedding.md) ----------------------

    async def keep_claim(self) -> bool:
        """Make sure this host's liveness claim (the owner lock) is held; whether it had to be
        taken again (see `PostgresDriver.keep_claim`)."""
        return await self._driver.keep_claim()

    async def absent_hosts(self) -> set[str]:
        """The hosts that left turns or jobs running and hold no claim now (dead, or away for a moment)."""
        return {f"pg-{int(row[0])}" for row in await self._query(_ABSENT_OWNERS, ())}

    async def claim_dead(
        self,
        host_ids: Sequence[str],
        now: Callable[[], datetime],
        announce: Callable[[Sequence[TurnRecord], Sequence[str]], Sequence[EventRow]],
    ) -> tuple[Sequence[TurnRecord], Sequence[str]]:
        """Fail as interrupted the running turns, and interrupt the running jobs, of the hosts
        ``host_ids`` whose claim is still gone, with the event rows ``announce`` makes of them,
        in one transaction. Two hosts claiming at once: the second finds nothing left."""
        owners = [int(h.removeprefix("pg-")) for h in host_ids if h.startswith("pg-") and h[3:].isdigit()]
        if not owners:
            return (), ()
        finish = self._finish_turn_sql()

        def run(conn: Any) -> tuple[Sequence[TurnRecord], Sequence[str]]:
            try:
                with contextlib.ExitStack() as tail, conn.transaction():  # COMMIT ends tail's pipeline
                    rows = conn.execute(_DEAD_TURNS, (owners,)).fetchall()
                    at = now()
                    turns = tuple(interrupted(self._decode(_rows.TURNS, TurnRecord, row), at) for row in rows)
                    for turn in turns:
                        params = _rows.TURNS.pick(self._row(_rows.TURNS, turn), (*_rows.TURN_FINISHED, *_rows.TURN_KEY))
                        conn.execute(finish, params)
                    jobs = tuple(str(r[0]) for r in conn.execute(_INTERRUPT_DEAD_JOBS, (at.isoformat(), owners)).fetchall())
                    events = announce(turns, jobs) if turns or jobs else ()
                    if events:
                        self._driver.check_event_rows(events)
                        self._driver.insert_events(conn, events, tail)
                    return turns, jobs
            except self._driver.psycopg.Error as exc:
                raise self._driver.database_error(exc, "could not fail the turns of a dead host") from exc

        return await self._driver.with_connection(run)

    # -- several hosts: the driver's lock_session and event log (`_shared.SharedStore`) ---

    def lock_session(self, session_id: SessionId, since: int | None = None) -> AbstractAsyncContextManager[Locked]:
        """Hold session ``session_id``'s turn lock across every host of this database (`PostgresLocks`);
        the erasure generation and (``since`` given) the session's turns from ``since`` on are
        read in the lock's round trip, once it is granted."""
        return self._locked(session_id, since)

    @contextlib.asynccontextmanager
    async def _locked(self, session_id: SessionId, since: int | None) -> AsyncIterator[Locked]:
        read = None if since is None else (SELECT_TURNS_SINCE, (session_id, since))
        async with self._driver.lock_session(session_id, read) as (generation, rows):
            turns = None if rows is None else tuple(self._driver.decode(_rows.TURNS, TurnRecord, r) for r in rows)
            yield Locked(generation=generation, turns=turns)

    @property
    def host_id(self) -> str:
        """This open store's owner key as text: the ``host_id`` of the events its host publishes."""
        return self._driver.host_id

    async def append_events(self, rows: Sequence[EventRow]) -> tuple[int, bool]:
        """Write event rows (in order) in one transaction and wake every other listening host.

        Returns the first row's seq, and whether the transaction rewrote their text (an
        erasure committed before them erased what they hold)."""
        return await self._driver.append_events(rows)

    async def events_after(self, seq: int, limit: int) -> Sequence[tuple[int, str, str]]:
        """Up to ``limit`` event rows after ``seq`` as ``(seq, host_id, event)``, in seq order."""
        return await self._driver.events_after(seq, limit)

    async def trimmed_events(self) -> int:
        """The newest seq retention deleted (0: none)."""
        return await self._driver.trimmed_events()

    async def last_event_seq(self) -> int:
        """The newest event row's seq (0: none): where a host that opens starts reading."""
        return await self._driver.last_event_seq()

    async def wait_for_events(self, timeout: float) -> list[str]:
        """Wait until a host wrote event rows or ``timeout`` seconds passed; the reply_delta payloads meanwhile."""
        return await self._driver.wait_for_events(timeout)

    async def send_delta(self, payload: str) -> None:
        """Hand a reply_delta to the other hosts' listeners (best-effort)."""
        await self._driver.send_delta(payload)

    async def trim_events(self) -> int:
        """Delete event rows older than ``event_retention``; returns how many."""
        return await self._driver.trim_events()

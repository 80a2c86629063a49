"""`PostgresStore`: one session graph in a PostgreSQL database, shared by several hosts.

This module holds the store: its connections, writes and reads. Beside it:
``_postgres_schema.py`` (the schema and `prepare`), ``_postgres_locks.py`` (`lock_session`),
``_postgres_events.py`` (the event log), ``_postgres_commit.py`` (connections and
transactions), ``_postgres_traces.py`` (the trace tables), ``_postgres_sql.py`` (what they
all build SQL with); shared with `SqliteStore`: ``_sql_traces.py`` (the `TraceStore`
methods) and ``_sql_jobs.py`` (the job and invocation methods both write alike), written
once for both SQL dialects (``_sql.py``), and ``_rows.py`` (the tables,
the checks made before each write and the rows each write needs).

Layout (PostgreSQL schema ``host_sim``, schema version 1)::

    meta(key PRIMARY KEY, value)         application = 'host-sim', schema_version = '1', index_version
    sessions(seq, id PRIMARY KEY, lineage, metadata, model, cwd, runner_id, created_at,
             agent_id, trigger_turn_id, parent_session_id)
                                         -- never updated, deleted or truncated (triggers refuse)
    turns(seq, id PRIMARY KEY, session_id, ordinal, message, message_id, author, runner_id,
          status, reply, error, started_at, finished_at, erased_at, owner, tool_calls,
          retracted_at, retraction_reason, usage, widgets)
          UNIQUE (session_id, ordinal)   -- a finished turn changes only once, to be forgotten;
                                         -- it is never deleted (triggers refuse)
    nodes(seq, session_id PRIMARY KEY, created_at, summary, agent_id, completed_at, metrics)
    edges(seq, from_session_id, to_session_id, relation, created_at, artifact,
          artifact_type, artifact_source_id, PRIMARY KEY (from_session_id, to_session_id))
    events(seq PRIMARY KEY, host_id, kind, session_id, turn_id, written, event)
                                         -- every host's events (API.md section 13); added to
                                         -- older stores when opened

Columns hold what `SqliteStore` holds, byte for byte: JSON columns are the one converter's
JSON as ``text``, times ISO 8601 with their offset. ``seq`` (an identity column) keeps the
order rows were first written; ``parent_session_id`` and the ``artifact_*`` columns copy
fields out of the JSON so that a plain B-tree index serves each read. ``owner`` names the
host (its `PostgresStore`) that runs a ``running`` turn. Every read is by key and served
by an index; opening reads no rows.

Each store call is one transaction on one connection of a small pool (``connections``);
a commit returns once PostgreSQL has made it durable (``synchronous_commit`` as the server
sets it: on by default). Calls of one host run concurrently on different connections, and
PostgreSQL's own group commit shares fsyncs between them.

Several hosts (`lock_session`): a turn of session S runs while its host holds the
session-level advisory lock ``(class 0x48530001, hashtext(S))`` on a connection of its own,
from before the turn is begun to after it is finished. PostgreSQL grants the lock to
waiting hosts in the order they asked, so turns of one session run one at a time in arrival
order across hosts; the host holding it first reads the turns other hosts added
(`turns_since`), so the ordinal it writes is the next one, and ``UNIQUE (session_id,
ordinal)`` refuses anything else. A host that dies loses its connections, and with them its
locks: the next host goes on.

Who is alive (a lease that survives faults, API.md section 23): while open, each store holds
the advisory lock ``(0x48530002, owner)`` on a connection of its own, and writes ``owner``
into the turns and jobs it begins. A server restart or a killed connection takes the lock
away; `keep_claim` (called by the host's link every half second) takes the same key back on
a fresh connection. `absent_hosts` names the owners of running work that hold no lock;
the link declares one dead only after seeing it absent for a grace period, and then
`claim_dead` fails its turns and interrupts its jobs in one transaction with their event
rows (the turns are locked ``FOR UPDATE`` and checked again, so two hosts never both claim
one). `running_turns` (``host-sim fsck``, and a single-writer store's recovery) returns the
running turns whose owner holds no lock now.

The event log: a host writes the events it publishes as rows of ``events``, in the
transaction of the change they report when there is one (a transactional outbox: the task
stages them, `Staged`, and `_transact` inserts them last), else a batch per transaction;
either way holding the transaction-level advisory lock ``(0x48530004, 0)`` while it takes
its seqs and commits, so rows commit in seq order and a reader that read up to N never later
finds a row below N, then ``NOTIFY host_sim_events``. Each host LISTENs on a connection of its own and
reads the rows after the last it read when woken, and at least every second: the rows are
the truth, the NOTIFY a hint. An erasure (`erase`, `delete_session`) takes the same lock and
erases the text of its turns' event rows in its transaction; a batch written after an
erasure erases its own rows of erased turns. Every erasure and deletion also bumps
``meta.erasure_generation``, which `lock_session` reads once the lock is granted.

All database work runs in worker threads (``anyio.to_thread``) with psycopg 3's blocking
API, so the store works the same under asyncio and trio (psycopg's async API needs
asyncio). psycopg is imported when a store is opened, never before.
"""

from __future__ import annotations

import secrets
import threading
from collections.abc import Callable, Mapping, Sequence
from datetime import datetime, timedelta
from typing import Any, Final, Literal, TypeVar, final

import anyio
import anyio.to_thread

from modular_sdk import SessionId, TurnId

from . import _rows
from ._approvals import SqlApprovals
from ._erasure import Erasure, statements
from ._errors import StoreError
from ._invariants import ERASED_LABEL, interrupted
from ._postgres_commit import PostgresCommit
from ._postgres_commit import redact as redact
from ._postgres_events import (
    ERASE_COMMAND_EVENTS,
    ERASE_COMMAND_EVENTS_OF,
    ERASE_EVENTS,
    ERASE_QUOTED_COMMAND_EVENTS,
    ERASE_QUOTED_TURN_EVENTS,
    LOCK_EVENTS,
    PostgresEvents,
    close_listener,
)
from ._postgres_locks import SELECT_ERASURE_GENERATION as SELECT_ERASURE_GENERATION
from ._postgres_locks import PostgresLocks
from ._postgres_schema import POSTGRES_SCHEMA_VERSION as POSTGRES_SCHEMA_VERSION
from ._postgres_schema import prepare
from ._postgres_sql import DIALECT, check, close_quietly
from ._postgres_sql import Step as _Step
from ._postgres_sql import cols as _cols
from ._postgres_sql import marks as _marks
from ._protocol import INDEX_VERSION
from ._records import JobRecord, JobStatus, LineageEdge, SessionNode, SessionRecord, StoredState, TurnRecord
from ._shared import EventRow
from ._sql_jobs import SqlJobs
from ._sql_memory import SqlMemory
from ._sql_traces import SqlTraces

__all__ = ["POSTGRES_SCHEMA_VERSION", "PostgresStore", "redact"]

_OWNER_LOCK: Final = 0x48530002  # advisory lock class: a live store (its owner key)

_R = TypeVar("_R")

_JOB_TAGS: Final = (
    "INSERT INTO host_sim.job_tags (key, value, seq, job_id) SELECT t.key, t.value, j.seq, j.id "
    "FROM host_sim.jobs j JOIN host_sim.session_tags t ON t.session_id = j.session_id WHERE j.id = %s "
    "ON CONFLICT DO NOTHING"
)


_NOTIFICATION_PREFIX: Final = '{"type":"notification"'  # how the one converter writes one (type first)


_INSERT_SESSION: Final = (
    f"INSERT INTO host_sim.sessions ({_cols(_rows.SESSIONS)}, parent_session_id) VALUES ({_marks(len(_rows.SESSIONS.columns) + 1)})"
)
_INSERT_TURN: Final = f"INSERT INTO host_sim.turns ({_cols(_rows.TURNS)}, owner) VALUES ({_marks(len(_rows.TURNS.columns) + 1)})"
_NODE_UPDATES: Final = ", ".join(f"{c} = excluded.{c}" for c in _rows.NODES.columns if c != "session_id")
_UPSERT_NODE: Final = (
    f"INSERT INTO host_sim.nodes ({_cols(_rows.NODES)}) VALUES ({_marks(len(_rows.NODES.columns))}) "
    f"ON CONFLICT (session_id) DO UPDATE SET {_NODE_UPDATES}"
)
_EDGE_COLUMNS: Final = f"{_cols(_rows.EDGES)}, artifact_type, artifact_source_id"
_EDGE_UPDATES: Final = ", ".join(
    f"{c} = excluded.{c}"
    for c in (*_rows.EDGES.columns, "artifact_type", "artifact_source_id")
    if c not in ("from_session_id", "to_session_id")
)
_UPSERT_EDGE: Final = (
    f"INSERT INTO host_sim.edges ({_EDGE_COLUMNS}) VALUES ({_marks(len(_rows.EDGES.columns) + 2)}) "
    f"ON CONFLICT (from_session_id, to_session_id) DO UPDATE SET {_EDGE_UPDATES}"
)
_TURN_KEY: Final = " AND ".join(f"{c} = %s" for c in _rows.TURN_KEY)
_FINISH_TURN: Final = (
    f"UPDATE host_sim.turns SET {', '.join(f'{c} = %s' for c in _rows.TURN_FINISHED)}, owner = NULL "
    f"WHERE {_TURN_KEY} AND status = 'running'"
)
_ERASE_TURN: Final = (
    f"UPDATE host_sim.turns SET {', '.join(f'{c} = %s' for c in _rows.TURN_ERASED)}, "
    "retraction_reason = CASE WHEN retraction_reason IS NULL THEN NULL ELSE %s END "
    f"WHERE {_TURN_KEY} AND status <> 'running' AND erased_at IS NULL"
)
_BUMP_ERASURE_GENERATION: Final = (  # in the transaction of every erasure and deletion
    "INSERT INTO host_sim.meta (key, value) VALUES ('erasure_generation', '1') "
    "ON CONFLICT (key) DO UPDATE SET value = (host_sim.meta.value::bigint + 1)::text"
)
_SET_INDEX_VERSION: Final = (
    "INSERT INTO host_sim.meta (key, value) VALUES ('index_version', %s) "
    "ON CONFLICT (key) DO UPDATE SET value = excluded.value"
)

# Reads (each served by an index; see tests/host/stores/test_postgres_store.py, which EXPLAINs them).
SELECT_SESSION: Final = f"SELECT {_cols(_rows.SESSIONS)} FROM host_sim.sessions WHERE id = %s"
SELECT_TURNS: Final = f"SELECT {_cols(_rows.TURNS)} FROM host_sim.turns WHERE session_id = %s ORDER BY ordinal"
SELECT_TURNS_SINCE: Final = (
    f"SELECT {_cols(_rows.TURNS)} FROM host_sim.turns WHERE session_id = %s AND ordinal >= %s ORDER BY ordinal"
)
SELECT_TURN: Final = f"SELECT {_cols(_rows.TURNS)} FROM host_sim.turns WHERE id = %s"
SELECT_TURN_BY_MESSAGE: Final = (
    f"SELECT {_cols(_rows.TURNS)} FROM host_sim.turns WHERE message_id = %s ORDER BY seq LIMIT 1"
)
_OWNER_HELD: Final = (  # the owner lock of host {owner} is held: that host is alive
    "SELECT 1 FROM pg_catalog.pg_locks l WHERE l.locktype = 'advisory' AND l.granted "
    "AND l.database = (SELECT oid FROM pg_catalog.pg_database WHERE datname = current_database()) "
    f"AND l.classid = {_OWNER_LOCK}::oid AND l.objsubid = 2 AND l.objid = {{owner}}::bigint::oid"
)
CLAIM_ORPHANED_TURNS: Final = (
    "UPDATE host_sim.turns t SET owner = %s WHERE t.status = 'running' AND NOT EXISTS ("
    "SELECT 1 FROM pg_catalog.pg_locks l WHERE l.locktype = 'advisory' AND l.granted "
    "AND l.database = (SELECT oid FROM pg_catalog.pg_database WHERE datname = current_database()) "
    f"AND l.classid = {_OWNER_LOCK}::oid AND l.objsubid = 2 AND l.objid = t.owner::bigint::oid"
    f") RETURNING t.seq, {_cols(_rows.TURNS, 't.')}"
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
SELECT_CHILDREN: Final = (
    f"SELECT {_cols(_rows.SESSIONS)} FROM host_sim.sessions WHERE parent_session_id = %s ORDER BY seq"
)
SELECT_SPAWNED_DURING: Final = (
    f"SELECT {_cols(_rows.SESSIONS)} FROM host_sim.sessions WHERE trigger_turn_id = %s ORDER BY seq"
)
SELECT_ALL_SESSIONS: Final = f"SELECT {_cols(_rows.SESSIONS)} FROM host_sim.sessions ORDER BY seq"
SELECT_NODES: Final = f"SELECT {_cols(_rows.NODES)} FROM host_sim.nodes WHERE session_id = ANY(%s)"
SELECT_EDGES_OUT: Final = (
    f"SELECT {_cols(_rows.EDGES)} FROM host_sim.edges WHERE from_session_id = ANY(%s) ORDER BY seq"
)
SELECT_EDGES_IN: Final = f"SELECT {_cols(_rows.EDGES)} FROM host_sim.edges WHERE to_session_id = ANY(%s) ORDER BY seq"
SELECT_EDGES_BY_ARTIFACT: Final = (
    f"SELECT {_cols(_rows.EDGES)} FROM host_sim.edges WHERE artifact_type = %s AND artifact_source_id = %s ORDER BY seq"
)
_SELECT_TABLES: Final = "SELECT table_name FROM information_schema.tables WHERE table_schema = 'host_sim'"
SELECT_INDEX_VERSION: Final = "SELECT value FROM host_sim.meta WHERE key = 'index_version'"

@final
class PostgresStore(SqlJobs, SqlTraces, SqlApprovals, SqlMemory, PostgresLocks, PostgresEvents, PostgresCommit):
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
        "_psycopg",
        "_slots",
    )

    _dialect = DIALECT

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
        self._event_retention = event_retention
        self._listener: Any = None
        self._listening = threading.Lock()  # held by the thread waiting on the listener
        self._dsn = dsn
        self._create = create
        self._connections = connections
        self._psycopg: Any = None
        self._lock: anyio.Lock | None = None
        self._slots: anyio.Semaphore | None = None
        self._idle: list[Any] = []
        self._idle_locks: list[Any] = []
        self._owner_conn: Any = None
        self._owner = 0

    def __repr__(self) -> str:
        state = "open" if self._owner_conn is not None else "closed"
        return f"<PostgresStore {self.path!r} ({state})>"

    @property
    def path(self) -> str:
        """The DSN without its password: what messages and `StoreError.path` name."""
        return redact(self._dsn)

    # -- lifecycle -----------------------------------------------------------------------

    async def open(self) -> None:
        """Connect, check (or create) the schema and announce this host as live; reads no records.

        Opening an open store does nothing. Raises `StoreError` naming the DSN (see the
        class docstring).
        """
        if self._lock is None:
            self._lock = anyio.Lock()
        async with self._lock:
            if self._owner_conn is None:
                conn, owner = await anyio.to_thread.run_sync(self._connect_owner)
                self._owner_conn, self._owner = conn, owner
                self._slots = anyio.Semaphore(self._connections)

    async def close(self) -> None:
        """Close every connection (this host's locks go with them). Idempotent; may be opened again."""
        lock = self._lock
        if lock is None:
            return
        with anyio.CancelScope(shield=True):
            async with lock:
                conns = [self._owner_conn, *self._idle, *self._idle_locks]
                self._owner_conn, self._idle, self._idle_locks = None, [], []
                listener, self._listener = self._listener, None
                if listener is not None:  # woken (a NOTIFY), then closed once no thread waits on it
                    await anyio.to_thread.run_sync(close_listener, listener, self._listening, conns[0])
                self._lock = self._slots = None
                for conn in conns:
                    if conn is not None:  # this host's locks go first, so other hosts see it gone at once
                        await anyio.to_thread.run_sync(close_quietly, conn, True)

    # -- writes ---------------------------------------------------------------------------

    async def create_session(self, record: SessionRecord, node: SessionNode, edge: LineageEdge | None) -> None:
        """Write a session, its node and its edge in one transaction; refuses an id already stored."""
        await self._transact(self._session_steps(record, node, edge))

    def _session_steps(self, record: SessionRecord, node: SessionNode, edge: LineageEdge | None) -> list[_Step]:
        parent = None if record.lineage.kind == "root" else record.lineage.parent_session_id
        steps = [
            _Step(
                _INSERT_SESSION,
                (*self._row(_rows.SESSIONS, record), parent),
                _rows.session_taken(record.id),
            ),
            _Step(_UPSERT_NODE, self._row(_rows.NODES, node), f"cannot write the node of session {record.id!r}"),
        ]
        if edge is not None:
            steps.append(
                _Step(_UPSERT_EDGE, self._edge_row(edge), f"cannot write the edge into session {record.id!r}")
            )
        steps += [
            _Step(
                "INSERT INTO host_sim.session_tags (key, value, seq, session_id) "
                "SELECT %s, %s, seq, id FROM host_sim.sessions WHERE id = %s",
                (key, value, record.id),
                f"cannot index tag {key!r} of session {record.id!r}",
            )
            for key, value in record.tags.items()
        ]
        return steps

    async def begin_turn(self, record: TurnRecord) -> None:
        """Write a turn that starts (status ``running``), owned by this host; refuses a taken id or ordinal."""
        _rows.check_begin_turn(record, self._refuse)
        row = (*self._row(_rows.TURNS, record), self._owner)
        await self._transact(
            [
                check(_rows.session_of_turn(record)),
                _Step(_INSERT_TURN, row, _rows.turn_taken(record)),
            ]
        )

    async def finish_turn(self, record: TurnRecord) -> None:
        """Replace a running turn by its finished record; refuses any turn that is not running."""
        _rows.check_finish_turn(record, self._refuse)
        params = _rows.TURNS.pick(self._row(_rows.TURNS, record), (*_rows.TURN_FINISHED, *_rows.TURN_KEY))
        await self._transact([_Step(_FINISH_TURN, params, _rows.turn_not_running(record.id), "change")])

    async def retract_turn(self, turn_id: TurnId, at: datetime, reason: str) -> TurnRecord:
        """Mark a finished turn retracted, once; returns its record as stored (a turn retracted
        before keeps its first reason)."""
        await self._transact(
            [
                check(_rows.finished_turn_stored(turn_id)),
                _Step(
                    "UPDATE host_sim.turns SET retracted_at = %s, retraction_reason = %s "
                    "WHERE id = %s AND status <> 'running' AND retracted_at IS NULL",
                    (at.isoformat(), reason, turn_id),
                    f"cannot retract turn {turn_id!r}",
                ),
            ]
        )
        found = await self.find_turn(turn_id)
        if found is None:
            raise self._fail(f"lost turn {turn_id!r} while retracting it", "run host-sim fsck on the store")
        return found

    async def save_node(self, node: SessionNode) -> None:
        """Replace the node of a stored session."""
        await self._transact(
            [
                check(_rows.session_stored(node.session_id, "a node belongs to a stored session")),
                _Step(_UPSERT_NODE, self._row(_rows.NODES, node), f"cannot write the node of session {node.session_id!r}"),
            ]
        )

    async def save_edge(self, edge: LineageEdge) -> None:
        """Write a lineage edge between two stored sessions (same pair: replaced)."""
        await self._transact(self._edge_steps(edge))

    def _edge_steps(self, edge: LineageEdge) -> list[_Step]:
        """Write ``edge`` once both its sessions are found stored."""
        pair = f"{edge.from_session_id!r} -> {edge.to_session_id!r}"
        return [
            *(check(need) for need in _rows.ends_stored(edge)),
            _Step(_UPSERT_EDGE, self._edge_row(edge), f"cannot write the edge {pair}"),
        ]

    async def rebuild_index(self, nodes: Sequence[SessionNode], edges: Sequence[LineageEdge]) -> None:
        """Replace every node and edge and record `INDEX_VERSION`, in one transaction.

        Blocks other hosts' session writes while it runs, and refuses (changing nothing)
        when sessions exist that ``nodes`` does not cover: they were created after the
        records these were derived from were read, so derive again.
        """
        covered = sorted({n.session_id for n in nodes})
        steps = [
            _Step("LOCK TABLE host_sim.sessions, host_sim.nodes, host_sim.edges IN SHARE ROW EXCLUSIVE MODE", (), ""),
            _Step(
                "SELECT 1 WHERE NOT EXISTS (SELECT 1 FROM host_sim.sessions WHERE NOT (id = ANY(%s)))",
                (covered,),
                "sessions were created while the index was being derived (another host is writing); "
                "read the records again and rebuild, e.g. run 'host-sim fsck --repair' again",
                "change",
            ),
            _Step("DELETE FROM host_sim.nodes", (), ""),
            _Step("DELETE FROM host_sim.edges", (), ""),
        ]
        steps += [_Step(_UPSERT_NODE, self._row(_rows.NODES, n), f"cannot write node {n.session_id!r}") for n in nodes]
        steps += [_Step(_UPSERT_EDGE, self._edge_row(e), "cannot write an edge") for e in edges]
        steps += [
            _Step("DELETE FROM host_sim.session_tags", (), ""),
            _Step(
                "INSERT INTO host_sim.session_tags (key, value, seq, session_id) "
                "SELECT t.key, t.value, s.seq, s.id FROM host_sim.sessions s, jsonb_each_text(s.tags::jsonb) t "
                "WHERE s.tags IS NOT NULL",
                (),
                "cannot index tags",
            ),
        ]
        steps.append(_Step(_SET_INDEX_VERSION, (str(INDEX_VERSION),), "cannot record the index version"))
        await self._transact(steps)

    async def erase(self, erasure: Erasure) -> None:
        """Carry out an erasure over every place that keeps text, in one transaction.

        The places (``PLACES``) are those among the tables this database has.

        The erased text is gone from every row a host or a query reads. PostgreSQL keeps
        old row versions in its files (a plain ``VACUUM`` only marks their space reusable)
        and in WAL segments, archives and backups; ``VACUUM FULL`` on the ``host_sim``
        tables rewrites their files without it (docs/embedding.md, "Several hosts:
        PostgresStore", Limits).
        """
        steps: list[_Step] = [_Step(LOCK_EVENTS, (), "cannot lock the event log")]
        for turn in erasure.turns:
            _rows.check_erase_turn(turn, self._refuse)
            row = self._row(_rows.TURNS, turn)
            steps.append(
                _Step(
                    _ERASE_TURN,
                    (*_rows.TURNS.pick(row, _rows.TURN_ERASED), ERASED_LABEL, *_rows.TURNS.pick(row, _rows.TURN_KEY)),
                    _rows.turn_not_erasable(turn.id),
                    "change",
                )
            )
            (message,) = _rows.TURNS.pick(row, ("message",))
            steps.append(_Step(ERASE_EVENTS, (message, turn.id), f"cannot erase the events of turn {turn.id!r}"))
        steps += [step for e in erasure.edges for step in self._edge_steps(e)]
        steps += [
            check(_rows.no_running_turn(turn_id))
            for table, turn_id in sorted(erasure.errors)
            if table == "turns"
        ]
        tables = [str(name) for (name,) in await self._query(_SELECT_TABLES, ())]
        steps += [
            _Step(sql, params, "cannot erase the text of a record")
            for sql, params in statements(erasure, tables=tables, mark="%s", prefix="host_sim.", encode=_rows.erased_value)
        ]
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

    # -- the integrator's log (LogStore) --------------------------------------------------
    # (invocations, get_job, list_jobs, job_turn_began, request_job_cancel: SqlJobs)

    async def save_job(self, record: JobRecord) -> None:
        """Write a job; a running one is owned by this host (like its turns), so that only a
        job whose host is gone is ever marked interrupted by another."""
        updates = ", ".join(f"{c} = excluded.{c}" for c in (*_rows.JOBS.columns, "owner") if c != "id")
        owner = self._owner if record.status == "running" else None
        steps = [
            _Step(
                f"INSERT INTO host_sim.jobs ({_cols(_rows.JOBS)}, owner) VALUES ({_marks(len(_rows.JOBS.columns) + 1)}) "
                f"ON CONFLICT (id) DO UPDATE SET {updates}",
                (*self._row(_rows.JOBS, record), owner),
                f"cannot write job {record.id!r}",
            )
        ]
        if record.status == "running":  # it starts: index it by its session's tags
            steps.append(_Step(_JOB_TAGS, (record.id,), f"cannot index job {record.id!r}"))
        await self._transact(steps)

    async def page_jobs(
        self,
        session_id: SessionId | None,
        status: JobStatus | None,
        tags: Mapping[str, str],
        limit: int,
        before: int | None,
    ) -> tuple[Sequence[JobRecord], int | None]:
        where = ""
        params: tuple[object, ...] = ()
        if session_id is not None:
            where += " AND j.session_id = %s"
            params += (session_id,)
        if status is not None:
            where += " AND j.status = %s"
            params += (status,)
        return await self._tag_page(
            _rows.JOBS, JobRecord, "host_sim.jobs j", "host_sim.job_tags", "j.seq = t.seq", where, params, tags, limit, before
        )

    async def _tag_page(
        self,
        table: _rows.Table,
        record: type[_R],
        source: str,
        tag_table: str,
        join: str,
        where: str,
        where_params: tuple[object, ...],
        tags: Mapping[str, str],
        limit: int,
        before: int | None,
    ) -> tuple[Sequence[_R], int | None]:
        """A page of ``source`` (``"host_sim.jobs j"``: its alias qualifies ``where``), newest
        first, older than ``before``: through the tag index ``tag_table`` when ``tags`` are given
        (its rows ``t`` joined by ``join``; a page costs what it returns), else by the table's seq."""
        bound = (1 << 62) if before is None else before
        alias = source.rsplit(" ", 1)[1]
        columns = _cols(table, f"{alias}.")
        pairs = list(tags.items())
        if pairs:
            (key, value), rest = pairs[0], pairs[1:]
            also = "".join(
                f" AND EXISTS (SELECT 1 FROM {tag_table} o WHERE o.key = %s AND o.value = %s AND o.seq = t.seq)"
                for _ in rest
            )
            sql = (
                f"SELECT {columns}, t.seq FROM {tag_table} t JOIN {source} ON {join} "
                f"WHERE t.key = %s AND t.value = %s AND t.seq < %s{also}{where} ORDER BY t.seq DESC LIMIT %s"
            )
            params = (key, value, bound, *(x for pair in rest for x in pair), *where_params, limit + 1)
        else:
            sql = f"SELECT {columns}, {alias}.seq FROM {source} WHERE {alias}.seq < %s{where} ORDER BY {alias}.seq DESC LIMIT %s"
            params = (bound, *where_params, limit + 1)
        rows = await self._query(sql, params)
        records = [self._decode(table, record, row[:-1]) for row in rows[:limit]]
        last = rows[limit - 1][-1] if len(rows) > limit else None
        return tuple(records), int(last) if last is not None else None

    async def cancel_requests(self, job_ids: Sequence[str]) -> Sequence[str]:
        if not job_ids:
            return ()
        rows = await self._query(
            "SELECT id FROM host_sim.jobs WHERE id = ANY(%s) AND status = 'running' AND cancel_requested_at IS NOT NULL",
            (list(job_ids),),
        )
        return tuple(str(r[0]) for r in rows)

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

    async def mark_read(self, turn_id: TurnId, at: datetime) -> None:
        await self._transact(
            [
                check(_rows.turn_stored(turn_id, "mark a stored notification read")),
                _Step(
                    "INSERT INTO host_sim.reads (turn_id, read_at) VALUES (%s, %s) ON CONFLICT (turn_id) DO NOTHING",
                    (turn_id, at.isoformat()),
                    f"cannot mark turn {turn_id!r} read",
                ),
            ]
        )

    async def notification_turns(
        self, session_id: SessionId | None, unread_only: bool, tags: Mapping[str, str]
    ) -> Sequence[TurnRecord]:
        sql = f"SELECT {_cols(_rows.TURNS)} FROM host_sim.turns WHERE message LIKE '{_NOTIFICATION_PREFIX}%%'"
        params: tuple[object, ...] = ()
        if session_id is not None:
            sql += " AND session_id = %s"
            params = (session_id,)
        for key, value in tags.items():
            sql += " AND session_id IN (SELECT session_id FROM host_sim.session_tags WHERE key = %s AND value = %s)"
            params += (key, value)
        if unread_only:
            sql += " AND id NOT IN (SELECT turn_id FROM host_sim.reads)"
        return await self._records(_rows.TURNS, TurnRecord, sql + " ORDER BY seq", params)

    async def page_sessions(
        self, tags: Mapping[str, str], roots_only: bool, limit: int, before: int | None
    ) -> tuple[Sequence[SessionRecord], int | None]:
        roots = " AND s.parent_session_id IS NULL" if roots_only else ""
        live = " AND s.id NOT IN (SELECT session_id FROM host_sim.deletions)"
        return await self._tag_page(
            _rows.SESSIONS, SessionRecord, "host_sim.sessions s", "host_sim.session_tags", "s.id = t.session_id",
            roots + live, (), tags, limit, before,
        )  # fmt: skip

    async def delete_session(self, session_id: SessionId, at: datetime) -> None:
        stamp = at.isoformat()
        await self._transact(
            [
                check(_rows.session_stored(session_id, "delete a stored session")),
                _Step(LOCK_EVENTS, (), "cannot lock the event log"),
                _Step(
                    "INSERT INTO host_sim.deletions (session_id, deleted_at) VALUES (%s, %s) "
                    "ON CONFLICT (session_id) DO NOTHING",
                    (session_id, stamp),
                    f"cannot delete session {session_id!r}",
                ),
                _Step(ERASE_COMMAND_EVENTS, (session_id,), f"cannot erase the command events of {session_id!r}"),
                _Step(_BUMP_ERASURE_GENERATION, (), "cannot record the erasure generation"),
            ]
        )

    async def erasure_generation(self) -> int:
        """The counter every `erase` and `delete_session` bumps in its transaction (0: none yet)."""
        rows = await self._query(SELECT_ERASURE_GENERATION, ())
        return int(rows[0][0]) if rows else 0

    async def deleted_at(self, session_id: SessionId) -> datetime | None:
        rows = await self._query("SELECT deleted_at FROM host_sim.deletions WHERE session_id = %s", (session_id,))
        if not rows:
            return None
        try:
            when: datetime | None = datetime.fromisoformat(str(rows[0][0]))
        except ValueError:
            when = None
        if when is None or when.utcoffset() is None:
            raise self._fail(
                f"holds an unreadable deletions row ({session_id!r}): a time column must be ISO 8601 text "
                f"with its offset, got {rows[0][0]!r}",
                "the row was edited by hand; run 'host-sim fsck --store DSN' on it",
            )
        return when

    async def index_version(self) -> int | None:
        """The `INDEX_VERSION` the index was built with, or ``None``."""
        rows = await self._query(SELECT_INDEX_VERSION, ())
        raw = rows[0][0] if rows else None
        return int(raw) if isinstance(raw, str) and raw.isdigit() else None

    async def get_session(self, session_id: SessionId) -> SessionRecord | None:
        found = await self._records(_rows.SESSIONS, SessionRecord, SELECT_SESSION, (session_id,))
        return found[0] if found else None

    async def get_turns(self, session_id: SessionId) -> Sequence[TurnRecord]:
        return await self._records(_rows.TURNS, TurnRecord, SELECT_TURNS, (session_id,))

    async def turns_since(self, session_id: SessionId, ordinal: int) -> Sequence[TurnRecord]:
        """A session's own turns from ``ordinal`` on, in ordinal order (what other hosts added)."""
        return await self._records(_rows.TURNS, TurnRecord, SELECT_TURNS_SINCE, (session_id, ordinal))

    async def find_turn(self, turn_or_message_id: str) -> TurnRecord | None:
        found = await self._records(_rows.TURNS, TurnRecord, SELECT_TURN, (turn_or_message_id,))
        if not found:
            found = await self._records(_rows.TURNS, TurnRecord, SELECT_TURN_BY_MESSAGE, (turn_or_message_id,))
        return found[0] if found else None

    async def spawned_during(self, turn_id: str) -> Sequence[SessionRecord]:
        return await self._records(_rows.SESSIONS, SessionRecord, SELECT_SPAWNED_DURING, (turn_id,))

    async def running_turns(self) -> Sequence[TurnRecord]:
        """Turns left running by a host that is gone (its connection closed or was lost), handed to this host.

        A turn a live host is running is never among them, so a host opening the store
        never fails another host's turn. The turns returned become this host's (one
        statement claims them, so two hosts never both get one): finish them (a host
        fails them as interrupted), or they are handed on again once this host is gone.
        """
        rows = await self._query(CLAIM_ORPHANED_TURNS, (self._owner,))
        return tuple(self._decode(_rows.TURNS, TurnRecord, row[1:]) for row in sorted(rows, key=lambda r: int(r[0])))

    # -- liveness: a claim that survives faults (API.md section 23) ----------------------

    async def keep_claim(self) -> bool:
        """Make sure this host's liveness claim (the owner lock) is held; whether it had to be
        taken again. After a server restart or a killed connection the claim is gone with the
        connection that held it: a fresh connection takes the same key back, so the turns and
        jobs this host owns stay its own. Raises a retryable `StoreError` while the server is away."""
        if self._owner_conn is None:
            raise self._closed_error()
        return await anyio.to_thread.run_sync(self._keep_claim)

    def _keep_claim(self) -> bool:
        conn = self._owner_conn
        if conn is None:
            raise self._closed_error()
        psycopg = self._psycopg
        if not conn.closed and not conn.broken:
            try:
                conn.execute("SELECT 1", ())
                return False
            except psycopg.Error:
                pass
        fresh = self._connect()  # retryable StoreError while the server is away
        try:
            while True:
                taken = fresh.execute("SELECT pg_try_advisory_lock(%s, %s)", (_OWNER_LOCK, self._owner)).fetchone()[0]
                if taken:
                    break
                # Another store took this key while the server had forgotten this one (a one
                # in two billion chance): this host goes on under a new key.
                self._owner = secrets.randbelow(2**31 - 2) + 1
        except psycopg.Error as exc:
            close_quietly(fresh)
            raise self._database_error(exc, "could not take back its liveness claim") from exc
        if self._owner_conn is None:  # closed meanwhile
            close_quietly(fresh)
            raise self._closed_error()
        old, self._owner_conn = self._owner_conn, fresh
        close_quietly(old)
        return True

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

        def run(conn: Any) -> tuple[Sequence[TurnRecord], Sequence[str]]:
            try:
                with conn.transaction():
                    rows = conn.execute(_DEAD_TURNS, (owners,)).fetchall()
                    at = now()
                    turns = tuple(interrupted(self._decode(_rows.TURNS, TurnRecord, row), at) for row in rows)
                    for turn in turns:
                        params = _rows.TURNS.pick(self._row(_rows.TURNS, turn), (*_rows.TURN_FINISHED, *_rows.TURN_KEY))
                        conn.execute(_FINISH_TURN, params)
                    jobs = tuple(str(r[0]) for r in conn.execute(_INTERRUPT_DEAD_JOBS, (at.isoformat(), owners)).fetchall())
                    events = announce(turns, jobs) if turns or jobs else ()
                    if events:
                        self._check_event_rows(events)
                        self._insert_events(conn, events)
                    return turns, jobs
            except self._psycopg.Error as exc:
                raise self._database_error(exc, "could not fail the turns of a dead host") from exc

        return await self._with_connection(run)

    async def child_sessions(self, session_id: SessionId) -> Sequence[SessionRecord]:
        return await self._records(_rows.SESSIONS, SessionRecord, SELECT_CHILDREN, (session_id,))

    async def list_sessions(self) -> Sequence[SessionRecord]:
        return await self._records(_rows.SESSIONS, SessionRecord, SELECT_ALL_SESSIONS, ())

    async def get_nodes(self, session_ids: Sequence[SessionId]) -> Sequence[SessionNode]:
        found = {
            n.session_id: n
            for n in await self._records(_rows.NODES, SessionNode, SELECT_NODES, (list(dict.fromkeys(session_ids)),))
        }
        return tuple(found[s] for s in session_ids if s in found)

    async def get_edges(
        self, session_ids: Sequence[SessionId], direction: Literal["out", "in"]
    ) -> Sequence[LineageEdge]:
        sql = SELECT_EDGES_OUT if direction == "out" else SELECT_EDGES_IN
        by_session: dict[str, list[LineageEdge]] = {}
        for edge in await self._records(_rows.EDGES, LineageEdge, sql, (list(dict.fromkeys(session_ids)),)):
            key = edge.from_session_id if direction == "out" else edge.to_session_id
            by_session.setdefault(key, []).append(edge)
        return tuple(e for s in dict.fromkeys(session_ids) for e in by_session.get(s, ()))

    async def find_edges(self, artifact_type: str, source_id: str) -> Sequence[LineageEdge]:
        return await self._records(_rows.EDGES, LineageEdge, SELECT_EDGES_BY_ARTIFACT, (artifact_type, source_id))

    async def read_all(self) -> StoredState:
        """Every record and index row, in writing order, from one consistent snapshot."""

        def read(conn: Any) -> StoredState:
            with conn.transaction():
                conn.execute("SET TRANSACTION ISOLATION LEVEL REPEATABLE READ READ ONLY", ())
                return StoredState(
                    sessions=self._decode_all(conn, _rows.SESSIONS, SessionRecord),
                    turns=self._decode_all(conn, _rows.TURNS, TurnRecord),
                    nodes=self._decode_all(conn, _rows.NODES, SessionNode),
                    edges=self._decode_all(conn, _rows.EDGES, LineageEdge),
                )

        return await self._with_connection(read)

    # -- several hosts: lock_session (PostgresLocks), the event log (PostgresEvents) ----------

    # -- connections and transactions: PostgresCommit; opening ------------------------------

    def _connect_owner(self) -> tuple[Any, int]:
        """In a worker thread: the first connection, the schema checked or created, and this store's owner key."""
        conn = self._connect()
        try:
            self._prepare(conn)
            while True:  # a key no live store holds
                owner = secrets.randbelow(2**31 - 2) + 1
                if conn.execute("SELECT pg_try_advisory_lock(%s, %s)", (_OWNER_LOCK, owner)).fetchone()[0]:
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
            fail=self._fail,
            database_error=self._database_error,
            scrub=self._scrub,
        )

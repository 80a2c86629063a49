"""`SqliteStore`: a durable store in one SQLite file (stdlib ``sqlite3``).

This module holds the store: opening the file (its lock), writes and reads. Beside it:
``_sqlite_schema.py`` (the statements that make and upgrade a file, and `prepare`, which
runs them), ``_sqlite_commit.py`` (the group commit); shared with `PostgresStore`:
``_sql_traces.py`` and ``_sql_jobs.py`` (the `TraceStore` methods and the job and
invocation methods both write alike, written once for both SQL dialects,
``_sql.py``) and ``_rows.py`` (the tables, the checks made before each write and the
rows each write needs).

Layout (schema version 3)::

    meta(key PRIMARY KEY, value)             application = 'host-sim', schema_version = '3',
                                             index_version (see `INDEX_VERSION`)
    sessions(id PRIMARY KEY, lineage JSON, metadata JSON, model, cwd, runner_id,
             created_at, agent_id)           -- never updated nor deleted (triggers refuse)
    turns(id PRIMARY KEY, session_id, ordinal, message JSON, message_id, author JSON,
          runner_id, status, reply, error, started_at, finished_at, erased_at,
          tool_calls JSON, retracted_at, retraction_reason, usage JSON, widgets JSON)
          UNIQUE (session_id, ordinal)       -- a finished turn is never updated (trigger)
    nodes(session_id PRIMARY KEY, created_at, summary, agent_id, completed_at, metrics JSON)
    edges(from_session_id, to_session_id, relation, created_at, artifact JSON,
          PRIMARY KEY (from_session_id, to_session_id))

Every read is by key and served by an index: sessions by id and by parent, turns by
session and ordinal, by message id and (running ones) by status, edges by either end and
by artifact. Opening reads no rows; a host reads what it touches.

``sessions`` and ``turns`` are the records; ``nodes`` and ``edges`` are the lineage index,
derived from them (see ``_invariants``). JSON columns hold what the one converter
(``modular_sdk._json``) writes, tags included; times are ISO 8601 with their offset. Rows
are read back in the order first written.

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

All database work runs in a worker thread (``anyio.to_thread``) on one connection, one
call at a time, so the store works the same under asyncio and trio.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping, Sequence
from datetime import datetime
from pathlib import Path
from typing import Final, TypeVar, final

import attrs

from modular_sdk import InvalidArgumentError, SerializationError, SessionId
from modular_sdk._rules import show

from ._records import LineageEdge, SessionNode
from ._erasure import Erasure
from ._protocol import INDEX_VERSION
from . import _rows
from ._sqlite_commit import DIALECT, Step, check, insert, upsert
from ._sqlite_driver import SqliteDriver
from ._sql_store import SqlStore
from ._sql_jobs import SqlJobs
from ._approvals import SqlApprovals
from ._sql_traces import SqlTraces
from ._sql_memory import SqlMemory
from ._sqlite_schema import SCHEMA_VERSION as SCHEMA_VERSION
from ._records import JobRecord, JobStatus, SessionRecord, TurnRecord

__all__ = ["SCHEMA_VERSION", "SqliteStore"]

_R = TypeVar("_R")

_JOB_TAGS: Final = (
    "INSERT OR IGNORE INTO job_tags (key, value, position, job_id) SELECT t.key, t.value, j.rowid, j.id "
    "FROM jobs j JOIN session_tags t ON t.session_id = j.session_id WHERE j.id = ?"
)




_SET_INDEX_VERSION: Final = "INSERT OR REPLACE INTO meta (key, value) VALUES ('index_version', ?)"

_REBUILD_TAGS: Final = (
    "INSERT INTO session_tags (session_id, key, value, position) "
    "SELECT s.id, j.key, j.value, s.rowid FROM sessions s, json_each(s.tags) j WHERE s.tags IS NOT NULL"
)
_LIVE: Final = "s.id NOT IN (SELECT session_id FROM deletions)"




@final
class SqliteStore(SqlJobs, SqlTraces, SqlApprovals, SqlMemory, SqlStore):
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

    async def rebuild_index(self, nodes: Sequence[SessionNode], edges: Sequence[LineageEdge]) -> None:
        """Replace every node and edge, and record `INDEX_VERSION`, in one transaction."""
        steps = [Step("DELETE FROM nodes", (), ""), Step("DELETE FROM edges", (), "")]
        steps += [Step(insert(_rows.NODES), _rows.NODES.row(n), f"cannot write node {n.session_id!r}") for n in nodes]
        steps += [Step(insert(_rows.EDGES), _rows.EDGES.row(e), "cannot write an edge") for e in edges]
        steps += [Step("DELETE FROM session_tags", (), ""), Step(_REBUILD_TAGS, (), "cannot index tags")]
        steps.append(Step(_SET_INDEX_VERSION, (str(INDEX_VERSION),), "cannot record the index version"))
        await self._transact(steps)

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

    # -- the integrator's log (LogStore) --------------------------------------------------
    # (invocations, get_job, list_jobs, job_turn_began, request_job_cancel: SqlJobs)

    async def save_job(self, record: JobRecord) -> None:
        steps = [Step(upsert(_rows.JOBS), _rows.JOBS.row(record), f"cannot write job {record.id!r}")]
        if record.status == "running":  # it starts: index it by its session's tags
            steps.append(Step(_JOB_TAGS, (record.id,), f"cannot index job {record.id!r}"))
        await self._transact(steps)

    async def page_jobs(
        self,
        session_id: SessionId | None,
        status: JobStatus | None,
        tags: Mapping[str, str],
        limit: int,
        before: int | None,
    ) -> tuple[Sequence[JobRecord], int | None]:
        if self._lacks("jobs.id"):
            return (), None
        bound = (1 << 62) if before is None else before
        columns = self._driver.columns(_rows.JOBS, "j.")
        where = ""
        params: tuple[object, ...] = ()
        if session_id is not None:
            where += " AND j.session_id = ?"
            params += (session_id,)
        if status is not None:
            where += " AND j.status = ?"
            params += (status,)
        pairs = list(tags.items())
        if pairs and not self._driver.absent("job_tags"):
            (key, value), rest = pairs[0], pairs[1:]
            also = "".join(
                " AND EXISTS (SELECT 1 FROM job_tags o WHERE o.key = ? AND o.value = ? AND o.position = t.position)"
                for _ in rest
            )
            sql = (
                f"SELECT {columns}, t.position FROM job_tags t JOIN jobs j ON j.rowid = t.position "
                f"WHERE t.key = ? AND t.value = ? AND t.position < ?{also}{where} ORDER BY t.position DESC LIMIT ?"
            )
            params = (key, value, bound, *(x for pair in rest for x in pair), *params, limit + 1)
        else:  # (a reader of a store made before job_tags filters by its sessions' tags)
            also = "".join(
                " AND EXISTS (SELECT 1 FROM session_tags o WHERE o.session_id = j.session_id AND o.key = ? AND o.value = ?)"
                for _ in pairs
            )
            sql = f"SELECT {columns}, j.rowid FROM jobs j WHERE j.rowid < ?{where}{also} ORDER BY j.rowid DESC LIMIT ?"
            params = (bound, *params, *(x for pair in pairs for x in pair), limit + 1)
        rows = await self._query(sql, params)
        records = [self._decode(_rows.JOBS, JobRecord, row[:-1]) for row in rows[:limit]]
        last = rows[limit - 1][-1] if len(rows) > limit else None
        return tuple(records), last if isinstance(last, int) else None

    async def cancel_requests(self, job_ids: Sequence[str]) -> Sequence[str]:
        if not job_ids or self._lacks("jobs.id"):
            return ()
        rows = await self._query(
            f"SELECT id FROM jobs WHERE id IN ({', '.join('?' for _ in job_ids)}) "
            "AND status = 'running' AND cancel_requested_at IS NOT NULL",
            tuple(job_ids),
        )
        return tuple(str(r[0]) for r in rows)

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

    async def notification_turns(
        self, session_id: SessionId | None, unread_only: bool, tags: Mapping[str, str]
    ) -> Sequence[TurnRecord]:
        where = "WHERE json_extract(message, '$.type') = 'notification'"
        params: tuple[object, ...] = ()
        if session_id is not None:
            where += " AND session_id = ?"
            params = (session_id,)
        for key, value in tags.items():
            where += " AND session_id IN (SELECT session_id FROM session_tags WHERE key = ? AND value = ?)"
            params += (key, value)
        if unread_only and not self._driver.absent("reads"):
            where += " AND id NOT IN (SELECT turn_id FROM reads)"
        order = " ORDER BY ordinal" if session_id is not None else " ORDER BY rowid"
        return await self._records(_rows.TURNS, TurnRecord, where + order, params)

    async def page_sessions(
        self, tags: Mapping[str, str], roots_only: bool, limit: int, before: int | None
    ) -> tuple[Sequence[SessionRecord], int | None]:
        bound = (1 << 62) if before is None else before
        columns = self._driver.columns(_rows.SESSIONS, "s.")
        roots = " AND json_extract(s.lineage, '$.kind') = 'root'" if roots_only else ""
        live = "" if self._driver.absent("deletions") else f" AND {_LIVE}"
        pairs = list(tags.items())
        if pairs:
            (key, value), rest = pairs[0], pairs[1:]
            also = "".join(
                " AND EXISTS (SELECT 1 FROM session_tags o WHERE o.key = ? AND o.value = ? AND o.position = t.position)"
                for _ in rest
            )
            sql = (
                f"SELECT {columns}, t.position FROM session_tags t JOIN sessions s ON s.rowid = t.position "
                f"WHERE t.key = ? AND t.value = ? AND t.position < ?{also}{roots}{live} "
                "ORDER BY t.position DESC LIMIT ?"
            )
            params: tuple[object, ...] = (key, value, bound, *(x for pair in rest for x in pair), limit + 1)
        else:
            sql = (
                f"SELECT {columns}, s.rowid FROM sessions s WHERE s.rowid < ?{roots}{live} "
                "ORDER BY s.rowid DESC LIMIT ?"
            )
            params = (bound, limit + 1)
        rows = await self._query(sql, params)
        records = [self._decode(_rows.SESSIONS, SessionRecord, row[:-1]) for row in rows[:limit]]
        last = rows[limit - 1][-1] if len(rows) > limit else None
        return tuple(records), last if isinstance(last, int) else None

    async def delete_session(self, session_id: SessionId, at: datetime) -> None:
        stamp = at.isoformat()
        await self._transact(
            [
                check(_rows.session_stored(session_id, "delete a stored session")),
                Step("INSERT OR IGNORE INTO deletions (session_id, deleted_at) VALUES (?, ?)", (session_id, stamp), ""),
            ]
        )

    async def deleted_at(self, session_id: SessionId) -> datetime | None:
        if self._driver.absent("deletions"):
            return None
        rows = await self._query("SELECT deleted_at FROM deletions WHERE session_id = ?", (session_id,))
        try:
            return _rows.time_of(rows[0][0]) if rows else None
        except SerializationError as exc:
            raise self._fail(
                f"holds an unreadable deletions row ({session_id!r}): {exc}",
                "the file is damaged or was edited by hand; run host-sim fsck on it",
            ) from None

    # -- reads ----------------------------------------------------------------------------

    async def running_turns(self) -> Sequence[TurnRecord]:
        return await self._records(_rows.TURNS, TurnRecord, "WHERE status = 'running' ORDER BY rowid", ())

    async def child_sessions(self, session_id: SessionId) -> Sequence[SessionRecord]:
        return await self._records(
            _rows.SESSIONS,
            SessionRecord,
            "WHERE json_extract(lineage, '$.parent_session_id') = ? ORDER BY rowid",
            (session_id,),
        )

    async def find_edges(self, artifact_type: str, source_id: str) -> Sequence[LineageEdge]:
        return await self._records(
            _rows.EDGES,
            LineageEdge,
            "WHERE artifact IS NOT NULL AND json_extract(artifact, '$.type') = ? "
            "AND json_extract(artifact, '$.source_id') = ? ORDER BY rowid",
            (artifact_type, source_id),
        )

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

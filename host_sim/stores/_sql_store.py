"""The SQL store engine: what `SqliteStore` and `PostgresStore` are, written once.

SQLAlchemy's shape: an engine that does the work, over a `Dialect` that says how one
database spells it (parameters, upserts, ordering, the copied columns PostgreSQL indexes)
and a `Driver` below that runs it (sqlite3's file and group commit, psycopg's pool and
transactions). The engine holds the statements, the checks made before each write
(`_rows`), the step lists of each write and the erasure steps; a public store is this
engine built with its dialect and driver, plus what only its database can do (PostgreSQL:
several hosts, `_shared.SharedStore`).

The engine is composed of parts (`_sql.SqlPart`), each built over the same dialect and
driver: sessions, turns and lineage are the engine's own; jobs (`_sql_jobs.SqlJobs`),
traces and actions (`_sql_traces.SqlTraces`), approval rules (`_approvals.SqlApprovals`)
and memory records (`_sql_memory.SqlMemory`) are objects it holds and hands each call of
theirs to. Every read goes through a driver's ``query`` and every write through its
``transact``: one place where a statement meets the database.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from datetime import datetime
from typing import Final, Literal, TypeVar

import attrs

from modular_sdk import MemoryRecord, RecordId, SerializationError, SessionId, TurnId

from . import _rows
from ._approvals import SqlApprovals
from ._erasure import Erasure, statements
from ._protocol import INDEX_VERSION
from ._records import (
    ERASED_LABEL,
    Invocation,
    JobRecord,
    JobStatus,
    LineageEdge,
    SessionNode,
    SessionRecord,
    StoredState,
    TurnRecord,
)
from ._sql import Dialect, Driver, SqlPart, Step
from ._sql_jobs import SqlJobs
from ._sql_memory import SqlMemory
from ._sql_traces import SqlTraces
from ._trace_records import (
    ActionOutcomeRecord,
    ApprovalRuleRecord,
    ProposedActionRecord,
    TraceCommitRecord,
    TraceIndexEntry,
    TraceOutputRecord,
    TraceRecord,
    TraceRecords,
    TraceState,
    TraceTaskRecord,
)

__all__ = ["Reads", "SqlStore"]

_R = TypeVar("_R")


def _parent(record: object) -> object:
    lineage = record.lineage if isinstance(record, SessionRecord) else None
    return None if lineage is None or lineage.kind == "root" else lineage.parent_session_id


def _artifact_type(record: object) -> object:
    artifact = record.artifact if isinstance(record, LineageEdge) else None
    return None if artifact is None else artifact.type


def _artifact_source(record: object) -> object:
    artifact = record.artifact if isinstance(record, LineageEdge) else None
    return None if artifact is None else artifact.source_id


_COPIED: Final[Mapping[str, Callable[[object], object]]] = {
    "parent_session_id": _parent,
    "artifact_type": _artifact_type,
    "artifact_source_id": _artifact_source,
}
"""The values of the columns a dialect copies out of a record's JSON (`Dialect.extra_columns`)."""


@attrs.frozen
class Reads:
    """What picks the rows of each read the engine makes by key, in one dialect's spelling
    (each served by an index: tests/host/stores/test_postgres_store.py EXPLAINs PostgreSQL's)."""

    session: str
    turns: str
    turns_since: str
    turn: str
    turn_by_message: str
    spawned_during: str
    all_sessions: str
    index_version: str
    children: str
    edges_by_artifact: str

    @classmethod
    def of(cls, d: Dialect) -> Reads:
        m, order = d.mark, d.order
        return cls(
            session=f"WHERE id = {m}",
            turns=f"WHERE session_id = {m} ORDER BY ordinal",
            turns_since=f"WHERE session_id = {m} AND ordinal >= {m} ORDER BY ordinal",
            turn=f"WHERE id = {m}",
            turn_by_message=f"WHERE message_id = {m} ORDER BY {order} LIMIT 1",
            spawned_during=f"WHERE trigger_turn_id = {m} ORDER BY {order}",
            all_sessions=f"ORDER BY {order}",
            index_version=f"SELECT value FROM {d.table('meta')} WHERE key = 'index_version'",
            children=f"WHERE {d.parent_of} = {m} ORDER BY {order}",
            edges_by_artifact=f"WHERE {d.by_artifact} ORDER BY {order}",
        )


class SqlStore(SqlPart):
    """The engine both SQL stores are built on (see the module docstring): a `Dialect` and a
    `Driver`. It keeps sessions, turns and lineage itself, and is composed of the parts that
    keep the rest, each over the same dialect and driver: jobs (`SqlJobs`), traces and
    actions (`SqlTraces`), approval rules (`SqlApprovals`) and memory records (`SqlMemory`).
    Their public methods are this class's, each handing the call to its part."""

    __slots__ = ("_approvals", "_jobs", "_memory", "_reads", "_traces")

    def __init__(self, dialect: Dialect, driver: Driver) -> None:
        super().__init__(dialect, driver)
        self._reads = Reads.of(dialect)
        self._jobs = SqlJobs(dialect, driver)
        self._traces = SqlTraces(dialect, driver)
        self._approvals = SqlApprovals(dialect, driver)
        self._memory = SqlMemory(dialect, driver)

    async def open(self) -> None:
        """Open the store (connect, check or create its schema); reads no records. Opening an open store does nothing."""
        await self._driver.open()

    async def close(self) -> None:
        """Close the store; everything acknowledged is durable. Idempotent; it may be opened again."""
        await self._driver.close()

    async def read_all(self) -> StoredState:
        """Every record and index row, in writing order, from one consistent snapshot."""
        return await self._driver.read_all()

    # -- writes (`Store`) ------------------------------------------------------------------

    async def create_session(self, record: SessionRecord, node: SessionNode, edge: LineageEdge | None) -> None:
        """Write a session, its node and its edge in one transaction; refuses an id already stored."""
        await self._transact(self._session_steps(record, node, edge))

    def _session_steps(self, record: SessionRecord, node: SessionNode, edge: LineageEdge | None) -> list[Step]:
        """The statements that write a session, its node, its edge and its tag rows."""
        d = self._dialect
        steps = [
            Step(d.insert(_rows.SESSIONS), self._full_row(_rows.SESSIONS, record), _rows.session_taken(record.id)),
            Step(d.upsert(_rows.NODES), self._full_row(_rows.NODES, node), f"cannot write the node of session {record.id!r}"),
        ]
        if edge is not None:
            steps.append(
                Step(d.upsert(_rows.EDGES), self._full_row(_rows.EDGES, edge), f"cannot write the edge into session {record.id!r}")
            )
        tag = (
            f"INSERT INTO {d.table('session_tags')} (key, value, {d.tag_position}, session_id) "
            f"SELECT {d.mark}, {d.mark}, {d.order}, id FROM {d.table('sessions')} WHERE id = {d.mark}"
        )
        steps += [
            Step(tag, (key, value, record.id), f"cannot index tag {key!r} of session {record.id!r}")
            for key, value in record.tags.items()
        ]
        return steps

    async def begin_turn(self, record: TurnRecord) -> None:
        """Write a turn that starts (status ``running``, owned by this host where several write); refuses a taken id or ordinal."""
        _rows.check_begin_turn(record, self._refuse)
        d = self._dialect
        await self._transact(
            [
                d.check(_rows.session_of_turn(record)),
                Step(d.insert(_rows.TURNS), self._full_row(_rows.TURNS, record), _rows.turn_taken(record)),
            ]
        )

    async def finish_turn(self, record: TurnRecord) -> None:
        """Replace a running turn by its finished record; refuses any turn that is not running."""
        _rows.check_finish_turn(record, self._refuse)
        params = _rows.TURNS.pick(self._row(_rows.TURNS, record), (*_rows.TURN_FINISHED, *_rows.TURN_KEY))
        await self._transact([Step(self._finish_turn_sql(), params, _rows.turn_not_running(record.id), "change")])

    def _finish_turn_sql(self) -> str:
        """The statement that finishes a running turn (params: `TURN_FINISHED`, then `TURN_KEY`)."""
        d = self._dialect
        sets = [f"{c} = {d.mark}" for c in _rows.TURN_FINISHED] + [f"{c} = NULL" for c in d.extra(_rows.TURNS)]
        key = " AND ".join(f"{c} = {d.mark}" for c in _rows.TURN_KEY)
        return f"UPDATE {d.table('turns')} SET {', '.join(sets)} WHERE {key} AND status = 'running'"

    async def retract_turn(self, turn_id: TurnId, at: datetime, reason: str) -> TurnRecord:
        """Mark a finished turn retracted, once; returns its record as stored (a turn retracted
        before keeps its first reason)."""
        d, m = self._dialect, self._dialect.mark
        await self._transact(
            [
                d.check(_rows.finished_turn_stored(turn_id)),
                Step(
                    f"UPDATE {d.table('turns')} SET retracted_at = {m}, retraction_reason = {m} "
                    f"WHERE id = {m} AND status <> 'running' AND retracted_at IS NULL",
                    (at.isoformat(), reason, turn_id),
                    f"cannot retract turn {turn_id!r}",
                ),
            ]
        )
        found = await self._records_where(_rows.TURNS, TurnRecord, f"WHERE id = {m}", (turn_id,))
        if not found:
            raise self._fail(f"lost turn {turn_id!r} while retracting it", "run host-sim fsck on the store")
        return found[0]

    async def save_node(self, node: SessionNode) -> None:
        """Replace the node of a stored session."""
        d = self._dialect
        await self._transact(
            [
                d.check(_rows.session_stored(node.session_id, "a node belongs to a stored session")),
                Step(d.upsert(_rows.NODES), self._full_row(_rows.NODES, node), f"cannot write the node of session {node.session_id!r}"),
            ]
        )

    async def save_edge(self, edge: LineageEdge) -> None:
        """Write a lineage edge between two stored sessions (same pair: replaced)."""
        await self._transact(self._edge_steps(edge))

    def _edge_steps(self, edge: LineageEdge) -> list[Step]:
        """Write ``edge`` once both its sessions are found stored."""
        d = self._dialect
        pair = f"{edge.from_session_id!r} -> {edge.to_session_id!r}"
        return [
            *(d.check(need) for need in _rows.ends_stored(edge)),
            Step(d.upsert(_rows.EDGES), self._full_row(_rows.EDGES, edge), f"cannot write the edge {pair}"),
        ]

    def _erasure_steps(
        self,
        erasure: Erasure,
        tables: Iterable[str],
        with_turn: Callable[[TurnRecord, tuple[object, ...]], Sequence[Step]] = lambda turn, row: (),
    ) -> list[Step]:
        """The statements every SQL store carries an erasure out with, over the places among
        ``tables`` (the tables the database has): its turns forgotten (each followed by
        ``with_turn`` of it and its erased row: what else the database keeps of it), its
        edges rewritten, no turn it quotes still running, the text of every keyed place erased."""
        d = self._dialect
        key = " AND ".join(f"{c} = {d.mark}" for c in _rows.TURN_KEY)
        erase_turn = (
            f"UPDATE {d.table('turns')} SET {', '.join(f'{c} = {d.mark}' for c in _rows.TURN_ERASED)}, "
            f"retraction_reason = CASE WHEN retraction_reason IS NULL THEN NULL ELSE {d.mark} END "
            f"WHERE {key} AND status <> 'running' AND erased_at IS NULL"
        )
        steps: list[Step] = []
        for turn in erasure.turns:
            _rows.check_erase_turn(turn, self._refuse)
            row = self._row(_rows.TURNS, turn)
            steps.append(
                Step(
                    erase_turn,
                    (*_rows.TURNS.pick(row, _rows.TURN_ERASED), ERASED_LABEL, *_rows.TURNS.pick(row, _rows.TURN_KEY)),
                    _rows.turn_not_erasable(turn.id),
                    "change",
                )
            )
            steps += with_turn(turn, row)
        steps += [step for e in erasure.edges for step in self._edge_steps(e)]
        steps += [d.check(_rows.no_running_turn(turn_id)) for table, turn_id in sorted(erasure.errors) if table == "turns"]
        steps += [
            Step(sql, params, "cannot erase the text of a record")
            for sql, params in statements(
                erasure, tables=tables, mark=d.mark, prefix=d.schema, encode=_rows.erased_value
            )
        ]
        return steps

    async def rebuild_index(self, nodes: Sequence[SessionNode], edges: Sequence[LineageEdge]) -> None:
        """Replace every node and edge and record `INDEX_VERSION`, in one transaction.

        Where several hosts write (`Dialect.several_writers`), blocks other hosts' session
        writes while it runs, and refuses (changing nothing) when sessions exist that
        ``nodes`` does not cover: they were created after the records these were derived
        from were read, so derive again.
        """
        d = self._dialect
        t = d.table
        steps: list[Step] = []
        write = d.insert
        if d.several_writers:
            covered = sorted({n.session_id for n in nodes})
            steps += [
                Step(f"LOCK TABLE {t('sessions')}, {t('nodes')}, {t('edges')} IN SHARE ROW EXCLUSIVE MODE", (), ""),
                Step(
                    f"SELECT 1 WHERE NOT EXISTS (SELECT 1 FROM {t('sessions')} WHERE NOT ({d.any_of('id', ())[0]}))",
                    (covered,),
                    "sessions were created while the index was being derived (another host is writing); "
                    "read the records again and rebuild, e.g. run 'host-sim fsck --repair' again",
                    "change",
                ),
            ]
            write = d.upsert
        steps += [Step(f"DELETE FROM {t('nodes')}", (), ""), Step(f"DELETE FROM {t('edges')}", (), "")]
        steps += [Step(write(_rows.NODES), self._full_row(_rows.NODES, n), f"cannot write node {n.session_id!r}") for n in nodes]
        steps += [Step(write(_rows.EDGES), self._full_row(_rows.EDGES, e), "cannot write an edge") for e in edges]
        steps += [Step(f"DELETE FROM {t('session_tags')}", (), ""), Step(d.tags_of_sessions, (), "cannot index tags")]
        steps.append(Step(d.set_meta("index_version"), (str(INDEX_VERSION),), "cannot record the index version"))
        await self._transact(steps)

    async def delete_session(self, session_id: SessionId, at: datetime) -> None:
        await self._transact(self._deletion_steps(session_id, at))

    def _deletion_steps(self, session_id: SessionId, at: datetime) -> list[Step]:
        """Check the session is stored, then mark it deleted (once: a second deletion keeps the first time)."""
        d = self._dialect
        return [
            d.check(_rows.session_stored(session_id, "delete a stored session")),
            Step(
                d.insert_ignoring("deletions", "session_id, deleted_at", f"VALUES ({d.marks(2)})", "session_id"),
                (session_id, at.isoformat()),
                f"cannot delete session {session_id!r}",
            ),
        ]

    async def mark_read(self, turn_id: TurnId, at: datetime) -> None:
        d = self._dialect
        await self._transact(
            [
                d.check(_rows.turn_stored(turn_id, "mark a stored notification read")),
                Step(
                    d.insert_ignoring("reads", "turn_id, read_at", f"VALUES ({d.marks(2)})", "turn_id"),
                    (turn_id, at.isoformat()),
                    f"cannot mark turn {turn_id!r} read",
                ),
            ]
        )

    # -- reads (`Store`) -------------------------------------------------------------------

    async def index_version(self) -> int | None:
        """The `INDEX_VERSION` the index was built with, or ``None`` (built by an older host)."""
        rows = await self._query(self._reads.index_version, ())
        raw = rows[0][0] if rows else None
        return int(raw) if isinstance(raw, str) and raw.isdigit() else None

    async def get_session(self, session_id: SessionId) -> SessionRecord | None:
        found = await self._records_where(_rows.SESSIONS, SessionRecord, self._reads.session, (session_id,))
        return found[0] if found else None

    async def get_turns(self, session_id: SessionId) -> Sequence[TurnRecord]:
        return await self._records_where(_rows.TURNS, TurnRecord, self._reads.turns, (session_id,))

    async def turns_since(self, session_id: SessionId, ordinal: int) -> Sequence[TurnRecord]:
        """A session's own turns from ``ordinal`` on, in ordinal order (what other hosts added)."""
        return await self._records_where(_rows.TURNS, TurnRecord, self._reads.turns_since, (session_id, ordinal))

    async def find_turn(self, turn_or_message_id: str) -> TurnRecord | None:
        found = await self._records_where(_rows.TURNS, TurnRecord, self._reads.turn, (turn_or_message_id,))
        if not found:
            found = await self._records_where(_rows.TURNS, TurnRecord, self._reads.turn_by_message, (turn_or_message_id,))
        return found[0] if found else None

    async def spawned_during(self, turn_id: str) -> Sequence[SessionRecord]:
        if self._lacks("sessions.trigger_turn_id"):
            return ()  # a store older than the column: no spawn recorded its turn
        return await self._records_where(_rows.SESSIONS, SessionRecord, self._reads.spawned_during, (turn_id,))

    async def child_sessions(self, session_id: SessionId) -> Sequence[SessionRecord]:
        return await self._records_where(_rows.SESSIONS, SessionRecord, self._reads.children, (session_id,))

    async def find_edges(self, artifact_type: str, source_id: str) -> Sequence[LineageEdge]:
        return await self._records_where(_rows.EDGES, LineageEdge, self._reads.edges_by_artifact, (artifact_type, source_id))

    async def notification_turns(
        self, session_id: SessionId | None, unread_only: bool, tags: Mapping[str, str]
    ) -> Sequence[TurnRecord]:
        d = self._dialect
        where = f"WHERE {d.is_notification}"
        params: tuple[object, ...] = ()
        if session_id is not None:
            where += f" AND session_id = {d.mark}"
            params = (session_id,)
        for key, value in tags.items():
            where += f" AND session_id IN (SELECT session_id FROM {d.table('session_tags')} WHERE key = {d.mark} AND value = {d.mark})"
            params += (key, value)
        if unread_only and self._driver.has_table("reads"):
            where += f" AND id NOT IN (SELECT turn_id FROM {d.table('reads')})"
        order = " ORDER BY ordinal" if session_id is not None else f" ORDER BY {d.order}"
        return await self._records_where(_rows.TURNS, TurnRecord, where + order, params)

    async def page_sessions(
        self, tags: Mapping[str, str], roots_only: bool, limit: int, before: int | None
    ) -> tuple[Sequence[SessionRecord], int | None]:
        d = self._dialect
        roots = f" AND {d.is_root}" if roots_only else ""
        live = f" AND s.id NOT IN (SELECT session_id FROM {d.table('deletions')})" if self._driver.has_table("deletions") else ""
        join = d.session_tag_join
        return await self._page(_rows.SESSIONS, SessionRecord, "s", "session_tags", join, roots + live, (), tags, limit, before)

    async def deleted_at(self, session_id: SessionId) -> datetime | None:
        if not self._driver.has_table("deletions"):
            return None
        d = self._dialect
        rows = await self._query(f"SELECT deleted_at FROM {d.table('deletions')} WHERE session_id = {d.mark}", (session_id,))
        try:
            return _rows.time_of(rows[0][0]) if rows else None
        except SerializationError as exc:
            raise self._driver.damaged(f"holds an unreadable deletions row ({session_id!r}): {exc}") from None

    async def list_sessions(self) -> Sequence[SessionRecord]:
        return await self._records_where(_rows.SESSIONS, SessionRecord, self._reads.all_sessions, ())

    async def get_nodes(self, session_ids: Sequence[SessionId]) -> Sequence[SessionNode]:
        found: dict[str, SessionNode] = {}
        for chunk in self._chunks(session_ids):
            where, params = self._dialect.any_of("session_id", chunk)
            for node in await self._records_where(_rows.NODES, SessionNode, f"WHERE {where}", params):
                found[node.session_id] = node
        return tuple(found[s] for s in session_ids if s in found)

    async def get_edges(self, session_ids: Sequence[SessionId], direction: Literal["out", "in"]) -> Sequence[LineageEdge]:
        column = "from_session_id" if direction == "out" else "to_session_id"
        by_session: dict[str, list[LineageEdge]] = {}
        for chunk in self._chunks(session_ids):
            where, params = self._dialect.any_of(column, chunk)
            for edge in await self._records_where(
                _rows.EDGES, LineageEdge, f"WHERE {where} ORDER BY {self._dialect.order}", params
            ):
                key = edge.from_session_id if direction == "out" else edge.to_session_id
                by_session.setdefault(key, []).append(edge)
        return tuple(e for s in dict.fromkeys(session_ids) for e in by_session.get(s, ()))

    async def save_job(self, record: JobRecord) -> None:
        """Write a job record: a start (``running``) inserts it, refused when its id is taken
        (in the same atomic write: a start's request id keys its job), and indexes it by its
        session's tags; its end replaces it. Where several hosts write, a running job is
        owned by this host (like its turns), so that only a job whose host is gone is ever
        marked interrupted by another."""
        d = self._dialect
        row = self._full_row(_rows.JOBS, record)
        if record.status != "running":
            await self._transact([Step(d.upsert(_rows.JOBS), row, f"cannot write job {record.id!r}")])
            return
        position = d.tag_position
        tags = d.insert_ignoring(
            "job_tags",
            f"key, value, {position}, job_id",
            f"SELECT t.key, t.value, j.{d.order}, j.id FROM {d.table('jobs')} j "
            f"JOIN {d.table('session_tags')} t ON t.session_id = j.session_id WHERE j.id = {d.mark}",
            "",
        )
        await self._transact(
            [
                Step(d.insert(_rows.JOBS), row, _rows.job_taken(record.id)),
                Step(tags, (record.id,), f"cannot index job {record.id!r}"),
            ]
        )

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
        d = self._dialect
        where = ""
        params: tuple[object, ...] = ()
        if session_id is not None:
            where += f" AND j.session_id = {d.mark}"
            params += (session_id,)
        if status is not None:
            where += f" AND j.status = {d.mark}"
            params += (status,)
        join = f"j.{d.order} = t.{d.tag_position}"
        return await self._page(_rows.JOBS, JobRecord, "j", "job_tags", join, where, params, tags, limit, before)

    async def _page(
        self,
        table: _rows.Table,
        record: type[_R],
        alias: str,
        tag_table: str,
        join: str,
        where: str,
        where_params: tuple[object, ...],
        tags: Mapping[str, str],
        limit: int,
        before: int | None,
    ) -> tuple[Sequence[_R], int | None]:
        """A page of ``table`` (as ``alias``, which qualifies ``where``), newest first, older
        than ``before``: through the tag index ``tag_table`` when ``tags`` are given (its rows
        ``t`` joined by ``join``; a page costs what it returns), else in writing order (a
        reader of a SQLite store made before ``tag_table`` filters by the sessions' tags)."""
        d, m = self._dialect, self._dialect.mark
        bound = (1 << 62) if before is None else before
        columns = self._driver.columns(table, f"{alias}.")
        source, tagged, position = f"{d.table(table.name)} {alias}", d.table(tag_table), d.tag_position
        pairs = list(tags.items())
        if pairs and self._driver.has_table(tag_table):
            (key, value), rest = pairs[0], pairs[1:]
            also = "".join(
                f" AND EXISTS (SELECT 1 FROM {tagged} o WHERE o.key = {m} AND o.value = {m} AND o.{position} = t.{position})"
                for _ in rest
            )
            sql = (
                f"SELECT {columns}, t.{position} FROM {tagged} t JOIN {source} ON {join} "
                f"WHERE t.key = {m} AND t.value = {m} AND t.{position} < {m}{also}{where} "
                f"ORDER BY t.{position} DESC LIMIT {m}"
            )
            params = (key, value, bound, *(x for pair in rest for x in pair), *where_params, limit + 1)
        else:
            also = "".join(
                f" AND EXISTS (SELECT 1 FROM {d.table('session_tags')} o "
                f"WHERE o.session_id = {alias}.session_id AND o.key = {m} AND o.value = {m})"
                for _ in pairs
            )
            order = f"{alias}.{d.order}"
            sql = f"SELECT {columns}, {order} FROM {source} WHERE {order} < {m}{where}{also} ORDER BY {order} DESC LIMIT {m}"
            params = (bound, *where_params, *(x for pair in pairs for x in pair), limit + 1)
        rows = await self._query(sql, params)
        records = [self._decode(table, record, row[:-1]) for row in rows[:limit]]
        last = rows[limit - 1][-1] if len(rows) > limit else None
        return tuple(records), None if last is None else int(last)

    def _chunks(self, ids: Sequence[SessionId], size: int = 500) -> list[Sequence[SessionId]]:
        """Ids without repeats, in groups small enough for one ``IN (...)`` (SQLite limits
        bound parameters); one group where the ids go as one list parameter."""
        unique = list(dict.fromkeys(ids))
        if self._dialect.array_parameters:
            return [unique]
        return [unique[i : i + size] for i in range(0, len(unique), size)]

    # -- the parts' calls: jobs (`SqlJobs`) ----------------------------------------------

    async def begin_invocation(self, record: Invocation) -> None:
        await self._jobs.begin_invocation(record)

    async def finish_invocation(self, record: Invocation) -> None:
        await self._jobs.finish_invocation(record)

    async def invocations_of(self, session_id: SessionId) -> Sequence[Invocation]:
        return await self._jobs.invocations_of(session_id)

    async def get_job(self, job_id: str) -> JobRecord | None:
        return await self._jobs.get_job(job_id)

    async def list_jobs(self) -> Sequence[JobRecord]:
        return await self._jobs.list_jobs()

    async def job_turn_began(self, job_id: str, turn_id: TurnId) -> None:
        await self._jobs.job_turn_began(job_id, turn_id)

    async def request_job_cancel(self, job_id: str, at: datetime) -> None:
        """Ask the host running this job to cancel it: it polls `cancel_requests` for its own jobs."""
        await self._jobs.request_job_cancel(job_id, at)

    async def cancel_requests(self, job_ids: Sequence[str]) -> Sequence[str]:
        return await self._jobs.cancel_requests(job_ids)

    # -- traces (`SqlTraces`) --------------------------------------------------------------

    async def create_linked_session(
        self, record: SessionRecord, node: SessionNode, edge: LineageEdge | None, trace_id: str | None
    ) -> None:
        """`create_session` and the session's trace link (given, or its parent's), in one transaction."""
        await self._traces.create_linked_session(self._session_steps(record, node, edge), record, trace_id)

    async def create_trace(self, trace: TraceRecord, task: TraceTaskRecord | None) -> None:
        """Write a trace and its task with their index rows, in one transaction."""
        await self._traces.create_trace(trace, task)

    async def add_output(
        self,
        *,
        output_id: str,
        session_id: SessionId,
        kind: str,
        created_at: datetime,
        chat_trace: TraceRecord,
        event_id: str | None = None,
        turn_id: TurnId | None = None,
        position: int | None = None,
    ) -> None:
        """Link an output to its session's trace (a new chat trace when it has none), in one transaction."""
        await self._traces.add_output(
            output_id=output_id, session_id=session_id, kind=kind, created_at=created_at,
            chat_trace=chat_trace, event_id=event_id, turn_id=turn_id, position=position,
        )  # fmt: skip

    async def record_commit(self, commit: TraceCommitRecord, *, event_id: str | None = None) -> None:
        """Record an output's first commit (a later one is ignored), in one transaction."""
        await self._traces.record_commit(commit, event_id=event_id)

    async def attach_task(self, task: TraceTaskRecord) -> None:
        """Give a stored trace its task, once."""
        await self._traces.attach_task(task)

    async def apply_event(self, event_id: str, at: datetime) -> None:
        """Record a spool event applied."""
        await self._traces.apply_event(event_id, at)

    async def event_applied(self, event_id: str) -> bool:
        return await self._traces.event_applied(event_id)

    async def get_trace(self, trace_id: str) -> TraceRecords | None:
        return await self._traces.get_trace(trace_id)

    async def find_trace(self, key: str) -> str | None:
        return await self._traces.find_trace(key)

    async def trace_of_session(self, session_id: SessionId) -> str | None:
        return await self._traces.trace_of_session(session_id)

    async def get_output(self, output_id: str) -> TraceOutputRecord | None:
        return await self._traces.get_output(output_id)

    async def get_commit(self, output_id: str) -> TraceCommitRecord | None:
        return await self._traces.get_commit(output_id)

    async def propose_actions(self, actions: Sequence[ProposedActionRecord]) -> None:
        """Write proposed actions, all or none."""
        await self._traces.propose_actions(actions)

    async def decide_action(self, outcome: ActionOutcomeRecord) -> None:
        """Write the one decision about a pending action."""
        await self._traces.decide_action(outcome)

    async def get_action(self, action_id: str) -> tuple[ProposedActionRecord, ActionOutcomeRecord | None] | None:
        return await self._traces.get_action(action_id)

    async def pending_actions(self, session_id: SessionId) -> Sequence[ProposedActionRecord]:
        return await self._traces.pending_actions(session_id)

    async def session_actions(self, session_id: SessionId) -> Sequence[tuple[ProposedActionRecord, ActionOutcomeRecord | None]]:
        return await self._traces.session_actions(session_id)

    async def trace_index_version(self) -> int | None:
        return await self._traces.trace_index_version()

    async def read_traces(self) -> TraceState:
        """Every trace record and index row, in writing order."""
        return await self._traces.read_traces()

    async def rebuild_trace_index(self, entries: Sequence[TraceIndexEntry]) -> None:
        """Replace the trace index and record `TRACE_INDEX_VERSION`, in one transaction."""
        await self._traces.rebuild_trace_index(entries)

    # -- approvals (`SqlApprovals`) --------------------------------------------------------

    async def add_approval_rule(self, rule: ApprovalRuleRecord) -> None:
        await self._approvals.add_approval_rule(rule)

    async def revoke_approval_rule(self, rule_id: str, at: datetime, by: str) -> None:
        await self._approvals.revoke_approval_rule(rule_id, at, by)

    async def get_approval_rule(self, rule_id: str) -> ApprovalRuleRecord | None:
        return await self._approvals.get_approval_rule(rule_id)

    async def decide_by_rule(self, outcome: ActionOutcomeRecord, rule_id: str) -> None:
        await self._approvals.decide_by_rule(outcome, rule_id)

    async def approval_rules(self, action_type: str | None = None) -> Sequence[ApprovalRuleRecord]:
        return await self._approvals.approval_rules(action_type)

    # -- memory (`SqlMemory`) --------------------------------------------------------------

    async def add_record(self, record: MemoryRecord, rests_on: Sequence[TurnId]) -> None:
        await self._memory.add_record(record, rests_on)

    async def get_record(self, record_id: str) -> MemoryRecord | None:
        return await self._memory.get_record(record_id)

    async def rests_on(self, record_id: RecordId) -> Sequence[TurnId]:
        return await self._memory.rests_on(record_id)

    async def records_on_turns(self, turn_ids: Sequence[TurnId]) -> Sequence[MemoryRecord]:
        return await self._memory.records_on_turns(turn_ids)

    async def records_derived_from(self, record_ids: Sequence[RecordId]) -> Sequence[MemoryRecord]:
        return await self._memory.records_derived_from(record_ids)

    async def retract_record(self, record_id: RecordId, at: datetime, reason: str) -> MemoryRecord:
        return await self._memory.retract_record(record_id, at, reason)

    async def page_records(
        self,
        session_id: SessionId | None,
        kind: str | None,
        tags: Mapping[str, str],
        include_retracted: bool,
        limit: int,
        after: int | None,
    ) -> tuple[Sequence[MemoryRecord], int | None]:
        return await self._memory.page_records(session_id, kind, tags, include_retracted, limit, after)

    async def search_records(self, query: str, tags: Mapping[str, str], limit: int) -> Sequence[MemoryRecord]:
        return await self._memory.search_records(query, tags, limit)

    # -- the rows the engine writes ------------------------------------------------------

    def _full_row(self, table: _rows.Table, record: object) -> tuple[object, ...]:
        """The row of ``record`` with the values of the table's extra columns (`Dialect.extra`) after it."""
        return (*self._row(table, record), *(self._extra_value(c, record) for c in self._dialect.extra(table)))

    def _extra_value(self, column: str, record: object) -> object:
        if column == "owner":  # the host running a turn or job
            return self._driver.owner if getattr(record, "status", None) == "running" else None
        return _COPIED[column](record)

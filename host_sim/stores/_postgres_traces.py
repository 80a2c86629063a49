"""`PostgresStore` as a `TraceStore`: every SQL statement of traces, actions and spool ids.

The one place the PostgreSQL trace-store SQL lives (tables, triggers, reads and writes);
`PostgresStore` inherits these methods and supplies connections and transactions. The
tables mirror `SqliteStore`'s (stores/_traces.py describes the records), in schema
``host_sim``, each with a ``seq`` identity column that keeps writing order::

    traces(seq, id PRIMARY KEY, origin, created_at)
    trace_tasks(seq, trace_id PRIMARY KEY, ref UNIQUE, snapshot, captured_at)
    trace_links(seq, session_id PRIMARY KEY, trace_id, created_at)      -- by (trace_id, seq)
    trace_outputs(seq, output_id PRIMARY KEY, trace_id, session_id, kind, created_at)
    trace_commits(seq, output_id PRIMARY KEY, commit_hash, recorded_at)
    trace_index(seq, kind, key, trace_id, PRIMARY KEY (key, kind, trace_id))  -- derived
    actions(seq, id PRIMARY KEY, type, payload, mod_id, session_id, turn_id, created_at, erased_at)
    action_outcomes(seq, action_id PRIMARY KEY, state, decided_at, decided_by, reason, session_id, turn_id)
    spool_applied(seq, event_id PRIMARY KEY, applied_at)

Records never change and are never deleted (triggers refuse), except to be erased (an
action's payload, an output's kind: `PostgresStore.erase`, rules in _postgres.py); only the derived
``trace_index`` is rewritten, by `rebuild_trace_index`. A database made before traces gets
the tables when a host opens it (``IF NOT EXISTS``), and then has no trace index version,
so the host derives the index.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime
from typing import TYPE_CHECKING, Any, Final, TypeVar

from modular_sdk import SessionId, TurnId

from . import _rows
from ._errors import StoreError
from ._postgres_sql import Step, check, cols, marks
from ._traces import (
    TRACE_INDEX_VERSION,
    ActionOutcomeRecord,
    ProposedActionRecord,
    TraceCommitRecord,
    TraceIndexEntry,
    TraceLinkRecord,
    TraceOutputRecord,
    TraceRecord,
    TraceRecords,
    TraceState,
    TraceTaskRecord,
)

if TYPE_CHECKING:
    from ._records import LineageEdge, SessionNode
    from ._records import SessionRecord

__all__ = ["TRACE_TABLES_SCHEMA", "PostgresTraces"]

_R = TypeVar("_R")

_KEPT: Final = (
    ("traces", "trace record (its origin is fixed at creation)"),
    ("trace_tasks", "task of a trace"),
    ("trace_links", "trace link of a session"),
    ("trace_outputs", "trace output"),
    ("trace_commits", "recorded commit"),
    ("actions", "proposed action"),
    ("action_outcomes", "decision about an action"),
    ("spool_applied", "applied event id"),
)

TRACE_TABLES_SCHEMA: Final = """
CREATE TABLE IF NOT EXISTS host_sim.traces (
    seq bigint GENERATED ALWAYS AS IDENTITY, id text PRIMARY KEY,
    origin text NOT NULL CHECK (origin IN ('task', 'chat')), created_at text NOT NULL
);
CREATE TABLE IF NOT EXISTS host_sim.trace_tasks (
    seq bigint GENERATED ALWAYS AS IDENTITY, trace_id text PRIMARY KEY, ref text NOT NULL UNIQUE,
    snapshot text NOT NULL, captured_at text NOT NULL
);
CREATE TABLE IF NOT EXISTS host_sim.trace_links (
    seq bigint GENERATED ALWAYS AS IDENTITY, session_id text PRIMARY KEY, trace_id text NOT NULL,
    created_at text NOT NULL
);
CREATE INDEX IF NOT EXISTS trace_links_by_trace ON host_sim.trace_links (trace_id, seq);
CREATE TABLE IF NOT EXISTS host_sim.trace_outputs (
    seq bigint GENERATED ALWAYS AS IDENTITY, output_id text PRIMARY KEY, trace_id text NOT NULL,
    session_id text NOT NULL, kind text NOT NULL, created_at text NOT NULL
);
CREATE INDEX IF NOT EXISTS trace_outputs_by_trace ON host_sim.trace_outputs (trace_id, seq);
CREATE TABLE IF NOT EXISTS host_sim.trace_commits (
    seq bigint GENERATED ALWAYS AS IDENTITY, output_id text PRIMARY KEY, commit_hash text NOT NULL,
    recorded_at text NOT NULL
);
CREATE TABLE IF NOT EXISTS host_sim.trace_index (
    seq bigint GENERATED ALWAYS AS IDENTITY, kind text NOT NULL, key text NOT NULL, trace_id text NOT NULL,
    PRIMARY KEY (key, kind, trace_id)
);
CREATE TABLE IF NOT EXISTS host_sim.actions (
    seq bigint GENERATED ALWAYS AS IDENTITY, id text PRIMARY KEY, type text NOT NULL, payload text NOT NULL,
    mod_id text NOT NULL, session_id text NOT NULL, turn_id text NOT NULL, created_at text NOT NULL,
    erased_at text
);
CREATE INDEX IF NOT EXISTS actions_by_session ON host_sim.actions (session_id, seq);
CREATE TABLE IF NOT EXISTS host_sim.action_outcomes (
    seq bigint GENERATED ALWAYS AS IDENTITY, action_id text PRIMARY KEY, state text NOT NULL,
    decided_at text NOT NULL
);
CREATE TABLE IF NOT EXISTS host_sim.spool_applied (
    seq bigint GENERATED ALWAYS AS IDENTITY, event_id text PRIMARY KEY, applied_at text NOT NULL
);
""" + "".join(
    f"CREATE OR REPLACE TRIGGER {table}_never_change BEFORE UPDATE ON host_sim.{table} "
    f"FOR EACH ROW EXECUTE FUNCTION host_sim.refuse('a {what} never changes');\n"
    f"CREATE OR REPLACE TRIGGER {table}_are_kept BEFORE DELETE ON host_sim.{table} "
    f"FOR EACH ROW EXECUTE FUNCTION host_sim.refuse('a {what} is never deleted');\n"
    f"CREATE OR REPLACE TRIGGER {table}_are_never_truncated BEFORE TRUNCATE ON host_sim.{table} "
    f"FOR EACH STATEMENT EXECUTE FUNCTION host_sim.refuse('{what} records are never deleted');\n"
    for table, what in _KEPT
)
"""The trace tables (run when a host opens the store: ``IF NOT EXISTS``, ``OR REPLACE``)."""



def _insert(table: _rows.Table) -> str:
    return f"INSERT INTO host_sim.{table.name} ({cols(table)}) VALUES ({marks(len(table.columns))})"


def _select(table: _rows.Table, where: str) -> str:
    return f"SELECT {cols(table)} FROM host_sim.{table.name} {where}"


_INDEX_ROW: Final = "INSERT INTO host_sim.trace_index (kind, key, trace_id) "
_INDEX_KEEP: Final = " ON CONFLICT (key, kind, trace_id) DO NOTHING"
_LINK_INDEX: Final = (
    _INDEX_ROW + "SELECT 'session', session_id, trace_id FROM host_sim.trace_links WHERE session_id = %s" + _INDEX_KEEP
)


class PostgresTraces:
    """The `TraceStore` methods of `PostgresStore` (see the module docstring)."""

    __slots__ = ()

    if TYPE_CHECKING:  # supplied by PostgresStore

        def _row(self, table: _rows.Table, record: object) -> tuple[object, ...]: ...
        def _refuse(self, problem: str) -> StoreError: ...
        def _session_steps(self, record: SessionRecord, node: SessionNode, edge: LineageEdge | None) -> list[Step]: ...
        async def _transact(self, steps: list[Step]) -> None: ...
        async def _query(self, sql: str, params: tuple[object, ...]) -> list[tuple[Any, ...]]: ...
        async def _records(self, table: _rows.Table, record: type[_R], sql: str, params: tuple[object, ...]) -> tuple[_R, ...]: ...
        def _decode(self, table: _rows.Table, record: type[_R], row: Sequence[object]) -> _R: ...

    async def create_trace(self, trace: TraceRecord, task: TraceTaskRecord | None) -> None:
        """Write a trace and its task with their index rows, in one transaction."""
        steps = [Step(_insert(_rows.TRACES), self._row(_rows.TRACES, trace), f"trace {trace.id!r} is already stored")]
        if task is not None:
            steps += self._task_steps(task)
        await self._transact(steps)

    def _task_steps(self, task: TraceTaskRecord) -> list[Step]:
        return [
            Step(
                _insert(_rows.TRACE_TASKS),
                self._row(_rows.TRACE_TASKS, task),
                f"trace {task.trace_id!r} already has a task, or task {task.ref!r} already has a trace",
            ),
            Step(
                _INDEX_ROW + "VALUES ('task', %s, %s)" + _INDEX_KEEP,
                (task.ref, task.trace_id),
                f"cannot index task {task.ref!r}",
            ),
        ]

    async def create_linked_session(
        self, record: SessionRecord, node: SessionNode, edge: LineageEdge | None, trace_id: str | None
    ) -> None:
        """`create_session` and the session's trace link (given, or its parent's), in one transaction."""
        steps = self._session_steps(record, node, edge)
        at = record.created_at.isoformat()
        if trace_id is not None:
            steps += [
                check(_rows.trace_stored(trace_id, "a session joins a stored trace")),
                Step(
                    "INSERT INTO host_sim.trace_links (session_id, trace_id, created_at) VALUES (%s, %s, %s)",
                    (record.id, trace_id, at),
                    f"session {record.id!r} is already in a trace",
                ),
            ]
        elif record.lineage.kind != "root":
            steps.append(
                Step(
                    "INSERT INTO host_sim.trace_links (session_id, trace_id, created_at) "
                    "SELECT %s, trace_id, %s FROM host_sim.trace_links WHERE session_id = %s",
                    (record.id, at, record.lineage.parent_session_id),
                    f"session {record.id!r} is already in a trace",
                )
            )
        if trace_id is not None or record.lineage.kind != "root":
            steps.append(Step(_LINK_INDEX, (record.id,), f"cannot index session {record.id!r}"))
        await self._transact(steps)

    def _event_steps(self, event_id: str | None, at: object) -> list[Step]:
        if event_id is None:
            return []
        return [
            Step(
                "INSERT INTO host_sim.spool_applied (event_id, applied_at) VALUES (%s, %s)",
                (event_id, at),
                f"spool event {event_id!r} was applied before; an event is applied once",
            )
        ]

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
        row = self._row(
            _rows.TRACE_OUTPUTS,
            TraceOutputRecord(
                output_id=output_id, trace_id="", session_id=session_id, kind=kind, created_at=created_at,
                turn_id=turn_id, position=position,
            ),
        )
        at = row[4]
        steps = [
            check(_rows.session_stored(session_id, "an output belongs to a stored session")),
            *self._event_steps(event_id, at),
            Step(
                "INSERT INTO host_sim.traces (id, origin, created_at) SELECT %s, %s, %s "
                "WHERE NOT EXISTS (SELECT 1 FROM host_sim.trace_links WHERE session_id = %s) "
                "AND NOT EXISTS (SELECT 1 FROM host_sim.trace_outputs WHERE output_id = %s)",
                (*self._row(_rows.TRACES, chat_trace), session_id, output_id),
                f"trace {chat_trace.id!r} is already stored",
            ),
            Step(
                "INSERT INTO host_sim.trace_links (session_id, trace_id, created_at) SELECT %s, id, %s "
                "FROM host_sim.traces WHERE id = %s "
                "AND NOT EXISTS (SELECT 1 FROM host_sim.trace_links WHERE session_id = %s)",
                (session_id, at, chat_trace.id, session_id),
                f"cannot link session {session_id!r} to its new trace",
            ),
            Step(_LINK_INDEX, (session_id,), f"cannot index session {session_id!r}"),
            Step(
                "INSERT INTO host_sim.trace_outputs (output_id, trace_id, session_id, kind, created_at, turn_id, position) "
                "SELECT %s, trace_id, %s, %s, %s, %s, %s FROM host_sim.trace_links WHERE session_id = %s "
                "AND NOT EXISTS (SELECT 1 FROM host_sim.trace_outputs WHERE output_id = %s)",
                (output_id, session_id, row[3], at, turn_id, position, session_id, output_id),
                f"cannot write output {output_id!r}",
            ),
            Step(
                _INDEX_ROW + "SELECT 'output', output_id, trace_id FROM host_sim.trace_outputs WHERE output_id = %s"
                + _INDEX_KEEP,
                (output_id,),
                f"cannot index output {output_id!r}",
            ),
        ]
        await self._transact(steps)

    async def record_commit(self, commit: TraceCommitRecord, *, event_id: str | None = None) -> None:
        """Record an output's first commit (a later one is ignored), in one transaction."""
        row = self._row(_rows.TRACE_COMMITS, commit)
        await self._transact(
            [
                check(_rows.output_stored(commit.output_id)),
                *self._event_steps(event_id, row[2]),
                Step(_insert(_rows.TRACE_COMMITS) + " ON CONFLICT (output_id) DO NOTHING", row, "cannot record a commit"),
                Step(
                    _INDEX_ROW + "SELECT 'commit', c.commit_hash, o.trace_id FROM host_sim.trace_commits c "
                    "JOIN host_sim.trace_outputs o ON o.output_id = c.output_id WHERE c.output_id = %s" + _INDEX_KEEP,
                    (commit.output_id,),
                    f"cannot index the commit of output {commit.output_id!r}",
                ),
            ]
        )

    async def attach_task(self, task: TraceTaskRecord) -> None:
        """Give a stored trace its task, once."""
        await self._transact(
            [
                check(_rows.trace_stored(task.trace_id, "a task is given to a stored trace")),
                *self._task_steps(task),
            ]
        )

    async def apply_event(self, event_id: str, at: datetime) -> None:
        """Record a spool event applied."""
        await self._transact(self._event_steps(event_id, at.isoformat()))

    async def event_applied(self, event_id: str) -> bool:
        return bool(await self._query("SELECT 1 FROM host_sim.spool_applied WHERE event_id = %s", (event_id,)))

    async def get_trace(self, trace_id: str) -> TraceRecords | None:
        found = await self._records(_rows.TRACES, TraceRecord, _select(_rows.TRACES, "WHERE id = %s"), (trace_id,))
        if not found:
            return None
        tasks = await self._records(_rows.TRACE_TASKS, TraceTaskRecord, _select(_rows.TRACE_TASKS, "WHERE trace_id = %s"), (trace_id,))
        links = await self._records(
            _rows.TRACE_LINKS, TraceLinkRecord, _select(_rows.TRACE_LINKS, "WHERE trace_id = %s ORDER BY seq"), (trace_id,)
        )
        outputs = await self._records(
            _rows.TRACE_OUTPUTS, TraceOutputRecord, _select(_rows.TRACE_OUTPUTS, "WHERE trace_id = %s ORDER BY seq"), (trace_id,)
        )
        rows = await self._query(
            f"SELECT {cols(_rows.TRACE_COMMITS, 'c.')} FROM host_sim.trace_outputs o "
            "JOIN host_sim.trace_commits c ON c.output_id = o.output_id WHERE o.trace_id = %s ORDER BY o.seq",
            (trace_id,),
        )
        return TraceRecords(
            trace=found[0],
            task=tasks[0] if tasks else None,
            links=links,
            outputs=outputs,
            commits=tuple(self._decode(_rows.TRACE_COMMITS, TraceCommitRecord, r) for r in rows),
        )

    async def find_trace(self, key: str) -> str | None:
        rows = await self._query("SELECT id FROM host_sim.traces WHERE id = %s", (key,))
        if not rows:
            rows = await self._query(
                "SELECT trace_id FROM host_sim.trace_index WHERE key = %s ORDER BY CASE kind WHEN 'task' THEN 0 "
                "WHEN 'session' THEN 1 WHEN 'output' THEN 2 ELSE 3 END, seq LIMIT 1",
                (key,),
            )
        return str(rows[0][0]) if rows else None

    async def trace_of_session(self, session_id: SessionId) -> str | None:
        rows = await self._query("SELECT trace_id FROM host_sim.trace_links WHERE session_id = %s", (session_id,))
        return str(rows[0][0]) if rows else None

    async def get_output(self, output_id: str) -> TraceOutputRecord | None:
        found = await self._records(_rows.TRACE_OUTPUTS, TraceOutputRecord, _select(_rows.TRACE_OUTPUTS, "WHERE output_id = %s"), (output_id,))
        return found[0] if found else None

    async def get_commit(self, output_id: str) -> TraceCommitRecord | None:
        found = await self._records(_rows.TRACE_COMMITS, TraceCommitRecord, _select(_rows.TRACE_COMMITS, "WHERE output_id = %s"), (output_id,))
        return found[0] if found else None

    async def propose_actions(self, actions: Sequence[ProposedActionRecord]) -> None:
        """Write proposed actions, all or none."""
        _rows.check_actions([a.id for a in actions], self._refuse)
        steps = [
            check(_rows.session_stored(session_id, "an action belongs to a stored session"))
            for session_id in dict.fromkeys(a.session_id for a in actions)
        ]
        steps += [Step(_insert(_rows.ACTIONS), self._row(_rows.ACTIONS, a), _rows.action_taken(a.id)) for a in actions]
        await self._transact(steps)

    async def decide_action(self, outcome: ActionOutcomeRecord) -> None:
        """Write the one decision about a pending action."""
        await self._transact(
            [
                check(_rows.action_stored(outcome.action_id)),
                Step(
                    _insert(_rows.ACTION_OUTCOMES),
                    self._row(_rows.ACTION_OUTCOMES, outcome),
                    _rows.action_decided(outcome.action_id),
                ),
            ]
        )

    async def get_action(self, action_id: str) -> tuple[ProposedActionRecord, ActionOutcomeRecord | None] | None:
        found = await self._records(_rows.ACTIONS, ProposedActionRecord, _select(_rows.ACTIONS, "WHERE id = %s"), (action_id,))
        if not found:
            return None
        outcome = await self._records(
            _rows.ACTION_OUTCOMES, ActionOutcomeRecord, _select(_rows.ACTION_OUTCOMES, "WHERE action_id = %s"), (action_id,)
        )
        return found[0], outcome[0] if outcome else None

    async def pending_actions(self, session_id: SessionId) -> Sequence[ProposedActionRecord]:
        return await self._records(
            _rows.ACTIONS,
            ProposedActionRecord,
            _select(
                _rows.ACTIONS,
                "a WHERE a.session_id = %s AND a.erased_at IS NULL AND NOT EXISTS "
                "(SELECT 1 FROM host_sim.action_outcomes o WHERE o.action_id = a.id) ORDER BY a.seq",
            ),
            (session_id,),
        )

    async def session_actions(self, session_id: SessionId) -> Sequence[tuple[ProposedActionRecord, ActionOutcomeRecord | None]]:
        actions = await self._records(
            _rows.ACTIONS, ProposedActionRecord, _select(_rows.ACTIONS, "WHERE session_id = %s ORDER BY seq"), (session_id,)
        )
        outcomes = await self._records(
            _rows.ACTION_OUTCOMES,
            ActionOutcomeRecord,
            _select(_rows.ACTION_OUTCOMES, "WHERE action_id IN (SELECT id FROM host_sim.actions WHERE session_id = %s)"),
            (session_id,),
        )
        by_action = {o.action_id: o for o in outcomes}
        return tuple((a, by_action.get(a.id)) for a in actions)

    async def trace_index_version(self) -> int | None:
        rows = await self._query("SELECT value FROM host_sim.meta WHERE key = 'trace_index_version'", ())
        raw = rows[0][0] if rows else None
        return int(raw) if isinstance(raw, str) and raw.isdigit() else None

    async def read_traces(self) -> TraceState:
        """Every trace record and index row, in writing order."""

        async def every(table: _rows.Table, record: type[_R]) -> tuple[_R, ...]:
            return await self._records(table, record, _select(table, "ORDER BY seq"), ())

        return TraceState(
            traces=await every(_rows.TRACES, TraceRecord),
            tasks=await every(_rows.TRACE_TASKS, TraceTaskRecord),
            links=await every(_rows.TRACE_LINKS, TraceLinkRecord),
            outputs=await every(_rows.TRACE_OUTPUTS, TraceOutputRecord),
            commits=await every(_rows.TRACE_COMMITS, TraceCommitRecord),
            index=await every(_rows.TRACE_INDEX, TraceIndexEntry),
        )

    async def rebuild_trace_index(self, entries: Sequence[TraceIndexEntry]) -> None:
        """Replace the trace index and record `TRACE_INDEX_VERSION`, in one transaction."""
        steps = [Step("DELETE FROM host_sim.trace_index", (), "")]
        steps += [
            Step(_INDEX_ROW + "VALUES (%s, %s, %s)" + _INDEX_KEEP, (e.kind, e.key, e.trace_id), "cannot index")
            for e in entries
        ]
        steps.append(
            Step(
                "INSERT INTO host_sim.meta (key, value) VALUES ('trace_index_version', %s) "
                "ON CONFLICT (key) DO UPDATE SET value = excluded.value",
                (str(TRACE_INDEX_VERSION),),
                "cannot record the trace index version",
            )
        )
        await self._transact(steps)

"""The `TraceStore` methods of both SQL stores (docs/traces.md, stores/_traces.py), written once.

Traces, their tasks, links and outputs, recorded commits, the derived trace index, proposed
actions and their one decision, and applied spool events. A part of the SQL store engine
(`_sql_store.SqlStore`), over its dialect (`_sql.Dialect`) and driver; the tables are
`_rows`' (made by ``_sqlite_schema.py`` and ``_postgres_traces.py``). Each write is one
transaction; a SQLite reader of a store made before traces finds none (``_traces_present``).
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime

from modular_sdk import SessionId, TurnId

from . import _rows
from ._records import SessionRecord
from ._sql import SqlPart, Step
from ._trace_records import (
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
from ._traces import TRACE_INDEX_VERSION, namespace_of, scoped_key

__all__ = ["SqlTraces"]


def _cols(table: _rows.Table, alias: str = "") -> str:
    return ", ".join(f"{alias}{c}" for c in table.columns)


class SqlTraces(SqlPart):
    """The `TraceStore` methods of `SqliteStore` and `PostgresStore` (see the module
    docstring): a part of the engine, over its dialect and driver."""

    __slots__ = ()

    def _traces_present(self) -> bool:
        return self._driver.has_table("traces")

    def _insert(self, table: _rows.Table) -> str:
        d = self._dialect
        return f"INSERT INTO {d.table(table.name)} ({_cols(table)}) VALUES ({d.marks(len(table.columns))})"

    def _index(self, rest: str) -> str:
        """Add rows to the trace index (derived: a row already there is kept)."""
        return self._dialect.insert_ignoring("trace_index", "kind, key, trace_id", rest, "key, kind, trace_id")

    def _link_index(self, links: str = "") -> str:
        """Index the session links in ``links`` (a CTE of ``session_id, trace_id``), by default
        the links of one session (its id the one parameter)."""
        if not links:
            links = f"{self._dialect.table('trace_links')} WHERE session_id = {self._dialect.mark}"
        return self._index(f"SELECT 'session', session_id, trace_id FROM {links}")

    async def create_trace(self, trace: TraceRecord, task: TraceTaskRecord | None) -> None:
        """Write a trace and its task with their index rows, in one transaction."""
        steps = [Step(self._insert(_rows.TRACES), self._row(_rows.TRACES, trace), f"trace {trace.id!r} is already stored")]
        if task is not None:
            steps += self._task_steps(task)
        await self._transact(steps)

    def _task_steps(self, task: TraceTaskRecord) -> list[Step]:
        m = self._dialect.mark
        return [
            Step(
                self._insert(_rows.TRACE_TASKS),
                self._row(_rows.TRACE_TASKS, task),
                f"trace {task.trace_id!r} already has a task, or task {task.ref!r} already has a trace",
            ),
            Step(self._index(f"VALUES ('task', {m}, {m})"), (task.ref, task.trace_id), f"cannot index task {task.ref!r}"),
        ]

    def _index_links_of(self, session_id: str) -> Step:
        """The step that indexes the trace links of ``session_id``."""
        return Step(self._link_index(), (session_id,), f"cannot index session {session_id!r}")

    async def create_linked_session(self, session_steps: list[Step], record: SessionRecord, trace_id: str | None) -> None:
        """``session_steps`` (the engine's `create_session` of ``record``) and the session's
        trace link (given, or its parent's), in one transaction."""
        d = self._dialect
        t, m = d.table, d.mark
        steps = list(session_steps)
        at = record.created_at.isoformat()
        if trace_id is not None:
            steps += [
                d.check(_rows.trace_stored(trace_id, "a session joins a stored trace")),
                Step(
                    f"INSERT INTO {t('trace_links')} (session_id, trace_id, created_at) VALUES ({d.marks(3)})",
                    (record.id, trace_id, at),
                    f"session {record.id!r} is already in a trace",
                ),
                self._index_links_of(record.id),
            ]
        elif record.lineage.kind != "root":  # its parent's trace, if it has one
            inherit = (
                f"INSERT INTO {t('trace_links')} (session_id, trace_id, created_at) "
                f"SELECT {m}, trace_id, {m} FROM {t('trace_links')} WHERE session_id = {m}"
            )
            params = (record.id, at, record.lineage.parent_session_id)
            refusal = f"session {record.id!r} is already in a trace"
            if d.writes_in_with:  # the link and its index row in one statement (a fork's transaction is short)
                both = f"WITH l AS ({inherit} RETURNING session_id, trace_id) {self._link_index('l')}"
                steps.append(Step(both, params, refusal))
            else:
                steps += [Step(inherit, params, refusal), self._index_links_of(record.id)]
        await self._transact(steps)

    def _event_steps(self, event_id: str | None, at: object) -> list[Step]:
        if event_id is None:
            return []
        d = self._dialect
        return [
            Step(
                f"INSERT INTO {d.table('spool_applied')} (event_id, applied_at) VALUES ({d.marks(2)})",
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
        d = self._dialect
        t, m = d.table, d.mark
        row = self._row(
            _rows.TRACE_OUTPUTS,
            TraceOutputRecord(
                output_id=output_id, trace_id="", session_id=session_id, kind=kind, created_at=created_at,
                turn_id=turn_id, position=position,
            ),
        )  # fmt: skip
        at = row[4]
        steps = [
            d.check(_rows.session_stored(session_id, "an output belongs to a stored session")),
            *self._event_steps(event_id, at),
            Step(
                f"INSERT INTO {t('traces')} (id, origin, created_at) SELECT {d.marks(3)} "
                f"WHERE NOT EXISTS (SELECT 1 FROM {t('trace_links')} WHERE session_id = {m}) "
                f"AND NOT EXISTS (SELECT 1 FROM {t('trace_outputs')} WHERE output_id = {m})",
                (*self._row(_rows.TRACES, chat_trace), session_id, output_id),
                f"trace {chat_trace.id!r} is already stored",
            ),
            Step(
                f"INSERT INTO {t('trace_links')} (session_id, trace_id, created_at) SELECT {m}, id, {m} "
                f"FROM {t('traces')} WHERE id = {m} "
                f"AND NOT EXISTS (SELECT 1 FROM {t('trace_links')} WHERE session_id = {m})",
                (session_id, at, chat_trace.id, session_id),
                f"cannot link session {session_id!r} to its new trace",
            ),
            self._index_links_of(session_id),
            Step(
                f"INSERT INTO {t('trace_outputs')} (output_id, trace_id, session_id, kind, created_at, turn_id, position) "
                f"SELECT {m}, trace_id, {d.marks(5)} FROM {t('trace_links')} WHERE session_id = {m} "
                f"AND NOT EXISTS (SELECT 1 FROM {t('trace_outputs')} WHERE output_id = {m})",
                (output_id, session_id, row[3], at, turn_id, position, session_id, output_id),
                f"cannot write output {output_id!r}",
            ),
            Step(
                self._index(f"SELECT 'output', output_id, trace_id FROM {t('trace_outputs')} WHERE output_id = {m}"),
                (output_id,),
                f"cannot index output {output_id!r}",
            ),
        ]
        await self._transact(steps)

    async def record_commit(self, commit: TraceCommitRecord, *, event_id: str | None = None) -> None:
        """Record an output's first commit (a later one is ignored), in one transaction."""
        d = self._dialect
        t, m = d.table, d.mark
        row = self._row(_rows.TRACE_COMMITS, commit)
        await self._transact(
            [
                d.check(_rows.output_stored(commit.output_id)),
                *self._event_steps(event_id, row[2]),
                Step(self._insert(_rows.TRACE_COMMITS) + " ON CONFLICT (output_id) DO NOTHING", row, "cannot record a commit"),
                Step(
                    self._index(
                        f"SELECT 'commit', {m} || c.commit_hash, o.trace_id FROM {t('trace_commits')} c "
                        f"JOIN {t('trace_outputs')} o ON o.output_id = c.output_id WHERE c.output_id = {m}"
                    ),  # a commit is found in the namespace of its output (stores/_traces.py)
                    (scoped_key(namespace_of(commit.output_id), ""), commit.output_id),
                    f"cannot index the commit of output {commit.output_id!r}",
                ),
            ]
        )

    async def attach_task(self, task: TraceTaskRecord) -> None:
        """Give a stored trace its task, once."""
        check = self._dialect.check(_rows.trace_stored(task.trace_id, "a task is given to a stored trace"))
        await self._transact([check, *self._task_steps(task)])

    async def apply_event(self, event_id: str, at: datetime) -> None:
        """Record a spool event applied."""
        await self._transact(self._event_steps(event_id, at.isoformat()))

    async def event_applied(self, event_id: str) -> bool:
        if not self._traces_present():
            return False
        d = self._dialect
        return bool(await self._query(f"SELECT 1 FROM {d.table('spool_applied')} WHERE event_id = {d.mark}", (event_id,)))

    async def get_trace(self, trace_id: str) -> TraceRecords | None:
        if not self._traces_present():
            return None
        d = self._dialect
        t, m, order = d.table, d.mark, d.order
        found = await self._records_where(_rows.TRACES, TraceRecord, f"WHERE id = {m}", (trace_id,))
        if not found:
            return None
        tasks = await self._records_where(_rows.TRACE_TASKS, TraceTaskRecord, f"WHERE trace_id = {m}", (trace_id,))
        links = await self._records_where(
            _rows.TRACE_LINKS, TraceLinkRecord, f"WHERE trace_id = {m} ORDER BY {order}", (trace_id,)
        )
        outputs = await self._records_where(
            _rows.TRACE_OUTPUTS, TraceOutputRecord, f"WHERE trace_id = {m} ORDER BY {order}", (trace_id,)
        )
        rows = await self._query(
            f"SELECT {_cols(_rows.TRACE_COMMITS, 'c.')} FROM {t('trace_outputs')} o "
            f"JOIN {t('trace_commits')} c ON c.output_id = o.output_id WHERE o.trace_id = {m} ORDER BY o.{order}",
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
        if not self._traces_present():
            return None
        d = self._dialect
        rows = await self._query(f"SELECT id FROM {d.table('traces')} WHERE id = {d.mark}", (key,))
        if not rows:
            rows = await self._query(
                f"SELECT trace_id FROM {d.table('trace_index')} WHERE key = {d.mark} ORDER BY CASE kind WHEN 'task' THEN 0 "
                f"WHEN 'session' THEN 1 WHEN 'output' THEN 2 ELSE 3 END, {d.order} LIMIT 1",
                (key,),
            )
        return str(rows[0][0]) if rows else None

    async def trace_of_session(self, session_id: SessionId) -> str | None:
        if not self._traces_present():
            return None
        d = self._dialect
        rows = await self._query(f"SELECT trace_id FROM {d.table('trace_links')} WHERE session_id = {d.mark}", (session_id,))
        return str(rows[0][0]) if rows else None

    async def get_output(self, output_id: str) -> TraceOutputRecord | None:
        if not self._traces_present():
            return None
        m = self._dialect.mark
        found = await self._records_where(_rows.TRACE_OUTPUTS, TraceOutputRecord, f"WHERE output_id = {m}", (output_id,))
        return found[0] if found else None

    async def get_commit(self, output_id: str) -> TraceCommitRecord | None:
        if not self._traces_present():
            return None
        m = self._dialect.mark
        found = await self._records_where(_rows.TRACE_COMMITS, TraceCommitRecord, f"WHERE output_id = {m}", (output_id,))
        return found[0] if found else None

    async def propose_actions(self, actions: Sequence[ProposedActionRecord]) -> None:
        """Write proposed actions, all or none."""
        _rows.check_actions([a.id for a in actions], self._refuse)
        steps = [
            self._dialect.check(_rows.session_stored(session_id, "an action belongs to a stored session"))
            for session_id in dict.fromkeys(a.session_id for a in actions)
        ]
        steps += [Step(self._insert(_rows.ACTIONS), self._row(_rows.ACTIONS, a), _rows.action_taken(a.id)) for a in actions]
        await self._transact(steps)

    async def decide_action(self, outcome: ActionOutcomeRecord) -> None:
        """Write the one decision about a pending action."""
        await self._transact(
            [
                self._dialect.check(_rows.action_stored(outcome.action_id)),
                Step(
                    self._insert(_rows.ACTION_OUTCOMES),
                    self._row(_rows.ACTION_OUTCOMES, outcome),
                    _rows.action_decided(outcome.action_id),
                ),
            ]
        )

    async def get_action(self, action_id: str) -> tuple[ProposedActionRecord, ActionOutcomeRecord | None] | None:
        if not self._traces_present():
            return None
        m = self._dialect.mark
        found = await self._records_where(_rows.ACTIONS, ProposedActionRecord, f"WHERE id = {m}", (action_id,))
        if not found:
            return None
        outcome = await self._records_where(
            _rows.ACTION_OUTCOMES, ActionOutcomeRecord, f"WHERE action_id = {m}", (action_id,)
        )
        return found[0], outcome[0] if outcome else None

    async def pending_actions(self, session_id: SessionId) -> Sequence[ProposedActionRecord]:
        if not self._traces_present():
            return ()
        d = self._dialect
        return await self._records_where(
            _rows.ACTIONS,
            ProposedActionRecord,
            f"WHERE session_id = {d.mark} AND erased_at IS NULL AND NOT EXISTS "
            f"(SELECT 1 FROM {d.table('action_outcomes')} o WHERE o.action_id = {d.table('actions')}.id) ORDER BY {d.order}",
            (session_id,),
        )

    async def session_actions(self, session_id: SessionId) -> Sequence[tuple[ProposedActionRecord, ActionOutcomeRecord | None]]:
        if not self._traces_present():
            return ()
        d = self._dialect
        actions = await self._records_where(
            _rows.ACTIONS, ProposedActionRecord, f"WHERE session_id = {d.mark} ORDER BY {d.order}", (session_id,)
        )
        outcomes = await self._records_where(
            _rows.ACTION_OUTCOMES,
            ActionOutcomeRecord,
            f"WHERE action_id IN (SELECT id FROM {d.table('actions')} WHERE session_id = {d.mark})",
            (session_id,),
        )
        by_action = {o.action_id: o for o in outcomes}
        return tuple((a, by_action.get(a.id)) for a in actions)

    async def trace_index_version(self) -> int | None:
        rows = await self._query(f"SELECT value FROM {self._dialect.table('meta')} WHERE key = 'trace_index_version'", ())
        raw = rows[0][0] if rows else None
        return int(raw) if isinstance(raw, str) and raw.isdigit() else None

    async def read_traces(self) -> TraceState:
        """Every trace record and index row, in writing order."""
        if not self._traces_present():
            return TraceState()
        order = f"ORDER BY {self._dialect.order}"
        return TraceState(
            traces=await self._records_where(_rows.TRACES, TraceRecord, order, ()),
            tasks=await self._records_where(_rows.TRACE_TASKS, TraceTaskRecord, order, ()),
            links=await self._records_where(_rows.TRACE_LINKS, TraceLinkRecord, order, ()),
            outputs=await self._records_where(_rows.TRACE_OUTPUTS, TraceOutputRecord, order, ()),
            commits=await self._records_where(_rows.TRACE_COMMITS, TraceCommitRecord, order, ()),
            index=await self._records_where(_rows.TRACE_INDEX, TraceIndexEntry, order, ()),
        )

    async def rebuild_trace_index(self, entries: Sequence[TraceIndexEntry]) -> None:
        """Replace the trace index and record `TRACE_INDEX_VERSION`, in one transaction."""
        d = self._dialect
        steps = [Step(f"DELETE FROM {d.table('trace_index')}", (), "")]
        steps += [Step(self._index(f"VALUES ({d.marks(3)})"), (e.kind, e.key, e.trace_id), "cannot index") for e in entries]
        steps.append(
            Step(d.set_meta("trace_index_version"), (str(TRACE_INDEX_VERSION),), "cannot record the trace index version")
        )
        await self._transact(steps)

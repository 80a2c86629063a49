"""The `TraceStore` methods of `SqliteStore` (API.md section 9, stores/_traces.py): traces,
their tasks, links and outputs, recorded commits, the trace index, proposed actions and their
one decision, and applied spool events. Each call is one transaction (`SqliteStore._transact`);
a reader of a store made before traces finds none (``_has_traces``).
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime
from typing import TYPE_CHECKING, Final, TypeVar

from modular_sdk import SessionId, TurnId

from . import _rows
from ._errors import StoreError
from ._records import LineageEdge, SessionNode, SessionRecord
from ._sqlite_commit import Step, check, insert
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

__all__ = ["SqliteTraces"]

_R = TypeVar("_R")

_INDEX_ROW: Final = "INSERT OR IGNORE INTO trace_index (kind, key, trace_id) "


class SqliteTraces:
    """The `TraceStore` methods of `SqliteStore` (see the module docstring)."""

    __slots__ = ()

    if TYPE_CHECKING:  # supplied by SqliteStore
        _has_traces: bool

        def _refuse(self, problem: str) -> StoreError: ...
        def _session_steps(self, record: SessionRecord, node: SessionNode, edge: LineageEdge | None) -> list[Step]: ...
        async def _transact(self, steps: list[Step]) -> None: ...
        async def _query(self, sql: str, params: tuple[object, ...]) -> list[tuple[object, ...]]: ...
        async def _records(self, table: _rows.Table, record: type[_R], where: str, params: tuple[object, ...]) -> tuple[_R, ...]: ...
        def _decode(self, table: _rows.Table, record: type[_R], row: Sequence[object]) -> _R: ...

    async def create_trace(self, trace: TraceRecord, task: TraceTaskRecord | None) -> None:
        """Write a trace and its task with their index rows, in one transaction."""
        steps = [Step(insert(_rows.TRACES), _rows.TRACES.row(trace), f"trace {trace.id!r} is already stored")]
        if task is not None:
            steps += self._task_steps(task)
        await self._transact(steps)

    def _task_steps(self, task: TraceTaskRecord) -> list[Step]:
        return [
            Step(
                insert(_rows.TRACE_TASKS),
                _rows.TRACE_TASKS.row(task),
                f"trace {task.trace_id!r} already has a task, or task {task.ref!r} already has a trace",
            ),
            Step(_INDEX_ROW + "VALUES ('task', ?, ?)", (task.ref, task.trace_id), f"cannot index task {task.ref!r}"),
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
                    "INSERT INTO trace_links (session_id, trace_id, created_at) VALUES (?, ?, ?)",
                    (record.id, trace_id, at),
                    f"session {record.id!r} is already in a trace",
                ),
            ]
        elif record.lineage.kind != "root":
            steps.append(
                Step(
                    "INSERT INTO trace_links (session_id, trace_id, created_at) "
                    "SELECT ?, trace_id, ? FROM trace_links WHERE session_id = ?",
                    (record.id, at, record.lineage.parent_session_id),
                    f"session {record.id!r} is already in a trace",
                )
            )
        if trace_id is not None or record.lineage.kind != "root":
            steps.append(
                Step(
                    _INDEX_ROW + "SELECT 'session', session_id, trace_id FROM trace_links WHERE session_id = ?",
                    (record.id,),
                    f"cannot index session {record.id!r}",
                )
            )
        await self._transact(steps)

    def _event_steps(self, event_id: str | None, at: object) -> list[Step]:
        if event_id is None:
            return []
        return [
            Step(
                "INSERT INTO spool_applied (event_id, applied_at) VALUES (?, ?)",
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
        row = _rows.TRACE_OUTPUTS.row(
            TraceOutputRecord(
                output_id=output_id, trace_id="", session_id=session_id, kind=kind, created_at=created_at,
                turn_id=turn_id, position=position,
            )
        )
        at = row[4]
        new = _rows.TRACES.row(chat_trace)
        steps = [
            check(_rows.session_stored(session_id, "an output belongs to a stored session")),
            *self._event_steps(event_id, at),
            Step(
                "INSERT INTO traces (id, origin, created_at) SELECT ?, ?, ? "
                "WHERE NOT EXISTS (SELECT 1 FROM trace_links WHERE session_id = ?) "
                "AND NOT EXISTS (SELECT 1 FROM trace_outputs WHERE output_id = ?)",
                (*new, session_id, output_id),
                f"trace {chat_trace.id!r} is already stored",
            ),
            Step(
                "INSERT INTO trace_links (session_id, trace_id, created_at) SELECT ?, id, ? FROM traces "
                "WHERE id = ? AND NOT EXISTS (SELECT 1 FROM trace_links WHERE session_id = ?)",
                (session_id, at, chat_trace.id, session_id),
                f"cannot link session {session_id!r} to its new trace",
            ),
            Step(
                _INDEX_ROW + "SELECT 'session', session_id, trace_id FROM trace_links WHERE session_id = ?",
                (session_id,),
                f"cannot index session {session_id!r}",
            ),
            Step(
                "INSERT INTO trace_outputs (output_id, trace_id, session_id, kind, created_at, turn_id, position) "
                "SELECT ?, trace_id, ?, ?, ?, ?, ? FROM trace_links WHERE session_id = ? "
                "AND NOT EXISTS (SELECT 1 FROM trace_outputs WHERE output_id = ?)",
                (output_id, session_id, row[3], at, turn_id, position, session_id, output_id),
                f"cannot write output {output_id!r}",
            ),
            Step(
                _INDEX_ROW + "SELECT 'output', output_id, trace_id FROM trace_outputs WHERE output_id = ?",
                (output_id,),
                f"cannot index output {output_id!r}",
            ),
        ]
        await self._transact(steps)

    async def record_commit(self, commit: TraceCommitRecord, *, event_id: str | None = None) -> None:
        """Record an output's first commit (a later one is ignored), in one transaction."""
        row = _rows.TRACE_COMMITS.row(commit)
        await self._transact(
            [
                check(_rows.output_stored(commit.output_id)),
                *self._event_steps(event_id, row[2]),
                Step(insert(_rows.TRACE_COMMITS) + " ON CONFLICT (output_id) DO NOTHING", row, "cannot record a commit"),
                Step(
                    _INDEX_ROW + "SELECT 'commit', c.commit_hash, o.trace_id FROM trace_commits c "
                    "JOIN trace_outputs o ON o.output_id = c.output_id WHERE c.output_id = ?",
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
        if not self._has_traces:
            return False
        return bool(await self._query("SELECT 1 FROM spool_applied WHERE event_id = ?", (event_id,)))

    async def get_trace(self, trace_id: str) -> TraceRecords | None:
        if not self._has_traces:
            return None
        found = await self._records(_rows.TRACES, TraceRecord, "WHERE id = ?", (trace_id,))
        if not found:
            return None
        tasks = await self._records(_rows.TRACE_TASKS, TraceTaskRecord, "WHERE trace_id = ?", (trace_id,))
        links = await self._records(_rows.TRACE_LINKS, TraceLinkRecord, "WHERE trace_id = ? ORDER BY rowid", (trace_id,))
        outputs = await self._records(_rows.TRACE_OUTPUTS, TraceOutputRecord, "WHERE trace_id = ? ORDER BY rowid", (trace_id,))
        rows = await self._query(
            "SELECT c.output_id, c.commit_hash, c.recorded_at FROM trace_outputs o "
            "JOIN trace_commits c ON c.output_id = o.output_id WHERE o.trace_id = ? ORDER BY o.rowid",
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
        if not self._has_traces:
            return None
        rows = await self._query("SELECT id FROM traces WHERE id = ?", (key,))
        if not rows:
            rows = await self._query(
                "SELECT trace_id FROM trace_index WHERE key = ? ORDER BY CASE kind WHEN 'task' THEN 0 "
                "WHEN 'session' THEN 1 WHEN 'output' THEN 2 ELSE 3 END, rowid LIMIT 1",
                (key,),
            )
        return str(rows[0][0]) if rows else None

    async def trace_of_session(self, session_id: SessionId) -> str | None:
        if not self._has_traces:
            return None
        rows = await self._query("SELECT trace_id FROM trace_links WHERE session_id = ?", (session_id,))
        return str(rows[0][0]) if rows else None

    async def get_output(self, output_id: str) -> TraceOutputRecord | None:
        if not self._has_traces:
            return None
        found = await self._records(_rows.TRACE_OUTPUTS, TraceOutputRecord, "WHERE output_id = ?", (output_id,))
        return found[0] if found else None

    async def get_commit(self, output_id: str) -> TraceCommitRecord | None:
        if not self._has_traces:
            return None
        found = await self._records(_rows.TRACE_COMMITS, TraceCommitRecord, "WHERE output_id = ?", (output_id,))
        return found[0] if found else None

    async def propose_actions(self, actions: Sequence[ProposedActionRecord]) -> None:
        """Write proposed actions, all or none."""
        _rows.check_actions([a.id for a in actions], self._refuse)
        steps = [
            check(_rows.session_stored(session_id, "an action belongs to a stored session"))
            for session_id in dict.fromkeys(a.session_id for a in actions)
        ]
        steps += [Step(insert(_rows.ACTIONS), _rows.ACTIONS.row(a), _rows.action_taken(a.id)) for a in actions]
        await self._transact(steps)

    async def decide_action(self, outcome: ActionOutcomeRecord) -> None:
        """Write the one decision about a pending action."""
        await self._transact(
            [
                check(_rows.action_stored(outcome.action_id)),
                Step(
                    insert(_rows.ACTION_OUTCOMES),
                    _rows.ACTION_OUTCOMES.row(outcome),
                    _rows.action_decided(outcome.action_id),
                ),
            ]
        )

    async def get_action(self, action_id: str) -> tuple[ProposedActionRecord, ActionOutcomeRecord | None] | None:
        if not self._has_traces:
            return None
        found = await self._records(_rows.ACTIONS, ProposedActionRecord, "WHERE id = ?", (action_id,))
        if not found:
            return None
        outcome = await self._records(_rows.ACTION_OUTCOMES, ActionOutcomeRecord, "WHERE action_id = ?", (action_id,))
        return found[0], outcome[0] if outcome else None

    async def pending_actions(self, session_id: SessionId) -> Sequence[ProposedActionRecord]:
        if not self._has_traces:
            return ()
        return await self._records(
            _rows.ACTIONS,
            ProposedActionRecord,
            "WHERE session_id = ? AND erased_at IS NULL "
            "AND NOT EXISTS (SELECT 1 FROM action_outcomes o WHERE o.action_id = actions.id) ORDER BY rowid",
            (session_id,),
        )

    async def session_actions(self, session_id: SessionId) -> Sequence[tuple[ProposedActionRecord, ActionOutcomeRecord | None]]:
        if not self._has_traces:
            return ()
        actions = await self._records(_rows.ACTIONS, ProposedActionRecord, "WHERE session_id = ? ORDER BY rowid", (session_id,))
        outcomes = await self._records(
            _rows.ACTION_OUTCOMES,
            ActionOutcomeRecord,
            "WHERE action_id IN (SELECT id FROM actions WHERE session_id = ?)",
            (session_id,),
        )
        by_action = {o.action_id: o for o in outcomes}
        return tuple((a, by_action.get(a.id)) for a in actions)

    async def trace_index_version(self) -> int | None:
        rows = await self._query("SELECT value FROM meta WHERE key = 'trace_index_version'", ())
        raw = rows[0][0] if rows else None
        return int(raw) if isinstance(raw, str) and raw.isdigit() else None

    async def read_traces(self) -> TraceState:
        """Every trace record and index row, in writing order."""
        if not self._has_traces:
            return TraceState()
        return TraceState(
            traces=await self._records(_rows.TRACES, TraceRecord, "ORDER BY rowid", ()),
            tasks=await self._records(_rows.TRACE_TASKS, TraceTaskRecord, "ORDER BY rowid", ()),
            links=await self._records(_rows.TRACE_LINKS, TraceLinkRecord, "ORDER BY rowid", ()),
            outputs=await self._records(_rows.TRACE_OUTPUTS, TraceOutputRecord, "ORDER BY rowid", ()),
            commits=await self._records(_rows.TRACE_COMMITS, TraceCommitRecord, "ORDER BY rowid", ()),
            index=await self._records(_rows.TRACE_INDEX, TraceIndexEntry, "ORDER BY rowid", ()),
        )

    async def rebuild_trace_index(self, entries: Sequence[TraceIndexEntry]) -> None:
        """Replace the trace index and record `TRACE_INDEX_VERSION`, in one transaction."""
        steps = [Step("DELETE FROM trace_index", (), "")]
        steps += [Step(_INDEX_ROW + "VALUES (?, ?, ?)", (e.kind, e.key, e.trace_id), "cannot index") for e in entries]
        steps.append(
            Step(
                "INSERT OR REPLACE INTO meta (key, value) VALUES ('trace_index_version', ?)",
                (str(TRACE_INDEX_VERSION),),
                "cannot record the trace index version",
            )
        )
        await self._transact(steps)

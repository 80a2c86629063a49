"""The `IntegratorStore` and job methods both SQL stores write alike (docs/embedding.md), written once.

An invocation begun and finished, a store's invocations of a session, a job read by id or
all of them, a job's turn noted, its cancel asked for and the cancels asked. A part of
the SQL store engine (`_sql_store.SqlStore`), over its dialect (`_sql.Dialect`) and
driver (`_lacks`: a column an older SQLite file has not, from which nothing is read). Writing and paging jobs are the engine's own; what differs between the
databases stays in each store: interrupting jobs (PostgreSQL only those of hosts gone,
in one ``RETURNING`` statement).
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime

from modular_sdk import SessionId, TurnId

from . import _rows
from ._records import Invocation, JobRecord
from ._sql import SqlPart, Step

__all__ = ["SqlJobs"]


class SqlJobs(SqlPart):
    """The job and invocation methods of `SqliteStore` and `PostgresStore` (see the module
    docstring): a part of the engine, over its dialect and driver."""

    __slots__ = ()

    async def begin_invocation(self, record: Invocation) -> None:
        d, table = self._dialect, _rows.INVOCATIONS
        sql = f"INSERT INTO {d.table(table.name)} ({', '.join(table.columns)}) VALUES ({d.marks(len(table.columns))})"
        await self._transact([Step(sql, self._row(table, record), _rows.invocation_taken(record.id))])

    async def finish_invocation(self, record: Invocation) -> None:
        _rows.check_finish_invocation(record, self._refuse)
        d, table = self._dialect, _rows.INVOCATIONS
        row = self._row(table, record)
        sql = (
            f"UPDATE {d.table(table.name)} SET {', '.join(f'{c} = {d.mark}' for c in _rows.INVOCATION_FINISHED)} "
            f"WHERE id = {d.mark} AND finished_at IS NULL"
        )
        params = (*table.pick(row, _rows.INVOCATION_FINISHED), record.id)
        await self._transact([Step(sql, params, _rows.invocation_not_started(record.id), "change")])

    async def invocations_of(self, session_id: SessionId) -> Sequence[Invocation]:
        if self._lacks("invocations.id"):
            return ()
        d = self._dialect
        return await self._records_where(
            _rows.INVOCATIONS, Invocation, f"WHERE session_id = {d.mark} ORDER BY {d.order}", (session_id,)
        )

    async def get_job(self, job_id: str) -> JobRecord | None:
        if self._lacks("jobs.id"):
            return None
        found = await self._records_where(_rows.JOBS, JobRecord, f"WHERE id = {self._dialect.mark}", (job_id,))
        return found[0] if found else None

    async def list_jobs(self) -> Sequence[JobRecord]:
        if self._lacks("jobs.id"):
            return ()
        return await self._records_where(_rows.JOBS, JobRecord, f"ORDER BY {self._dialect.order}", ())

    async def job_turn_began(self, job_id: str, turn_id: TurnId) -> None:
        m = self._dialect.mark
        sql = f"UPDATE {self._dialect.table('jobs')} SET turn_id = {m} WHERE id = {m} AND status = 'running'"
        await self._transact([Step(sql, (turn_id, job_id), "")])

    async def request_job_cancel(self, job_id: str, at: datetime) -> None:
        """Ask the host running this job to cancel it: it polls `cancel_requests` for its own jobs."""
        m = self._dialect.mark
        sql = (
            f"UPDATE {self._dialect.table('jobs')} SET cancel_requested_at = {m} "
            f"WHERE id = {m} AND status = 'running' AND cancel_requested_at IS NULL"
        )
        await self._transact([Step(sql, (at.isoformat(), job_id), "")])

    async def cancel_requests(self, job_ids: Sequence[str]) -> Sequence[str]:
        if not job_ids or self._lacks("jobs.id"):
            return ()
        d = self._dialect
        where, params = d.any_of("id", job_ids)
        rows = await self._query(
            f"SELECT id FROM {d.table('jobs')} WHERE {where} AND status = 'running' AND cancel_requested_at IS NOT NULL",
            params,
        )
        return tuple(str(r[0]) for r in rows)

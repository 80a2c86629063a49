"""Where a host keeps the integrator's records (docs/embedding.md): its store when that is
an `IntegratorStore` (every store of host_sim), else `MemoryIntegratorStore`, this host's memory. Jobs
themselves are in _jobs.py."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from datetime import datetime

import attrs

from modular_sdk import SessionId, TurnId

from ..stores._erasure import PLACES, Erasure, erase_rows
from ..stores._errors import StoreError
from ..stores._protocol import IntegratorStore, Store
from ..stores._records import Invocation, JobRecord, JobStatus, SessionRecord, TurnRecord
from ..stores._rows import job_taken

__all__ = ["MemoryIntegratorStore", "integrator_store_of"]


class MemoryIntegratorStore:
    """The integrator's records for a store of your own without `IntegratorStore`: kept in this host's
    memory, lost when it closes; listing scans the store's sessions."""

    def __init__(self, store: Store) -> None:
        self._store = store
        self._invocations: dict[str, Invocation] = {}
        self._jobs: dict[str, JobRecord] = {}
        self._reads: dict[TurnId, datetime] = {}
        self._deleted: dict[SessionId, datetime] = {}
        self._cancel_requested: set[str] = set()

    async def begin_invocation(self, record: Invocation) -> None:
        self._invocations[record.id] = record

    async def finish_invocation(self, record: Invocation) -> None:
        self._invocations[record.id] = record

    async def invocations_of(self, session_id: SessionId) -> Sequence[Invocation]:
        return tuple(i for i in self._invocations.values() if i.session_id == session_id)

    async def save_job(self, record: JobRecord) -> None:
        if record.status == "running" and record.id in self._jobs:  # a job starts once
            raise StoreError(job_taken(record.id))
        self._jobs[record.id] = record

    async def list_jobs(self) -> Sequence[JobRecord]:
        return tuple(self._jobs.values())

    async def get_job(self, job_id: str) -> JobRecord | None:
        return self._jobs.get(job_id)

    async def page_jobs(
        self,
        session_id: SessionId | None,
        status: JobStatus | None,
        tags: Mapping[str, str],
        limit: int,
        before: int | None,
    ) -> tuple[Sequence[JobRecord], int | None]:
        matching: list[tuple[int, JobRecord]] = []
        for position, job in enumerate(self._jobs.values(), start=1):
            if (before is not None and position >= before) or (session_id is not None and job.session_id != session_id):
                continue
            if status is not None and job.status != status:
                continue
            if tags:
                record = await self._store.get_session(job.session_id)
                if record is None or any(record.tags.get(k) != v for k, v in tags.items()):
                    continue
            matching.append((position, job))
        matching.reverse()
        page = matching[:limit]
        return tuple(j for _, j in page), page[-1][0] if len(matching) > limit else None

    async def job_turn_began(self, job_id: str, turn_id: TurnId) -> None:
        job = self._jobs.get(job_id)
        if job is not None and job.status == "running":
            self._jobs[job_id] = attrs.evolve(job, turn_id=turn_id)

    async def request_job_cancel(self, job_id: str, at: datetime) -> None:
        job = self._jobs.get(job_id)
        if job is not None and job.status == "running":
            self._cancel_requested.add(job_id)

    async def cancel_requests(self, job_ids: Sequence[str]) -> Sequence[str]:
        return tuple(j for j in job_ids if j in self._cancel_requested and self._jobs[j].status == "running")

    async def interrupt_jobs(self, now: Callable[[], datetime]) -> int:
        running = [j for j in self._jobs.values() if j.status == "running"]
        at = now() if running else None
        for job in running:
            self._jobs[job.id] = attrs.evolve(
                job,
                status="interrupted",
                finished_at=at,
                error="the host closed before the job finished",
                error_kind="interrupted",
            )
        return len(running)

    async def mark_read(self, turn_id: TurnId, at: datetime) -> None:
        self._reads.setdefault(turn_id, at)

    async def notification_turns(
        self, session_id: SessionId | None, unread_only: bool, tags: Mapping[str, str]
    ) -> Sequence[TurnRecord]:
        records = [r for r in await self._store.list_sessions() if all(r.tags.get(k) == v for k, v in tags.items())]
        if session_id is not None and session_id not in {r.id for r in records}:
            return ()
        ids = [r.id for r in records] if session_id is None else [session_id]
        out: list[TurnRecord] = []
        for sid in ids:
            out += (
                t
                for t in await self._store.get_turns(sid)
                if t.message.type == "notification" and not (unread_only and t.id in self._reads)
            )
        return sorted(out, key=lambda t: t.started_at) if session_id is None else out

    async def page_sessions(
        self, tags: Mapping[str, str], roots_only: bool, limit: int, before: int | None
    ) -> tuple[Sequence[SessionRecord], int | None]:
        records = list(await self._store.list_sessions())
        matching = [
            (position, r)
            for position, r in enumerate(records, start=1)
            if (before is None or position < before)
            and r.id not in self._deleted
            and not (roots_only and r.lineage.kind != "root")
            and all(r.tags.get(k) == v for k, v in tags.items())
        ]
        matching.reverse()
        page = matching[:limit]
        return tuple(r for _, r in page), page[-1][0] if len(matching) > limit else None

    async def delete_session(self, session_id: SessionId, at: datetime) -> None:
        self._deleted.setdefault(session_id, at)

    async def deleted_at(self, session_id: SessionId) -> datetime | None:
        return self._deleted.get(session_id)

    async def erase(self, erasure: Erasure) -> None:
        for place in PLACES:
            if place.table == "invocations":
                erase_rows(self._invocations, place, erasure)
            elif place.table == "jobs":
                erase_rows(self._jobs, place, erasure)


def integrator_store_of(store: Store) -> IntegratorStore:
    """Where a host keeps the integrator's records: the store itself when it is an `IntegratorStore`."""
    return store if isinstance(store, IntegratorStore) else MemoryIntegratorStore(store)

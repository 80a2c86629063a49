"""The integrator's surface beside sessions (API.md section 12): jobs, pages, the log kept
for stores that have no `LogStore`.

``host.start`` makes a `Job`: the submission runs in the host's own task group, so the
caller's cancellation does not reach it; closing the host cancels it and records it
``interrupted`` (a crash leaves it ``running``, and the next host to open the store marks
it ``interrupted``).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from datetime import datetime
from typing import final

import anyio
import attrs

from modular_sdk import SessionId, TurnId

from ..stores._protocol import LogStore, Store
from ..stores._records import ErrorKind, Invocation, JobRecord, JobStatus, SessionRecord, TurnRecord
from ._handles import NoPublicConstructor
from ._submission import Submission


__all__ = ["Job", "MemoryLog", "ended", "log_of"]


@final
class Job(metaclass=NoPublicConstructor):
    """A submission the host runs in its own task group (``host.start``).

    Obtain one from ``await host.start(session, text)`` or ``await host.jobs()``. ``status``
    is ``"running"``, then ``"finished"`` (or ``"failed"`` when the submission has an error),
    or ``"interrupted"`` when the host closed (or crashed) first. ``await job.wait()`` gives
    the `Submission` once it ends (for an interrupted job, one whose ``error`` says so).
    """

    __slots__ = ("_done", "_record", "_submission")

    def __init__(self, record: JobRecord, submission: Submission | None) -> None:
        self._record = record
        self._submission = submission
        self._done = anyio.Event()
        if record.status != "running":
            self._done.set()

    @property
    def id(self) -> str:
        return self._record.id

    @property
    def session_id(self) -> SessionId:
        return self._record.session_id

    @property
    def text(self) -> str:
        """What was submitted."""
        return self._record.text

    @property
    def status(self) -> JobStatus:
        return self._record.status

    @property
    def created_at(self) -> datetime:
        return self._record.created_at

    @property
    def finished_at(self) -> datetime | None:
        return self._record.finished_at

    @property
    def submission(self) -> Submission | None:
        """What the submission gave, once the job ended (``None`` while it runs)."""
        if self._submission is None and self._record.status != "running":
            self._submission = _submission_of(self._record)
        return self._submission

    async def wait(self) -> Submission:
        """Wait until the job ends; its `Submission` (never raises for a failed job)."""
        await self._done.wait()
        submission = self.submission
        assert submission is not None
        return submission

    def _end(self, record: JobRecord, submission: Submission | None) -> None:
        self._record, self._submission = record, submission
        self._done.set()

    def __repr__(self) -> str:
        return f"<Job {self.id} {self.status}>"


def _submission_of(record: JobRecord) -> Submission:
    """A finished job's submission as its record keeps it (the turn handle is not kept)."""
    text = record.result if record.result is not None else (record.error or "")
    return Submission(kind=record.kind or "prompt", text=text, error=record.error, error_kind=record.error_kind)


class MemoryLog:
    """The integrator's log for a store of your own without `LogStore`: kept in this host's
    memory, lost when it closes; listing scans the store's sessions."""

    def __init__(self, store: Store) -> None:
        self._store = store
        self._invocations: dict[str, Invocation] = {}
        self._jobs: dict[str, JobRecord] = {}
        self._reads: dict[TurnId, datetime] = {}
        self._deleted: dict[SessionId, datetime] = {}

    async def begin_invocation(self, record: Invocation) -> None:
        self._invocations[record.id] = record

    async def finish_invocation(self, record: Invocation) -> None:
        self._invocations[record.id] = record

    async def invocations_of(self, session_id: SessionId) -> Sequence[Invocation]:
        return tuple(i for i in self._invocations.values() if i.session_id == session_id)

    async def save_job(self, record: JobRecord) -> None:
        self._jobs[record.id] = record

    async def list_jobs(self) -> Sequence[JobRecord]:
        return tuple(self._jobs.values())

    async def interrupt_jobs(self, now: Callable[[], datetime]) -> int:
        running = [j for j in self._jobs.values() if j.status == "running"]
        at = now() if running else None
        for job in running:
            self._jobs[job.id] = attrs.evolve(job, status="interrupted", finished_at=at)
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


def log_of(store: Store) -> LogStore:
    """Where a host keeps the integrator's records: the store itself when it is a `LogStore`."""
    return store if isinstance(store, LogStore) else MemoryLog(store)


def ended(record: JobRecord, submission: Submission, at: datetime) -> JobRecord:
    status: JobStatus = "failed" if submission.error is not None else "finished"
    turn_id: TurnId | None = None if submission.turn is None else submission.turn.id
    kind_error: ErrorKind | None = submission.error_kind
    return attrs.evolve(
        record,
        status=status,
        finished_at=at,
        kind=submission.kind,
        result=submission.text,
        error=submission.error,
        error_kind=kind_error,
        turn_id=turn_id,
    )

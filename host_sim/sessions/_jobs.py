"""Host-owned jobs (docs/embedding.md): started by one host, found, paged and
cancelled from any host sharing its store.

``host.start`` makes a `Job`: its submission runs in the host's own task group, so the
caller's cancellation does not reach it. A job ends once, durably: ``finished``,
``failed`` (its submission has an error), ``cancelled`` (``job.cancel()`` or
``host.cancel_job(id)`` from any host), or ``interrupted`` (its host closed, crashed or
died first; the next host to open the store, or a live one, marks it). Both ends publish
``job_started`` and ``job_finished``.

Cancelling across hosts: the job row is the truth. A cancel for a job this host runs
cancels its scope at once; for a job another host runs it writes a request on the job's
row, and every host running jobs reads, once a second, which of its own running jobs were
asked to cancel (one read by key), so a job is cancelled within about a second wherever
it runs.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from contextlib import AbstractContextManager, nullcontext
from datetime import datetime
from typing import Final, final, get_args

import anyio
import anyio.abc
import anyio.lowlevel
import attrs

from modular_sdk import InvalidArgumentError, SessionId, TurnId
from modular_sdk._rules import show, unstorable_text

from .._host_made import NoPublicConstructor
from ..stores._errors import StoreError
from ..stores._protocol import IntegratorStore
from ..stores._records import ErrorKind, JobRecord, JobStatus
from ._events import EventHub, JobFinished, JobStarted
from ._handles import check_list_tags
from ._ids import job_id_for, new_job_id
from ._job_errors import unknown_job
from ._submission import Submission

__all__ = ["Job", "JobBook", "JobPage", "ended"]

CANCEL_POLL: Final = 1.0
"""Seconds between a host's reads of the cancel requests for the jobs it runs."""

_WAIT_POLL: Final = 0.25  # seconds between reads of a job another host runs, while waiting for it
_CANCELLED: Final = "the job was cancelled (job.cancel() or host.cancel_job()) before it finished"
_INTERRUPTED: Final = "the host closed before the job finished"

Submit = Callable[[SessionId, str, "_Call"], Awaitable[Submission]]
"""How a job runs its text: ``submit(session_id, text, call)``, the host's `submit` in the job's call path."""


@final
class Job(metaclass=NoPublicConstructor):
    """A submission a host runs in its own task group (``host.start``).

    Obtain one from ``await host.start(session, text)``, ``await host.job(job_id)`` or
    ``(await host.jobs()).jobs``, on any host sharing the store. ``status`` is
    ``"running"``, then once one of ``"finished"``, ``"failed"`` (the submission has an
    error), ``"cancelled"`` or ``"interrupted"`` (its host closed or died first; the
    submission's ``error_kind`` is then ``"interrupted"``, as for a cancelled one). A job
    this host runs updates itself; one another host runs shows its row as read, and
    `wait` reads it until it ends. ``turn_id`` is the turn its prompt runs, once known.
    """

    __slots__ = ("_book", "_done", "_record", "_submission")

    def __init__(self, record: JobRecord, submission: Submission | None, book: JobBook) -> None:
        self._record = record
        self._submission = submission
        self._book = book
        self._done = anyio.Event()
        if record.status != "running":
            self._done.set()

    @property
    def id(self) -> str:
        return self._record.id

    @property
    def session_id(self) -> SessionId:
        """The session the job's text was submitted to."""
        return self._record.session_id

    @property
    def turn_id(self) -> TurnId | None:
        """The turn the job's prompt runs (known once it began; ``None`` for a command)."""
        return self._record.turn_id

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
        """Wait until the job ends, on whichever host it runs; its `Submission` (never raises for a failed job)."""
        while not self._done.is_set():
            live = self._book.live(self.id)
            if live is self:
                break
            if live is not None:  # this host runs it now (a start in doubt, found stored): its object ends
                self._end(live._record, await live.wait())
                break
            record = await self._book.read(self.id)
            if record.status != "running":
                self._end(record, None)
                break
            await anyio.sleep(_WAIT_POLL)
        await self._done.wait()
        submission = self.submission
        assert submission is not None
        return submission

    async def cancel(self) -> None:
        """Cancel the job on whichever host runs it: its status becomes ``"cancelled"``.

        Returns once the cancel is delivered (this host) or requested (another host, which
        cancels it within about a second); ``await job.wait()`` to see it end. A job that
        already ended is left as it is.
        """
        await self._book.cancel(self.id)

    def _end(self, record: JobRecord, submission: Submission | None) -> None:
        self._record, self._submission = record, submission
        self._done.set()

    def _seen(self, record: JobRecord) -> None:
        """A fresher row of a job still running (its turn id, once known)."""
        if not self._done.is_set() and record.status == "running":
            self._record = record

    def __repr__(self) -> str:
        return f"<Job {self.id} {self.status}>"


@attrs.frozen(kw_only=True)
class JobPage:
    """One page of ``host.jobs(...)``: ``jobs`` newest first; ``next`` is the cursor of the
    following page (pass it as ``after=``), ``None`` on the last. Immutable."""

    jobs: tuple[Job, ...]
    next: str | None


class JobBook:
    """One host's jobs: starts them in its task group, finds, pages and cancels them in its store."""

    def __init__(
        self,
        *,
        integrator_store: IntegratorStore,
        events: EventHub,
        now: Callable[[], datetime],
        task_group: anyio.abc.TaskGroup,
        submit: Submit,
    ) -> None:
        self._integrator_store = integrator_store
        self._events = events
        self._now = now
        self._task_group = task_group
        self._submit = submit
        self._live: dict[str, Job] = {}  # jobs this host runs (their objects update themselves)
        self._running: dict[str, anyio.CancelScope] = {}  # ... and of those, the ones still running
        # Starts whose write raised a retryable StoreError: maybe committed (the store was away
        # as it committed), so maybe a job no host runs; this host runs each it finds stored, once.
        self._in_doubt: dict[str, tuple[JobRecord, AbstractContextManager[object]]] = {}
        self._wake = anyio.Event()  # set when a job starts: the cancel watch has work
        self._watching = False  # the cancel watch starts with this host's first job

    def live(self, job_id: str) -> Job | None:
        """The object of a job this host runs (until it ended), or ``None``."""
        return self._live.get(job_id)

    async def start(
        self,
        session_id: SessionId,
        text: str,
        *,
        within: AbstractContextManager[object] | None = None,
        request_id: str | None = None,
    ) -> Job:
        """Start a job; its submission runs inside ``within`` (the caller's tracing context).
        With ``request_id`` its id derives from the key: a job stored with it is returned."""
        job_id = new_job_id() if request_id is None else job_id_for(session_id, request_id)
        if request_id is not None and (stored := await self._integrator_store.get_job(job_id)) is not None:
            return await self._found(stored)  # a retry: the first attempt was stored
        record = JobRecord(id=job_id, session_id=session_id, text=text, status="running", created_at=self._now())
        try:
            with self._events.committing(  # its job_started commits with it (docs/embedding.md)
                lambda seq, at: JobStarted(seq=seq, at=at, job_id=record.id, session_id=session_id)
            ):
                await self._integrator_store.save_job(record)  # refused when its id is taken: check and write are one step
        except StoreError as exc:
            if exc.retryable:  # perhaps committed all the same: run it once it is seen stored
                self._in_doubt[record.id] = (record, within or nullcontext())
                self._watch()
            elif request_id is not None and (stored := await self._integrator_store.get_job(job_id)) is not None:
                return await self._found(stored)  # the same request, started meanwhile (here, or by another host)
            raise
        return await self._begin(record, within or nullcontext(), published=True)

    async def _found(self, record: JobRecord) -> Job:
        """A stored job found by its key: this host's start in doubt is run now (it was stored)."""
        doubt = self._in_doubt.pop(record.id, None)
        if doubt is not None and record.status == "running":
            return await self._begin(doubt[0], doubt[1], published=False)
        return await self.job(record.id)

    async def _begin(self, record: JobRecord, within: AbstractContextManager[object], *, published: bool) -> Job:
        """Run a stored job in the host's task group (``published``: its job_started was
        published; else it committed unseen: a shared store has its row, one host publishes it now)."""
        job = Job._create(record, None, self)
        self._live[record.id] = job
        scope = self._running[record.id] = anyio.CancelScope()
        self._watch()
        if not published and self._events.replay is None:
            self._events.publish(lambda seq, at: JobStarted(seq=seq, at=at, job_id=record.id, session_id=record.session_id))
        await self._events.written()  # numbered before the caller (and so other hosts) can act on it
        self._task_group.start_soon(self._run, job, record, scope, within)
        return job  # no checkpoint since start_soon: a job cancelled at once never runs its text

    def _watch(self) -> None:
        if not self._watching:  # a host that runs no job runs no watch either
            self._watching = True
            self._task_group.start_soon(self._watch_cancel_requests)
        self._wake.set()

    async def _run(self, job: Job, record: JobRecord, scope: anyio.CancelScope, within: AbstractContextManager[object]) -> None:
        submission: Submission | None = None
        try:
            with scope:
                await anyio.lowlevel.checkpoint_if_cancelled()  # cancelled before it began: nothing runs
                try:
                    with within:
                        submission = await self._submit(record.session_id, record.text, _Call(job, self._integrator_store))
                except Exception as exc:  # submit never raises for a bad reply; a bug fails this job, not the host
                    message = f"the job failed inside the host ({show(exc)}); please report it"
                    submission = Submission(kind="prompt", text=message, error=message, error_kind="model_failed")
        except BaseException:  # the host closed (its task group is cancelled) or failed
            await self._end(job, _stopped(job._record, "interrupted", _INTERRUPTED, self._now()), None)
            raise
        finally:
            self._running.pop(record.id, None)
        if submission is None:  # its own scope was cancelled: job.cancel(), from some host
            await self._end(job, _stopped(job._record, "cancelled", _CANCELLED, self._now()), None)
        else:
            await self._end(job, ended(job._record, submission, self._now()), submission)

    async def _end(self, job: Job, record: JobRecord, submission: Submission | None) -> None:
        """Write the job's end (durable before anyone sees it end), then end it and say so."""
        finished = lambda seq, at: JobFinished(  # noqa: E731
            seq=seq, at=at, job_id=record.id, status=record.status, error_kind=record.error_kind
        )
        stored = False
        try:
            with anyio.CancelScope(shield=True), self._events.committing(finished):  # also as the host closes
                await self._integrator_store.save_job(record)
            stored = True
        finally:
            if not stored:  # the store was away: written, with its job_finished, once it is back
                self._events.retry(lambda: self._integrator_store.save_job(record), finished)
            try:
                await self._events.written()  # numbered before a waiter (a client, another host) goes on
            finally:
                job._end(record, submission)
                self._live.pop(record.id, None)  # its row is the truth from now on (no object kept per job)

    async def read(self, job_id: str) -> JobRecord:
        """The job's row (one read by key); `UnknownJobError` naming the id when there is none."""
        if not isinstance(job_id, str):
            raise InvalidArgumentError(
                f"a job id is a str (Job.id, like 'job_3f2a9c1e0b4d'), got {show(job_id)}", argument="job_id", value=job_id
            )
        # an id no store could hold (a lone surrogate) is an unknown id, never an encoding error
        record = None if unstorable_text(job_id) else await self._integrator_store.get_job(job_id)
        if record is None:
            raise unknown_job(job_id)
        return record

    async def job(self, job_id: str) -> Job:
        record = await self.read(job_id)
        live = self._live.get(record.id)
        if live is not None:
            live._seen(record)
            return live
        return Job._create(record, None, self)

    async def cancel(self, job_id: str) -> None:
        scope = self._running.get(job_id) if isinstance(job_id, str) else None
        if scope is not None:  # this host runs it: at once
            scope.cancel()
            return
        record = await self.read(job_id)
        if record.status == "running":  # another host runs it: it reads the request within CANCEL_POLL
            await self._integrator_store.request_job_cancel(job_id, self._now())

    async def page(
        self,
        session_id: SessionId | None,
        status: object,
        tags: object,
        limit: object,
        after: object,
    ) -> JobPage:
        found: JobStatus | None = next((s for s in get_args(JobStatus) if s == status), None)
        if status is not None and (found is None or not isinstance(status, str)):
            raise InvalidArgumentError(
                f"status must be one of {', '.join(map(repr, get_args(JobStatus)))} or None, got {show(status)}",
                argument="status",
                value=status,
            )
        checked = check_list_tags(tags)
        if isinstance(limit, bool) or not isinstance(limit, int) or not 1 <= limit <= 10_000:
            raise InvalidArgumentError(f"limit must be an int from 1 to 10000, got {show(limit)}", argument="limit", value=limit)
        before = None if after is None else _decode_cursor(after)
        records, last = await self._integrator_store.page_jobs(session_id, found, checked, limit, before)
        jobs = tuple(self._live.get(r.id) or Job._create(r, None, self) for r in records)
        return JobPage(jobs=jobs, next=None if last is None else f"j{last}")

    async def _watch_cancel_requests(self) -> None:
        """The host's task: while this host runs jobs, read once a second which were asked to
        cancel; and run the starts in doubt that turn out stored (`_settle_doubts`)."""
        while True:
            if not self._running and not self._in_doubt:
                self._wake = anyio.Event()
                await self._wake.wait()
            await anyio.sleep(CANCEL_POLL)
            await self._settle_doubts()
            running = tuple(self._running)
            if not running:
                continue
            try:
                requested = await self._integrator_store.cancel_requests(running)
            except StoreError:  # the store failed this read: the next tick reads again; the jobs run on
                continue
            for job_id in requested:
                scope = self._running.get(job_id)
                if scope is not None:
                    scope.cancel()


    async def _settle_doubts(self) -> None:
        """Each start in doubt, once the store answers: stored and still running, this host runs
        it (no other does: it is this host's, and this host is alive); else it is forgotten."""
        for job_id in list(self._in_doubt):
            try:
                stored = await self._integrator_store.get_job(job_id)
            except StoreError:  # still away: the next tick asks again
                return
            if job_id not in self._in_doubt:
                continue  # a retry took it meanwhile
            if stored is not None and stored.status == "running":
                record, within = self._in_doubt.pop(job_id)
                await self._begin(record, within, published=False)
            else:
                del self._in_doubt[job_id]


class _Call:
    """A job as its submission carries it down (`JobCall`): its id, and where its turn is noted."""

    __slots__ = ("_integrator_store", "_job")

    def __init__(self, job: Job, integrator_store: IntegratorStore) -> None:
        self._job, self._integrator_store = job, integrator_store

    @property
    def id(self) -> str:
        return self._job.id

    async def turn_began(self, turn_id: TurnId) -> None:
        await self._integrator_store.job_turn_began(self._job.id, turn_id)
        self._job._seen(attrs.evolve(self._job._record, turn_id=turn_id))


def _decode_cursor(cursor: object) -> int:
    if isinstance(cursor, str) and cursor.startswith("j") and cursor[1:].isdigit():
        return int(cursor[1:])
    raise InvalidArgumentError(
        f"{show(cursor)} is not a job page cursor; pass the `next` of a JobPage this host returned",
        argument="after",
        value=cursor,
    )


def _stopped(record: JobRecord, status: JobStatus, error: str, at: datetime) -> JobRecord:
    return attrs.evolve(record, status=status, finished_at=at, error=error, error_kind="interrupted")


def _submission_of(record: JobRecord) -> Submission:
    """A finished job's submission as its record keeps it (the turn handle is not kept)."""
    text = record.result if record.result is not None else (record.error or "")
    return Submission(kind=record.kind or "prompt", text=text, error=record.error, error_kind=record.error_kind)


def ended(record: JobRecord, submission: Submission, at: datetime) -> JobRecord:
    """The record of a job whose submission gave ``submission``: ``failed`` when it has an error."""
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
        turn_id=turn_id if turn_id is not None else record.turn_id,
    )


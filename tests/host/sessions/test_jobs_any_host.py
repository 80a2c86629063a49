"""Jobs from any host (API.md section 13): found by id, paged and filtered, cancelled
wherever they run, announced as events, on every store and across hosts."""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from datetime import datetime
from pathlib import Path

import anyio
import anyio.to_thread
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from host_sim import (
    CommandFinished,
    Host,
    HostEvent,
    JobFinished,
    JobStarted,
    ModelRequest,
    PostgresStore,
    ScriptedModel,
    TurnFinished,
    TurnStarted,
    UnknownJobError,
)
from host_sim.examples import background_tasks
from host_sim.lineage import SessionNode
from host_sim.stores import IntegratorStore, JobRecord, SessionRecord
from host_sim.testing import JobStatus
from modular_sdk import AiRunnerId, InvalidArgumentError, RootLineage, SessionId

from ..conftest import StoreFactory

pytestmark = pytest.mark.anyio

HOST_SCRIPT = Path(__file__).parents[1] / "postgres_host.py"


class Gate:
    """A model whose calls wait until the test opens the gate (a job that runs as long as needed)."""

    def __init__(self) -> None:
        self.entered = anyio.Event()
        self.release = anyio.Event()

    async def respond(self, request: ModelRequest) -> str:
        self.entered.set()
        await self.release.wait()
        return f"done: {request.text}"

    def model(self) -> ScriptedModel:
        return ScriptedModel(self.respond)


@asynccontextmanager
async def watching(host: Host, until: Callable[[HostEvent], bool] | None = None) -> AsyncIterator[list[HostEvent]]:
    """Collect the host's events while the block runs (and a moment after, for the last ones;
    with ``until``, first until an event it accepts has come, however long that takes: a
    shared store delivers the host's own events from its rows, on a loaded machine later
    than a moment after)."""
    seen: list[HostEvent] = []
    arrived = anyio.Event()
    async with host.subscribe() as events, anyio.create_task_group() as tg:

        async def collect() -> None:
            async for event in events:
                seen.append(event)
                if until is not None and until(event):
                    arrived.set()

        tg.start_soon(collect)
        yield seen
        if until is not None:
            with anyio.fail_after(30):
                await arrived.wait()
        await anyio.sleep(0.05)
        tg.cancel_scope.cancel()


# -- finding a job ---------------------------------------------------------------------------------


async def test_a_job_is_found_by_id_with_its_session_and_turn_on_every_store(any_store: StoreFactory) -> None:
    async with Host(store=any_store()) as host:
        chat = await host.sessions.create()
        job = await host.start(chat, "hello")
        assert await host.job(job.id) is job  # this host's live job
        assert job.session_id == chat.id
        submission = await job.wait()
        assert submission.turn is not None and job.turn_id == submission.turn.id
    async with Host(store=any_store()) as again:
        found = await again.job(job.id)
        assert (found.id, found.session_id, found.status, found.turn_id) == (job.id, chat.id, "finished", job.turn_id)
        assert (await found.wait()).text == "echo: hello"


async def test_a_running_jobs_turn_id_is_known_while_it_runs(any_store: StoreFactory) -> None:
    gate = Gate()
    async with Host(model=gate.model(), store=any_store()) as host, watching(host) as seen:
        chat = await host.sessions.create()
        job = await host.start(chat, "long")
        await gate.entered.wait()
        with anyio.fail_after(5):
            while not (started := [e for e in seen if isinstance(e, TurnStarted)]):
                await anyio.sleep(0.01)  # the collector reads it
        assert len(started) == 1 and started[0].job_id == job.id
        running = await host.job(job.id)
        assert running.status == "running" and running.turn_id == started[0].turn_id
        gate.release.set()
        await job.wait()


async def test_an_unknown_job_id_raises_unknown_job_error_naming_it(any_store: StoreFactory) -> None:
    async with Host(store=any_store()) as host:
        with pytest.raises(UnknownJobError, match=r"no job 'job_nope' is in this host's store") as caught:
            await host.job("job_nope")
        assert caught.value.id == "job_nope" and isinstance(caught.value, LookupError)
        with pytest.raises(UnknownJobError, match="'job_nope'"):
            await host.cancel_job("job_nope")
        for unstorable in ("\ud800", "job_\udfff"):  # no store could hold it: unknown, not an encoding error
            with pytest.raises(UnknownJobError, match="is in this host's store"):
                await host.job(unstorable)
            with pytest.raises(UnknownJobError):
                await host.cancel_job(unstorable)


# -- cancelling ----------------------------------------------------------------------------------------


async def test_cancelling_a_job_on_its_own_host_ends_it_cancelled_at_once(any_store: StoreFactory) -> None:
    gate = Gate()
    def ended(event: HostEvent) -> bool:
        return isinstance(event, JobFinished)

    async with Host(model=gate.model(), store=any_store()) as host, watching(host, until=ended) as seen:
        chat = await host.sessions.create()
        job = await host.start(chat, "long")
        await gate.entered.wait()
        with anyio.fail_after(10):  # at once: the gate never opens, so only the cancel ends it
            await job.cancel()
            submission = await job.wait()
        assert job.status == "cancelled" and job.finished_at is not None
        assert submission.error is not None and "cancelled" in submission.error
        assert submission.error_kind == "interrupted"
        (turn,) = await chat.turns()
        assert turn.status == "failed" and turn.id == job.turn_id  # the turn it ran is recorded failed
    finished = [e for e in seen if isinstance(e, JobFinished)]
    assert [(e.job_id, e.status, e.error_kind) for e in finished] == [(job.id, "cancelled", "interrupted")]
    async with Host(store=any_store()) as again:
        assert (await again.job(job.id)).status == "cancelled"


async def test_cancelling_a_job_that_ended_changes_nothing(any_store: StoreFactory) -> None:
    async with Host(store=any_store()) as host:
        chat = await host.sessions.create()
        job = await host.start(chat, "quick")
        await job.wait()
        await host.cancel_job(job.id)
        await job.cancel()
        assert job.status == "finished" and (await host.job(job.id)).status == "finished"


async def test_a_job_cancelled_before_its_task_starts_never_runs_its_text(any_store: StoreFactory) -> None:
    called: list[str] = []

    def respond(request: ModelRequest) -> str:
        called.append(request.text)
        return "ran"

    async with Host(model=ScriptedModel(respond), store=any_store()) as host:
        chat = await host.sessions.create()
        job = await host.start(chat, "never")
        await job.cancel()  # no checkpoint between: its task has not started yet
        assert (await job.wait()).error_kind == "interrupted"
        assert job.status == "cancelled" and called == [] and await chat.turns() == []


async def test_closing_the_host_interrupts_a_job_with_error_kind_interrupted(any_store: StoreFactory) -> None:
    gate = Gate()
    seen: list[HostEvent] = []
    async with anyio.create_task_group() as tg:
        async with Host(model=gate.model(), store=any_store()) as host:
            subscribed = anyio.Event()

            async def collect() -> None:  # reads until the stream ends, after the host closed
                async with host.subscribe() as events:
                    subscribed.set()
                    async for event in events:
                        seen.append(event)

            tg.start_soon(collect)
            await subscribed.wait()
            chat = await host.sessions.create()
            job = await host.start(chat, "long")
            await gate.entered.wait()
    assert job.status == "interrupted" and job.submission is not None
    assert job.submission.error_kind == "interrupted"
    assert [(e.status, e.error_kind) for e in seen if isinstance(e, JobFinished)] == [("interrupted", "interrupted")]
    async with Host(store=any_store()) as again:
        found = await again.job(job.id)
        assert found.status == "interrupted" and (await found.wait()).error_kind == "interrupted"


# -- events -------------------------------------------------------------------------------------------


async def test_a_jobs_events_say_when_it_starts_and_ends_and_its_turn_and_command_carry_its_id() -> None:
    async with Host(mods=[background_tasks.mod]) as host, watching(host) as seen:
        chat = await host.sessions.create()
        await host.submit(chat, "not in a job")
        prompt = await host.start(chat, "in a job")
        await prompt.wait()
        command = await host.start(chat, "/task write the tests")
        await command.wait()
    kinds = [(e.kind, getattr(e, "job_id", None)) for e in seen if e.kind not in ("notification", "session_created")]
    assert kinds[:2] == [("turn_started", None), ("turn_finished", None)]  # a plain submit is in no job
    assert kinds[2:5] == [("job_started", prompt.id), ("turn_started", prompt.id), ("turn_finished", None)]
    assert ("job_finished", prompt.id) in kinds
    (started,) = [e for e in seen if isinstance(e, JobStarted) and e.job_id == prompt.id]
    assert started.session_id == chat.id
    (done,) = [e for e in seen if isinstance(e, CommandFinished)]
    assert done.job_id == command.id and done.command_id == "task"
    ends = [(e.job_id, e.status, e.error_kind) for e in seen if isinstance(e, JobFinished)]
    assert ends == [(prompt.id, "finished", None), (command.id, "finished", None)]
    assert [e for e in seen if isinstance(e, TurnFinished)][-1].status == "completed"


# -- listing -------------------------------------------------------------------------------------------


async def test_jobs_are_paged_newest_first_and_filtered_by_session_status_and_tags(any_store: StoreFactory) -> None:
    async with Host(mods=[background_tasks.mod], store=any_store()) as host:
        alice = await host.sessions.create(tags={"user": "alice", "team": "core"})
        bob = await host.sessions.create(tags={"user": "bob", "team": "core"})
        jobs = []
        for session, text in [(alice, "a1"), (bob, "b1"), (alice, "/nope"), (alice, "a2"), (bob, "b2")]:
            job = await host.start(session, text)
            await job.wait()
            jobs.append(job)
        a1, b1, bad, a2, b2 = jobs
        assert bad.status == "failed"

        first = await host.jobs(limit=2)
        assert [j.id for j in first.jobs] == [b2.id, a2.id] and first.next is not None
        second = await host.jobs(limit=2, after=first.next)
        assert [j.id for j in second.jobs] == [bad.id, b1.id]
        third = await host.jobs(limit=2, after=second.next)
        assert [j.id for j in third.jobs] == [a1.id] and third.next is None

        assert [j.id for j in (await host.jobs(session=alice)).jobs] == [a2.id, bad.id, a1.id]
        assert [j.id for j in (await host.jobs(session=alice.id, status="finished")).jobs] == [a2.id, a1.id]
        assert [j.id for j in (await host.jobs(status="failed")).jobs] == [bad.id]
        assert [j.id for j in (await host.jobs(tags={"user": "bob"})).jobs] == [b2.id, b1.id]
        assert len((await host.jobs(tags={"team": "core"})).jobs) == 5
        assert [j.id for j in (await host.jobs(tags={"team": "core", "user": "alice"}, status="failed")).jobs] == [bad.id]
        assert (await host.jobs(tags={"user": "carol"})).jobs == ()
        page = await host.jobs(tags={"team": "core"}, limit=3)
        rest = await host.jobs(tags={"team": "core"}, limit=3, after=page.next)
        assert [j.id for j in page.jobs + rest.jobs] == [b2.id, a2.id, bad.id, b1.id, a1.id] and rest.next is None


@pytest.mark.parametrize(
    ("arguments", "named"),
    [
        ({"status": "done"}, "status"),
        ({"status": 1}, "status"),
        ({"limit": 0}, "limit"),
        ({"limit": True}, "limit"),
        ({"after": "p3"}, "after"),
        ({"after": 3}, "after"),
        ({"tags": ["user", "alice"]}, "tags"),
        ({"session": 42}, "session"),
    ],
)
async def test_bad_job_listing_arguments_name_the_value(arguments: dict[str, object], named: str) -> None:
    async with Host() as host:
        with pytest.raises(InvalidArgumentError) as caught:
            await host.jobs(**arguments)  # type: ignore[arg-type]
        assert caught.value.argument == named and repr(next(iter(arguments.values()))) in str(caught.value)


async def test_a_job_id_that_is_not_text_names_the_value() -> None:
    async with Host() as host:
        for call in (host.job, host.cancel_job):
            with pytest.raises(InvalidArgumentError, match="got 42") as caught:
                await call(42)  # type: ignore[arg-type]
            assert caught.value.argument == "job_id"


STATUSES: tuple[JobStatus, ...] = ("running", "finished", "failed", "interrupted", "cancelled")


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    jobs=st.lists(st.tuples(st.integers(0, 2), st.sampled_from(STATUSES)), max_size=12),
    session_filter=st.none() | st.integers(0, 2),
    status_filter=st.none() | st.sampled_from(STATUSES),
    team_filter=st.none() | st.sampled_from(["x", "y"]),
    limit=st.integers(1, 4),
)
def test_walking_every_page_of_jobs_gives_exactly_the_matching_jobs_newest_first(
    any_store: StoreFactory,
    anyio_backend: str,
    jobs: list[tuple[int, JobStatus]],
    session_filter: int | None,
    status_filter: JobStatus | None,
    team_filter: str | None,
    limit: int,
) -> None:
    """The store's index, any filters, any page size: the pages concatenated are the model's answer."""

    async def main() -> None:
        store = any_store()
        assert isinstance(store, IntegratorStore)
        await store.open()
        try:
            run = f"r{id(jobs)}-{anyio.current_time()}"  # this example's own sessions and jobs
            sessions = [SessionId(f"ses_{run}_{i}") for i in range(3)]
            teams = ["x", "y", "x"]
            at = datetime.fromisoformat("2026-01-01T00:00:00+00:00")
            for sid, team in zip(sessions, teams, strict=True):
                record = SessionRecord(
                    id=sid,
                    lineage=RootLineage(),
                    metadata=None,
                    model="echo",
                    cwd="/",
                    runner_id=AiRunnerId("echo-1"),
                    created_at=at,
                    tags={"run": run, "team": team},
                )
                await store.create_session(record, SessionNode(session_id=sid, created_at=at), None)
            written: list[JobRecord] = []
            for n, (which, status) in enumerate(jobs):
                job = JobRecord(id=f"job_{run}_{n}", session_id=sessions[which], text="t", status="running", created_at=at)
                await store.save_job(job)  # it starts running, then ends as drawn
                if status != "running":
                    job = JobRecord(id=job.id, session_id=job.session_id, text="t", status=status, created_at=at)
                    await store.save_job(job)
                written.append(job)
            tags = {"run": run} if team_filter is None else {"run": run, "team": team_filter}
            session_id = None if session_filter is None else sessions[session_filter]
            want = [
                j.id
                for j in reversed(written)
                if (session_id is None or j.session_id == session_id)
                and (status_filter is None or j.status == status_filter)
                and (team_filter is None or teams[sessions.index(j.session_id)] == team_filter)
            ]
            got: list[str] = []
            before: int | None = None
            for _ in range(len(written) + 2):
                page, before = await store.page_jobs(session_id, status_filter, tags, limit, before)
                assert len(page) <= limit
                got += [j.id for j in page]
                if before is None:
                    break
            assert got == want
        finally:
            await store.close()

    anyio.run(main, backend=anyio_backend)


# -- across hosts on PostgreSQL -----------------------------------------------------------------------


async def test_a_job_is_cancelled_from_another_host_within_about_a_second(postgres_dsn: str) -> None:
    gate = Gate()
    async with (
        Host(model=gate.model(), store=PostgresStore(postgres_dsn)) as runner,
        Host(store=PostgresStore(postgres_dsn)) as other,
    ):
        chat = await runner.sessions.create()
        job = await runner.start(chat, "long")
        await gate.entered.wait()
        seen_there = await other.job(job.id)
        assert (seen_there.status, seen_there.session_id, seen_there.turn_id) == ("running", chat.id, job.turn_id)
        assert [j.id for j in (await other.jobs(status="running")).jobs] == [job.id]
        started = anyio.current_time()
        await seen_there.cancel()
        with anyio.fail_after(5):
            submission = await seen_there.wait()  # read from the store until it ends
        assert anyio.current_time() - started < 2.5
        assert seen_there.status == "cancelled" and submission.error_kind == "interrupted"
        assert job.status == "cancelled"  # on the host that ran it
        assert (await other.job(job.id)).status == "cancelled"


async def test_a_job_in_another_process_is_cancelled_by_this_one(postgres_dsn: str) -> None:
    async with Host(store=PostgresStore(postgres_dsn)) as host:
        chat = await host.sessions.create()
        process = subprocess.Popen(
            [sys.executable, str(HOST_SCRIPT), postgres_dsn, chat.id, "job", "--backend", "asyncio"],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        try:
            assert process.stdout is not None
            with anyio.fail_after(60):
                assert (await anyio.to_thread.run_sync(process.stdout.readline)).strip() == "open"
                job_id = json.loads(await anyio.to_thread.run_sync(process.stdout.readline))["job"]
                while (await host.job(job_id)).turn_id is None:  # its model call has begun
                    await anyio.sleep(0.05)
                await host.cancel_job(job_id)
                ended = json.loads(await anyio.to_thread.run_sync(process.stdout.readline))
            assert ended == {"job": job_id, "status": "cancelled", "error_kind": "interrupted"}
            assert (await host.job(job_id)).status == "cancelled"
            assert await anyio.to_thread.run_sync(process.wait) == 0
        finally:
            if process.poll() is None:
                process.kill()
                process.wait()
            for stream in (process.stdout, process.stderr):
                if stream is not None:
                    stream.close()


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(model_steps=st.integers(0, 6), cancel_after=st.integers(0, 40), command=st.booleans())
def test_a_job_ends_once_finished_or_cancelled_wherever_the_cancel_lands(
    anyio_backend: str, model_steps: int, cancel_after: int, command: bool
) -> None:
    """A race, on one host's own MemoryStore: however many scheduling steps pass before the
    cancel, the job ends exactly once, its object, its row and its one job_finished agree,
    and its turn is completed exactly when the job finished."""

    async def respond(request: ModelRequest) -> str:
        for _ in range(model_steps):
            await anyio.sleep(0)
        return "done"

    async def main() -> None:
        async with Host(mods=[background_tasks.mod], model=ScriptedModel(respond)) as host:
            seen: list[HostEvent] = []
            async with host.subscribe() as events:
                chat = await host.sessions.create()
                if command:
                    await host.submit(chat, "first")  # a /task forks a completed turn
                job = await host.start(chat, "/task go" if command else "go")
                for _ in range(cancel_after):
                    await anyio.sleep(0)
                await job.cancel()
                submission = await job.wait()
                await job.cancel()  # again, after it ended: nothing changes
                assert job.status in ("finished", "cancelled")
                assert (await host.job(job.id)).status == job.status
                with anyio.move_on_after(0.2):
                    async for event in events:
                        seen.append(event)
            ends = [e for e in seen if isinstance(e, JobFinished)]
            assert [(e.job_id, e.status) for e in ends] == [(job.id, job.status)]
            if job.status == "cancelled":
                assert submission.error_kind == "interrupted"
            else:
                assert submission.error is None
            if not command:
                turns = await chat.turns()
                assert all(t.status == ("completed" if job.status == "finished" else "failed") for t in turns)
                assert job.status == "cancelled" or len(turns) == 1

    anyio.run(main, backend=anyio_backend)


async def test_a_sqlite_store_made_before_job_indexes_gets_them_with_its_jobs_indexed(tmp_path: Path) -> None:
    import sqlite3

    from host_sim import SqliteStore

    path = tmp_path / "old.sqlite"
    async with Host(store=SqliteStore(path)) as host:
        chat = await host.sessions.create(tags={"user": "alice"})
        job = await host.start(chat, "hello")
        await job.wait()
    conn = sqlite3.connect(path)
    for statement in (
        "DROP TABLE job_tags",
        "DROP INDEX jobs_by_session",
        "DROP INDEX jobs_by_status",
        "DROP INDEX session_tags_by_session",
        "ALTER TABLE jobs DROP COLUMN cancel_requested_at",
    ):
        conn.execute(statement)
    conn.commit()
    conn.close()
    reader = SqliteStore(path, read_only=True)  # a reader reads it as it is
    await reader.open()
    try:
        (listed,), _ = await reader.page_jobs(None, None, {"user": "alice"}, 10, None)
        assert listed.id == job.id
    finally:
        await reader.close()
    async with Host(store=SqliteStore(path)) as host:
        assert [j.id for j in (await host.jobs(tags={"user": "alice"})).jobs] == [job.id]


async def test_a_postgres_store_made_before_job_indexes_gets_them_with_its_jobs_indexed(postgres_dsn: str) -> None:
    import psycopg

    async with Host(store=PostgresStore(postgres_dsn)) as host:
        chat = await host.sessions.create(tags={"user": "alice"})
        job = await host.start(chat, "hello")
        await job.wait()
    with psycopg.connect(postgres_dsn, autocommit=True) as conn:
        conn.execute("DROP TABLE host_sim.job_tags")
        conn.execute("DROP INDEX host_sim.jobs_by_session, host_sim.jobs_by_status, host_sim.session_tags_by_session")
        conn.execute("ALTER TABLE host_sim.jobs DROP COLUMN cancel_requested_at")
    async with Host(store=PostgresStore(postgres_dsn)) as host:
        assert [j.id for j in (await host.jobs(tags={"user": "alice"})).jobs] == [job.id]
        assert (await host.jobs(session=chat, status="finished")).jobs[0].id == job.id

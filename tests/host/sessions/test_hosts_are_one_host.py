"""Several host processes on one PostgresStore behave as one host (API.md section 13).

Each story runs a second host in a real process (``postgres_host.py serve``) next to the
host of the test, on one throwaway PostgreSQL server: what one forgets, deletes, finishes
or loses to ``kill -9`` the other knows, at once where a model could see it, within a
second elsewhere, and its subscribers are told.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import AsyncIterator, Awaitable, Callable, Sequence
from contextlib import asynccontextmanager
from datetime import timedelta
from pathlib import Path

import anyio
import anyio.to_thread
import psycopg
import pytest

from host_sim import (
    HistoryEntry,
    Host,
    HostEvent,
    JobFinished,
    JobStarted,
    Lagged,
    ModelRequest,
    PostgresStore,
    ScriptedModel,
    SessionCreated,
    SessionHandle,
    StoreError,
    TurnErased,
    TurnFinished,
    TurnStarted,
)
from host_sim.testing import INTERRUPTED, EventRow
from modular_sdk import AiNotificationMessage, SessionDeletedError

HOST_SCRIPT = Path(__file__).parents[1] / "postgres_host.py"


class OtherHost:
    """A host in another process, driven one JSON command at a time."""

    def __init__(self, process: subprocess.Popen[str]) -> None:
        self.process = process

    async def line(self, timeout: float = 60) -> str:
        stream = self.process.stdout
        assert stream is not None
        with anyio.fail_after(timeout):
            return await anyio.to_thread.run_sync(stream.readline, abandon_on_cancel=True)

    async def call(self, **command: object) -> dict[str, object]:
        assert self.process.stdin is not None
        self.process.stdin.write(json.dumps(command) + "\n")
        self.process.stdin.flush()
        answer: dict[str, object] = json.loads(await self.line())
        return answer


@asynccontextmanager
async def other_host(dsn: str, *args: str, backend: str = "trio") -> AsyncIterator[OtherHost]:
    process = subprocess.Popen(
        [sys.executable, str(HOST_SCRIPT), dsn, "-", *args, "--backend", backend],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        other = OtherHost(process)
        assert await other.line() == "open\n"
        yield other
    finally:
        if process.poll() is None:
            process.kill()
        process.wait(timeout=60)
        for stream in (process.stdin, process.stdout, process.stderr):
            if stream is not None:
                stream.close()


async def within(seconds: float, check: Callable[[], Awaitable[bool]]) -> float:
    """How long until ``check()`` holds (fails after ``seconds``), polling every 20 ms."""
    began = time.perf_counter()
    with anyio.fail_after(seconds):
        while not await check():
            await anyio.sleep(0.02)
    return time.perf_counter() - began


def recording_model(seen: list[list[tuple[str, str, bool]]]) -> ScriptedModel:
    async def respond(request: ModelRequest) -> str:
        seen.append([(h.text, h.reply, h.erased) for h in request.history])
        return f"reply to {request.text}"

    return ScriptedModel(respond)


@pytest.mark.anyio
async def test_a_message_forgotten_on_one_host_never_reaches_a_model_on_another(postgres_dsn: str) -> None:
    seen: list[list[tuple[str, str, bool]]] = []
    async with Host(model=recording_model(seen), store=PostgresStore(postgres_dsn)) as here:
        chat = await here.sessions.create()
        secret = await chat.run("my card is 4111")
        await chat.run("and my name is Ann")
        async with other_host(postgres_dsn, "serve") as there:
            assert await there.call(op="forget", turn=secret.turn.id) == {"done": True}
            await chat.run("what do you know?")  # at once: no wait, this host held the session in memory
            answer = await there.call(op="run", session=chat.id, text="and you?")
    # Forgetting a turn also erases the turns whose model read it (the second one here).
    assert seen[-1] == [("", "", True), ("", "", True)]
    history = answer["history"]
    assert isinstance(history, list) and history[0] == ["", "", True]
    assert "4111" not in json.dumps(history)


@pytest.mark.anyio
async def test_a_forgotten_message_never_reaches_a_model_even_after_another_session_was_sent_to_first(
    postgres_dsn: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The synchronous check is kept per session: a send to another session after the
    erasure must not mark this one as up to date while this host's event reader is late."""
    from host_sim.testing import across_hosts

    monkeypatch.setattr(across_hosts, "APPLY_OTHER_HOSTS_FACTS", False)  # this host's reader has not got there yet
    seen: list[list[tuple[str, str, bool]]] = []
    async with Host(model=recording_model(seen), store=PostgresStore(postgres_dsn)) as here:
        chat, other = await here.sessions.create(), await here.sessions.create()
        secret = await chat.run("my card is 4111")
        await other.run("an unrelated chat")
        async with other_host(postgres_dsn, "serve") as there:
            assert await there.call(op="forget", turn=secret.turn.id) == {"done": True}
            await other.run("first, the other chat")  # this host reads the new erasure generation here
            await chat.run("what do you know?")
    assert seen[-1] == [("", "", True)]
    assert "4111" not in json.dumps(seen[-1])


@pytest.mark.anyio
async def test_a_turn_retracted_on_one_host_reaches_the_next_model_call_on_another(postgres_dsn: str) -> None:
    seen: list[HistoryEntry] = []

    def respond(request: ModelRequest) -> str:
        seen.extend(request.history)
        return f"reply to {request.text}"

    async with Host(model=ScriptedModel(respond), store=PostgresStore(postgres_dsn)) as here:
        chat = await here.sessions.create()
        claim = await chat.run("revenue 2023?")  # held in memory here from now on
        async with other_host(postgres_dsn, "serve") as there:
            assert await there.call(op="retract", turn=claim.turn.id, reason="from 2019") == {"done": True}

            async def retracted_here() -> bool:
                return (await here.sessions.turn(claim.turn.id)).retracted_at is not None

            assert await within(1.0, retracted_here) < 1.0
            seen.clear()
            await chat.run("and 2024?")
    assert [(e.retracted, e.retraction_reason) for e in seen] == [(True, "from 2019")]


@pytest.mark.anyio
async def test_a_session_deleted_on_one_host_refuses_sends_on_both(postgres_dsn: str) -> None:
    async with Host(store=PostgresStore(postgres_dsn)) as here:
        chat = await here.sessions.create()
        await chat.run("hello")
        async with other_host(postgres_dsn, "serve") as there:
            assert await there.call(op="delete", session=chat.id) == {"done": True}
            with pytest.raises(SessionDeletedError, match=rf"cannot send to session {chat.id!r}: it was deleted") as caught:
                await chat.run("still there?")  # at once, on a session this host held in memory
            assert caught.value.session_id == chat.id
            with pytest.raises(SessionDeletedError):
                await chat.fork()
            refused = await there.call(op="run", session=chat.id, text="again")
            assert refused["error"] == "SessionDeletedError"
        assert (await here.sessions.get(chat.id)).deleted_at is not None


@pytest.mark.anyio
async def test_a_fork_of_a_session_another_host_deleted_is_refused_by_its_own_write(
    postgres_dsn: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A fork reads no deletion before it writes: its transaction checks the parent is not
    deleted once it holds the event log's lock (which a deletion holds until it commits).
    This host's reader is late for good here, so only that check can refuse the fork."""
    from host_sim.testing import across_hosts

    monkeypatch.setattr(across_hosts, "APPLY_OTHER_HOSTS_FACTS", False)  # this host's reader has not got there yet
    async with Host(store=PostgresStore(postgres_dsn)) as here:
        chat = await here.sessions.create()
        first = await chat.run("hello")
        kept = await chat.fork()  # made before the deletion: it keeps working
        async with other_host(postgres_dsn, "serve") as there:
            assert await there.call(op="delete", session=chat.id) == {"done": True}
            for fork in (chat.fork, first.turn.fork):
                with pytest.raises(SessionDeletedError, match=rf"cannot fork session {chat.id!r}: it was deleted") as caught:
                    await fork()
                assert caught.value.session_id == chat.id
        assert (await kept.run("still here")).text == "echo: still here"
    with psycopg.connect(postgres_dsn, autocommit=True) as conn:
        children = conn.execute("SELECT id FROM host_sim.sessions WHERE parent_session_id = %s", (chat.id,)).fetchall()
        created = conn.execute(
            "SELECT count(*) FROM host_sim.events WHERE kind = 'session_created' AND event::jsonb->'lineage'->>'parent_session_id' = %s",
            (chat.id,),
        ).fetchone()
    assert children == [(kept.id,)]
    assert created == (1,)


@pytest.mark.anyio
async def test_forks_racing_a_deletion_on_another_host_are_stored_before_it_or_refused(
    postgres_dsn: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Forks run back to back while another host deletes their parent: each fork either
    committed before the deletion (its ``session_created`` row is numbered before the
    parent's ``session_deleted``) or is refused; none is stored after the deletion. A
    check read before the fork's write let one through when the deletion committed in
    between; the check in the write's transaction, behind the event log's lock, cannot."""
    from host_sim.testing import across_hosts

    monkeypatch.setattr(across_hosts, "APPLY_OTHER_HOSTS_FACTS", False)  # only the forks' own writes can refuse them
    rounds: list[tuple[str, list[str]]] = []
    async with Host(store=PostgresStore(postgres_dsn)) as here, other_host(postgres_dsn, "serve") as there:
        for _ in range(4):
            chat = await here.sessions.create()
            await chat.run("hello")
            made: list[str] = []
            refused: list[SessionDeletedError] = []

            async def fork_until_refused() -> None:
                while True:
                    try:
                        made.append((await chat.fork()).id)  # noqa: B023 (awaited within the round)
                    except SessionDeletedError as exc:
                        refused.append(exc)  # noqa: B023
                        return

            async with anyio.create_task_group() as tg:
                for _ in range(3):
                    tg.start_soon(fork_until_refused)
                await anyio.sleep(0.05)
                assert await there.call(op="delete", session=chat.id) == {"done": True}
            assert len(refused) == 3 and all(e.session_id == chat.id for e in refused)
            rounds.append((chat.id, made))
    with psycopg.connect(postgres_dsn, autocommit=True) as conn:
        for parent, made in rounds:
            (deleted,) = conn.execute(
                "SELECT seq FROM host_sim.events WHERE kind = 'session_deleted' AND session_id = %s", (parent,)
            ).fetchone() or (None,)
            created = conn.execute(
                "SELECT session_id, seq FROM host_sim.events WHERE kind = 'session_created' AND session_id = ANY(%s)",
                (made,),
            ).fetchall()
            stored = conn.execute("SELECT id FROM host_sim.sessions WHERE parent_session_id = %s", (parent,)).fetchall()
            assert deleted is not None and made
            assert sorted(s for (s,) in stored) == sorted(made)
            late = [(session, seq) for session, seq in created if seq > deleted]
            assert not late, f"forks of {parent} stored after its deletion (seq {deleted}): {late}"


@pytest.mark.anyio
async def test_what_another_host_finishes_and_forgets_shows_here_within_a_second(postgres_dsn: str) -> None:
    async with Host(store=PostgresStore(postgres_dsn)) as here:
        chat = await here.sessions.create()
        await chat.run("first")
        assert [t.reply for t in await chat.turns()] == ["echo: first"]  # held in memory from now on
        async with other_host(postgres_dsn, "serve") as there:
            done = await there.call(op="run", session=chat.id, text="second")

            async def shows_it() -> bool:
                return [t.reply for t in await chat.turns()] == ["echo: first", "reply to second"]

            assert await within(1.0, shows_it) < 1.0
            log = await here.log(chat)
            assert [getattr(item, "id", None) for item in log][-1] == done["turn"]
            await there.call(op="forget", turn=done["turn"])

            async def erased_here() -> bool:
                return "reply to second" not in await here.transcript(chat)

            assert await within(1.0, erased_here) < 1.0
            turn = await here.sessions.turn(str(done["turn"]))
            assert turn.erased_at is not None


async def collect(host: Host, into: list[HostEvent], ready: anyio.Event, after: int | None = None) -> None:
    async with host.subscribe(after=after) as events:
        ready.set()
        async for event in events:
            into.append(event)


@pytest.mark.anyio
async def test_a_subscriber_sees_every_hosts_events_and_resumes_after_a_seq(postgres_dsn: str) -> None:
    seen: list[HostEvent] = []
    async with Host(store=PostgresStore(postgres_dsn)) as here, anyio.create_task_group() as tg:
        chat = await here.sessions.create()
        ready = anyio.Event()
        tg.start_soon(collect, here, seen, ready)
        await ready.wait()
        async with other_host(postgres_dsn, "serve") as there:
            done = await there.call(op="run", session=chat.id, text="from there")
            await there.call(op="forget", turn=done["turn"])

            async def told() -> bool:
                return any(isinstance(e, TurnErased) for e in seen)

            await within(5.0, told)
            await chat.run("from here")

            async def told_mine() -> bool:
                return sum(isinstance(e, TurnFinished) for e in seen) == 2

            await within(5.0, told_mine)
        tg.cancel_scope.cancel()
    started, finished, erased, _, mine = (e for e in seen if isinstance(e, (TurnStarted, TurnFinished, TurnErased)))
    assert isinstance(mine, TurnFinished) and mine.reply == "echo: from here"
    assert started.host_id == finished.host_id == erased.host_id != mine.host_id  # who published each
    seqs = [e.seq or 0 for e in seen]
    assert seqs == sorted(seqs) and len(set(seqs)) == len(seqs)  # store-wide, increasing

    async with Host(store=PostgresStore(postgres_dsn)) as later:  # a client reconnects to another host
        assert started.seq is not None
        async with later.subscribe(after=started.seq - 1) as events:
            with anyio.fail_after(10):
                replayed = [await events.__anext__() for _ in range(3)]
    assert [(e.kind, e.seq) for e in replayed] == [(e.kind, e.seq) for e in (started, finished, erased)]


@pytest.mark.anyio
async def test_a_host_killed_mid_job_is_noticed_by_a_live_one_within_ten_seconds(postgres_dsn: str) -> None:
    seen: list[HostEvent] = []
    async with Host(store=PostgresStore(postgres_dsn)) as here, anyio.create_task_group() as tg:
        chat = await here.sessions.create()
        mine = await here.sessions.create()
        ready = anyio.Event()
        tg.start_soon(collect, here, seen, ready)
        await ready.wait()
        process = subprocess.Popen(
            [sys.executable, str(HOST_SCRIPT), postgres_dsn, chat.id, "hang-job"],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        try:
            doomed = OtherHost(process)
            assert await doomed.line() == "open\n"
            assert await doomed.line() == "in-model\n"  # its turn is begun, durably
            live = await here.start(mine, "this host's own work")
            os.kill(process.pid, signal.SIGKILL)
            killed = time.perf_counter()

            async def announced() -> bool:
                return any(isinstance(e, TurnFinished) and e.session_id == chat.id for e in seen)

            await within(10.0, announced)
            assert time.perf_counter() - killed < 10.0
            (finished,) = [e for e in seen if isinstance(e, TurnFinished) and e.session_id == chat.id]
            assert (finished.status, finished.error) == ("failed", INTERRUPTED)
            assert [t.status for t in await chat.turns()] == ["failed"]

            async def job_interrupted() -> bool:
                return [j.status for j in (await here.jobs()).jobs if j.id != live.id] == ["interrupted"]

            await within(10.0 - (time.perf_counter() - killed), job_interrupted)
            (dead_job,) = [j for j in (await here.jobs()).jobs if j.id != live.id]

            async def job_announced() -> bool:
                return any(isinstance(e, JobFinished) and e.job_id == dead_job.id for e in seen)

            await within(10.0 - (time.perf_counter() - killed), job_announced)
            (ended,) = [e for e in seen if isinstance(e, JobFinished) and e.job_id == dead_job.id]
            assert (ended.status, ended.error_kind) == ("interrupted", "interrupted")
            assert (await live.wait()).error is None  # a live host's work is never touched
            assert live.status == "finished"
        finally:
            if process.poll() is None:
                process.kill()
            process.wait(timeout=60)
            for stream in (process.stdin, process.stdout, process.stderr):
                if stream is not None:
                    stream.close()
        tg.cancel_scope.cancel()


@pytest.mark.anyio
async def test_event_rows_older_than_the_retention_go_and_a_client_resuming_from_them_reads_lagged(
    postgres_dsn: str,
) -> None:
    store = PostgresStore(postgres_dsn, event_retention=timedelta(milliseconds=50))
    async with Host(store=store) as host:
        chat = await host.sessions.create()
        await chat.run("old")
        async with host.subscribe():  # (subscribing writes what this host published so far)
            pass
        await anyio.sleep(0.2)
        assert await store.trim_events() == 3  # session_created, turn_started, turn_finished
        await chat.run("new")
        async with host.subscribe(after=0) as events:
            with anyio.fail_after(10):
                lagged, started, finished = [await events.__anext__() for _ in range(3)]
    assert isinstance(lagged, Lagged) and (lagged.missed, lagged.seq) == (3, 3)
    assert isinstance(finished, TurnFinished) and finished.reply == "echo: new"
    assert (started.seq, finished.seq) == (4, 5)


def test_event_retention_must_be_a_positive_timedelta() -> None:
    for bad in (timedelta(0), timedelta(seconds=-1), 3600, None):
        with pytest.raises(StoreError, match=r"event_retention must be a positive timedelta, got .*timedelta\(hours=24\)"):
            PostgresStore("postgresql://app@db/chats", event_retention=bad)  # type: ignore[arg-type]


@pytest.mark.anyio
async def test_hosts_writing_events_at_once_lose_none_to_a_subscriber(postgres_dsn: str) -> None:
    """Rows commit in seq order, so a reader that read up to N never misses a row below N
    committed later: a subscriber sees exactly the rows the table holds, in seq order."""
    seen: list[HostEvent] = []
    async with Host(store=PostgresStore(postgres_dsn)) as watcher, anyio.create_task_group() as outer:
        ready = anyio.Event()
        outer.start_soon(collect, watcher, seen, ready)
        await ready.wait()
        async with (
            Host(store=PostgresStore(postgres_dsn)) as a,
            Host(store=PostgresStore(postgres_dsn)) as b,
            Host(store=PostgresStore(postgres_dsn)) as c,
        ):
            async def talk(host: Host) -> None:
                chats = [await host.sessions.create() for _ in range(3)]
                async with anyio.create_task_group() as tg:
                    for chat in chats:
                        for i in range(4):
                            tg.start_soon(chat.run, f"m{i}")

            async with anyio.create_task_group() as tg:
                for host in (a, b, c):
                    tg.start_soon(talk, host)
        expected = 3 * 3 * (1 + 4 * 2)  # sessions created, then turn_started and turn_finished

        async def all_seen() -> bool:
            return len(seen) >= expected

        await within(10.0, all_seen)
        outer.cancel_scope.cancel()
    with psycopg.connect(postgres_dsn, autocommit=True) as conn:
        stored = [int(r[0]) for r in conn.execute("SELECT seq FROM host_sim.events ORDER BY seq").fetchall()]
    assert [e.seq for e in seen] == stored[: len(seen)] and len(seen) == expected


@pytest.mark.anyio
async def test_a_subscriber_on_each_busy_host_gets_every_row_once_in_seq_order_and_its_own_events_equal_to_their_rows(
    postgres_dsn: str,
) -> None:
    """Each host hands out its own events from memory when they are next in seq order, and
    reads every other row (and its own, when another host's rows came between): whatever the
    interleaving of two hosts writing turns, forks and notifications of several sessions at
    once, a subscriber on either host gets exactly the rows the table holds, in seq order,
    each equal to what its row says."""
    from host_sim.testing import event_of

    seen: dict[str, list[HostEvent]] = {"a": [], "b": []}
    async with (
        Host(store=PostgresStore(postgres_dsn)) as a,
        Host(store=PostgresStore(postgres_dsn)) as b,
        anyio.create_task_group() as outer,
    ):
        for name, host in (("a", a), ("b", b)):
            ready = anyio.Event()
            outer.start_soon(collect, host, seen[name], ready)
            await ready.wait()

        async def talk(host: Host) -> None:
            chats = [await host.sessions.create() for _ in range(3)]

            async def story(chat: SessionHandle) -> None:
                for i in range(5):
                    result = await chat.run(f"m{i}")
                    if i == 2:
                        await result.turn.fork()
                await chat.send(AiNotificationMessage(title="done", body=chat.id))

            async with anyio.create_task_group() as tg:
                for chat in chats:
                    tg.start_soon(story, chat)

        async with anyio.create_task_group() as tg:
            tg.start_soon(talk, a)
            tg.start_soon(talk, b)
        with psycopg.connect(postgres_dsn, autocommit=True) as conn:
            rows = conn.execute("SELECT seq, host_id, event FROM host_sim.events ORDER BY seq").fetchall()

        async def all_seen() -> bool:
            return all(len(events) >= len(rows) for events in seen.values())

        await within(10.0, all_seen)
        outer.cancel_scope.cancel()
    stored = [event_of(int(seq), str(host_id), str(text)) for seq, host_id, text in rows]
    assert {"session_created", "turn_started", "turn_finished", "notification"} <= {e.kind for e in stored}
    for name in ("a", "b"):
        assert seen[name] == stored, name


@pytest.mark.anyio
async def test_a_host_whose_listener_connection_is_cut_still_sees_the_other_hosts_events(postgres_dsn: str) -> None:
    """NOTIFY is a hint, the rows are the truth: with the listener gone, the host reads on."""
    seen: list[HostEvent] = []
    async with Host(store=PostgresStore(postgres_dsn)) as here, anyio.create_task_group() as tg:
        ready = anyio.Event()
        tg.start_soon(collect, here, seen, ready)
        await ready.wait()
        with psycopg.connect(postgres_dsn, autocommit=True) as admin:
            cut: list[tuple[object, ...]] = []

            async def listener_cut() -> bool:  # once the host listens
                cut.extend(
                    admin.execute(
                        "SELECT pg_terminate_backend(pid) FROM pg_stat_activity "
                        "WHERE datname = current_database() AND query LIKE 'LISTEN%%'"
                    ).fetchall()
                )
                return bool(cut)

            await within(5.0, listener_cut)
        async with Host(store=PostgresStore(postgres_dsn)) as there:
            chat = await there.sessions.create()
            await chat.run("after the cut")

            async def told() -> bool:
                return any(isinstance(e, TurnFinished) and e.session_id == chat.id for e in seen)

            await within(5.0, told)
        tg.cancel_scope.cancel()


def slow_event_writes(monkeypatch: pytest.MonkeyPatch, store: PostgresStore, delay: float) -> None:
    """Make ``store``'s host write its event rows ``delay`` seconds late (a loaded machine)."""
    write = PostgresStore.append_events

    async def late(self: PostgresStore, rows: Sequence[EventRow]) -> tuple[int, bool]:
        if self is store:
            await anyio.sleep(delay)
        return await write(self, rows)

    monkeypatch.setattr(PostgresStore, "append_events", late)


def one_sessions_story(events: list[HostEvent], session_id: str, job_ids: list[str]) -> list[tuple[str, int | str]]:
    """The events of one session (its jobs' included), as (kind, ordinal or job index)."""
    story: list[tuple[str, int | str]] = []
    for e in events:
        if isinstance(e, TurnStarted) and e.session_id == session_id:
            story.append((e.kind, e.ordinal))
        elif isinstance(e, TurnFinished) and e.session_id == session_id:
            story.append((e.kind, e.turn_id))
        elif isinstance(e, (JobStarted, JobFinished)) and e.job_id in job_ids:
            story.append((e.kind, f"job {job_ids.index(e.job_id)}"))
        elif isinstance(e, SessionCreated) and e.session_id == session_id:
            story.append((e.kind, 0))
    return story


@pytest.mark.anyio
async def test_a_subscriber_on_either_host_sees_one_sessions_events_in_the_order_they_happened_however_late_a_host_writes(
    postgres_dsn: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A client alternates two hosts (no sticky routing), waiting for each job: what it was
    told had happened has a lower seq than what it then caused elsewhere, even when one host
    writes its event rows late (API §12 "events of one session arrive in the order they
    happened", §13 "as if they were one host"; a load balancer does not change it)."""
    slow = PostgresStore(postgres_dsn)
    slow_event_writes(monkeypatch, slow, 0.15)
    seen_a: list[HostEvent] = []
    seen_b: list[HostEvent] = []
    rounds = 6
    async with Host(store=slow) as a, Host(store=PostgresStore(postgres_dsn)) as b, anyio.create_task_group() as tg:
        for host, into in ((a, seen_a), (b, seen_b)):
            ready = anyio.Event()
            tg.start_soon(collect, host, into, ready)
            await ready.wait()
        chat = await a.sessions.create()
        jobs: list[str] = []
        turn_ids: list[str] = []
        for i in range(rounds):
            host = (a, b)[i % 2]
            job = await host.start(chat.id, f"m{i}")
            jobs.append(job.id)
            submission = await job.wait()
            assert submission.turn is not None
            turn_ids.append(submission.turn.id)
        expected = [("session_created", 0)] + [
            step
            for i in range(rounds)
            for step in (("job_started", f"job {i}"), ("turn_started", i), ("turn_finished", turn_ids[i]), ("job_finished", f"job {i}"))
        ]

        async def both_told() -> bool:
            return all(len(one_sessions_story(s, chat.id, jobs)) >= len(expected) for s in (seen_a, seen_b))

        await within(10.0, both_told)
        tg.cancel_scope.cancel()
    for seen in (seen_a, seen_b):
        seqs = [e.seq for e in seen if e.seq is not None]
        assert seqs == sorted(set(seqs))  # each subscriber: store-wide seq, increasing
        assert one_sessions_story(seen, chat.id, jobs) == expected


@pytest.mark.anyio
async def test_turns_sent_at_once_to_one_session_from_two_hosts_are_numbered_in_turn_order(
    postgres_dsn: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The session lock orders the turns across hosts; a host numbers its turn's events before
    it lets the lock go, so seq order is turn order even when that host writes late."""
    slow = PostgresStore(postgres_dsn)
    slow_event_writes(monkeypatch, slow, 0.1)
    seen: list[HostEvent] = []
    fast = PostgresStore(postgres_dsn)
    async with Host(store=slow) as a, Host(store=fast) as b, anyio.create_task_group() as tg:
        ready = anyio.Event()
        tg.start_soon(collect, b, seen, ready)
        await ready.wait()
        chat = await a.sessions.create()
        there = await b.sessions.get(chat.id)
        async with anyio.create_task_group() as senders:
            for i in range(4):
                senders.start_soon(chat.run, f"a{i}")
                senders.start_soon(there.run, f"b{i}")

        async def all_told() -> bool:
            return sum(isinstance(e, TurnFinished) and e.session_id == chat.id for e in seen) == 8

        await within(10.0, all_told)
        tg.cancel_scope.cancel()
    turns = [e for e in seen if isinstance(e, (TurnStarted, TurnFinished)) and e.session_id == chat.id]
    assert [e.kind for e in turns] == ["turn_started", "turn_finished"] * 8
    assert [e.ordinal for e in turns if isinstance(e, TurnStarted)] == list(range(8))
    assert {e.host_id for e in turns} == {slow.host_id, fast.host_id}  # both hosts ran turns
    for started, finished in zip(turns[::2], turns[1::2]):
        assert isinstance(started, TurnStarted) and isinstance(finished, TurnFinished)
        assert started.turn_id == finished.turn_id and started.host_id == finished.host_id


@pytest.mark.anyio
async def test_what_a_late_writing_host_forgot_and_retracted_comes_before_what_another_host_did_next(
    postgres_dsn: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """forget and retract return once their events have a seq: a turn another host runs
    afterwards is numbered after them, as on one host."""
    slow = PostgresStore(postgres_dsn)
    slow_event_writes(monkeypatch, slow, 0.15)
    seen: list[HostEvent] = []
    async with Host(store=slow) as a, Host(store=PostgresStore(postgres_dsn)) as b, anyio.create_task_group() as tg:
        ready = anyio.Event()
        tg.start_soon(collect, b, seen, ready)
        await ready.wait()
        chat = await a.sessions.create()
        secret = await chat.run("my card is 4111")
        claim = await chat.run("revenue 2023?")
        there = await b.sessions.get(chat.id)
        await a.lineage.retract(claim.turn.id, reason="from 2019")
        await there.run("after the retraction")
        await a.lineage.forget(secret.turn.id, dry_run=False)
        await there.run("after the erasure")

        async def all_told() -> bool:
            return sum(isinstance(e, TurnFinished) and e.session_id == chat.id for e in seen) == 4

        await within(10.0, all_told)
        tg.cancel_scope.cancel()
    kinds = [e.kind for e in seen if getattr(e, "session_id", None) == chat.id]
    erased = kinds.count("turn_erased")  # the secret and the turns whose model read it
    turn = ["turn_started", "turn_finished"]
    assert erased >= 1
    assert kinds == ["session_created", *turn, *turn, "turn_retracted", *turn, *["turn_erased"] * erased, *turn]

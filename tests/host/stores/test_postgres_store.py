"""PostgresStore: its schema and errors, and several hosts on one session graph.

The contract every store keeps is tested in test_stores.py and test_store_integrity.py
(parametrized over all three stores); here is what only a shared database has: triggers,
indexes, the DSN in errors, and hosts in several processes writing, crashing and going on.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator, Sequence
from contextlib import AbstractAsyncContextManager, contextmanager
from datetime import UTC, datetime
from pathlib import Path
from typing import IO, cast

import anyio
import attrs
import psycopg
import pytest

from host_sim import Host, ModelRequest, PostgresStore, ScriptedModel, Store, StoredState, StoreError
from host_sim._cli import main as host_sim_main
from host_sim.lineage import SessionNode
from host_sim.stores import SessionRecord, TurnRecord
from host_sim.testing import DEAD_HOST_GRACE, INTERRUPTED, OWNER_LOCK, Locked, check
from host_sim.testing import postgres_statements as _postgres
from modular_sdk import AiPromptMessage, AiRunnerId, RootLineage, SessionId, TurnId, UserAuthor

from .._stores import read_back
from ..postgres_server import PostgresServer
from ..sessions.test_lazy_open import OPENING_READS, CountingStore

HOST_SCRIPT = Path(__file__).parents[1] / "postgres_host.py"
T0 = datetime(2026, 5, 6, 7, 8, 9, tzinfo=UTC)


def session(sid: str) -> SessionRecord:
    return SessionRecord(
        id=SessionId(sid),
        lineage=RootLineage(),
        metadata=None,
        model="echo",
        cwd="/work",
        runner_id=AiRunnerId(f"echo:{sid}"),
        created_at=T0,
    )


def node(sid: str) -> SessionNode:
    return SessionNode(session_id=SessionId(sid), created_at=T0)


def running_turn(tid: str, sid: str, ordinal: int) -> TurnRecord:
    return TurnRecord(
        id=TurnId(tid),
        session_id=SessionId(sid),
        ordinal=ordinal,
        message=AiPromptMessage(text="hello"),
        message_id=f"m-{tid}",
        author=UserAuthor(),
        runner_id=AiRunnerId(f"echo:{sid}"),
        status="running",
        reply=None,
        error=None,
        started_at=T0,
        finished_at=None,
    )


def sql(dsn: str, statement: str, params: tuple[object, ...] = ()) -> list[tuple[object, ...]]:
    with psycopg.connect(dsn, autocommit=True) as conn:
        cursor = conn.execute(statement.encode(), params)
        return cursor.fetchall() if cursor.description else []


# -- the package -------------------------------------------------------------------------


def test_importing_host_sim_does_not_import_psycopg() -> None:
    code = "import sys, host_sim; host_sim.PostgresStore('postgresql://a@b/c'); print('psycopg' in sys.modules)"
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, timeout=120)
    assert result.stdout.strip() == "False"


def test_the_dsn_is_shown_without_its_password() -> None:
    assert repr(PostgresStore("postgresql://app:s3cret@db:5432/chats")) == "<PostgresStore 'postgresql://app:***@db:5432/chats' (closed)>"
    assert PostgresStore("host=db password='a b' dbname=x").path == "host=db password=*** dbname=x"
    assert PostgresStore("postgresql://app@db/chats?password=s3cret").path == "postgresql://app@db/chats?password=***"


# -- schema --------------------------------------------------------------------------------


@pytest.mark.anyio
async def test_the_schema_is_versioned_and_its_triggers_keep_records_as_written(postgres_dsn: str) -> None:
    store = PostgresStore(postgres_dsn)
    await store.open()
    await store.create_session(session("s-1"), node("s-1"), None)
    turn = running_turn("t-1", "s-1", 0)
    await store.begin_turn(turn)
    await store.finish_turn(attrs.evolve(turn, status="completed", reply="ok", finished_at=T0))
    await store.begin_turn(running_turn("t-2", "s-1", 1))
    await store.close()

    assert dict(cast(list[tuple[str, str]], sql(postgres_dsn, "SELECT key, value FROM host_sim.meta"))) == {
        "application": "host-sim",
        "schema_version": str(_postgres.POSTGRES_SCHEMA_VERSION),
        "index_version": "1",
    }
    refused = {
        "UPDATE host_sim.sessions SET model = 'x'": "a session record never changes",
        "DELETE FROM host_sim.sessions": "a session record is never deleted",
        "TRUNCATE host_sim.sessions CASCADE": "session records are never deleted",
        "UPDATE host_sim.turns SET reply = 'rewritten' WHERE id = 't-1'": "a finished turn never changes",
        "DELETE FROM host_sim.turns WHERE id = 't-1'": "a finished turn is never deleted",
        "TRUNCATE host_sim.turns": "turn records are never deleted",
        "INSERT INTO host_sim.turns (id, session_id, ordinal, message, message_id, author, runner_id, status, started_at) "
        "SELECT 'copy', session_id, ordinal, message, message_id, author, runner_id, status, started_at "
        "FROM host_sim.turns WHERE id = 't-1'": "turns_one_per_ordinal",
    }
    for statement, message in refused.items():
        with pytest.raises(psycopg.IntegrityError, match=message):
            sql(postgres_dsn, statement)
    sql(postgres_dsn, "UPDATE host_sim.turns SET status = 'failed', finished_at = 'x' WHERE id = 't-2'")  # a running turn finishes
    with pytest.raises(psycopg.IntegrityError, match="a finished turn never changes"):
        sql(postgres_dsn, "UPDATE host_sim.turns SET status = 'running' WHERE id = 't-2'")


READS = [name for name in dir(_postgres) if name.startswith("SELECT_")]


@pytest.mark.parametrize("name", READS)
def test_every_read_is_served_by_an_index(postgres_dsn: str, name: str) -> None:
    anyio.run(_open_and_close, postgres_dsn)
    statement = getattr(_postgres, name)
    params: list[object] = [["s-1"] if part.endswith("ANY(") else "x" for part in statement.split("%s")[:-1]]
    if name == "SELECT_TURNS_SINCE":
        params = ["s-1", 3]
    with psycopg.connect(postgres_dsn, autocommit=True) as conn:
        conn.execute("SET enable_seqscan = off")  # a table scan is then chosen only when no index can serve
        plan = "\n".join(row[0] for row in conn.execute(f"EXPLAIN {statement}".encode(), params).fetchall())
    scanned = [t for t in ("sessions", "turns", "nodes", "edges") if f"Seq Scan on {t}" in plan]
    if name == "SELECT_ALL_SESSIONS":
        return  # it reads every session (in order, by an index on seq)
    assert scanned == [], plan


@pytest.mark.parametrize("stamp", ["yesterday", "2026-01-01T00:00:00"], ids=["not-iso", "naive"])
def test_a_damaged_deletion_time_is_a_store_error(postgres_dsn: str, stamp: str) -> None:
    anyio.run(_open_and_close, postgres_dsn)
    with psycopg.connect(postgres_dsn, autocommit=True) as conn:  # by hand: a time no host writes
        conn.execute("INSERT INTO host_sim.deletions (session_id, deleted_at) VALUES ('s-1', %s)", (stamp,))

    async def read() -> None:
        store = PostgresStore(postgres_dsn)
        await store.open()
        try:
            with pytest.raises(StoreError, match=r"unreadable deletions row \('s-1'\).*ISO 8601 text with its offset"):
                await store.deleted_at(SessionId("s-1"))
        finally:
            await store.close()

    anyio.run(read)


async def stored(dsn: str) -> StoredState:
    """Everything the database holds, read by a store that is closed again."""
    store = PostgresStore(dsn)
    try:
        return await read_back(store)
    finally:
        await store.close()


async def _open_and_close(dsn: str) -> None:
    store = PostgresStore(dsn)
    await store.open()
    await store.close()


# -- errors ----------------------------------------------------------------------------------


@pytest.mark.anyio
async def test_errors_name_the_dsn_and_what_to_do_never_the_password(postgres: PostgresServer, postgres_dsn: str) -> None:
    secret = "pw-9f8e7d"
    cases = {
        f"host={postgres.folder} port=5432 user={postgres.user} dbname=nosuchdb password={secret}": (
            r'database "nosuchdb" does not exist.*createdb'
        ),
        f"postgresql://{postgres.user}:{secret}@/x?host=/nonexistent/socket/dir&port=5999": r"start the PostgreSQL server",
        f"this is not a dsn password={secret}": r"is not a PostgreSQL connection string.*postgresql://user@host",
    }
    for dsn, pattern in cases.items():
        with pytest.raises(StoreError, match=pattern) as caught:
            await PostgresStore(dsn).open()
        assert secret not in str(caught.value) and caught.value.path is not None and secret not in caught.value.path
        assert caught.value.path in str(caught.value)

    with pytest.raises(StoreError, match=r"holds no host-sim store.*no schema host_sim"):
        await PostgresStore(postgres_dsn, create=False).open()
    assert sql(postgres_dsn, "SELECT 1 FROM pg_namespace WHERE nspname = 'host_sim'") == []  # nothing created

    await _open_and_close(postgres_dsn)
    sql(postgres_dsn, "UPDATE host_sim.meta SET value = '99' WHERE key = 'schema_version'")
    with pytest.raises(StoreError, match=r"newer host-sim \(schema version 99; this one reads up to 1\); upgrade host-sim") as newer:
        await PostgresStore(postgres_dsn).open()
    assert newer.value.path == postgres_dsn

    other = postgres.database()
    sql(other, "CREATE SCHEMA host_sim; CREATE TABLE host_sim.invoices (id int)")
    with pytest.raises(StoreError, match=r"schema host_sim in database .* is not a host-sim store"):
        await PostgresStore(other).open()

    with pytest.raises(StoreError, match=r"not open.*store\.open\(\)"):
        await PostgresStore(postgres_dsn).get_session(SessionId("s-1"))


@pytest.mark.anyio
async def test_text_postgresql_cannot_hold_is_refused_naming_the_column(postgres_dsn: str) -> None:
    store = PostgresStore(postgres_dsn)
    await store.open()
    try:
        with pytest.raises(StoreError, match=r"cannot store sessions\.cwd of id='s-1'.*NUL character"):
            await store.create_session(attrs.evolve(session("s-1"), cwd="/a\x00b"), node("s-1"), None)
        await store.create_session(session("s-1"), node("s-1"), None)  # nothing of the refused call was written
        turn = attrs.evolve(running_turn("t-1", "s-1", 0), message=AiPromptMessage(text="NUL \x00 in JSON is fine"))
        await store.begin_turn(turn)
        assert (await store.find_turn("t-1")) == turn
    finally:
        await store.close()


# -- several hosts in one process ----------------------------------------------------------


@pytest.mark.anyio
async def test_listing_running_turns_hands_none_to_the_lister_so_a_host_whose_claim_blinked_keeps_its_turn(
    postgres_dsn: str,
) -> None:
    """`running_turns` is a read: it judges no host dead and takes no turn (which host is dead
    is `Absences`' one rule: its claim seen gone for DEAD_HOST_GRACE seconds on end). It used
    to make the lister the turns' owner at once, so a host whose connection had only blinked
    lost its running turn to whoever listed, and once the lister closed, a third host failed
    that live host's turn as a dead host's."""
    a, b, c = PostgresStore(postgres_dsn), PostgresStore(postgres_dsn), PostgresStore(postgres_dsn)
    for store in (a, b, c):
        await store.open()
    await a.create_session(session("s-1"), node("s-1"), None)
    await a.begin_turn(running_turn("t-1", "s-1", 0))
    assert await b.turns_left_running() == ()  # a is alive: its turn is not listed
    owner = int(a.host_id.removeprefix("pg-"))
    (ended,) = sql(
        postgres_dsn,
        "SELECT pg_terminate_backend(pid) FROM pg_locks WHERE locktype = 'advisory' AND granted "
        f"AND classid = {OWNER_LOCK} AND objsubid = 2 AND objid = %s::bigint::oid",
        (owner,),
    )
    assert ended == (True,)  # a's claim blinks: the server ended the connection holding it
    listed: Sequence[TurnRecord] = ()
    for _ in range(100):  # (the server drops the lock once the backend has exited)
        if listed := await b.turns_left_running():
            break
        await anyio.sleep(0.05)
    assert [t.id for t in listed] == ["t-1"]  # no claim now: listed
    assert [t.id for t in await b.turns_left_running()] == ["t-1"]  # ... and not taken: listed again
    assert await a.keep_claim()  # a takes its claim back by itself
    await b.close()
    assert await c.absent_hosts() == set()  # the turn is still a's, and a is alive
    assert await c.claim_dead([a.host_id, b.host_id], lambda: T0, lambda turns, jobs: ()) == ((), ())
    kept = await a.find_turn("t-1")
    assert kept is not None and kept.status == "running"
    await a.finish_turn(attrs.evolve(running_turn("t-1", "s-1", 0), status="completed", reply="ok", finished_at=T0))
    await a.close()
    await c.close()


@pytest.mark.anyio
async def test_a_send_waiting_for_another_hosts_session_lock_is_cancelled_at_once(postgres_dsn: str) -> None:
    a, b = PostgresStore(postgres_dsn), PostgresStore(postgres_dsn)
    await a.open()
    await b.open()
    try:
        async with a.lock_session(SessionId("s-1")):
            started = time.monotonic()
            with anyio.move_on_after(0.3) as scope:
                async with b.lock_session(SessionId("s-1")):
                    pytest.fail("two hosts held one session's lock")
            assert scope.cancelled_caught and time.monotonic() - started < 5
            async with b.lock_session(SessionId("s-2")):  # other sessions are not blocked
                pass
        with anyio.fail_after(10):
            async with b.lock_session(SessionId("s-1")):  # released: b gets it
                pass
    finally:
        await a.close()
        await b.close()


@pytest.mark.anyio
async def test_two_hosts_on_one_session_take_turns_and_see_each_others(postgres_dsn: str) -> None:
    async with Host(store=PostgresStore(postgres_dsn)) as one, Host(store=PostgresStore(postgres_dsn)) as two:
        chat = await one.sessions.create()
        other = await two.sessions.get(chat.id)  # created by another host: found
        await one.submit(chat, "first")
        assert [t.reply for t in await other.turns()] == ["echo: first"]  # read: caught up

        async def send(host: Host, n: int) -> None:
            handle = await host.sessions.get(chat.id)
            for i in range(n):
                await handle.run(f"{host is one}-{i}")

        async with anyio.create_task_group() as tg:
            tg.start_soon(send, one, 6)
            tg.start_soon(send, two, 6)

        seen_one = [(t.id, t.ordinal, t.reply) for t in await chat.turns()]
        seen_two = [(t.id, t.ordinal, t.reply) for t in await other.turns()]
        assert seen_one == seen_two and [o for _, o, _ in seen_one] == list(range(13))
        fork = await other.fork()  # at the last turn either host finished
        assert (await fork.turns())[-1].id == seen_one[-1][0]
    assert check(await stored(postgres_dsn)) == []


# -- several host processes ------------------------------------------------------------------


@contextmanager
def host_process(dsn: str, session_id: str, *args: str) -> Iterator[subprocess.Popen[str]]:
    process = subprocess.Popen(
        [sys.executable, str(HOST_SCRIPT), dsn, session_id, *args],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        yield process
    finally:
        if process.poll() is None:
            process.kill()
        process.wait(timeout=60)
        for stream in (process.stdin, process.stdout, process.stderr):
            if stream is not None:
                stream.close()


def read_line(stream: IO[str] | None, timeout: float = 60) -> str:
    """The next line of a host's stdout (fails after ``timeout`` seconds)."""
    assert stream is not None
    with anyio.from_thread.start_blocking_portal() as portal:
        return portal.call(_read_line, stream, timeout)


async def _read_line(stream: IO[str], timeout: float) -> str:
    with anyio.fail_after(timeout):
        return await anyio.to_thread.run_sync(stream.readline, abandon_on_cancel=True)


async def a_session(dsn: str) -> str:
    async with Host(store=PostgresStore(dsn)) as host:
        return (await host.sessions.create()).id


def test_three_host_processes_writing_one_session_keep_its_ordinals_unique_and_contiguous(postgres_dsn: str) -> None:
    chat = anyio.run(a_session, postgres_dsn)
    acks: list[dict[str, object]] = []
    processes: list[subprocess.Popen[str]] = []
    with (
        host_process(postgres_dsn, chat, "write", "--turns", "15", "--workers", "2", "--name", "a") as a,
        host_process(postgres_dsn, chat, "write", "--turns", "15", "--name", "b", "--backend", "trio") as b,
        host_process(postgres_dsn, chat, "write", "--turns", "15", "--workers", "3", "--name", "c") as c,
    ):
        processes = [a, b, c]
        for process in processes:
            out, err = process.communicate(timeout=300)
            assert process.returncode == 0, err
            lines = out.splitlines()
            assert lines[0] == "open"
            acks += [json.loads(line) for line in lines[1:]]

    state = anyio.run(stored, postgres_dsn)
    turns = {t.id: t for t in state.turns if t.session_id == chat}
    assert sorted(t.ordinal for t in turns.values()) == list(range(45))  # no duplicate, none missing
    assert len(acks) == 45
    for acked in acks:  # every acknowledged turn is stored, where it was acknowledged, completed
        kept = turns[TurnId(str(acked["turn"]))]
        assert (kept.ordinal, kept.status, kept.message) == (
            acked["ordinal"],
            "completed",
            AiPromptMessage(text=str(acked["prompt"])),
        )
    by_b = sorted((int(str(a["prompt"]).split("-")[1]), int(str(a["ordinal"]))) for a in acks if str(a["prompt"]).startswith("b-"))
    assert [o for _, o in by_b] == sorted(o for _, o in by_b)  # one sender's turns keep its order
    assert check(state) == []


def test_a_host_killed_mid_turn_leaves_it_failed_as_interrupted_and_the_others_go_on(postgres_dsn: str) -> None:
    chat, busy = anyio.run(a_session, postgres_dsn), anyio.run(a_session, postgres_dsn)
    with (
        host_process(postgres_dsn, chat, "hang") as doomed,
        host_process(postgres_dsn, busy, "hang") as live,
    ):
        for process in (doomed, live):
            assert read_line(process.stdout) == "open\n"
            assert read_line(process.stdout) == "in-model\n"  # its turn is begun, durably
        held_open = anyio.run(_reopen_then_kill_then_send, postgres_dsn, chat, busy, doomed.pid)
        assert held_open == ("failed", INTERRUPTED, 1, "completed")

        # A host opening now fails nothing: the only running turn is the live host's.
        async def open_and_look() -> tuple[str, ...]:
            async with Host(store=PostgresStore(postgres_dsn)) as host:
                return tuple(t.status for t in await (await host.sessions.get(busy)).turns())

        assert anyio.run(open_and_look) == ()  # the live host's turn is running: shown once finished
        assert live.stdin is not None
        live.stdin.write("go\n")
        live.stdin.flush()
        finished = json.loads(read_line(live.stdout))
        assert finished["status"] == "completed" and finished["ordinal"] == 0
        live.wait(timeout=60)
        assert live.returncode == 0
        assert doomed.wait(timeout=60) == -signal.SIGKILL

    state = anyio.run(stored, postgres_dsn)
    assert check(state) == []
    assert [(t.ordinal, t.status) for t in state.turns if t.session_id == busy] == [(0, "completed")]


async def _reopen_then_kill_then_send(dsn: str, chat: str, busy: str, doomed: int) -> tuple[object, ...]:
    async with Host(store=PostgresStore(dsn)) as host:  # opened while both hosts live: fails nothing
        assert [v.code for v in check(await stored(dsn))] == ["turn-running", "turn-running"]
        os.kill(doomed, signal.SIGKILL)
        with anyio.fail_after(60):
            handle = await host.sessions.get(chat)
            turn = await handle.send(AiPromptMessage(text="after the crash"))  # waits for the dead host's lock
        first = (await handle.turns())[0]
        return (first.status, first.error, turn.ordinal, turn.status)


# -- lazy open on a large store ------------------------------------------------------------


class CountingSharedStore(CountingStore):
    """`CountingStore` for a `PostgresStore`: its session lock is a context manager, passed through."""

    def __init__(self, inner: PostgresStore) -> None:
        super().__init__(inner)
        self._postgres = inner

    def lock_session(self, session_id: SessionId, since: int | None = None) -> AbstractAsyncContextManager[Locked]:
        self.calls.append(("lock_session", session_id))
        return self._postgres.lock_session(session_id, since)

    @property
    def host_id(self) -> str:
        return self._postgres.host_id


@pytest.mark.anyio
async def test_opening_a_store_of_100000_turns_reads_none_and_costs_what_an_empty_one_does(
    postgres: PostgresServer, postgres_dsn: str
) -> None:
    empty = postgres.database()
    async with Host(store=PostgresStore(postgres_dsn)) as host:
        big = await host.sessions.create()
        await host.submit(big, "the first of 100,000")
        small = await host.sessions.create()
        await host.submit(small, "hello")
    sql(
        postgres_dsn,
        "INSERT INTO host_sim.turns (id, session_id, ordinal, message, message_id, author, runner_id, status, "
        "reply, error, started_at, finished_at) SELECT 'bulk-' || g, session_id, g, message, 'm-bulk-' || g, "
        "author, runner_id, status, reply, error, started_at, finished_at "
        "FROM host_sim.turns, generate_series(1, 99999) g WHERE session_id = %s",
        (big.id,),
    )
    sql(postgres_dsn, "ANALYZE")
    assert sql(postgres_dsn, "SELECT count(*) FROM host_sim.turns") == [(100_001,)]

    async def open_seconds(dsn: str) -> float:
        best = float("inf")
        for _ in range(5):
            started = time.perf_counter()
            async with Host(store=PostgresStore(dsn)):
                best = min(best, time.perf_counter() - started)
        return best

    await _open_and_close(empty)
    assert await open_seconds(postgres_dsn) < 3 * await open_seconds(empty) + 0.05

    counting = CountingSharedStore(PostgresStore(postgres_dsn))
    async with Host(store=cast(Store, counting)) as again:
        assert {name for name, _ in counting.calls} <= OPENING_READS
        counting.calls.clear()
        assert [t.reply for t in await (await again.sessions.get(small.id)).turns()] == ["echo: hello"]
        assert {arg for name, arg in counting.calls if name in {"get_session", "get_turns", "turns_since"}} == {small.id}
        reply = await again.submit(big.id, "one more")
        assert reply.turn is not None and reply.turn.ordinal == 100_000


# -- fsck ------------------------------------------------------------------------------------


def test_fsck_checks_a_postgres_store_by_url_and_repair_fails_only_dead_hosts_turns(
    postgres: PostgresServer, capsys: pytest.CaptureFixture[str]
) -> None:
    dsn = postgres.database()
    url = postgres.url(dsn.rsplit("dbname=", 1)[1])

    async def leave_one_running_and_hold_one() -> None:
        dead, live = PostgresStore(dsn), PostgresStore(dsn)
        await dead.open()
        await live.open()
        await dead.create_session(session("s-1"), node("s-1"), None)
        await dead.create_session(session("s-2"), node("s-2"), None)
        await dead.begin_turn(running_turn("t-dead", "s-1", 0))
        await live.begin_turn(running_turn("t-live", "s-2", 0))
        await dead.close()
        capsys.readouterr()
        assert await anyio.to_thread.run_sync(host_sim_main, ["fsck", "--store", url]) == 1
        out = capsys.readouterr().out
        assert "turn-running" in out and "'t-dead'" in out and "'t-live'" not in out
        assert await anyio.to_thread.run_sync(host_sim_main, ["fsck", "--store", url, "--repair"]) == 0
        out = capsys.readouterr().out
        assert "repaired  turn-running" in out and out.strip().endswith(f"{url}: ok (repaired 1)")
        assert (await live.find_turn("t-live")) == running_turn("t-live", "s-2", 0)  # still running
        await live.close()

    anyio.run(leave_one_running_and_hold_one)
    capsys.readouterr()
    assert host_sim_main(["fsck", "--store", postgres.url("nosuchdb")]) == 1
    assert "does not exist" in capsys.readouterr().err


def test_fsck_leaves_the_running_turn_of_a_live_host_whose_claim_blinked_to_that_host(
    postgres: PostgresServer, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """An operator runs ``host-sim fsck`` just as a live host's connection was killed: fsck
    follows the hosts' own rule (a host is dead once its claim was seen gone for
    DEAD_HOST_GRACE seconds on end), so the host, which takes its claim back within a
    second, keeps its turn, and neither fsck nor another host fails or claims it."""
    dsn = postgres.database()
    url = postgres.url(dsn.rsplit("dbname=", 1)[1])
    entered, release = anyio.Event(), anyio.Event()

    async def respond(request: ModelRequest) -> str:
        entered.set()
        await release.wait()
        return f"done: {request.text}"

    async def blink_while_fsck_runs() -> None:
        store = PostgresStore(dsn)
        async with Host(store=PostgresStore(dsn)), Host(model=ScriptedModel(respond), store=store) as live:
            chat = await live.sessions.create()
            async with anyio.create_task_group() as tg:
                finished: list[str] = []

                async def run() -> None:
                    finished.append((await chat.run("long answer")).turn.status)

                tg.start_soon(run)
                await entered.wait()
                taking_back = PostgresStore.keep_claim

                async def reconnecting(self: PostgresStore) -> bool:
                    return False  # its claim is not taken back until the test says so

                monkeypatch.setattr(PostgresStore, "keep_claim", reconnecting)
                owner = int(store.host_id.removeprefix("pg-"))
                killed = postgres.psql(
                    "SELECT count(pg_terminate_backend(pid)) FROM pg_locks WHERE locktype = 'advisory' "
                    f"AND classid = {_postgres._OWNER_LOCK} AND objsubid = 2 AND objid = {owner}"
                )
                assert killed == "1"  # the claim is gone: the host is live, its connection blinked
                capsys.readouterr()
                async with anyio.create_task_group() as checking:
                    code: list[int] = []

                    async def fsck() -> None:
                        code.append(await anyio.to_thread.run_sync(host_sim_main, ["fsck", "--store", url]))

                    checking.start_soon(fsck)
                    await anyio.sleep(1.5)  # fsck is looking; the host reconnects
                    monkeypatch.setattr(PostgresStore, "keep_claim", taking_back)
                assert code == [0], capsys.readouterr().out
                assert "turn-running" not in capsys.readouterr().out
                await anyio.sleep(DEAD_HOST_GRACE + 1.5)  # the other host's link looked too
                release.set()
            assert finished == ["completed"]
            assert [t.status for t in await chat.turns()] == ["completed"]

    anyio.run(blink_while_fsck_runs)

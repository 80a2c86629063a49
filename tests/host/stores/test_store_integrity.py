"""What a store promises when writes go wrong: bad rows, rewrites, a second writer, damaged files.

- A call whose row cannot be stored, or breaks a constraint, fails alone; every other call
  of its batch is acknowledged and on disk.
- Records never change: the stores refuse, and so do SQLite's triggers.
- One writer per SQLite file (`StoreLockedError` naming the path and the pid); read-only
  readers may open it meanwhile.
- Every bad file is a `StoreError` naming the path and the problem; a stale lineage index
  is rebuilt (by a host opening it, or by ``host-sim fsck --repair``); damaged records are
  refused, never silently dropped.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import sqlite3
import subprocess
import sys
import tempfile
from collections.abc import Awaitable, Callable, Iterator
from datetime import timedelta
from functools import partial
from pathlib import Path
from typing import Literal

import anyio
import attrs
import pytest

from host_sim import Host, ModelRequest, PostgresStore, ScriptedModel, SqliteStore, StoreError, StoreLockedError
from host_sim._cli import main as host_sim_main
from host_sim.lineage import SessionMetrics
from host_sim.stores import SCHEMA_VERSION, MemoryStore, Store, StoredState, TurnRecord
from host_sim.testing import INTERRUPTED, check
from modular_sdk import (
    AiPromptMessage,
    AiRunnerId,
    SessionId,
    TurnId,
    UserAuthor,
)

from .._stores import T0, node, session
from .._stores import read_back as read_all_of


def running_turn(tid: str, sid: str, ordinal: int, text: str = "hello") -> TurnRecord:
    return TurnRecord(
        id=TurnId(tid),
        session_id=SessionId(sid),
        ordinal=ordinal,
        message=AiPromptMessage(text=text),
        message_id=f"m-{tid}",
        author=UserAuthor(),
        runner_id=AiRunnerId(f"echo:{sid}"),
        status="running",
        reply=None,
        error=None,
        started_at=T0,
        finished_at=None,
    )


def finished(turn: TurnRecord, reply: str = "ok") -> TurnRecord:
    return attrs.evolve(turn, status="completed", reply=reply, finished_at=T0 + timedelta(seconds=1))


def with_lone_surrogate_prompt(turn: TurnRecord) -> TurnRecord:
    """``turn`` whose prompt holds a lone surrogate, which message constructors refuse: set by hand."""
    message = AiPromptMessage(text="fine")
    object.__setattr__(message, "text", "before \ud800 after")
    return attrs.evolve(turn, message=message)


def with_lone_surrogate_reply(turn: TurnRecord) -> TurnRecord:
    return finished(turn, reply=json.loads('"\\ud800"'))


async def read_back(path: Path) -> StoredState:
    store = SqliteStore(path, read_only=True)
    try:
        return await read_all_of(store)
    finally:
        await store.close()


StoreKind = Literal["memory", "sqlite", "postgres"]


@pytest.fixture(params=["memory", "sqlite", "postgres"])
def new_store(request: pytest.FixtureRequest, tmp_path: Path) -> Callable[[], Store]:
    kind: StoreKind = request.param
    if kind == "memory":
        return MemoryStore
    if kind == "postgres":
        dsn: str = request.getfixturevalue("postgres_dsn")
        return lambda: PostgresStore(dsn)
    return lambda: SqliteStore(tmp_path / "store.sqlite")


# -- a poisoned batch --------------------------------------------------------------------


@pytest.mark.anyio
async def test_in_a_batch_of_concurrent_writes_only_the_unstorable_and_the_duplicate_calls_fail(tmp_path: Path) -> None:
    path = tmp_path / "batch.sqlite"
    store = SqliteStore(path)
    await store.open()
    await store.create_session(session("s-taken"), node("s-taken"), None)
    await store.begin_turn(running_turn("t-to-finish", "s-taken", 0))

    homes = [f"h-{i}" for i in range(23)]  # a turn begins in a stored session: these are stored before the batch
    for sid in homes:
        await store.create_session(session(sid), node(sid), None)
    good_sessions = [f"s-{i}" for i in range(24)]
    good_turns = [running_turn(f"t-{i}", homes[i], 0) for i in range(23)]
    calls: dict[str, Callable[[], Awaitable[None]]] = {}
    for i, sid in enumerate(good_sessions):
        calls[sid] = partial(store.create_session, session(sid), node(sid), None)
        if i == 8:
            calls["bad-prompt"] = partial(store.begin_turn, with_lone_surrogate_prompt(running_turn("t-bad", "s-1", 1)))
        if i == 12:
            rewrite = attrs.evolve(session("s-taken"), model="rewritten")
            calls["duplicate"] = partial(store.create_session, rewrite, node("s-taken"), None)
        if i == 16:
            bad_finish = with_lone_surrogate_reply(running_turn("t-to-finish", "s-taken", 0))
            calls["bad-reply"] = partial(store.finish_turn, bad_finish)
    for turn in good_turns:
        calls[turn.id] = partial(store.begin_turn, turn)
    outcomes: dict[str, StoreError | None] = {}

    async def call(name: str) -> None:
        try:
            await calls[name]()
        except StoreError as exc:
            outcomes[name] = exc
        else:
            outcomes[name] = None

    async with anyio.create_task_group() as tg:
        for name in calls:
            tg.start_soon(call, name)
    await store.close()

    assert len(outcomes) == 50
    failed = {name: str(exc) for name, exc in outcomes.items() if exc is not None}
    assert set(failed) == {"bad-prompt", "duplicate", "bad-reply"}
    assert re.search(r"cannot store .*turns.* \(?id='t-bad'\)?.*message", failed["bad-prompt"])
    assert re.search(r"cannot store .*turns.* \(?id='t-to-finish'\)?.*reply", failed["bad-reply"])
    assert "surrogate" in failed["bad-prompt"] and "surrogate" in failed["bad-reply"]
    assert "session 's-taken' is already stored" in failed["duplicate"]
    assert "sessions.id" in failed["duplicate"]  # the constraint SQLite names: table.column

    state = await read_back(path)
    assert {s.id for s in state.sessions} == {"s-taken", *homes, *good_sessions}
    assert {n.session_id for n in state.nodes} == {"s-taken", *homes, *good_sessions}
    assert next(s for s in state.sessions if s.id == "s-taken").model == "echo"
    turns: dict[str, TurnRecord] = {t.id: t for t in state.turns}
    assert set(turns) == {"t-to-finish", *(t.id for t in good_turns)}
    assert turns["t-to-finish"].status == "running"  # its unstorable finish never happened
    assert [v.code for v in check(state)] == ["turn-running"] * 24


@pytest.mark.anyio
async def test_an_unstorable_model_reply_fails_only_its_own_turn_and_submit_never_raises(tmp_path: Path) -> None:
    path = tmp_path / "host.sqlite"
    poisoned = "poison"
    arrived = 0
    all_in_flight = anyio.Event()
    senders = 10

    async def respond(request: ModelRequest) -> str:
        nonlocal arrived
        arrived += 1
        if arrived == senders:
            all_in_flight.set()
        await all_in_flight.wait()  # every turn is running when the first one finishes
        reply: str = json.loads('"\\ud800"') if request.text == poisoned else f"re: {request.text}"
        return reply

    async with Host(model=ScriptedModel(respond), store=SqliteStore(path)) as host:
        chats = [await host.sessions.create() for _ in range(senders)]
        texts = [poisoned if i == 3 else f"prompt {i}" for i in range(senders)]
        outs = {}

        async def submit(i: int) -> None:
            outs[i] = await host.submit(chats[i], texts[i])

        async with anyio.create_task_group() as tg:
            for i in range(senders):
                tg.start_soon(submit, i)

        bad = outs.pop(3)
        assert bad.error is not None and "cannot be stored" in bad.error and "valid Unicode" in bad.error
        assert bad.turn is not None and bad.turn.status == "failed" and bad.turn.reply is None
        assert all(out.ok and out.text == f"re: prompt {i}" for i, out in outs.items())

        typed = await host.submit(chats[0], "\ud800")  # a prompt that cannot be stored: refused where it enters
        assert typed.error is not None and typed.turn is None
        assert "surrogate" in typed.error or "valid" in typed.error

    state = await read_back(path)
    by_session = {t.session_id: t for t in state.turns}
    assert len(state.turns) == senders
    assert by_session[chats[3].id].status == "failed"
    assert "cannot be stored" in (by_session[chats[3].id].error or "")
    assert all(by_session[c.id].status == "completed" for i, c in enumerate(chats) if i != 3)
    assert check(state) == []


# -- records never change ----------------------------------------------------------------


@pytest.mark.anyio
async def test_creating_a_session_under_a_stored_id_is_refused(new_store: Callable[[], Store]) -> None:
    store = new_store()
    await store.open()
    await store.create_session(session("s-1"), node("s-1"), None)
    rewrite = attrs.evolve(session("s-1"), model="other", cwd="/elsewhere")

    with pytest.raises(StoreError, match=r"session 's-1' is already stored and session records never change"):
        await store.create_session(rewrite, node("s-1"), None)

    assert (await read_all_of(store)).sessions == (session("s-1"),)
    await store.close()


@pytest.mark.anyio
async def test_finishing_a_finished_turn_is_refused(new_store: Callable[[], Store]) -> None:
    store = new_store()
    await store.open()
    await store.create_session(session("s-1"), node("s-1"), None)
    turn = running_turn("t-1", "s-1", 0)
    await store.begin_turn(turn)
    await store.finish_turn(finished(turn, reply="first"))

    with pytest.raises(StoreError, match=r"turn 't-1'.*(not a running turn|only a running turn).*once"):
        await store.finish_turn(finished(turn, reply="second"))

    assert [t.reply for t in (await read_all_of(store)).turns] == ["first"]
    await store.close()


@pytest.mark.anyio
async def test_beginning_a_turn_at_a_taken_ordinal_is_refused(new_store: Callable[[], Store]) -> None:
    store = new_store()
    await store.open()
    await store.create_session(session("s-1"), node("s-1"), None)
    await store.begin_turn(running_turn("t-1", "s-1", 0))

    with pytest.raises(StoreError, match=r"turn 0 \('t-2'\) of session 's-1'"):
        await store.begin_turn(running_turn("t-2", "s-1", 0))
    await store.close()


@pytest.mark.anyio
async def test_sqlite_triggers_refuse_to_change_a_session_or_a_finished_turn_by_hand(tmp_path: Path) -> None:
    path = tmp_path / "s.sqlite"
    store = SqliteStore(path)
    await store.open()
    await store.create_session(session("s-1"), node("s-1"), None)
    turn = running_turn("t-1", "s-1", 0)
    await store.begin_turn(turn)
    await store.finish_turn(finished(turn))
    await store.begin_turn(running_turn("t-2", "s-1", 1))
    await store.close()

    conn = sqlite3.connect(path)
    try:
        with pytest.raises(sqlite3.IntegrityError, match="a session record never changes"):
            conn.execute("""UPDATE sessions SET lineage = '{"kind":"root"}', model = 'x' WHERE id = 's-1'""")
        with pytest.raises(sqlite3.IntegrityError, match="a session record is never deleted"):
            conn.execute("DELETE FROM sessions WHERE id = 's-1'")
        with pytest.raises(sqlite3.IntegrityError, match="a finished turn never changes"):
            conn.execute("UPDATE turns SET reply = 'rewritten' WHERE id = 't-1'")
        conn.execute("UPDATE turns SET status = 'failed', finished_at = ? WHERE id = 't-2'", (T0.isoformat(),))
        conn.commit()  # a running turn finishes once, which is how a store finishes it
        with pytest.raises(sqlite3.IntegrityError, match="a finished turn never changes"):
            conn.execute("UPDATE turns SET status = 'running' WHERE id = 't-2'")
    finally:
        conn.close()
    state = await read_back(path)
    assert state.sessions == (session("s-1"),)
    assert [(t.id, t.status, t.reply) for t in state.turns] == [("t-1", "completed", "ok"), ("t-2", "failed", None)]


# -- one writer --------------------------------------------------------------------------

HOLDER = """
import sys, anyio
from host_sim import SqliteStore

async def main() -> None:
    store = SqliteStore(sys.argv[1])
    await store.open()
    print("holding", flush=True)
    await anyio.to_thread.run_sync(sys.stdin.read)  # until the test closes our stdin
    await store.close()

anyio.run(main)
"""

CONTENDER = """
import json, sys, anyio
from host_sim import SqliteStore, StoreLockedError

async def main() -> None:
    try:
        await SqliteStore(sys.argv[1]).open()
    except StoreLockedError as exc:
        print(json.dumps({"type": type(exc).__name__, "message": str(exc), "pid": exc.pid, "path": exc.path}))
    else:
        print(json.dumps({"type": None}))

anyio.run(main)
"""


@pytest.mark.anyio
async def test_a_second_writer_in_this_process_gets_store_locked_error_while_readers_still_read(tmp_path: Path) -> None:
    path = tmp_path / "one.sqlite"
    first = SqliteStore(path)
    await first.open()
    await first.create_session(session("s-1"), node("s-1"), None)

    with pytest.raises(StoreLockedError, match=r"is held by another host \(process \d+") as caught:
        await SqliteStore(path).open()
    assert caught.value.pid == os.getpid()
    assert caught.value.path == str(path)
    assert str(path) in str(caught.value)
    assert isinstance(caught.value, StoreError)

    reader = SqliteStore(path, read_only=True)
    assert [s.id for s in (await read_all_of(reader)).sessions] == ["s-1"]
    with pytest.raises(StoreError, match="is open read-only"):
        await reader.create_session(session("s-2"), node("s-2"), None)
    with pytest.raises(StoreError, match="is open read-only"):
        await reader.begin_turn(running_turn("t-1", "s-1", 0))
    await reader.close()

    await first.close()
    second = SqliteStore(path)
    assert [s.id for s in (await read_all_of(second)).sessions] == ["s-1"]
    await second.create_session(session("s-2"), node("s-2"), None)
    await second.close()


def test_a_second_process_on_a_held_file_gets_store_locked_error_naming_the_holder(tmp_path: Path) -> None:
    path = tmp_path / "one.sqlite"

    async def hold_and_contend() -> dict[str, object]:
        store = SqliteStore(path)
        await store.open()
        try:
            result = await anyio.run_process([sys.executable, "-c", CONTENDER, str(path)])
        finally:
            await store.close()
        answer: dict[str, object] = json.loads(result.stdout)
        return answer

    answer = anyio.run(hold_and_contend)

    assert answer["type"] == "StoreLockedError"
    assert answer["pid"] == os.getpid()
    assert answer["path"] == str(path)
    assert str(path) in str(answer["message"]) and f"process {os.getpid()}" in str(answer["message"])


@pytest.mark.anyio
async def test_a_file_held_by_another_process_names_its_pid_and_opens_once_it_closes(tmp_path: Path) -> None:
    path = tmp_path / "one.sqlite"
    with subprocess.Popen(
        [sys.executable, "-c", HOLDER, str(path)], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True
    ) as holder:
        try:
            assert holder.stdout is not None and holder.stdin is not None
            assert holder.stdout.readline() == "holding\n"

            with pytest.raises(StoreLockedError, match=f"process {holder.pid}") as caught:
                await SqliteStore(path).open()
            assert caught.value.pid == holder.pid
            assert (await read_back(path)) == StoredState()  # a reader opens meanwhile

            holder.stdin.close()
            assert holder.wait(timeout=60) == 0
        finally:
            if holder.poll() is None:
                holder.kill()
    store = SqliteStore(path)
    await store.open()
    await store.close()


# -- bad files ---------------------------------------------------------------------------

AS_NOBODY = """
import json, os, sys, tempfile, anyio, anyio.to_thread
from host_sim import SqliteStore, StoreError

async def attempt(path: str, read_only: bool) -> dict[str, object]:
    try:
        store = SqliteStore(path, read_only=read_only)
        await store.open()
        state = await store.read_all()
        await store.close()
    except StoreError as exc:
        return {"type": type(exc).__name__, "message": str(exc), "path": exc.path}
    return {"type": None, "sessions": [s.id for s in state.sessions]}

async def main() -> None:
    with tempfile.TemporaryDirectory() as warm:  # import everything while /root/.pyenv is reachable
        await attempt(os.path.join(warm, "warm.sqlite"), False)
    os.setgid(65534)
    os.setuid(65534)
    print(json.dumps({"write": await attempt(sys.argv[1], False), "read": await attempt(sys.argv[1], True)}))

anyio.run(main)
"""


@pytest.fixture
def world_readable_dir() -> Iterator[Path]:
    """A folder outside pytest's private temp dir, so another user can read what is in it."""
    folder = Path(tempfile.mkdtemp(prefix="host-sim-ro-"))
    folder.chmod(0o755)
    try:
        yield folder
    finally:
        shutil.rmtree(folder)


def test_a_store_this_process_may_not_write_is_reported_read_only(world_readable_dir: Path) -> None:
    path = world_readable_dir / "ro.sqlite"

    async def write_one_session() -> None:
        store = SqliteStore(path)
        await store.open()
        await store.create_session(session("s-1"), node("s-1"), None)
        await store.close()

    anyio.run(write_one_session)
    path.chmod(0o444)
    if os.geteuid() == 0:  # root writes through chmod: ask as an unprivileged user (nobody)
        result = subprocess.run(
            [sys.executable, "-c", AS_NOBODY, str(path)], capture_output=True, text=True, check=True, timeout=120
        )
        answer = json.loads(result.stdout)
    else:
        answer = {"write": anyio.run(_attempt, path, False), "read": anyio.run(_attempt, path, True)}

    assert answer["write"]["type"] == "StoreError"
    assert answer["write"]["path"] == str(path)
    assert str(path) in answer["write"]["message"] and "is read-only" in answer["write"]["message"]
    assert "not a SQLite database" not in answer["write"]["message"]
    assert answer["read"] == {"type": None, "sessions": ["s-1"]}


async def _attempt(path: Path, read_only: bool) -> dict[str, object]:
    """What AS_NOBODY reports, for a process that is not root."""
    try:
        store = SqliteStore(path, read_only=read_only)
        state = await read_all_of(store)
        await store.close()
    except StoreError as exc:
        return {"type": type(exc).__name__, "message": str(exc), "path": exc.path}
    return {"type": None, "sessions": [s.id for s in state.sessions]}


def _nested(depth: int) -> str:
    return "[" * depth + "]" * depth


@pytest.mark.anyio
@pytest.mark.parametrize(
    ("table", "column", "key"),
    [
        ("sessions", "lineage", "'s-1'"),
        ("sessions", "metadata", "'s-1'"),
        ("turns", "message", "'t-1'"),
        ("turns", "author", "'t-1'"),
        ("nodes", "metrics", "'s-1'"),
    ],
)
async def test_a_json_cell_nested_100000_deep_is_a_store_error_naming_the_row(
    tmp_path: Path, table: str, column: str, key: str
) -> None:
    path = tmp_path / "deep.sqlite"
    store = SqliteStore(path)
    await store.open()
    await store.create_session(session("s-1"), node("s-1"), None)
    await store.begin_turn(running_turn("t-1", "s-1", 0))
    await store.close()
    conn = sqlite3.connect(path)
    try:  # by hand, past the triggers that keep records as written
        conn.execute("DROP TRIGGER sessions_never_change")
        for index in ("sessions_by_parent", "sessions_by_kind", "turns_notifications"):
            conn.execute(f"DROP INDEX {index}")  # their json_extract would refuse the cell
        conn.execute(f"UPDATE {table} SET {column} = ?", (_nested(100_000),))
        conn.commit()
    finally:
        conn.close()

    store = SqliteStore(path, read_only=True)
    await store.open()
    try:
        with pytest.raises(StoreError, match=rf"unreadable {table} row \({key}\): JSON nested too deeply") as caught:
            await store.read_all()
    finally:
        await store.close()
    assert caught.value.path == str(path) and str(path) in str(caught.value)
    with pytest.raises(StoreError, match="nested too deeply"):
        async with Host(store=SqliteStore(path)) as host:  # opens: it reads rows when touched
            await host.sessions.get("s-1")
            await host.lineage.node("s-1")
    assert await anyio.to_thread.run_sync(host_sim_main, ["fsck", "--store", str(path)]) == 1


async def _a_root_and_a_fork(path: Path) -> tuple[SessionId, SessionId]:
    async with Host(store=SqliteStore(path)) as host:
        chat = await host.sessions.create()
        await host.submit(chat, "one")
        fork = await chat.fork()
        await fork.send(AiPromptMessage(text="two"))
        return chat.id, fork.id


def _by_hand(path: Path, *statements: str) -> None:
    conn = sqlite3.connect(path)
    try:
        for statement in statements:
            conn.execute(statement)
        conn.commit()
    finally:
        conn.close()


def _break_the_index(path: Path, chat: str, fork: str) -> None:
    """An edge to a session that does not exist, and a session without its lineage node."""
    _by_hand(
        path,
        "INSERT INTO edges (from_session_id, to_session_id, relation, created_at) "
        f"VALUES ('{chat}', 'ses_ghost', 'branched_from', '{T0.isoformat()}')",
        f"DELETE FROM nodes WHERE session_id = '{fork}'",
    )


@pytest.mark.anyio
async def test_a_host_opening_a_store_with_a_stale_index_rebuilds_it(tmp_path: Path) -> None:
    path = tmp_path / "stale.sqlite"
    chat, fork = await _a_root_and_a_fork(path)
    _break_the_index(path, chat, fork)
    # What an older host-sim leaves: an index not built by this INDEX_VERSION. (A host
    # trusts the marker and scans nothing; an index broken by hand behind the marker's
    # back is found by 'host-sim fsck', below.)
    _by_hand(path, "DELETE FROM meta WHERE key = 'index_version'")
    assert sorted(v.code for v in check(await read_back(path))) == ["index-stale", "index-stale"]

    async with Host(store=SqliteStore(path)) as host:
        assert [n.session_id for n in await host.lineage.ancestors(fork)] == [chat]
        assert [n.session_id for n in await host.lineage.descendants(chat)] == [fork]
        again = await (await host.sessions.get(fork)).fork()
        assert [n.session_id for n in await host.lineage.ancestors(again.id)] == [fork, chat]

    assert check(await read_back(path)) == []


def test_fsck_lists_a_stale_index_and_repair_rebuilds_it(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "stale.sqlite"
    chat, fork = anyio.run(_a_root_and_a_fork, path)
    _break_the_index(path, chat, fork)
    capsys.readouterr()

    assert host_sim_main(["fsck", "--store", str(path)]) == 1
    out, err = capsys.readouterr()
    assert out.count("index-stale") == 2
    assert f"session {fork!r} has no lineage node" in out and "'ses_ghost'" in out
    assert "repairable with --repair" in out
    assert f"{path}: 2 violations" in err
    assert len(check(anyio.run(read_back, path))) == 2  # without --repair nothing is written

    assert host_sim_main(["fsck", "--store", str(path), "--repair"]) == 0
    out, _ = capsys.readouterr()
    assert out.count("repaired  index-stale") == 2
    assert out.strip().endswith(f"{path}: ok (repaired 2)")
    assert check(anyio.run(read_back, path)) == []
    assert host_sim_main(["fsck", "--store", str(path)]) == 0


def _delete_the_parent(path: Path, chat: str) -> None:
    _by_hand(path, "DROP TRIGGER sessions_are_kept", f"DELETE FROM sessions WHERE id = '{chat}'")


@pytest.mark.anyio
async def test_a_fork_whose_parent_row_is_missing_is_refused_as_damage_when_a_host_reads_it(tmp_path: Path) -> None:
    path = tmp_path / "orphan.sqlite"
    chat, fork = await _a_root_and_a_fork(path)
    _delete_the_parent(path, chat)

    with pytest.raises(StoreError, match=r"is damaged.*") as caught:
        async with Host(store=SqliteStore(path)) as host:  # opens lazily: the fork is refused when read
            await host.sessions.get(fork)
    message = str(caught.value)
    assert str(path) in message and caught.value.path == str(path)
    assert f"session {fork!r} is a fork of {chat!r}, which the store does not hold" in message
    assert "host-sim fsck" in message
    store = SqliteStore(path)  # the refused host released the file
    await store.open()
    await store.close()


def test_fsck_reports_a_fork_whose_parent_row_is_missing_and_repair_cannot_fix_it(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "orphan.sqlite"
    chat, fork = anyio.run(_a_root_and_a_fork, path)
    _delete_the_parent(path, chat)
    capsys.readouterr()

    assert host_sim_main(["fsck", "--store", str(path)]) == 1
    out, _ = capsys.readouterr()
    assert f"unknown-parent  session {fork!r} is a fork of {chat!r}" in out
    assert "damaged record" in out

    assert host_sim_main(["fsck", "--store", str(path), "--repair"]) == 1
    out, _ = capsys.readouterr()
    assert "unknown-parent" in out and "repaired" not in out


V1_SCHEMA = """
CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE sessions (
    id TEXT PRIMARY KEY, lineage TEXT NOT NULL, metadata TEXT, model TEXT NOT NULL,
    cwd TEXT NOT NULL, runner_id TEXT NOT NULL, created_at TEXT NOT NULL, agent_id TEXT
);
CREATE TABLE turns (
    id TEXT PRIMARY KEY, session_id TEXT NOT NULL, ordinal INTEGER NOT NULL,
    message TEXT NOT NULL, message_id TEXT NOT NULL, author TEXT NOT NULL,
    runner_id TEXT NOT NULL, status TEXT NOT NULL, reply TEXT, error TEXT,
    started_at TEXT NOT NULL, finished_at TEXT NOT NULL
);
CREATE INDEX turns_by_session ON turns (session_id, ordinal);
CREATE TABLE nodes (
    session_id TEXT PRIMARY KEY, created_at TEXT NOT NULL, summary TEXT, agent_id TEXT,
    completed_at TEXT, metrics TEXT
);
CREATE TABLE edges (
    from_session_id TEXT NOT NULL, to_session_id TEXT NOT NULL, relation TEXT NOT NULL,
    created_at TEXT NOT NULL, artifact TEXT, PRIMARY KEY (from_session_id, to_session_id)
);
INSERT INTO meta VALUES ('application', 'host-sim'), ('schema_version', '1');
"""


def _as_schema_1(current: Path, old: Path) -> None:
    """Write the rows of store ``current`` into a new file ``old`` in the version 1 layout (see _UPGRADE_FROM_1)."""
    conn = sqlite3.connect(old)
    try:
        conn.executescript(V1_SCHEMA)
        conn.execute("ATTACH DATABASE ? AS v2", (str(current),))
        for table in ("sessions", "turns", "nodes", "edges"):  # the columns version 1 had
            columns = ", ".join(row[1] for row in conn.execute(f"PRAGMA main.table_info({table})"))
            conn.execute(f"INSERT INTO main.{table} SELECT {columns} FROM v2.{table} ORDER BY rowid")
        conn.commit()
        conn.execute("DETACH DATABASE v2")
    finally:
        conn.close()


@pytest.mark.anyio
async def test_a_schema_1_store_opens_upgraded_to_the_current_schema_with_its_data(tmp_path: Path) -> None:
    current, old = tmp_path / "v2.sqlite", tmp_path / "v1.sqlite"
    chat, fork = await _a_root_and_a_fork(current)
    written = await read_back(current)
    _as_schema_1(current, old)

    assert await read_back(old) == written  # a reader reads version 1 as it is
    async with Host(store=SqliteStore(old)) as host:
        restored = await host.sessions.get(fork)
        assert [t.reply for t in await restored.turns()] == ["echo: one", "echo: two"]
        parent = await restored.parent()
        assert parent is not None and parent.id == chat

    assert await read_back(old) == written
    conn = sqlite3.connect(old)
    try:
        assert conn.execute("SELECT value FROM meta WHERE key = 'schema_version'").fetchone() == (str(SCHEMA_VERSION),)
        triggers = {name for (name,) in conn.execute("SELECT name FROM sqlite_master WHERE type = 'trigger'")}
        assert {"sessions_never_change", "sessions_are_kept", "finished_turns_never_change"} <= triggers
        with pytest.raises(sqlite3.IntegrityError, match="UNIQUE constraint failed: turns.session_id, turns.ordinal"):
            conn.execute(
                "INSERT INTO turns SELECT 'copy', session_id, ordinal, message, message_id, author, runner_id, "
                "status, reply, error, started_at, finished_at, erased_at, tool_calls, retracted_at, retraction_reason, usage, widgets "
                "FROM turns LIMIT 1"
            )
    finally:
        conn.close()


@pytest.mark.anyio
async def test_a_schema_1_store_with_duplicate_ordinals_is_left_as_it_was_and_fsck_names_them(tmp_path: Path) -> None:
    current, old = tmp_path / "v2.sqlite", tmp_path / "v1.sqlite"
    chat, _ = await _a_root_and_a_fork(current)
    _as_schema_1(current, old)
    _by_hand(  # a second turn at ordinal 0: what two hosts on one version 1 file did
        old,
        "INSERT INTO turns SELECT 'turn_twin', session_id, ordinal, message, 'm-twin', author, runner_id, "
        f"status, reply, error, started_at, finished_at FROM turns WHERE session_id = '{chat}'",
    )

    with pytest.raises(StoreError, match=r"cannot be upgraded from schema version 1") as caught:
        async with Host(store=SqliteStore(old)):
            pass
    message = str(caught.value)
    assert str(old) in message and caught.value.path == str(old)
    assert "UNIQUE constraint failed: turns.session_id, turns.ordinal" in message
    assert "host-sim fsck --store PATH" in message and "check the disk" not in message
    conn = sqlite3.connect(old)
    try:
        assert conn.execute("SELECT value FROM meta WHERE key = 'schema_version'").fetchone() == ("1",)
    finally:
        conn.close()
    assert {v.code for v in check(await read_back(old))} == {"ordinals"}


# -- interrupted turns and fsck --json ---------------------------------------------------


@pytest.mark.anyio
async def test_a_turn_left_running_is_failed_as_interrupted_when_a_host_reopens(tmp_path: Path) -> None:
    path = tmp_path / "crashed.sqlite"
    store = SqliteStore(path)
    await store.open()
    await store.create_session(session("s-1"), node("s-1"), None)
    await store.begin_turn(running_turn("t-1", "s-1", 0, text="what the user typed"))
    await store.close()  # as a killed host leaves it: the turn running, its message durable

    async with Host(store=SqliteStore(path)) as host:
        (turn,) = await (await host.sessions.get("s-1")).turns()
        assert (turn.status, turn.error) == ("failed", INTERRUPTED)
        assert turn.message == AiPromptMessage(text="what the user typed")
    assert check(await read_back(path)) == []


def test_fsck_json_reports_the_store_whether_it_is_sound_and_each_violation(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "stale.sqlite"
    chat, fork = anyio.run(_a_root_and_a_fork, path)
    capsys.readouterr()
    assert host_sim_main(["fsck", "--store", str(path), "--json"]) == 0
    assert json.loads(capsys.readouterr().out) == {"store": str(path), "ok": True, "violations": [], "repaired": []}

    _by_hand(path, f"DELETE FROM nodes WHERE session_id = '{fork}'")
    assert host_sim_main(["fsck", "--store", str(path), "--json"]) == 1
    report = json.loads(capsys.readouterr().out)
    stale = {
        "code": "index-stale",
        "subject": fork,
        "message": f"session {fork!r} has no lineage node",
        "repairable": True,
    }
    assert report == {"store": str(path), "ok": False, "violations": [stale], "repaired": []}

    assert host_sim_main(["fsck", "--store", str(path), "--json", "--repair"]) == 0
    assert json.loads(capsys.readouterr().out) == {"store": str(path), "ok": True, "violations": [], "repaired": [stale]}


@pytest.mark.anyio
async def test_fsck_reads_a_store_a_host_holds_but_cannot_repair_it(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "held.sqlite"
    async with Host(store=SqliteStore(path)) as host:
        await host.submit(await host.sessions.create(), "hi")
        capsys.readouterr()

        assert await anyio.to_thread.run_sync(host_sim_main, ["fsck", "--store", str(path)]) == 0
        assert capsys.readouterr().out.strip() == f"{path}: ok"

        assert await anyio.to_thread.run_sync(host_sim_main, ["fsck", "--store", str(path), "--repair"]) == 1
        err = capsys.readouterr().err
        assert "is in use by another host" in err and f"process {os.getpid()}" in err


def test_fsck_of_a_missing_file_exits_1_and_creates_nothing(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "missing.sqlite"
    assert host_sim_main(["fsck", "--store", str(path)]) == 1
    assert "does not exist" in capsys.readouterr().err
    assert list(tmp_path.iterdir()) == []


# -- derived rows heal ------------------------------------------------------------------------


@pytest.mark.anyio
async def test_a_memory_store_derives_plain_lineage_nodes_so_none_can_be_lost() -> None:
    """A MemoryStore keeps no node that only repeats its session's record: it derives it when read."""
    memory = MemoryStore()
    async with Host(store=memory) as host:
        chat = await host.sessions.create()
        await chat.send(AiPromptMessage(text="one"))
        fork = await chat.fork()
        assert memory._nodes == {}
        assert [n.session_id for n in await host.lineage.ancestors(fork.id)] == [chat.id]
        done = await host.lineage.complete_session(
            fork.id, SessionMetrics(tool_calls=0, token_usage=0, duration_ms=1, sessions_spawned=0)
        )
        assert list(memory._nodes.values()) == [done]  # a completion says more than the record: kept
        assert await host.lineage.node(fork.id) == done
        assert check(await memory.read_all()) == []


@pytest.mark.anyio
@pytest.mark.parametrize("kind", ["memory", "sqlite", "postgres"])
async def test_a_session_whose_lineage_rows_were_lost_is_healed_when_read_never_reported_unknown(
    kind: StoreKind, tmp_path: Path, request: pytest.FixtureRequest
) -> None:
    path = tmp_path / "store.sqlite"
    dsn: str = request.getfixturevalue("postgres_dsn") if kind == "postgres" else ""
    memory = MemoryStore()  # one process's store, kept across its hosts

    def store() -> Store:
        if kind == "memory":
            return memory
        return SqliteStore(path) if kind == "sqlite" else PostgresStore(dsn)

    async with Host(store=store()) as host:
        chat = await host.sessions.create()
        await chat.send(AiPromptMessage(text="one"))
        fork = await chat.fork()
    lost = (chat.id, fork.id)
    if kind == "memory":  # its plain nodes are derived from the sessions (above): the fork's edge
        memory._in.pop(fork.id)
        memory._out.pop(chat.id)
        memory._edge_order.remove(fork.id)
    elif kind == "sqlite":  # the nodes and the fork's edge
        with sqlite3.connect(path) as db:
            db.executemany("DELETE FROM nodes WHERE session_id = ?", [(s,) for s in lost])
            db.execute("DELETE FROM edges WHERE to_session_id = ?", (fork.id,))
        db.close()
    else:
        import psycopg

        with psycopg.connect(dsn, autocommit=True) as pg:
            pg.execute("DELETE FROM host_sim.nodes WHERE session_id = ANY(%s)", (list(lost),))
            pg.execute("DELETE FROM host_sim.edges WHERE to_session_id = %s", (fork.id,))

    async with Host(store=store()) as host:
        assert {chat.id, fork.id} <= {s.id for s in (await host.sessions.list()).sessions}
        assert [n.session_id for n in await host.lineage.ancestors(fork.id)] == [chat.id]
        chain = await host.lineage.chain(chat.id)
        assert [n.session_id for n in chain.nodes] == [chat.id, fork.id]
        (edge,) = chain.edges
        assert edge.relation == "branched_from" and edge.artifact is not None
        assert edge.artifact.source_id == (await (await host.sessions.get(chat.id)).turns())[0].id
    reopened = store()
    try:
        assert check(await read_all_of(reopened)) == []  # what was rebuilt is what fsck derives
    finally:
        await reopened.close()


@pytest.mark.anyio
async def test_a_lost_lineage_node_on_a_read_only_store_names_the_repair_command(tmp_path: Path) -> None:
    from host_sim.lineage import LineageGraph

    path = tmp_path / "store.sqlite"
    async with Host(store=SqliteStore(path)) as host:
        chat = await host.sessions.create()
    with sqlite3.connect(path) as db:
        db.execute("DELETE FROM nodes WHERE session_id = ?", (chat.id,))
    db.close()
    reader = SqliteStore(path, read_only=True)
    await reader.open()
    try:
        with pytest.raises(StoreError, match=r"lineage node is missing.*host-sim fsck --repair"):
            await LineageGraph(reader).node(chat.id)
    finally:
        await reader.close()

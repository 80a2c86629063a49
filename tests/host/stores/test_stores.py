"""MemoryStore, SqliteStore and PostgresStore: one story of writes, a close, a reopen, everything back."""

from __future__ import annotations

import sqlite3
from collections.abc import Callable
from datetime import UTC, datetime, timedelta, timezone
from pathlib import Path

import attrs
import pytest

from host_sim.lineage import LineageArtifact, LineageEdge, SessionMetrics, SessionNode
from host_sim.stores import (
    INDEX_VERSION,
    SCHEMA_VERSION,
    SessionRecord,
    SqliteStore,
    Store,
    StoredState,
    StoreError,
    TurnRecord,
)
from modular_sdk import (
    AiNotificationMessage,
    AiPromptMessage,
    AiRunnerId,
    AiSessionDisplayMetadata,
    CommandTrigger,
    ForkLineage,
    ModAuthor,
    RootLineage,
    SessionId,
    SpawnLineage,
    ToolTrigger,
    TurnId,
    UserAuthor,
)

from .._stores import read_back

T0 = datetime(2026, 1, 2, 3, 4, 5, 678901, tzinfo=UTC)
PARIS = timezone(timedelta(hours=1))


def sessions() -> list[SessionRecord]:
    runner = AiRunnerId("echo-1")
    return [
        SessionRecord(
            id=SessionId("s-1"),
            lineage=RootLineage(),
            metadata=AiSessionDisplayMetadata(label="Chat \"one\" ✓"),
            model="echo",
            cwd="/work",
            runner_id=runner,
            created_at=T0,
        ),
        SessionRecord(
            id=SessionId("s-2"),
            lineage=ForkLineage(
                parent_session_id=SessionId("s-1"),
                parent_turn_ordinal=1,
                parent_runner_id=runner,
                depth=1,
                forked_at=T0 + timedelta(seconds=1),
                parent_user_message_id="m-1",
            ),
            metadata=None,
            model="echo",
            cwd="/work",
            runner_id=runner,
            created_at=T0 + timedelta(seconds=1),
        ),
        SessionRecord(
            id=SessionId("s-3"),
            lineage=SpawnLineage(
                parent_session_id=SessionId("s-1"),
                parent_chat_uri="chat://s-1",
                depth=1,
                spawned_at=datetime(2026, 1, 2, 4, 0, tzinfo=PARIS),
                trigger=CommandTrigger(mod_id="background-tasks", command_id="task"),
            ),
            metadata=AiSessionDisplayMetadata(label="Work", icon="gear"),
            model="echo",
            cwd="/work",
            runner_id=runner,
            created_at=T0 + timedelta(seconds=2),
        ),
        SessionRecord(
            id=SessionId("s-4"),
            lineage=SpawnLineage(
                parent_session_id=SessionId("s-3"),
                parent_chat_uri="chat://s-3",
                depth=2,
                spawned_at=T0 + timedelta(seconds=3),
                trigger=ToolTrigger(mod_id="search", tool_name="find", call_id="c-9"),
            ),
            metadata=None,
            model="other",
            cwd="/",
            runner_id=runner,
            created_at=T0 + timedelta(seconds=3),
            agent_id="reviewer",
        ),
    ]


def turns() -> list[TurnRecord]:
    return [
        TurnRecord(
            id=TurnId("t-1"),
            session_id=SessionId("s-1"),
            ordinal=0,
            message=AiPromptMessage(text="Refactor the parser\nplease"),
            message_id="m-0",
            author=UserAuthor(),
            runner_id=AiRunnerId("echo-1"),
            status="completed",
            reply="ok",
            error=None,
            started_at=T0,
            finished_at=T0 + timedelta(milliseconds=5),
        ),
        TurnRecord(
            id=TurnId("t-2"),
            session_id=SessionId("s-1"),
            ordinal=1,
            message=AiNotificationMessage(title="Task done", body="summary"),
            message_id="m-1",
            author=ModAuthor(mod_id="background-tasks", command_id="task"),
            runner_id=AiRunnerId("echo-1"),
            status="failed",
            reply=None,
            error="model failed",
            started_at=T0,
            finished_at=T0,
        ),
        TurnRecord(
            id=TurnId("t-3"),
            session_id=SessionId("s-2"),
            ordinal=2,
            message=AiPromptMessage(text="go on"),
            message_id="m-2",
            author=ModAuthor(mod_id="search", tool_name="find"),
            runner_id=AiRunnerId("echo-1"),
            status="completed",
            reply="",
            error=None,
            started_at=T0,
            finished_at=T0,
        ),
    ]


def nodes() -> list[SessionNode]:
    return [
        SessionNode(session_id=SessionId(f"s-{i}"), created_at=T0, summary="hi" if i == 1 else None)
        for i in range(1, 5)
    ]


def edges() -> list[LineageEdge]:
    turn = LineageArtifact(type="turn", source_id="t-2", label="anchor turn")
    return [
        LineageEdge(
            from_session_id=SessionId("s-1"),
            to_session_id=SessionId("s-2"),
            relation="branched_from",
            created_at=T0,
            artifact=turn,
        ),
        LineageEdge(
            from_session_id=SessionId("s-1"),
            to_session_id=SessionId("s-3"),
            relation="spawned_by",
            created_at=T0,
        ),
        LineageEdge(
            from_session_id=SessionId("s-3"),
            to_session_id=SessionId("s-4"),
            relation="spawned_by",
            created_at=T0,
        ),
        LineageEdge(
            from_session_id=SessionId("s-2"),
            to_session_id=SessionId("s-4"),
            relation="used_result_of",
            created_at=T0,
            artifact=LineageArtifact(type="my.custom-type", source_id="x", label="custom"),
        ),
    ]


StoreFactory = Callable[[], Store]


@pytest.fixture
def make_store(any_store: StoreFactory) -> StoreFactory:
    """A factory of store objects that all see the same data, on every store (`any_store`)."""
    return any_store


async def reopen(make_store: StoreFactory) -> StoredState:
    """Open a new store object on the same data, read it, close it."""
    store = make_store()
    try:
        return await read_back(store)
    finally:
        await store.close()


def running(turn: TurnRecord) -> TurnRecord:
    """The record ``turn`` had when it started."""
    return attrs.evolve(turn, status="running", reply=None, error=None, finished_at=None)


async def write_story(store: Store) -> None:
    """Each session with its node and its edge, each turn begun then finished, then an integrator edge."""
    structural = {e.to_session_id: e for e in edges()[:3]}
    for s, n in zip(sessions(), nodes(), strict=True):
        await store.create_session(s, n, structural.get(s.id))
    for t in turns():
        await store.begin_turn(running(t))
        await store.finish_turn(t)
    await store.save_edge(edges()[3])


@pytest.mark.anyio
async def test_new_store_opens_empty(make_store: StoreFactory) -> None:
    store = make_store()
    assert await read_back(store) == StoredState()
    await store.close()


@pytest.mark.anyio
async def test_everything_written_comes_back_after_reopen(make_store: StoreFactory) -> None:
    store = make_store()
    await store.open()
    await write_story(store)
    await store.close()

    state = await reopen(make_store)
    assert state == StoredState(
        sessions=tuple(sessions()), turns=tuple(turns()), nodes=tuple(nodes()), edges=tuple(edges())
    )


@pytest.mark.anyio
async def test_rewrites_replace_in_place(make_store: StoreFactory) -> None:
    """A node completed later and an edge re-added replace the old record, keeping its place."""
    store = make_store()
    await store.open()
    await write_story(store)
    done = attrs.evolve(
        nodes()[0],
        completed_at=T0 + timedelta(hours=1),
        metrics=SessionMetrics(tool_calls=2, token_usage=300, duration_ms=1500, sessions_spawned=1),
    )
    await store.save_node(done)
    readded = attrs.evolve(edges()[3], relation="continued_from", artifact=None)
    await store.save_edge(readded)
    await store.close()

    state = await reopen(make_store)
    assert state.nodes == (done, *nodes()[1:])
    assert state.edges == (*edges()[:3], readded)


@pytest.mark.anyio
async def test_times_keep_their_offset(make_store: StoreFactory) -> None:
    store = make_store()
    await store.open()
    await write_story(store)
    await store.close()
    state = await reopen(make_store)
    spawn = state.sessions[2].lineage
    assert isinstance(spawn, SpawnLineage)
    assert spawn.spawned_at.utcoffset() == timedelta(hours=1)


@pytest.mark.anyio
async def test_writes_to_a_closed_store_are_refused(make_store: StoreFactory) -> None:
    store = make_store()
    with pytest.raises(StoreError, match=r"not open.*store\.open\(\)"):
        await store.save_node(nodes()[0])
    await store.open()
    await store.close()
    with pytest.raises(StoreError, match="not open"):
        await store.create_session(sessions()[0], nodes()[0], None)


# -- SqliteStore on disk ----------------------------------------------------------------


@pytest.mark.anyio
async def test_sqlite_file_has_versioned_schema_and_wal(tmp_path: Path) -> None:
    path = tmp_path / "s.sqlite"
    store = SqliteStore(path)
    await store.open()
    await write_story(store)
    await store.close()
    with sqlite3.connect(path) as conn:
        meta = dict(conn.execute("SELECT key, value FROM meta"))
        (mode,) = conn.execute("PRAGMA journal_mode").fetchone()
        (lineage,) = conn.execute("SELECT lineage FROM sessions WHERE id = 's-2'").fetchone()
        (author,) = conn.execute("SELECT author FROM turns WHERE id = 't-2'").fetchone()
        (message,) = conn.execute("SELECT message FROM turns WHERE id = 't-2'").fetchone()
    conn.close()
    assert meta == {"application": "host-sim", "schema_version": str(SCHEMA_VERSION), "index_version": str(INDEX_VERSION)}
    assert mode == "wal"
    assert '"kind":"fork"' in lineage
    assert '"kind":"mod"' in author
    assert '"type":"notification"' in message


@pytest.mark.anyio
async def test_sqlite_writes_are_committed_before_close(tmp_path: Path) -> None:
    """Each save is durable at once: another connection sees it while the store is open."""
    path = tmp_path / "s.sqlite"
    store = SqliteStore(path)
    await store.open()
    await store.create_session(sessions()[0], nodes()[0], None)
    with sqlite3.connect(path) as conn:
        rows = conn.execute("SELECT id FROM sessions").fetchall()
    conn.close()
    await store.close()
    assert rows == [("s-1",)]


@pytest.mark.anyio
async def test_sqlite_refuses_a_newer_schema(tmp_path: Path) -> None:
    path = tmp_path / "s.sqlite"
    store = SqliteStore(path)
    await store.open()
    await store.close()
    with sqlite3.connect(path) as conn:
        conn.execute("UPDATE meta SET value = '99' WHERE key = 'schema_version'")
    conn.close()
    with pytest.raises(StoreError, match=rf"newer host-sim \(schema version 99; this one reads up to {SCHEMA_VERSION}\).*upgrade") as info:
        await SqliteStore(path).open()
    assert info.value.path == str(path)
    assert str(path) in str(info.value)


@pytest.mark.anyio
async def test_sqlite_refuses_a_file_that_is_not_a_database(tmp_path: Path) -> None:
    path = tmp_path / "notes.txt"
    path.write_text("hello, this is not SQLite\n" * 100)
    with pytest.raises(StoreError, match=r"notes\.txt' is not a SQLite database") as info:
        await SqliteStore(path).open()
    assert info.value.path == str(path)
    assert path.read_text().startswith("hello")


@pytest.mark.anyio
async def test_sqlite_refuses_another_applications_database(tmp_path: Path) -> None:
    path = tmp_path / "other.db"
    with sqlite3.connect(path) as conn:
        conn.execute("CREATE TABLE invoices (id INTEGER PRIMARY KEY)")
    conn.close()
    with pytest.raises(StoreError, match=r"other\.db' is a SQLite database of another application \(tables: invoices\)"):
        await SqliteStore(path).open()
    with sqlite3.connect(path) as conn:  # untouched: no tables added, journal mode kept
        tables = conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'").fetchall()
        (mode,) = conn.execute("PRAGMA journal_mode").fetchone()
    conn.close()
    assert tables == [("invoices",)]
    assert mode == "delete"


@pytest.mark.anyio
async def test_sqlite_without_create_refuses_a_missing_file_and_creates_nothing(tmp_path: Path) -> None:
    path = tmp_path / "missing.sqlite"
    with pytest.raises(StoreError, match=r"missing\.sqlite' does not exist"):
        await SqliteStore(path, create=False).open()
    assert not path.exists()


@pytest.mark.anyio
async def test_sqlite_refuses_a_directory(tmp_path: Path) -> None:
    with pytest.raises(StoreError, match="is a directory"):
        await SqliteStore(tmp_path).open()


@pytest.mark.parametrize("stamp", [b"\x00", "yesterday", "2026-01-01T00:00:00"], ids=["blob", "not-iso", "naive"])
@pytest.mark.anyio
async def test_sqlite_reports_a_damaged_deletion_time_as_a_store_error(tmp_path: Path, stamp: object) -> None:
    path = tmp_path / "s.sqlite"
    store = SqliteStore(path)
    await store.open()
    await store.close()
    with sqlite3.connect(path) as conn:  # by hand: a time no host writes
        conn.execute("INSERT INTO deletions (session_id, deleted_at) VALUES ('s-1', ?)", (stamp,))
    conn.close()
    store = SqliteStore(path)
    await store.open()
    try:
        with pytest.raises(StoreError, match=r"unreadable deletions row \('s-1'\).*ISO 8601 text with its offset") as caught:
            await store.deleted_at(SessionId("s-1"))
        assert caught.value.path == str(path)
    finally:
        await store.close()


@pytest.mark.anyio
async def test_sqlite_reports_a_damaged_row(tmp_path: Path) -> None:
    path = tmp_path / "s.sqlite"
    store = SqliteStore(path)
    await store.open()
    await store.create_session(sessions()[0], nodes()[0], None)
    await store.close()
    with sqlite3.connect(path) as conn:  # by hand, past the trigger that keeps records as written
        conn.execute("DROP TRIGGER sessions_never_change")
        conn.execute("""UPDATE sessions SET lineage = '{"kind": "graft"}'""")
    conn.close()
    store = SqliteStore(path)
    await store.open()  # opening reads no rows: the damage shows where a row is read
    try:
        with pytest.raises(StoreError, match=r"unreadable sessions row \('s-1'\).*'graft'"):
            await store.get_session(SessionId("s-1"))
        with pytest.raises(StoreError, match=r"unreadable sessions row \('s-1'\).*'graft'"):
            await store.read_all()
    finally:
        await store.close()


@pytest.mark.anyio
async def test_sqlite_concurrent_writes_all_land(tmp_path: Path) -> None:
    import anyio

    path = tmp_path / "s.sqlite"
    store = SqliteStore(path)
    await store.open()
    async with anyio.create_task_group() as tg:
        for i in range(50):
            sid = SessionId(f"n-{i}")
            tg.start_soon(
                store.create_session,
                attrs.evolve(sessions()[0], id=sid),
                attrs.evolve(nodes()[0], session_id=sid),
                None,
            )
    await store.close()
    state = await reopen(lambda: SqliteStore(path))
    assert sorted(n.session_id for n in state.nodes) == sorted(f"n-{i}" for i in range(50))
    assert sorted(s.id for s in state.sessions) == sorted(f"n-{i}" for i in range(50))

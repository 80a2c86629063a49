"""kill -9 a host at random moments: nothing acknowledged is lost, nothing is torn, the next host opens.

The writer (``crash_writer.py``, a subprocess) acknowledges each operation on stdout once
its await returns; after each kill the file is opened read-only and checked with the
store's one invariant checker. ``benchmarks/crash.py`` runs the same harness for 200 kills.
"""

from __future__ import annotations

import sqlite3
from contextlib import closing
from datetime import UTC, datetime
from pathlib import Path

from host_sim.lineage import SessionNode
from host_sim.stores import SessionRecord, StoredState, TurnRecord
from modular_sdk import AiPromptMessage, AiRunnerId, RootLineage, SessionId, TurnId, UserAuthor

from ..crash_writer import (
    Ack,
    AckedSession,
    AckedTurn,
    Acknowledged,
    compare,
    holds_a_store,
    run_crashes,
    violations_after_recovery,
)

KILLS = 15
SEED = 20261202


def test_killed_writers_lose_no_acknowledged_write_tear_no_session_and_always_restart(tmp_path: Path) -> None:
    logs = tmp_path / "logs"
    logs.mkdir()
    store = tmp_path / "crash.sqlite"

    report = run_crashes(store, logs, kills=KILLS, seed=SEED)

    assert report.failures == ()
    assert report.lost == ()
    assert report.torn == ()
    assert report.kills == KILLS
    assert report.opened >= KILLS // 2  # most kills land after the host opened, among its writes
    assert report.acknowledged >= KILLS
    assert violations_after_recovery(store) == []  # a host opening it marks the interrupted turns failed


T0 = datetime(2026, 1, 1, tzinfo=UTC)


def _state_with_one_root_and_one_running_turn() -> StoredState:
    session = SessionRecord(
        id=SessionId("s-1"),
        lineage=RootLineage(),
        metadata=None,
        model="echo",
        cwd="/",
        runner_id=AiRunnerId("echo:s-1"),
        created_at=T0,
    )
    turn = TurnRecord(
        id=TurnId("t-1"),
        session_id=SessionId("s-1"),
        ordinal=0,
        message=AiPromptMessage(text="hi"),
        message_id="m-1",
        author=UserAuthor(),
        runner_id=AiRunnerId("echo:s-1"),
        status="running",
        reply=None,
        error=None,
        started_at=T0,
        finished_at=None,
    )
    return StoredState(sessions=(session,), turns=(turn,), nodes=(SessionNode(session_id=SessionId("s-1"), created_at=T0),))


def test_the_harness_counts_an_acknowledged_session_or_turn_missing_from_the_store_as_lost() -> None:
    acked = Acknowledged()
    acked.add(Ack(op="create", sessions=(AckedSession(id="s-gone", kind="root"),)))
    acked.add(Ack(op="send", turns=(AckedTurn(id="t-gone", session_id="s-1", ordinal=1, status="completed"),)))

    lost, torn, running = compare(acked, _state_with_one_root_and_one_running_turn())

    assert lost == [
        "acknowledged root session 's-gone' is not in the store",
        "acknowledged turn 't-gone' of 's-1' is not in the store",
    ]
    assert (torn, running) == ([], ["t-1"])


def test_the_harness_counts_an_acknowledged_turn_stored_with_another_status_as_lost() -> None:
    acked = Acknowledged()
    acked.add(Ack(op="send", turns=(AckedTurn(id="t-1", session_id="s-1", ordinal=0, status="completed"),)))

    lost, torn, running = compare(acked, _state_with_one_root_and_one_running_turn())

    assert lost == ["turn 't-1' was acknowledged completed at 's-1'[0], stored running at 's-1'[0]"]
    assert [t.split(":")[0] for t in torn] == ["turn-running"]  # an acknowledged turn is never in flight
    assert running == []


def test_the_harness_counts_a_session_without_its_lineage_node_as_torn() -> None:
    state = _state_with_one_root_and_one_running_turn()
    lost, torn, _ = compare(Acknowledged(), StoredState(sessions=state.sessions))

    assert lost == []
    assert torn == ["index-stale: session 's-1' has no lineage node"]


def test_acknowledgement_lines_round_trip() -> None:
    ack = Ack(
        op="spawn",
        sessions=(AckedSession(id="s-2", kind="spawn"),),
        turns=(AckedTurn(id="t-9", session_id="s-2", ordinal=0, status="failed"),),
    )
    assert Ack.parse(ack.line()) == ack
    assert "\n" not in ack.line()


def test_the_harness_reads_a_file_left_by_a_writer_killed_in_its_first_open_as_no_store_yet(tmp_path: Path) -> None:
    # What a writer killed between creating the file and committing the schema leaves: an
    # SQLite file in WAL mode with no table. Nothing was acknowledged, so nothing is read back.
    left = tmp_path / "killed-while-opening.sqlite"
    with closing(sqlite3.connect(left)) as conn:
        conn.execute("PRAGMA journal_mode = WAL")
    made = tmp_path / "made.sqlite"
    with closing(sqlite3.connect(made)) as conn:
        conn.execute("CREATE TABLE meta (key TEXT, value TEXT)")

    assert not holds_a_store(tmp_path / "never-made.sqlite")
    assert not holds_a_store(left)
    assert holds_a_store(made)

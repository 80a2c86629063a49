"""``host-sim lineage`` and the tree renderer it shares with ``host-sim demo``."""

from __future__ import annotations

import argparse
import json
from datetime import UTC, datetime, timedelta
from pathlib import Path

import anyio
import attrs
import pytest

from host_sim import Host, PostgresStore
from host_sim.cli.testing import register_lineage as register
from host_sim.cli.testing import turn_counts
from host_sim.lineage import LineageArtifact, LineageEdge, SessionNode, render_lineage_tree
from host_sim.stores import SessionRecord, SqliteStore, StoredState, TurnRecord
from modular_sdk import (
    AiPromptMessage,
    AiRunnerId,
    AiSessionDisplayMetadata,
    CommandTrigger,
    ForkLineage,
    RootLineage,
    SessionId,
    SpawnLineage,
    ToolTrigger,
    TurnId,
    UnknownSessionError,
    UserAuthor,
)

from ..postgres_server import PostgresServer

T0 = datetime(2026, 5, 1, 9, 0, tzinfo=UTC)
RUNNER = AiRunnerId("echo-1")


def session(sid: str, lineage: RootLineage | ForkLineage | SpawnLineage, label: str | None = None) -> SessionRecord:
    return SessionRecord(
        id=SessionId(sid),
        lineage=lineage,
        metadata=None if label is None else AiSessionDisplayMetadata(label=label),
        model="echo",
        cwd="/work",
        runner_id=RUNNER,
        created_at=T0,
    )


def fork(parent: str, ordinal: int, depth: int = 1) -> ForkLineage:
    return ForkLineage(
        parent_session_id=SessionId(parent),
        parent_turn_ordinal=ordinal,
        parent_runner_id=RUNNER,
        depth=depth,
        forked_at=T0,
    )


def spawn(parent: str, depth: int = 1, tool: bool = False) -> SpawnLineage:
    return SpawnLineage(
        parent_session_id=SessionId(parent),
        parent_chat_uri=f"chat://{parent}",
        depth=depth,
        spawned_at=T0,
        trigger=ToolTrigger(mod_id="search", tool_name="find", call_id="c-1")
        if tool
        else CommandTrigger(mod_id="background-tasks", command_id="task"),
    )


SESSIONS = [
    session("s-1", RootLineage(), "Chat"),
    session("s-2", fork("s-1", 0), "Work: write the tests"),
    session("s-3", fork("s-2", 1, depth=2), "Report"),
    session("s-4", spawn("s-1")),
    session("s-5", RootLineage()),
    session("s-6", spawn("s-5", tool=True), 'say "hi"'),
]


def turn(sid: str, ordinal: int) -> TurnRecord:
    return TurnRecord(
        id=TurnId(f"{sid}/t{ordinal}"),
        session_id=SessionId(sid),
        ordinal=ordinal,
        message=AiPromptMessage(text="hello"),
        message_id=f"m-{sid}-{ordinal}",
        author=UserAuthor(),
        runner_id=RUNNER,
        status="completed",
        reply="hello",
        error=None,
        started_at=T0,
        finished_at=T0 + timedelta(seconds=1),
    )


TURNS = [turn("s-1", 0), turn("s-1", 1), turn("s-2", 1), turn("s-3", 2), turn("s-6", 0)]

EXPECTED_FOREST = """\
s-1  root  "Chat"  2 turns
├── s-2  fork@0  "Work: write the tests"  2 turns
│   └── s-3  fork@1  "Report"  3 turns
└── s-4  spawn via command background-tasks:task  0 turns
s-5  root  0 turns
└── s-6  spawn via tool search:find (call c-1)  "say \\"hi\\""  1 turn"""


def state() -> StoredState:
    nodes = tuple(SessionNode(session_id=s.id, created_at=T0) for s in SESSIONS)
    edges = (
        LineageEdge(
            from_session_id=SessionId("s-1"),
            to_session_id=SessionId("s-2"),
            relation="branched_from",
            created_at=T0,
            artifact=LineageArtifact(type="turn", source_id="s-1/t0", label="anchor turn"),
        ),
        LineageEdge(
            from_session_id=SessionId("s-4"),
            to_session_id=SessionId("s-3"),
            relation="used_result_of",
            created_at=T0,
            artifact=LineageArtifact(type="job_result", source_id="j-1", label="the job"),
        ),
    )
    return StoredState(sessions=tuple(SESSIONS), turns=tuple(TURNS), nodes=nodes, edges=edges)


@pytest.fixture
def store_path(tmp_path: Path) -> Path:
    path = tmp_path / "store.sqlite"

    async def write() -> None:
        store = SqliteStore(path)
        await store.open()
        data = state()
        structural = {e.to_session_id: e for e in data.edges if e.relation in ("branched_from", "spawned_by")}
        for s, n in zip(data.sessions, data.nodes, strict=True):
            await store.create_session(s, n, structural.get(s.id))
        for t in data.turns:
            await store.begin_turn(attrs.evolve(t, status="running", reply=None, error=None, finished_at=None))
            await store.finish_turn(t)
        for e in data.edges:
            if e.to_session_id not in structural:
                await store.save_edge(e)
        await store.close()

    anyio.run(write)
    return path


def run(*argv: str) -> int:
    parser = argparse.ArgumentParser(prog="host-sim")
    register(parser.add_subparsers(dest="command", required=True))
    args = parser.parse_args(["lineage", *argv])
    code: int = args.handler(args)
    return code


# -- render_lineage_tree ----------------------------------------------------------------


def test_forest_shows_kind_anchor_trigger_label_and_turns() -> None:
    assert render_lineage_tree(SESSIONS, turn_counts(state())) == EXPECTED_FOREST


def test_root_limits_the_tree_to_one_subtree() -> None:
    assert render_lineage_tree(SESSIONS, turn_counts(state()), root=SessionId("s-2")) == (
        's-2  fork@0  "Work: write the tests"  2 turns\n'
        '└── s-3  fork@1  "Report"  3 turns'
    )


def test_unknown_root_is_refused() -> None:
    with pytest.raises(UnknownSessionError, match=r"root 'zz' is not among the 6 sessions"):
        render_lineage_tree(SESSIONS, {}, root=SessionId("zz"))


def test_missing_turn_counts_and_orphans_are_shown_plainly() -> None:
    orphan = session("s-9", fork("gone", 3), "Orphan")
    assert render_lineage_tree([orphan], {}) == 's-9  fork@3  "Orphan"  (parent gone not shown)'


def test_agent_roots_name_their_agent() -> None:
    record = attrs.evolve(session("a-1", RootLineage()), agent_id="reviewer")
    assert render_lineage_tree([record], {SessionId("a-1"): 1}) == "a-1  root (agent reviewer)  1 turn"


def test_turn_counts_include_a_forks_copied_turns() -> None:
    assert turn_counts(state()) == {"s-1": 2, "s-2": 2, "s-3": 3, "s-4": 0, "s-5": 0, "s-6": 1}


# -- the command --------------------------------------------------------------------------


def test_prints_the_forest_and_other_edges(store_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert run("--store", str(store_path)) == 0
    out = capsys.readouterr().out
    assert out == EXPECTED_FOREST + "\n\nother lineage edges:\n  s-4 -> s-3  used_result_of  [job_result j-1: the job]\n"


def test_session_prints_only_its_chain(store_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert run("--store", str(store_path), "s-2") == 0
    out = capsys.readouterr().out
    assert out == (
        's-1  root  "Chat"  2 turns\n'
        '└── s-2  fork@0  "Work: write the tests"  2 turns\n'
        '    ↳ s-3  fork@1  "Report"  3 turns\n'  # an only child of a last child: the chain's column
    )


def test_json_keeps_lineage_tags_and_turn_counts(store_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert run("--store", str(store_path), "--json", "s-3") == 0
    doc = json.loads(capsys.readouterr().out)
    assert [s["id"] for s in doc["sessions"]] == ["s-1", "s-2", "s-3"]
    assert [s["lineage"]["kind"] for s in doc["sessions"]] == ["root", "fork", "fork"]
    assert [s["turn_count"] for s in doc["sessions"]] == [2, 2, 3]
    assert doc["edges"] == [
        {
            "from_session_id": "s-1",
            "to_session_id": "s-2",
            "relation": "branched_from",
            "created_at": "2026-05-01T09:00:00+00:00",
            "artifact": {"type": "turn", "source_id": "s-1/t0", "label": "anchor turn"},
        }
    ]
    assert [n["session_id"] for n in doc["nodes"]] == ["s-1", "s-2", "s-3"]


def test_unknown_session_suggests_close_ids(store_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert run("--store", str(store_path), "s-7") == 1
    err = capsys.readouterr().err
    assert "host-sim lineage: error: no session 's-7' in" in err
    assert "(6 stored); did you mean 's-6', 's-5', 's-4'?" in err


def test_missing_store_is_an_error_and_is_not_created(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "nope.sqlite"
    assert run("--store", str(path)) == 1
    err = capsys.readouterr().err
    assert f"host-sim lineage: error: no store at '{path}'; host-sim run, chat and demo write" in err
    assert "run one of them first, or pass --store PATH of a store they wrote" in err
    assert not path.exists()


def test_a_file_that_is_not_a_store_is_an_error(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "notes.txt"
    path.write_text("not sqlite " * 200)
    assert run("--store", str(path)) == 1
    assert "is not a SQLite database" in capsys.readouterr().err


def test_empty_store_says_so(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "empty.sqlite"

    async def create() -> None:
        store = SqliteStore(path)
        await store.open()
        await store.close()

    anyio.run(create)
    assert run("--store", str(path)) == 0
    assert capsys.readouterr().out == f"no sessions in '{path}'\n"


def test_store_defaults_to_the_environment(store_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.setenv("HOST_SIM_STORE", str(store_path))
    assert run("s-6") == 0
    assert capsys.readouterr().out == 's-5  root  0 turns\n└── s-6  spawn via tool search:find (call c-1)  "say \\"hi\\""  1 turn\n'


def test_forward_and_backward_read_a_postgres_store_named_by_its_url(
    postgres: PostgresServer, capsys: pytest.CaptureFixture[str]
) -> None:
    postgres_dsn = postgres.database()
    url = postgres.url(postgres_dsn.rsplit("dbname=", 1)[1])

    async def write() -> tuple[str, str]:
        async with Host(store=PostgresStore(postgres_dsn)) as host:
            chat = await host.sessions.create()
            turn = await chat.send(AiPromptMessage(text="Alice lives in Lisbon"))
            record = await host.memory.record(chat, "Alice lives in Lisbon", kind="fact", cites=(turn.id,))
            return turn.id, record.id

    turn_id, record_id = anyio.run(write)

    assert run("--store", url, "--forward", turn_id, "--json") == 0
    forward = json.loads(capsys.readouterr().out)
    assert record_id in json.dumps(forward)
    assert run("--store", url, "--backward", record_id) == 0
    assert turn_id in capsys.readouterr().out
    assert run("--store", url, "--backward", "turn_nope") == 1
    err = capsys.readouterr().err
    assert "turn_nope" in err and "postgresql://" in err

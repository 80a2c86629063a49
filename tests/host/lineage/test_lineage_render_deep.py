"""The lineage tree at depths users make: no recursion, text linear in the sessions.

The records are built directly (100,000 forks through a `Host` would take minutes); the
command's own path through a `SqliteStore` is tested at a depth that overflowed the old
recursive renderer.
"""

from __future__ import annotations

import argparse
from datetime import UTC, datetime
from pathlib import Path

import anyio
import pytest

from host_sim.cli.testing import register_lineage as register
from host_sim.lineage import LineageArtifact, LineageEdge, SessionNode, render_lineage_tree
from host_sim.stores import SessionRecord, SqliteStore
from modular_sdk import AiRunnerId, ForkLineage, RootLineage, SessionId

T0 = datetime(2026, 5, 1, 9, 0, tzinfo=UTC)
RUNNER = AiRunnerId("echo-1")


def record(sid: str, parent: str | None = None, anchor: int = 0, depth: int = 0) -> SessionRecord:
    lineage = (
        RootLineage()
        if parent is None
        else ForkLineage(
            parent_session_id=SessionId(parent),
            parent_turn_ordinal=anchor,
            parent_runner_id=RUNNER,
            depth=depth,
            forked_at=T0,
        )
    )
    return SessionRecord(
        id=SessionId(sid), lineage=lineage, metadata=None, model="echo", cwd="/work", runner_id=RUNNER, created_at=T0
    )


def chain(depth: int) -> list[SessionRecord]:
    """A root and ``depth`` forks, each of the one before at its last turn."""
    return [record("c-0")] + [record(f"c-{i}", f"c-{i - 1}", i - 1, i) for i in range(1, depth + 1)]


def ids_in(text: str) -> list[str]:
    """The session id of every line, in order (ids are the first word after the tree's glyphs)."""
    return [line.lstrip(" │├└─↳").split("  ", 1)[0] for line in text.splitlines()]


def test_a_chain_100000_deep_renders_as_one_column() -> None:
    sessions = chain(100_000)
    counts = {s.id: i + 1 for i, s in enumerate(sessions)}
    text = render_lineage_tree(sessions, counts)
    lines = text.splitlines()
    assert lines[:3] == ["c-0  root  1 turn", "└── c-1  fork@0  2 turns", "    ↳ c-2  fork@1  3 turns"]
    assert lines[-1] == "    ↳ c-100000  fork@99999  100001 turns"
    assert len(lines) == 100_001
    assert max(len(line) - len(line.lstrip(" └─↳")) for line in lines) == 6
    assert len(text) < 40 * len(sessions)  # linear: the line's own text, no depth-wide indentation


def test_a_comb_moves_deep_subtrees_to_the_margin_and_shows_every_session_once() -> None:
    """Each session of the spine has a later sibling, so the spine is never a column."""
    sessions = [record("k-0")]
    for i in range(1, 20_001):
        sessions.append(record(f"k-{i}", f"k-{i - 1}", i - 1, i))
        sessions.append(record(f"leaf-{i}", f"k-{i - 1}", i - 1, i))
    text = render_lineage_tree(sessions, {})
    assert sorted(ids_in(text)) == sorted(s.id for s in sessions)
    assert max(len(line) for line in text.splitlines()) <= 16 * 4 + 60  # indentation stops at 16 levels
    assert len(text) < 100 * len(sessions)
    assert "k-16  fork@15  (its 2 children continue below)" in text
    assert "k-17  fork@16  (child of k-16, continued from above)" in text


def test_a_chain_below_a_branch_with_siblings_keeps_its_branch_then_runs_in_a_column() -> None:
    sessions = [
        record("s-1"),
        record("s-2", "s-1", 0, 1),
        record("s-3", "s-2", 1, 2),
        record("s-4", "s-3", 2, 3),
        record("s-5", "s-4", 3, 4),
        record("s-6", "s-4", 3, 4),
        record("s-7", "s-1", 0, 1),
    ]
    assert render_lineage_tree(sessions, {}) == (
        "s-1  root\n"
        "├── s-2  fork@0\n"
        "│   └── s-3  fork@1\n"
        "│       ↳ s-4  fork@2\n"
        "│       ├── s-5  fork@3\n"
        "│       └── s-6  fork@3\n"
        "└── s-7  fork@0"
    )


def test_an_only_child_in_a_column_is_marked_as_the_child_of_the_line_above() -> None:
    """The demo's tree: "Task report" is forked from Task, and never reads as Task's sibling."""
    sessions = [record("chat"), record("task", "chat", 0, 1), record("report", "task", 1, 2), record("other", "chat", 0, 1)]
    assert render_lineage_tree(sessions[:3], {}) == "chat  root\n└── task  fork@0\n    ↳ report  fork@1"
    assert render_lineage_tree(sessions, {}) == (
        "chat  root\n├── task  fork@0\n│   └── report  fork@1\n└── other  fork@0"
    )


def test_lineage_that_loops_is_drawn_once_without_recursing() -> None:
    """Only a damaged store holds a loop; the renderer still ends."""
    sessions = [record(f"l-{i}", f"l-{(i - 1) % 5000}", 0, 1) for i in range(5000)]
    lines = render_lineage_tree(sessions, {}).splitlines()
    assert len(lines) == 5001
    assert lines[-1].endswith("(already shown above)")


@pytest.fixture
def deep_store(tmp_path: Path) -> Path:
    """A SqliteStore holding a fork chain 3,000 deep (the old renderer overflowed at ~1,000)."""
    path = tmp_path / "deep.sqlite"

    async def write() -> None:
        store = SqliteStore(path)
        await store.open()
        sessions = chain(3_000)

        async def create(s: SessionRecord) -> None:
            parent = s.lineage.parent_session_id if s.lineage.kind == "fork" else None
            edge = (
                None
                if parent is None
                else LineageEdge(
                    from_session_id=parent,
                    to_session_id=s.id,
                    relation="branched_from",
                    created_at=T0,
                    artifact=LineageArtifact(type="turn", source_id=f"{parent}/t", label="anchor turn"),
                )
            )
            await store.create_session(s, SessionNode(session_id=s.id, created_at=T0), edge)

        async with anyio.create_task_group() as tg:  # concurrent calls share a commit
            for s in sessions:
                tg.start_soon(create, s)
        await store.close()

    anyio.run(write)
    return path


def test_the_command_prints_a_deep_chain_from_a_store(deep_store: Path, capsys: pytest.CaptureFixture[str]) -> None:
    parser = argparse.ArgumentParser(prog="host-sim")
    register(parser.add_subparsers(dest="command", required=True))
    args = parser.parse_args(["lineage", "--store", str(deep_store), "c-1500"])
    assert args.handler(args) == 0
    out = capsys.readouterr().out
    assert sorted(ids_in(out)) == sorted(f"c-{i}" for i in range(3_001))
    assert len(out) < 40 * 3_001

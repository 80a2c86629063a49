"""``host-sim demo``, ``run`` and ``chat`` as a person at a terminal uses them."""

from __future__ import annotations

import argparse
from collections.abc import Iterator
from pathlib import Path

import pytest

from host_sim._cli import main
from host_sim.cli.testing import run_chat

from ..postgres_server import PostgresServer

ROOT = Path(__file__).resolve().parents[3]
TASK = str(ROOT / "host_sim" / "examples" / "background_tasks.py")


@pytest.fixture(autouse=True)
def _in_a_fresh_folder(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """``run``, ``chat`` and ``demo`` keep sessions in .host-sim/ of the working directory."""
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("HOST_SIM_STORE", raising=False)


def test_demo_runs_task_and_prints_transcripts_and_the_lineage_tree(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["demo"]) == 0
    out = capsys.readouterr().out
    assert "Started task ses_" in out
    assert "[notification, system event from mod background-tasks /task] Task finished: write the tests" in out
    assert "fork@0" in out and '"Task"' in out
    assert "fork@1" in out and '"Task report"' in out


def test_demo_runs_on_trio_too(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["demo", "--backend", "trio"]) == 0
    assert "fork@1" in capsys.readouterr().out


def test_run_prints_each_answer_and_fails_when_a_message_fails(capsys: pytest.CaptureFixture[str]) -> None:
    code = main(["run", TASK, "-m", "Refactor the parser", "-m", "/task write the tests", "-m", "/tsak x"])
    out = capsys.readouterr().out
    assert code == 1
    assert "echo: Refactor the parser" in out
    assert "Started task ses_" in out
    assert "error: unknown command '/tsak'; did you mean '/task'?" in out


def test_run_continues_a_stored_session(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    store = str(tmp_path / "store.sqlite")
    assert main(["run", TASK, "--store", store, "-m", "first"]) == 0
    session_id = capsys.readouterr().out.splitlines()[0].removeprefix("session ")
    assert main(["run", TASK, "--store", store, "--session", session_id, "-m", "/task go", "--transcript"]) == 0
    out = capsys.readouterr().out
    assert "Started task ses_" in out
    assert "#0 [user] first" in out


def test_run_reports_an_unknown_session_without_a_traceback(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code = main(["run", TASK, "--store", str(tmp_path / "x.sqlite"), "--session", "nope", "-m", "hi"])
    captured = capsys.readouterr()
    assert code == 1
    assert "no session 'nope'" in captured.err
    assert "Traceback" not in captured.err


def test_chat_lists_commands_and_runs_them(capsys: pytest.CaptureFixture[str]) -> None:
    lines: Iterator[str] = iter(["hello", "/?", "/ta?", "/task write it", "/quit"])

    def read(prompt: str) -> str:
        return next(lines)

    args = argparse.Namespace(specs=[TASK], store=None, no_store=True, timeout=5.0, backend="asyncio")
    assert run_chat(args, read) == 0
    out = capsys.readouterr().out
    assert "echo: hello" in out
    assert "/task <prompt>  Fork this conversation and run background work.  (background-tasks)" in out
    assert "Started task ses_" in out


def test_chat_leaves_at_end_of_input(capsys: pytest.CaptureFixture[str]) -> None:
    def read(prompt: str) -> str:
        raise EOFError

    args = argparse.Namespace(specs=[], store=None, no_store=True, timeout=5.0, backend="trio")
    assert run_chat(args, read) == 0


def test_run_and_demo_keep_their_sessions_in_a_postgres_store_given_by_url(
    postgres: PostgresServer, capsys: pytest.CaptureFixture[str]
) -> None:
    """``--store URL`` takes a PostgreSQL URL as lineage, fsck and mcp do (one option parser)."""
    postgres_dsn = postgres.url(postgres.database().rpartition("dbname=")[2])
    assert main(["run", TASK, "--store", postgres_dsn, "-m", "first"]) == 0
    session = capsys.readouterr().out.splitlines()[0].removeprefix("session ")
    assert main(["run", TASK, "--store", postgres_dsn, "--session", session, "-m", "second", "--transcript"]) == 0
    out = capsys.readouterr().out
    assert "#0 [user] first" in out and "#1 [user] second" in out  # another host read the first turn back
    assert main(["demo", "--store", postgres_dsn]) == 0
    capsys.readouterr()
    assert main(["lineage", "--store", postgres_dsn]) == 0
    assert session in capsys.readouterr().out
    assert not Path(".host-sim").exists()  # nothing was made beside the database

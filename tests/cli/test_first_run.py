"""A newcomer's first run: the wheel's ``host-sim demo``, ``--version``, the shipped example."""

from __future__ import annotations

from pathlib import Path

from ._support import ROOT, Installed, host_sim, no_traceback


def test_every_example_exists_once_in_the_tree_no_copies() -> None:
    """The wheel ships host_sim/examples/ itself: ``host-sim demo`` and the docs import it, so
    no byte-for-byte copy of a module (the old host_sim/_examples/) can drift from it."""
    seen: dict[bytes, Path] = {}
    copies: list[str] = []
    for folder in ("modular_sdk", "host_sim", "examples", "tools", "benchmarks"):
        for path in sorted((ROOT / folder).rglob("*.py")):
            text = path.read_bytes()
            if len(text) < 200:  # an empty __init__, a one-line shim
                continue
            if text in seen:
                copies.append(f"{path.relative_to(ROOT)} is a copy of {seen[text].relative_to(ROOT)}")
            seen.setdefault(text, path)
    assert not copies, copies
    assert not (ROOT / "host_sim" / "_examples").exists()
    # examples/ keeps the checkout's paths (API section 1) by re-exporting the shipped modules
    for path in sorted((ROOT / "examples").rglob("*.py")):
        if path.name != "__init__.py" or path.parent.name == "integration":
            assert "from host_sim.examples" in path.read_text(encoding="utf-8"), path


def test_the_shipped_examples_are_mod_specs_from_any_folder(installed: Installed, user_dir: Path) -> None:
    result = host_sim(installed, user_dir, "run", "host_sim.examples.background_tasks", "--no-store", "-m", "Refactor the parser", "-m", "/task write the tests")
    no_traceback(result)
    assert result.code == 0, result.err
    assert "Started task ses_" in result.out


def test_demo_runs_from_the_wheel_in_an_empty_folder(installed: Installed, user_dir: Path) -> None:
    result = host_sim(installed, user_dir, "demo")
    no_traceback(result)
    assert result.code == 0, result.err
    assert "Started task ses_" in result.out
    assert "[notification, system event from mod background-tasks /task] Task finished: write the tests" in result.out
    assert "fork@1" in result.out and '"Task report"' in result.out
    assert "sessions kept in .host-sim/store.sqlite" in result.out
    assert (user_dir / ".host-sim" / "store.sqlite").is_file()


def test_demo_then_lineage_shows_the_demo_sessions(installed: Installed, user_dir: Path) -> None:
    assert host_sim(installed, user_dir, "demo").code == 0
    result = host_sim(installed, user_dir, "lineage")
    assert result.code == 0, result.err
    assert 'fork@0  "Task"' in result.out and 'fork@1  "Task report"' in result.out


def test_demo_twice_shows_only_its_own_sessions(installed: Installed, user_dir: Path) -> None:
    assert host_sim(installed, user_dir, "demo").code == 0
    second = host_sim(installed, user_dir, "demo")
    assert second.code == 0, second.err
    assert second.out.count("== transcript of ") == 3


def test_demo_no_store_writes_nothing(installed: Installed, user_dir: Path) -> None:
    assert host_sim(installed, user_dir, "demo", "--no-store").code == 0
    assert list(user_dir.iterdir()) == []


def test_version(installed: Installed, user_dir: Path) -> None:
    result = host_sim(installed, user_dir, "--version")
    assert result.code == 0
    assert result.out.startswith("host-sim 0.")


def test_every_help_is_plain_text_with_every_argument_explained(installed: Installed, user_dir: Path) -> None:
    for command in ("demo", "run", "chat", "manifest", "check", "lineage", "fsck", "forget", "emit", "trace"):
        result = host_sim(installed, user_dir, command, "--help")
        assert result.code == 0, command
        assert "``" not in result.out and ":class:" not in result.out, (command, result.out)
        assert "TIMEOUT" not in result.out, command  # every time limit is --timeout SECONDS
    chat = host_sim(installed, user_dir, "chat", "--help").out
    assert "SPEC                  mod spec: path/to/file.py or package.module" in chat
    assert "Ctrl-C      cancels the running commands" in chat

"""host-sim manifest and host-sim check."""

from __future__ import annotations

import argparse
import json
from collections.abc import Callable
from pathlib import Path

import pytest

from host_sim.cli.testing import register_check, register_manifest
from host_sim.fold import Manifest, build_manifest

from ._support import FIXTURES, fixture, where


def _run(*argv: str) -> int:
    parser = argparse.ArgumentParser(prog="host-sim")
    sub = parser.add_subparsers(dest="command", required=True)
    register_manifest(sub)
    register_check(sub)
    args = parser.parse_args(argv)
    handler: Callable[[argparse.Namespace], int] = args.handler
    return handler(args)


def test_manifest_prints_the_json(capsys: pytest.CaptureFixture[str]) -> None:
    assert _run("manifest", fixture("fx_pure")) == 0
    out = capsys.readouterr().out
    assert out == build_manifest(fixture("fx_pure")).to_json()


def test_manifest_writes_a_file(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    target = tmp_path / "manifest.json"
    assert _run("manifest", fixture("fx_pure"), "-o", str(target)) == 0
    assert Manifest.from_json(target.read_bytes()).id == "pure-fixture"
    assert capsys.readouterr().out == ""


def test_manifest_refusal_goes_to_stderr_with_exit_1(capsys: pytest.CaptureFixture[str]) -> None:
    assert _run("manifest", fixture("fx_os_write")) == 1
    captured = capsys.readouterr()
    assert captured.out == ""
    assert captured.err.startswith("host-sim manifest: cannot build the manifest of")
    assert "writes to stdout (os.write(1, ...))" in captured.err
    assert "Traceback" not in captured.err


def test_manifest_reports_an_unwritable_output(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert _run("manifest", fixture("fx_pure"), "-o", str(tmp_path / "missing" / "m.json")) == 1
    assert "cannot write" in capsys.readouterr().err


def test_check_passes_good_mods(capsys: pytest.CaptureFixture[str]) -> None:
    assert _run("check", fixture("fx_pure"), "host_sim/examples/background_tasks.py") == 0
    out = capsys.readouterr().out
    assert "ok      host_sim/examples/background_tasks.py: background-tasks (1 command)" in out
    assert out.endswith("checked 2 mods: 2 ok, 0 failed\n")


def test_check_reports_every_problem_of_every_mod(capsys: pytest.CaptureFixture[str]) -> None:
    specs = [fixture("fx_many"), fixture("fx_pure"), fixture("fx_attrs"), fixture("fx_drift"), "nope.py"]
    assert _run("check", *specs) == 1
    out = capsys.readouterr().out
    for marker in ("effect: print", "effect: sleep", "effect: listdir"):
        assert where(FIXTURES / "fx_many.py", marker) in out
    assert "has no attribute 'mod'" in out
    assert "drift: commands[0].description" in out
    assert "file 'nope.py' not found" in out
    assert out.count("FAILED  ") == 4
    assert out.endswith("checked 5 mods: 1 ok, 4 failed\n")


def test_check_json(capsys: pytest.CaptureFixture[str]) -> None:
    assert _run("check", "--json", fixture("fx_pure"), fixture("fx_thread")) == 1
    report = json.loads(capsys.readouterr().out)
    assert report["ok"] is False
    assert [(m["spec"], m["ok"], m["id"]) for m in report["mods"]] == [
        (fixture("fx_pure"), True, "pure-fixture"),
        (fixture("fx_thread"), False, None),
    ]
    assert report["mods"][1]["problems"] == [
        f"{where(FIXTURES / 'fx_thread.py', 'effect: thread')}: starts a thread 'poller' (threading.Thread.start)"
    ]


def test_check_json_all_ok(capsys: pytest.CaptureFixture[str]) -> None:
    assert _run("check", "--json", fixture("fx_pure")) == 0
    assert json.loads(capsys.readouterr().out)["ok"] is True


def test_check_flags_two_mods_with_the_same_id(capsys: pytest.CaptureFixture[str]) -> None:
    assert _run("check", "host_sim/examples/background_tasks.py", "host_sim.examples.background_tasks") == 1
    assert "mod id 'background-tasks' is also the id of 'host_sim/examples/background_tasks.py'" in capsys.readouterr().out

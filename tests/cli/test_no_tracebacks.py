"""Bad input on the command line is an error message that says what to do, never a traceback."""

from __future__ import annotations

import ast
import contextlib
import json
import os
import select
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path
from typing import Final

import pytest

from ._support import FIXTURES, Installed, Result, clean_env, host_sim, no_traceback

WORKBENCH = str(FIXTURES / "workbench.py")
SLOW_IMPORT = "n = 0\nwhile n >= 0:  # an import that computes for as long as it is let\n    n += 1\n"


def test_backend_trio_without_trio_installed(installed: Installed, user_dir: Path) -> None:
    result = host_sim(installed, user_dir, "demo", "--backend", "trio")
    no_traceback(result)
    assert result.code == 2
    assert "argument --backend: 'trio' needs the trio package, which is not installed here" in result.err
    assert "or use --backend asyncio" in result.err


@pytest.mark.parametrize("value", ["0", "-1", "nan", "inf", "soon"])
@pytest.mark.parametrize(
    "command",
    [["run", WORKBENCH, "-m", "hi"], ["manifest", WORKBENCH], ["check", WORKBENCH], ["chat", WORKBENCH]],
    ids=["run", "manifest", "check", "chat"],
)
def test_timeout_must_be_a_positive_number(installed: Installed, user_dir: Path, command: list[str], value: str) -> None:
    result = host_sim(installed, user_dir, *command, "--timeout", value)
    no_traceback(result)
    assert result.code == 2
    assert f"host-sim {command[0]}: error: argument --timeout: {value!r} is not a" in result.err
    assert "like 30 or 2.5" in result.err


def test_manifest_of_two_specs_names_both_and_suggests_check(installed: Installed, user_dir: Path) -> None:
    result = host_sim(installed, user_dir, "manifest", "a.py", "b.py")
    no_traceback(result)
    assert result.code == 2
    assert result.err.startswith("host-sim manifest: error: manifest builds one mod")
    assert "manifest builds one mod, got 2 specs ('a.py', 'b.py')" in result.err
    assert "host-sim check a.py b.py" in result.err


def test_a_module_whose_mod_is_not_a_mod(installed: Installed, user_dir: Path) -> None:
    (user_dir / "notamod.py").write_text("mod = 42\n")
    result = host_sim(installed, user_dir, "manifest", "notamod.py")
    no_traceback(result)
    assert result.code == 1
    assert "notamod.mod is 42 (an int), not a Mod; set it to define_mod(...)" in result.err


def test_a_missing_attribute_is_advised_by_its_own_name(installed: Installed, user_dir: Path) -> None:
    (user_dir / "nomod.py").write_text("x = 1\n")
    result = host_sim(installed, user_dir, "manifest", "nomod.py:other")
    assert result.code == 1
    assert "has no attribute 'other'; it defines no Mod value: define one as `other = define_mod(...)`" in result.err


def test_run_with_an_explicit_store_in_a_missing_folder_is_an_error(installed: Installed, user_dir: Path) -> None:
    target = user_dir / "nonexistent" / "dir" / "s.sqlite"
    result = host_sim(installed, user_dir, "run", "-m", "hi", "--store", str(target))
    no_traceback(result)
    assert result.code == 1
    assert f"its folder {str(target.parent)!r} does not exist" in result.err
    assert not (user_dir / "nonexistent").exists()


def test_a_usage_error_says_what_is_wrong_first_then_where_the_options_are(installed: Installed, user_dir: Path) -> None:
    result = host_sim(installed, user_dir, "run", WORKBENCH)
    assert result.code == 2
    assert result.err == (
        "host-sim run: error: nothing to do: pass -m TEXT, --palette ID, --view ID --data JSON, "
        "--tool NAME --input JSON or --widget ID --data JSON\n"
        "(all options: host-sim run --help)\n"
    )
    assert "usage:" not in result.err


def test_session_with_no_store_is_a_usage_error(installed: Installed, user_dir: Path) -> None:
    result = host_sim(installed, user_dir, "run", "-m", "hi", "--no-store", "--session", "ses_x")
    assert result.code == 2
    assert "--session ses_x continues a stored session: drop --no-store" in result.err


def test_an_unknown_session_names_the_store_and_how_to_list_it(installed: Installed, user_dir: Path) -> None:
    assert host_sim(installed, user_dir, "demo").code == 0
    result = host_sim(installed, user_dir, "run", "-m", "hi", "--session", "ses_nope")
    no_traceback(result)
    assert result.code == 1
    assert "no session 'ses_nope' in the store '.host-sim/store.sqlite'" in result.err
    assert "host-sim lineage --store .host-sim/store.sqlite" in result.err
    assert "host.sessions.create()" not in result.err


def test_lineage_of_a_missing_store_says_what_writes_one(installed: Installed, user_dir: Path) -> None:
    result = host_sim(installed, user_dir, "lineage", "--store", "bogus.sqlite")
    no_traceback(result)
    assert result.code == 1
    assert "no store at 'bogus.sqlite'; host-sim run, chat and demo write" in result.err
    assert "new path to create" not in result.err
    assert not (user_dir / "bogus.sqlite").exists()


def test_lineage_of_a_file_that_is_not_a_store(installed: Installed, user_dir: Path) -> None:
    (user_dir / "bogus.sqlite").write_text("not a database")
    result = host_sim(installed, user_dir, "lineage", "--store", "bogus.sqlite")
    no_traceback(result)
    assert result.code == 1
    assert "is not a SQLite database" in result.err
    assert "new path to create" not in result.err


# -- a closed pipe and Ctrl-C: the two ways a user ends a command early ----------------------


def _closed_pipe(installed: Installed, cwd: Path, *args: str) -> subprocess.CompletedProcess[str]:
    """Run ``host-sim ARGS`` with a standard output whose reader is gone (``| head`` done)."""
    read_end, write_end = os.pipe()
    os.close(read_end)
    try:
        return subprocess.run(
            [installed.host_sim, *args], cwd=cwd, stdout=write_end, stderr=subprocess.PIPE, stdin=subprocess.DEVNULL,
            text=True, timeout=120, check=False, env=clean_env(),
        )  # fmt: skip
    finally:
        os.close(write_end)


@pytest.fixture
def demo_dir(installed: Installed, user_dir: Path) -> Path:
    assert host_sim(installed, user_dir, "demo").code == 0
    return user_dir


@pytest.mark.parametrize(
    "command",
    [
        ["lineage", "--json"],
        ["lineage"],
        ["fsck"],
        ["fsck", "--json"],
        ["demo"],
        ["run", WORKBENCH, "-m", "/fast", "--no-store"],
        ["check", WORKBENCH],
        ["manifest", WORKBENCH],
        ["trace", "--json", "nothing"],
        ["--help"],
        ["run", "--help"],
    ],
    ids=lambda c: " ".join(c).replace(WORKBENCH, "MOD"),
)
def test_a_closed_pipe_ends_the_command_quietly_with_status_0(installed: Installed, demo_dir: Path, command: list[str]) -> None:
    done = _closed_pipe(installed, demo_dir, *command)
    assert done.stderr == "" or command[0] == "trace", done.stderr
    assert "Traceback" not in done.stderr and "Broken pipe" not in done.stderr
    assert done.returncode == (1 if command[0] == "trace" else 0)


def test_forget_into_a_closed_pipe_shows_nothing_and_erases_nothing(installed: Installed, demo_dir: Path) -> None:
    turns = json.loads(host_sim(installed, demo_dir, "lineage", "--json").out)["sessions"]
    first = host_sim(installed, demo_dir, "lineage", "--forward", _a_turn_id(installed, demo_dir), "--json")
    assert first.code == 0, first.err
    done = _closed_pipe(installed, demo_dir, "forget", _a_turn_id(installed, demo_dir))
    assert (done.returncode, done.stderr) == (0, "")
    assert json.loads(host_sim(installed, demo_dir, "lineage", "--json").out)["sessions"] == turns


def _a_turn_id(installed: Installed, cwd: Path) -> str:
    import sqlite3

    with contextlib.closing(sqlite3.connect(f"file:{cwd / '.host-sim' / 'store.sqlite'}?mode=ro", uri=True)) as db:
        row = db.execute("SELECT id FROM turns ORDER BY rowid LIMIT 1").fetchone()
    assert row is not None
    return str(row[0])


class _Started:
    """A ``host-sim`` in a process group of its own, as a shell starts a foreground job."""

    def __init__(self, installed: Installed | None, cwd: Path, *args: str, stdin: int | None = None) -> None:
        command = [installed.host_sim] if installed is not None else [sys.executable, "-m", "host_sim"]
        self.proc = subprocess.Popen(
            [*command, *args], cwd=cwd, stdin=subprocess.DEVNULL if stdin is None else stdin,
            stdout=subprocess.PIPE, stderr=subprocess.PIPE, bufsize=0, env=clean_env(), start_new_session=True,
        )  # fmt: skip
        self._out = b""

    def wait_for(self, text: str, timeout: float = 60) -> None:
        """Read standard output (unbuffered: select sees every byte) until ``text`` shows."""
        assert self.proc.stdout is not None
        fd = self.proc.stdout.fileno()
        deadline = time.monotonic() + timeout
        while text.encode() not in self._out:
            assert time.monotonic() < deadline, f"{text!r} never printed; got {self._out!r}"
            ready, _, _ = select.select([fd], [], [], 0.2)
            if ready:
                chunk = os.read(fd, 65536)
                assert chunk, f"the command ended before printing {text!r}: {self._out!r}"
                self._out += chunk

    def ctrl_c(self) -> None:
        """What the terminal does on Ctrl-C: SIGINT to the whole foreground process group."""
        os.killpg(self.proc.pid, signal.SIGINT)

    def finish(self, timeout: float = 30) -> Result:
        try:
            out, err = self.proc.communicate(timeout=timeout)
        except subprocess.TimeoutExpired:
            self.proc.kill()  # (and its pipes read and closed: nothing left for a later test to trip on)
            out, err = self.proc.communicate()
            raise AssertionError(
                f"still running {timeout} s after the last step; out {(self._out + out).decode()!r}, err {err.decode()!r}"
            ) from None
        return Result(code=self.proc.returncode, out=(self._out + out).decode(), err=err.decode())


def _interrupted(result: Result, command: str) -> None:
    no_traceback(result)
    assert result.code == 130, result
    assert result.err.strip() == f"host-sim {command}: interrupted", result.err


PYTHONS_OWN_START: Final = "Fatal Python error: init_import_site: Failed to import the site module"
"""What the interpreter prints when a Ctrl-C lands while it imports ``site``, before any script runs."""


def _in_the_launcher_before_our_code(err: str) -> bool:
    """A traceback of Python's own ``KeyboardInterrupt`` raised in the interpreter's start
    (``site``) or the launcher's imports, before any module of host_sim or modular_sdk ran:
    no frame in a file of ours (the launcher's own line ``from host_sim._cli import main``
    names the package, and a Ctrl-C while Python's import machinery looks for it is Python's)."""
    lines = err.strip().splitlines()
    frames = [line for line in lines if line.lstrip().startswith('File "')]
    return (
        bool(lines)
        and lines[0] in ("Traceback (most recent call last):", PYTHONS_OWN_START)
        and lines[-1] == "KeyboardInterrupt"
        and not any("/host_sim/" in frame or "/modular_sdk/" in frame for frame in frames)
    )


def test_the_launcher_window_is_told_from_a_traceback_of_ours() -> None:
    launcher = (
        'Traceback (most recent call last):\n  File "/venv/bin/host-sim", line 3, in <module>\n    import re\n'
        '  File "/usr/lib/python3.11/enum.py", line 5, in <module>\n    from functools import reduce\nKeyboardInterrupt\n'
    )
    ours = launcher.replace("/usr/lib/python3.11/enum.py", "/venv/lib/python3.11/site-packages/host_sim/_cli.py")
    assert _in_the_launcher_before_our_code(launcher)
    assert not _in_the_launcher_before_our_code(ours)
    assert not _in_the_launcher_before_our_code(launcher.replace("KeyboardInterrupt", "ValueError: boom"))
    finding_the_package = (
        'Traceback (most recent call last):\n  File "/venv/bin/host-sim", line 5, in <module>\n'
        "    from host_sim._cli import main\n"
        '  File "<frozen importlib._bootstrap>", line 1176, in _find_and_load\nKeyboardInterrupt\n'
    )
    assert _in_the_launcher_before_our_code(finding_the_package)
    in_our_package = finding_the_package.replace(
        "KeyboardInterrupt", '  File "/venv/lib/python3.11/site-packages/host_sim/__init__.py", line 9, in <module>\nKeyboardInterrupt'
    )
    assert not _in_the_launcher_before_our_code(in_our_package)
    site = (
        f"{PYTHONS_OWN_START}\nPython runtime state: initialized\nTraceback (most recent call last):\n"
        '  File "<frozen site>", line 73, in <module>\n  File "<frozen abc>", line 105, in __new__\nKeyboardInterrupt\n'
    )
    assert _in_the_launcher_before_our_code(site)
    assert not _in_the_launcher_before_our_code(site.replace("<frozen abc>", "/venv/lib/python3.11/site-packages/host_sim/__init__.py"))


GUARD_MAY_RUN_AFTER: Final = {"__future__", "_signal", "os", "sys"}
"""Modules loaded with the interpreter (or compile-time only): importing them runs no Python code."""


def test_the_startup_guard_is_installed_before_anything_a_signal_could_land_in() -> None:
    """The SIGINT handler goes in before the package runs anything that takes time: a Ctrl-C
    100 ms after the start once landed in ``import threading``, and at 50 ms in ``import
    signal`` (its enum conversion), before the guard was installed, and printed a traceback
    through this package. Everything above the guard's installation imports only modules the
    interpreter has loaded already."""
    import host_sim

    door = Path(host_sim.__file__)  # read, not imported: the file is what is checked
    tree = ast.parse(door.read_text(encoding="utf-8"))
    installs = [
        index for index, node in enumerate(tree.body)
        if "_signal.signal(_signal.SIGINT" in ast.unparse(node)
    ]  # fmt: skip
    assert installs, "the start guard is gone from host_sim/__init__.py"
    before = tree.body[: installs[0]]
    imported = {alias.name for node in before if isinstance(node, ast.Import) for alias in node.names}
    imported |= {node.module or "" for node in before if isinstance(node, ast.ImportFrom)}
    assert imported <= GUARD_MAY_RUN_AFTER, imported
    assert all(isinstance(node, ast.Import | ast.ImportFrom | ast.FunctionDef | ast.Expr) for node in before), [
        ast.unparse(node) for node in before
    ]


@pytest.mark.parametrize("delay", [0.0, 0.05, 0.1, 0.2])
def test_ctrl_c_while_the_command_is_still_starting_ends_in_one_line(installed: Installed, user_dir: Path, delay: float) -> None:
    """Before main runs (importing the package takes a few tenths of a second). Before Python
    itself has started, the signal simply ends the process (a shell shows status 130 too).

    One window is Python's, not ours: after the interpreter starts and before the launcher
    pip writes (``bin/host-sim``: ``import re``, ``import sys``, then our ``main``) has
    imported anything of host_sim, a Ctrl-C is Python's own ``KeyboardInterrupt`` in the
    standard library, which no code of this package has run to catch. On a loaded machine a
    Ctrl-C 50 ms after the start can land there; it is accepted only with no frame of ours."""
    started = _Started(installed, user_dir, "run", WORKBENCH, "-m", "/slow 60", "--no-store")  # never done in time
    time.sleep(delay)
    started.ctrl_c()
    result = started.finish()
    if result.code != 0 and _in_the_launcher_before_our_code(result.err):
        return  # the signal, or the interpreter's own fatal error while it imported site
    no_traceback(result)
    if result.code == -signal.SIGINT:  # ended by the signal before Python took it over
        assert result.err == "", result
    else:
        assert result.code == 130, result
        assert result.err.strip() in ("host-sim: interrupted", "host-sim run: interrupted"), result.err


@pytest.mark.parametrize("backend", ["asyncio", "trio"])
def test_ctrl_c_in_run_stops_the_whole_run_not_only_the_current_step(installed: Installed, user_dir: Path, backend: str) -> None:
    """(trio is not in the wheel's venv: on trio, the dev install's ``python -m host_sim`` runs.)"""
    started = _Started(installed if backend == "asyncio" else None, user_dir, "run", WORKBENCH, "-m", "/slow 60", "-m", "/fast", "--backend", backend)
    started.wait_for("> /slow 60")
    time.sleep(0.5)  # the step is running
    started.ctrl_c()
    result = started.finish()
    _interrupted(result, "run")
    assert "> /fast" not in result.out and "fast done" not in result.out


def test_ctrl_c_during_the_sandbox_build_of_check_ends_in_one_line(installed: Installed, user_dir: Path) -> None:
    (user_dir / "slow_import.py").write_text(SLOW_IMPORT)
    for command in ("check", "manifest"):
        started = _Started(installed, user_dir, command, "slow_import.py", "--timeout", "120")
        time.sleep(2.0)  # the sandbox child is importing
        started.ctrl_c()
        _interrupted(started.finish(), command)


def test_ctrl_c_while_run_loads_its_mods_ends_in_one_line(installed: Installed, user_dir: Path) -> None:
    (user_dir / "slow_import.py").write_text(SLOW_IMPORT)
    started = _Started(installed, user_dir, "run", "slow_import.py", "-m", "hi", "--timeout", "120")
    time.sleep(2.0)
    started.ctrl_c()
    _interrupted(started.finish(), "run")
    assert not (user_dir / ".host-sim").exists()


def test_ctrl_c_in_demo_stops_the_whole_demo(user_dir: Path) -> None:
    """On a model that never answers (an OpenAI-compatible server: httpx, so the dev install)."""
    with socket.socket() as server:  # a model server that accepts and never answers
        server.bind(("127.0.0.1", 0))
        server.listen()
        port = server.getsockname()[1]
        started = _Started(None, user_dir, "demo", "--no-store", "--model", f"openai:slow@http://127.0.0.1:{port}/v1")
        server.settimeout(60)
        connection, _ = server.accept()  # the first turn asked the model
        with connection:
            started.ctrl_c()
            result = started.finish()
    _interrupted(result, "demo")
    assert result.out == ""


def test_piped_chat_leaves_on_the_second_ctrl_c(installed: Installed, user_dir: Path) -> None:
    read_end, write_end = os.pipe()  # the script's writer stays open: only Ctrl-C ends the chat
    try:
        started = _Started(installed, user_dir, "chat", WORKBENCH, "--no-store", stdin=read_end)
        os.close(read_end)
        os.write(write_end, b"/slow 60\n/fast\n")
        started.wait_for("type /? for commands")
        time.sleep(1.0)
        started.ctrl_c()
        started.wait_for("cancelled: /slow 60")
        started.wait_for("fast done")
        started.ctrl_c()
        result = started.finish()
    finally:
        os.close(write_end)
    _interrupted(result, "chat")
    assert "^C cancelling 1 running command" in result.out


# -- a --store path no file system takes (API §24): one line, whatever the command -------------

LONG_PATH = "s" * 5_000


@pytest.mark.parametrize(
    "command",
    [
        ["fsck", "--store", LONG_PATH],
        ["trace", "ses_x", "--store", LONG_PATH],
        ["lineage", "--store", LONG_PATH],
        ["mcp", "--store", LONG_PATH],
        ["forget", "ses_x", "--store", LONG_PATH],
        ["run", "-m", "hi", "--store", LONG_PATH],
        ["demo", "--store", LONG_PATH],
        ["fsck", "--store", "/".join(["d"] * 3_000)],
        ["run", "-m", "hi", "--store", "/".join(["d"] * 3_000)],
    ],
    ids=["fsck", "trace", "lineage", "mcp", "forget", "run", "demo", "fsck-deep", "run-deep"],
)
def test_a_store_path_of_5000_characters_ends_in_one_line(installed: Installed, user_dir: Path, command: list[str]) -> None:
    result = host_sim(installed, user_dir, *command)
    no_traceback(result)
    assert result.code == 1
    assert result.err.count("\n") == 1 and result.err.startswith(f"host-sim {command[0]}: "), result.err[:300]
    assert not (user_dir / "d").exists()  # nothing made on the way

"""The purity guard in the host's own process: on for the importing thread only, while the
mod is imported, and impossible to switch off from the mod."""

from __future__ import annotations

import _thread
import builtins
import os
import sys
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

from host_sim.fold import load_mod
from host_sim.testing import GUARD_BLOCKED as BLOCKED
from host_sim.testing import IMPORT_GUARD_BLOCKED as IMPORTING_BLOCKED
from host_sim.testing import GuardScope as Scope
from host_sim.testing import run_guarded
from modular_sdk import ManifestBuildError

MOD = "from modular_sdk import ModMetadata, define_mod\n" "mod = define_mod(metadata=ModMetadata(display_name='M', description='d'))\n"


@pytest.fixture(autouse=True)
def _restore_sys_path(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    monkeypatch.setattr(sys, "path", list(sys.path))
    before = set(sys.modules)
    yield
    for name in set(sys.modules) - before:
        if name.startswith("guard_"):
            del sys.modules[name]


def _mod(tmp_path: Path, name: str, top: str) -> str:
    path = tmp_path / f"{name}.py"
    path.write_text(top + "\n" + MOD)
    return str(path)


def test_both_copies_of_the_blocked_prefix_agree() -> None:
    assert BLOCKED == IMPORTING_BLOCKED


def test_after_an_import_the_host_may_do_everything_again(tmp_path: Path) -> None:
    originals = (_thread.start_new_thread, threading._start_new_thread, os._exit, builtins.open)  # type: ignore[attr-defined]
    bytecode = sys.dont_write_bytecode
    with pytest.raises(ManifestBuildError, match="runs a shell command 'true'"):
        load_mod(_mod(tmp_path, "guard_system", "import os\nos.system('true')"))
    assert (_thread.start_new_thread, threading._start_new_thread, os._exit, builtins.open) == originals  # type: ignore[attr-defined]
    assert sys.dont_write_bytecode == bytecode
    assert os.system("true") == 0
    done = threading.Event()
    threading.Thread(target=done.set).start()
    assert done.wait(5)
    (tmp_path / "written.txt").write_text("the host writes as it likes")


def test_a_refused_mod_is_refused_again_on_the_next_load(tmp_path: Path) -> None:
    spec = _mod(tmp_path, "guard_twice", "import os\ntry:\n    os.system('true')\nexcept PermissionError:\n    pass")
    for _ in range(2):
        with pytest.raises(ManifestBuildError, match=r"guard_twice\.py:3: runs a shell command"):
            load_mod(spec)


def test_other_threads_of_the_host_are_not_guarded_during_an_import(tmp_path: Path) -> None:
    go, done = threading.Event(), threading.Event()
    target = tmp_path / "from-another-thread.txt"

    def host_work() -> None:
        go.wait(5)
        target.write_text("written while a mod was imported")
        inner = threading.Thread(target=done.set)  # even a thread start goes through
        inner.start()

    worker = threading.Thread(target=host_work)
    worker.start()

    def import_mod() -> bool:
        go.set()
        return done.wait(5)

    result, error, records = run_guarded(import_mod, Scope(str(tmp_path / "m.py"), (str(tmp_path),), ()))
    worker.join(5)
    assert (result, error, records) == (True, None, [])
    assert target.read_text() == "written while a mod was imported"


def test_a_forged_exit_is_refused_and_reported(tmp_path: Path) -> None:
    top = (
        "import sys\n"
        "try:\n"
        "    sys.audit('modular.guard/exit', [])\n"
        "except PermissionError:\n"
        "    pass\n"
        "open(__file__ + '.marker', 'w')\n"
    )
    with pytest.raises(ManifestBuildError) as info:
        load_mod(_mod(tmp_path, "guard_forged_exit", top))
    assert "tampers with the purity guard (a forged exit from a guarded region)" in str(info.value)
    assert "for writing (open)" in str(info.value)
    assert not list(tmp_path.glob("*.marker"))


def test_a_mod_cannot_open_a_region_of_its_own_to_keep_findings_to_itself(tmp_path: Path) -> None:
    top = (
        "import os\n"
        "from host_sim.fold._guard import Scope, run_guarded\n"
        "try:\n"
        "    run_guarded(lambda: os.system('true'), Scope('', (), ()))  # findings would come back here\n"
        "except PermissionError:\n"
        "    pass\n"
    )
    with pytest.raises(ManifestBuildError, match=r"guard_nested\.py:4: inspects other threads' stacks"):
        load_mod(_mod(tmp_path, "guard_nested", top))


def test_a_dependencys_reads_at_its_import_are_not_the_mods(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    site = tmp_path / "site"
    site.mkdir()
    (site / "guard_reading_dependency.py").write_text("from pathlib import Path\nSOURCE = Path(__file__).read_text()\n")
    monkeypatch.syspath_prepend(str(site))
    mods = tmp_path / "mods"
    mods.mkdir()
    assert load_mod(_mod(mods, "guard_uses_reader", "import guard_reading_dependency")).id == "m"


def test_a_dependencys_writes_at_its_import_are_blocked_and_named(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    site = tmp_path / "site"
    site.mkdir()
    (site / "guard_writing_dependency.py").write_text("open(__file__ + '.marker', 'w')\n")
    monkeypatch.syspath_prepend(str(site))
    mods = tmp_path / "mods"
    mods.mkdir()
    with pytest.raises(ManifestBuildError, match=r"guard_uses_writer\.py:1: opens file .* for writing \(open\), while importing .*guard_writing_dependency\.py"):
        load_mod(_mod(mods, "guard_uses_writer", "import guard_writing_dependency"))
    assert not list(site.glob("*.marker"))

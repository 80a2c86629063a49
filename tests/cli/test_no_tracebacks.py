"""Bad input on the command line is an error message that says what to do, never a traceback."""

from __future__ import annotations

from pathlib import Path

import pytest

from ._support import FIXTURES, Installed, host_sim, no_traceback

WORKBENCH = str(FIXTURES / "workbench.py")


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
    assert result.err.startswith("usage: host-sim manifest")
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


def test_session_with_no_store_is_a_usage_error(installed: Installed, user_dir: Path) -> None:
    result = host_sim(installed, user_dir, "run", "-m", "hi", "--no-store", "--session", "ses_x")
    assert result.code == 2
    assert "--session ses_x continues a stored session: drop --no-store" in result.err


def test_an_unknown_session_names_the_store_and_how_to_list_it(installed: Installed, user_dir: Path) -> None:
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

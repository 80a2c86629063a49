"""No command creates a folder or file it was not asked to: each test lists the folder before and after."""

from __future__ import annotations

import json
import os
import sqlite3
from collections.abc import Iterator
from pathlib import Path

import anyio
import pytest

from host_sim import SqliteStore
from host_sim.cli.testing import check_writable
from host_sim.stores import StoreError

from ._support import FIXTURES, Installed, host_sim, no_traceback

WORKBENCH = str(FIXTURES / "workbench.py")


def listing(folder: Path) -> dict[str, int]:
    """Every file and folder below ``folder`` (hidden ones too), with its size."""
    return {
        str(path.relative_to(folder)): path.stat().st_size if path.is_file() else -1 for path in sorted(folder.rglob("*"))
    }


@pytest.fixture
def demo_dir(installed: Installed, user_dir: Path) -> Path:
    assert host_sim(installed, user_dir, "demo").code == 0
    return user_dir


def a_turn_id(store: Path) -> str:
    with sqlite3.connect(f"file:{store}?mode=ro&immutable=1", uri=True) as db:
        row = db.execute("SELECT id FROM turns ORDER BY rowid LIMIT 1").fetchone()
    db.close()
    return str(row[0])


def test_emit_refuses_a_spool_folder_that_does_not_exist(installed: Installed, user_dir: Path) -> None:
    before = listing(user_dir)
    result = host_sim(installed, user_dir, "emit", "--spool", "nonexistent/sp", "commit", '{"output_id": "a", "commit": "b"}')
    no_traceback(result)
    assert result.code == 2
    assert "host-sim emit: the spool 'nonexistent/sp' does not exist" in result.err
    assert "an event written elsewhere is one no host reads" in result.err
    assert listing(user_dir) == before == {}


def test_emit_without_spool_refuses_the_default_until_a_host_made_it(installed: Installed, user_dir: Path) -> None:
    result = host_sim(installed, user_dir, "emit", "commit", '{"output_id": "a", "commit": "b"}')
    assert result.code == 2 and "the spool '.host-sim/spool' does not exist" in result.err
    assert listing(user_dir) == {}
    (user_dir / ".host-sim" / "spool").mkdir(parents=True)
    written = host_sim(installed, user_dir, "emit", "commit", '{"output_id": "a", "commit": "b"}')
    assert written.code == 0, written.err
    assert (user_dir / ".host-sim" / "spool" / f"{written.out.strip()}.json").is_file()


def test_a_run_whose_mod_does_not_load_leaves_no_store_folder(installed: Installed, user_dir: Path) -> None:
    (user_dir / "broken.py").write_text("mod = 42\n")
    before = listing(user_dir)
    for spec in ("broken.py", "missing.py"):
        result = host_sim(installed, user_dir, "run", spec, "-m", "hi")
        no_traceback(result)
        assert result.code == 1, result
        assert listing(user_dir) == before, spec


def test_run_continuing_a_session_of_a_store_that_does_not_exist_writes_nothing(installed: Installed, user_dir: Path) -> None:
    result = host_sim(installed, user_dir, "run", "-m", "hi", "--session", "ses_nope")
    no_traceback(result)
    assert result.code == 1
    assert "no session 'ses_nope': there is no store at '.host-sim/store.sqlite' yet" in result.err
    assert "drop --session to start a session" in result.err
    assert listing(user_dir) == {}


def test_a_refused_store_leaves_no_lock_file_and_the_file_untouched(installed: Installed, user_dir: Path) -> None:
    (user_dir / "notes.txt").write_text("my notes\n")
    before = listing(user_dir)
    for command in (["run", "-m", "hi", "--store", "notes.txt"], ["demo", "--store", "notes.txt"], ["fsck", "--repair", "--store", "notes.txt"]):
        result = host_sim(installed, user_dir, *command)
        no_traceback(result)
        assert result.code == 1, (command, result)
        assert "'notes.txt' is not a SQLite database" in result.err
        assert listing(user_dir) == before, command
    assert (user_dir / "notes.txt").read_text() == "my notes\n"


def test_read_only_commands_leave_no_wal_or_shm_files(installed: Installed, demo_dir: Path) -> None:
    store = demo_dir / ".host-sim" / "store.sqlite"
    before = listing(demo_dir)
    assert sorted(before) == [".host-sim", ".host-sim/store.sqlite"]  # no -lock left after a clean close
    turn = a_turn_id(store)
    for command in (
        ["lineage"],
        ["lineage", "--json"],
        ["lineage", "--html", "/dev/null"],
        ["lineage", "--forward", turn],
        ["lineage", "--backward", turn],
        ["fsck"],
        ["fsck", "--json"],
        ["trace", "nothing"],
        ["forget", turn],
        ["forget", turn, "--json"],
    ):
        result = host_sim(installed, demo_dir, *command)
        no_traceback(result)
        assert result.code in (0, 1), (command, result)
        assert listing(demo_dir) == before, command


def test_a_read_only_reader_beside_a_running_host_still_sees_its_writes(tmp_path: Path) -> None:
    """The reader reads a closed store as immutable; with a host writing (a -wal), it reads the WAL."""

    async def main() -> None:
        path = tmp_path / "s.sqlite"
        from host_sim import Host

        async with Host(store=SqliteStore(path)) as host:
            await host.sessions.create()
            reader = SqliteStore(path, read_only=True)
            await reader.open()
            try:
                assert len((await reader.read_all()).sessions) == 1
            finally:
                await reader.close()
        assert sorted(p.name for p in tmp_path.iterdir()) == ["s.sqlite"]
        reader = SqliteStore(path, read_only=True)
        await reader.open()
        try:
            assert len((await reader.read_all()).sessions) == 1
        finally:
            await reader.close()
        assert sorted(p.name for p in tmp_path.iterdir()) == ["s.sqlite"]

    anyio.run(main)


@pytest.fixture
def held_store(tmp_path: Path) -> Iterator[Path]:
    """A store a host in this process holds (its writer lock), as a running chat would."""
    path = tmp_path / "held.sqlite"
    with anyio.from_thread.start_blocking_portal() as portal:
        store = SqliteStore(path)
        portal.call(store.open)
        try:
            yield path
        finally:
            portal.call(store.close)


def test_a_held_store_gets_shell_advice_not_python_advice(installed: Installed, user_dir: Path, held_store: Path) -> None:
    for command in (["run", "-m", "hi"], ["fsck", "--repair"], ["demo"]):
        result = host_sim(installed, user_dir, *command, "--store", str(held_store))
        no_traceback(result)
        assert result.code == 1, (command, result)
        assert f"host-sim {command[0]}: the store {str(held_store)!r} is in use by another host (process {os.getpid()})" in result.err
        assert f"host-sim lineage --store {held_store} reads it meanwhile" in result.err
        assert "SqliteStore" not in result.err and "read_only=True" not in result.err and "PostgresStore" not in result.err
    reader = host_sim(installed, user_dir, "lineage", "--json", "--store", str(held_store))
    assert reader.code == 0 and json.loads(reader.out)["sessions"] == []


def test_a_read_only_store_gets_shell_advice(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """(root may write any file, so the check is driven through os.access, as the CLI asks it.)"""
    path = tmp_path / "kept.sqlite"
    path.write_bytes(b"")
    monkeypatch.setattr(os, "access", lambda p, mode: False)
    with pytest.raises(StoreError, match=r"the store '.*kept.sqlite' is read-only \(this process may not write it\)") as caught:
        check_writable(str(path))
    message = str(caught.value)
    assert f"chmod u+w {path}" in message and f"host-sim lineage --store {path} reads it as it is" in message
    assert "read_only=True" not in message
    assert caught.value.path == str(path)

"""``run``, ``chat`` and ``demo`` write the store ``lineage`` reads: $HOST_SIM_STORE, else .host-sim/."""

from __future__ import annotations

from pathlib import Path

from ._support import Installed, clean_env, host_sim


def test_run_then_lineage_sees_the_session(installed: Installed, user_dir: Path) -> None:
    ran = host_sim(installed, user_dir, "run", "-m", "hello")
    assert ran.code == 0, ran.err
    session = ran.out.splitlines()[0].removeprefix("session ")
    shown = host_sim(installed, user_dir, "lineage")
    assert shown.code == 0, shown.err
    assert f"{session}  root  1 turn" in shown.out


def test_run_continues_a_session_of_the_default_store(installed: Installed, user_dir: Path) -> None:
    first = host_sim(installed, user_dir, "run", "-m", "first")
    session = first.out.splitlines()[0].removeprefix("session ")
    again = host_sim(installed, user_dir, "run", "--session", session, "-m", "second", "--transcript")
    assert again.code == 0, again.err
    assert "#0 [user] first" in again.out and "#1 [user] second" in again.out


def test_chat_writes_where_host_sim_store_points(installed: Installed, user_dir: Path, tmp_path: Path) -> None:
    store = tmp_path / "elsewhere.sqlite"
    env = clean_env(HOST_SIM_STORE=str(store))
    chatted = host_sim(installed, user_dir, "chat", stdin="hello\n", env=env)
    assert chatted.code == 0, chatted.err
    assert "echo: hello" in chatted.out
    assert store.is_file() and not (user_dir / ".host-sim").exists()
    shown = host_sim(installed, user_dir, "lineage", env=env)
    assert "root  1 turn" in shown.out


def test_no_store_keeps_nothing(installed: Installed, user_dir: Path) -> None:
    assert host_sim(installed, user_dir, "run", "--no-store", "-m", "hi").code == 0
    assert list(user_dir.iterdir()) == []

"""host-sim forget shows the plan and erases only with --yes; lineage --forward/--backward show provenance."""

from __future__ import annotations

import json
from pathlib import Path

import anyio
import pytest

from host_sim import Host, SqliteStore
from host_sim._cli import main
from modular_sdk import AiPromptMessage


async def a_chat_with_a_fork(path: Path) -> dict[str, str]:
    async with Host(store=SqliteStore(path)) as host:
        chat = await host.sessions.create()
        first = await chat.send(AiPromptMessage(text="my address is 12 Elm St"))
        fork = await first.fork()
        later = await fork.send(AiPromptMessage(text="and my phone"))
        return {"first": first.id, "message": first.message_id, "later": later.id, "chat": chat.id, "fork": fork.id}


def test_forget_without_yes_shows_the_plan_and_erases_nothing(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "s.sqlite"
    ids = anyio.run(a_chat_with_a_fork, path)
    assert main(["forget", "--store", str(path), ids["message"]]) == 0  # a message id works too
    out = capsys.readouterr().out
    assert "would erase the text of 2 turn(s)" in out and ids["later"] in out
    assert "dry run: nothing was erased; run again with --yes" in out
    assert b"12 Elm St" in path.read_bytes() or any(b"12 Elm St" in f.read_bytes() for f in tmp_path.iterdir())


def test_forget_with_yes_erases_exactly_the_plan(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "s.sqlite"
    ids = anyio.run(a_chat_with_a_fork, path)
    assert main(["forget", "--store", str(path), ids["first"], "--json"]) == 0
    plan = json.loads(capsys.readouterr().out)
    assert main(["forget", "--store", str(path), ids["first"], "--yes", "--json"]) == 0
    done = json.loads(capsys.readouterr().out)
    assert done["erased"] and not plan["erased"]
    assert {k: v for k, v in done.items() if k not in ("erased", "edges")} == {
        k: v for k, v in plan.items() if k not in ("erased", "edges")
    }
    assert [t["turn_id"] for t in done["turns"]] == [ids["first"], ids["later"]]
    for file in tmp_path.iterdir():
        assert b"12 Elm St" not in file.read_bytes() and b"my phone" not in file.read_bytes()


def test_lineage_forward_and_backward_print_the_two_provenance_answers(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "s.sqlite"
    ids = anyio.run(a_chat_with_a_fork, path)
    assert main(["lineage", "--store", str(path), "--forward", ids["first"], "--json"]) == 0
    forward = json.loads(capsys.readouterr().out)
    assert forward["sessions"] == [ids["chat"], ids["fork"]]
    assert [t["turn_id"] for t in forward["turns"]] == [ids["later"]]
    assert [(e["from"], e["to"], e["relation"]) for e in forward["edges"]] == [(ids["chat"], ids["fork"], "branched_from")]
    assert main(["lineage", "--store", str(path), "--backward", ids["later"]]) == 0
    out = capsys.readouterr().out
    assert "its model read 1 turn(s)" in out and ids["first"] in out


def test_an_unknown_turn_id_is_exit_1_naming_it(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "s.sqlite"
    anyio.run(a_chat_with_a_fork, path)
    assert main(["forget", "--store", str(path), "turn_nope"]) == 1
    assert main(["lineage", "--store", str(path), "--backward", "turn_nope"]) == 1
    err = capsys.readouterr().err
    assert err.count("no turn or message by this id") == 2 and "'turn_nope'" in err

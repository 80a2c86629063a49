"""The ACP agent's rules over a real host, in process, on asyncio and trio.

`test_acp.py` proves compatibility with the published client over stdio; these tests call
the agent's request methods directly (the connection is only where updates go), to check
what needs timing control a subprocess cannot give: a prompt racing another in the same
session, a cancel that arrives while the model is still thinking, a deleted session.
"""

from __future__ import annotations

import importlib.util
import subprocess
import sys
from pathlib import Path
from typing import Any

import anyio
import pytest
from acp import RequestError, text_block
from acp.schema import AgentMessageChunk, AvailableCommandsUpdate, RequestPermissionResponse

from host_sim import Host, ModelRequest, ScriptedModel
from host_sim._cli import main
from host_sim.acp._agent import HostAgent

pytestmark = pytest.mark.anyio

MOD = str(Path(__file__).resolve().parent / "fixtures" / "editor_mod.py")


class Updates:
    """Where the agent sends its updates: kept in order (it asks no permission here)."""

    def __init__(self) -> None:
        self.sent: list[tuple[str, Any]] = []

    async def session_update(self, session_id: str, update: Any, **kwargs: Any) -> None:
        self.sent.append((session_id, update))

    async def request_permission(self, **kwargs: Any) -> RequestPermissionResponse:
        raise AssertionError("no action is proposed in these tests")

    def said(self, session_id: str) -> str:
        return "".join(u.content.text for s, u in self.sent if s == session_id and isinstance(u, AgentMessageChunk))


class Gate:
    """A model that answers ``"done: <prompt>"`` once ``open`` is set, and says when it is asked."""

    def __init__(self) -> None:
        self.asked = anyio.Event()
        self.open = anyio.Event()

    async def respond(self, request: ModelRequest) -> str:
        self.asked.set()
        await self.open.wait()
        return f"done: {request.text}"


async def test_a_second_prompt_while_one_runs_is_refused_and_the_first_finishes(tmp_path: Path) -> None:
    gate, updates = Gate(), Updates()
    async with Host(mods=[MOD], model=ScriptedModel(gate.respond)) as host, anyio.create_task_group() as tasks:
        agent = HostAgent(host, tasks=tasks, version="test", settle=5.0)
        agent.on_connect(updates)  # type: ignore[arg-type]  # the connection's two methods the agent calls here
        session = (await agent.new_session(cwd=str(tmp_path))).session_id
        answers: list[str] = []

        async def first() -> None:
            answers.append((await agent.prompt(session_id=session, prompt=[text_block("slow one")])).stop_reason)

        tasks.start_soon(first)
        with anyio.fail_after(10):
            await gate.asked.wait()
        with pytest.raises(RequestError, match="already running a prompt; wait for its response or send session/cancel"):
            await agent.prompt(session_id=session, prompt=[text_block("impatient")])
        gate.open.set()
        with anyio.fail_after(10):
            while not answers:
                await anyio.sleep(0.01)
        assert answers == ["end_turn"] and updates.said(session) == "done: slow one"
        [turn] = await (await host.sessions.get(session)).turns()  # the refused prompt made no turn
        assert turn.reply == "done: slow one"
        await agent.resume_session(session_id=session, cwd=str(tmp_path))  # no replay; the commands again
        with anyio.fail_after(10):
            while len([u for s, u in updates.sent if isinstance(u, AvailableCommandsUpdate)]) < 2:
                await anyio.sleep(0.01)
        assert updates.said(session) == "done: slow one"


async def test_a_cancel_while_the_model_thinks_answers_cancelled_and_the_session_goes_on(tmp_path: Path) -> None:
    gate, updates = Gate(), Updates()
    async with Host(mods=[MOD], model=ScriptedModel(gate.respond)) as host, anyio.create_task_group() as tasks:
        agent = HostAgent(host, tasks=tasks, version="test", settle=5.0)
        agent.on_connect(updates)  # type: ignore[arg-type]
        session = (await agent.new_session(cwd=str(tmp_path))).session_id
        answers: list[str] = []

        async def thinking() -> None:
            answers.append((await agent.prompt(session_id=session, prompt=[text_block("ponder")])).stop_reason)

        tasks.start_soon(thinking)
        with anyio.fail_after(10):
            await gate.asked.wait()
        await agent.cancel(session_id=session)
        with anyio.fail_after(10):
            while not answers:
                await anyio.sleep(0.01)
        assert answers == ["cancelled"] and updates.said(session) == ""
        gate.open.set()
        again = await agent.prompt(session_id=session, prompt=[text_block("now")])
        assert again.stop_reason == "end_turn" and updates.said(session) == "done: now"
        tasks.cancel_scope.cancel()


async def test_a_deleted_session_is_neither_loaded_nor_prompted(tmp_path: Path) -> None:
    updates = Updates()
    async with Host(mods=[MOD]) as host, anyio.create_task_group() as tasks:
        agent = HostAgent(host, tasks=tasks, version="test", settle=5.0)
        agent.on_connect(updates)  # type: ignore[arg-type]
        session = (await agent.new_session(cwd=str(tmp_path))).session_id
        await host.sessions.delete(session)
        with pytest.raises(RequestError, match=session):
            await agent.load_session(cwd=str(tmp_path), session_id=session)
        with pytest.raises(RequestError, match=session):
            await agent.prompt(session_id=session, prompt=[text_block("hello?")])
        listed = await agent.list_sessions()
        assert session not in [s.session_id for s in listed.sessions]


# -- the command, before the protocol starts ------------------------------------------------


def test_without_the_extra_the_command_says_which_to_install(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    real = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec", lambda name, *a: None if name == "acp" else real(name, *a))
    assert main(["acp", "--no-store"]) == 1
    err = capsys.readouterr().err
    assert "needs the 'agent-client-protocol' package" in err and "pip install 'modular-chat-sdk[acp]'" in err


def test_a_standard_output_that_is_a_file_is_refused_with_what_to_do(tmp_path: Path) -> None:
    out = tmp_path / "out.txt"
    with out.open("w") as file:
        done = subprocess.run(
            [sys.executable, "-m", "host_sim", "acp", "--no-store"],
            stdin=subprocess.PIPE, stdout=file, stderr=subprocess.PIPE, text=True, timeout=120, check=False,
        )  # fmt: skip
    assert done.returncode == 1 and out.read_text() == ""
    assert "standard output is not a pipe; let an editor start it" in done.stderr
    assert "Traceback" not in done.stderr

"""Faults stay where they happen: a handler or model fails its own command or turn, never the host.

Custom `BaseException` subclasses included; deep tool inputs are refused as tool errors; a
tool that forks its own running turn is refused at once; blocked plain functions neither
stall the event loop nor keep the process alive; a closed host says so.
"""

from __future__ import annotations

import subprocess
import sys
import textwrap
import threading
from pathlib import Path

import anyio
import attrs
import pytest

from host_sim import Host, ModelRequest, ScriptedModel, SessionHandle, ToolCall
from host_sim.testing import JsonValue
from modular_sdk import (
    ActionEvent,
    AiContributions,
    AiPromptMessage,
    Allow,
    HostClosedError,
    ModMetadata,
    ReentrantTurnError,
    SlashCommandContext,
    ToolContext,
    before_action,
    define_mod,
    slash_command,
    tool,
)


class Escape(BaseException):
    """What a careless (or hostile) mod raises to get past ``except Exception``."""


@attrs.frozen
class Query:
    """A tool's input."""

    q: str


def escape_command(argument: str | None, ctx: SlashCommandContext) -> str:
    raise Escape("out of the command")


async def escape_tool(query: Query, ctx: ToolContext) -> str:
    raise Escape("out of the tool")


async def fork_my_own_turn(query: Query, ctx: ToolContext) -> str:
    running = (await ctx.session.turns())[-1]
    assert running.status == "running"
    try:
        await running.fork()
    except ReentrantTurnError as exc:
        return f"refused: {exc}"
    return "forked (should not happen)"


def escape_hook(event: ActionEvent) -> Allow:
    raise Escape("out of the hook")


faulty = define_mod(
    metadata=ModMetadata(display_name="Faulty", description="Raises what it should not"),
    commands=[slash_command(id="escape", description="Raise a BaseException", run=escape_command)],
    ai=AiContributions(
        tools=[
            tool(name="escape", description="Raise a BaseException", input_type=Query, run=escape_tool),
            tool(name="fork_self", description="Fork the running turn", input_type=Query, run=fork_my_own_turn),
        ]
    ),
)
hooked = define_mod(
    metadata=ModMetadata(display_name="Hooked", description="A hook that escapes"),
    hooks=[before_action("session.fork", escape_hook)],
)


def calls(name: str, payload: JsonValue = None) -> ScriptedModel:
    """A model that calls tool ``name`` once, then answers with what the tool said."""

    async def respond(request: ModelRequest) -> str | ToolCall:
        if request.text.startswith("plain"):
            return "fine"
        if request.tool_results:
            result = request.tool_results[-1]
            return f"tool said: {result.output if result.error is None else result.error}"
        return ToolCall(name=name, input={"q": payload if payload is not None else "x"})

    return ScriptedModel(respond)


@pytest.mark.anyio
async def test_a_base_exception_subclass_in_a_command_fails_only_that_command() -> None:
    async with Host(mods=[faulty]) as host:
        chat = await host.sessions.create()
        out = await host.submit(chat, "/escape")
        assert out.error is not None and out.error.startswith("command /escape of mod 'faulty' failed: Escape: out of the command (raised at "), out.error  # the mod's line that raised
        assert (await host.submit(chat, "still here")).error is None


@pytest.mark.anyio
async def test_a_base_exception_subclass_in_a_tool_fails_only_its_turn() -> None:
    async with Host(mods=[faulty], model=calls("escape")) as host:
        chat = await host.sessions.create()
        out = await host.submit(chat, "go")
        assert out.error is not None and "tool 'escape' of mod 'faulty' failed: Escape: out of the tool" in out.error
        assert (await host.submit(chat, "plain")).text == "fine"


@pytest.mark.anyio
async def test_a_base_exception_subclass_in_a_hook_denies_only_its_action() -> None:
    async with Host(mods=[hooked]) as host:
        chat = await host.sessions.create()
        await host.submit(chat, "hello")
        with pytest.raises(Exception, match="was denied because before_action hook 'session.fork' of mod 'hooked' failed: Escape"):
            await chat.fork()
        assert (await host.submit(chat, "goes on")).error is None


@pytest.mark.anyio
async def test_a_base_exception_subclass_in_a_model_fails_only_its_turn() -> None:
    def respond(request: ModelRequest) -> str:
        if request.text == "boom":
            raise Escape("out of the model")
        return "ok"

    async with Host(model=ScriptedModel(respond)) as host:
        chat = await host.sessions.create()
        out = await host.submit(chat, "boom")
        assert out.error is not None and "Escape: out of the model" in out.error
        assert (await host.submit(chat, "again")).text == "ok"


@pytest.mark.anyio
async def test_a_tool_input_nested_five_thousand_deep_is_a_tool_error_not_a_crash() -> None:
    deep: JsonValue = "x"
    for _ in range(5000):
        deep = [deep]
    async with Host(mods=[faulty], model=calls("escape", deep)) as host:
        chat = await host.sessions.create()
        out = await host.submit(chat, "go deep")
        assert out.error is None, out.error
        assert out.text is not None and out.text.startswith("tool said: invalid input for tool 'escape'")


@pytest.mark.anyio
async def test_a_tool_forking_the_turn_that_runs_it_is_refused_at_once() -> None:
    async with Host(mods=[faulty], model=calls("fork_self"), handler_timeout=None) as host:
        chat = await host.sessions.create()
        with anyio.fail_after(10):  # a deadlock would wait forever: fail instead
            out = await host.submit(chat, "fork yourself")
        assert out.error is None, out.error
        assert "refused: a handler running inside turn 0" in out.text
        assert "tried to fork that same turn" in out.text


@pytest.mark.anyio
async def test_a_blocked_sync_model_is_abandoned_at_the_model_timeout_and_the_loop_goes_on() -> None:
    release = threading.Event()

    def respond(request: ModelRequest) -> str:
        if request.text == "block":
            release.wait(30)
        return "ok"

    try:
        async with Host(model=ScriptedModel(respond), model_timeout=0.5) as host:
            blocked, free = await host.sessions.create(), await host.sessions.create()
            results: dict[str, str | None] = {}

            async def submit(name: str, chat: SessionHandle, text: str) -> None:
                results[name] = (await host.submit(chat, text)).error

            async with anyio.create_task_group() as tg:
                tg.start_soon(submit, "blocked", blocked, "block")
                tg.start_soon(submit, "free", free, "hello")
            assert results["free"] is None
            assert results["blocked"] is not None and "timed out after 0.5s" in results["blocked"]
    finally:
        release.set()


def test_a_sync_handler_blocked_forever_does_not_keep_the_process_alive(tmp_path: Path) -> None:
    mod = tmp_path / "blocker.py"
    mod.write_text(
        textwrap.dedent(
            """
            import threading

            from modular_sdk import ModMetadata, SlashCommandContext, define_mod, slash_command


            def hang(argument: str | None, ctx: SlashCommandContext) -> str:
                threading.Event().wait()
                return "never"


            mod = define_mod(
                metadata=ModMetadata(display_name="Blocker", description="Blocks forever"),
                commands=[slash_command(id="hang", description="Block forever", run=hang)],
            )
            """
        )
    )
    result = subprocess.run(
        [sys.executable, "-m", "host_sim", "run", str(mod), "-m", "/hang", "--timeout", "1"],
        capture_output=True,
        text=True,
        timeout=60,  # the bug this guards against made the process hang forever
        check=False,
        cwd=tmp_path,  # run keeps its sessions in ./.host-sim: never in the checkout
    )
    assert "timed out after 1s" in result.stdout + result.stderr


@pytest.mark.anyio
async def test_handles_of_a_closed_host_raise_host_closed_error() -> None:
    async with Host() as host:
        chat = await host.sessions.create()
        turn = await chat.send(AiPromptMessage(text="hi"))
        sessions = host.sessions
    with pytest.raises(HostClosedError, match="its host is closed"):
        await chat.send(AiPromptMessage(text="after close"))
    with pytest.raises(HostClosedError, match="its host is closed"):
        await turn.fork()
    with pytest.raises(HostClosedError, match="its host is closed"):
        await sessions.get(chat.id)
    with pytest.raises(HostClosedError, match="this Host is closed"):
        await host.submit(chat, "after close")

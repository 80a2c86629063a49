"""A handler that raises, hangs or is cancelled fails only its own command or turn."""

from __future__ import annotations

import time
from pathlib import Path

import anyio
import attrs
import pytest
import sniffio

from host_sim import Host, ModelRequest, ScriptedModel, Submission, ToolCall
from modular_sdk import (
    AiContributions,
    AiPromptMessage,
    CommandContext,
    ModMetadata,
    SlashCommandContext,
    ToolContext,
    TurnFailedError,
    command,
    define_mod,
    slash_command,
    tool,
)

TIMEOUT = 0.2


async def cancel_myself() -> None:
    """Cancel the running task from inside, the way a buggy handler might."""
    if sniffio.current_async_library() == "asyncio":
        import asyncio

        task = asyncio.current_task()
        assert task is not None
        task.cancel()
        await asyncio.sleep(0)
    else:
        import trio

        raise trio.Cancelled._create()


async def explode(argument: str | None, ctx: SlashCommandContext) -> str:
    raise RuntimeError(f"exploded on {argument!r}")


async def hang(argument: str | None, ctx: SlashCommandContext) -> str:
    await anyio.sleep_forever()
    raise AssertionError("unreachable")


async def self_cancel(argument: str | None, ctx: SlashCommandContext) -> str:
    await cancel_myself()
    return "unreachable"


def block(argument: str | None, ctx: SlashCommandContext) -> str:
    time.sleep(float(argument or "0.3"))
    return "finished blocking"


def fine(argument: str | None, ctx: SlashCommandContext) -> str:
    return f"fine {argument}"


def quiet(argument: str | None, ctx: SlashCommandContext) -> None:
    return None


def palette_explode(ctx: CommandContext) -> None:
    raise ValueError("palette broke")


@attrs.frozen
class Mode:
    """How the tool should misbehave."""

    how: str


async def bad_tool(mode: Mode, ctx: ToolContext) -> str:
    if mode.how == "raise":
        raise OSError("disk on fire")
    if mode.how == "hang":
        await anyio.sleep_forever()
    if mode.how == "cancel":
        await cancel_myself()
    return "ok"


mod = define_mod(
    metadata=ModMetadata(display_name="Flaky", description="Handlers that misbehave"),
    commands=[
        slash_command(id="explode", description="Raises", run=explode),
        slash_command(id="hang", description="Hangs", run=hang),
        slash_command(id="self-cancel", description="Cancels itself", run=self_cancel),
        slash_command(id="block", description="Blocks its thread", run=block),
        slash_command(id="fine", description="Works", run=fine),
        slash_command(id="quiet", description="Returns nothing", run=quiet),
        command(id="flaky.explode", title="Explode", run=palette_explode),
    ],
    ai=AiContributions(tools=[tool(name="bad", description="Misbehaves", input_type=Mode, run=bad_tool)]),
)


def tool_model(request: ModelRequest) -> str | ToolCall:
    if request.text.startswith("use bad ") and not request.tool_results:
        return ToolCall(name="bad", input={"how": request.text.removeprefix("use bad ")})
    return f"re: {request.text}"


@pytest.mark.anyio
async def test_a_command_that_raises_fails_with_a_clear_message_and_the_host_goes_on() -> None:
    async with Host(mods=[mod]) as host:
        chat = await host.sessions.create()

        out = await host.submit(chat, "/explode now")

        assert out.kind == "command"
        assert out.error is not None and out.error.startswith("command /explode of mod 'flaky' failed: RuntimeError: exploded on 'now' (raised at "), out.error  # the mod's line that raised
        assert out.text == out.error
        assert (await host.submit(chat, "/fine again")).text == "fine again"
        assert (await host.submit(chat, "still chatting")).error is None


@pytest.mark.anyio
async def test_a_command_that_hangs_times_out_with_a_clear_message() -> None:
    async with Host(mods=[mod], handler_timeout=TIMEOUT) as host:
        chat = await host.sessions.create()

        out = await host.submit(chat, "/hang")

        assert out.error is not None
        assert out.error is not None and out.error.startswith("command /hang of mod 'flaky' timed out after 0.2s")
        assert "handler_timeout" in out.error
        assert (await host.submit(chat, "/fine")).error is None


@pytest.mark.anyio
async def test_a_command_that_cancels_itself_fails_as_cancelled() -> None:
    async with Host(mods=[mod]) as host:
        chat = await host.sessions.create()

        out = await host.submit(chat, "/self-cancel")

        assert out.error == "command /self-cancel of mod 'flaky' was cancelled"
        assert (await host.submit(chat, "/fine")).error is None
        assert (await chat.send(AiPromptMessage(text="hi"))).status == "completed"


@pytest.mark.anyio
async def test_a_palette_command_that_raises_fails_with_a_clear_message() -> None:
    async with Host(mods=[mod]) as host:
        out = await host.run_command("flaky.explode")

        assert out.error is not None and out.error.startswith("command 'flaky.explode' of mod 'flaky' failed: ValueError: palette broke (raised at "), out.error  # the mod's line that raised


@pytest.mark.anyio
async def test_an_unknown_palette_command_lists_close_matches() -> None:
    async with Host(mods=[mod]) as host:
        out = await host.run_command("flaky.explod")

        assert out.error is not None
        assert out.error is not None and out.error.startswith("unknown palette command 'flaky.explod'; did you mean 'flaky.explode'?")


@pytest.mark.anyio
async def test_a_command_returning_none_shows_nothing() -> None:
    async with Host(mods=[mod]) as host:
        chat = await host.sessions.create()

        assert await host.submit(chat, "/quiet") == Submission(kind="command", text="")


@pytest.mark.anyio
async def test_another_session_works_while_a_command_hangs() -> None:
    async with Host(mods=[mod], handler_timeout=2.0) as host:
        stuck, other = await host.sessions.create(), await host.sessions.create()
        results: list[Submission] = []
        async with anyio.create_task_group() as tg:

            async def run_hang() -> None:
                results.append(await host.submit(stuck, "/hang"))

            tg.start_soon(run_hang)
            await anyio.wait_all_tasks_blocked()
            with anyio.fail_after(1.0):
                reply = await host.submit(other, "are you there?")
                command_out = await host.submit(other, "/fine")
            assert results == []  # the hanging command is still hanging
            tg.cancel_scope.cancel()

        assert reply.error is None and "are you there?" in reply.text
        assert command_out.text == "fine None"


@pytest.mark.anyio
async def test_a_blocking_sync_handler_does_not_block_the_event_loop() -> None:
    async with Host(mods=[mod]) as host:
        chat, other = await host.sessions.create(), await host.sessions.create()
        order: list[str] = []
        async with anyio.create_task_group() as tg:

            async def run_block() -> None:
                out = await host.submit(chat, "/block 1.0")
                order.append(out.text)

            tg.start_soon(run_block)
            await anyio.sleep(0.02)
            with anyio.fail_after(0.6):  # well before the handler unblocks, with room for a busy machine
                await host.submit(other, "meanwhile")
            order.append("other session answered")

        assert order == ["other session answered", "finished blocking"]


@pytest.mark.anyio
async def test_a_blocking_sync_handler_past_its_timeout_fails_its_command() -> None:
    async with Host(mods=[mod], handler_timeout=0.1) as host:
        chat = await host.sessions.create()

        with anyio.fail_after(1.0):
            out = await host.submit(chat, "/block 0.3")

        assert out.error is not None and "timed out after 0.1s" in out.error


@pytest.mark.anyio
async def test_a_tool_that_raises_fails_its_turn_and_the_session_goes_on() -> None:
    async with Host(mods=[mod], model=ScriptedModel(tool_model)) as host:
        chat = await host.sessions.create()

        with pytest.raises(TurnFailedError, match=r"tool 'bad' of mod 'flaky' failed: OSError: disk on fire") as info:
            await chat.run("use bad raise")

        assert info.value.reason is not None and info.value.reason.startswith("tool 'bad' of mod 'flaky' failed: OSError: disk on fire (raised at "), info.value.reason  # the mod's line that raised
        after = await chat.run("next")
        assert after.turn.ordinal == 1
        assert [t.status for t in await chat.turns()] == ["failed", "completed"]


@pytest.mark.anyio
async def test_a_tool_that_hangs_fails_its_turn_after_the_timeout() -> None:
    async with Host(mods=[mod], model=ScriptedModel(tool_model), handler_timeout=TIMEOUT) as host:
        chat = await host.sessions.create()

        out = await host.submit(chat, "use bad hang")

        assert out.error is not None
        assert "tool 'bad' of mod 'flaky' timed out after 0.2s" in out.error
        assert out.turn is not None and out.turn.status == "failed"
        assert (await host.submit(chat, "next")).error is None


@pytest.mark.anyio
async def test_a_tool_that_cancels_itself_fails_its_turn() -> None:
    async with Host(mods=[mod], model=ScriptedModel(tool_model)) as host:
        chat = await host.sessions.create()

        with pytest.raises(TurnFailedError, match=r"tool 'bad' of mod 'flaky' was cancelled"):
            await chat.send(AiPromptMessage(text="use bad cancel"))

        assert (await chat.send(AiPromptMessage(text="next"))).status == "completed"


@pytest.mark.anyio
async def test_a_model_that_hangs_fails_its_turn_after_the_model_timeout() -> None:
    async def respond(request: ModelRequest) -> str:
        if request.text == "hang":
            await anyio.sleep_forever()
        return "ok"

    async with Host(model=ScriptedModel(respond), model_timeout=TIMEOUT) as host:
        chat = await host.sessions.create()

        with pytest.raises(TurnFailedError, match=r"model 'scripted' timed out after 0.2s"):
            await chat.run("hang")

        assert (await chat.run("fine")).text == "ok"


@pytest.mark.anyio
async def test_other_sessions_go_on_while_a_tool_hangs() -> None:
    async with Host(mods=[mod], model=ScriptedModel(tool_model), handler_timeout=1.0) as host:
        stuck, other = await host.sessions.create(), await host.sessions.create()
        async with anyio.create_task_group() as tg:
            tg.start_soon(host.submit, stuck, "use bad hang")
            await anyio.wait_all_tasks_blocked()
            with anyio.fail_after(0.5):
                reply = await host.submit(other, "hello")
            tg.cancel_scope.cancel()

        assert reply.text == "re: hello"


@pytest.mark.anyio
async def test_cancelling_the_caller_of_submit_propagates_instead_of_becoming_a_failed_command() -> None:
    started = anyio.Event()

    async def wait(argument: str | None, ctx: SlashCommandContext) -> str:
        started.set()
        await anyio.sleep_forever()
        raise AssertionError("unreachable")

    waiter = define_mod(
        metadata=ModMetadata(display_name="Waiter", description="Waits"),
        commands=[slash_command(id="wait", description="Waits forever", run=wait)],
    )
    results: list[Submission] = []
    with anyio.fail_after(2.0):
        async with anyio.create_task_group() as tg:
            async with Host(mods=[waiter], handler_timeout=None) as host:
                chat = await host.sessions.create()

                async def run_wait() -> None:
                    results.append(await host.submit(chat, "/wait"))

                tg.start_soon(run_wait)
                await started.wait()
                tg.cancel_scope.cancel()

    assert results == []


# -- plain def handlers reach the host the anyio way ------------------------------------------


def send_from_a_thread(argument: str | None, ctx: SlashCommandContext) -> str:
    """A plain ``def`` handler: it runs in a worker thread and comes back with anyio.from_thread."""
    turn = anyio.from_thread.run(ctx.session.send, AiPromptMessage(text=argument or "hello"))
    forked = anyio.from_thread.run(ctx.session.fork)
    return f"{turn.reply} / fork {forked.id != ctx.session.id}"


@attrs.frozen
class Topic:
    topic: str


def spawn_from_a_thread(input: Topic, ctx: ToolContext) -> str:
    child = anyio.from_thread.run(ctx.ai.sessions.create)
    reply = anyio.from_thread.run(child.run, f"research {input.topic}")
    return reply.text


threaded = define_mod(
    metadata=ModMetadata(display_name="Threaded", description="Plain def handlers that reach the host"),
    commands=[slash_command(id="relay", description="Send from a thread", run=send_from_a_thread)],
    ai=AiContributions(
        tools=[tool(name="research", description="Research in a new session", input_type=Topic, run=spawn_from_a_thread)]
    ),
)


@pytest.mark.anyio
async def test_a_plain_def_command_reaches_the_host_with_anyio_from_thread_run() -> None:
    async with Host(mods=[threaded], model=ScriptedModel(lambda r: f"echo {r.text}")) as host:
        chat = await host.sessions.create()

        out = await host.submit(chat, "/relay ping")

        assert out.error is None, out.error
        assert out.text == "echo ping / fork True"
        assert [t.reply for t in await chat.turns()] == ["echo ping"]


@pytest.mark.anyio
async def test_a_plain_def_tool_reaches_the_host_with_anyio_from_thread_run() -> None:
    def respond(request: ModelRequest) -> str | ToolCall:
        if request.text.startswith("research "):
            return f"found {request.text}"
        if request.tool_results:
            return f"done: {request.tool_results[-1].output}"
        return ToolCall(name="research", input={"topic": "threads"})

    model = ScriptedModel(respond)
    async with Host(mods=[threaded], model=model) as host:
        chat = await host.sessions.create()

        out = await host.submit(chat, "look it up")

        assert out.error is None, out.error
        assert out.text == "done: found research threads"


def _dig(table: dict[str, int], key: str) -> int:
    return table[key]  # the innermost line of this file: where the KeyError is raised


async def _raises_inside(argument: str | None, ctx: SlashCommandContext) -> str:
    return str(_dig({"a": 1}, argument or "b"))


def _raises_in_a_library(argument: str | None, ctx: SlashCommandContext) -> str:
    import json

    return str(json.loads(argument or "{"))  # the mod's own line that called what raised


def _line_of(text: str) -> int:
    lines = Path(__file__).read_text(encoding="utf-8").splitlines()
    return next(n for n, line in enumerate(lines, 1) if text in line and "_line_of" not in line)


located = define_mod(
    id="located",
    metadata=ModMetadata(display_name="Located", description="Handlers that fail somewhere"),
    commands=[
        slash_command(id="inside", description="raises in a helper of its file", run=_raises_inside),
        slash_command(id="library", description="a library raises", run=_raises_in_a_library),
    ],
)


@pytest.mark.anyio
async def test_a_failing_handler_names_the_file_and_line_of_the_mod_where_it_raised() -> None:
    async with Host(mods=[located]) as host:
        chat = await host.sessions.create()
        inside = await host.submit(chat, "/inside")
        library = await host.submit(chat, "/library")  # a plain def: it ran in a thread
    assert inside.error == f"command /inside of mod 'located' failed: KeyError: 'b' (raised at {__file__}:{_line_of('return table[key]')})"
    assert library.error is not None
    assert library.error.startswith("command /library of mod 'located' failed: JSONDecodeError: ")
    assert library.error.endswith(f" (raised at {__file__}:{_line_of('json.loads(argument')})")  # not json's own file

"""What the user types: `/name argument` dispatches a slash command, anything else is a prompt."""

from __future__ import annotations

import pytest

from host_sim import Completion, Host
from host_sim.examples import background_tasks
from modular_sdk import ModMetadata, SlashCommandContext, UnknownSessionError, define_mod, slash_command

received: list[str | None] = []


def record(argument: str | None, ctx: SlashCommandContext) -> str:
    received.append(argument)
    return f"got {argument!r}"


def nothing(argument: str | None, ctx: SlashCommandContext) -> None:
    return None


mod = define_mod(
    metadata=ModMetadata(display_name="Typing", description="Commands to type"),
    commands=[
        slash_command(id="echo", description="Echo the argument", argument_hint="<text>", run=record),
        slash_command(id="table", description="Show a table", run=nothing),
        slash_command(id="tag", description="Tag the session", argument_hint="<tag>", run=nothing),
        slash_command(id="status", description="Show status", run=nothing),
    ],
)


@pytest.fixture(autouse=True)
def clear() -> None:
    received.clear()


@pytest.mark.anyio
@pytest.mark.parametrize(
    ("typed", "argument"),
    [
        ("/echo", None),
        ("/echo x y", "x y"),
        ("/echo ", ""),
        ("/echo  two spaces", " two spaces"),
        ("/echo trailing ", "trailing "),
    ],
)
async def test_the_argument_is_the_text_after_the_one_separating_space(typed: str, argument: str | None) -> None:
    async with Host(mods=[mod]) as host:
        chat = await host.sessions.create()

        out = await host.submit(chat, typed)

        assert out.kind == "command"
        assert out.error is None
        assert out.turn is None
        assert received == [argument]
        assert out.text == f"got {argument!r}"


@pytest.mark.anyio
async def test_task_with_no_argument_gets_none() -> None:
    async with Host(mods=[background_tasks.mod]) as host:
        chat = await host.sessions.create()

        out = await host.submit(chat, "/task")

        assert out.text == "Usage: /task <prompt>"


@pytest.mark.anyio
async def test_an_unknown_command_is_a_clear_error_listing_close_matches() -> None:
    async with Host(mods=[mod, background_tasks.mod]) as host:
        chat = await host.sessions.create()

        out = await host.submit(chat, "/tsak write the tests")

        assert out.kind == "command"
        assert out.error == (
            "unknown command '/tsak'; did you mean '/task' or '/tag'? "
            "(commands: /echo, /status, /table, /tag, /task)"
        )
        assert out.text == out.error
        assert await chat.turns() == []
        assert await chat.children() == []


@pytest.mark.anyio
async def test_an_unknown_command_with_no_close_match_lists_every_command() -> None:
    async with Host(mods=[mod]) as host:
        chat = await host.sessions.create()

        out = await host.submit(chat, "/zzzzzz")

        assert out.error == "unknown command '/zzzzzz' (commands: /echo, /status, /table, /tag)"


@pytest.mark.anyio
async def test_an_unknown_command_on_a_host_without_mods_says_none_are_loaded() -> None:
    async with Host() as host:
        chat = await host.sessions.create()

        out = await host.submit(chat, "/task x")

        assert out.error == "unknown command '/task' (commands: none loaded)"


@pytest.mark.anyio
async def test_a_bare_slash_asks_for_a_command_name() -> None:
    async with Host(mods=[mod]) as host:
        chat = await host.sessions.create()

        out = await host.submit(chat, "/")

        assert out.error is not None
        assert out.error.startswith("type a command name after '/'")


@pytest.mark.anyio
async def test_text_not_starting_with_a_slash_is_a_prompt() -> None:
    async with Host(mods=[mod]) as host:
        chat = await host.sessions.create()

        out = await host.submit(chat, "echo is not a command here /echo")

        assert out.kind == "prompt"
        assert received == []
        assert out.turn is not None
        assert out.turn.message.type == "prompt"


@pytest.mark.anyio
@pytest.mark.parametrize(("typed", "sent"), [("//echo hi", "/echo hi"), ("//", "/"), ("///x", "//x")])
async def test_a_doubled_slash_sends_a_prompt_that_starts_with_a_literal_slash(typed: str, sent: str) -> None:
    async with Host(mods=[mod]) as host:
        chat = await host.sessions.create()
        before = len(received)

        out = await host.submit(chat, typed)

        assert out.kind == "prompt" and out.error is None
        assert len(received) == before  # no command ran
        assert out.turn is not None and out.turn.message.type == "prompt"
        assert out.turn.message.text == sent


@pytest.mark.anyio
async def test_submit_to_an_unknown_session_id_raises_unknown_session() -> None:
    async with Host(mods=[mod]) as host:
        with pytest.raises(UnknownSessionError, match="no session 'ses_missing'") as info:
            await host.submit("ses_missing", "hello")

        assert info.value.session_id == "ses_missing"


@pytest.mark.anyio
async def test_submit_accepts_a_session_id() -> None:
    async with Host(mods=[mod]) as host:
        chat = await host.sessions.create()

        out = await host.submit(chat.id, "hello")

        assert out.turn is not None and out.turn.session_id == chat.id


@pytest.mark.anyio
async def test_completions_put_the_best_match_first() -> None:
    async with Host(mods=[mod, background_tasks.mod]) as host:
        names = [c.name for c in host.completions("/ta")]

        assert names[:3] == ["tag", "task", "table"]
        assert "status" in names
        assert "echo" not in names


@pytest.mark.anyio
async def test_an_exact_name_completes_first() -> None:
    async with Host(mods=[mod, background_tasks.mod]) as host:
        assert host.completions("/task")[0].name == "task"
        assert host.completions("/task write the tests")[0].name == "task"


@pytest.mark.anyio
async def test_a_completion_carries_description_and_argument_hint() -> None:
    async with Host(mods=[background_tasks.mod]) as host:
        (entry,) = host.completions("/ta")

        assert entry == Completion(
            name="task",
            description="Fork this conversation and run background work.",
            argument_hint="<prompt>",
            mod_id="background-tasks",
        )


@pytest.mark.anyio
async def test_a_bare_slash_completes_every_command() -> None:
    async with Host(mods=[mod]) as host:
        assert sorted(c.name for c in host.completions("/")) == ["echo", "status", "table", "tag"]


@pytest.mark.anyio
async def test_a_typo_still_completes_by_similarity() -> None:
    async with Host(mods=[mod, background_tasks.mod]) as host:
        assert host.completions("/tsak")[0].name == "task"

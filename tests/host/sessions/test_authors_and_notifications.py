"""Authors are stamped by the host from the calling context; notifications are system events."""

from __future__ import annotations

import attrs
import pytest

from host_sim import Host, ModelRequest, ScriptedModel, ToolCall
from modular_sdk import (
    AiContributions,
    AiNotificationMessage,
    AiPromptMessage,
    AiTurnHandle,
    CommandContext,
    ModAuthor,
    ModMetadata,
    SlashCommandContext,
    ToolContext,
    UserAuthor,
    command,
    define_mod,
    slash_command,
    tool,
)


@attrs.frozen
class Note:
    """Something to write down."""

    text: str


sent: list[AiTurnHandle] = []
targets: list[str] = []


async def say(argument: str | None, ctx: SlashCommandContext) -> None:
    sent.append(await ctx.session.send(AiPromptMessage(text=argument or "")))


async def ping(argument: str | None, ctx: SlashCommandContext) -> None:
    sent.append(await ctx.session.notify(title="Ping", body=argument or ""))


async def palette_say(ctx: CommandContext) -> None:
    session = await ctx.ai.sessions.get(targets[0])
    sent.append(await session.send(AiPromptMessage(text="from the palette")))


async def take_note(note: Note, ctx: ToolContext) -> str:
    notebook = await ctx.ai.sessions.create()
    sent.append(await notebook.send(AiPromptMessage(text=note.text)))
    return "noted"


mod = define_mod(
    metadata=ModMetadata(display_name="Speaker", description="Sends on the user's behalf"),
    commands=[
        slash_command(id="say", description="Say something", run=say),
        slash_command(id="ping", description="Send a notification", run=ping),
        command(id="speaker.say", title="Say from the palette", run=palette_say),
    ],
    ai=AiContributions(tools=[tool(name="note", description="Write a note", input_type=Note, run=take_note)]),
)


@pytest.fixture(autouse=True)
def clear() -> None:
    sent.clear()
    targets.clear()


@pytest.mark.anyio
async def test_a_prompt_the_user_submits_is_stamped_user() -> None:
    async with Host(mods=[mod]) as host:
        chat = await host.sessions.create()

        out = await host.submit(chat, "hello")

        assert out.turn is not None
        assert out.turn.author == UserAuthor()
        assert out.turn.author.kind == "user"


@pytest.mark.anyio
async def test_host_code_calling_send_is_the_user() -> None:
    async with Host(mods=[mod]) as host:
        chat = await host.sessions.create()

        turn = await chat.send(AiPromptMessage(text="hello"))
        note = await chat.notify(title="t", body="b")

        assert turn.author == UserAuthor()
        assert note.author == UserAuthor()


@pytest.mark.anyio
async def test_a_send_inside_a_slash_command_is_stamped_with_the_mod_and_command() -> None:
    async with Host(mods=[mod]) as host:
        chat = await host.sessions.create()

        out = await host.submit(chat, "/say I am the user, honest")

        assert out.error is None
        (turn,) = sent
        assert turn.author == ModAuthor(mod_id="speaker", command_id="say")
        assert turn.author.kind == "mod"
        assert turn.author.tool_name is None


@pytest.mark.anyio
async def test_a_send_inside_a_palette_command_is_stamped_with_its_command() -> None:
    async with Host(mods=[mod]) as host:
        chat = await host.sessions.create()
        targets.append(chat.id)

        out = await host.run_command("speaker.say")

        assert out.error is None
        (turn,) = sent
        assert turn.author == ModAuthor(mod_id="speaker", command_id="speaker.say")


@pytest.mark.anyio
async def test_a_send_inside_a_tool_is_stamped_with_the_mod_and_tool_name() -> None:
    def respond(request: ModelRequest) -> str | ToolCall:
        if request.text == "remember milk" and not request.tool_results:
            return ToolCall(name="note", input={"text": "milk"})
        return "ok"

    async with Host(mods=[mod], model=ScriptedModel(respond)) as host:
        chat = await host.sessions.create()

        out = await host.submit(chat, "remember milk")

        assert out.error is None
        (turn,) = sent
        assert turn.author == ModAuthor(mod_id="speaker", tool_name="note")
        assert turn.author.command_id is None
        assert out.turn is not None and out.turn.author == UserAuthor()


@pytest.mark.anyio
async def test_the_stamp_does_not_leak_out_of_a_handler() -> None:
    async with Host(mods=[mod]) as host:
        chat = await host.sessions.create()
        await host.submit(chat, "/say from the mod")

        after = await chat.send(AiPromptMessage(text="from the user again"))

        assert after.author == UserAuthor()


def test_a_message_has_no_author_field_a_mod_could_set() -> None:
    assert "author" not in attrs.fields_dict(AiPromptMessage)
    assert "author" not in attrs.fields_dict(AiNotificationMessage)
    with pytest.raises(TypeError):
        AiPromptMessage(text="hi", author=UserAuthor())  # type: ignore[call-arg]


@pytest.mark.anyio
async def test_a_mod_notification_is_a_notification_stamped_with_the_mod() -> None:
    async with Host(mods=[mod]) as host:
        chat = await host.sessions.create()

        await host.submit(chat, "/ping build is green")

        (turn,) = sent
        assert turn.message == AiNotificationMessage(title="Ping", body="build is green")
        assert turn.message.type == "notification"
        assert turn.author == ModAuthor(mod_id="speaker", command_id="ping")


@pytest.mark.anyio
async def test_the_model_sees_a_notification_as_a_notification_never_the_user() -> None:
    seen: list[ModelRequest] = []

    def respond(request: ModelRequest) -> str:
        seen.append(request)
        return "ack"

    async with Host(mods=[mod], model=ScriptedModel(respond)) as host:
        chat = await host.sessions.create()
        await host.submit(chat, "Refactor the parser")
        await host.submit(chat, "/ping all done")
        await host.submit(chat, "thanks")

    prompt, note, after = seen
    assert prompt.kind == "prompt"
    assert prompt.text == "Refactor the parser"
    assert note.kind == "notification"
    assert note.message == AiNotificationMessage(title="Ping", body="all done")
    assert "Ping" in note.text and "all done" in note.text
    assert [h.kind for h in after.history] == ["prompt", "notification"]


@pytest.mark.anyio
async def test_the_transcript_marks_authors_and_notifications() -> None:
    async with Host(mods=[mod]) as host:
        chat = await host.sessions.create()
        await host.submit(chat, "Refactor the parser")
        await host.submit(chat, "/say mod words")
        await host.submit(chat, "/ping all done")
        await chat.notify(title="From the host", body="")

        transcript = await host.transcript(chat)

    lines = transcript.splitlines()
    assert "#0 [user] Refactor the parser" in lines
    assert "#1 [mod speaker /say] mod words" in lines
    assert "#2 [notification, system event from mod speaker /ping] Ping" in lines
    assert "    | all done" in lines
    assert "#3 [notification, system event from user] From the host" in lines


@pytest.mark.anyio
async def test_the_transcript_accepts_a_session_id() -> None:
    async with Host(mods=[mod]) as host:
        chat = await host.sessions.create()
        await host.submit(chat, "hi")

        assert await host.transcript(chat.id) == await host.transcript(chat)

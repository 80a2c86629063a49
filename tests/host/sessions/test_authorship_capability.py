"""Authorship is a capability: a handle acts as whoever it was given to, whatever context sends.

A mod's handles stamp its turns as the mod even when the send runs in a fresh
``contextvars`` context, another task, or a plain thread; a mod cannot borrow another
mod's (or the user's) stamp by copying context variables; and ``before_action`` policies
see the true author.
"""

from __future__ import annotations

import asyncio
import contextvars
import threading

import anyio
import anyio.from_thread
import anyio.lowlevel
import pytest

from host_sim import Host
from modular_sdk import (
    ActionEvent,
    AiPromptMessage,
    AiTurnHandle,
    Allow,
    Deny,
    ModAuthor,
    ModMetadata,
    SlashCommandContext,
    UserAuthor,
    before_action,
    define_mod,
    slash_command,
)

turns: list[AiTurnHandle] = []
captured: list[contextvars.Context] = []


async def from_a_thread(argument: str | None, ctx: SlashCommandContext) -> str:
    """Send from a plain thread that knows nothing of this handler's context."""
    token = anyio.lowlevel.current_token()
    done: list[AiTurnHandle] = []
    failed: list[Exception] = []

    def worker() -> None:
        try:
            done.append(anyio.from_thread.run(ctx.session.send, AiPromptMessage(text="from a thread"), token=token))
        except Exception as exc:
            failed.append(exc)

    thread = threading.Thread(target=worker)
    thread.start()
    await anyio.to_thread.run_sync(thread.join)
    if failed:
        raise failed[0]
    turns.extend(done)
    return "sent"


async def in_a_fresh_context(argument: str | None, ctx: SlashCommandContext) -> str:
    """Send from an asyncio task started with an empty context (easy to do by accident)."""
    loop = asyncio.get_running_loop()
    task = loop.create_task(ctx.session.send(AiPromptMessage(text="fresh context")), context=contextvars.Context())
    turns.append(await task)
    return "sent"


async def capture(argument: str | None, ctx: SlashCommandContext) -> str:
    captured.append(contextvars.copy_context())
    return "captured"


async def in_a_borrowed_context(argument: str | None, ctx: SlashCommandContext) -> str:
    """Send inside the context another mod's handler had: it must not become that mod."""
    loop = asyncio.get_running_loop()
    task = loop.create_task(ctx.session.send(AiPromptMessage(text="borrowed")), context=captured[-1])
    turns.append(await task)
    return "sent"


async def through_derived_handles(argument: str | None, ctx: SlashCommandContext) -> str:
    """Every handle reached from ctx acts as the mod: fork, turns, parent, sessions, children."""
    fork = await ctx.session.fork()
    turns.append(await fork.send(AiPromptMessage(text="in the fork")))
    (first, *_) = await fork.turns()
    at_turn = await first.fork()
    turns.append(await at_turn.send(AiPromptMessage(text="in the turn fork")))
    parent = await fork.parent()
    assert parent is not None
    root = await ctx.ai.sessions.create()
    turns.append(await root.send(AiPromptMessage(text="in a new root")))
    again = await ctx.ai.sessions.get(root.id)
    turns.append(await again.send(AiPromptMessage(text="through get")))
    (child, *_) = await parent.children()
    turns.append(await child.send(AiPromptMessage(text="through children")))
    return "sent"


writer = define_mod(
    metadata=ModMetadata(display_name="Writer", description="Sends in odd ways"),
    commands=[
        slash_command(id="thread", description="Send from a thread", run=from_a_thread),
        slash_command(id="fresh", description="Send in a fresh context", run=in_a_fresh_context),
        slash_command(id="borrow", description="Send in a borrowed context", run=in_a_borrowed_context),
        slash_command(id="derived", description="Send through derived handles", run=through_derived_handles),
    ],
)
other = define_mod(
    metadata=ModMetadata(display_name="Other", description="Lends its context"),
    commands=[slash_command(id="capture", description="Capture the context", run=capture)],
)


def no_mod_sends(event: ActionEvent) -> Allow | Deny:
    if event.author.kind == "mod":
        return Deny(reason=f"mods may not send (author {event.author!r})")
    return Allow()


policy = define_mod(
    metadata=ModMetadata(display_name="Policy", description="Mods may not send"),
    hooks=[before_action("session.send", no_mod_sends)],
)


@pytest.fixture(autouse=True)
def _clear() -> None:
    turns.clear()
    captured.clear()


@pytest.mark.anyio
async def test_a_send_from_a_plain_thread_is_stamped_with_the_mod_that_holds_the_handle() -> None:
    async with Host(mods=[writer]) as host:
        chat = await host.sessions.create()
        out = await host.submit(chat, "/thread")
        assert out.error is None, out.error
        (turn,) = turns
        assert turn.author == ModAuthor(mod_id="writer", command_id="thread")
        (stored,) = await chat.turns()
        assert stored.author == ModAuthor(mod_id="writer", command_id="thread")


@pytest.mark.parametrize("anyio_backend", ["asyncio"])
@pytest.mark.anyio
async def test_a_send_in_a_fresh_contextvars_context_is_still_the_mod() -> None:
    async with Host(mods=[writer]) as host:
        chat = await host.sessions.create()
        out = await host.submit(chat, "/fresh")
        assert out.error is None, out.error
        assert [t.author for t in turns] == [ModAuthor(mod_id="writer", command_id="fresh")]


@pytest.mark.parametrize("anyio_backend", ["asyncio"])
@pytest.mark.anyio
async def test_running_in_another_mods_copied_context_does_not_borrow_its_stamp() -> None:
    async with Host(mods=[writer, other]) as host:
        chat = await host.sessions.create()
        assert (await host.submit(chat, "/capture")).error is None
        out = await host.submit(chat, "/borrow")
        assert out.error is None, out.error
        assert [t.author for t in turns] == [ModAuthor(mod_id="writer", command_id="borrow")]


@pytest.mark.anyio
async def test_every_handle_reached_from_a_handler_context_acts_as_its_mod() -> None:
    async with Host(mods=[writer]) as host:
        chat = await host.sessions.create()
        await host.submit(chat, "hello")
        out = await host.submit(chat, "/derived")
        assert out.error is None, out.error
        assert len(turns) == 5
        assert {t.author for t in turns} == {ModAuthor(mod_id="writer", command_id="derived")}


@pytest.mark.anyio
async def test_handles_from_host_sessions_act_as_the_user() -> None:
    async with Host(mods=[writer]) as host:
        chat = await host.sessions.create()
        turn = await chat.send(AiPromptMessage(text="mine"))
        fork = await turn.fork()
        again = await host.sessions.get(fork.id)
        assert (await again.send(AiPromptMessage(text="also mine"))).author == UserAuthor()
        assert turn.author == UserAuthor()


@pytest.mark.anyio
async def test_a_policy_denying_mods_denies_a_mod_send_from_a_thread() -> None:
    async with Host(mods=[writer, policy]) as host:
        chat = await host.sessions.create()
        out = await host.submit(chat, "/thread")
        assert out.error is not None
        assert "mods may not send" in out.error
        assert "mod_id='writer', command_id='thread'" in out.error
        assert await chat.turns() == []
        user = await host.submit(chat, "the user may")
        assert user.error is None


@pytest.mark.parametrize("anyio_backend", ["asyncio"])
@pytest.mark.anyio
async def test_a_policy_denying_mods_denies_a_mod_send_in_a_fresh_context() -> None:
    async with Host(mods=[writer, policy]) as host:
        chat = await host.sessions.create()
        out = await host.submit(chat, "/fresh")
        assert out.error is not None and "mods may not send" in out.error
        assert await chat.turns() == []

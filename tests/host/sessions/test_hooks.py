"""`before_action` hooks: host-wide policy and a mod's own command guard."""

from __future__ import annotations

from collections.abc import Callable

import anyio
import pytest

from host_sim import Host
from modular_sdk import (
    ActionDeniedError,
    ActionEvent,
    AiPromptMessage,
    Allow,
    Deny,
    HookDecision,
    HostAction,
    Mod,
    ModAuthor,
    ModMetadata,
    SlashCommandContext,
    UserAuthor,
    before_action,
    define_mod,
    slash_command,
)


def deny_all(reason: str) -> Callable[[ActionEvent], HookDecision]:
    def handle(event: ActionEvent) -> HookDecision:
        return Deny(reason=reason)

    return handle


def policy(target: HostAction, handle: Callable[[ActionEvent], object]) -> Mod:
    """A mod with one hook; ``handle`` may be broken on purpose (mypy would refuse it)."""
    return define_mod(
        metadata=ModMetadata(display_name="Policy", description="Says no"),
        hooks=[before_action(target, handle)],  # type: ignore[arg-type]
    )


async def fork_here(argument: str | None, ctx: SlashCommandContext) -> str:
    fork = await ctx.session.fork()
    return fork.id


async def spawn_here(argument: str | None, ctx: SlashCommandContext) -> str:
    child = await ctx.session.spawn()
    return child.id


async def send_elsewhere(argument: str | None, ctx: SlashCommandContext) -> str:
    other = await ctx.ai.sessions.create()
    await other.send(AiPromptMessage(text="from a mod"))
    return other.id


worker = define_mod(
    metadata=ModMetadata(display_name="Worker", description="Forks, spawns and sends"),
    commands=[
        slash_command(id="fork-here", description="Fork", run=fork_here),
        slash_command(id="spawn-here", description="Spawn", run=spawn_here),
        slash_command(id="send-elsewhere", description="Send", run=send_elsewhere),
    ],
)


@pytest.mark.anyio
async def test_a_denied_create_raises_action_denied_with_the_reason() -> None:
    guard = policy("session.create", deny_all("no new sessions today"))
    async with Host(mods=[guard]) as host:
        with pytest.raises(ActionDeniedError, match=r"session.create was denied by mod 'policy': no new sessions today") as info:
            await host.sessions.create()

        assert info.value.reason == "no new sessions today"
        assert info.value.action == "session.create"
        assert info.value.mod_id == "policy"
        assert isinstance(info.value, PermissionError)
        assert (await host.sessions.list()).sessions == ()


@pytest.mark.anyio
async def test_a_denied_fork_raises_action_denied_and_creates_nothing() -> None:
    guard = policy("session.fork", deny_all("forks are off"))
    async with Host(mods=[guard]) as host:
        chat = await host.sessions.create()
        await chat.send(AiPromptMessage(text="hi"))

        with pytest.raises(ActionDeniedError, match=r"session.fork on session '.*' was denied by mod 'policy': forks are off") as info:
            await chat.fork()
        with pytest.raises(ActionDeniedError, match="forks are off"):
            await (await chat.turns())[0].fork()

        assert info.value.reason == "forks are off"
        assert await chat.children() == []
        assert len((await host.sessions.list()).sessions) == 1


@pytest.mark.anyio
async def test_a_denied_spawn_fails_the_command_with_the_reason() -> None:
    guard = policy("session.spawn", deny_all("no children"))
    async with Host(mods=[guard, worker]) as host:
        chat = await host.sessions.create()

        out = await host.submit(chat, "/spawn-here")

        assert out.error is not None
        assert "session.spawn" in out.error and "no children" in out.error
        assert out.error_kind == "denied"  # a policy said no: not a broken handler
        assert await chat.children() == []


@pytest.mark.anyio
async def test_a_denied_send_raises_action_denied_and_runs_no_turn() -> None:
    guard = policy("session.send", deny_all("read only"))
    async with Host(mods=[guard]) as host:
        chat = await host.sessions.create()

        with pytest.raises(ActionDeniedError, match="read only") as info:
            await chat.send(AiPromptMessage(text="hi"))
        with pytest.raises(ActionDeniedError, match="read only"):
            await chat.run("hi")
        out = await host.submit(chat, "hi")

        assert info.value.action == "session.send"
        assert out.error is not None and "read only" in out.error
        assert out.turn is None
        assert await chat.turns() == []
        # A notification is a different action and still goes through.
        await chat.notify(title="allowed", body="")


@pytest.mark.anyio
async def test_a_denied_notify_raises_action_denied() -> None:
    guard = policy("session.notify", deny_all("quiet hours"))
    async with Host(mods=[guard]) as host:
        chat = await host.sessions.create()

        with pytest.raises(ActionDeniedError, match="quiet hours") as info:
            await chat.notify(title="t", body="b")

        assert info.value.action == "session.notify"
        assert info.value.reason == "quiet hours"
        await chat.send(AiPromptMessage(text="prompts still work"))


@pytest.mark.anyio
async def test_a_command_hook_denies_its_own_command_through_submission_error() -> None:
    ran: list[str | None] = []

    def purge(argument: str | None, ctx: SlashCommandContext) -> str:
        ran.append(argument)
        return "purged"

    def only_users(event: ActionEvent) -> HookDecision:
        return Deny(reason="purge is disabled")

    guarded = define_mod(
        metadata=ModMetadata(display_name="Guardrails", description="Guards /purge"),
        commands=[slash_command(id="purge", description="Forget", run=purge)],
        hooks=[before_action("command:purge", only_users)],
    )
    async with Host(mods=[guarded]) as host:
        chat = await host.sessions.create()

        out = await host.submit(chat, "/purge now")

        assert out.kind == "command"
        assert out.error is not None
        assert "command:purge" in out.error and "purge is disabled" in out.error
        assert out.text == out.error
        assert ran == []


@pytest.mark.anyio
async def test_a_command_hook_sees_the_user_and_the_session() -> None:
    events: list[ActionEvent] = []

    def purge(argument: str | None, ctx: SlashCommandContext) -> str:
        return "purged"

    def record(event: ActionEvent) -> HookDecision:
        events.append(event)
        return Allow()

    guarded = define_mod(
        metadata=ModMetadata(display_name="Guardrails", description="Guards /purge"),
        commands=[slash_command(id="purge", description="Forget", run=purge)],
        hooks=[before_action("command:purge", record)],
    )
    async with Host(mods=[guarded]) as host:
        chat = await host.sessions.create()

        out = await host.submit(chat, "/purge")

        assert out.text == "purged"
        (event,) = events
        assert event.action == "command:purge"
        assert event.session_id == chat.id
        assert event.author == UserAuthor()


@pytest.mark.anyio
async def test_a_host_wide_hook_sees_actions_from_the_user_and_every_mod() -> None:
    events: list[ActionEvent] = []

    async def record(event: ActionEvent) -> HookDecision:
        events.append(event)
        return Allow()

    watcher = define_mod(
        metadata=ModMetadata(display_name="Watcher", description="Watches everything"),
        hooks=[
            before_action("session.fork", record),
            before_action("session.send", record),
            before_action("session.spawn", record),
            before_action("session.create", record),
        ],
    )
    async with Host(mods=[watcher, worker]) as host:
        chat = await host.sessions.create()
        await chat.send(AiPromptMessage(text="hi"))
        await chat.fork()
        await host.submit(chat, "/fork-here")
        await host.submit(chat, "/spawn-here")
        await host.submit(chat, "/send-elsewhere")

    seen = [(e.action, e.author) for e in events]
    fork_here_author = ModAuthor(mod_id="worker", command_id="fork-here")
    send_author = ModAuthor(mod_id="worker", command_id="send-elsewhere")
    assert seen == [
        ("session.create", UserAuthor()),
        ("session.send", UserAuthor()),
        ("session.fork", UserAuthor()),
        ("session.fork", fork_here_author),
        ("session.spawn", ModAuthor(mod_id="worker", command_id="spawn-here")),
        ("session.create", send_author),
        ("session.send", send_author),
    ]
    assert events[1].session_id == events[2].session_id
    assert events[0].session_id is None


@pytest.mark.anyio
async def test_a_host_wide_deny_of_one_mod_leaves_the_user_alone() -> None:
    def no_worker_forks(event: ActionEvent) -> HookDecision:
        if event.author.kind == "mod" and event.author.mod_id == "worker":
            return Deny(reason="the worker mod may not fork")
        return Allow()

    guard = policy("session.fork", no_worker_forks)
    async with Host(mods=[guard, worker]) as host:
        chat = await host.sessions.create()
        await chat.send(AiPromptMessage(text="hi"))

        out = await host.submit(chat, "/fork-here")
        mine = await chat.fork()

        assert out.error is not None and "the worker mod may not fork" in out.error
        assert await chat.children() == [mine]


@pytest.mark.anyio
async def test_a_hook_that_raises_denies_with_a_clear_message() -> None:
    def broken(event: ActionEvent) -> HookDecision:
        raise KeyError("policy table")

    guard = policy("session.fork", broken)
    async with Host(mods=[guard]) as host:
        chat = await host.sessions.create()
        await chat.send(AiPromptMessage(text="hi"))

        with pytest.raises(ActionDeniedError, match=r"denied because before_action hook 'session.fork' of mod 'policy' failed: KeyError: 'policy table' \(raised at .*test_hooks\.py:\d+\) \(a failing hook denies; fix the hook\)") as info:
            await chat.fork()

        assert "KeyError" in info.value.reason
        assert info.value.mod_id == "policy"
        assert await chat.children() == []


@pytest.mark.anyio
async def test_a_hook_that_hangs_denies_after_the_handler_timeout() -> None:
    async def hangs(event: ActionEvent) -> HookDecision:
        await anyio.sleep_forever()
        raise AssertionError("unreachable")

    guard = policy("session.send", hangs)
    async with Host(mods=[guard], handler_timeout=0.1) as host:
        chat = await host.sessions.create()

        with pytest.raises(ActionDeniedError, match=r"timed out after 0.1s") as info:
            await chat.send(AiPromptMessage(text="hi"))

        assert "timed out" in info.value.reason
        assert await chat.turns() == []


@pytest.mark.anyio
async def test_a_hook_returning_something_else_denies() -> None:
    guard = policy("session.create", lambda event: True)
    async with Host(mods=[guard]) as host:
        with pytest.raises(ActionDeniedError, match=r"a hook must return Allow\(\) or Deny\(reason=...\)") as info:
            await host.sessions.create()

        assert info.value.reason.startswith("hook returned True")


@pytest.mark.anyio
async def test_a_fork_hook_sees_the_exact_turn_the_fork_starts_after() -> None:
    seen: list[ActionEvent] = []

    def only_the_latest_turn(event: ActionEvent) -> HookDecision:
        seen.append(event)
        return Allow() if event.anchor_ordinal == 1 else Deny(reason="fork from the latest turn only")

    async with Host(mods=[policy("session.fork", only_the_latest_turn)]) as host:
        chat = await host.sessions.create()
        await chat.send(AiPromptMessage(text="one"))
        await chat.send(AiPromptMessage(text="two"))
        first, second = await chat.turns()

        await second.fork()
        with pytest.raises(ActionDeniedError, match="latest turn only"):
            await first.fork()

    assert [(e.anchor_ordinal, e.anchor_turn_id) for e in seen] == [(1, second.id), (0, first.id)]
    assert all(e.trigger is None for e in seen)


@pytest.mark.anyio
async def test_a_spawn_hook_sees_the_command_that_spawns() -> None:
    seen: list[ActionEvent] = []

    def record(event: ActionEvent) -> HookDecision:
        seen.append(event)
        return Allow()

    async with Host(mods=[policy("session.spawn", record), worker]) as host:
        chat = await host.sessions.create()
        out = await host.submit(chat, "/spawn-here")
        assert out.error is None

    (event,) = seen
    assert event.trigger is not None and event.trigger.kind == "command"
    assert event.trigger.command_id == "spawn-here"
    assert event.anchor_ordinal is None and event.anchor_turn_id is None

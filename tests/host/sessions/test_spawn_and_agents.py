"""Spawns (fresh children made by a command or tool) and agent root sessions."""

from __future__ import annotations

from datetime import UTC, datetime

import anyio
import attrs
import pytest

from host_sim import Host, ModelRequest, ScriptedModel, ToolCall
from modular_sdk import (
    AiContributions,
    AiPromptMessage,
    AiSessionDisplayMetadata,
    AiSessionHandle,
    CommandContext,
    CommandTrigger,
    EffectContext,
    ModMetadata,
    ModularError,
    RootLineage,
    SlashCommandContext,
    SpawnContextError,
    SpawnLineage,
    ToolContext,
    ToolTrigger,
    agent,
    command,
    define_mod,
    effect,
    slash_command,
    tool,
)

NOW = datetime(2025, 2, 3, 4, 5, 6, tzinfo=UTC)


@attrs.frozen
class Job:
    """A sub-job for a spawned session."""

    text: str


spawned: list[AiSessionHandle] = []


async def delegate(argument: str | None, ctx: SlashCommandContext) -> str:
    child = await ctx.session.spawn(metadata=AiSessionDisplayMetadata(label="Delegated"))
    spawned.append(child)
    answer = await child.run(argument or "nothing")
    return f"{child.id}: {answer.text}"


async def delegate_tool(job: Job, ctx: ToolContext) -> str:
    child = await ctx.session.spawn()
    spawned.append(child)
    return (await child.run(job.text)).text


async def review(argument: str | None, ctx: SlashCommandContext) -> str:
    reviewer = await ctx.ai.agents.get("reviewer").spawn(metadata=AiSessionDisplayMetadata(label="Review"))
    spawned.append(reviewer)
    return (await reviewer.run(f"Review: {argument}")).text


palette_target: list[str] = []


async def palette_spawn(ctx: CommandContext) -> str:
    root = await ctx.ai.sessions.get(palette_target[0])
    child = await root.spawn()
    spawned.append(child)
    return child.id


mod = define_mod(
    metadata=ModMetadata(display_name="Delegator", description="Spawns children"),
    commands=[
        slash_command(id="delegate", description="Spawn a child for a job", run=delegate),
        slash_command(id="review", description="Ask the reviewer agent", run=review),
        command(id="delegator.spawn", title="Spawn from the palette", run=palette_spawn),
    ],
    ai=AiContributions(
        tools=[tool(name="delegate", description="Hand a job to a child", input_type=Job, run=delegate_tool)],
        agents=[
            agent(
                id="reviewer",
                description="Reviews changes strictly",
                model="review-model",
                instructions="You are a strict code reviewer.",
            ),
            agent(id="helper", description="Helps"),
        ],
    ),
)


@pytest.fixture(autouse=True)
def clear_spawned() -> None:
    spawned.clear()
    palette_target.clear()


def spawn_lineage(session: AiSessionHandle) -> SpawnLineage:
    lineage = session.lineage
    assert isinstance(lineage, SpawnLineage), lineage
    return lineage


@pytest.mark.anyio
async def test_a_slash_command_spawns_an_empty_child_triggered_by_that_command() -> None:
    async with Host(mods=[mod], clock=lambda: NOW) as host:
        chat = await host.sessions.create(model="big-model", cwd="/srv/repo")
        await host.submit(chat, "Some context the child must not see")

        out = await host.submit(chat, "/delegate count the tests")

        assert out.error is None
        (child,) = spawned
        lineage = spawn_lineage(child)
        assert lineage.kind == "spawn"
        assert lineage.parent_session_id == chat.id
        assert lineage.parent_chat_uri
        assert chat.id in lineage.parent_chat_uri
        assert lineage.depth == 1
        assert lineage.spawned_at == NOW
        assert lineage.trigger == CommandTrigger(mod_id="delegator", command_id="delegate")
        assert lineage.trigger.kind == "command"
        assert child.metadata == AiSessionDisplayMetadata(label="Delegated")
        assert (child.model, child.cwd) == ("big-model", "/srv/repo")
        (turn,) = await child.turns()
        assert turn.ordinal == 0
        assert turn.message == AiPromptMessage(text="count the tests")


@pytest.mark.anyio
async def test_the_spawned_childs_model_sees_no_history() -> None:
    seen: list[ModelRequest] = []

    def respond(request: ModelRequest) -> str:
        seen.append(request)
        return "ok"

    async with Host(mods=[mod], model=ScriptedModel(respond)) as host:
        chat = await host.sessions.create()
        await host.submit(chat, "secret context")
        await host.submit(chat, "/delegate do it")

        (child,) = spawned
        assert seen[-1].session_id == child.id
        assert seen[-1].history == ()


@pytest.mark.anyio
async def test_a_tool_spawns_a_child_triggered_by_that_tool_call() -> None:
    def respond(request: ModelRequest) -> str | ToolCall:
        if request.kind == "prompt" and request.text == "please delegate":
            if not request.tool_results:
                return ToolCall(name="delegate", input={"text": "sub job"}, call_id="call_42")
            return f"child said {request.tool_results[0].output}"
        return f"done {request.text}"

    async with Host(mods=[mod], model=ScriptedModel(respond)) as host:
        chat = await host.sessions.create()

        out = await host.submit(chat, "please delegate")

        assert out.text == "child said done sub job"
        (child,) = spawned
        lineage = spawn_lineage(child)
        assert lineage.trigger == ToolTrigger(mod_id="delegator", tool_name="delegate", call_id="call_42")
        assert lineage.trigger.kind == "tool"
        assert lineage.parent_session_id == chat.id


@pytest.mark.anyio
async def test_a_palette_command_may_spawn_from_a_session_it_looks_up() -> None:
    async with Host(mods=[mod]) as host:
        chat = await host.sessions.create()
        palette_target.append(chat.id)

        out = await host.run_command("delegator.spawn")

        assert out.error is None
        (child,) = spawned
        assert out.text == child.id
        assert spawn_lineage(child).trigger == CommandTrigger(mod_id="delegator", command_id="delegator.spawn")
        assert await chat.children() == [child]


@pytest.mark.anyio
async def test_spawn_outside_any_handler_raises_spawn_context_error() -> None:
    async with Host(mods=[mod]) as host:
        chat = await host.sessions.create()

        with pytest.raises(SpawnContextError, match=r"was called outside any mod handler \(on a handle acting as the user\); a spawn needs a command or tool handler") as info:
            await chat.spawn()

        assert info.value.session_id == chat.id
        assert await chat.children() == []


@pytest.mark.anyio
async def test_spawn_inside_an_effect_raises_spawn_context_error() -> None:
    errors: list[SpawnContextError] = []

    async def try_spawn(ctx: EffectContext) -> None:
        root = await ctx.ai.sessions.create()
        try:
            await root.spawn()
        except SpawnContextError as exc:
            errors.append(exc)

    watcher = define_mod(
        metadata=ModMetadata(display_name="Watcher", description="An effect that tries to spawn"),
        effects=[effect(id="spawner", activate=try_spawn)],
    )
    async with Host(mods=[watcher]) as host:
        while host.effects[0].state == "running":
            await anyio.sleep(0.001)

    (error,) = errors
    assert "in an effect of mod 'watcher'; a spawn needs a command or tool handler" in str(error)


@pytest.mark.anyio
async def test_children_lists_forks_and_spawns_in_creation_order_but_not_agent_roots() -> None:
    async with Host(mods=[mod]) as host:
        chat = await host.sessions.create()
        await host.submit(chat, "hello")
        first_fork = await chat.fork()
        await host.submit(chat, "/delegate a")
        await host.submit(chat, "/review the diff")
        second_fork = await chat.fork()
        await host.submit(chat, "/delegate b")

        delegated_a, reviewer, delegated_b = spawned
        assert await chat.children() == [first_fork, delegated_a, second_fork, delegated_b]
        assert reviewer not in await chat.children()
        assert await delegated_a.parent() == chat


@pytest.mark.anyio
async def test_an_agent_spawn_is_a_root_session_configured_by_the_agent() -> None:
    seen: list[ModelRequest] = []

    def respond(request: ModelRequest) -> str:
        seen.append(request)
        return "LGTM"

    async with Host(mods=[mod], model=ScriptedModel(respond)) as host:
        chat = await host.sessions.create()
        await host.submit(chat, "hello")

        out = await host.submit(chat, "/review the diff")

        assert out.text == "LGTM"
        (reviewer,) = spawned
        assert reviewer.lineage == RootLineage()
        assert await reviewer.parent() is None
        assert reviewer.model == "review-model"
        assert reviewer.metadata == AiSessionDisplayMetadata(label="Review")
        assert seen[-1].session_id == reviewer.id
        assert seen[-1].instructions == "You are a strict code reviewer."
        assert seen[-1].model == "review-model"
        assert seen[0].instructions is None
        assert (await host.lineage.node(reviewer.id)).agent_id == "reviewer"


@pytest.mark.anyio
async def test_an_unknown_agent_is_refused_naming_the_declared_ones() -> None:
    caught: list[LookupError] = []

    async def ask(argument: str | None, ctx: SlashCommandContext) -> str:
        try:
            ctx.ai.agents.get("reviewr")
        except LookupError as refused:  # what AiAgents.get documents
            caught.append(refused)
        await ctx.ai.agents.get("reviewr").spawn()
        return "unreachable"

    asker = define_mod(
        metadata=ModMetadata(display_name="Asker", description="Asks a misspelled agent"),
        commands=[slash_command(id="ask", description="Ask", run=ask)],
    )
    async with Host(mods=[mod, asker]) as host:
        chat = await host.sessions.create()

        out = await host.submit(chat, "/ask")

        assert out.error is not None
        assert "no agent 'reviewr'; did you mean 'reviewer'?" in out.error
        assert "'helper'" in out.error
        [refused] = caught
        assert isinstance(refused, ModularError) and getattr(refused, "agent_id", None) == "reviewr"

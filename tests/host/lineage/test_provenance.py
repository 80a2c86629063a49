"""Provenance and forget, checked against what the model was really given, on random session trees.

A ScriptedModel records every request. Over random programs (roots, prompts, notifications,
failing turns, forks at any completed turn, spawns from a tool), for every turn:
``forward(t).turns`` is exactly the turns whose model history held ``t``; ``backward(t)``
is exactly the history ``t``'s model was given; the forget plan is the turn plus forward.
Then one random turn is forgotten: every planned turn is erased, every other turn keeps
its text, later model calls see erased entries, and a SqliteStore's files hold no byte of it.
"""

from __future__ import annotations

import tempfile
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from pathlib import Path

import anyio
import attrs
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from host_sim import (
    ErasurePlan,
    Host,
    MemoryStore,
    ModelRequest,
    Provenance,
    ScriptedModel,
    SqliteStore,
    Store,
    ToolCall,
    TurnOrigin,
    TurnRef,
    UnknownTurnError,
)
from modular_sdk import (
    AiContributions,
    AiNotificationMessage,
    AiPromptMessage,
    AiSessionHandle,
    AiTurnHandle,
    Mod,
    ModMetadata,
    ToolContext,
    ToolTrigger,
    define_mod,
    tool,
)


@attrs.frozen
class NoInput:
    pass


@attrs.define
class World:
    """What the test saw: each turn's history as its model received it, and spawns per turn text."""

    histories: dict[str, list[str]] = attrs.Factory(dict)  # turn text -> texts of its history entries
    erased_seen: dict[str, list[bool]] = attrs.Factory(dict)
    spawned_by_text: dict[str, list[str]] = attrs.Factory(dict)
    running_text: dict[str, str] = attrs.Factory(dict)  # session id -> text of its running turn


def make_mod(world: World) -> Mod:
    async def spawner(_: NoInput, ctx: ToolContext) -> str:
        child = await ctx.session.spawn()
        world.spawned_by_text.setdefault(world.running_text[ctx.session.id], []).append(child.id)
        return child.id

    return define_mod(
        metadata=ModMetadata(display_name="Spawner", description="A tool that spawns"),
        ai=AiContributions(tools=[tool(name="spawner", description="Spawn a child", input_type=NoInput, run=spawner)]),
    )


def make_model(world: World) -> ScriptedModel:
    async def respond(request: ModelRequest) -> str | ToolCall:
        world.running_text[request.session_id] = request.text
        world.histories[request.text] = [h.text for h in request.history]
        world.erased_seen[request.text] = [h.erased for h in request.history]
        if request.text.startswith("fail"):
            raise RuntimeError("this turn fails")
        if request.text.startswith("spawn") and not request.tool_results:
            return ToolCall(name="spawner", input={})
        return f"reply to {request.text}"

    return ScriptedModel(respond)


def clock() -> Callable[[], datetime]:
    now = [datetime(2026, 1, 1, tzinfo=UTC)]

    def tick() -> datetime:
        now[0] += timedelta(seconds=1)
        return now[0]

    return tick


Op = tuple[str, int, int]
programs = st.lists(
    st.tuples(
        st.sampled_from(["root", "prompt", "prompt", "notify", "fail", "spawn", "fork", "fork_at"]),
        st.integers(0, 30),
        st.integers(0, 30),
    ),
    min_size=1,
    max_size=18,
)


def text_of(turn: AiTurnHandle) -> str:
    message = turn.message
    if isinstance(message, AiNotificationMessage):
        return f"{message.title}\n\n{message.body}" if message.body else message.title
    return message.text


async def run_program(host: Host, program: list[Op]) -> list[AiSessionHandle]:
    sessions: list[AiSessionHandle] = [await host.sessions.create()]
    for n, (op, i, j) in enumerate(program):
        target = sessions[i % len(sessions)]
        secret = f"SECRET{n:03d}X"
        if op == "root":
            sessions.append(await host.sessions.create())
        elif op in ("prompt", "fail", "spawn"):
            prefix = {"prompt": "say", "fail": "fail", "spawn": "spawn"}[op]
            await host.submit(target.id, f"{prefix} {secret}")
        elif op == "notify":
            await target.notify(title=f"note {secret}", body=f"body {secret}")
        else:
            completed = [t for t in await target.turns() if t.status == "completed"]
            if completed:
                anchor = completed[-1] if op == "fork" else completed[j % len(completed)]
                sessions.append(await anchor.fork())
    return sessions


async def all_turns(host: Host, sessions: list[AiSessionHandle]) -> dict[str, AiTurnHandle]:
    """Every turn of the host by id (inherited ones once: under the session that ran them)."""
    out: dict[str, AiTurnHandle] = {}
    for s in sessions:
        for t in await s.turns():
            out.setdefault(t.id, t)
    return out


async def check_provenance(host: Host, world: World, sessions: list[AiSessionHandle]) -> dict[str, AiTurnHandle]:
    turns = await all_turns(host, sessions)
    by_text = {text_of(t): t.id for t in turns.values()}
    assert len(by_text) == len(turns)  # every text is unique, so histories map back to turn ids
    for turn_id, turn in turns.items():
        text = text_of(turn)
        fwd: Provenance = await host.lineage.forward(turn_id)
        saw_it = {by_text[t] for t, history in world.histories.items() if text in history and t in by_text}
        resting = {r.turn_id for r in fwd.turns}
        assert resting == {t for t in saw_it if turns[t].status == "completed"}
        assert isinstance(fwd.of, TurnRef) and fwd.of.turn_id == turn_id and fwd.sessions[0] == turn.session_id
        assert {r.session_id for r in fwd.turns} <= set(fwd.sessions)
        assert sorted(fwd.spawns) == sorted(world.spawned_by_text.get(text, []))
        for spawn in fwd.spawns:
            lineage = (await host.sessions.get(spawn)).lineage
            assert lineage.kind == "spawn" and isinstance(lineage.trigger, ToolTrigger)
        assert all(e.artifact is not None and e.artifact.source_id == turn_id for e in fwd.edges)
        forks_here = [  # forks anchored at this turn, in whichever session holding it they forked
            s.id for s in sessions if s.lineage.kind == "fork" and s.lineage.parent_session_id in fwd.sessions
            and s.lineage.parent_turn_ordinal == turn.ordinal
        ]
        assert sorted(e.to_session_id for e in fwd.edges) == sorted(forks_here)

        back: TurnOrigin = await host.lineage.backward(turn.message_id)  # a message id works too
        if text in world.histories:
            assert [turns[r.turn_id].id for r in back.read_from] == [by_text[t] for t in world.histories[text]]
        assert back.sessions[0] == turn.session_id

        plan: ErasurePlan = await host.lineage.forget(turn_id)
        assert plan.turns == (fwd.of, *fwd.turns) and not plan.erased
        assert (plan.sessions, plan.spawns, plan.edges) == (fwd.sessions, fwd.spawns, fwd.edges)
    return turns


async def story(make_store: Callable[[], Store], program: list[Op], victim: int, path: Path | None) -> None:
    world = World()
    mod = make_mod(world)
    async with Host(mods=[mod], model=make_model(world), store=make_store(), clock=clock()) as host:
        sessions = await run_program(host, program)
        turns = await check_provenance(host, world, sessions)
        texts = {t.id: (text_of(t), t.reply) for t in turns.values()}
        finished = [t for t in turns.values() if t.status != "running"]
        if not finished:
            return
        target = finished[victim % len(finished)]
        secret = text_of(target).split()[-1]

        done = await host.lineage.forget(target.id, dry_run=False)
        assert done.erased
        planned = {r.turn_id for r in done.turns}
        assert all(e.artifact is not None and e.artifact.label == "(erased)" for e in done.edges)
        for t in (await all_turns(host, sessions)).values():
            if t.id in planned:
                assert t.erased_at is not None and t.reply is None and secret not in text_of(t)
            else:
                assert t.erased_at is None and (text_of(t), t.reply) == texts[t.id]
        again = await host.lineage.forget(target.id, dry_run=False)  # nothing more to erase
        assert {r.turn_id for r in again.turns} == planned

        # A later model call in the turn's session sees erased entries where the turn was.
        holder = await host.sessions.get(target.session_id)
        probe = await holder.send(AiPromptMessage(text="after the erasure"))
        history = await host.lineage.backward(probe.id)
        erased_positions = [r.turn_id in planned for r in history.read_from]
        assert world.erased_seen["after the erasure"] == erased_positions
        assert all(secret not in h for h in world.histories["after the erasure"])
    if path is not None:
        for file in path.parent.iterdir():
            assert secret.encode() not in file.read_bytes(), f"{secret} is still in {file.name}"
    async with Host(store=make_store()) as reopened:  # what is durable agrees
        for turn_id in planned:
            assert (await reopened.sessions.turn(turn_id)).erased_at is not None


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(program=programs, victim=st.integers(0, 1000), backend=st.sampled_from(["asyncio", "trio"]))
def test_forward_backward_and_forget_agree_with_what_each_model_saw_memory_store(
    program: list[Op], victim: int, backend: str
) -> None:
    store = MemoryStore()
    anyio.run(story, lambda: store, program, victim, None, backend=backend)


@settings(max_examples=15, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(program=programs, victim=st.integers(0, 1000), backend=st.sampled_from(["asyncio", "trio"]))
def test_forward_backward_and_forget_agree_with_what_each_model_saw_and_sqlite_keeps_no_byte_of_it(
    program: list[Op], victim: int, backend: str
) -> None:
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "store.sqlite"
        anyio.run(story, lambda: SqliteStore(path), program, victim, path, backend=backend)


@pytest.mark.anyio
async def test_an_unknown_id_raises_unknown_turn_error_from_every_question() -> None:
    async with Host() as host:
        chat = await host.sessions.create()
        await host.submit(chat, "hello")
        for ask in (host.sessions.turn, host.lineage.forward, host.lineage.backward, host.lineage.forget):
            with pytest.raises(UnknownTurnError, match=r"no turn or message by this id in this host: 'turn_nope'") as info:
                await ask("turn_nope")
            assert info.value.id == "turn_nope"


@pytest.mark.anyio
async def test_a_turn_is_found_by_turn_id_and_by_message_id() -> None:
    async with Host() as host:
        chat = await host.sessions.create()
        turn = await chat.send(AiPromptMessage(text="hello"))
        by_id = await host.sessions.turn(turn.id)
        by_message = await host.sessions.turn(turn.message_id)
        assert by_id.id == by_message.id == turn.id and by_id.reply == "echo: hello"
        assert by_id.started_at <= (by_id.finished_at or by_id.started_at)


@pytest.mark.anyio
@pytest.mark.parametrize("size", [10, 3_000, 50_000])
async def test_forgetting_a_turn_leaves_no_byte_of_it_in_the_sqlite_files(tmp_path: Path, size: int) -> None:
    """Short rows rewritten in place, rows spilling into overflow pages, and pages freed by the erasure."""
    path = tmp_path / "store.sqlite"
    secret = "FORGETME" + "x" * size
    async with Host(store=SqliteStore(path)) as host:
        chat = await host.sessions.create()
        await host.submit(chat, "before")
        turn = await chat.send(AiPromptMessage(text=secret))
        fork = await turn.fork()
        await fork.send(AiPromptMessage(text="after, in the fork"))
        await host.submit(chat, "after")
        assert any(b"FORGETME" in f.read_bytes() for f in tmp_path.iterdir())  # it was written
        plan = await host.lineage.forget(turn.message_id, dry_run=False)
        assert [r.turn_id for r in plan.turns][0] == turn.id and len(plan.turns) == 3
        for file in tmp_path.iterdir():  # already while the host is open: the WAL was checkpointed
            assert b"FORGETME" not in file.read_bytes(), f"the erased text is still in {file.name}"
    for file in tmp_path.iterdir():
        assert b"FORGETME" not in file.read_bytes(), f"the erased text is still in {file.name}"
    async with Host(store=SqliteStore(path)) as again:
        kept = await again.sessions.get(chat.id)
        # "after" rests on the forgotten turn (its model saw it): it goes too; "before" stays.
        assert [t.message for t in await kept.turns()] == [
            AiPromptMessage(text="before"), AiPromptMessage(text=""), AiPromptMessage(text="")
        ]
        assert [t.reply for t in await kept.turns()] == ["echo: before", None, None]

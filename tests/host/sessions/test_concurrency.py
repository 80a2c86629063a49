"""Concurrency: one session runs its turns one at a time; sessions run side by side; forks race writers."""

from __future__ import annotations

import random

import anyio
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from host_sim import Host, ModelRequest, ScriptedModel
from modular_sdk import AiPromptMessage, AiSessionHandle, AiTurnHandle, ForkLineage, TurnFailedError

N_SENDS = 300


class Recorder:
    """A model that yields to the scheduler and records what it was asked, in order."""

    def __init__(self, *, fail_every: int = 0, rng: random.Random | None = None) -> None:
        self.requests: list[ModelRequest] = []
        self.active: dict[str, int] = {}
        self.max_active = 0
        self.fail_every = fail_every
        self.rng = rng

    async def respond(self, request: ModelRequest) -> str:
        self.active[request.session_id] = self.active.get(request.session_id, 0) + 1
        self.max_active = max(self.max_active, self.active[request.session_id])
        try:
            self.requests.append(request)
            for _ in range(self.rng.randrange(3) if self.rng else 1):
                await anyio.sleep(0)
            if self.fail_every and len(self.requests) % self.fail_every == 0:
                raise RuntimeError("flaky model")
            return f"reply to {request.text}"
        finally:
            self.active[request.session_id] -= 1


@pytest.mark.anyio
async def test_hundreds_of_concurrent_sends_get_dense_ordinals_and_matching_replies() -> None:
    model = Recorder()
    async with Host(model=ScriptedModel(model.respond)) as host:
        chat = await host.sessions.create()
        turns: dict[str, AiTurnHandle] = {}

        async def send(i: int) -> None:
            prompt = f"prompt {i}"
            turns[prompt] = await chat.send(AiPromptMessage(text=prompt))

        async with anyio.create_task_group() as tg:
            for i in range(N_SENDS):
                tg.start_soon(send, i)

        history = await chat.turns()
        assert len(turns) == N_SENDS
        assert [t.ordinal for t in history] == list(range(N_SENDS))
        assert sorted(t.ordinal for t in turns.values()) == list(range(N_SENDS))
        for prompt, turn in turns.items():
            assert turn.message == AiPromptMessage(text=prompt)
            assert turn.reply == f"reply to {prompt}"
            assert turn.status == "completed"
        assert model.max_active == 1


@pytest.mark.anyio
async def test_turns_of_one_session_run_in_ordinal_order_each_seeing_all_before_it() -> None:
    model = Recorder()
    async with Host(model=ScriptedModel(model.respond)) as host:
        chat = await host.sessions.create()
        async with anyio.create_task_group() as tg:
            for i in range(50):
                tg.start_soon(chat.send, AiPromptMessage(text=f"p{i}"))

        history = await chat.turns()

    assert [r.text for r in model.requests] == [_text(t) for t in history]
    for k, request in enumerate(model.requests):
        assert [h.text for h in request.history] == [_text(t) for t in history[:k]]


@pytest.mark.anyio
async def test_concurrent_sends_keep_arrival_order_when_started_in_sequence() -> None:
    async with Host() as host:
        chat = await host.sessions.create()
        async with anyio.create_task_group() as tg:
            for i in range(20):
                await tg.start(_send_started, chat, f"p{i}")

        assert [_text(t) for t in await chat.turns()] == [f"p{i}" for i in range(20)]


async def _send_started(chat: AiSessionHandle, text: str, *, task_status: anyio.abc.TaskStatus[None]) -> None:
    task_status.started()
    await chat.send(AiPromptMessage(text=text))


def _text(turn: AiTurnHandle) -> str:
    message = turn.message
    assert message.type == "prompt"
    return message.text


@pytest.mark.anyio
async def test_failures_among_concurrent_sends_keep_ordinals_dense() -> None:
    model = Recorder(fail_every=7)
    async with Host(model=ScriptedModel(model.respond)) as host:
        chat = await host.sessions.create()
        failures: list[TurnFailedError] = []

        async def send(i: int) -> None:
            try:
                await chat.send(AiPromptMessage(text=f"p{i}"))
            except TurnFailedError as exc:
                failures.append(exc)

        async with anyio.create_task_group() as tg:
            for i in range(100):
                tg.start_soon(send, i)

        history = await chat.turns()
        assert [t.ordinal for t in history] == list(range(100))
        assert len(failures) == sum(t.status == "failed" for t in history) == 100 // 7


@pytest.mark.anyio
async def test_a_slow_model_on_one_session_does_not_delay_another() -> None:
    release = anyio.Event()

    async def respond(request: ModelRequest) -> str:
        if request.text == "slow":
            await release.wait()
        return f"re: {request.text}"

    async with Host(model=ScriptedModel(respond)) as host:
        slow, fast = await host.sessions.create(), await host.sessions.create()
        async with anyio.create_task_group() as tg:
            tg.start_soon(slow.send, AiPromptMessage(text="slow"))
            await anyio.wait_all_tasks_blocked()

            with anyio.fail_after(1):
                for i in range(5):
                    await fast.send(AiPromptMessage(text=f"fast {i}"))
            assert [t.status for t in await slow.turns()] == ["running"]
            release.set()

        assert [t.status for t in await slow.turns()] == ["completed"]


@pytest.mark.anyio
async def test_different_sessions_run_their_turns_at_the_same_time() -> None:
    async def respond(request: ModelRequest) -> str:
        await anyio.sleep(0.3)
        return "done"

    async with Host(model=ScriptedModel(respond)) as host:
        sessions = [await host.sessions.create() for _ in range(10)]
        start = anyio.current_time()
        async with anyio.create_task_group() as tg:
            for session in sessions:
                tg.start_soon(session.run, "work")
        elapsed = anyio.current_time() - start

    assert elapsed < 1.5  # one after another would take 3 s


async def race_forks_and_writers(seed: int, writers: int, forkers: int) -> None:
    rng = random.Random(seed)
    model = Recorder(fail_every=rng.choice([0, 5]), rng=rng)
    async with Host(model=ScriptedModel(model.respond)) as host:
        root = await host.sessions.create()
        await root.send(AiPromptMessage(text="seed"))
        forks: list[tuple[AiSessionHandle, AiSessionHandle, int]] = []  # (parent, fork, floor)

        async def writer(w: int) -> None:
            for i in range(rng.randrange(1, 6)):
                await anyio.sleep(0)
                try:
                    await root.send(AiPromptMessage(text=f"w{w}.{i}"))
                except TurnFailedError:
                    pass

        async def forker(f: int) -> None:
            for _ in range(rng.randrange(1, 4)):
                for _ in range(rng.randrange(4)):
                    await anyio.sleep(0)
                parent = rng.choice([root] + [fork for _, fork, _ in forks])
                history = await parent.turns()
                completed = [t for t in history if t.status == "completed"]
                if rng.random() < 0.5 and completed:
                    anchor = rng.choice(completed)
                    fork = await anchor.fork()
                    forks.append((parent, fork, anchor.ordinal))
                    assert isinstance(fork.lineage, ForkLineage)
                    assert fork.lineage.parent_turn_ordinal == anchor.ordinal
                else:
                    floor = max((t.ordinal for t in completed), default=-1)
                    fork = await parent.fork()
                    forks.append((parent, fork, floor))
                if rng.random() < 0.5:
                    try:
                        await fork.send(AiPromptMessage(text=f"in fork {f}"))
                    except TurnFailedError:
                        pass

        async with anyio.create_task_group() as tg:
            for w in range(writers):
                tg.start_soon(writer, w)
            for f in range(forkers):
                tg.start_soon(forker, f)

        for parent, fork, floor in forks:
            lineage = fork.lineage
            assert isinstance(lineage, ForkLineage)
            anchor = lineage.parent_turn_ordinal
            assert anchor >= floor
            parent_ids = [t.id for t in await parent.turns()]
            fork_turns = await fork.turns()
            inherited = [t for t in fork_turns if t.ordinal <= anchor]
            assert [t.id for t in inherited] == parent_ids[: anchor + 1]
            assert all(t.status != "running" for t in inherited)
            assert inherited[-1].status == "completed"
            assert all(t.session_id == fork.id for t in fork_turns[anchor + 1 :])
            assert [t.ordinal for t in fork_turns] == list(range(len(fork_turns)))
        assert model.max_active == 1


@pytest.mark.anyio
@pytest.mark.parametrize("seed", range(6))
async def test_every_fork_racing_writers_copies_a_prefix_of_its_parent(seed: int) -> None:
    await race_forks_and_writers(seed, writers=4, forkers=4)


@pytest.mark.anyio
@settings(max_examples=15, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(seed=st.integers(min_value=0, max_value=2**32 - 1), writers=st.integers(1, 5), forkers=st.integers(1, 5))
async def test_forks_racing_writers_copy_prefixes_under_any_schedule(seed: int, writers: int, forkers: int) -> None:
    await race_forks_and_writers(seed, writers=writers, forkers=forkers)

"""Forks: `session.fork` copies through the last completed turn, `turn.fork` through exactly one."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import cast

import anyio
import pytest

from host_sim import Host, MemoryStore, ModelRequest, ScriptedModel, Store, TurnRecord
from modular_sdk import (
    AiPromptMessage,
    AiSessionDisplayMetadata,
    AiSessionHandle,
    AiTurnHandle,
    ForkLineage,
    NoConversationError,
    TurnFailedError,
)

NOW = datetime(2025, 6, 1, 12, 0, tzinfo=UTC)


class Gate:
    """A model that holds any prompt starting with ``slow`` until released; one with ``boom`` fails."""

    def __init__(self) -> None:
        self.started = anyio.Event()
        self.release = anyio.Event()
        self.requests: list[ModelRequest] = []

    async def respond(self, request: ModelRequest) -> str:
        self.requests.append(request)
        if request.text.startswith("slow"):
            self.started.set()
            await self.release.wait()
        if "boom" in request.text:
            raise RuntimeError("model exploded")
        return f"re: {request.text}"


def lineage_of(session: AiSessionHandle) -> ForkLineage:
    lineage = session.lineage
    assert isinstance(lineage, ForkLineage), lineage
    return lineage


async def texts(session: AiSessionHandle) -> list[str]:
    out: list[str] = []
    for turn in await session.turns():
        message = turn.message
        assert message.type == "prompt"
        out.append(message.text)
    return out


@pytest.mark.anyio
async def test_fork_copies_the_conversation_through_its_last_completed_turn() -> None:
    async with Host(clock=lambda: NOW) as host:
        chat = await host.sessions.create()
        await chat.send(AiPromptMessage(text="one"))
        last = await chat.send(AiPromptMessage(text="two"))

        fork = await chat.fork(metadata=AiSessionDisplayMetadata(label="Branch"))

        lineage = lineage_of(fork)
        assert lineage.kind == "fork"
        assert lineage.parent_session_id == chat.id
        assert lineage.parent_turn_ordinal == 1
        assert lineage.parent_runner_id == last.runner_id
        assert lineage.depth == 1
        assert lineage.forked_at == NOW
        assert lineage.parent_user_message_id == last.message_id
        assert fork.metadata == AiSessionDisplayMetadata(label="Branch")
        assert await texts(fork) == ["one", "two"]


@pytest.mark.anyio
async def test_fork_inherits_model_and_cwd() -> None:
    async with Host() as host:
        chat = await host.sessions.create(model="big-model", cwd="/srv/repo")
        await chat.send(AiPromptMessage(text="one"))

        fork = await chat.fork()

        assert (fork.model, fork.cwd) == ("big-model", "/srv/repo")


@pytest.mark.anyio
async def test_fork_of_a_session_with_no_completed_turn_raises_no_conversation() -> None:
    async with Host() as host:
        chat = await host.sessions.create()

        with pytest.raises(NoConversationError, match=r"has no completed turn to fork from; a fork needs a completed turn") as info:
            await chat.fork()

        assert info.value.session_id == chat.id
        assert await chat.children() == []


@pytest.mark.anyio
async def test_fork_of_a_session_whose_only_turn_failed_raises_no_conversation() -> None:
    gate = Gate()
    async with Host(model=ScriptedModel(gate.respond)) as host:
        chat = await host.sessions.create()
        with pytest.raises(TurnFailedError):
            await chat.send(AiPromptMessage(text="boom"))

        with pytest.raises(NoConversationError, match="a fork needs a completed turn") as info:
            await chat.fork()

        assert info.value.session_id == chat.id


@pytest.mark.anyio
async def test_fork_does_not_copy_a_running_turn() -> None:
    gate = Gate()
    async with Host(model=ScriptedModel(gate.respond)) as host:
        chat = await host.sessions.create()
        await chat.send(AiPromptMessage(text="done"))
        async with anyio.create_task_group() as tg:
            tg.start_soon(chat.send, AiPromptMessage(text="slow work"))
            await gate.started.wait()

            fork = await chat.fork()
            gate.release.set()

        assert lineage_of(fork).parent_turn_ordinal == 0
        assert await texts(fork) == ["done"]
        assert await texts(chat) == ["done", "slow work"]


@pytest.mark.anyio
async def test_nothing_said_after_a_fork_reaches_the_other_side() -> None:
    async with Host() as host:
        chat = await host.sessions.create()
        await chat.send(AiPromptMessage(text="shared"))
        fork = await chat.fork()

        in_fork = await fork.send(AiPromptMessage(text="only in the fork"))
        in_chat = await chat.send(AiPromptMessage(text="only in the chat"))

        assert in_fork.ordinal == in_chat.ordinal == 1
        assert in_fork.session_id == fork.id
        assert await texts(fork) == ["shared", "only in the fork"]
        assert await texts(chat) == ["shared", "only in the chat"]


@pytest.mark.anyio
async def test_inherited_turns_are_shared_not_rerun() -> None:
    gate = Gate()
    async with Host(model=ScriptedModel(gate.respond)) as host:
        chat = await host.sessions.create()
        originals = [await chat.send(AiPromptMessage(text=f"t{i}")) for i in range(3)]
        calls = len(gate.requests)

        fork = await chat.fork()
        inherited = await fork.turns()

        assert len(gate.requests) == calls
        assert [(t.id, t.ordinal, t.session_id, t.reply) for t in inherited] == [
            (t.id, t.ordinal, chat.id, t.reply) for t in originals
        ]


@pytest.mark.anyio
async def test_the_model_sees_inherited_turns_as_history_in_a_fork() -> None:
    gate = Gate()
    async with Host(model=ScriptedModel(gate.respond)) as host:
        chat = await host.sessions.create()
        await chat.send(AiPromptMessage(text="first"))
        await chat.send(AiPromptMessage(text="second"))
        fork = await (await chat.turns())[0].fork()

        await fork.send(AiPromptMessage(text="in the fork"))

        assert [h.text for h in gate.requests[-1].history] == ["first"]
        assert gate.requests[-1].session_id == fork.id


@pytest.mark.anyio
async def test_a_fork_continues_the_ordinals_after_its_anchor() -> None:
    async with Host() as host:
        chat = await host.sessions.create()
        for i in range(5):
            await chat.send(AiPromptMessage(text=f"t{i}"))
        anchor = (await chat.turns())[1]

        fork = await anchor.fork()
        turn = await fork.send(AiPromptMessage(text="next"))

        assert turn.ordinal == 2
        assert [t.ordinal for t in await fork.turns()] == [0, 1, 2]
        assert await texts(fork) == ["t0", "t1", "next"]


@pytest.mark.anyio
async def test_turn_fork_copies_exactly_through_that_turn_whatever_entered_after() -> None:
    async with Host() as host:
        chat = await host.sessions.create()
        await chat.send(AiPromptMessage(text="one"))
        anchor = await chat.send(AiPromptMessage(text="two"))
        await chat.send(AiPromptMessage(text="three"))
        await chat.send(AiPromptMessage(text="four"))

        fork = await anchor.fork(metadata=AiSessionDisplayMetadata(label="At two"))

        lineage = lineage_of(fork)
        assert lineage.parent_session_id == chat.id
        assert lineage.parent_turn_ordinal == 1
        assert lineage.parent_runner_id == anchor.runner_id
        assert lineage.parent_user_message_id == anchor.message_id
        assert fork.metadata == AiSessionDisplayMetadata(label="At two")
        assert await texts(fork) == ["one", "two"]


@pytest.mark.anyio
async def test_turn_fork_waits_for_a_running_turn_to_complete() -> None:
    gate = Gate()
    async with Host(model=ScriptedModel(gate.respond)) as host:
        chat = await host.sessions.create()
        await chat.send(AiPromptMessage(text="done"))
        forks: list[AiSessionHandle] = []
        async with anyio.create_task_group() as tg:
            tg.start_soon(chat.send, AiPromptMessage(text="slow work"))
            await gate.started.wait()
            running = (await chat.turns())[1]
            assert running.status == "running"

            async def fork_it() -> None:
                forks.append(await running.fork())

            tg.start_soon(fork_it)
            await anyio.wait_all_tasks_blocked()
            assert forks == []
            gate.release.set()

        (fork,) = forks
        assert running.status == "completed"
        assert lineage_of(fork).parent_turn_ordinal == 1
        assert await texts(fork) == ["done", "slow work"]


@pytest.mark.anyio
async def test_turn_fork_of_a_failed_turn_raises_turn_failed() -> None:
    gate = Gate()
    async with Host(model=ScriptedModel(gate.respond)) as host:
        chat = await host.sessions.create()
        await chat.send(AiPromptMessage(text="fine"))
        with pytest.raises(TurnFailedError):
            await chat.send(AiPromptMessage(text="boom"))
        failed = (await chat.turns())[1]

        with pytest.raises(TurnFailedError, match=r"only completed turns can be fork anchors") as info:
            await failed.fork()

        assert info.value.turn_id == failed.id
        assert "model exploded" in info.value.reason
        assert await chat.children() == []


@pytest.mark.anyio
async def test_turn_fork_of_a_running_turn_that_then_fails_raises_turn_failed() -> None:
    gate = Gate()
    async with Host(model=ScriptedModel(gate.respond)) as host:
        chat = await host.sessions.create()
        await chat.send(AiPromptMessage(text="fine"))
        errors: list[TurnFailedError] = []

        async def send_failing() -> None:
            with pytest.raises(TurnFailedError):
                await chat.send(AiPromptMessage(text="slow boom"))

        async def fork_it(turn: AiTurnHandle) -> None:
            try:
                await turn.fork()
            except TurnFailedError as exc:
                errors.append(exc)

        async with anyio.create_task_group() as tg:
            tg.start_soon(send_failing)
            await gate.started.wait()
            tg.start_soon(fork_it, (await chat.turns())[1])
            await anyio.wait_all_tasks_blocked()
            gate.release.set()

        (error,) = errors
        assert "model exploded" in error.reason


@pytest.mark.anyio
async def test_a_failed_turn_is_inherited_marked_failed_by_forks_past_it() -> None:
    gate = Gate()
    async with Host(model=ScriptedModel(gate.respond)) as host:
        chat = await host.sessions.create()
        await chat.send(AiPromptMessage(text="zero"))
        with pytest.raises(TurnFailedError):
            await chat.send(AiPromptMessage(text="boom"))
        await chat.send(AiPromptMessage(text="two"))

        fork = await chat.fork()
        turns = await fork.turns()

        assert [(t.ordinal, t.status) for t in turns] == [(0, "completed"), (1, "failed"), (2, "completed")]
        assert turns[1].session_id == chat.id
        assert turns[1].error is not None and "model exploded" in turns[1].error
        assert lineage_of(fork).parent_turn_ordinal == 2


@pytest.mark.anyio
async def test_a_turn_handle_from_a_forks_turns_forks_that_fork() -> None:
    async with Host() as host:
        chat = await host.sessions.create()
        await chat.send(AiPromptMessage(text="zero"))
        await chat.send(AiPromptMessage(text="one"))
        fork = await chat.fork()
        await fork.send(AiPromptMessage(text="fork two"))
        await chat.send(AiPromptMessage(text="chat two"))

        inherited = (await fork.turns())[1]
        assert inherited.session_id == chat.id
        grandchild = await inherited.fork()

        lineage = lineage_of(grandchild)
        assert lineage.parent_session_id == fork.id
        assert lineage.parent_turn_ordinal == 1
        assert lineage.depth == 2
        assert await texts(grandchild) == ["zero", "one"]
        assert await grandchild.parent() == fork
        assert await fork.children() == [grandchild]


@pytest.mark.anyio
async def test_a_fork_of_a_fork_reads_through_the_whole_chain() -> None:
    async with Host() as host:
        chat = await host.sessions.create()
        await chat.send(AiPromptMessage(text="a"))
        first = await chat.fork()
        await first.send(AiPromptMessage(text="b"))
        second = await first.fork()
        await second.send(AiPromptMessage(text="c"))
        third = await second.fork()

        assert lineage_of(third).depth == 3
        assert await texts(third) == ["a", "b", "c"]
        assert [t.session_id for t in await third.turns()] == [chat.id, first.id, second.id]


@pytest.mark.anyio
async def test_a_fork_anchored_at_a_mod_or_notification_turn_has_no_user_message_id() -> None:
    async with Host() as host:
        chat = await host.sessions.create()
        note = await chat.notify(title="CI", body="green")

        fork = await note.fork()

        # Host code is the user, so even a notification it sends is the user's message.
        assert note.author.kind == "user"
        assert lineage_of(fork).parent_user_message_id == note.message_id


@pytest.mark.anyio
async def test_parent_and_children_of_forks() -> None:
    async with Host() as host:
        chat = await host.sessions.create()
        await chat.send(AiPromptMessage(text="a"))
        first = await chat.fork()
        second = await chat.fork()

        assert await chat.children() == [first, second]
        assert await first.parent() == chat
        assert await second.parent() == chat


class HeldCommit:
    """A store whose ``finish_turn`` waits until released: a group commit slow to land."""

    def __init__(self, inner: Store) -> None:
        self._inner = inner
        self.hold = False
        self.writing = anyio.Event()
        self.release = anyio.Event()

    def __getattr__(self, name: str) -> object:
        return getattr(self._inner, name)

    async def finish_turn(self, record: TurnRecord) -> None:
        if self.hold:
            self.writing.set()
            await self.release.wait()
        await self._inner.finish_turn(record)


@pytest.mark.anyio
async def test_a_turn_reads_completed_only_once_its_result_is_durable_so_a_fork_never_misses_it() -> None:
    store = HeldCommit(MemoryStore())
    async with Host(store=cast(Store, store)) as host:
        chat = await host.sessions.create()
        await chat.send(AiPromptMessage(text="one"))
        store.hold = True
        with anyio.fail_after(10):
            async with anyio.create_task_group() as tg:
                tg.start_soon(chat.send, AiPromptMessage(text="two"))
                await store.writing.wait()  # the model answered; the result is not durable yet
                try:
                    *_, last = await chat.turns()
                    assert last.status == "running" and last.finished_at is None
                    early = await chat.fork()  # at the last turn that is durable
                    assert lineage_of(early).parent_turn_ordinal == 0
                finally:
                    store.release.set()

        *_, last = await chat.turns()
        assert last.status == "completed" and last.finished_at is not None
        assert lineage_of(await chat.fork()).parent_turn_ordinal == 1

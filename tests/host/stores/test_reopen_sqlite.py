"""A host reopened on the same SQLite file sees every finished turn and all lineage."""

from __future__ import annotations

from pathlib import Path

import anyio
import pytest

from host_sim import Host, ModelRequest, ScriptedModel, SessionMetrics, SqliteStore, StoreError
from host_sim.examples import background_tasks, delegate
from modular_sdk import (
    AiPromptMessage,
    AiSessionDisplayMetadata,
    AiSessionHandle,
    AiTurnHandle,
    ForkLineage,
    ModAuthor,
    SessionId,
    SpawnLineage,
    TurnFailedError,
    UnknownSessionError,
    UserAuthor,
)


def snapshot(turns: list[AiTurnHandle]) -> list[tuple[object, ...]]:
    return [
        (t.id, t.ordinal, t.session_id, t.status, t.message, t.message_id, t.author, t.reply, t.runner_id)
        for t in turns
    ]


@pytest.fixture
def db(tmp_path: Path) -> Path:
    return tmp_path / "host.sqlite"


@pytest.mark.anyio
async def test_a_reopened_host_sees_every_session_turn_and_lineage_of_a_task_run(db: Path) -> None:
    async with Host(mods=[background_tasks.mod], store=SqliteStore(db)) as host:
        chat = await host.sessions.create(metadata=AiSessionDisplayMetadata(label="Main"))
        await host.submit(chat, "Refactor the parser")
        await host.submit(chat, "/task write the tests")
        (work,) = await chat.children()
        (report,) = await work.children()
        before = {s.id: (s.lineage, s.metadata, s.model, s.cwd, snapshot(await s.turns())) for s in (chat, work, report)}
        chain_before = await host.lineage.chain(work.id)

    async with Host(mods=[background_tasks.mod], store=SqliteStore(db)) as again:
        after = {}
        for session_id in before:
            s = await again.sessions.get(session_id)
            after[session_id] = (s.lineage, s.metadata, s.model, s.cwd, snapshot(await s.turns()))
        assert after == before
        restored_chat = await again.sessions.get(chat.id)
        assert [c.id for c in await restored_chat.children()] == [work.id]
        restored_report = await again.sessions.get(report.id)
        parent = await restored_report.parent()
        assert parent is not None and parent.id == work.id
        assert await again.lineage.chain(work.id) == chain_before
        notification = (await restored_chat.turns())[1]
        assert notification.message.type == "notification"
        assert notification.author == ModAuthor(mod_id="background-tasks", command_id="task")


@pytest.mark.anyio
async def test_new_forks_of_restored_sessions_work(db: Path) -> None:
    async with Host(store=SqliteStore(db)) as host:
        chat = await host.sessions.create()
        first = await chat.send(AiPromptMessage(text="one"))
        await chat.send(AiPromptMessage(text="two"))
        branch = await first.fork()
        await branch.send(AiPromptMessage(text="branch two"))

    seen: list[ModelRequest] = []

    def respond(request: ModelRequest) -> str:
        seen.append(request)
        return f"re: {request.text}"

    async with Host(store=SqliteStore(db), model=ScriptedModel(respond)) as again:
        restored = await again.sessions.get(chat.id)
        fork = await restored.fork()
        at_first = await (await restored.turns())[0].fork()
        restored_branch = await again.sessions.get(branch.id)
        grandchild = await restored_branch.fork()

        assert isinstance(fork.lineage, ForkLineage) and fork.lineage.parent_turn_ordinal == 1
        assert [t.id for t in await fork.turns()] == [t.id for t in await restored.turns()]
        assert [t.ordinal for t in await at_first.turns()] == [0]
        assert isinstance(grandchild.lineage, ForkLineage) and grandchild.lineage.depth == 2
        assert [t.session_id for t in await grandchild.turns()] == [chat.id, branch.id]

        turn = await fork.send(AiPromptMessage(text="three"))
        assert turn.ordinal == 2
        assert [h.text for h in seen[-1].history] == ["one", "two"]
        assert [c.id for c in await restored.children()] == [branch.id, fork.id, at_first.id]

        edges = (await again.lineage.chain(chat.id)).edges
        assert {(e.from_session_id, e.to_session_id) for e in edges} == {
            (chat.id, branch.id),
            (chat.id, fork.id),
            (chat.id, at_first.id),
            (branch.id, grandchild.id),
        }


@pytest.mark.anyio
async def test_a_restored_session_continues_its_ordinals(db: Path) -> None:
    async with Host(store=SqliteStore(db)) as host:
        chat = await host.sessions.create()
        for i in range(3):
            await chat.send(AiPromptMessage(text=f"t{i}"))

    async with Host(store=SqliteStore(db)) as again:
        restored = await again.sessions.get(chat.id)
        turn = await restored.send(AiPromptMessage(text="t3"))

        assert turn.ordinal == 3
        assert turn.author == UserAuthor()

    async with Host(store=SqliteStore(db)) as third:
        assert [t.ordinal for t in await (await third.sessions.get(chat.id)).turns()] == [0, 1, 2, 3]


@pytest.mark.anyio
async def test_a_failed_turn_is_restored_failed_and_keeps_its_ordinal(db: Path) -> None:
    def respond(request: ModelRequest) -> str:
        if request.text == "boom":
            raise RuntimeError("model exploded")
        return "ok"

    async with Host(store=SqliteStore(db), model=ScriptedModel(respond)) as host:
        chat = await host.sessions.create()
        await chat.send(AiPromptMessage(text="fine"))
        with pytest.raises(TurnFailedError):
            await chat.send(AiPromptMessage(text="boom"))

    async with Host(store=SqliteStore(db), model=ScriptedModel(respond)) as again:
        restored = await again.sessions.get(chat.id)
        turns = await restored.turns()
        assert [(t.ordinal, t.status) for t in turns] == [(0, "completed"), (1, "failed")]
        assert turns[1].error is not None and "model exploded" in turns[1].error
        with pytest.raises(TurnFailedError, match="only completed turns can be fork anchors"):
            await turns[1].fork()
        fork = await restored.fork()
        assert isinstance(fork.lineage, ForkLineage) and fork.lineage.parent_turn_ordinal == 0


@pytest.mark.anyio
async def test_a_turn_cancelled_mid_flight_is_restored_as_failed(db: Path) -> None:
    started = anyio.Event()

    async def respond(request: ModelRequest) -> str:
        if request.text == "forever":
            started.set()
            await anyio.sleep_forever()
        return "ok"

    async with Host(store=SqliteStore(db), model=ScriptedModel(respond)) as host:
        chat = await host.sessions.create()
        await chat.send(AiPromptMessage(text="fine"))
        async with anyio.create_task_group() as tg:
            tg.start_soon(chat.send, AiPromptMessage(text="forever"))
            await started.wait()
            tg.cancel_scope.cancel()

    async with Host(store=SqliteStore(db)) as again:
        restored = await again.sessions.get(chat.id)
        turns = await restored.turns()
        assert [(t.ordinal, t.status) for t in turns] == [(0, "completed"), (1, "failed")]
        assert turns[1].error == "cancelled before it completed"
        assert (await restored.send(AiPromptMessage(text="next"))).ordinal == 2


@pytest.mark.anyio
async def test_closing_the_host_fails_a_turn_still_running_in_a_callers_task(db: Path) -> None:
    started = anyio.Event()
    errors: list[TurnFailedError] = []

    async def respond(request: ModelRequest) -> str:
        if request.text == "forever":
            started.set()
            await anyio.sleep_forever()
        return "ok"

    async def send_forever(chat: AiSessionHandle) -> None:
        try:
            await chat.send(AiPromptMessage(text="forever"))
        except TurnFailedError as exc:
            errors.append(exc)

    with anyio.fail_after(2):
        async with anyio.create_task_group() as tg:
            async with Host(store=SqliteStore(db), model=ScriptedModel(respond)) as host:
                chat = await host.sessions.create()
                await chat.send(AiPromptMessage(text="fine"))
                tg.start_soon(send_forever, chat)
                await started.wait()

    (error,) = errors
    assert error.reason == "the host closed before it completed"
    with pytest.raises(RuntimeError, match="its host is closed"):
        await chat.send(AiPromptMessage(text="too late"))
    async with Host(store=SqliteStore(db)) as again:
        restored = await again.sessions.get(chat.id)
        assert [(t.ordinal, t.status) for t in await restored.turns()] == [(0, "completed"), (1, "failed")]


@pytest.mark.anyio
async def test_a_host_closed_by_an_outer_cancellation_still_records_the_running_turn(db: Path) -> None:
    started = anyio.Event()

    async def respond(request: ModelRequest) -> str:
        if request.text == "forever":
            started.set()
            await anyio.sleep_forever()
        return "ok"

    async with anyio.create_task_group() as tg:
        async with Host(store=SqliteStore(db), model=ScriptedModel(respond)) as host:
            chat = await host.sessions.create()
            await chat.send(AiPromptMessage(text="fine"))
            tg.start_soon(chat.send, AiPromptMessage(text="forever"))
            await started.wait()
            tg.cancel_scope.cancel()

    async with Host(store=SqliteStore(db)) as again:
        restored = await again.sessions.get(chat.id)
        assert [(t.ordinal, t.status) for t in await restored.turns()] == [(0, "completed"), (1, "failed")]


@pytest.mark.anyio
async def test_spawns_metrics_and_integrator_edges_survive_a_reopen(db: Path) -> None:
    async with Host(mods=[delegate.mod], store=SqliteStore(db)) as host:
        chat = await host.sessions.create()
        await host.submit(chat, "/delegate count the tests")
        (child,) = await chat.children()
        other = await host.sessions.create()
        await host.lineage.add_edge(child.id, other.id, "used_result_of")
        metrics = SessionMetrics(tool_calls=2, token_usage=10, duration_ms=5, sessions_spawned=0)
        completed = await host.lineage.complete_session(child.id, metrics)

    async with Host(mods=[delegate.mod], store=SqliteStore(db)) as again:
        restored = await again.sessions.get(child.id)
        assert isinstance(restored.lineage, SpawnLineage)
        assert restored.lineage == child.lineage
        assert await again.lineage.node(child.id) == completed
        relations = [(e.from_session_id, e.to_session_id, e.relation) for e in (await again.lineage.chain(child.id)).edges]
        assert sorted(relations) == sorted([(chat.id, child.id, "spawned_by"), (child.id, other.id, "used_result_of")])
        assert [c.id for c in await (await again.sessions.get(chat.id)).children()] == [child.id]


@pytest.mark.anyio
async def test_an_unknown_id_on_a_reopened_host_raises_unknown_session(db: Path) -> None:
    async with Host(store=SqliteStore(db)) as host:
        await host.sessions.create()

    async with Host(store=SqliteStore(db)) as again:
        with pytest.raises(UnknownSessionError, match="no session 'ses_gone'") as info:
            await again.sessions.get(SessionId("ses_gone"))
        assert info.value.session_id == "ses_gone"


@pytest.mark.anyio
async def test_a_store_path_in_a_missing_folder_is_refused_and_nothing_is_created(tmp_path: Path) -> None:
    """Like sqlite3 or git: an explicit path whose folder is missing is a mistake, not a request."""
    path = tmp_path / "typo" / "store.sqlite"
    with pytest.raises(StoreError, match=r"cannot be created: its folder '.*typo' does not exist; create the folder first") as info:
        async with Host(store=SqliteStore(path)):
            pass
    assert info.value.path == str(path)
    assert not path.parent.exists()

"""The `/task` story end to end: fork, work, report at the exact work turn, notify back."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import UTC, datetime
from typing import Literal

import anyio
import pytest

from host_sim import (
    Erasure,
    Host,
    LineageEdge,
    MemoryStore,
    ModelRequest,
    ScriptedModel,
    SessionHandle,
    SessionNode,
    SessionRecord,
    StoredState,
    TurnRecord,
)
from host_sim.examples import background_tasks
from modular_sdk import (
    AiNotificationMessage,
    AiPromptMessage,
    AiSessionDisplayMetadata,
    ForkLineage,
    ModAuthor,
    SessionId,
    TurnId,
    UserAuthor,
)

NOW = datetime(2025, 3, 4, 5, 6, 7, tzinfo=UTC)
SUMMARY_PROMPT = "Summarize the completed work, including files, commands, and results."


def fixed_clock() -> datetime:
    return NOW


@pytest.mark.anyio
async def test_task_returns_started_task_with_the_work_session_id() -> None:
    async with Host(mods=[background_tasks.mod], clock=fixed_clock) as host:
        chat = await host.sessions.create()
        await host.submit(chat, "Refactor the parser")

        out = await host.submit(chat, "/task write the tests")

        assert out.error is None
        assert out.kind == "command"
        (work,) = await chat.children()
        assert out.text == f"Started task {work.id}."


@pytest.mark.anyio
async def test_the_work_session_is_a_fork_at_ordinal_0_recording_the_user_message() -> None:
    async with Host(mods=[background_tasks.mod], clock=fixed_clock) as host:
        chat = await host.sessions.create()
        first = await host.submit(chat, "Refactor the parser")
        assert first.turn is not None

        await host.submit(chat, "/task write the tests")

        (work,) = await chat.children()
        lineage = work.lineage
        assert isinstance(lineage, ForkLineage)
        assert lineage.kind == "fork"
        assert lineage.parent_session_id == chat.id
        assert lineage.parent_turn_ordinal == 0
        assert lineage.parent_runner_id == first.turn.runner_id
        assert lineage.depth == 1
        assert lineage.forked_at == NOW
        assert lineage.forked_at.tzinfo is not None
        assert lineage.parent_user_message_id == first.turn.message_id
        assert work.metadata == AiSessionDisplayMetadata(label="Task", icon="CodiconChecklist")
        turns = await work.turns()
        assert [t.ordinal for t in turns] == [0, 1]
        assert turns[0].id == first.turn.id
        assert turns[1].message == AiPromptMessage(text="write the tests")
        assert turns[1].author == ModAuthor(mod_id="background-tasks", command_id="task")


@pytest.mark.anyio
async def test_the_report_fork_is_anchored_at_the_work_turn_with_no_user_message() -> None:
    async with Host(mods=[background_tasks.mod], clock=fixed_clock) as host:
        chat = await host.sessions.create()
        await host.submit(chat, "Refactor the parser")
        await host.submit(chat, "/task write the tests")

        (work,) = await chat.children()
        (report,) = await work.children()
        work_turns = await work.turns()
        lineage = report.lineage
        assert isinstance(lineage, ForkLineage)
        assert lineage.parent_session_id == work.id
        assert lineage.parent_turn_ordinal == 1
        assert lineage.parent_runner_id == work_turns[1].runner_id
        assert lineage.depth == 2
        assert lineage.forked_at == NOW
        assert lineage.parent_user_message_id is None  # a mod wrote the work prompt
        assert report.metadata == AiSessionDisplayMetadata(label="Task report")
        report_turns = await report.turns()
        assert [t.id for t in report_turns[:2]] == [t.id for t in work_turns]
        assert report_turns[2].message == AiPromptMessage(text=SUMMARY_PROMPT)
        assert report_turns[2].session_id == report.id


@pytest.mark.anyio
async def test_the_summary_arrives_in_the_original_session_as_a_mod_notification() -> None:
    async with Host(mods=[background_tasks.mod], clock=fixed_clock) as host:
        chat = await host.sessions.create()
        await host.submit(chat, "Refactor the parser")
        await host.submit(chat, "/task write the tests")

        (work,) = await chat.children()
        (report,) = await work.children()
        summary = (await report.turns())[-1].reply
        turns = await chat.turns()
        assert len(turns) == 2
        note = turns[1]
        assert note.ordinal == 1
        assert note.status == "completed"
        assert note.message.type == "notification"
        assert note.message == AiNotificationMessage(
            title="Task finished: write the tests", body=f"{summary}\n\nSession {work.id}"
        )
        assert note.author == ModAuthor(mod_id="background-tasks", command_id="task")
        assert turns[0].author == UserAuthor()
        transcript = await host.transcript(chat)
        assert "[notification, system event from mod background-tasks /task] Task finished: write the tests" in transcript


@pytest.mark.anyio
async def test_task_in_a_fresh_session_fails_clearly_and_creates_nothing() -> None:
    async with Host(mods=[background_tasks.mod]) as host:
        chat = await host.sessions.create()

        out = await host.submit(chat, "/task write the tests")

        assert out.error is not None
        assert "fork needs a completed turn" in out.error
        assert chat.id in out.error
        assert out.text == out.error
        assert (await host.sessions.list()).sessions == (chat,)
        assert await chat.children() == []
        assert await chat.turns() == []
        assert await host.lineage.descendants(chat.id) == []


@pytest.mark.anyio
async def test_task_without_a_prompt_shows_usage_and_creates_nothing() -> None:
    async with Host(mods=[background_tasks.mod]) as host:
        chat = await host.sessions.create()
        await host.submit(chat, "Refactor the parser")

        out = await host.submit(chat, "/task")

        assert out.error is None
        assert out.text == "Usage: /task <prompt>"
        assert await chat.children() == []


class GatedStore:
    """A store that holds the write of any fork of the work session until a racing turn completed.

    Turns of one session run one at a time, so the racer's turn runs right after the work
    turn; holding the report fork's write until the racer completed makes the work
    session's current end move past the work turn while the mod forks it.
    """

    def __init__(self) -> None:
        self._inner = MemoryStore()
        self.work_session_id: str | None = None
        self.racer_written = anyio.Event()

    async def open(self) -> None:
        await self._inner.open()

    async def close(self) -> None:
        await self._inner.close()

    async def create_session(self, record: SessionRecord, node: SessionNode, edge: LineageEdge | None) -> None:
        lineage = record.lineage
        if lineage.kind == "fork" and lineage.parent_session_id == self.work_session_id:
            await self.racer_written.wait()
        await self._inner.create_session(record, node, edge)

    async def begin_turn(self, record: TurnRecord) -> None:
        await self._inner.begin_turn(record)

    async def finish_turn(self, record: TurnRecord) -> None:
        await self._inner.finish_turn(record)
        if record.session_id == self.work_session_id and record.ordinal == 2:
            self.racer_written.set()

    async def retract_turn(self, turn_id: TurnId, at: datetime, reason: str) -> TurnRecord:
        return await self._inner.retract_turn(turn_id, at, reason)

    async def save_node(self, node: SessionNode) -> None:
        await self._inner.save_node(node)

    async def save_edge(self, edge: LineageEdge) -> None:
        await self._inner.save_edge(edge)

    async def rebuild_index(self, nodes: Sequence[SessionNode], edges: Sequence[LineageEdge]) -> None:
        await self._inner.rebuild_index(nodes, edges)

    async def erase(self, erasure: Erasure) -> None:
        await self._inner.erase(erasure)

    # Reads go straight through.
    async def spawned_during(self, turn_id: str) -> Sequence[SessionRecord]:
        return await self._inner.spawned_during(turn_id)

    async def index_version(self) -> int | None:
        return await self._inner.index_version()

    async def get_session(self, session_id: SessionId) -> SessionRecord | None:
        return await self._inner.get_session(session_id)

    async def get_turns(self, session_id: SessionId) -> Sequence[TurnRecord]:
        return await self._inner.get_turns(session_id)

    async def turns_since(self, session_id: SessionId, ordinal: int) -> Sequence[TurnRecord]:
        return await self._inner.turns_since(session_id, ordinal)

    async def find_turn(self, turn_or_message_id: str) -> TurnRecord | None:
        return await self._inner.find_turn(turn_or_message_id)

    async def turns_left_running(self) -> Sequence[TurnRecord]:
        return await self._inner.turns_left_running()

    async def child_sessions(self, session_id: SessionId) -> Sequence[SessionRecord]:
        return await self._inner.child_sessions(session_id)

    async def list_sessions(self) -> Sequence[SessionRecord]:
        return await self._inner.list_sessions()

    async def get_nodes(self, session_ids: Sequence[SessionId]) -> Sequence[SessionNode]:
        return await self._inner.get_nodes(session_ids)

    async def get_edges(self, session_ids: Sequence[SessionId], direction: Literal["out", "in"]) -> Sequence[LineageEdge]:
        return await self._inner.get_edges(session_ids, direction)

    async def find_edges(self, artifact_type: str, source_id: str) -> Sequence[LineageEdge]:
        return await self._inner.find_edges(artifact_type, source_id)

    async def read_all(self) -> StoredState:
        return await self._inner.read_all()


@pytest.mark.anyio
async def test_the_report_is_anchored_at_the_work_turn_even_when_another_turn_completed_first(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    store = GatedStore()
    work_started = anyio.Event()
    seen: list[ModelRequest] = []
    session_forks: list[str] = []
    fork_session = SessionHandle.fork

    async def spy(self: SessionHandle, *, metadata: AiSessionDisplayMetadata | None = None) -> SessionHandle:
        session_forks.append(self.id)
        return await fork_session(self, metadata=metadata)

    monkeypatch.setattr(SessionHandle, "fork", spy)

    async def respond(request: ModelRequest) -> str:  # async: it sets an anyio.Event
        seen.append(request)
        if request.text == "write the tests":
            store.work_session_id = request.session_id
            work_started.set()
        return f"reply to {request.text!r}"

    async with Host(mods=[background_tasks.mod], model=ScriptedModel(respond), store=store) as host:
        chat = await host.sessions.create()
        await host.submit(chat, "Refactor the parser")

        async def racer() -> None:
            await work_started.wait()
            assert store.work_session_id is not None
            work = await host.sessions.get(store.work_session_id)
            await work.send(AiPromptMessage(text="sneak in"))

        async with anyio.create_task_group() as tg:
            tg.start_soon(racer)
            out = await host.submit(chat, "/task write the tests")

        assert out.error is None
        (work,) = await chat.children()
        work_turns = await work.turns()
        assert [t.message for t in work_turns] == [
            AiPromptMessage(text="Refactor the parser"),
            AiPromptMessage(text="write the tests"),
            AiPromptMessage(text="sneak in"),
        ]
        assert all(t.status == "completed" for t in work_turns)
        (report,) = await work.children()
        assert isinstance(report.lineage, ForkLineage)
        assert report.lineage.parent_turn_ordinal == 1
        report_turns = await report.turns()
        assert [t.id for t in report_turns[:2]] == [t.id for t in work_turns[:2]]
        assert [t.ordinal for t in report_turns] == [0, 1, 2]
        assert report_turns[2].session_id == report.id
        assert report_turns[2].message == AiPromptMessage(text=SUMMARY_PROMPT)
        (summary_request,) = [r for r in seen if r.text == SUMMARY_PROMPT]
        assert [h.text for h in summary_request.history] == ["Refactor the parser", "write the tests"]
        assert store.work_session_id not in session_forks  # the mod forked the turn, not the session
        # The current end of the work session has moved: a session fork now copies the racer.
        again = await work.fork()
        assert isinstance(again.lineage, ForkLineage)
        assert again.lineage.parent_turn_ordinal == 2


@pytest.mark.anyio
async def test_the_task_scenario_records_its_lineage() -> None:
    async with Host(mods=[background_tasks.mod]) as host:
        chat = await host.sessions.create()
        await host.submit(chat, "Refactor the parser")
        await host.submit(chat, "/task write the tests")

        (work,) = await chat.children()
        (report,) = await work.children()
        descendants = await host.lineage.descendants(chat.id)
        assert [n.session_id for n in descendants] == [work.id, report.id]
        ancestors = await host.lineage.ancestors(report.id)
        assert [n.session_id for n in ancestors] == [work.id, chat.id]

"""The host records its own lineage: `branched_from` for forks, `spawned_by` for spawns."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from host_sim import Host, LineageArtifact, LineageEdge, SessionMetrics
from host_sim.examples import background_tasks, delegate, reviewers
from modular_sdk import AiPromptMessage, ForkLineage, SessionId, SpawnLineage


class TickingClock:
    """One second later at every call."""

    def __init__(self) -> None:
        self.now = datetime(2025, 1, 1, tzinfo=UTC)

    def __call__(self) -> datetime:
        self.now += timedelta(seconds=1)
        return self.now


@pytest.mark.anyio
async def test_a_fork_records_branched_from_with_the_anchor_turn_as_artifact() -> None:
    async with Host(clock=TickingClock()) as host:
        chat = await host.sessions.create()
        await chat.send(AiPromptMessage(text="one"))
        anchor = await chat.send(AiPromptMessage(text="two"))
        fork = await anchor.fork()

        chain = await host.lineage.chain(fork.id)

        (edge,) = chain.edges
        assert isinstance(fork.lineage, ForkLineage)
        assert edge == LineageEdge(
            from_session_id=chat.id,
            to_session_id=fork.id,
            relation="branched_from",
            created_at=fork.lineage.forked_at,
            artifact=LineageArtifact(type="turn", source_id=anchor.id, label="turn 1"),
        )


@pytest.mark.anyio
async def test_a_spawn_records_spawned_by() -> None:
    async with Host(mods=[delegate.mod], clock=TickingClock()) as host:
        chat = await host.sessions.create()
        await host.submit(chat, "/delegate count the tests")
        (child,) = await chat.children()

        chain = await host.lineage.chain(child.id)

        (edge,) = chain.edges
        assert isinstance(child.lineage, SpawnLineage)
        assert (edge.from_session_id, edge.to_session_id, edge.relation) == (chat.id, child.id, "spawned_by")
        assert edge.artifact is None
        assert edge.created_at == child.lineage.spawned_at


@pytest.mark.anyio
async def test_an_agent_root_started_from_a_handler_records_a_delegated_from_edge_to_its_chat() -> None:
    async with Host(mods=[reviewers.mod]) as host:
        chat = await host.sessions.create(tags={"user": "alice"})
        await host.submit(chat, "/review the diff")
        reviewer = next(s for s in (await host.sessions.list()).sessions if s.id != chat.id)

        assert reviewer.lineage.kind == "root"  # an agent's own conversation: no copied history
        chain = await host.lineage.chain(reviewer.id)
        assert [(e.from_session_id, e.to_session_id, e.relation) for e in chain.edges] == [
            (chat.id, reviewer.id, "delegated_from")
        ]
        assert [n.session_id for n in await host.lineage.ancestors(reviewer.id)] == [chat.id]
        assert (await host.lineage.node(reviewer.id)).agent_id == "reviewer"
        assert dict(reviewer.tags) == {"user": "alice"}  # it belongs to the chat's owner


@pytest.mark.anyio
async def test_find_by_artifact_finds_every_fork_of_a_turn() -> None:
    async with Host() as host:
        chat = await host.sessions.create()
        anchor = await chat.send(AiPromptMessage(text="one"))
        first = await anchor.fork()
        second = await chat.fork()
        await chat.send(AiPromptMessage(text="two"))
        await chat.fork()

        found = await host.lineage.find_by_artifact("turn", anchor.id)

        assert [n.session_id for n in found] == [first.id, second.id]


async def run_task(host: Host) -> tuple[SessionId, SessionId, SessionId]:
    chat = await host.sessions.create()
    await host.submit(chat, "Refactor the parser")
    await host.submit(chat, "/task write the tests")
    (work,) = await chat.children()
    (report,) = await work.children()
    return chat.id, work.id, report.id


@pytest.mark.anyio
async def test_ancestors_and_descendants_over_a_task_run() -> None:
    async with Host(mods=[background_tasks.mod]) as host:
        chat, work, report = await run_task(host)

        assert [n.session_id for n in await host.lineage.descendants(chat)] == [work, report]
        assert [n.session_id for n in await host.lineage.descendants(chat, max_depth=1)] == [work]
        assert [n.session_id for n in await host.lineage.ancestors(report)] == [work, chat]
        assert [n.session_id for n in await host.lineage.ancestors(report, max_depth=1)] == [work]
        assert await host.lineage.ancestors(chat) == []


@pytest.mark.anyio
async def test_the_chain_of_the_work_session_spans_the_whole_task() -> None:
    async with Host(mods=[background_tasks.mod]) as host:
        chat, work, report = await run_task(host)
        work_turns = await (await host.sessions.get(work)).turns()
        chat_turns = await (await host.sessions.get(chat)).turns()

        chain = await host.lineage.chain(work)

        assert [n.session_id for n in chain.nodes] == [work, chat, report]
        assert [(e.from_session_id, e.to_session_id, e.relation) for e in chain.edges] == [
            (work, report, "branched_from"),
            (chat, work, "branched_from"),
        ]
        artifacts = {e.to_session_id: e.artifact for e in chain.edges}
        assert artifacts[work] == LineageArtifact(type="turn", source_id=chat_turns[0].id, label="turn 0")
        assert artifacts[report] == LineageArtifact(type="turn", source_id=work_turns[1].id, label="turn 1")


@pytest.mark.anyio
async def test_complete_session_stamps_metrics_and_the_completion_time() -> None:
    clock = TickingClock()
    async with Host(mods=[background_tasks.mod], clock=clock) as host:
        chat, work, report = await run_task(host)
        metrics = SessionMetrics(tool_calls=0, token_usage=1200, duration_ms=3400, sessions_spawned=1)

        node = await host.lineage.complete_session(work, metrics)

        assert node.session_id == work
        assert node.metrics == metrics
        assert node.completed_at == clock.now
        assert await host.lineage.node(work) == node
        (again,) = [n for n in (await host.lineage.chain(chat)).nodes if n.session_id == work]
        assert again.metrics == metrics


@pytest.mark.anyio
async def test_an_integrator_relation_joins_two_task_runs() -> None:
    async with Host(mods=[background_tasks.mod]) as host:
        first_chat, first_work, _ = await run_task(host)
        second_chat, _, _ = await run_task(host)

        edge = await host.lineage.add_edge(
            first_work,
            second_chat,
            "used_result_of",
            LineageArtifact(type="job_result", source_id="job-1", label="test results"),
        )

        assert edge.relation == "used_result_of"
        assert [n.session_id for n in await host.lineage.find_by_artifact("job_result", "job-1")] == [second_chat]
        ancestors = [n.session_id for n in await host.lineage.ancestors(second_chat)]
        assert ancestors == [first_work, first_chat]

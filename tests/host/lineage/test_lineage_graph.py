"""LineageGraph: breadth-first ancestry, chains, artifact lookup, edge rules, completion."""

from __future__ import annotations

import gc
import tracemalloc
from collections import deque
from collections.abc import Sequence
from datetime import UTC, datetime, timedelta

import attrs
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from host_sim.lineage import (
    HOST_RELATIONS,
    LineageArtifact,
    LineageEdge,
    LineageEdgeError,
    LineageGraph,
    LineageRelation,
    SessionMetrics,
    SessionNode,
)
from host_sim.stores import MemoryStore, SessionRecord
from modular_sdk import AiRunnerId, ForkLineage, RootLineage, SessionId, UnknownSessionError

from .._stores import read_back

T0 = datetime(2026, 3, 1, 12, 0, tzinfo=UTC)
RUNNER = AiRunnerId("echo:r")


class Clock:
    """A clock that ticks one second per reading."""

    def __init__(self) -> None:
        self.now = T0

    def __call__(self) -> datetime:
        self.now += timedelta(seconds=1)
        return self.now


def record_of(sid: str) -> SessionRecord:
    return SessionRecord(
        id=SessionId(sid), lineage=RootLineage(), metadata=None, model="echo", cwd="/", runner_id=RUNNER, created_at=T0
    )


async def register(
    graph: LineageGraph, store: MemoryStore, sid: str, edge: LineageEdge | None = None, record: SessionRecord | None = None
) -> None:
    """What the host does for a new session: store its record, node and edge (the graph reads the store)."""
    node = SessionNode(session_id=SessionId(sid), created_at=T0)
    await store.create_session(record or record_of(sid), node, edge)


async def make_graph(ids: Sequence[str], store: MemoryStore | None = None) -> tuple[LineageGraph, MemoryStore]:
    store = store or MemoryStore()
    await store.open()
    graph = LineageGraph(store, clock=Clock())
    for sid in ids:
        await register(graph, store, sid)
    return graph, store


async def record_edge(
    graph: LineageGraph,
    from_id: str,
    to_id: str,
    relation: LineageRelation,
    artifact: LineageArtifact | None = None,
    *,
    at: datetime = T0,
) -> LineageEdge:
    """A structural edge between two sessions already in the graph and its store."""
    edge = LineageEdge(
        from_session_id=SessionId(from_id), to_session_id=SessionId(to_id), relation=relation, created_at=at, artifact=artifact
    )
    await graph._store.save_edge(edge)
    return edge


def ids(nodes: Sequence[SessionNode]) -> list[str]:
    return [n.session_id for n in nodes]


async def diamond() -> LineageGraph:
    """a -> b, a -> c, b -> d, c -> d, d -> e, plus x -> c (another parent of c)."""
    graph, _ = await make_graph(["a", "b", "c", "d", "e", "x"])
    await record_edge(graph, "a", "b", "branched_from")
    await record_edge(graph, "a", "c", "spawned_by")
    await graph.add_edge("b", "d", "continued_from")
    await graph.add_edge("c", "d", "used_result_of")
    await graph.add_edge("d", "e", "planned_by")
    await graph.add_edge("x", "c", "delegated_from")
    return graph


# -- ancestors and descendants ----------------------------------------------------------


@pytest.mark.anyio
async def test_descendants_are_breadth_first_nearest_first_each_once() -> None:
    graph = await diamond()
    assert ids(await graph.descendants("a")) == ["b", "c", "d", "e"]


@pytest.mark.anyio
async def test_ancestors_are_breadth_first_nearest_first_each_once() -> None:
    graph = await diamond()
    assert ids(await graph.ancestors("e")) == ["d", "b", "c", "a", "x"]


@pytest.mark.anyio
@pytest.mark.parametrize(("depth", "expected"), [(0, []), (1, ["b", "c"]), (2, ["b", "c", "d"]), (3, ["b", "c", "d", "e"])])
async def test_max_depth_counts_edges(depth: int, expected: list[str]) -> None:
    graph = await diamond()
    assert ids(await graph.descendants("a", max_depth=depth)) == expected


@pytest.mark.anyio
async def test_default_max_depth_is_ten() -> None:
    names = [f"s{i}" for i in range(15)]
    graph, _ = await make_graph(names)
    for parent, child in zip(names, names[1:]):
        await record_edge(graph, parent, child, "branched_from")
    assert ids(await graph.descendants("s0")) == names[1:11]
    assert ids(await graph.ancestors("s14")) == names[13:3:-1]


@pytest.mark.anyio
async def test_a_session_with_no_edges_has_no_ancestors_or_descendants() -> None:
    graph = await diamond()
    assert await graph.ancestors("a") == []
    assert await graph.descendants("e") == []


@pytest.mark.anyio
async def test_walks_terminate_on_cycles_and_never_return_the_start() -> None:
    graph, _ = await make_graph(["a", "b", "c"])
    await graph.add_edge("a", "b", "continued_from")
    await graph.add_edge("b", "c", "continued_from")
    await graph.add_edge("c", "a", "continued_from")
    assert ids(await graph.descendants("a")) == ["b", "c"]
    assert ids(await graph.ancestors("a")) == ["c", "b"]


@pytest.mark.anyio
@pytest.mark.parametrize("bad", [-1, True, 1.5])
async def test_bad_max_depth_is_refused(bad: int) -> None:
    graph = await diamond()
    with pytest.raises(ValueError, match=r"max_depth must be an int >= 0"):
        await graph.ancestors("a", max_depth=bad)


@pytest.mark.anyio
async def test_unknown_session_is_refused_everywhere() -> None:
    graph = await diamond()
    for call in (
        graph.node("nope"),
        graph.ancestors("nope"),
        graph.descendants("nope"),
        graph.chain("nope"),
        graph.complete_session("nope", SessionMetrics(tool_calls=0, token_usage=0, duration_ms=0, sessions_spawned=0)),
    ):
        with pytest.raises(UnknownSessionError, match=r"session_id 'nope' names no session of this host") as info:
            await call
        assert info.value.session_id == "nope"


@pytest.mark.anyio
async def test_plain_str_and_session_id_are_both_accepted() -> None:
    graph = await diamond()
    assert await graph.node(SessionId("a")) == await graph.node("a")


# -- chain ------------------------------------------------------------------------------


@pytest.mark.anyio
async def test_chain_is_self_ancestors_descendants_and_the_edges_between_them() -> None:
    graph = await diamond()
    chain = await graph.chain("c")
    assert ids(chain.nodes) == ["c", "a", "x", "d", "e"]
    pairs = {(e.from_session_id, e.to_session_id) for e in chain.edges}
    # b is a sibling, not an ancestor of c: neither it nor its edges are in c's chain.
    assert pairs == {("a", "c"), ("x", "c"), ("c", "d"), ("d", "e")}


@pytest.mark.anyio
async def test_chain_of_a_lone_session_is_itself() -> None:
    graph, _ = await make_graph(["solo"])
    chain = await graph.chain("solo")
    assert ids(chain.nodes) == ["solo"]
    assert chain.edges == ()


# -- find_by_artifact -------------------------------------------------------------------


@pytest.mark.anyio
async def test_find_by_artifact_returns_the_receiving_sessions_for_open_types() -> None:
    graph, _ = await make_graph(["job", "chat1", "chat2", "other"])
    card = LineageArtifact(type="acme.report", source_id="r-7", label="Q3 report")
    await graph.add_edge("job", "chat1", "used_result_of", card)
    await graph.add_edge("job", "chat2", "used_result_of", card)
    await graph.add_edge("job", "other", "used_result_of", LineageArtifact(type="acme.report", source_id="r-8", label="Q4"))
    await record_edge(graph, "chat1", "other", "branched_from", LineageArtifact(type="turn", source_id="r-7", label="t"))
    assert ids(await graph.find_by_artifact("acme.report", "r-7")) == ["chat1", "chat2"]
    assert ids(await graph.find_by_artifact("turn", "r-7")) == ["other"]
    assert await graph.find_by_artifact("canvas_card", "r-7") == []


@pytest.mark.anyio
async def test_find_by_artifact_lists_each_session_once() -> None:
    graph, _ = await make_graph(["a", "b", "c"])
    art = LineageArtifact(type="file", source_id="f", label="f")
    await graph.add_edge("a", "c", "used_result_of", art)
    await graph.add_edge("b", "c", "used_result_of", art)
    assert ids(await graph.find_by_artifact("file", "f")) == ["c"]


# -- add_edge rules ---------------------------------------------------------------------


@pytest.mark.anyio
@pytest.mark.parametrize(("relation", "what"), [("branched_from", "forks"), ("spawned_by", "spawns")])
async def test_add_edge_refuses_host_only_relations(relation: LineageRelation, what: str) -> None:
    graph, store = await make_graph(["a", "b"])
    with pytest.raises(
        LineageEdgeError,
        match=rf"relation '{relation}' is recorded by the host itself for {what}; add_edge records only 'continued_from'",
    ) as info:
        await graph.add_edge("a", "b", relation)
    assert (info.value.from_session_id, info.value.to_session_id, info.value.relation) == ("a", "b", relation)
    assert (await read_back(store)).edges == ()


@pytest.mark.anyio
async def test_add_edge_refuses_an_unknown_relation() -> None:
    graph, _ = await make_graph(["a", "b"])
    with pytest.raises(LineageEdgeError, match=r"unknown lineage relation 'inspired_by'; use one of 'continued_from'"):
        await graph.add_edge("a", "b", "inspired_by")  # type: ignore[arg-type]


@pytest.mark.anyio
async def test_add_edge_refuses_a_self_edge() -> None:
    graph, _ = await make_graph(["a"])
    with pytest.raises(LineageEdgeError, match=r"cannot go from session 'a' to itself"):
        await graph.add_edge("a", "a", "continued_from")


@pytest.mark.anyio
@pytest.mark.parametrize(("src", "dst", "role", "bad"), [("zz", "a", "from_id", "zz"), ("a", "zz", "to_id", "zz")])
async def test_add_edge_refuses_unknown_sessions(src: str, dst: str, role: str, bad: str) -> None:
    graph, _ = await make_graph(["a"])
    with pytest.raises(UnknownSessionError, match=rf"{role} '{bad}' names no session of this host") as info:
        await graph.add_edge(src, dst, "continued_from")
    assert info.value.session_id == bad


@pytest.mark.anyio
async def test_add_edge_refuses_a_non_artifact() -> None:
    graph, _ = await make_graph(["a", "b"])
    with pytest.raises(TypeError, match=r"artifact must be a LineageArtifact or None, got 'card-1'"):
        await graph.add_edge("a", "b", "used_result_of", "card-1")  # type: ignore[arg-type]


@pytest.mark.anyio
async def test_add_edge_stamps_the_clock_and_writes_through() -> None:
    graph, store = await make_graph(["a", "b"])
    art = LineageArtifact(type="plan_step", source_id="step-2", label="Write tests")
    edge = await graph.add_edge("a", "b", "planned_by", art)
    assert edge == LineageEdge(
        from_session_id=SessionId("a"),
        to_session_id=SessionId("b"),
        relation="planned_by",
        created_at=T0 + timedelta(seconds=1),
        artifact=art,
    )
    assert (await read_back(store)).edges == (edge,)


@pytest.mark.anyio
async def test_same_pair_replaces_the_old_edge() -> None:
    graph, store = await make_graph(["a", "b", "c"])
    await graph.add_edge("a", "b", "continued_from")
    await graph.add_edge("c", "b", "continued_from")
    newer = await graph.add_edge("a", "b", "used_result_of")
    chain = await graph.chain("b")
    assert [(e.from_session_id, e.relation) for e in chain.edges] == [
        ("a", "used_result_of"),
        ("c", "continued_from"),
    ]
    assert ids(await graph.descendants("a")) == ["b"]
    stored = (await read_back(store)).edges
    assert len(stored) == 2 and newer in stored


@pytest.mark.anyio
async def test_add_edge_cannot_replace_a_host_recorded_edge() -> None:
    graph, store = await make_graph(["parent"])
    fork = attrs.evolve(
        record_of("fork"),
        lineage=ForkLineage(
            parent_session_id=SessionId("parent"), parent_turn_ordinal=0, parent_runner_id=RUNNER, depth=1, forked_at=T0
        ),
    )
    edge = LineageEdge(
        from_session_id=SessionId("parent"), to_session_id=SessionId("fork"), relation="branched_from", created_at=T0
    )
    await register(graph, store, "fork", edge, fork)  # what the host writes when it forks
    with pytest.raises(LineageEdgeError, match=r"already have the host-recorded 'branched_from' edge"):
        await graph.add_edge("parent", "fork", "continued_from")
    chain = await graph.chain("fork")
    assert [e.relation for e in chain.edges] == ["branched_from"]


@pytest.mark.anyio
async def test_host_records_structural_edges_and_lists_children_in_order() -> None:
    graph, _ = await make_graph(["p", "f1", "s1", "f2", "other"])
    at = T0 + timedelta(days=1)
    edge = await record_edge(graph, "p", "f1", "branched_from", at=at)
    await record_edge(graph, "p", "s1", "spawned_by")
    await graph.add_edge("p", "other", "continued_from")
    await record_edge(graph, "p", "f2", "branched_from")
    assert edge.created_at is at
    assert ids(await graph.descendants("p", max_depth=1)) == ["f1", "s1", "other", "f2"]


# -- complete_session and node ----------------------------------------------------------


@pytest.mark.anyio
async def test_complete_session_stamps_the_clock_and_metrics_and_writes_through() -> None:
    graph, store = await make_graph(["a"])
    metrics = SessionMetrics(tool_calls=3, token_usage=1200, duration_ms=4500, sessions_spawned=1)
    node = await graph.complete_session("a", metrics)
    assert node.completed_at == T0 + timedelta(seconds=1)
    assert node.metrics == metrics
    assert await graph.node("a") == node
    assert (await read_back(store)).nodes == (node,)


@pytest.mark.anyio
async def test_completed_nodes_show_up_in_queries() -> None:
    graph = await diamond()
    done = await graph.complete_session("b", SessionMetrics(tool_calls=0, token_usage=1, duration_ms=2, sessions_spawned=0))
    assert (await graph.descendants("a"))[0] is done


@pytest.mark.anyio
async def test_a_naive_clock_is_refused_with_a_fix() -> None:
    store = MemoryStore()
    await store.open()
    graph = LineageGraph(store, clock=lambda: datetime(2026, 1, 1))
    await register(graph, store, "a")
    with pytest.raises(ValueError, match=r"timezone-aware datetimes, e\.g\. lambda: datetime\.now\(timezone\.utc\)"):
        await graph.complete_session("a", SessionMetrics(tool_calls=0, token_usage=0, duration_ms=0, sessions_spawned=0))


def test_metrics_refuse_negative_counts() -> None:
    with pytest.raises(ValueError, match=r"SessionMetrics.tool_calls must be an int >= 0, got -1"):
        SessionMetrics(tool_calls=-1, token_usage=0, duration_ms=0, sessions_spawned=0)


def test_edges_refuse_an_unknown_relation_and_naive_times() -> None:
    with pytest.raises(ValueError, match=r"LineageEdge.relation must be one of"):
        LineageEdge(from_session_id=SessionId("a"), to_session_id=SessionId("b"), relation="x", created_at=T0)  # type: ignore[arg-type]
    with pytest.raises(ValueError, match=r"LineageEdge.created_at must be a timezone-aware datetime"):
        LineageEdge(from_session_id=SessionId("a"), to_session_id=SessionId("b"), relation="planned_by", created_at=datetime(2026, 1, 1))


# -- reload from a store ----------------------------------------------------------------


@pytest.mark.anyio
async def test_a_graph_reloaded_from_its_store_answers_the_same() -> None:
    graph = await diamond()
    store = graph._store  # the MemoryStore it writes to
    again = LineageGraph(store)  # holds nothing: it reads the store
    for sid in "abcdex":
        assert await again.ancestors(sid) == await graph.ancestors(sid)
        assert await again.descendants(sid) == await graph.descendants(sid)
        assert await again.chain(sid) == await graph.chain(sid)


@pytest.mark.anyio
async def test_an_edge_to_a_session_the_store_does_not_hold_is_refused() -> None:
    graph, _ = await make_graph(["a"])
    with pytest.raises(UnknownSessionError, match=r"to_id 'b' names no session of this host"):
        await graph.add_edge("a", "b", "planned_by")


# -- property: walks agree with brute-force reachability --------------------------------


def distances(n: int, pairs: Sequence[tuple[int, int]], start: int, forward: bool) -> dict[int, int]:
    adjacency: dict[int, list[int]] = {i: [] for i in range(n)}
    for a, b in pairs:
        if forward:
            adjacency[a].append(b)
        else:
            adjacency[b].append(a)
    dist = {start: 0}
    queue = deque([start])
    while queue:
        u = queue.popleft()
        for v in adjacency[u]:
            if v not in dist:
                dist[v] = dist[u] + 1
                queue.append(v)
    return dist


@st.composite
def dags(draw: st.DrawFn) -> tuple[int, list[tuple[int, int]]]:
    n = draw(st.integers(min_value=1, max_value=12))
    possible = [(a, b) for a in range(n) for b in range(a + 1, n)]
    pairs = draw(st.lists(st.sampled_from(possible), unique=True, max_size=30)) if possible else []
    return n, pairs


@pytest.mark.anyio
@settings(max_examples=60, deadline=None)
@given(dag=dags(), relations=st.lists(st.sampled_from(HOST_RELATIONS), min_size=30, max_size=30), depth=st.integers(0, 12))
async def test_walks_agree_with_brute_force_reachability(
    dag: tuple[int, list[tuple[int, int]]], relations: list[LineageRelation], depth: int
) -> None:
    n, pairs = dag
    graph, _ = await make_graph([f"n{i}" for i in range(n)])
    for (a, b), relation in zip(pairs, relations):
        await graph.add_edge(f"n{a}", f"n{b}", relation)
    for start in range(n):
        for forward in (True, False):
            walk = graph.descendants if forward else graph.ancestors
            got = [int(sid[1:]) for sid in ids(await walk(f"n{start}", max_depth=depth))]
            dist = distances(n, pairs, start, forward)
            assert len(got) == len(set(got))
            assert set(got) == {v for v, d in dist.items() if 1 <= d <= depth}
            assert [dist[v] for v in got] == sorted(dist[v] for v in got)


# -- memory ------------------------------------------------------------------------------


@pytest.mark.anyio
async def test_a_fork_costs_the_graph_and_memory_store_well_under_half_a_kilobyte() -> None:
    """Node + branched_from edge + adjacency + MemoryStore entries, ids and times shared."""
    graph, store = await make_graph(["root"])
    count = 2000
    new_ids = [SessionId(f"fork-{i:06d}") for i in range(count)]
    artifact = LineageArtifact(type="turn", source_id="t-0", label="anchor turn")
    records = {sid: record_of(sid) for sid in new_ids}  # the session records themselves are not the graph's
    gc.collect()
    tracemalloc.start()
    try:
        before = tracemalloc.take_snapshot()
        for sid in new_ids:
            edge = LineageEdge(
                from_session_id=SessionId("root"), to_session_id=sid, relation="branched_from", created_at=T0, artifact=artifact
            )
            await register(graph, store, sid, edge, records[sid])
        gc.collect()
        after = tracemalloc.take_snapshot()
    finally:
        tracemalloc.stop()
    per_fork = sum(s.size_diff for s in after.compare_to(before, "filename")) / count
    assert per_fork < 450, f"{per_fork:.0f} bytes per fork"

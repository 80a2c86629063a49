"""A host opens its store without reading it, reads what it touches, and sees exactly what was written."""

from __future__ import annotations

import tempfile
from collections.abc import Awaitable, Callable, Sequence
from pathlib import Path
from typing import cast

import anyio
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from host_sim import Host, MemoryStore, SessionHandle, SqliteStore, Store
from modular_sdk import AiPromptMessage, AiSessionHandle, AiTurnHandle

# What a host may do to its store when it opens: look for crash leftovers (turns, jobs) and the index marker.
OPENING_READS = {
    "open", "turns_left_running", "index_version", "interrupt_jobs", "trace_index_version", "erasure_generation", "last_event_seq"
}  # each by an index


class CountingStore:
    """Passes every call through to ``inner`` and remembers which methods ran, with which first argument."""

    def __init__(self, inner: Store) -> None:
        self._inner = inner
        self.calls: list[tuple[str, object]] = []

    def __getattr__(self, name: str) -> Callable[..., Awaitable[object]]:
        method = getattr(self._inner, name)

        async def call(*args: object) -> object:
            self.calls.append((name, args[0] if args else None))
            return await method(*args)

        return call


def snapshot(turns: list[AiTurnHandle]) -> list[tuple[object, ...]]:
    return [(t.id, t.ordinal, t.session_id, t.status, t.message, t.author, t.reply) for t in turns]


async def a_forest(host: Host) -> dict[str, SessionHandle]:
    """Two roots; one has a fork with its own fork, the other a long history."""
    a = await host.sessions.create()
    for text in ("one", "two", "three"):
        await host.submit(a, text)
    fork = await a.fork()
    await fork.send(AiPromptMessage(text="four"))
    deeper = await fork.fork()
    b = await host.sessions.create()
    for i in range(20):
        await host.submit(b, f"b{i}")
    return {"a": a, "fork": fork, "deeper": deeper, "b": b}


@pytest.mark.anyio
async def test_entering_a_host_reads_no_session_turn_node_or_edge() -> None:
    inner = MemoryStore()
    async with Host(store=inner) as host:
        await a_forest(host)
    counting = CountingStore(inner)
    async with Host(store=cast(Store, counting)):
        assert {name for name, _ in counting.calls} <= OPENING_READS


@pytest.mark.anyio
async def test_touching_a_fork_reads_its_fork_chain_and_nothing_else() -> None:
    inner = MemoryStore()
    async with Host(store=inner) as host:
        made = await a_forest(host)
    counting = CountingStore(inner)
    async with Host(store=cast(Store, counting)) as host:
        counting.calls.clear()
        deeper = await host.sessions.get(made["deeper"].id)
        assert [t.message for t in await deeper.turns()] == [AiPromptMessage(text=x) for x in ("one", "two", "three", "four")]
        read = {arg for name, arg in counting.calls if name in {"get_session", "get_turns"}}
        assert read == {made["a"].id, made["fork"].id, made["deeper"].id}  # never the other root
        counting.calls.clear()
        await host.sessions.get(made["fork"].id)  # already live: no read at all
        assert counting.calls == []


# -- property: a reopened host, touched in any order, sees exactly what was written ------------------

Op = tuple[str, int, int]
ops = st.lists(
    st.tuples(st.sampled_from(["root", "send", "fork", "fork_at"]), st.integers(0, 50), st.integers(0, 50)),
    min_size=1,
    max_size=25,
)


class Model:
    """What the test itself knows it made: each session's parent, children and prompts."""

    def __init__(self) -> None:
        self.parent: dict[str, str | None] = {}
        self.children: dict[str, list[str]] = {}
        self.prompts: dict[str, list[str]] = {}

    def add(self, session: AiSessionHandle, parent: str | None, prompts: list[str]) -> None:
        self.parent[session.id] = parent
        self.children[session.id] = []
        self.prompts[session.id] = prompts
        if parent is not None:
            self.children[parent].append(session.id)


async def build(host: Host, program: list[Op]) -> tuple[list[AiSessionHandle], Model]:
    model = Model()
    sessions: list[AiSessionHandle] = [await host.sessions.create()]
    model.add(sessions[0], None, [])
    for op, i, j in program:
        target = sessions[i % len(sessions)]
        if op == "root":
            sessions.append(await host.sessions.create())
            model.add(sessions[-1], None, [])
        elif op == "send":
            text = f"m{len(sessions)}-{i}-{j}"
            await host.submit(target.id, text)
            model.prompts[target.id].append(text)
        else:
            turns = [t for t in await target.turns() if t.status == "completed"]
            if not turns:
                continue
            anchor = turns[-1] if op == "fork" else turns[j % len(turns)]
            sessions.append(await target.fork() if op == "fork" else await anchor.fork())
            model.add(sessions[-1], target.id, model.prompts[target.id][: anchor.ordinal + 1])
    return sessions, model


async def describe(host: Host, ids: Sequence[str]) -> dict[str, object]:
    out: dict[str, object] = {}
    for session_id in ids:
        s = await host.sessions.get(session_id)
        parent = await s.parent()
        out[session_id] = (
            s.lineage,
            snapshot(await s.turns()),
            [c.id for c in await s.children()],
            None if parent is None else parent.id,
            [n.session_id for n in await host.lineage.ancestors(session_id, max_depth=100)],
            [n.session_id for n in await host.lineage.descendants(session_id, max_depth=100)],
        )
    return out


def agrees(description: dict[str, object], model: Model) -> None:
    for session_id, value in description.items():
        _, turns, children, parent, ancestors, _ = cast(tuple[object, list[tuple[object, ...]], list[str], str | None, list[str], object], value)
        assert children == model.children[session_id]
        assert parent == model.parent[session_id]
        assert [t[4] for t in turns] == [AiPromptMessage(text=p) for p in model.prompts[session_id]]
        expected_ancestors: list[str] = []
        up = model.parent[session_id]
        while up is not None:
            expected_ancestors.append(up)
            up = model.parent[up]
        assert ancestors == expected_ancestors


async def written_then_reopened(make_store: Callable[[], Store], program: list[Op], order: list[int]) -> None:
    async with Host(store=make_store()) as host:
        sessions, model = await build(host, program)
        ids = [s.id for s in sessions]
        before = await describe(host, ids)
        agrees(before, model)
    touched = [ids[k % len(ids)] for k in order] + ids  # some sessions first, in any order, then all
    async with Host(store=make_store()) as again:
        after = await describe(again, list(dict.fromkeys(touched)))
        assert after == {k: before[k] for k in after}
        agrees(after, model)
        assert [s.id for s in (await again.sessions.list(limit=1000)).sessions] == ids[::-1]  # newest first


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(program=ops, order=st.lists(st.integers(0, 100), max_size=10))
def test_a_reopened_memory_store_host_touched_in_any_order_sees_what_was_written(program: list[Op], order: list[int]) -> None:
    store = MemoryStore()
    anyio.run(written_then_reopened, lambda: store, program, order)


@settings(max_examples=12, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(program=ops, order=st.lists(st.integers(0, 100), max_size=10))
def test_a_reopened_sqlite_host_touched_in_any_order_sees_what_was_written(program: list[Op], order: list[int]) -> None:
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "s.sqlite"
        anyio.run(written_then_reopened, lambda: SqliteStore(path), program, order, backend="trio")

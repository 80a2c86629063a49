"""Every store refuses the same writes, with the same error: each guard, tried on every store.

A check made before a write once existed in one store and not another (PostgreSQL finished
an invocation without ``finished_at``; MemoryStore began a running turn that had already
finished; ``get_edges([a, a])`` gave two edges on MemoryStore and one on SqliteStore). This
suite tries to break each guard any store has, on every store (`any_store`): each refusal
is a `StoreError` and leaves what was stored as it was.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from datetime import timedelta

import attrs
import pytest

from host_sim import Erasure, StoreError, TraceStore
from host_sim.lineage import LineageEdge
from host_sim.stores import IntegratorStore, Invocation, Store, TurnRecord
from host_sim.testing import (
    ActionOutcomeRecord,
    ProposedActionRecord,
    TraceCommitRecord,
    TraceRecord,
    TraceTaskRecord,
    erased,
)
from modular_sdk import AiPromptMessage, AiRunnerId, SessionId, TurnId, UserAuthor

from .._stores import T0, node, session
from ..conftest import StoreFactory

pytestmark = pytest.mark.anyio

T1 = T0 + timedelta(seconds=1)



def running(tid: str, sid: str = "s-1", ordinal: int = 0) -> TurnRecord:
    return TurnRecord(
        id=TurnId(tid),
        session_id=SessionId(sid),
        ordinal=ordinal,
        message=AiPromptMessage(text="hello"),
        message_id=f"m-{tid}",
        author=UserAuthor(),
        runner_id=AiRunnerId(f"echo:{sid}"),
        status="running",
        reply=None,
        error=None,
        started_at=T0,
        finished_at=None,
    )


def completed(turn: TurnRecord, reply: str = "ok") -> TurnRecord:
    return attrs.evolve(turn, status="completed", reply=reply, finished_at=T1)


def invocation(iid: str = "i-1") -> Invocation:
    return Invocation(
        id=iid, session_id=SessionId("s-1"), mod_id="m", command_id="c", argument=None, author=UserAuthor(), started_at=T0
    )


def edge(source: str, target: str) -> LineageEdge:
    return LineageEdge(
        from_session_id=SessionId(source), to_session_id=SessionId(target), relation="used_result_of", created_at=T0
    )


def action(aid: str, sid: str = "s-1") -> ProposedActionRecord:
    return ProposedActionRecord(
        id=aid, type="note", payload={}, mod_id="m", session_id=SessionId(sid), turn_id=TurnId("t-1"), created_at=T0
    )


@pytest.fixture
async def store(any_store: StoreFactory) -> AsyncIterator[Store]:
    """An open store holding session ``s-1`` and ``s-2`` and turn ``t-1`` (``s-1``'s turn 0, running)."""
    store = any_store()
    await store.open()
    for sid in ("s-1", "s-2"):
        await store.create_session(session(sid), node(sid), None)
    await store.begin_turn(running("t-1"))
    try:
        yield store
    finally:
        await store.close()


def traces(store: Store) -> TraceStore:
    assert isinstance(store, TraceStore)
    return store


def integrator_store(store: Store) -> IntegratorStore:
    assert isinstance(store, IntegratorStore)
    return store


# -- sessions, turns, the lineage index ---------------------------------------------------


async def test_a_session_id_is_stored_once(store: Store) -> None:
    with pytest.raises(StoreError, match=r"session 's-1' is already stored"):
        await store.create_session(attrs.evolve(session("s-1"), model="other"), node("s-1"), None)
    assert await store.get_session(SessionId("s-1")) == session("s-1")


async def test_a_turn_begins_running(store: Store) -> None:
    with pytest.raises(StoreError, match=r"cannot begin turn 1 \('t-2'\) of session 's-1'"):
        await store.begin_turn(completed(running("t-2", ordinal=1)))
    assert [t.id for t in await store.get_turns(SessionId("s-1"))] == ["t-1"]


async def test_a_turn_that_begins_has_not_finished(store: Store) -> None:
    with pytest.raises(StoreError, match=r"cannot begin turn 1 \('t-2'\) of session 's-1'"):
        await store.begin_turn(attrs.evolve(running("t-2", ordinal=1), finished_at=T1))
    assert [t.id for t in await store.get_turns(SessionId("s-1"))] == ["t-1"]


async def test_a_turn_id_begins_once(store: Store) -> None:
    with pytest.raises(StoreError, match=r"turn 0 \('t-1'\) of session 's-2'"):
        await store.begin_turn(running("t-1", sid="s-2"))
    assert await store.get_turns(SessionId("s-2")) == ()


async def test_a_turn_begins_at_a_free_ordinal(store: Store) -> None:
    with pytest.raises(StoreError, match=r"turn 0 \('t-2'\) of session 's-1'"):
        await store.begin_turn(running("t-2"))
    assert [t.id for t in await store.get_turns(SessionId("s-1"))] == ["t-1"]


async def test_a_turn_begins_in_a_stored_session(store: Store) -> None:
    with pytest.raises(StoreError, match=r"turn 0 \('t-2'\) of session 'nowhere'.*no session 'nowhere' is stored"):
        await store.begin_turn(running("t-2", sid="nowhere"))
    assert await store.find_turn("t-2") is None


async def test_a_turn_finishes_completed_or_failed(store: Store) -> None:
    with pytest.raises(StoreError, match=r"cannot finish turn 't-1' as running"):
        await store.finish_turn(attrs.evolve(running("t-1"), reply="x"))
    assert await store.find_turn("t-1") == running("t-1")


async def test_a_finished_turn_has_its_finish_time(store: Store) -> None:
    with pytest.raises(StoreError, match=r"cannot finish turn 't-1' without finished_at"):
        await store.finish_turn(attrs.evolve(completed(running("t-1")), finished_at=None))
    assert await store.find_turn("t-1") == running("t-1")


async def test_a_turn_finishes_once(store: Store) -> None:
    await store.finish_turn(completed(running("t-1"), reply="first"))
    with pytest.raises(StoreError, match=r"turn 't-1' is not a running turn of this store; a turn finishes once"):
        await store.finish_turn(completed(running("t-1"), reply="second"))
    assert [t.reply for t in await store.get_turns(SessionId("s-1"))] == ["first"]


async def test_an_unknown_turn_cannot_finish(store: Store) -> None:
    with pytest.raises(StoreError, match=r"turn 't-9' is not a running turn of this store"):
        await store.finish_turn(completed(running("t-9", ordinal=1)))
    assert await store.find_turn("t-9") is None


@pytest.mark.parametrize(("sid", "ordinal"), [("s-1", 5), ("s-2", 0)])
async def test_a_turn_finishes_where_it_began(store: Store, sid: str, ordinal: int) -> None:
    with pytest.raises(StoreError, match=r"turn 't-1' is not a running turn of this store"):
        await store.finish_turn(completed(running("t-1", sid=sid, ordinal=ordinal)))
    assert await store.find_turn("t-1") == running("t-1")


@pytest.mark.parametrize("turn_id", ["t-1", "t-9"])
async def test_only_a_finished_turn_of_the_store_is_retracted(store: Store, turn_id: str) -> None:
    with pytest.raises(StoreError, match=rf"(no finished turn|cannot retract turn) {turn_id!r}"):
        await store.retract_turn(TurnId(turn_id), T1, "wrong")
    assert await store.find_turn("t-1") == running("t-1")


async def test_a_node_belongs_to_a_stored_session(store: Store) -> None:
    with pytest.raises(StoreError, match=r"no session 'nowhere' is stored"):
        await store.save_node(node("nowhere"))
    assert await store.get_nodes([SessionId("nowhere")]) == ()


@pytest.mark.parametrize(("source", "target"), [("nowhere", "s-1"), ("s-1", "nowhere")])
async def test_an_edge_joins_two_stored_sessions(store: Store, source: str, target: str) -> None:
    with pytest.raises(StoreError, match=r"(no session 'nowhere' is stored|names a session the store does not hold)"):
        await store.save_edge(edge(source, target))
    assert await store.get_edges([SessionId("s-1")], "out") == ()
    assert await store.get_edges([SessionId("s-1")], "in") == ()


@pytest.mark.parametrize("direction", ["out", "in"])
async def test_asking_for_a_session_twice_gives_its_edges_once(store: Store, direction: str) -> None:
    await store.save_edge(edge("s-1", "s-2"))
    asked = SessionId("s-1") if direction == "out" else SessionId("s-2")
    assert await store.get_edges([asked, asked], direction) == (edge("s-1", "s-2"),)  # type: ignore[arg-type]


# -- erasure ------------------------------------------------------------------------------


async def test_a_running_turn_is_not_erased(store: Store) -> None:
    with pytest.raises(StoreError, match=r"turn 't-1'"):
        await store.erase(Erasure(at=T1, turns=(erased(running("t-1"), T1),), turn_ids=frozenset({TurnId("t-1")})))
    assert await store.find_turn("t-1") == running("t-1")


async def test_an_erased_turn_record_says_when(store: Store) -> None:
    await store.finish_turn(completed(running("t-1")))
    with pytest.raises(StoreError, match=r"turn 't-1'"):
        await store.erase(Erasure(at=T1, turns=(attrs.evolve(erased(completed(running("t-1")), T1), erased_at=None),)))
    assert [t.reply for t in await store.get_turns(SessionId("s-1"))] == ["ok"]


async def test_a_turn_is_erased_once(store: Store) -> None:
    await store.finish_turn(completed(running("t-1")))
    first = Erasure(at=T1, turns=(erased(completed(running("t-1")), T1),), turn_ids=frozenset({TurnId("t-1")}))
    await store.erase(first)
    later = T1 + timedelta(seconds=1)
    with pytest.raises(StoreError, match=r"turn 't-1'"):
        await store.erase(Erasure(at=later, turns=(erased(completed(running("t-1")), later),)))
    assert [t.erased_at for t in await store.get_turns(SessionId("s-1"))] == [T1]


async def test_an_erasure_rewrites_edges_between_stored_sessions(store: Store) -> None:
    with pytest.raises(StoreError, match=r"(no session 'nowhere' is stored|names a session the store does not hold)"):
        await store.erase(Erasure(at=T1, edges=(edge("s-1", "nowhere"),)))
    assert await store.get_edges([SessionId("s-1")], "out") == ()


async def test_the_quoted_error_of_a_running_turn_is_not_erased(store: Store) -> None:
    with pytest.raises(StoreError, match=r"turn 't-1'.*running"):
        await store.erase(Erasure(at=T1, errors=frozenset({("turns", "t-1")})))
    assert await store.find_turn("t-1") == running("t-1")


# -- the integrator's log -----------------------------------------------------------------


async def test_an_invocation_begins_once(store: Store) -> None:
    await integrator_store(store).begin_invocation(invocation())
    with pytest.raises(StoreError, match=r"invocation 'i-1' is already stored"):
        await integrator_store(store).begin_invocation(attrs.evolve(invocation(), mod_id="other"))
    assert await integrator_store(store).invocations_of(SessionId("s-1")) == (invocation(),)


async def test_an_invocation_finishes_with_its_finish_time(store: Store) -> None:
    await integrator_store(store).begin_invocation(invocation())
    with pytest.raises(StoreError, match=r"cannot finish invocation 'i-1' without finished_at"):
        await integrator_store(store).finish_invocation(attrs.evolve(invocation(), text="done"))
    assert await integrator_store(store).invocations_of(SessionId("s-1")) == (invocation(),)


async def test_an_invocation_finishes_once(store: Store) -> None:
    await integrator_store(store).begin_invocation(invocation())
    await integrator_store(store).finish_invocation(attrs.evolve(invocation(), finished_at=T1, text="first"))
    with pytest.raises(StoreError, match=r"invocation 'i-1'.*finishes once"):
        await integrator_store(store).finish_invocation(attrs.evolve(invocation(), finished_at=T1, text="second"))
    assert [i.text for i in await integrator_store(store).invocations_of(SessionId("s-1"))] == ["first"]


async def test_an_unknown_invocation_cannot_finish(store: Store) -> None:
    with pytest.raises(StoreError, match=r"invocation 'i-9'"):
        await integrator_store(store).finish_invocation(attrs.evolve(invocation("i-9"), finished_at=T1))
    assert await integrator_store(store).invocations_of(SessionId("s-1")) == ()


async def test_only_a_stored_turn_is_marked_read(store: Store) -> None:
    with pytest.raises(StoreError, match=r"no turn 't-9' is stored"):
        await integrator_store(store).mark_read(TurnId("t-9"), T1)
    await integrator_store(store).mark_read(TurnId("t-1"), T1)
    await integrator_store(store).mark_read(TurnId("t-1"), T1)  # again: no change


async def test_only_a_stored_session_is_deleted(store: Store) -> None:
    with pytest.raises(StoreError, match=r"no session 'nowhere' is stored"):
        await integrator_store(store).delete_session(SessionId("nowhere"), T1)
    assert await integrator_store(store).deleted_at(SessionId("nowhere")) is None
    await integrator_store(store).delete_session(SessionId("s-1"), T1)
    await integrator_store(store).delete_session(SessionId("s-1"), T1 + timedelta(seconds=1))  # again: the first time stays
    assert await integrator_store(store).deleted_at(SessionId("s-1")) == T1


# -- traces and actions -------------------------------------------------------------------


async def test_a_trace_is_stored_once(store: Store) -> None:
    await traces(store).create_trace(TraceRecord(id="tr-1", origin="chat", created_at=T0), None)
    with pytest.raises(StoreError, match=r"trace 'tr-1' is already stored"):
        await traces(store).create_trace(TraceRecord(id="tr-1", origin="task", created_at=T1), None)


async def test_a_trace_gets_one_task_and_a_task_one_trace(store: Store) -> None:
    tr = traces(store)
    task = TraceTaskRecord(trace_id="tr-1", ref="T-1", snapshot={}, captured_at=T0)
    await tr.create_trace(TraceRecord(id="tr-1", origin="task", created_at=T0), task)
    await tr.create_trace(TraceRecord(id="tr-2", origin="task", created_at=T0), None)
    with pytest.raises(StoreError, match=r"trace 'tr-1' already has a task"):
        await tr.attach_task(attrs.evolve(task, ref="T-2"))
    with pytest.raises(StoreError, match=r"task 'T-1' already has a trace"):
        await tr.attach_task(attrs.evolve(task, trace_id="tr-2"))
    with pytest.raises(StoreError, match=r"no trace 'tr-9' is stored"):
        await tr.attach_task(attrs.evolve(task, trace_id="tr-9", ref="T-9"))
    assert await tr.find_trace("T-2") is None


async def test_a_session_joins_a_stored_trace(store: Store) -> None:
    with pytest.raises(StoreError, match=r"no trace 'tr-9' is stored"):
        await traces(store).create_linked_session(session("s-3"), node("s-3"), None, "tr-9")
    assert await store.get_session(SessionId("s-3")) is None


async def test_an_output_belongs_to_a_stored_session(store: Store) -> None:
    with pytest.raises(StoreError, match=r"no session 'nowhere' is stored"):
        await traces(store).add_output(
            output_id="o-1",
            session_id=SessionId("nowhere"),
            kind="file",
            created_at=T0,
            chat_trace=TraceRecord(id="tr-1", origin="chat", created_at=T0),
        )
    assert await traces(store).get_output("o-1") is None


async def test_a_commit_lands_a_stored_output(store: Store) -> None:
    with pytest.raises(StoreError, match=r"no output 'o-9' is stored"):
        await traces(store).record_commit(TraceCommitRecord(output_id="o-9", commit_hash="abc", recorded_at=T0))


async def test_a_spool_event_is_applied_once(store: Store) -> None:
    await traces(store).apply_event("e-1", T0)
    with pytest.raises(StoreError, match=r"spool event 'e-1' was applied before"):
        await traces(store).apply_event("e-1", T1)


@pytest.mark.parametrize("batch", [["a-1", "a-1"], ["a-0", "a-1"]])
async def test_an_action_id_is_stored_once(store: Store, batch: list[str]) -> None:
    tr = traces(store)
    if batch[0] != batch[1]:
        await tr.propose_actions([action("a-1")])
    with pytest.raises(StoreError, match=r"'a-1'.*already stored"):
        await tr.propose_actions([action(a) for a in batch])
    assert [a.id for a in await tr.pending_actions(SessionId("s-1"))] == ([] if batch[0] == batch[1] else ["a-1"])


async def test_an_action_belongs_to_a_stored_session(store: Store) -> None:
    with pytest.raises(StoreError, match=r"no session 'nowhere' is stored"):
        await traces(store).propose_actions([action("a-1", sid="nowhere")])
    assert await traces(store).get_action("a-1") is None


async def test_an_action_is_decided_once(store: Store) -> None:
    tr = traces(store)
    await tr.propose_actions([action("a-1")])
    await tr.decide_action(ActionOutcomeRecord(action_id="a-1", state="confirmed", decided_at=T1))
    with pytest.raises(StoreError, match=r"action 'a-1'"):
        await tr.decide_action(ActionOutcomeRecord(action_id="a-1", state="dismissed", decided_at=T1))
    with pytest.raises(StoreError, match=r"action 'a-9'"):
        await tr.decide_action(ActionOutcomeRecord(action_id="a-9", state="dismissed", decided_at=T1))
    found = await tr.get_action("a-1")
    assert found is not None and found[1] is not None and found[1].state == "confirmed"

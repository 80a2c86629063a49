"""A state machine that tries to break the record: order, prefixes, lineage, durability.

Hypothesis drives a real `Host` (on asyncio and trio, over a `MemoryStore` and a
`SqliteStore` file) through create / send (several at once) / notify / fork / turn.fork /
spawn / cancel a queued send / close-and-reopen, and after every step checks:

- ordinals of every session are contiguous from 0;
- a fork's history is its parent's history up to the anchor, by turn id, and no later
  parent turn ever appears in it;
- no two turns of one session ever ran at once, and a cancelled queued send never ran;
- the model saw exactly the completed history before each turn;
- parent, children and depth agree with the lineage graph;
- nothing acknowledged is lost (also across close and reopen), and the store's own
  invariant checker finds nothing wrong.
"""

from __future__ import annotations

import contextlib
import shutil
import tempfile
from pathlib import Path
from typing import Literal

import anyio
import anyio.from_thread
import pytest
from hypothesis import HealthCheck, settings
from hypothesis import strategies as st
from hypothesis.stateful import Bundle, RuleBasedStateMachine, initialize, invariant, rule, run_state_machine_as_test

from host_sim import Host, MemoryStore, ModelRequest, ScriptedModel, SessionHandle, SqliteStore, Store
from host_sim.testing import check
from modular_sdk import (
    AiNotificationMessage,
    AiPromptMessage,
    AiTurnHandle,
    ModMetadata,
    SessionId,
    SlashCommandContext,
    define_mod,
    slash_command,
)

from .._stores import read_back

Backend = Literal["asyncio", "trio"]
StoreKind = Literal["memory", "sqlite"]


async def spawn_child(argument: str | None, ctx: SlashCommandContext) -> str:
    child = await ctx.session.spawn()
    return child.id


spawner = define_mod(
    metadata=ModMetadata(display_name="Spawner", description="Spawns a child session"),
    commands=[slash_command(id="spawn", description="Spawn a child", run=spawn_child)],
)


class Recorder:
    """The model: records what it saw, how many turns of a session ran at once, and gates."""

    def __init__(self) -> None:
        self.seen: dict[str, tuple[str, tuple[str, ...]]] = {}  # text -> (session id, history texts)
        self.running: dict[str, int] = {}
        self.overlaps: list[str] = []
        self.gates: dict[str, anyio.Event] = {}
        self.started: dict[str, anyio.Event] = {}

    async def respond(self, request: ModelRequest) -> str:
        session = request.session_id
        self.running[session] = self.running.get(session, 0) + 1
        if self.running[session] > 1:
            self.overlaps.append(f"{request.text!r} ran while another turn of {session} ran")
        self.seen[request.text] = (session, tuple(h.text for h in request.history))
        try:
            if request.text in self.started:
                self.started[request.text].set()
            if request.text in self.gates:
                await self.gates[request.text].wait()
            for _ in range(3):  # let other tasks interleave
                await anyio.lowlevel.checkpoint()
        finally:
            self.running[session] -= 1
        return f"reply to {request.text}"


def model_text(turn: AiTurnHandle) -> str:
    """The text a model is given for a turn's message."""
    message = turn.message
    return message.text if isinstance(message, AiPromptMessage) else f"{message.title}\n\n{message.body}"


def machine(backend: Backend, store_kind: StoreKind) -> type[RuleBasedStateMachine]:
    class HostRecord(RuleBasedStateMachine):
        sessions = Bundle("sessions")

        def __init__(self) -> None:
            super().__init__()
            self.stack = contextlib.ExitStack()
            self.folder = Path(tempfile.mkdtemp(prefix="host-sim-sm-"))
            self.stack.callback(shutil.rmtree, self.folder, True)
            self.portal = self.stack.enter_context(anyio.from_thread.start_blocking_portal(backend))
            self.recorder = Recorder()
            self.memory = MemoryStore()
            self.counter = 0
            self.acked: dict[str, tuple[SessionId, int, str]] = {}  # turn id -> (session, ordinal, status)
            self.known: list[SessionId] = []
            self.cancelled_texts: list[str] = []
            self.host_cm: contextlib.AbstractContextManager[Host] | None = None
            self.host = self._open()

        # -- plumbing ------------------------------------------------------------------
        def _store(self) -> Store:
            return self.memory if store_kind == "memory" else SqliteStore(self.folder / "store.sqlite")

        def _open(self) -> Host:
            host = Host(mods=[spawner], model=ScriptedModel(self.recorder.respond), store=self._store())
            self.host_cm = self.portal.wrap_async_context_manager(host)
            return self.host_cm.__enter__()

        def _close(self) -> None:
            if self.host_cm is not None:
                self.host_cm.__exit__(None, None, None)
                self.host_cm = None

        def teardown(self) -> None:
            try:
                self._close()
            finally:
                self.stack.close()

        def _text(self, kind: str) -> str:
            self.counter += 1
            return f"{kind}-{self.counter}"

        def _handle(self, session_id: SessionId) -> SessionHandle:
            return self.portal.call(self.host.sessions.get, session_id)

        def _ack(self, turn: AiTurnHandle) -> None:
            self.acked[turn.id] = (turn.session_id, turn.ordinal, turn.status)

        # -- rules ---------------------------------------------------------------------
        @initialize(target=sessions)
        def first_session(self) -> SessionId:
            session = self.portal.call(self.host.sessions.create)
            self.known.append(session.id)
            return session.id

        @rule(target=sessions)
        def create(self) -> SessionId:
            session = self.portal.call(self.host.sessions.create)
            self.known.append(session.id)
            return session.id

        @rule(session_id=sessions, count=st.integers(min_value=1, max_value=3))
        def send_at_once(self, session_id: SessionId, count: int) -> None:
            texts = [self._text("prompt") for _ in range(count)]
            handle = self._handle(session_id)

            async def send_all() -> list[AiTurnHandle]:
                done: list[AiTurnHandle] = []

                async def one(text: str) -> None:
                    done.append(await handle.send(AiPromptMessage(text=text)))

                async with anyio.create_task_group() as tg:
                    for text in texts:
                        tg.start_soon(one, text)
                return done

            for turn in self.portal.call(send_all):
                self._ack(turn)

        @rule(session_id=sessions)
        def notify(self, session_id: SessionId) -> None:
            handle = self._handle(session_id)
            turn = self.portal.call(lambda: handle.send(AiNotificationMessage(title=self._text("note"), body="b")))
            self._ack(turn)

        @rule(target=sessions, session_id=sessions)
        def fork(self, session_id: SessionId) -> SessionId:
            handle = self._handle(session_id)
            turns = self.portal.call(handle.turns)
            if not any(t.status == "completed" for t in turns):
                return session_id  # NoConversationError is covered elsewhere
            fork = self.portal.call(lambda: handle.fork())
            self.known.append(fork.id)
            return fork.id

        @rule(target=sessions, session_id=sessions, pick=st.integers(min_value=0, max_value=50))
        def fork_at_a_turn(self, session_id: SessionId, pick: int) -> SessionId:
            handle = self._handle(session_id)
            completed = [t for t in self.portal.call(handle.turns) if t.status == "completed"]
            if not completed:
                return session_id
            anchor = completed[pick % len(completed)]
            fork = self.portal.call(lambda: anchor.fork())
            self.known.append(fork.id)
            return fork.id

        @rule(target=sessions, session_id=sessions)
        def spawn(self, session_id: SessionId) -> SessionId:
            out = self.portal.call(self.host.submit, session_id, "/spawn")
            assert out.error is None, out.error
            child = SessionId(out.text)
            self.known.append(child)
            return child

        @rule(session_id=sessions)
        def cancel_a_queued_send(self, session_id: SessionId) -> None:
            """A running, B queued then cancelled, C queued: C starts only after A, B never."""
            handle = self._handle(session_id)
            a, b, c = self._text("first"), self._text("cancelled"), self._text("after")
            recorder = self.recorder

            async def scenario() -> tuple[AiTurnHandle, AiTurnHandle]:
                recorder.gates[a] = anyio.Event()
                recorder.started[a] = anyio.Event()
                results: dict[str, AiTurnHandle] = {}

                async def send(text: str) -> None:
                    results[text] = await handle.send(AiPromptMessage(text=text))

                async with anyio.create_task_group() as tg:
                    tg.start_soon(send, a)
                    await recorder.started[a].wait()
                    queued_b = anyio.CancelScope()
                    tg.start_soon(send_in, queued_b, b)
                    await anyio.wait_all_tasks_blocked()
                    tg.start_soon(send, c)
                    await anyio.wait_all_tasks_blocked()
                    queued_b.cancel()
                    await anyio.wait_all_tasks_blocked()
                    assert c not in recorder.seen, "the next queued send started while the first still ran"
                    recorder.gates[a].set()
                return results[a], results[c]

            async def send_in(scope: anyio.CancelScope, text: str) -> None:
                with scope:
                    await handle.send(AiPromptMessage(text=text))

            first, after = self.portal.call(scenario)
            self.cancelled_texts.append(b)
            self._ack(first)
            self._ack(after)
            assert after.ordinal == first.ordinal + 1

        @rule()
        def close_and_reopen(self) -> None:
            self._close()
            self.host = self._open()

        # -- what must always hold -----------------------------------------------------
        @invariant()
        def the_record_holds(self) -> None:
            self.portal.call(self._check)

        async def _check(self) -> None:
            host, recorder = self.host, self.recorder
            assert recorder.overlaps == []
            for text in self.cancelled_texts:
                assert text not in recorder.seen, f"the cancelled send {text!r} reached the model"
            by_id: dict[str, tuple[SessionId, int, str]] = {}
            for session_id in self.known:
                session = await host.sessions.get(session_id)
                turns = await session.turns()
                assert [t.ordinal for t in turns] == list(range(len(turns))), f"ordinals of {session_id}"
                for turn in turns:
                    by_id[turn.id] = (turn.session_id, turn.ordinal, turn.status)
                    if turn.session_id == session_id and turn.status == "completed":
                        seen_session, seen_history = recorder.seen[model_text(turn)]
                        expected = tuple(model_text(t) for t in turns[: turn.ordinal] if t.status == "completed")
                        assert seen_session == session_id
                        assert seen_history == expected, f"the model saw {seen_history}, not {expected}"
                lineage = session.lineage
                parent = await session.parent()
                graph_parents = [n.session_id for n in await host.lineage.ancestors(session_id, max_depth=1)]
                if lineage.kind == "root":
                    assert parent is None and graph_parents == []
                    continue
                assert parent is not None and parent.id == lineage.parent_session_id
                assert graph_parents == [parent.id]
                assert session in await parent.children()
                parent_depth = 0 if parent.lineage.kind == "root" else parent.lineage.depth
                assert lineage.depth == parent_depth + 1
                if lineage.kind == "fork":
                    anchor = lineage.parent_turn_ordinal
                    parent_turns = await parent.turns()
                    assert [t.id for t in turns[: anchor + 1]] == [t.id for t in parent_turns[: anchor + 1]]
                    assert turns[anchor].status == "completed"
                    assert all(t.session_id == session_id for t in turns[anchor + 1 :])
                    later = {t.id for t in parent_turns[anchor + 1 :]}
                    assert not later & {t.id for t in turns}
            for turn_id, acked in self.acked.items():
                assert by_id.get(turn_id) == acked, f"acknowledged turn {turn_id} {acked} is now {by_id.get(turn_id)}"
            store: Store = self.memory if store_kind == "memory" else SqliteStore(self.folder / "store.sqlite", read_only=True)
            try:
                state = await read_back(store)
            finally:
                if store_kind == "sqlite":
                    await store.close()
            assert check(state) == []

    HostRecord.__name__ = f"HostRecord_{backend}_{store_kind}"
    return HostRecord


@pytest.mark.parametrize("store_kind", ["memory", "sqlite"])
@pytest.mark.parametrize("backend", ["asyncio", "trio"])
def test_the_record_holds_under_any_sequence_of_operations(backend: Backend, store_kind: StoreKind) -> None:
    run_state_machine_as_test(
        machine(backend, store_kind),
        settings=settings(
            max_examples=25,
            stateful_step_count=20,
            deadline=None,
            suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much],
        ),
    )

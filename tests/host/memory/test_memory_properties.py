"""Properties of memory and compaction (API.md section 20), tried on random sessions, forks at
random anchors, random compactions, records and forgets:

- every entry a model sees rests only on turns at or before its anchor, and on no erased
  turn (a summary carries the words of its window: a leak would show);
- what lineage says a turn or record became is exactly what forgetting it removes:
  ``forget(x).records == forward(x).records`` (a record's plan: itself, then those).
"""

from __future__ import annotations

import re
import tempfile
from collections.abc import Sequence
from pathlib import Path
from typing import Literal, TypeAlias

import anyio
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from host_sim import ContextPolicy, HistoryEntry, Host, MemoryStore, ModelRequest, ScriptedModel, SqliteStore, Store
from modular_sdk import AiPromptMessage, AiSessionHandle

Op: TypeAlias = tuple[Literal["send", "fork", "forget", "record", "forget_record"], int, int]
_OPS = st.lists(
    st.tuples(
        st.sampled_from(["send", "send", "send", "send", "fork", "forget", "record", "forget_record"]),
        st.integers(0, 50),
        st.integers(0, 50),
    ),
    min_size=1,
    max_size=28,
)
_WORD = re.compile(r"w\d+x")


async def _joined(entries: Sequence[HistoryEntry]) -> str:
    return "summary: " + " ".join(e.text for e in entries)


async def _run(ops: list[Op], store: Store) -> None:
    seen: list[tuple[str, list[str], set[str]]] = []  # (session, words the model saw, words it may see)
    history: dict[str, list[str]] = {}  # session -> the words of its history's turns, in order
    allowed_now: dict[str, set[str]] = {}
    erased: set[str] = set()

    def respond(request: ModelRequest) -> str:
        words = [w for e in request.history for w in _WORD.findall(e.text)]
        seen.append((request.session_id, words, allowed_now[request.session_id]))
        return "ok"

    policy = ContextPolicy(max_tokens=40, keep_recent=1, summarize=_joined)
    async with Host(model=ScriptedModel(respond), store=store, context=policy) as host:
        sessions: list[AiSessionHandle] = [await host.sessions.create()]
        history[sessions[0].id] = []
        words_of: dict[str, str] = {}  # turn id -> its word
        records: list[str] = []
        start: list[Op] = [("send", 0, 0)] * 4
        for index, (what, a, b) in enumerate(start + ops):
            session = sessions[a % len(sessions)]
            turns = [t for t in await session.turns() if t.status == "completed"]
            if what == "send":
                word = f"w{index}x"
                allowed_now[session.id] = set(history[session.id]) - erased
                turn = await session.send(AiPromptMessage(text=f"{word} filler text here"))
                words_of[turn.id] = word
                history[session.id].append(word)
            elif what == "fork" and turns:
                anchor = turns[b % len(turns)]
                fork = await anchor.fork()
                sessions.append(fork)
                history[fork.id] = history[session.id][: [t.id for t in turns].index(anchor.id) + 1]
            elif what == "record" and turns:
                cited = turns[b % len(turns)]
                rec = await host.memory.record(session, f"about {words_of.get(cited.id, '')}", kind="fact", cites=(cited.id,))
                records.append(rec.id)
            elif what == "forget" and turns:
                target = turns[b % len(turns)]
                forward = await host.lineage.forward(target.id)
                plan = await host.lineage.forget(target.id)
                assert plan.records == forward.records
                done = await host.lineage.forget(target.id, dry_run=False)
                assert done.records == forward.records
                erased.update(words_of[r.turn_id] for r in done.turns if r.turn_id in words_of)
                for ref in done.records:
                    assert (await host.memory.get(ref.record_id)).text == "(erased)"
            elif what == "forget_record" and records:
                target_id = records[b % len(records)]
                forward = await host.lineage.forward(target_id)
                plan = await host.lineage.forget(target_id, dry_run=False)
                assert [r.record_id for r in plan.records] == [target_id, *(r.record_id for r in forward.records)]
    for session_id, words, allowed in seen:
        leaked = set(words) - allowed
        assert not leaked, f"a model call of {session_id} saw {sorted(leaked)}, which its history does not hold (or were erased)"


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(ops=_OPS)
@pytest.mark.parametrize("backend", ["asyncio", "trio"])
def test_every_entry_a_model_sees_rests_on_its_history_up_to_its_anchor_and_on_no_erased_turn(
    backend: str, ops: list[Op]
) -> None:
    anyio.run(_run, ops, MemoryStore(), backend=backend)


@settings(max_examples=8, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(ops=_OPS)
def test_the_same_holds_on_a_sqlite_store(ops: list[Op]) -> None:
    with tempfile.TemporaryDirectory() as folder:
        anyio.run(_run, ops, SqliteStore(Path(folder) / "store.sqlite"))

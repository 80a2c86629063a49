"""Synthetic stores for the lineage page: deep fork chains and wide forests, built as records."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from host_sim.stores import SessionRecord, TurnRecord
from modular_sdk import (
    AiPromptMessage,
    AiRunnerId,
    AiSessionDisplayMetadata,
    CommandTrigger,
    ForkLineage,
    RootLineage,
    SessionId,
    SpawnLineage,
    TurnId,
    UserAuthor,
)

T0 = datetime(2026, 1, 1, tzinfo=UTC)
RUNNER = AiRunnerId("runner")


def session(index: int, lineage: RootLineage | ForkLineage | SpawnLineage, label: str | None = None) -> SessionRecord:
    return SessionRecord(
        id=SessionId(f"s-{index}"),
        lineage=lineage,
        metadata=None if label is None else AiSessionDisplayMetadata(label=label),
        model="echo",
        cwd="/",
        runner_id=RUNNER,
        created_at=T0 + timedelta(seconds=index),
    )


def turn(
    session_id: str, ordinal: int, *, failed: bool = False, erased: bool = False, at: int = 0, text: str | None = None
) -> TurnRecord:
    return TurnRecord(
        id=TurnId(f"{session_id}-t{ordinal}"),
        session_id=SessionId(session_id),
        ordinal=ordinal,
        message=AiPromptMessage(text=f"prompt {ordinal} of {session_id}" if text is None else text),
        message_id=f"m-{session_id}-{ordinal}",
        author=UserAuthor(),
        runner_id=RUNNER,
        status="failed" if failed else "completed",
        reply=None if failed else f"reply {ordinal}",
        error="the model timed out" if failed else None,
        started_at=T0 + timedelta(seconds=at),
        finished_at=T0 + timedelta(seconds=at + 1),
        erased_at=T0 + timedelta(seconds=at + 2) if erased else None,
    )


def fork_chain(depth: int) -> tuple[list[SessionRecord], list[TurnRecord]]:
    """A root with one turn, then ``depth`` forks, each at its parent's last turn, each adding one."""
    sessions = [session(0, RootLineage())]
    turns = [turn("s-0", 0)]
    for index in range(1, depth + 1):
        lineage = ForkLineage(
            parent_session_id=SessionId(f"s-{index - 1}"),
            parent_turn_ordinal=index - 1,
            parent_runner_id=RUNNER,
            depth=index,
            forked_at=T0 + timedelta(seconds=index),
        )
        sessions.append(session(index, lineage))
        turns.append(turn(f"s-{index}", index, at=index))
    return sessions, turns


def forest(count: int) -> tuple[list[SessionRecord], list[TurnRecord]]:
    """``count`` sessions of three turns each: a root every tenth, otherwise forks (at their
    parent's second turn) and spawns, a failed turn in every seventh session and an erased
    one in every eleventh."""
    sessions: list[SessionRecord] = []
    turns: list[TurnRecord] = []
    starts: list[int] = []
    for index in range(count):
        parent = index - 1 - (index % 3)
        if index % 10 == 0 or parent < 0:
            lineage: RootLineage | ForkLineage | SpawnLineage = RootLineage()
            start = 0
        elif index % 4 == 0:
            lineage = SpawnLineage(
                parent_session_id=SessionId(f"s-{parent}"),
                parent_chat_uri=f"chat://s-{parent}",
                depth=1,
                spawned_at=T0 + timedelta(seconds=index),
                trigger=CommandTrigger(mod_id="work", command_id="delegate"),
            )
            start = 0
        else:
            lineage = ForkLineage(
                parent_session_id=SessionId(f"s-{parent}"),
                parent_turn_ordinal=starts[parent] + 1,
                parent_runner_id=RUNNER,
                depth=1,
                forked_at=T0 + timedelta(seconds=index),
            )
            start = starts[parent] + 2
        starts.append(start)
        sessions.append(session(index, lineage, label=f"task {index}" if index % 2 else None))
        for ordinal in range(start, start + 3):
            failed = index % 7 == 3 and ordinal == start + 1
            erased = index % 11 == 5 and ordinal == start
            turns.append(turn(f"s-{index}", ordinal, failed=failed, erased=erased, at=index))
    return sessions, turns

"""The host's live state of sessions and turns, and how a history is read.

A fork never copies history: it is a `SessionState` pointing at its parent and the anchor
turn. Reading a history walks that chain, so creating a fork costs the same whether the
parent has ten turns or ten thousand.
"""

from __future__ import annotations

from datetime import datetime

import anyio
import attrs

from modular_sdk import AiMessage, AiRunnerId, Author, SessionId, TurnId, TurnStatus

from ..lineage._types import LineageArtifact
from ..models._protocol import HistoryEntry
from ..stores._records import SessionRecord, TurnRecord

__all__ = ["SessionState", "TurnState", "history"]


@attrs.define(slots=True, eq=False, kw_only=True)
class TurnState:
    """A turn as it runs; frozen into a `TurnRecord` when it finishes."""

    id: TurnId
    session_id: SessionId
    ordinal: int
    message: AiMessage
    message_id: str
    author: Author
    runner_id: AiRunnerId
    started_at: datetime
    status: TurnStatus = "running"
    reply: str | None = None
    error: str | None = None
    finished_at: datetime | None = None
    done: anyio.Event | None = None
    artifact: LineageArtifact | None = None  # the branched_from artifact of forks made here
    history_entry: HistoryEntry | None = None  # what the model sees of it, once completed

    def record(self) -> TurnRecord:
        return TurnRecord(
            id=self.id,
            session_id=self.session_id,
            ordinal=self.ordinal,
            message=self.message,
            message_id=self.message_id,
            author=self.author,
            runner_id=self.runner_id,
            status=self.status,
            reply=self.reply,
            error=self.error,
            started_at=self.started_at,
            finished_at=self.finished_at,
        )

    @classmethod
    def from_record(cls, record: TurnRecord) -> TurnState:
        return cls(
            id=record.id,
            session_id=record.session_id,
            ordinal=record.ordinal,
            message=record.message,
            message_id=record.message_id,
            author=record.author,
            runner_id=record.runner_id,
            started_at=record.started_at,
            status=record.status,
            reply=record.reply,
            error=record.error,
            finished_at=record.finished_at,
        )


@attrs.define(slots=True, eq=False, kw_only=True)
class SessionState:
    """A session: its record, its own turns, and (for a fork) the anchor it continues from.

    ``parent`` is the session it was forked or spawned from; ``anchor`` is set only for a
    fork and is the last inherited turn. ``own`` and ``children`` are created on first use
    to keep an untouched fork small.
    """

    record: SessionRecord
    parent: SessionState | None = None
    anchor: TurnState | None = None
    own: list[TurnState] | None = None
    children: list[SessionState] | None = None
    last_completed: TurnState | None = None  # the last turn completed *and* durable
    queue: anyio.Lock | None = None  # FIFO of sends: the holder runs the session's one turn

    @property
    def id(self) -> SessionId:
        return self.record.id

    @property
    def next_ordinal(self) -> int:
        if self.own:
            return self.own[-1].ordinal + 1
        return 0 if self.anchor is None else self.anchor.ordinal + 1

    @property
    def depth(self) -> int:
        lineage = self.record.lineage
        return 0 if lineage.kind == "root" else lineage.depth

    def add_child(self, child: SessionState) -> None:
        if self.children is None:
            self.children = [child]
        else:
            self.children.append(child)


def history(session: SessionState, upto: int | None = None) -> list[TurnState]:
    """The turns of ``session`` in ordinal order, inherited ones included.

    With ``upto``, only turns with ``ordinal <= upto``. Walks the fork chain; nothing is
    copied.
    """
    segments: list[list[TurnState]] = []
    current: SessionState | None = session
    limit = upto
    while current is not None:
        own = current.own or []
        if limit is not None:
            own = [t for t in own if t.ordinal <= limit]
        segments.append(own)
        anchor = current.anchor
        if anchor is None:
            break
        limit = anchor.ordinal if limit is None else min(limit, anchor.ordinal)
        current = current.parent
    turns: list[TurnState] = []
    for segment in reversed(segments):
        turns.extend(segment)
    return turns


def turn_at(session: SessionState, ordinal: int) -> TurnState | None:
    """The turn of ``session``'s history at ``ordinal`` (walking the fork chain)."""
    current: SessionState | None = session
    while current is not None:
        if current.own and current.own[0].ordinal <= ordinal:
            index = ordinal - current.own[0].ordinal
            if index < len(current.own):
                return current.own[index]
            return None
        anchor = current.anchor
        if anchor is None or ordinal > anchor.ordinal:
            return None
        current = current.parent
    return None

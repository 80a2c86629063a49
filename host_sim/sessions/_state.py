"""The host's live state of sessions and turns, and how a history is read.

A fork never copies history: it is a `SessionState` pointing at its parent and the anchor
turn. A history is a view over shared segments: each session's own turns (a list indexed by
ordinal) and its own completed turns' model entries (a list indexed by completed count),
cut at each anchor of the fork chain. Reading costs what it returns plus one step per fork
in the chain, never the parent's length: creating a fork, reading a fork's few turns, and
building a model request cost the same whether the parent has ten turns or ten thousand.
"""

from __future__ import annotations

import bisect
from collections.abc import Iterator, Sequence
from datetime import datetime
from typing import overload

import anyio
import attrs

from modular_sdk import (
    AiMessage,
    AiNotificationMessage,
    AiRunnerId,
    Author,
    SessionId,
    TurnId,
    TurnStatus,
    Usage,
    WidgetPlacement,
)

from ..lineage._types import LineageArtifact
from ..models._protocol import HistoryEntry
from ..stores._records import ErrorKind, SessionRecord, ToolCallRecord, TurnRecord

__all__ = [
    "HistoryView",
    "SessionState",
    "SessionUse",
    "TurnState",
    "apply_erasure",
    "completed_turn_at",
    "entry_of",
    "history",
    "history_chain",
    "history_view",
    "turn_at",
]


@attrs.define(slots=True, eq=False, kw_only=True, weakref_slot=False)
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
    erased_at: datetime | None = None
    done: anyio.Event | None = None
    artifact: LineageArtifact | None = None  # the branched_from artifact of forks made here
    completed_before: int = 0  # completed turns before it in its session's history
    failure: ErrorKind | None = None  # why it failed, for Submission.error_kind (not stored)
    streamed: list[str] | None = None  # reply_delta chunks published so far (streaming models only)
    tool_calls: tuple[ToolCallRecord, ...] = ()  # the calls made so far, kept with the record
    retracted_at: datetime | None = None
    retraction_reason: str | None = None
    usage: Usage | None = None  # the model calls' usage so far, summed (None: none reported)
    widgets: tuple[WidgetPlacement, ...] = ()  # what the reply placed, kept with the record
    widget_errors: tuple[str, ...] = ()  # <mod-widget> tags that placed nothing, and why (not stored)

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
            erased_at=self.erased_at,
            tool_calls=self.tool_calls,
            retracted_at=self.retracted_at,
            retraction_reason=self.retraction_reason,
            usage=self.usage,
            widgets=self.widgets,
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
            erased_at=record.erased_at,
            tool_calls=record.tool_calls,
            retracted_at=record.retracted_at,
            retraction_reason=record.retraction_reason,
            usage=record.usage,
            widgets=record.widgets,
        )


@attrs.define(slots=True, eq=False, weakref_slot=False)
class SessionUse:
    """What only a session that was sent to, deleted or had a command run holds."""

    queue: anyio.Lock | None = None
    deleted_at: datetime | None = None
    last_invocation_at: datetime | None = None
    erasure_generation: int = 0  # of a shared store: the erasures its own turns reflect (0: as loaded)


@attrs.define(slots=True, eq=False, kw_only=True, weakref_slot=False)
class SessionState:
    """A session: its record, its own turns, and (for a fork) the anchor it continues from.

    ``parent`` is the session it was forked or spawned from; ``anchor`` is set only for a
    fork and is the last inherited turn. ``own`` (own turns, by ordinal) and ``entries``
    (what the model sees of own completed turns, in order) are created on first use to keep
    an untouched fork small; so is ``use`` (its send queue, deletion and latest command
    invocation), read and written through the properties of the same names. Children are
    not held: the store lists them.
    """

    record: SessionRecord
    parent: SessionState | None = None
    anchor: TurnState | None = None
    own: list[TurnState] | None = None
    entries: list[HistoryEntry] | None = None
    own_last_completed: TurnState | None = None  # its own last turn completed *and* durable
    use: SessionUse | None = None  # made when first needed: most forks are never sent to

    def _use(self) -> SessionUse:
        use = self.use
        if use is None:
            use = self.use = SessionUse()
        return use

    @property
    def queue(self) -> anyio.Lock | None:
        """FIFO of sends: the holder runs the session's one turn (made by its first send)."""
        return None if self.use is None else self.use.queue

    @queue.setter
    def queue(self, lock: anyio.Lock) -> None:
        use = self._use()
        use.queue = lock

    @property
    def deleted_at(self) -> datetime | None:
        return None if self.use is None else self.use.deleted_at

    @deleted_at.setter
    def deleted_at(self, at: datetime | None) -> None:
        if at is not None or self.use is not None:
            use = self._use()
            use.deleted_at = at

    @property
    def last_invocation_at(self) -> datetime | None:
        """When its latest command invocation started."""
        return None if self.use is None else self.use.last_invocation_at

    @last_invocation_at.setter
    def last_invocation_at(self, at: datetime | None) -> None:
        if at is not None or self.use is not None:
            use = self._use()
            use.last_invocation_at = at

    @property
    def erasure_generation(self) -> int:
        """The erasure generation of a shared store up to which this session's own turns and
        deletion were read again (`SessionCache.for_turn`); 0 when never: they are as loaded."""
        return 0 if self.use is None else self.use.erasure_generation

    @erasure_generation.setter
    def erasure_generation(self, generation: int) -> None:
        use = self._use()
        use.erasure_generation = generation

    @property
    def last_activity_at(self) -> datetime:
        """The start of its latest own turn or command invocation, else when it was created."""
        latest = self.record.created_at
        if self.own:
            latest = max(latest, self.own[-1].started_at)
        if self.last_invocation_at is not None:
            latest = max(latest, self.last_invocation_at)
        return latest

    @property
    def last_completed(self) -> TurnState | None:
        """The last turn of its history completed *and* durable: a fork's anchor until one of
        its own completes (derived, not kept: an untouched fork holds no more than its anchor)."""
        own = self.own_last_completed
        return self.anchor if own is None else own

    @last_completed.setter
    def last_completed(self, turn: TurnState) -> None:
        self.own_last_completed = turn

    @property
    def id(self) -> SessionId:
        return self.record.id

    def runner_id(self) -> AiRunnerId:
        """The runner id of its next turn: its record's, the one str its own turns share."""
        runner = self.record.runner_id  # derived: a new str, kept only by its first turn
        last = self.own[-1].runner_id if self.own else None
        return last if last == runner and last is not None else runner

    @property
    def first_ordinal(self) -> int:
        """The ordinal of this session's first own turn."""
        return 0 if self.anchor is None else self.anchor.ordinal + 1

    @property
    def next_ordinal(self) -> int:
        return self.first_ordinal + (len(self.own) if self.own else 0)

    @property
    def inherited_completed(self) -> int:
        """How many completed turns this session's history inherits."""
        anchor = self.anchor
        return 0 if anchor is None else anchor.completed_before + 1

    def completed_count(self) -> int:
        """Completed turns in this session's history so far."""
        return self.inherited_completed + (len(self.entries) if self.entries else 0)

    def add_turn(self, turn: TurnState) -> None:
        """Append a new own turn (the next ordinal)."""
        turn.completed_before = self.completed_count()
        if self.own is None:
            self.own = [turn]
        else:
            self.own.append(turn)

    def add_entry(self, turn: TurnState) -> None:
        """Record what the model sees of own turn ``turn``, which just completed (the last one)."""
        entry = entry_of(turn)
        if self.entries is None:
            self.entries = [entry]
        else:
            self.entries.append(entry)

    @property
    def depth(self) -> int:
        lineage = self.record.lineage
        return 0 if lineage.kind == "root" else lineage.depth



def _owner(session: SessionState, ordinal: int) -> SessionState | None:
    """The session of ``session``'s fork chain whose own turns hold ``ordinal``."""
    current: SessionState | None = session
    while current is not None:
        if ordinal >= current.first_ordinal:
            return current if ordinal < current.next_ordinal else None
        anchor = current.anchor
        if anchor is None or ordinal > anchor.ordinal:
            return None
        current = current.parent
    return None


def history(session: SessionState, upto: int | None = None) -> list[TurnState]:
    """The turns of ``session`` in ordinal order, inherited ones included.

    With ``upto``, only turns with ``ordinal <= upto``. Slices each own list of the fork
    chain by ordinal: costs what it returns plus one step per fork in the chain.
    """
    segments: list[list[TurnState]] = []
    current: SessionState | None = session
    stop = session.next_ordinal - 1 if upto is None else min(upto, session.next_ordinal - 1)
    while current is not None and stop >= 0:
        first = current.first_ordinal
        if stop >= first and current.own:
            segments.append(current.own[: stop - first + 1])
        anchor = current.anchor
        if anchor is None:
            break
        stop = min(stop, anchor.ordinal)
        current = current.parent
    turns: list[TurnState] = []
    for segment in reversed(segments):
        turns.extend(segment)
    return turns


def turn_at(session: SessionState, ordinal: int) -> TurnState | None:
    """The turn of ``session``'s history at ``ordinal`` (walking the fork chain)."""
    owner = _owner(session, ordinal)
    if owner is None or not owner.own:
        return None
    return owner.own[ordinal - owner.first_ordinal]


def history_view(session: SessionState) -> HistoryView:
    """What the model sees of ``session``'s completed turns so far, as a read-only view.

    One segment per session of the fork chain that contributes entries, each cut where the
    history left it; nothing is copied.
    """
    segments: list[tuple[list[HistoryEntry], int]] = []
    current: SessionState | None = session
    count = session.completed_count()
    while current is not None and count > 0:
        inherited = current.inherited_completed
        if count > inherited and current.entries:
            segments.append((current.entries, count - inherited))
        if current.anchor is None:
            break
        count = min(count, inherited)
        current = current.parent
    segments.reverse()
    return HistoryView(tuple(segments))


class HistoryView(Sequence[HistoryEntry]):
    """The completed turns a model is shown, oldest first: a read-only view, never a copy.

    Indexing and ``len`` are cheap; iterating costs what it reads. Equal to any sequence of
    the same entries (a tuple included). Immutable.
    """

    __slots__ = ("_segments", "_starts")

    def __init__(self, segments: tuple[tuple[list[HistoryEntry], int], ...] = ()) -> None:
        self._segments = segments
        starts = [0]
        for _, stop in segments:
            starts.append(starts[-1] + stop)
        self._starts = starts

    def __len__(self) -> int:
        return self._starts[-1]

    @overload
    def __getitem__(self, index: int) -> HistoryEntry: ...

    @overload
    def __getitem__(self, index: slice) -> tuple[HistoryEntry, ...]: ...

    def __getitem__(self, index: int | slice) -> HistoryEntry | tuple[HistoryEntry, ...]:
        if isinstance(index, slice):
            return tuple(self[i] for i in range(*index.indices(len(self))))
        size = len(self)
        if index < 0:
            index += size
        if not 0 <= index < size:
            raise IndexError(f"history index {index} out of range (the history has {size} entries)")
        segment = bisect.bisect_right(self._starts, index) - 1
        return self._segments[segment][0][index - self._starts[segment]]

    def __iter__(self) -> Iterator[HistoryEntry]:
        for entries, stop in self._segments:
            yield from entries[:stop] if stop < len(entries) else entries

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Sequence) or isinstance(other, str):
            return NotImplemented
        return len(self) == len(other) and all(a == b for a, b in zip(self, other))

    def __hash__(self) -> int:
        return hash(tuple(self))

    def __repr__(self) -> str:
        return f"HistoryView({list(self)!r})"


def text_of(message: AiMessage) -> str:
    """The text a model is given for a message: a prompt verbatim; a notification's title and body."""
    if isinstance(message, AiNotificationMessage):
        return f"{message.title}\n\n{message.body}" if message.body else message.title
    return message.text


def entry_of(turn: TurnState) -> HistoryEntry:
    """What the model sees of a completed turn (an erased turn: that it was erased, no text;
    a retracted one: that it was, and why)."""
    retracted = turn.retracted_at is not None
    if turn.erased_at is not None:
        return HistoryEntry(kind=turn.message.type, text="", reply="", erased=True, retracted=retracted)
    return HistoryEntry(
        kind=turn.message.type,
        text=text_of(turn.message),
        reply=turn.reply or "",
        retracted=retracted,
        retraction_reason=turn.retraction_reason,
    )


def apply_erasure(session: SessionState, record: TurnRecord) -> None:
    """Make the live turn ``record`` names (an own turn of ``session``) match its erased record."""
    if not session.own or not session.first_ordinal <= record.ordinal < session.next_ordinal:
        return
    turn = session.own[record.ordinal - session.first_ordinal]
    turn.message, turn.reply, turn.error, turn.erased_at = record.message, record.reply, record.error, record.erased_at
    turn.tool_calls, turn.retraction_reason = record.tool_calls, record.retraction_reason
    turn.widgets = record.widgets
    turn.artifact = None  # later forks cite it with the erased label
    _refresh_entry(session, turn)


def apply_retraction(session: SessionState, record: TurnRecord) -> None:
    """Make the live turn ``record`` names (an own turn of ``session``) match its retracted record."""
    if not session.own or not session.first_ordinal <= record.ordinal < session.next_ordinal:
        return
    turn = session.own[record.ordinal - session.first_ordinal]
    turn.retracted_at, turn.retraction_reason = record.retracted_at, record.retraction_reason
    _refresh_entry(session, turn)


def _refresh_entry(session: SessionState, turn: TurnState) -> None:
    """The history entry of a completed own turn, made again from it (forks share the entries)."""
    if turn.status == "completed" and session.entries is not None:
        index = turn.completed_before - session.inherited_completed
        if 0 <= index < len(session.entries):
            session.entries[index] = entry_of(turn)


def completed_turn_at(session: SessionState, index: int) -> TurnState:
    """The ``index``-th completed turn of ``session``'s history (entry ``index`` of its
    `history_view`): one step per fork in the chain and a binary search, never a scan."""
    current: SessionState | None = session
    while current is not None and index < current.inherited_completed:
        current = current.parent
    assert current is not None and current.own, f"no completed turn {index} in session {session.id!r}"
    own = current.own
    at = bisect.bisect_left(own, index, key=lambda t: t.completed_before)
    while own[at].status != "completed":  # a failed turn shares the count of the completed one after it
        at += 1
    return own[at]


def history_chain(session: SessionState) -> list[tuple[SessionId, int | None]]:
    """The sessions whose turns ``session``'s history holds, from it up its fork chain, each
    with the last ordinal of theirs it holds (``None``: all of them)."""
    chain: list[tuple[SessionId, int | None]] = [(session.id, None)]
    cut: int | None = None
    current = session
    while current.anchor is not None and current.parent is not None:
        cut = current.anchor.ordinal if cut is None else min(cut, current.anchor.ordinal)
        current = current.parent
        chain.append((current.id, cut))
    return chain

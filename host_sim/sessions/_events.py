"""Live events: what happens in a host, as it happens (``host.subscribe()``).

Every event is a frozen attrs class discriminated by ``kind``; `HostEvent` is their closed
union, so a ``match`` over it is exhaustive under mypy. Each carries ``seq`` (increasing:
per host, or store-wide on a shared store; ``None`` for the live-only `ReplyDelta`), ``at``
(the host's clock) and ``host_id`` (the host that published it).

Events are facts: each is made when it is published, a snapshot of what was true then. A
later change is a new event (`TurnErased`, `SessionDeleted`), never a rewrite of an old one,
with one exception: an erasure leaves no copy of the erased text in the events kept for
resuming (`EventHub.erase`: copies without the text take their place, docs/embedding.md).

Publishing never waits and costs the same whatever the number of subscribers: events go
into one shared ring (the last ``history`` of them kept whether anyone subscribes or not),
and each subscriber holds a cursor into it. A subscriber that falls more than its
``buffer`` behind loses the oldest events it has not read, and reads one `Lagged` event
saying how many, then carries on.
"""

from __future__ import annotations

import json
from collections import deque
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator, Mapping, Sequence
from contextlib import asynccontextmanager, contextmanager
from datetime import datetime
from typing import Literal, Protocol, TypeAlias, final

import anyio
import attrs

from modular_sdk import (
    AiMessage,
    AiNotificationMessage,
    AiPromptMessage,
    AiSessionLineage,
    Author,
    InvalidArgumentError,
    RecordId,
    SessionId,
    TurnId,
    TurnStatus,
)
from modular_sdk._json import unstructure
from modular_sdk._rules import show
from modular_sdk._schema import JsonObject

from ..stores._erasure import Erasure
from ..stores._errors import StoreError
from ..stores._records import ERASED_LABEL, ErrorKind, JobStatus, TurnRecord
from ..stores._shared import EventRow, Staged, staged

__all__ = [
    "CommandFinished",
    "EventHub",
    "EventStream",
    "HostEvent",
    "JobFinished",
    "JobStarted",
    "Lagged",
    "MemoryErased",
    "MemoryRecorded",
    "MemoryRetracted",
    "OutboxWriter",
    "NotificationEvent",
    "Replay",
    "ReplyDelta",
    "SessionCompacted",
    "SessionCreated",
    "SessionDeleted",
    "ToolCalled",
    "ToolFinished",
    "TurnFinished",
    "TurnErased",
    "TurnStarted",
    "event_row",
]


@attrs.frozen(kw_only=True)
class SessionCreated:
    """A session was created (root, fork or spawn) and is durable. Immutable."""

    kind: Literal["session_created"] = attrs.field(default="session_created", init=False)
    seq: int
    at: datetime
    host_id: str = ""
    session_id: SessionId
    lineage: AiSessionLineage
    tags: Mapping[str, str]


@attrs.frozen(kw_only=True)
class TurnStarted:
    """A turn was accepted (its message is durable) and its model is about to be called. Immutable."""

    kind: Literal["turn_started"] = attrs.field(default="turn_started", init=False)
    seq: int
    at: datetime
    host_id: str = ""
    session_id: SessionId
    turn_id: TurnId
    ordinal: int
    author: Author
    message: AiMessage
    job_id: str | None  # the job (``host.start``) the turn runs in, else None


@attrs.frozen(kw_only=True)
class ReplyDelta:
    """A chunk of a streaming model's reply; the turn's reply is their concatenation. Immutable.

    Deltas are live only: ``seq`` is ``None`` (they are not kept for ``subscribe(after=...)``),
    and across hosts they arrive best-effort; the turn's ``turn_finished`` carries the reply.
    """

    kind: Literal["reply_delta"] = attrs.field(default="reply_delta", init=False)
    seq: int | None
    at: datetime
    host_id: str = ""
    session_id: SessionId
    turn_id: TurnId
    text: str


@attrs.frozen(kw_only=True)
class ToolCalled:
    """The model called a tool; its handler runs now. Immutable."""

    kind: Literal["tool_called"] = attrs.field(default="tool_called", init=False)
    seq: int
    at: datetime
    host_id: str = ""
    session_id: SessionId
    turn_id: TurnId
    call_id: str
    tool_name: str
    input: JsonObject


@attrs.frozen(kw_only=True)
class ToolFinished:
    """A tool call returned (``output``, what the model gets) or failed (``error``). Immutable."""

    kind: Literal["tool_finished"] = attrs.field(default="tool_finished", init=False)
    seq: int
    at: datetime
    host_id: str = ""
    session_id: SessionId
    turn_id: TurnId
    call_id: str
    output: str | None
    error: str | None


@attrs.frozen(kw_only=True)
class TurnFinished:
    """A turn completed or failed, durably. Immutable."""

    kind: Literal["turn_finished"] = attrs.field(default="turn_finished", init=False)
    seq: int
    at: datetime
    host_id: str = ""
    session_id: SessionId
    turn_id: TurnId
    status: TurnStatus
    reply: str | None
    error: str | None


@attrs.frozen(kw_only=True)
class CommandFinished:
    """A slash or palette command finished; its invocation is durable (``host.log``). Immutable."""

    kind: Literal["command_finished"] = attrs.field(default="command_finished", init=False)
    seq: int
    at: datetime
    host_id: str = ""
    invocation_id: str
    session_id: SessionId | None
    command_id: str
    text: str
    error: str | None
    job_id: str | None  # the job (``host.start``) the command ran in, else None


@attrs.frozen(kw_only=True)
class JobStarted:
    """A job (``host.start``) was accepted and is durable; its submission runs now. Immutable."""

    kind: Literal["job_started"] = attrs.field(default="job_started", init=False)
    seq: int
    at: datetime
    host_id: str = ""
    job_id: str
    session_id: SessionId


@attrs.frozen(kw_only=True)
class JobFinished:
    """A job ended, durably: ``finished``, ``failed``, ``cancelled`` or ``interrupted``. Immutable."""

    kind: Literal["job_finished"] = attrs.field(default="job_finished", init=False)
    seq: int
    at: datetime
    host_id: str = ""
    job_id: str
    status: JobStatus
    error_kind: ErrorKind | None


@attrs.frozen(kw_only=True)
class NotificationEvent:
    """A notification was delivered to a session (its turn started). Immutable."""

    kind: Literal["notification"] = attrs.field(default="notification", init=False)
    seq: int
    at: datetime
    host_id: str = ""
    session_id: SessionId
    turn_id: TurnId
    title: str
    body: str


@attrs.frozen(kw_only=True)
class SessionDeleted:
    """A session was deleted (``sessions.delete``): its own turns are erased, it is hidden from
    ``list``, and sending to, forking or spawning from it raises `SessionDeletedError`. Immutable."""

    kind: Literal["session_deleted"] = attrs.field(default="session_deleted", init=False)
    seq: int
    at: datetime
    host_id: str = ""
    session_id: SessionId


@attrs.frozen(kw_only=True)
class TurnErased:
    """A turn was erased (``lineage.forget`` or ``sessions.delete``): events published before
    keep what was true then; this one says it is gone. Immutable."""

    kind: Literal["turn_erased"] = attrs.field(default="turn_erased", init=False)
    seq: int
    at: datetime
    host_id: str = ""
    session_id: SessionId
    turn_id: TurnId
    records: tuple[RecordId, ...] = ()  # the memory records this erasure erased (docs/memory.md)


@attrs.frozen(kw_only=True)
class MemoryRecorded:
    """A memory record was made (``memory.record``, ``ctx.ai.memory.record``, a compaction):
    its id, session and kind; read the record for its text. Immutable."""

    kind: Literal["memory_recorded"] = attrs.field(default="memory_recorded", init=False)
    seq: int
    at: datetime
    host_id: str = ""
    session_id: SessionId
    record_id: RecordId
    record_kind: str


@attrs.frozen(kw_only=True)
class MemoryRetracted:
    """A memory record was found wrong and retracted (``memory.retract``); it stays. Immutable."""

    kind: Literal["memory_retracted"] = attrs.field(default="memory_retracted", init=False)
    seq: int
    at: datetime
    host_id: str = ""
    session_id: SessionId
    record_id: RecordId


@attrs.frozen(kw_only=True)
class MemoryErased:
    """A memory record was erased and no ``turn_erased`` names it: forgotten by its own id
    (``lineage.forget(record_id, dry_run=False)``: the record and each record derived from
    it), or resting only on turns erased before. Its text and data are gone, its ids and
    times stay. A record erased with a turn it rests on is named by that turn's
    ``turn_erased`` instead. Immutable."""

    kind: Literal["memory_erased"] = attrs.field(default="memory_erased", init=False)
    seq: int
    at: datetime
    host_id: str = ""
    session_id: SessionId
    record_id: RecordId


@attrs.frozen(kw_only=True)
class SessionCompacted:
    """The host compacted a session's history before a model call (``Host(context=...)``):
    ``record_id`` is the summary, read from turns ``first`` to ``last`` (ordinals) of the
    session's history; later model calls see it in their place. Immutable."""

    kind: Literal["session_compacted"] = attrs.field(default="session_compacted", init=False)
    seq: int
    at: datetime
    host_id: str = ""
    session_id: SessionId
    record_id: RecordId
    first: int
    last: int


@attrs.frozen(kw_only=True)
class Lagged:
    """This subscriber fell behind: ``missed`` events were dropped before it read them. Immutable."""

    kind: Literal["lagged"] = attrs.field(default="lagged", init=False)
    seq: int
    at: datetime
    host_id: str = ""
    missed: int


@attrs.frozen(kw_only=True)
class TurnRetracted:
    """A turn was found wrong and retracted (``host.lineage.retract``), ``reason`` saying why;
    the turn stays (docs/the-record.md). Immutable."""

    kind: Literal["turn_retracted"] = attrs.field(default="turn_retracted", init=False)
    seq: int
    at: datetime
    host_id: str = ""
    session_id: SessionId
    turn_id: TurnId
    reason: str


HostEvent: TypeAlias = (
    SessionCreated
    | TurnStarted
    | ReplyDelta
    | ToolCalled
    | ToolFinished
    | TurnFinished
    | CommandFinished
    | JobStarted
    | JobFinished
    | NotificationEvent
    | SessionDeleted
    | TurnErased
    | Lagged
    | TurnRetracted
    | MemoryRecorded
    | MemoryRetracted
    | MemoryErased
    | SessionCompacted
)
"""Everything ``host.subscribe()`` yields; discriminated by ``kind``."""


Replay = Callable[[int, int], Awaitable[tuple[Sequence[HostEvent], int]]]
"""A shared store's event rows after a seq: ``replay(after, limit) -> (events, trimmed)``,
``trimmed`` the newest seq retention deleted (0: none)."""

_REPLAY_PAGE = 500


def _without_text(event: HostEvent) -> HostEvent:
    """A copy of an event about an erased turn, without the turn's text (what was, not what was said)."""
    if isinstance(event, TurnStarted):
        message = event.message
        kept: AiMessage = (
            AiNotificationMessage(title=ERASED_LABEL, body="")
            if isinstance(message, AiNotificationMessage)
            else AiPromptMessage(text="")
        )
        return attrs.evolve(event, message=kept)
    if isinstance(event, TurnFinished):
        return attrs.evolve(event, reply=None if event.reply is None else "", error=None if event.error is None else "")
    if isinstance(event, ToolCalled):
        return attrs.evolve(event, input={})
    if isinstance(event, ToolFinished):
        return attrs.evolve(event, output=None if event.output is None else "", error=None if event.error is None else "")
    if isinstance(event, NotificationEvent):
        return attrs.evolve(event, title="", body="")
    if isinstance(event, ReplyDelta):
        return attrs.evolve(event, text="")
    if isinstance(event, TurnRetracted):
        return attrs.evolve(event, reason=ERASED_LABEL)
    return event


class OutboxWriter(Protocol):
    """What writes a shared store's `EventHub` outbox (`HostsLink`'s `Outbox`): the hub asks it
    to, passing itself, before a caller goes on (``written``) and before a subscriber starts
    (``settle``, which answers the newest seq)."""

    async def written(self, hub: EventHub) -> None: ...

    async def settle(self, hub: EventHub) -> int: ...


class EventHub:
    """The host's event ring: publish is O(1) whatever the number of subscribers.

    The ring keeps the last ``history`` events whether or not anyone subscribes (a client
    reconnecting with ``subscribe(after=seq)`` resumes from it); it grows to the largest
    ``buffer`` a subscriber asked for. With one host per store (``replay is None``) ``seq``
    is this host's own counter. On a shared store (``replay`` given) events are rows of the
    store: `publish` puts them in ``outbox`` for the store to write (it assigns the seq), or
    `committing` stages them for the write they report; once written, this host's own are
    put in the ring from memory when they are next in seq order (`written_own`), and the
    rows the reader reads (other hosts', and this host's when they were not) through
    `deliver_row`, each row once, in seq order; a subscriber that falls behind the ring, or
    resumes from before it, reads the rows from the store instead.
    """

    __slots__ = (
        "_clock",
        "_closed",
        "_deltas_out",
        "_end",
        "_history",
        "_last_seq",
        "_listeners",
        "_observe",
        "_outbox",
        "_outbox_ready",
        "_read_to",
        "_read_wanted",
        "_ring",
        "_seq",
        "_size",
        "_subscribers",
        "_waiting",
        "_wake",
        "_writer",
        "_retries",
        "host_id",
        "replay",
    )

    def __init__(
        self,
        clock: Callable[[], datetime],
        *,
        history: int = 10_000,
        host_id: str = "",
        replay: Replay | None = None,
        writer: OutboxWriter | None = None,
        observe: Callable[[HostEvent], None] | None = None,
    ) -> None:
        self._clock = clock
        self._observe = observe  # sees every event the ring receives, in order (per-scope numbering)
        self._listeners: tuple[Callable[[HostEvent | None], None], ...] = ()
        self._history = history
        self.host_id = host_id
        self.replay = replay
        self._writer = writer  # shared store: what writes the outbox (the events published so far get their seq)
        self._ring: deque[HostEvent] = deque()
        self._end = 0  # the position after the newest event in the ring (events ever appended)
        self._seq = 0  # the seq of the last event this host numbered (one host per store)
        self._last_seq = 0  # the newest seq in the ring
        self._size = history  # the ring's capacity: history, or the largest buffer asked for
        self._waiting = 0  # subscribers blocked in __anext__
        self._subscribers: set[EventStream] = set()
        self._wake = anyio.Event()
        self._closed = False
        self._outbox: list[HostEvent] = []  # shared store: events the store has yet to write
        self._deltas_out: list[ReplyDelta] = []  # shared store: deltas to hand to the other hosts
        self._outbox_ready = anyio.Event()
        self._retries: list[tuple[Callable[[], Awaitable[None]], list[HostEvent]]] = []  # writes to try again
        self._read_to = 0  # shared store: the newest row handed out or passed over (seq order, each once)
        self._read_wanted = False  # shared store: rows of this host's wait to be read (not handed out from memory)

    def watched(self) -> bool:
        """Whether a subscriber or a listener (`listen`) waits for events now."""
        return bool(self._subscribers or self._listeners)

    @property
    def last_seq(self) -> int:
        """The newest seq this host has seen (0: none yet)."""
        return self._last_seq

    def publish(self, make: Callable[[int, datetime], HostEvent]) -> None:
        """Make the next event now (``make(seq, at)``), a snapshot of what is true, without waiting.

        With one host per store it goes into the ring at once; on a shared store into the
        outbox (the store numbers and writes it, then `deliver` hands it out), except a
        ``reply_delta``, which is live only and goes to this host's subscribers at once.
        """
        if self._closed:
            return
        shared = self.replay is not None
        event = self._made(make)
        if isinstance(event, ReplyDelta):
            self.deliver(event)
            if shared:
                self._deltas_out.append(event)
                self._outbox_ready.set()
        elif shared:
            self._outbox.append(event)
            self._outbox_ready.set()
        else:
            self._seq += 1
            self.deliver(event)

    def _made(self, make: Callable[[int, datetime], HostEvent]) -> HostEvent:
        event = make(0 if self.replay is not None else self._seq + 1, self._clock())
        return attrs.evolve(event, host_id=self.host_id) if self.host_id else event

    @contextmanager
    def committing(self, *makes: Callable[[int, datetime], HostEvent]) -> Iterator[None]:
        """Publish the events ``makes`` make with the store write made in the block (a
        transactional outbox, docs/embedding.md).

        On a shared store their rows are staged for that write's transaction: they commit with
        the change they report, numbered, or neither does (the block raises; nothing is
        published), and this host hands them out as the block ends (`written_own`). With one
        host per store they are published once the block succeeded.
        """
        if self._closed or self.replay is None:
            yield
            for make in makes:
                self.publish(make)
            return
        events = [self._made(make) for make in makes]
        try:
            with staged([event_row(e) for e in events]) as batch:
                yield
        except BaseException:
            self.want_read()  # the write may have committed before it failed: its rows are read
            raise
        self._settle(batch, events)  # as the block ends (an erasure's, once the resume history lost the text)

    def _settle(self, batch: Staged, events: list[HostEvent]) -> None:
        """After the write ``batch`` was staged for: its events handed out (`written_own`), or,
        when the write carried none of them, left to the writer."""
        if batch.first_seq is None:
            self._outbox.extend(events)
            self._outbox_ready.set()
        elif batch.first_seq:  # (0: refused for good, another host finished it and said so)
            self.written_own(batch.first_seq, events, rewritten=batch.rewritten)

    def written_own(self, first_seq: int, events: Sequence[HostEvent], *, rewritten: bool) -> None:
        """This host's store wrote ``events`` as rows numbered from ``first_seq``: handed out
        from memory, numbered, when they are next in seq order (every row before them was
        read) and no erasure rule rewrote them, as the rows would be read; else they are left
        to the reader (`want_read`), which reads them and what lies before them in order.
        Either way each row is handed out once (`deliver_row`)."""
        if self._closed or not events:
            return
        if rewritten or first_seq != self._read_to + 1:
            self.want_read()
            return
        for offset, event in enumerate(events):
            self.deliver(attrs.evolve(event, seq=first_seq + offset))
        self._read_to = first_seq + len(events) - 1

    @property
    def read_to(self) -> int:
        """Shared store: the newest row handed out or passed over; the reader reads after it."""
        return self._read_to

    def start_reading(self, after: int) -> None:
        """Shared store: hand out the rows after ``after`` (the newest when the host opened)."""
        self._read_to = max(self._read_to, after)

    def deliver_row(self, seq: int, event: HostEvent | None) -> None:
        """Shared store: the reader read row ``seq`` (``None``: a kind this host does not know,
        passed over); handed out unless it was already (from memory, `written_own`)."""
        if seq <= self._read_to:
            return
        self._read_to = seq
        if event is not None:
            self.deliver(event)

    def want_read(self) -> None:
        """Shared store: rows of this host's were not handed out from memory; the writer task
        has the reader read them (`take_read_wanted`)."""
        self._read_wanted = True
        self._outbox_ready.set()

    def take_read_wanted(self) -> bool:
        """Whether a read was asked for since the last call (`want_read`)."""
        wanted, self._read_wanted = self._read_wanted, False
        return wanted

    def retry(self, write: Callable[[], Awaitable[None]], *makes: Callable[[int, datetime], HostEvent]) -> None:
        """A write that failed (the store was away), with the events that report it: on a shared
        store, tried again by the writer until the store takes or refuses it, the events in its
        transaction (published once, with the write that commits); with one host per store the
        events are published now."""
        if self._closed or self.replay is None:
            for make in makes:
                self.publish(make)
            return
        self._retries.append((write, [self._made(make) for make in makes]))
        self._outbox_ready.set()

    async def write_retries(self) -> None:
        """Try the writes `retry` kept, oldest first; stops at the first the store is still away for."""
        while self._retries:
            write, events = self._retries[0]
            try:
                with staged([event_row(e) for e in events]) as batch, anyio.CancelScope(shield=True):
                    await write()
            except StoreError as exc:
                self.want_read()  # (written, perhaps, before the connection failed)
                if exc.retryable:
                    raise
                batch.written(0)  # refused for good: another host finished it (and said so)
            self._retries.pop(0)
            self._settle(batch, events)

    async def written(self) -> None:
        """Give every event published so far its seq before what it reports is seen elsewhere.

        On a shared store the writer numbers events a moment after `publish`; meanwhile
        another host may act on what they report (take the session lock this host released,
        or serve the client this host just answered) and number its own events first. Await
        this before releasing a session's lock or returning to a caller, so that seq order
        is the order things happened across hosts, as on one host (docs/embedding.md).
        Nothing to do with one host per store; best-effort when the store is unreachable
        (the events stay in the outbox, in order, for the writer).
        """
        if self._writer is not None:
            with anyio.CancelScope(shield=True):  # what it reports happened: a cancelled caller still waits for it
                await self._writer.written(self)

    # -- the outbox, drained by the shared store's writer (HostsLink) -------------------

    def unwritten(self) -> bool:
        """Shared store: whether events wait for the store (the outbox, or writes to try again)."""
        return bool(self._outbox or self._retries)

    def take_outbox(self) -> list[HostEvent]:
        """The events the store has yet to write, oldest first; the outbox is left empty."""
        batch, self._outbox = self._outbox, []
        return batch

    def put_back(self, batch: list[HostEvent]) -> None:
        """Events `take_outbox` gave that could not be written: first again, in order."""
        self._outbox[:0] = batch

    def take_deltas(self) -> list[ReplyDelta]:
        """The reply deltas to hand to the other hosts; none are left."""
        deltas, self._deltas_out = self._deltas_out, []
        return deltas

    async def outbox_filled(self) -> None:
        """Wait until something was put in the outbox (or `wake_writer` was called) since the last wait."""
        await self._outbox_ready.wait()
        self._outbox_ready = anyio.Event()

    def wake_writer(self) -> None:
        """Make the writer's next `outbox_filled` return at once (a write to try again)."""
        self._outbox_ready.set()

    async def wait_for_more(self) -> None:
        """Wait until the next event is delivered or the hub closes (a subscriber that read all)."""
        self._waiting += 1
        try:
            await self._wake.wait()
        finally:
            self._waiting -= 1

    def deliver(self, event: HostEvent) -> None:
        """Put a numbered event in the ring and wake the subscribers that wait."""
        if self._observe is not None:
            self._observe(event)
        for listener in self._listeners:
            listener(event)
        self._ring.append(event)
        self._end += 1
        if event.seq is not None:
            self._last_seq = event.seq
        if len(self._ring) > self._size:
            self._ring.popleft()
        if self._waiting:  # wake only a subscriber that waits (an idle one costs nothing)
            wake, self._wake = self._wake, anyio.Event()
            wake.set()

    def erase(self, erasure: Erasure, records: Sequence[TurnRecord]) -> None:
        """Keep no copy of what ``erasure`` erased in the resume history (docs/embedding.md).

        The ring's events about an erased turn (``erasure.turn_ids``, and ``records`` with
        ``erased_at``) are replaced by copies without their text, as a shared store's event
        rows are (stores/_postgres_events.py): a prompt, a notification, a reply, a tool's
        input and output, an error, a reply delta, a retraction's reason; so are the
        ``command_finished`` of the commands it erased and of its deleted sessions, and the
        errors that quoted it (``erasure.errors``, ``records`` without ``erased_at``).
        Subscribers that have not read them yet get the copies; positions do not move.
        """
        turns = set(erasure.turn_ids) | {r.id for r in records if r.erased_at is not None}
        quoted = {row for table, row in erasure.errors if table == "turns"} | {r.id for r in records if r.erased_at is None}
        invocations = {row for table, row in erasure.errors if table == "invocations"}
        if not (turns or quoted or invocations or erasure.sessions or erasure.commands):
            return

        def blank(event: HostEvent) -> HostEvent:
            if isinstance(event, CommandFinished):
                if (
                    event.session_id in erasure.sessions
                    or (event.session_id, event.text) in erasure.commands
                    or event.invocation_id in invocations
                ):
                    return attrs.evolve(event, text="", error=None if event.error is None else "")
                return event
            turn_id = getattr(event, "turn_id", None)
            if turn_id in quoted and isinstance(event, TurnFinished) and turn_id not in turns:
                return attrs.evolve(event, error=None if event.error is None else ERASED_LABEL)
            if turn_id not in turns:
                return event
            return _without_text(event)

        self._ring = deque(blank(e) for e in self._ring)

    def closed(self) -> bool:
        """Whether the host has closed (a call, not an attribute: it changes across an ``await``)."""
        return self._closed

    def close(self) -> None:
        """The host closed: every stream ends once it has read what is left."""
        self._closed = True
        self._wake.set()
        for listener in self._listeners:
            listener(None)

    def listen(self, listener: Callable[[HostEvent | None], None]) -> Callable[[], None]:
        """Call ``listener`` with each event as the ring receives it, in order, and with ``None``
        when the hub closes (at once if it is closed), until the returned function is called.

        For an in-process reader that routes events without a task of its own (the AG-UI
        app's router): no buffer, no wake-up per event. It runs inside `deliver`, so it must
        be quick and must not raise.
        """
        self._listeners = (*self._listeners, listener)
        if self._closed:
            listener(None)

        def stop() -> None:
            self._listeners = tuple(each for each in self._listeners if each is not listener)

        return stop

    @asynccontextmanager
    async def subscribe(self, buffer: int, after: int | None = None) -> AsyncIterator[EventStream]:
        if isinstance(buffer, bool) or not isinstance(buffer, int) or buffer < 1:
            raise InvalidArgumentError(
                f"buffer must be an int >= 1 (events kept for a slow subscriber), got {show(buffer)}",
                argument="buffer",
                value=buffer,
            )
        if after is not None and (isinstance(after, bool) or not isinstance(after, int) or after < 0):
            raise InvalidArgumentError(
                f"after must be None or the seq (an int >= 0) of an event read before, got {after!r}; "
                "pass event.seq of the last event a client saw (an SSE Last-Event-ID)",
                argument="after",
                value=after,
            )
        stream = EventStream(self, buffer)
        if after is None and self._writer is not None:  # start after what this host published so far
            after = await self._writer.settle(self)
        if after is not None:
            stream._resume(after)
        self._subscribers.add(stream)
        self._size = max(self._size, buffer)
        try:
            yield stream
        finally:
            self._subscribers.discard(stream)
            self._size = max((s.buffer for s in self._subscribers), default=self._history)
            while len(self._ring) > self._size:
                self._ring.popleft()


def event_row(event: HostEvent) -> EventRow:
    """What a shared store writes of an event (its seq and host are the row's)."""
    data = unstructure(event)
    del data["seq"], data["host_id"]
    return EventRow(
        kind=event.kind,
        session_id=getattr(event, "session_id", None),
        turn_id=getattr(event, "turn_id", None),
        event=json.dumps({"kind": event.kind, **data}, ensure_ascii=False, separators=(",", ":")),
    )


@final
class EventStream:
    """One subscriber's view of the host's events: ``async for event in events``.

    Obtain it from ``async with host.subscribe() as events``. Iteration ends when the host
    closes (after the events already published). Events start with the first one published
    after subscribing, or after the seq given as ``subscribe(after=...)``.
    """

    __slots__ = ("_after", "_catching_up", "_hub", "_live", "_missed", "_next", "_page", "buffer")

    def __init__(self, hub: EventHub, buffer: int) -> None:
        self._hub = hub
        self.buffer = buffer
        self._next = hub._end  # the ring position this subscriber reads next
        self._live = hub._end  # deltas before this position were published before it subscribed
        self._after = hub._last_seq  # the seq of the last event delivered (or skipped as seen)
        self._missed = 0  # a lagged event owed before the next one
        self._catching_up = False  # reading the store's rows instead of the ring (shared stores)
        self._page: deque[HostEvent] = deque()

    @property
    def after(self) -> int:
        """The seq of the last event this stream delivered, or starts after. Read-only."""
        return self._after

    def _resume(self, after: int) -> None:
        """Start after seq ``after``: from the ring, or (shared store) from the store's rows."""
        hub = self._hub
        self._after = after
        if hub.replay is not None:
            self._catching_up = True  # the rows are the truth; ring events already read are skipped
            return
        if after > hub._last_seq:  # a seq this host never published (it restarted): all it has is new
            self._after = 0
        self._from_the_ring()

    def _from_the_ring(self) -> None:
        """Read on from the ring's first event after ``_after``; a `Lagged` first for the
        events between that were dropped from the ring (numbered, then let go)."""
        hub = self._hub
        oldest = hub._end - len(hub._ring)
        position = hub._end
        for index in range(len(hub._ring) - 1, -1, -1):
            seq = hub._ring[index].seq
            if seq is not None and seq <= self._after:
                break
            position = oldest + index
        self._next = position
        first = next((e.seq for e in hub._ring if e.seq is not None), hub._seq + 1)
        if first - 1 > self._after:  # numbered by this host, then dropped from the ring
            self._missed, self._after = first - 1 - self._after, first - 1

    def __aiter__(self) -> EventStream:
        return self

    async def __anext__(self) -> HostEvent:
        hub = self._hub
        while True:
            if self._missed:
                missed, self._missed = self._missed, 0
                return Lagged(seq=self._after, at=hub._clock(), host_id=hub.host_id, missed=missed)
            if self._catching_up:
                event = await self._from_store()
                if event is not None:
                    return event
                continue
            if self._next < hub._end:
                oldest, floor = self._window()
                if self._next < floor:
                    if hub.replay is not None:  # behind the ring: the store still has the rows
                        if hub.closed():  # (had: it closed with the host)
                            self._leave_the_store()
                        else:
                            self._catching_up = True
                        continue
                    missed = floor - self._next
                    self._next = floor
                    return Lagged(seq=self._seq_before(floor - oldest), at=hub._clock(), host_id=hub.host_id, missed=missed)
                event = hub._ring[self._next - oldest]
                self._next += 1
                if event.seq is None:
                    if self._next - 1 < self._live:
                        continue  # a delta published before this subscriber came: live only
                elif event.seq <= self._after:
                    continue  # read from the store already
                else:
                    self._after = event.seq
                return event
            if hub._closed:
                raise StopAsyncIteration
            await hub.wait_for_more()

    async def _from_store(self) -> HostEvent | None:
        """The next row after ``_after`` (a shared store), or ``None`` once caught up with it."""
        hub = self._hub
        if not self._page:
            replay = hub.replay
            assert replay is not None
            if hub.closed():  # the store closes with the host: its rows are out of reach now
                self._leave_the_store()
                return None
            try:
                events, trimmed = await replay(self._after, _REPLAY_PAGE)
            except StoreError:
                if not hub.closed():
                    raise
                self._leave_the_store()  # the host closed while this page was read
                return None
            self._page.extend(events)
            if trimmed > self._after:  # retention deleted rows this subscriber never read
                self._missed, self._after = trimmed - self._after, trimmed
                return None
            if not events:
                self._catching_up = False
                self._next = max(self._next, self._window()[1])
                return None
        event = self._page.popleft()
        assert event.seq is not None
        self._after = event.seq
        return event

    def _window(self) -> tuple[int, int]:
        """The ring positions of its oldest event and of the oldest this stream's buffer keeps."""
        hub = self._hub
        oldest = hub._end - len(hub._ring)
        return oldest, max(oldest, hub._end - self.buffer)

    def _leave_the_store(self) -> None:
        """The host closed while this stream was behind its ring: what the ring still holds
        follows a `Lagged` for the rows only the (closed) store had, and then the stream ends,
        as on a store of one host. Seqs of a shared store are one count across hosts, so the
        number missed is the gap between them."""
        self._catching_up = False
        self._from_the_ring()
        oldest, floor = self._window()
        if self._next < floor:  # what the ring holds beyond this stream's buffer is dropped too
            self._next = floor
            first = next((e.seq for e in list(self._hub._ring)[floor - oldest :] if e.seq is not None), None)
            if first is not None and first - 1 > self._after:
                self._missed += first - 1 - self._after
                self._after = first - 1

    def _seq_before(self, index: int) -> int:
        """The seq just before the ring event at ``index`` (what a lagged event reports)."""
        ring = self._hub._ring
        for i in range(index, len(ring)):
            seq = ring[i].seq
            if seq is not None:
                return seq - 1
        return self._hub._last_seq

"""Live events: what happens in a host, as it happens (``host.subscribe()``).

Every event is a frozen attrs class discriminated by ``kind``; `HostEvent` is their closed
union, so a ``match`` over it is exhaustive under mypy. Each carries ``seq`` (per host,
increasing) and ``at`` (the host's clock).

Publishing never waits and costs the same whatever the number of subscribers: events go
into one shared ring (kept only while someone subscribes), and each subscriber holds a
cursor into it. A subscriber that falls more than its ``buffer`` behind loses the oldest
events it has not read, and reads one `Lagged` event saying how many, then carries on.
"""

from __future__ import annotations

from collections import deque
from collections.abc import AsyncIterator, Callable, Mapping
from contextlib import asynccontextmanager
from datetime import datetime
from typing import Literal, TypeAlias, final

import anyio
import attrs

from modular_sdk import AiMessage, AiSessionLineage, Author, InvalidArgumentError, SessionId, TurnId, TurnStatus
from modular_sdk._rules import show
from modular_sdk._schema import JsonObject

from ..stores._records import ErrorKind, JobStatus

__all__ = [
    "CommandFinished",
    "EventHub",
    "EventStream",
    "HostEvent",
    "JobFinished",
    "JobStarted",
    "Lagged",
    "NotificationEvent",
    "ReplyDelta",
    "SessionCreated",
    "ToolCalled",
    "ToolFinished",
    "TurnFinished",
    "TurnStarted",
]


@attrs.frozen(kw_only=True)
class SessionCreated:
    """A session was created (root, fork or spawn) and is durable. Immutable."""

    kind: Literal["session_created"] = attrs.field(default="session_created", init=False)
    seq: int
    at: datetime
    session_id: SessionId
    lineage: AiSessionLineage
    tags: Mapping[str, str]


@attrs.frozen(kw_only=True)
class TurnStarted:
    """A turn was accepted (its message is durable) and its model is about to be called. Immutable."""

    kind: Literal["turn_started"] = attrs.field(default="turn_started", init=False)
    seq: int
    at: datetime
    session_id: SessionId
    turn_id: TurnId
    ordinal: int
    author: Author
    message: AiMessage
    job_id: str | None  # the job (``host.start``) the turn runs in, else None


@attrs.frozen(kw_only=True)
class ReplyDelta:
    """A chunk of a streaming model's reply; the turn's reply is their concatenation. Immutable."""

    kind: Literal["reply_delta"] = attrs.field(default="reply_delta", init=False)
    seq: int
    at: datetime
    session_id: SessionId
    turn_id: TurnId
    text: str


@attrs.frozen(kw_only=True)
class ToolCalled:
    """The model called a tool; its handler runs now. Immutable."""

    kind: Literal["tool_called"] = attrs.field(default="tool_called", init=False)
    seq: int
    at: datetime
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
    job_id: str
    session_id: SessionId


@attrs.frozen(kw_only=True)
class JobFinished:
    """A job ended, durably: ``finished``, ``failed``, ``cancelled`` or ``interrupted``. Immutable."""

    kind: Literal["job_finished"] = attrs.field(default="job_finished", init=False)
    seq: int
    at: datetime
    job_id: str
    status: JobStatus
    error_kind: ErrorKind | None


@attrs.frozen(kw_only=True)
class NotificationEvent:
    """A notification was delivered to a session (its turn started). Immutable."""

    kind: Literal["notification"] = attrs.field(default="notification", init=False)
    seq: int
    at: datetime
    session_id: SessionId
    turn_id: TurnId
    title: str
    body: str


@attrs.frozen(kw_only=True)
class Lagged:
    """This subscriber fell behind: ``missed`` events were dropped before it read them. Immutable."""

    kind: Literal["lagged"] = attrs.field(default="lagged", init=False)
    seq: int
    at: datetime
    missed: int


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
    | Lagged
)
"""Everything ``host.subscribe()`` yields; discriminated by ``kind``."""


class _Slot:
    """One published event: made when a subscriber first reads it (idle ones never do)."""

    __slots__ = ("at", "event", "make", "seq")

    def __init__(self, seq: int, at: datetime, make: Callable[[int, datetime], HostEvent]) -> None:
        self.seq, self.at, self.make = seq, at, make
        self.event: HostEvent | None = None

    def get(self) -> HostEvent:
        if self.event is None:
            self.event = self.make(self.seq, self.at)
        return self.event


class EventHub:
    """The host's event ring: publish is O(1) whatever the number of subscribers."""

    __slots__ = ("_clock", "_closed", "_ring", "_seq", "_size", "_subscribers", "_waiting", "_wake")

    def __init__(self, clock: Callable[[], datetime]) -> None:
        self._clock = clock
        self._ring: deque[_Slot] = deque()
        self._waiting = 0  # subscribers blocked in __anext__
        self._seq = 0  # the seq of the last event published
        self._size = 0  # the largest buffer a subscriber asked for
        self._subscribers: set[EventStream] = set()
        self._wake = anyio.Event()
        self._closed = False

    @property
    def active(self) -> bool:
        """Whether anyone listens (no subscriber: publishing makes nothing)."""
        return bool(self._subscribers)

    def publish(self, make: Callable[[int, datetime], HostEvent]) -> None:
        """Make the next event (``make(seq, at)``) and hand it to every subscriber, without waiting."""
        if not self._subscribers:
            return
        self._seq += 1
        self._ring.append(_Slot(self._seq, self._clock(), make))
        if len(self._ring) > self._size:
            self._ring.popleft()
        if self._waiting:  # wake only a subscriber that waits (an idle one costs nothing)
            wake, self._wake = self._wake, anyio.Event()
            wake.set()

    def close(self) -> None:
        """The host closed: every stream ends once it has read what is left."""
        self._closed = True
        self._wake.set()

    @asynccontextmanager
    async def subscribe(self, buffer: int) -> AsyncIterator[EventStream]:
        if isinstance(buffer, bool) or not isinstance(buffer, int) or buffer < 1:
            raise InvalidArgumentError(
                f"buffer must be an int >= 1 (events kept for a slow subscriber), got {show(buffer)}",
                argument="buffer",
                value=buffer,
            )
        stream = EventStream(self, buffer, self._seq + 1)
        self._subscribers.add(stream)
        self._size = max(self._size, buffer)
        try:
            yield stream
        finally:
            self._subscribers.discard(stream)
            self._size = max((s.buffer for s in self._subscribers), default=0)
            if not self._subscribers:
                self._ring.clear()


@final
class EventStream:
    """One subscriber's view of the host's events: ``async for event in events``.

    Obtain it from ``async with host.subscribe() as events``. Iteration ends when the host
    closes (after the events already published). Events start with the first one published
    after subscribing.
    """

    __slots__ = ("_hub", "_next", "buffer")

    def __init__(self, hub: EventHub, buffer: int, start: int) -> None:
        self._hub = hub
        self.buffer = buffer
        self._next = start  # the seq this subscriber reads next

    def __aiter__(self) -> EventStream:
        return self

    async def __anext__(self) -> HostEvent:
        hub = self._hub
        while True:
            latest = hub._seq
            if self._next <= latest:
                oldest = latest - len(hub._ring) + 1
                floor = max(oldest, latest - self.buffer + 1)
                if self._next < floor:
                    missed = floor - self._next
                    self._next = floor
                    return Lagged(seq=floor - 1, at=hub._clock(), missed=missed)
                event = hub._ring[self._next - oldest].get()
                self._next += 1
                return event
            if hub._closed:
                raise StopAsyncIteration
            hub._waiting += 1
            try:
                await hub._wake.wait()
            finally:
                hub._waiting -= 1

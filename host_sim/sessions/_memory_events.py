"""What memory tells subscribers: the `MemoryNotices` the host passes to `host_sim.memory`."""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterator
from datetime import datetime
from typing import final

from modular_sdk import MemoryRecord

from ..observability import Telemetry
from ._events import EventHub, HostEvent, MemoryRecorded, MemoryRetracted, SessionCompacted

__all__ = ["MemoryEvents"]


@final
class MemoryEvents:
    """Publishes ``memory_recorded``, ``memory_retracted`` and ``session_compacted`` on the
    host's event hub (a record's events commit with its write: `EventHub.committing`), and a
    ``create_memory`` span for each record made."""

    __slots__ = ("_events", "_telemetry")

    def __init__(self, events: EventHub, telemetry: Telemetry) -> None:
        self._events = events
        self._telemetry = telemetry

    @contextlib.contextmanager
    def recording(self, record: MemoryRecord, compacted: tuple[int, int] | None = None) -> Iterator[None]:
        makes: list[Callable[[int, datetime], HostEvent]] = [
            lambda seq, at: MemoryRecorded(
                seq=seq, at=at, session_id=record.session_id, record_id=record.id, record_kind=record.kind
            )
        ]
        if compacted is not None:
            first, last = compacted
            makes.append(
                lambda seq, at: SessionCompacted(
                    seq=seq, at=at, session_id=record.session_id, record_id=record.id, first=first, last=last
                )
            )
        with self._events.committing(*makes):
            yield
        self._telemetry.memory_made(record.id, record.kind, record.session_id)

    def retracted(self, record: MemoryRecord) -> None:
        self._events.publish(
            lambda seq, at: MemoryRetracted(seq=seq, at=at, session_id=record.session_id, record_id=record.id)
        )

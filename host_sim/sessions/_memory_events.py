"""What memory tells subscribers: the `MemoryNotices` the host passes to `host_sim.memory`."""

from __future__ import annotations

from typing import final

from modular_sdk import MemoryRecord

from ._events import EventHub, MemoryRecorded, MemoryRetracted, SessionCompacted

__all__ = ["MemoryEvents"]


@final
class MemoryEvents:
    """Publishes ``memory_recorded``, ``memory_retracted`` and ``session_compacted`` on the host's event hub."""

    __slots__ = ("_events",)

    def __init__(self, events: EventHub) -> None:
        self._events = events

    def recorded(self, record: MemoryRecord) -> None:
        self._events.publish(
            lambda seq, at: MemoryRecorded(
                seq=seq, at=at, session_id=record.session_id, record_id=record.id, record_kind=record.kind
            )
        )

    def retracted(self, record: MemoryRecord) -> None:
        self._events.publish(
            lambda seq, at: MemoryRetracted(seq=seq, at=at, session_id=record.session_id, record_id=record.id)
        )

    def compacted(self, record: MemoryRecord, first: int, last: int) -> None:
        self._events.publish(
            lambda seq, at: SessionCompacted(
                seq=seq, at=at, session_id=record.session_id, record_id=record.id, first=first, last=last
            )
        )

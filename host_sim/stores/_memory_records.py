"""`RecordStore`: what a store offers to keep memory records (docs/memory.md), and the
in-memory keeping of them that `MemoryStore` uses.

Records are authoritative and written once. Two indexes are derived from them and written
in the record's own transaction: by turn (every turn a record rests on directly: the turns
of its window and the turns it cites) and by record (each record it was derived from), so
that ``lineage.forward`` and ``forget`` cost what they return. The only changes a record
sees are its retraction (once, the first reason kept) and its erasure (the one erasure
walk, stores/_erasure.py: ``text`` becomes ``"(erased)"``, ``data`` ``None``).

Search is the store's own full-text index (SQLite FTS5, PostgreSQL ``tsvector`` with a GIN
index); `MemoryStore` scans. Listing and search are limited to sessions whose tags include
the scope's (the session's tags: a record has its session's).
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from datetime import datetime
from typing import Final, Protocol, runtime_checkable

import attrs

from modular_sdk import MemoryRecord, RecordId, SessionId, TurnId

__all__ = ["ERASED_TEXT", "RecordStore", "RecordsKept", "query_terms"]

ERASED_TEXT: Final = "(erased)"
"""What an erased record's ``text`` becomes."""


@runtime_checkable
class RecordStore(Protocol):
    """Memory records and their indexes (see the module docstring). Every write is one transaction."""

    async def add_record(self, record: MemoryRecord, rests_on: Sequence[TurnId]) -> None:
        """Write a record with its index rows: ``rests_on`` (the turns of its window and its
        cites) and its ``derived_from``. Refuses an id the store holds."""
        ...

    async def get_record(self, record_id: str) -> MemoryRecord | None:
        """One record, or ``None``."""
        ...

    async def rests_on(self, record_id: RecordId) -> Sequence[TurnId]:
        """The turns a record rests on directly (its window's and its cites), by the index."""
        ...

    async def records_on_turns(self, turn_ids: Sequence[TurnId]) -> Sequence[MemoryRecord]:
        """Records resting directly on any of these turns (window or cite), in writing order, each once."""
        ...

    async def records_derived_from(self, record_ids: Sequence[RecordId]) -> Sequence[MemoryRecord]:
        """Records made directly from any of these records, in writing order, each once."""
        ...

    async def retract_record(self, record_id: RecordId, at: datetime, reason: str) -> MemoryRecord:
        """Set ``retracted_at`` and ``retraction_reason`` once; a record retracted before is
        returned unchanged (its first reason kept)."""
        ...

    async def page_records(
        self,
        session_id: SessionId | None,
        kind: str | None,
        tags: Mapping[str, str],
        include_retracted: bool,
        limit: int,
        after: int | None,
    ) -> tuple[Sequence[MemoryRecord], int | None]:
        """Records (of one session, of one kind, of sessions whose tags include ``tags``) in
        writing order, at most ``limit``, after position ``after``; and the position to pass
        for the next page (``None`` on the last). Erased records are listed (as erased)."""
        ...

    async def search_records(self, query: str, tags: Mapping[str, str], limit: int) -> Sequence[MemoryRecord]:
        """Records whose text matches every term of ``query``, best first, neither erased
        nor retracted, of sessions whose tags include ``tags``; at most ``limit``."""
        ...


_TERM: Final = re.compile(r"\w+", re.UNICODE)


def query_terms(query: str) -> list[str]:
    """The words of a search query, lowercased (punctuation and operators are not syntax)."""
    return [t.lower() for t in _TERM.findall(query)][:32]


@attrs.define(eq=False)
class RecordsKept:
    """What a `MemoryStore` keeps for `RecordStore`: the records by id in writing order, and
    the two indexes (by turn, by record)."""

    records: dict[RecordId, MemoryRecord] = attrs.field(factory=dict)
    order: dict[RecordId, int] = attrs.field(factory=dict)
    on_turn: dict[TurnId, list[RecordId]] = attrs.field(factory=dict)
    from_record: dict[RecordId, list[RecordId]] = attrs.field(factory=dict)
    ids: list[RecordId] = attrs.field(factory=list)  # in writing order (position = index)
    of_session: dict[SessionId, list[RecordId]] = attrs.field(factory=dict)
    rests_on: dict[RecordId, tuple[TurnId, ...]] = attrs.field(factory=dict)

    def add(self, record: MemoryRecord, rests_on: Sequence[TurnId]) -> None:
        self.order[record.id] = len(self.ids)
        self.ids.append(record.id)
        self.of_session.setdefault(record.session_id, []).append(record.id)
        self.records[record.id] = record
        self.rests_on[record.id] = tuple(dict.fromkeys(rests_on))
        for turn_id in dict.fromkeys(rests_on):
            self.on_turn.setdefault(turn_id, []).append(record.id)
        for parent in dict.fromkeys(record.derived_from):
            self.from_record.setdefault(parent, []).append(record.id)

    def turns_of(self, record_id: RecordId) -> list[TurnId]:
        return list(self.rests_on.get(record_id, ()))

    def _listed(self, ids: list[RecordId]) -> list[MemoryRecord]:
        unique = sorted(dict.fromkeys(ids), key=self.order.__getitem__)
        return [self.records[i] for i in unique]

    def on_turns(self, turn_ids: Sequence[TurnId]) -> list[MemoryRecord]:
        return self._listed([r for t in turn_ids for r in self.on_turn.get(t, ())])

    def derived(self, record_ids: Sequence[RecordId]) -> list[MemoryRecord]:
        return self._listed([r for p in record_ids for r in self.from_record.get(p, ())])

    def search(self, query: str, sessions_ok: object, limit: int) -> list[MemoryRecord]:
        """A scan (`MemoryStore` may scan): records holding every term, most terms' occurrences first."""
        terms = query_terms(query)
        if not terms:
            return []
        scored: list[tuple[int, int, MemoryRecord]] = []
        for record in self.records.values():
            if record.erased_at is not None or record.retracted_at is not None:
                continue
            if callable(sessions_ok) and not sessions_ok(record.session_id):
                continue
            words = [w.lower() for w in _TERM.findall(record.text)]
            counts = [words.count(t) for t in terms]
            if all(counts):
                scored.append((-sum(counts), self.order[record.id], record))
        scored.sort(key=lambda item: (item[0], item[1]))
        return [record for _, _, record in scored[:limit]]

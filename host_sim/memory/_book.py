"""`Memory`: ``host.memory``, a `ScopedHost`'s, and a handler's ``ctx.ai.memory`` (docs/memory.md).

One surface, parameterised by who writes (the host, or a mod with its command or tool) and
the tags it acts within (a scope sees only records of sessions carrying its tags, and
writes only there). Every check is made before the one write: a record rests on
something, every turn it names is a completed turn of its session's history (inherited
turns included), a window runs forward, every record it was derived from is held.
"""

from __future__ import annotations

import contextlib
import secrets
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import AbstractContextManager
from datetime import datetime
from typing import Final, Protocol, final

import attrs

from modular_sdk import (
    InvalidArgumentError,
    MemoryAuthor,
    MemoryRecord,
    ModularError,
    RecordId,
    SessionId,
    TurnId,
    Window,
)
from modular_sdk._frozen import JsonValue
from modular_sdk._rules import show, unstorable_text

from .._host_made import NoPublicConstructor
from ..lineage._provenance import find_record, unknown_record, unknown_session
from ..stores._errors import StoreError
from ..stores._memory_records import RecordStore
from ..stores._protocol import Store
from ..stores._records import SessionRecord, TurnRecord

__all__ = ["Memory", "MemoryNotices", "MemoryPage", "new_record_id", "turns_between"]

_MAX_LIMIT: Final = 1000


def new_record_id() -> RecordId:
    return RecordId(f"mem_{secrets.token_hex(8)}")


@attrs.frozen(kw_only=True)
class MemoryPage:
    """One page of ``memory.list``: ``records`` in writing order, and ``next``, the cursor to
    pass as ``after=`` for the following page (``None`` on the last). Immutable."""

    records: tuple[MemoryRecord, ...]
    next: int | None


class MemoryNotices(Protocol):
    """What memory tells the host (its events), passed in by the host."""

    def recording(self, record: MemoryRecord) -> AbstractContextManager[None]:
        """The block writes ``record``: its ``memory_recorded`` commits with that write (docs/embedding.md)."""
        ...

    def retracted(self, record: MemoryRecord) -> None:
        """A record was retracted, the first time (``memory_retracted``)."""
        ...


class _Quiet:
    @contextlib.contextmanager
    def recording(self, record: MemoryRecord) -> Iterator[None]:
        yield

    def retracted(self, record: MemoryRecord) -> None:
        pass


def _session_id(session: object) -> str:
    if isinstance(session, str):
        return session
    found = getattr(session, "id", None)
    if isinstance(found, str):
        return found
    raise InvalidArgumentError(
        f"a record is made in a session: pass its handle or its id, got {show(session)}",
        argument="session",
        value=session,
    )


async def _chain(store: Store, record: SessionRecord) -> list[tuple[SessionId, int | None]]:
    """The sessions whose turns ``record``'s history holds, each with the last ordinal it
    holds of them (``None``: all), from the session up its fork chain."""
    chain: list[tuple[SessionId, int | None]] = [(record.id, None)]
    cut: int | None = None
    current: SessionRecord | None = record
    while current is not None and current.lineage.kind == "fork":
        lineage = current.lineage
        cut = lineage.parent_turn_ordinal if cut is None else min(cut, lineage.parent_turn_ordinal)
        chain.append((lineage.parent_session_id, cut))
        current = await store.get_session(lineage.parent_session_id)
    return chain


async def turns_between(
    store: Store, chain: Sequence[tuple[SessionId, int | None]], first: int, last: int
) -> list[TurnRecord]:
    """The turns of a history (``chain``, from `_chain`) with ordinals from ``first`` to ``last``, in order."""
    found: list[TurnRecord] = []
    upper = last
    for session_id, cut in chain:
        top = upper if cut is None else min(upper, cut)
        if top < first:
            continue
        own = [t for t in await store.turns_since(session_id, first) if t.ordinal <= top]
        found = own + found
        if own:
            upper = own[0].ordinal - 1
        if upper < first:
            break
    return found


@final
class Memory(metaclass=NoPublicConstructor):
    """What a conversation was read into (docs/memory.md): records resting on turns.

    Obtain it as ``host.memory`` (the host writes), ``host.scoped(tags).memory`` (limited
    to sessions carrying those tags) or a handler's ``ctx.ai.memory`` (stamped with the mod
    and its command or tool). Records are durable on every store and erased by the one
    erasure walk (``lineage.forget``, ``sessions.delete``).

    >>> rec = await host.memory.record(chat, "Alice lives in Lisbon", kind="state", cites=(t2.id,))  # doctest: +SKIP
    """

    __slots__ = ("_author", "_clock", "_notices", "_store", "_tags")

    def __init__(
        self,
        store: Store,
        *,
        clock: Callable[[], datetime],
        author: MemoryAuthor,
        tags: Mapping[str, str] | None = None,
        notices: MemoryNotices | None = None,
    ) -> None:
        self._store = store
        self._clock = clock
        self._author = author
        self._tags: Mapping[str, str] = dict(tags or {})
        self._notices: MemoryNotices = notices if notices is not None else _Quiet()

    def _records(self) -> RecordStore:
        store = self._store
        if not isinstance(store, RecordStore):
            raise StoreError(
                f"this host's store ({type(store).__name__}) keeps no memory records; use MemoryStore, "
                "SqliteStore or PostgresStore"
            )
        return store

    def _sees(self, session: SessionRecord | None) -> bool:
        return session is not None and all(session.tags.get(k) == v for k, v in self._tags.items())

    async def _session(self, session: object) -> SessionRecord:
        session_id = _session_id(session)
        record = await self._store.get_session(SessionId(session_id)) if not unstorable_text(session_id) else None
        if not self._sees(record):
            raise unknown_session(session_id)
        assert record is not None
        return record

    async def record(
        self,
        session: object,
        text: str,
        *,
        kind: str,
        read_from: Window | None = None,
        cites: Sequence[TurnId | str] = (),
        derived_from: Sequence[RecordId | str] = (),
        data: JsonValue = None,
    ) -> MemoryRecord:
        """Make a record of ``session`` (a handle or an id) resting on a window of its
        history, cited turns of it, or other records; one write.

        Raises `InvalidArgumentError` naming what it cannot rest on (no window, cite or
        record at all; a turn that is unknown, not completed or not in the session's
        history; a window whose first turn comes after its last), `UnknownRecordError` for
        a record it names that the host does not hold, `UnknownSessionError` for a session
        it does not see.
        """
        records = self._records()
        if not isinstance(text, str) or unstorable_text(text) or "\x00" in text:
            raise InvalidArgumentError(f"a record's text must be valid text, got {show(text)}", argument="text", value=text)
        if not isinstance(kind, str) or not kind.strip() or unstorable_text(kind):
            raise InvalidArgumentError(
                f"a record's kind must be non-empty text (e.g. 'fact', 'state', 'summary'), got {show(kind)}",
                argument="kind",
                value=kind,
            )
        if read_from is not None and not isinstance(read_from, Window):
            raise InvalidArgumentError(
                f"read_from must be a Window(first=turn id, last=turn id) or None, got {show(read_from)}",
                argument="read_from",
                value=read_from,
            )
        cited = _ids(cites, "cites")
        parents = _ids(derived_from, "derived_from")
        if read_from is None and not cited and not parents:
            raise InvalidArgumentError(
                "a record must rest on something: pass read_from=Window(first=..., last=...), cites=(turn ids) "
                "or derived_from=(record ids)",
                argument="read_from",
                value=None,
            )
        owner = await self._session(session)
        chain = await _chain(self._store, owner)
        rests_on: list[TurnId] = []
        if read_from is not None:
            first = await self._turn_in(owner, chain, read_from.first, "read_from.first")
            last = await self._turn_in(owner, chain, read_from.last, "read_from.last")
            if first.ordinal > last.ordinal:
                raise InvalidArgumentError(
                    f"window of session {owner.id!r} runs backwards: its first turn {first.id!r} (#{first.ordinal}) "
                    f"comes after its last {last.id!r} (#{last.ordinal}); pass Window(first=earlier, last=later)",
                    argument="read_from",
                    value=read_from,
                )
            read_from = Window(first=first.id, last=last.id)
            rests_on += [t.id for t in await turns_between(self._store, chain, first.ordinal, last.ordinal)]
        cited_ids: list[TurnId] = []
        for turn_id in cited:
            cited_ids.append((await self._turn_in(owner, chain, turn_id, "cites")).id)
        rests_on += cited_ids
        for parent in parents:
            found = await records.get_record(parent)
            if found is None or not self._sees(await self._store.get_session(found.session_id)):
                raise unknown_record(parent)
        try:
            record = MemoryRecord(
                id=new_record_id(),
                session_id=owner.id,
                kind=kind,
                text=text,
                data=data,
                read_from=read_from,
                cites=tuple(cited_ids),
                derived_from=tuple(RecordId(p) for p in parents),
                made_by=self._author,
                created_at=self._clock(),
            )
        except ModularError as exc:  # data that is not JSON
            raise InvalidArgumentError(f"cannot keep this record: {exc}", argument="data", value=data) from None
        with self._notices.recording(record):  # its event commits with it
            await records.add_record(record, rests_on)
        return record

    async def _turn_in(
        self, owner: SessionRecord, chain: Sequence[tuple[SessionId, int | None]], turn_id: str, argument: str
    ) -> TurnRecord:
        turn = await self._store.find_turn(turn_id) if not unstorable_text(turn_id) else None
        holds = turn is not None and any(
            turn.session_id == sid and (cut is None or turn.ordinal <= cut) for sid, cut in chain
        )
        if turn is None or not holds:
            raise InvalidArgumentError(
                f"{argument} names turn {turn_id!r}, which is not a turn of session {owner.id!r}'s history; "
                "a record rests on completed turns of the session it is made in (inherited ones included)",
                argument=argument,
                value=turn_id,
            )
        if turn.status != "completed":
            raise InvalidArgumentError(
                f"{argument} names turn {turn_id!r} of session {owner.id!r}, which is {turn.status}; a record "
                "rests on completed turns only (wait for it: await session.send(...) returns then)",
                argument=argument,
                value=turn_id,
            )
        return turn

    async def get(self, record_id: str) -> MemoryRecord:
        """One record as it is now; `UnknownRecordError` for an id the host (or scope) does not hold."""
        self._records()
        found = await find_record(self._store, record_id)
        if not self._sees(await self._store.get_session(found.session_id)):
            raise unknown_record(found.id)  # outside the scope: the same answer as a missing record
        return found

    async def list(
        self,
        *,
        session: object = None,
        kind: str | None = None,
        tags: Mapping[str, str] | None = None,
        include_retracted: bool = False,
        limit: int = 50,
        after: int | None = None,
    ) -> MemoryPage:
        """Records in writing order (of one session, of one kind, of sessions carrying
        ``tags``), a page of at most ``limit``; pass the page's ``next`` as ``after`` for
        the following one. Retracted records are left out unless ``include_retracted``;
        erased ones are listed as erased."""
        records = self._records()
        if isinstance(limit, bool) or not isinstance(limit, int) or not 1 <= limit <= _MAX_LIMIT:
            raise InvalidArgumentError(f"limit must be an int from 1 to {_MAX_LIMIT}, got {show(limit)}", argument="limit", value=limit)
        if after is not None and (isinstance(after, bool) or not isinstance(after, int) or after < 0):
            raise InvalidArgumentError(
                f"after must be None or a page's next cursor (an int >= 0), got {show(after)}", argument="after", value=after
            )
        if kind is not None and not isinstance(kind, str):
            raise InvalidArgumentError(f"kind must be text or None, got {show(kind)}", argument="kind", value=kind)
        if not isinstance(include_retracted, bool):
            raise InvalidArgumentError(
                f"include_retracted must be True or False, got {show(include_retracted)}",
                argument="include_retracted",
                value=include_retracted,
            )
        wanted = dict(tags or {})
        if not all(isinstance(k, str) and isinstance(v, str) and not unstorable_text(k + v) for k, v in wanted.items()):
            raise InvalidArgumentError(f"tags must map text to text, got {show(tags)}", argument="tags", value=tags)
        session_id = None if session is None else (await self._session(session)).id
        found, following = await records.page_records(
            session_id, kind, {**wanted, **self._tags}, include_retracted, limit, after
        )
        return MemoryPage(records=tuple(found), next=following)

    async def search(self, query: str, *, limit: int = 10) -> tuple[MemoryRecord, ...]:
        """Records whose text holds every word of ``query``, best first, served by the store's
        full-text index (erased and retracted records are never found)."""
        records = self._records()
        if not isinstance(query, str) or unstorable_text(query):
            raise InvalidArgumentError(f"query must be text, got {show(query)}", argument="query", value=query)
        if isinstance(limit, bool) or not isinstance(limit, int) or not 1 <= limit <= _MAX_LIMIT:
            raise InvalidArgumentError(f"limit must be an int from 1 to {_MAX_LIMIT}, got {show(limit)}", argument="limit", value=limit)
        return tuple(await records.search_records(query, self._tags, limit))

    async def retract(self, record_id: str, *, reason: str) -> MemoryRecord:
        """Mark a record wrong (seed 001's corrections): it stays, marked, and leaves search,
        listing and the model's context; ``lineage.forward(record_id)`` is what to re-check.
        Retracting again changes nothing (the first reason is kept). Returns the record."""
        records = self._records()
        if not isinstance(reason, str) or not reason.strip() or unstorable_text(reason) or "\x00" in reason:
            raise InvalidArgumentError(
                f"retract() takes the reason as non-empty text, got {show(reason)}; say why the record is wrong",
                argument="reason",
                value=reason,
            )
        found = await self.get(record_id)
        if found.retracted_at is not None:
            return found
        at = self._clock()
        record = await records.retract_record(found.id, at, reason)
        if record.retracted_at == at:
            self._notices.retracted(record)
        return record


def _ids(values: object, argument: str) -> list[str]:
    if isinstance(values, str) or not isinstance(values, (tuple, list)):
        raise InvalidArgumentError(
            f"{argument} must be a tuple of ids, got {show(values)}", argument=argument, value=values
        )
    for value in values:
        if not isinstance(value, str) or not value or unstorable_text(value):
            raise InvalidArgumentError(f"{argument} holds {show(value)}, which is no id", argument=argument, value=value)
    return list(dict.fromkeys(values))

"""What a host keeps of its store, owned by one object: `SessionCache`.

The store is the truth; a host keeps the sessions it touched in memory as a cache of it.
Everything that cache holds, and every change to it, goes through `SessionCache`: the
sessions and their turns, the erasure generation they reflect, each session's deletion,
what other hosts finished, erased, retracted or deleted, and what a dead host left
running. The engine acts through it, the event link (`HostsLink`) feeds it what other
hosts wrote, and the lineage graph reports its erasures and retractions to it (it is the
graph's `LineageFacts`). Nobody else keeps a copy.
"""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator, Callable, Sequence
from contextlib import AbstractContextManager
from datetime import datetime

import anyio

from modular_sdk import (
    InvalidArgumentError,
    MemoryRecord,
    RecordId,
    SessionDeletedError,
    SessionId,
    UnknownSessionError,
)
from modular_sdk._rules import show, unstorable_text

from ..lineage._facts import LineageFacts
from ..lineage._provenance import find_turn, unknown_session
from ..stores._erasure import Erasure
from ..stores._errors import StoreError
from ..stores._protocol import IntegratorStore, Store
from ..stores._records import ERASED_LABEL, SessionRecord, TurnRecord
from ..stores._shared import SharedStore
from ._events import (
    EventHub,
    HostEvent,
    MemoryErased,
    MemoryRetracted,
    SessionDeleted,
    TurnErased,
    TurnFinished,
    TurnRetracted,
)
from ._state import SessionState, TurnState, apply_erasure, apply_retraction, turn_at

__all__ = ["SessionCache", "damaged", "turn_finished"]

_RUNNING_ELSEWHERE_WAIT = 60.0  # seconds a turn waits for another host's turn that lost the lock


class SessionCache(LineageFacts):
    """What this host keeps of the store: the one owner (STYLE.md, "Seams and owners").

    It holds the sessions this host touched (each with its fork chain, own turns and
    deletion) and the erasure generation of a shared store they reflect, decides per read
    how fresh the answer must be, and applies every fact, whoever made it.

    How fresh each read is, and what it costs (docs/embedding.md):

    ==============================  =====================  ==========================================
    read                            how fresh              which query
    ==============================  =====================  ==========================================
    a turn's history (model call)   exact                  the session lock, then one indexed read of
                                                           the erasure generation in the same round
                                                           trip; the chain's turns and deletion read
                                                           again only when it moved (`for_turn`)
    a turn's start on this host     after every erasure    none: the erasure gate (`reading`) orders
                                    of this host           it after any erasure running here
    ``turns()``, ``fork()`` at the  what any host finished turns since the last ordinal held
    last completed turn             (``finished``)         (``turns_since``), no lock
    ``sessions.turn``, ``get``      first load: exact;     the record, its turns, deletion and last
                                    then within 1 s        invocation, once; then the event link
    a held session (this host       exact                  none: this host's facts are applied before
    erased, retracted, deleted)                            the call that made them returns
    another host's facts            within 1 s             the event link's rows (`HostsLink`), read
                                                           when NOTIFY wakes it and every second
    ``SessionDeletedError`` check   exact                  one indexed read of the deletion (shared
                                                           store, when not yet known deleted)
    ==============================  =====================  ==========================================

    An erasure (``lineage.forget``, ``sessions.delete``) holds the gate exclusively while
    it plans, erases and applies (`erasing`); a turn begins and reads its history holding it
    shared (`reading`), so on one host a turn either began before the erasure (it is then
    running, and the erasure refuses, docs/embedding.md) or reads the history after it. Other hosts'
    turns are ordered by the store's session locks: once committed, the erasure takes and
    lets go of the lock of each session it reaches (a turn that read the text there has then
    finished) and erases what those turns made of it before it returns; a turn that takes a
    lock later reads the moved generation (lineage/_provenance.py, ``_latecomers``).
    """

    def __init__(
        self,
        *,
        store: Store,
        integrator_store: IntegratorStore,
        events: EventHub,
        now: Callable[[], datetime],
        generation: int = 0,
    ) -> None:
        self.store = store
        self.integrator_store = integrator_store
        # Asked once: a runtime Protocol check walks every member of SharedStore (about
        # 10 us), and forks and sends ask on every call.
        self.shared: SharedStore | None = store if isinstance(store, SharedStore) else None
        self._events = events
        self._now = now
        self._generation = generation  # of a shared store when this host opened (0: none)
        self._sessions: dict[SessionId, SessionState] = {}
        self._loading = anyio.Lock()
        self._gate = _Gate()

    # -- reads ------------------------------------------------------------------------------

    def held(self, session_id: SessionId) -> SessionState | None:
        """The session if this host holds it (no read)."""
        return self._sessions.get(session_id)

    def keep(self, state: SessionState) -> SessionState:
        """A session this host just created: held from now on (a reader that loaded it from
        the store meanwhile keeps its state: one state per session)."""
        return self._sessions.setdefault(state.id, state)

    async def load(self, session_id: object) -> SessionState:
        """The session, read from the store (with its fork chain) on first use.

        Costs one dictionary lookup for a session already held; otherwise two reads per
        session of its not-yet-held ancestry (its record and its own turns).
        """
        if not isinstance(session_id, str):
            raise InvalidArgumentError(
                f"a session id is a str (a SessionId), got {show(session_id)}; pass session.id",
                argument="session_id",
                value=session_id,
            )
        state = self._sessions.get(SessionId(session_id))
        if state is not None:
            return state
        if unstorable_text(session_id) is not None:  # no store holds it (nor could be asked for it)
            raise UnknownSessionError(
                f"no session {show(session_id)} in this host or its store (a session id is valid text); "
                "use an id from host.sessions.create() or a handle's .id",
                session_id=session_id,
            )
        async with self._loading:  # one reader builds a session's state; the rest reuse it
            return await self._load(SessionId(session_id))

    async def _load(self, session_id: SessionId) -> SessionState:
        chain: list[SessionRecord] = []  # the session, then ancestors not yet held (iterative)
        current = session_id
        while current not in self._sessions:
            record = await self.store.get_session(current)
            if record is None:
                if not chain:
                    raise unknown_session(session_id)
                child = chain[-1]
                raise damaged(
                    self.store,
                    f"session {child.id!r} is a {child.lineage.kind} of {current!r}, which the store does not hold",
                )
            chain.append(record)
            if record.lineage.kind == "root":
                break
            current = record.lineage.parent_session_id
        for record in reversed(chain):
            self._sessions[record.id] = await self._materialize(record)
        return self._sessions[session_id]

    async def _materialize(self, record: SessionRecord) -> SessionState:
        """A session's state from its record and own turns; its parent is already held."""
        lineage = record.lineage
        parent: SessionState | None = None
        anchor: TurnState | None = None
        if lineage.kind != "root":
            parent = self._sessions[lineage.parent_session_id]
            if lineage.kind == "fork":
                anchor = turn_at(parent, lineage.parent_turn_ordinal)
                if anchor is None:  # forked by another host at a turn this one has not seen yet
                    await self.finished(parent)
                    anchor = turn_at(parent, lineage.parent_turn_ordinal)
                if anchor is None or anchor.status != "completed":
                    raise damaged(
                        self.store,
                        f"fork {record.id!r} is anchored at turn {lineage.parent_turn_ordinal} of "
                        f"{parent.id!r}, which is {'missing' if anchor is None else anchor.status}",
                    )
        state = SessionState(record=record, parent=parent, anchor=anchor)
        state.deleted_at = await self.integrator_store.deleted_at(record.id)
        invoked = [i.started_at for i in await self.integrator_store.invocations_of(record.id)]
        state.last_invocation_at = max(invoked, default=None)
        for turn_record in await self.store.get_turns(record.id):
            if turn_record.status == "running" and self.shared is not None:
                break  # another host runs it: caught up once it has finished
            turn = TurnState.from_record(turn_record)
            if turn.ordinal != state.next_ordinal:
                raise damaged(
                    self.store,
                    f"session {record.id!r} has turn {turn.ordinal} where turn {state.next_ordinal} belongs",
                )
            _add(state, turn)
        return state

    async def load_turn(self, turn_or_message_id: object) -> tuple[SessionState, TurnState]:
        """A turn (by turn id or message id) and the session that ran it; `UnknownTurnError` otherwise."""
        record = await find_turn(self.store, turn_or_message_id)
        session = await self.load(record.session_id)
        turn = turn_at(session, record.ordinal)
        if turn is None and record.status != "running":  # another host finished it a moment ago
            await self.finished(session)
            turn = turn_at(session, record.ordinal)
        if turn is None or turn.id != record.id:
            raise damaged(self.store, f"turn {record.id!r} is not at ordinal {record.ordinal} of {session.id!r}")
        return session, turn

    async def finished(self, session: SessionState) -> None:
        """Add to ``session`` the turns other hosts finished since this host last looked
        (``turns()``, a fork at the last completed turn): nothing to do on a single-host store."""
        if self.shared is not None:
            await self._catch_up(self.shared, session, locked=False)

    async def refuse_deleted(self, session: SessionState, what: str) -> None:
        """Raise `SessionDeletedError` when ``session`` was deleted, on this host or (a shared
        store: one indexed read) on another: exact."""
        if session.deleted_at is None and self.shared is not None:
            session.deleted_at = await self.integrator_store.deleted_at(session.id)
        self.refuse_known_deleted(session, what)

    @contextlib.asynccontextmanager
    async def child_of(self, parent: SessionState, what: str) -> AsyncIterator[None]:
        """Write a fork or spawn of ``parent`` in the block, refused (`SessionDeletedError`)
        when ``parent`` is deleted: exact, and no read. A deletion this host knows of refuses
        at once; one another host made is refused by the write itself, a shared store
        checking it in the child's transaction in order with deletions (`SharedStore`), and
        only then read back (one indexed read) to say so."""
        self.refuse_known_deleted(parent, what)
        try:
            yield
        except StoreError as exc:
            if self.shared is None or exc.retryable:
                raise
            await self.refuse_deleted(parent, what)  # deleted: SessionDeletedError; else the refusal
            raise

    def refuse_known_deleted(self, session: SessionState, what: str) -> None:
        """Raise `SessionDeletedError` when this host knows ``session`` deleted (no read)."""
        if session.deleted_at is not None:
            raise SessionDeletedError(
                f"cannot {what} session {session.id!r}: it was deleted at {session.deleted_at.isoformat()}; "
                "its history stays readable (erased), but nothing more can be sent to it, forked or "
                "spawned from it: create a new session (or fork one of its forks made before the deletion)",
                session_id=session.id,
            )

    @contextlib.asynccontextmanager
    async def for_turn(self, session: SessionState) -> AsyncIterator[None]:
        """Hold ``session``'s lock in a shared store for one turn, exact first; nothing otherwise.

        Exact means: the turns other hosts added, and (the one synchronous check for
        erasure) when the store's erasure generation moved since a session of its fork chain
        was last read, that session's erasures and deletion, so that the model's history
        never holds text another host has erased.
        """
        store = self.shared
        if store is None:
            yield
            return
        async with store.lock_session(session.id, since=session.next_ordinal) as locked:
            await self._erased_elsewhere(session, locked.generation)
            await self._catch_up(store, session, locked=True, read=locked.turns)
            try:
                yield
            finally:  # the next host to take the lock numbers its events after this turn's
                await self._events.written()

    @contextlib.asynccontextmanager
    async def reading(self) -> AsyncIterator[None]:
        """Hold the erasure gate shared: a turn beginning and reading its history (see the class)."""
        async with self._gate.shared():
            yield

    # -- facts: this host's (LineageFacts) and other hosts' ---------------------------------

    @contextlib.asynccontextmanager
    async def erasing(self) -> AsyncIterator[None]:
        """Hold the erasure gate exclusively: no turn of this host begins meanwhile."""
        async with self._gate.exclusive():
            yield

    def erasure(self, records: Sequence[TurnRecord], memory: Sequence[RecordId] = ()) -> AbstractContextManager[None]:
        """Held around the write that erases ``records`` (forget, delete) and `erased`: one
        ``turn_erased`` per erased turn commits in that write's transaction (earlier events stay
        what they were, without the text); the first of them names the memory records the
        erasure erased (``memory``, API.md section 20). With one host per store they are
        published as the block ends, after `erased` (no subscriber sees one before the resume
        history lost the text)."""
        named = tuple(memory)
        makes = []
        for record in records:
            if record.erased_at is not None:
                makes.append(_turn_erased(record, named))
                named = ()
        return self._events.committing(*makes)

    def erased(self, records: Sequence[TurnRecord], erasure: Erasure, memory: Sequence[RecordId] = ()) -> None:
        """This host erased ``records`` (forget, delete; inside `erasure`): the sessions held say
        so and the resume history keeps no copy of the text. A record without ``erased_at`` is
        a turn that lost only its error (it quoted erased text)."""
        self._apply_erasure(records)
        self._events.erase(erasure, records)

    def retracted(self, record: TurnRecord, first: bool, memory: Sequence[MemoryRecord] = ()) -> None:
        """A retraction this host made; ``first``: this call retracted it (``turn_retracted``),
        then one ``memory_retracted`` per record ``memory`` names (retracted with it)."""
        session = self._sessions.get(record.session_id)
        if session is not None:
            apply_retraction(session, record)
        reason = record.retraction_reason or ""
        if first:
            self._events.publish(
                lambda seq, at: TurnRetracted(seq=seq, at=at, session_id=record.session_id, turn_id=record.id, reason=reason)
            )
        for made in memory:
            self._events.publish(_record_event(MemoryRetracted, made))

    def forgotten(self, memory: Sequence[MemoryRecord]) -> None:
        """Memory records this host erased by forgetting a record: one ``memory_erased`` each."""
        for made in memory:
            self._events.publish(_record_event(MemoryErased, made))

    async def written(self) -> None:
        """The events published so far get their seq before the caller goes on."""
        await self._events.written()

    def deleting(self, session: SessionState) -> AbstractContextManager[None]:
        """Held around the write that deletes ``session`` on this host: its ``session_deleted``
        commits in that write's transaction (a transactional outbox: no extra transaction), or
        is not published when the write raises; none when the session was deleted already."""
        if session.deleted_at is not None:
            return contextlib.nullcontext()
        return self._events.committing(lambda seq, at: SessionDeleted(seq=seq, at=at, session_id=session.id))

    def deleted(self, session: SessionState, at: datetime) -> None:
        """This host deleted ``session`` at ``at`` (its erasure already applied; its
        ``session_deleted`` went with the write, `deleting`)."""
        if session.deleted_at is None:
            session.deleted_at = at

    async def apply(self, event: HostEvent) -> None:
        """Make what this host holds reflect another host's committed fact (its event row)."""
        if isinstance(event, TurnErased):
            self._events.erase(Erasure(at=event.at, turn_ids=frozenset({event.turn_id})), ())
        watched = (TurnFinished, TurnErased, TurnRetracted, SessionDeleted)
        session = self._sessions.get(event.session_id) if isinstance(event, watched) else None
        if session is None:
            return  # not held here: read fresh when it is
        if isinstance(event, TurnFinished):
            await self.finished(session)
        elif isinstance(event, TurnErased):
            record = await self.store.find_turn(event.turn_id)
            if record is not None:
                self._apply_erasure([record])
        elif isinstance(event, TurnRetracted):  # what later model calls here see (docs/the-record.md)
            record = await self.store.find_turn(event.turn_id)
            if record is not None:
                apply_retraction(session, record)
        else:
            session.deleted_at = session.deleted_at or event.at

    async def claimed(self, turns: Sequence[TurnRecord]) -> None:
        """Take in the turns of dead hosts this host's link has just failed as interrupted (their
        ``turn_finished`` rows committed with the claim): the sessions held catch up."""
        store = self.shared
        if store is None:
            return
        for session_id in dict.fromkeys(t.session_id for t in turns):
            session = self._sessions.get(session_id)
            if session is not None:
                await self._catch_up(store, session, locked=False)

    # -- internals --------------------------------------------------------------------------

    def _apply_erasure(self, records: Sequence[TurnRecord]) -> None:
        for record in records:
            session = self._sessions.get(record.session_id)
            if session is not None:
                apply_erasure(session, record)

    async def _erased_elsewhere(self, session: SessionState, generation: int) -> None:
        """Make ``session`` and its fork chain reflect every erasure and deletion any host committed
        up to ``generation`` (the store's erasure generation, read once the lock was granted).

        Each session of the chain whose own turns were last read before ``generation`` (when
        loaded: the host's generation at open; after that: what this noted on it) has its own
        turns and deletion read again, and notes ``generation``; nothing is read when every
        session of the chain is up to date. Noted per session, not per host: another session
        sent to after an erasure says nothing of this one.
        """
        current: SessionState | None = session
        while current is not None:
            if max(current.erasure_generation, self._generation) < generation:
                for record in await self.store.get_turns(current.id):
                    if record.erased_at is not None or record.error == ERASED_LABEL:  # erased, or lost a quoted error
                        apply_erasure(current, record)
                current.deleted_at = current.deleted_at or await self.integrator_store.deleted_at(current.id)
                current.erasure_generation = generation
            current = current.parent

    async def _catch_up(
        self, store: SharedStore, session: SessionState, *, locked: bool, read: Sequence[TurnRecord] | None = None
    ) -> None:
        """Add to ``session`` the turns other hosts finished since this host last looked.

        With ``locked`` (this host holds the session's lock), a ``running`` turn is one whose
        host lost the lock (it died, or its connection blinked): it waits until that turn is
        finished, by its host or, once that host is found dead, by a live host's link
        (`HostsLink`, after a grace period). It is never failed from here.
        """
        # ``read``: the same read, made in the lock's round trip (a turn of this host may have
        # caught up since: the turns below next_ordinal are skipped below)
        records = read if read is not None else await store.turns_since(session.id, session.next_ordinal)
        waited = 0.0
        while locked and any(r.status == "running" for r in records):
            if waited >= _RUNNING_ELSEWHERE_WAIT:
                running = next(r for r in records if r.status == "running")
                raise StoreError(
                    f"turn {running.ordinal} ({running.id!r}) of session {session.id!r} is still running on another "
                    f"host after {_RUNNING_ELSEWHERE_WAIT:.0f} s without holding the session's lock (its connection "
                    "was lost); the call is retryable once that host finishes it or is found dead",
                    path=getattr(store, "path", None),
                    retryable=True,
                )
            await anyio.sleep(0.05)
            waited += 0.05
            records = await store.turns_since(session.id, session.next_ordinal)
        for record in records:
            if record.ordinal < session.next_ordinal:
                continue  # another task of this host caught up meanwhile
            if record.ordinal > session.next_ordinal or record.status == "running":
                break
            _add(session, TurnState.from_record(record))


def _add(session: SessionState, turn: TurnState) -> None:
    """A finished turn read from the store, appended to the session it belongs to."""
    session.add_turn(turn)
    if turn.status == "completed":
        session.add_entry(turn)
        session.last_completed = turn


class _Gate:
    """Many readers or one writer; a waiting writer goes before readers that come after it."""

    def __init__(self) -> None:
        self._readers = 0
        self._writer = False
        self._writers_waiting = 0
        self._changed = anyio.Event()

    def _notify(self) -> None:
        changed, self._changed = self._changed, anyio.Event()
        changed.set()

    @contextlib.asynccontextmanager
    async def shared(self) -> AsyncIterator[None]:
        while self._writer or self._writers_waiting:
            await self._changed.wait()
        self._readers += 1
        try:
            yield
        finally:
            self._readers -= 1
            if not self._readers:
                self._notify()

    @contextlib.asynccontextmanager
    async def exclusive(self) -> AsyncIterator[None]:
        self._writers_waiting += 1
        try:
            while self._writer or self._readers:
                await self._changed.wait()
        except BaseException:
            self._writers_waiting -= 1
            self._notify()
            raise
        self._writers_waiting -= 1
        self._writer = True
        try:
            yield
        finally:
            self._writer = False
            self._notify()


def damaged(store: Store, problem: str) -> StoreError:
    """The error for records that contradict each other (fsck names every problem)."""
    path = getattr(store, "path", None)
    where = "the store" if path is None else f"the store {str(path)!r}"
    return StoreError(
        f"{where} is damaged: {problem}; the records themselves are wrong: see every problem "
        "with 'host-sim fsck --store PATH'",
        path=None if path is None else str(path),
    )


def turn_finished(record: TurnRecord) -> Callable[[int, datetime], TurnFinished]:
    """The ``turn_finished`` event of a turn finished from its record (a dead host's)."""
    return lambda seq, at: TurnFinished(
        seq=seq,
        at=at,
        session_id=record.session_id,
        turn_id=record.id,
        status=record.status,
        reply=record.reply,
        error=record.error,
    )


def _record_event(
    event: type[MemoryRetracted] | type[MemoryErased], record: MemoryRecord
) -> Callable[[int, datetime], HostEvent]:
    return lambda seq, at: event(seq=seq, at=at, session_id=record.session_id, record_id=record.id)


def _turn_erased(record: TurnRecord, memory: tuple[RecordId, ...] = ()) -> Callable[[int, datetime], TurnErased]:
    return lambda seq, at: TurnErased(seq=seq, at=at, session_id=record.session_id, turn_id=record.id, records=memory)

"""Provenance and forget: what the host made of a turn, what a turn was read from, and erasing exactly that.

One walk answers both "what did this become" and "what does forgetting it remove": `forward`
and `forget` call the same `_forward`, so the plan a user is shown before an erasure is
exactly what the erasure removes (seed 001: lineage and forget walk the same edges).

Every answer is read from the store by key, so it holds for sessions this host never
touched: a session's own turns, its children, the edges citing a turn.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Iterable, Sequence
from datetime import datetime
from typing import TYPE_CHECKING, Final

import anyio
import attrs

from modular_sdk import (
    AiNotificationMessage,
    InvalidArgumentError,
    MemoryRecord,
    RecordId,
    SessionId,
    TurnId,
    UnknownRecordError,
    UnknownSessionError,
    UnknownTurnError,
    Window,
)
from modular_sdk._rules import show, unstorable_text

from ..stores._erasure import Erasure
from ..stores._errors import StoreError
from ..stores._memory_records import RecordStore
from ..stores._protocol import IntegratorStore
from ..stores._records import ERASED_LABEL, erased
from ..stores._shared import SharedStore
from ._errors import TurnRunningError
from ._facts import LineageFacts
from ._types import HOST_RELATIONS, LineageArtifact, LineageEdge

if TYPE_CHECKING:
    from ..stores._protocol import Store
    from ..stores._records import Invocation, JobRecord, TurnRecord

__all__ = [
    "ErasurePlan",
    "Provenance",
    "RecordOrigin",
    "RecordRef",
    "TurnOrigin",
    "TurnRef",
    "backward",
    "backward_record",
    "delete_session",
    "find_record",
    "find_turn",
    "forget",
    "forward",
    "is_record_id",
    "unknown_record",
    "unknown_session",
    "unknown_turn",
]


@attrs.frozen(kw_only=True)
class TurnRef:
    """Which turn: the session that ran it, its id and its ordinal. Immutable."""

    session_id: SessionId
    turn_id: TurnId
    ordinal: int


@attrs.frozen(kw_only=True)
class RecordRef:
    """Which memory record: its id, the session it was made in, and its kind. Immutable."""

    record_id: RecordId
    session_id: SessionId
    kind: str


@attrs.frozen(kw_only=True)
class RecordOrigin:
    """Where a memory record came from (``host.lineage.backward(record_id)``). Immutable.

    ``read_from``: the turns of its window and the turns it cites, in history order;
    ``passages``: its window (none when it rests only on cites or records); ``records``:
    the records it was derived from.
    """

    of: RecordRef
    read_from: tuple[TurnRef, ...]
    passages: tuple[Window, ...]
    records: tuple[RecordRef, ...]


@attrs.frozen(kw_only=True)
class Provenance:
    """What the host made of a turn or a memory record (``host.lineage.forward``). Immutable.

    For a record, ``of`` is its `RecordRef`, ``records`` every record derived from it (at
    any depth) and the other fields are empty.

    ``sessions``: every session whose history holds the turn, the one that ran it first, then
    its forks that inherit it, breadth-first (creation order within a level). ``turns``:
    every later completed turn in those sessions whose model saw it, ordered by (session
    order, ordinal). ``spawns``: sessions spawned by a tool call the turn made. ``edges``:
    lineage edges whose artifact cites the turn (every fork anchored at it has one).
    ``records``: every memory record resting on the turn or on one of ``turns`` (its window
    holds the turn, it cites it, or it was derived from such a record, at any depth).
    """

    of: TurnRef | RecordRef
    sessions: tuple[SessionId, ...]
    turns: tuple[TurnRef, ...]
    spawns: tuple[SessionId, ...]
    edges: tuple[LineageEdge, ...]
    records: tuple[RecordRef, ...] = ()


@attrs.frozen(kw_only=True)
class TurnOrigin:
    """What a turn's reply was read from (``host.lineage.backward``). Immutable.

    ``read_from``: the completed turns its model was given as history, inherited ones
    included, in ordinal order. ``sessions``: the fork chain that carried them, from the
    turn's session up to the root of its fork chain.
    """

    of: TurnRef
    read_from: tuple[TurnRef, ...]
    sessions: tuple[SessionId, ...]


@attrs.frozen(kw_only=True)
class ErasurePlan:
    """What forgetting a turn removes (``host.lineage.forget``). Immutable.

    ``turns`` is the turn itself, then exactly ``forward(id).turns``; ``sessions``,
    ``spawns`` and ``edges`` are ``forward(id)``'s. ``erased`` says whether this plan was
    carried out (``dry_run=False``) or only shown. Spawns are listed so the user can decide
    about them: their own turns never saw the forgotten turn and are not erased.
    ``records`` are ``forward(id).records`` (and, for a record, the record itself first):
    carrying the plan out makes their text ``"(erased)"`` and their data ``None``.
    """

    of: TurnRef | RecordRef
    turns: tuple[TurnRef, ...]
    sessions: tuple[SessionId, ...]
    spawns: tuple[SessionId, ...]
    edges: tuple[LineageEdge, ...]
    erased: bool
    records: tuple[RecordRef, ...] = ()


def _ref(turn: TurnRecord) -> TurnRef:
    return TurnRef(session_id=turn.session_id, turn_id=turn.id, ordinal=turn.ordinal)


async def find_turn(store: Store, turn_or_message_id: object) -> TurnRecord:
    """The turn with this turn id or message id; `UnknownTurnError` otherwise."""
    if not isinstance(turn_or_message_id, str) or not turn_or_message_id or unstorable_text(turn_or_message_id):
        raise UnknownTurnError(
            f"a turn is named by its turn id or message id (a non-empty str of valid text), got "
            f"{show(turn_or_message_id)}; pass turn.id or turn.message_id",
            id=show(turn_or_message_id),
        )
    found = await store.find_turn(turn_or_message_id)
    if found is None:
        raise unknown_turn(turn_or_message_id)
    return found


def unknown_turn(turn_or_message_id: str) -> UnknownTurnError:
    """What the host answers for a turn or message id it does not hold (or a scope does not see)."""
    return UnknownTurnError(
        f"no turn or message by this id in this host: {turn_or_message_id!r}; "
        "pass the id or message_id of a turn of this host's store",
        id=turn_or_message_id,
    )


def unknown_session(session_id: str) -> UnknownSessionError:
    """What the host answers for a session id it does not hold (or a scope does not see)."""
    return UnknownSessionError(
        f"no session {session_id!r} in this host or its store; use an id from "
        "host.sessions.create() or a handle's .id",
        session_id=session_id,
    )


def record_ref(record: MemoryRecord) -> RecordRef:
    """The `RecordRef` of a record."""
    return RecordRef(record_id=record.id, session_id=record.session_id, kind=record.kind)


def is_record_id(value: object) -> bool:
    """Whether ``value`` names a memory record (``mem_...``) rather than a turn or message."""
    return isinstance(value, str) and value.startswith("mem_")


async def find_record(store: Store, record_id: object) -> MemoryRecord:
    """The memory record with this id; `UnknownRecordError` otherwise (shaped like a missing turn's)."""
    if not isinstance(record_id, str) or not record_id or unstorable_text(record_id):
        raise UnknownRecordError(
            f"a memory record is named by its id (a non-empty str of valid text), got {show(record_id)}; "
            "pass record.id",
            id=show(record_id),
        )
    found = await store.get_record(record_id) if isinstance(store, RecordStore) else None
    if found is None:
        raise unknown_record(record_id)
    return found


def unknown_record(record_id: str) -> UnknownRecordError:
    """What the host answers for a record id it does not hold (or a scope does not see)."""
    return UnknownRecordError(
        f"no memory record by this id in this host: {record_id!r}; "
        "pass the id of a memory record of this host's store (record.id)",
        id=record_id,
    )


async def resting_records(
    store: Store, turn_ids: Sequence[TurnId], record_ids: Sequence[RecordId] = ()
) -> list[MemoryRecord]:
    """Every record resting on these turns or records: those whose window holds one of the
    turns or that cite one, then, level by level, those derived from what was found (at any
    depth), each once. Read by index: costs what it returns (the one walk of forward and forget)."""
    if not isinstance(store, RecordStore):
        return []
    found: dict[RecordId, MemoryRecord] = {}
    level = [*await store.records_on_turns(turn_ids), *await store.records_derived_from(record_ids)]
    while level:
        fresh = [r for r in level if r.id not in found]
        found.update((r.id, r) for r in fresh)
        level = list(await store.records_derived_from([r.id for r in fresh])) if fresh else []
    return list(found.values())


async def retract_summaries(store: Store, turn_id: TurnId, at: datetime) -> list[MemoryRecord]:
    """Retract the summaries resting on a retracted turn (and those derived from them): the
    next model call that needs them compacts again, from the turns as they are now. Returns
    the records this call retracted (not those another call retracted first)."""
    if not isinstance(store, RecordStore):
        return []
    retracted: list[MemoryRecord] = []
    for record in await resting_records(store, [turn_id]):
        if record.kind == "summary" and record.retracted_at is None and record.erased_at is None:
            done = await store.retract_record(record.id, at, f"it rests on turn {turn_id!r}, which was retracted")
            if done.retracted_at == at:
                retracted.append(done)
    return retracted


async def _forward_record(store: Store, record: MemoryRecord) -> tuple[Provenance, list[MemoryRecord]]:
    derived = [r for r in await resting_records(store, (), (record.id,)) if r.id != record.id]
    provenance = Provenance(
        of=record_ref(record), sessions=(), turns=(), spawns=(), edges=(), records=tuple(record_ref(r) for r in derived)
    )
    return provenance, derived


async def _backward_record(store: Store, record: MemoryRecord) -> RecordOrigin:
    assert isinstance(store, RecordStore)  # find_record found it
    refs: dict[TurnId, TurnRef] = {}
    for turn_id in await store.rests_on(record.id):
        turn = await store.find_turn(turn_id)
        if turn is not None:
            refs[turn.id] = _ref(turn)
    parents = [await store.get_record(p) for p in record.derived_from]
    return RecordOrigin(
        of=record_ref(record),
        read_from=tuple(sorted(refs.values(), key=lambda ref: ref.ordinal)),
        passages=() if record.read_from is None else (record.read_from,),
        records=tuple(record_ref(p) for p in parents if p is not None),
    )


async def _forward(
    store: Store, turn: TurnRecord
) -> tuple[list[TurnRecord], list[TurnRecord], Provenance, list[TurnRecord]]:
    """The one walk behind `forward` and `forget`: holders breadth-first, then what rests on
    the turn; the turns still running that will (or the turn itself, if it runs); and the
    later turns that failed with an error after their model saw it (an error may quote it)."""
    holders = [turn.session_id]
    level = [turn.session_id]
    while level:  # breadth-first over forks that inherit the turn; iterative, any depth
        following: list[SessionId] = []
        for session_id in level:
            for child in await store.child_sessions(session_id):
                lineage = child.lineage
                if lineage.kind == "fork" and lineage.parent_turn_ordinal >= turn.ordinal:
                    following.append(child.id)
        holders += following
        level = following
    resting: list[TurnRecord] = []
    failed: list[TurnRecord] = []
    running = [turn] if turn.status == "running" else []
    if turn.status == "completed":  # a model sees completed turns only
        for session_id in holders:
            later = await store.turns_since(session_id, turn.ordinal + 1)
            resting += (t for t in later if t.status == "completed")
            running += (t for t in later if t.status == "running")
            failed += (t for t in later if t.status not in ("completed", "running") and t.error is not None)
    spawns = tuple(s.id for s in await store.spawned_during(turn.id))
    edges = tuple(await store.find_edges("turn", turn.id))
    records = await resting_records(store, [turn.id, *(t.id for t in resting)])
    provenance = Provenance(
        of=_ref(turn),
        sessions=tuple(holders),
        turns=tuple(_ref(t) for t in resting),
        spawns=spawns,
        edges=edges,
        records=tuple(record_ref(r) for r in records),
    )
    return running, resting, provenance, failed


async def forward(store: Store, turn_or_message_id: object) -> Provenance:
    """What the host made of a turn or a memory record (see `Provenance`)."""
    if is_record_id(turn_or_message_id):
        return (await _forward_record(store, await find_record(store, turn_or_message_id)))[0]
    turn = await find_turn(store, turn_or_message_id)
    return (await _forward(store, turn))[2]


async def backward_record(store: Store, record_id: object) -> RecordOrigin:
    """Where a memory record came from (see `RecordOrigin`)."""
    return await _backward_record(store, await find_record(store, record_id))


async def backward(store: Store, turn_or_message_id: object) -> TurnOrigin:
    """What a turn's reply was read from (see `TurnOrigin`)."""
    turn = await find_turn(store, turn_or_message_id)
    chain: list[SessionId] = []
    segments: list[list[TurnRecord]] = []
    session_id: SessionId | None = turn.session_id
    below = turn.ordinal  # turns strictly before this ordinal were in its history
    while session_id is not None:  # up the fork chain, iteratively
        chain.append(session_id)
        segments.append([t for t in await store.get_turns(session_id) if t.ordinal < below and t.status == "completed"])
        record = await store.get_session(session_id)
        if record is None or record.lineage.kind != "fork":
            break
        below = min(below, record.lineage.parent_turn_ordinal + 1)
        session_id = record.lineage.parent_session_id
    read_from = tuple(_ref(t) for segment in reversed(segments) for t in segment)
    return TurnOrigin(of=_ref(turn), read_from=read_from, sessions=tuple(chain))


def _typed(invocation: Invocation) -> str:
    """What the user typed to run a slash command (``host.submit`` and jobs keep that text)."""
    return f"/{invocation.command_id}" + ("" if invocation.argument is None else f" {invocation.argument}")


async def _running_job(integrator_store: IntegratorStore | None, sessions: Iterable[SessionId]) -> JobRecord | None:
    """A job of one of ``sessions`` still running (its record is written when it ends), or ``None``."""
    if integrator_store is None:
        return None
    for session_id in dict.fromkeys(sessions):
        jobs, _ = await integrator_store.page_jobs(session_id, "running", {}, 1, None)  # served by an index
        if jobs:
            return jobs[0]
    return None


async def _refuse_running(
    integrator_store: IntegratorStore | None, running: Iterable[TurnRecord], sessions: Iterable[SessionId], what: str
) -> None:
    """Raise `TurnRunningError` for a turn still running that rests on what is erased (its
    reply would keep the text), or a job of an affected session still running (its record
    is written when it ends)."""
    busy = next(iter(running), None)
    if busy is not None:
        raise TurnRunningError(
            f"turn {busy.id!r} of session {busy.session_id!r} is still running, and {what} reaches that "
            "session; wait for it (await turn.completed()) or cancel it, then erase again",
            session_id=busy.session_id,
            running_id=busy.id,
        )
    job = await _running_job(integrator_store, sessions)
    if job is not None:
        raise TurnRunningError(
            f"job {job.id!r} of session {job.session_id!r} is still running, and {what} reaches that "
            "session; wait for it (await job.wait()) or cancel it, then erase again",
            session_id=job.session_id,
            running_id=job.id,
        )


_QUOTE_MIN: Final = 8
"""Erased text shorter than this (characters) is too common to tell a quote of it in an error."""


def _texts(turn: TurnRecord) -> list[str]:
    """The text of a turn an error may quote: what was asked (a notification's title and body) and the reply."""
    message = turn.message
    found = [turn.reply or ""]
    if isinstance(message, AiNotificationMessage):
        found += [message.title, message.body or ""]
    else:
        found.append(message.text)
    return [t for t in found if len(t) >= _QUOTE_MIN]


async def _quoting(
    store: Store,
    integrator_store: IntegratorStore | None,
    planned: Sequence[TurnRecord],
    failed: Iterable[TurnRecord],
    sessions: Iterable[SessionId],
) -> frozenset[tuple[str, str]]:
    """The ``(table, id)`` of the errors an erasure of ``planned`` erases while their rows
    keep their own text: every ``failed`` turn (its model saw a planned turn; a model error
    quotes what it was given) and the jobs that ran them, and each turn, invocation and job
    of ``sessions`` whose error holds a planned turn's text verbatim."""
    skip = {t.id for t in planned}
    texts = {x for t in planned if t.erased_at is None for x in _texts(t)}

    def quotes(error: str | None) -> bool:
        return error is not None and error != ERASED_LABEL and any(x in error for x in texts)

    found: set[tuple[str, str]] = {("turns", t.id) for t in failed if t.id not in skip and t.error not in (None, ERASED_LABEL)}
    for session_id in dict.fromkeys(sessions):
        if texts:
            found.update(("turns", t.id) for t in await store.get_turns(session_id) if t.id not in skip and quotes(t.error))
        if integrator_store is None:
            continue
        if texts:
            found.update(("invocations", i.id) for i in await integrator_store.invocations_of(session_id) if quotes(i.error))
        before: int | None = None
        while True:  # the session's jobs, newest first, a page at a time
            jobs, before = await integrator_store.page_jobs(session_id, None, {}, 500, before)
            found.update(
                ("jobs", j.id)
                for j in jobs
                if (("turns", j.turn_id) in found and j.error not in (None, ERASED_LABEL)) or quotes(j.error)
            )
            if before is None:
                break
    return frozenset(found)


async def _erase(
    store: Store,
    integrator_store: IntegratorStore | None,
    turns: Iterable[TurnRecord],
    edges: Iterable[LineageEdge],
    *,
    failed: Iterable[TurnRecord] = (),
    sessions: Iterable[SessionId] = (),
    deleted: Iterable[SessionId] = (),
    memory: Iterable[RecordId] = (),
    now: Callable[[], datetime],
    facts: LineageFacts,
) -> None:
    """The one erasure walk: carry out a plan over every place the store keeps text
    (stores/_erasure.py ``PLACES``) in one store transaction, then tell the host.

    Planned turns lose their text (those not erased already), the artifacts citing them
    their labels; the commands typed where they were asked, the jobs that ran them, the
    actions their replies proposed, and everything of the ``deleted`` sessions lose theirs.
    The errors that quote that text lose it too (`_quoting`: the ``failed`` turns that saw
    a planned turn, and what quotes it verbatim in the reached ``sessions``); the host is
    told of those turns as well (``facts.erased`` gets them with their error erased and no
    ``erased_at``), of the memory records erased (``memory``), and of the erasure (what the
    host keeps of events goes too).
    """
    memory = tuple(dict.fromkeys(memory))
    at = now()
    planned = list(turns)
    failed = list(failed)
    errors = await _quoting(store, integrator_store, planned, failed, sessions)
    records = tuple(erased(t, at) for t in planned if t.erased_at is None)
    citing = {(e.from_session_id, e.to_session_id): e for e in edges}
    for record in records:  # a fork anchored at a resting turn cites it: its label is derived from it
        citing.update(((e.from_session_id, e.to_session_id), e) for e in await store.find_edges("turn", record.id))
    rewritten = tuple(
        attrs.evolve(e, artifact=LineageArtifact(type=e.artifact.type, source_id=e.artifact.source_id, label=ERASED_LABEL))
        for e in citing.values()
        if e.artifact is not None and e.artifact.label != ERASED_LABEL
    )
    positions = frozenset((t.session_id, t.ordinal) for t in planned)
    commands: set[tuple[SessionId, str]] = set()
    if integrator_store is not None:
        for session_id in dict.fromkeys(t.session_id for t in planned):
            commands.update(
                (session_id, _typed(i))
                for i in await integrator_store.invocations_of(session_id)
                if (session_id, i.position) in positions and i.erased_at is None
            )
    erasure = Erasure(
        at=at,
        turns=records,
        edges=rewritten,
        turn_ids=frozenset(t.id for t in planned),
        positions=positions,
        commands=frozenset(commands),
        sessions=frozenset(deleted),
        errors=errors,
        records=frozenset(memory),
    )
    fresh: list[MemoryRecord] = []  # the records this erasure erases (not erased before), one read by key each
    if memory and isinstance(store, RecordStore):
        for record_id in memory:
            found_record = await store.get_record(record_id)
            if found_record is not None and found_record.erased_at is None:
                fresh.append(found_record)
    with facts.erasure(records, memory):  # its turn_erased events commit with it (docs/embedding.md)
        await store.erase(erasure)
        if integrator_store is not None and not isinstance(store, IntegratorStore):  # kept apart from the store (MemoryIntegratorStore)
            await integrator_store.erase(erasure)
        erased_ids = {t.id for t in records}
        quoted: list[TurnRecord] = []
        for table, row_id in sorted(errors):
            found = await store.find_turn(row_id) if table == "turns" and row_id not in erased_ids else None
            if found is not None:
                quoted.append(found)
        facts.erased((*records, *quoted), erasure, memory)
    if fresh and not records:  # no turn_erased names them (a record forgotten alone, or resting on erased turns)
        facts.forgotten(fresh)


@attrs.frozen(kw_only=True)
class _Plan:
    """What one erasure reaches, read from the store. Immutable.

    ``planned``: the turns it erases (those erased before included); ``running``: turns
    still running that would keep the text; ``holders``: the sessions it reaches;
    ``failed``: later failed turns whose model saw a planned turn; ``deleted``: the
    sessions it deletes; ``records``: the memory records resting on what it erases
    (docs/memory.md), erased in the same transaction.
    """

    planned: tuple[TurnRecord, ...]
    running: tuple[TurnRecord, ...]
    edges: tuple[LineageEdge, ...]
    holders: tuple[SessionId, ...]
    failed: tuple[TurnRecord, ...]
    deleted: tuple[SessionId, ...] = ()
    records: tuple[RecordId, ...] = ()

    def done(self) -> bool:
        """Whether every text it reaches is erased already (a later failed turn's error included)."""
        return all(t.erased_at is not None for t in self.planned) and all(
            t.error in (None, ERASED_LABEL) for t in self.failed
        )


async def _turn_plan(store: Store, turn: TurnRecord) -> tuple[_Plan, Provenance]:
    running, resting, provenance, failed = await _forward(store, turn)
    plan = _Plan(
        planned=(turn, *resting),
        running=tuple(running),
        edges=provenance.edges,
        holders=provenance.sessions,
        failed=tuple(failed),
        records=tuple(r.record_id for r in provenance.records),
    )
    return plan, provenance


async def _session_plan(store: Store, session_id: SessionId) -> _Plan:
    """The union of the plans of a session's own turns, and the edges integrators gave it."""
    own = await store.get_turns(session_id)
    planned: dict[TurnId, TurnRecord] = {}
    edges: dict[tuple[SessionId, SessionId], LineageEdge] = {}
    holders: dict[SessionId, None] = {session_id: None}
    running: list[TurnRecord] = []
    failed: dict[TurnId, TurnRecord] = {}
    records: dict[RecordId, None] = {}
    for turn in own:
        busy, resting, provenance, later_failed = await _forward(store, turn)
        records.update(dict.fromkeys(r.record_id for r in provenance.records))
        running += busy
        failed.update((t.id, t) for t in later_failed)
        holders.update(dict.fromkeys(provenance.sessions))
        for record in (turn, *resting):
            planned.setdefault(record.id, record)
        for edge in provenance.edges:
            edges[edge.from_session_id, edge.to_session_id] = edge
    for direction in ("out", "in"):  # the labels integrators gave the session's own edges
        for edge in await store.get_edges([session_id], direction):
            if edge.relation in HOST_RELATIONS and edge.artifact is not None:
                edges[edge.from_session_id, edge.to_session_id] = edge
    return _Plan(
        planned=tuple(planned.values()),
        running=tuple(running),
        edges=tuple(edges.values()),
        holders=tuple(holders),
        failed=tuple(failed.values()),
        deleted=(session_id,),
        records=tuple(records),
    )


async def _carry_out(
    store: Store, integrator_store: IntegratorStore | None, plan: _Plan, what: str, now: Callable[[], datetime], facts: LineageFacts
) -> None:
    """Refuse while a turn or job runs in what ``plan`` reaches, else erase it.

    On a shared store another host's erasure of the same turns may commit first; the store
    then refuses this one (a turn is erased once) and `_latecomers` erases what is left."""
    await _refuse_running(integrator_store, plan.running, plan.holders, what)
    try:
        await _erase(
            store, integrator_store, plan.planned, plan.edges, failed=plan.failed, sessions=plan.holders, deleted=plan.deleted,
            memory=plan.records, now=now, facts=facts,
        )
    except StoreError:
        if not isinstance(store, SharedStore):
            raise


LATECOMER_WAIT: Final = 30.0
"""Seconds an erasure on a shared store waits for a session's lock, or a job's record, while it erases."""
_RETRIES: Final = 3  # erasures refused because another host's erased the same turns first


async def _latecomers(
    store: Store,
    integrator_store: IntegratorStore | None,
    replan: Callable[[], Awaitable[_Plan]],
    what: str,
    now: Callable[[], datetime],
    facts: LineageFacts,
) -> None:
    """On a store several hosts share, erase what another host's turns made of the text while
    this erasure ran (docs/embedding.md), before the erasure returns.

    This host begins no turn while it erases (`LineageFacts.erasing`), but another host may:
    a turn that took its session's lock before the erasure committed read the history before
    it. So once it has committed, the erasure takes (and lets go) the lock of every session
    it reaches, in turn: a turn that held one has then finished, its events written, and one
    that takes it later reads the erasure generation it moved, so its history is erased.
    Then it reads the plan again and erases what those turns made of the text, and the job
    records of the jobs that ran them once they are written, holding the gate again; a fork
    made meanwhile is locked and read the same way. Raises `TurnRunningError` when a lock or
    a job's record is not there after `LATECOMER_WAIT` seconds (what was planned is erased;
    forget again once it has finished). Nothing to do on a single-host store: there the gate
    alone orders every turn.
    """
    if not isinstance(store, SharedStore):
        return
    locked: set[SessionId] = set()
    waited = 0.0
    refused = 0
    while True:
        plan = await replan()
        for session_id in [s for s in plan.holders if s not in locked]:
            with anyio.move_on_after(LATECOMER_WAIT):
                async with store.lock_session(session_id):
                    locked.add(session_id)  # the turns that read the text there have finished
            if session_id not in locked:
                raise TurnRunningError(
                    f"{what}: erased, but session {session_id!r} runs a turn that began meanwhile and has not "
                    f"finished in {LATECOMER_WAIT:.0f} s; wait for it (or cancel it), then erase again",
                    session_id=session_id,
                    running_id=next((t.id for t in plan.running if t.session_id == session_id), session_id),
                )
        async with facts.erasing():
            plan = await replan()
            if not set(plan.holders) <= locked:
                continue  # forked meanwhile: lock it first
            job = await _writing_job(integrator_store, plan)
            if job is None:
                if plan.done():
                    return
                try:
                    await _erase(
                        store, integrator_store, plan.planned, plan.edges, failed=plan.failed, sessions=plan.holders,
                        deleted=plan.deleted, memory=plan.records, now=now, facts=facts,
                    )
                except StoreError:  # another host erased some of it first: read the plan again
                    refused += 1
                    if refused > _RETRIES:
                        raise
                continue
        if waited >= LATECOMER_WAIT:
            raise TurnRunningError(
                f"{what}: erased, but job {job.id!r} of session {job.session_id!r}, which ran a turn that read "
                f"the erased text, has not written its record in {LATECOMER_WAIT:.0f} s; wait for it (or cancel "
                "it), then erase again",
                session_id=job.session_id,
                running_id=job.id,
            )
        await anyio.sleep(0.05)
        waited += 0.05


async def _writing_job(integrator_store: IntegratorStore | None, plan: _Plan) -> JobRecord | None:
    """A job still running whose turn is one ``plan`` erases: its record (its result: the
    turn's reply) is written once it ends, and must be erased then."""
    if integrator_store is None:
        return None
    planned = {t.id for t in plan.planned}
    for session_id in dict.fromkeys(t.session_id for t in plan.planned):
        before: int | None = None
        while True:
            jobs, before = await integrator_store.page_jobs(session_id, "running", {}, 500, before)
            found = next((j for j in jobs if j.turn_id in planned), None)
            if found is not None or before is None:
                break
        if found is not None:
            return found
    return None


async def delete_session(
    store: Store,
    integrator_store: IntegratorStore | None,
    session_id: SessionId,
    *,
    now: Callable[[], datetime],
    facts: LineageFacts,
    hide: Callable[[], Awaitable[None]],
) -> None:
    """Erase a deleted session: the union of its own turns' plans, computed by the same walk
    as `forget`, every other row of the session (invocations, jobs, actions, outputs) and
    the artifact labels of the edges integrators gave it, in one transaction; then ``hide``
    it (the deletion itself), still holding `LineageFacts.erasing`. Raises
    `TurnRunningError` while an affected session runs a turn."""
    what = f"deleting session {session_id!r}"
    async with facts.erasing():
        await _carry_out(store, integrator_store, await _session_plan(store, session_id), what, now, facts)
        await hide()
    await _latecomers(store, integrator_store, lambda: _session_plan(store, session_id), what, now, facts)


async def forget(
    store: Store,
    turn_or_message_id: object,
    *,
    dry_run: bool,
    now: Callable[[], datetime],
    facts: LineageFacts,
    integrator_store: IntegratorStore | None = None,
) -> ErasurePlan:
    """The erasure plan of a turn; with ``dry_run=False`` also carry it out, in one transaction.

    ``facts`` is told the erased records once they are durable (the host updates what it
    holds in memory) and holds its gate while the erasure runs; ``integrator_store`` is where
    invocations and jobs are kept (the store itself when it is an `IntegratorStore`). Raises
    `TurnRunningError` while a session the plan reaches runs a turn or a job.
    """
    if integrator_store is None and isinstance(store, IntegratorStore):
        integrator_store = store
    if not isinstance(dry_run, bool):
        raise InvalidArgumentError(f"dry_run must be True or False, got {dry_run!r}", argument="dry_run", value=dry_run)
    if is_record_id(turn_or_message_id):  # a record and what rests on it, never the turns it was read from
        record = await find_record(store, turn_or_message_id)
        forward_of, _ = await _forward_record(store, record)
        listed = (record_ref(record), *forward_of.records)
        if not dry_run:
            async with facts.erasing():  # erased and told while no turn of this host begins
                await _erase(store, integrator_store, (), (), memory=(r.record_id for r in listed), now=now, facts=facts)
        return ErasurePlan(of=forward_of.of, turns=(), sessions=(), spawns=(), edges=(), erased=not dry_run, records=listed)
    turn = await find_turn(store, turn_or_message_id)
    if dry_run:
        return _plan_shown(*await _turn_plan(store, turn), erased=False)
    what = f"forgetting turn {turn.id!r}"
    async with facts.erasing():  # planned, erased and told while no turn of this host begins
        turn = await find_turn(store, turn.id)  # as it is now: another erasure may have run meanwhile
        plan, provenance = await _turn_plan(store, turn)
        await _carry_out(store, integrator_store, plan, what, now, facts)
    async def replan() -> _Plan:
        return (await _turn_plan(store, await find_turn(store, turn.id)))[0]

    await _latecomers(store, integrator_store, replan, what, now, facts)
    shown = _plan_shown(plan, provenance, erased=True)
    return attrs.evolve(shown, edges=tuple(await store.find_edges("turn", turn.id)))


def _plan_shown(plan: _Plan, provenance: Provenance, *, erased: bool) -> ErasurePlan:
    return ErasurePlan(
        of=provenance.of,
        turns=(_ref(plan.planned[0]), *provenance.turns),
        sessions=provenance.sessions,
        spawns=provenance.spawns,
        edges=provenance.edges,
        erased=erased,
        records=provenance.records,
    )

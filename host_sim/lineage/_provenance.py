"""Provenance and forget: what the host made of a turn, what a turn was read from, and erasing exactly that.

One walk answers both "what did this become" and "what does forgetting it remove": `forward`
and `forget` call the same `_forward`, so the plan a user is shown before an erasure is
exactly what the erasure removes (seed 001: lineage and forget walk the same edges).

Every answer is read from the store by key, so it holds for sessions this host never
touched: a session's own turns, its children, the edges citing a turn.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from datetime import datetime
from typing import TYPE_CHECKING

import attrs

from modular_sdk import SessionId, TurnId, UnknownTurnError
from modular_sdk._rules import show, unstorable_text

from ._types import LineageArtifact, LineageEdge

if TYPE_CHECKING:
    from ..stores._protocol import Store
    from ..stores._records import TurnRecord

__all__ = ["ErasurePlan", "Provenance", "TurnOrigin", "TurnRef", "backward", "forget", "forward", "find_turn"]


@attrs.frozen(kw_only=True)
class TurnRef:
    """Which turn: the session that ran it, its id and its ordinal. Immutable."""

    session_id: SessionId
    turn_id: TurnId
    ordinal: int


@attrs.frozen(kw_only=True)
class Provenance:
    """What the host made of a turn (``host.lineage.forward``). Immutable.

    ``sessions``: every session whose history holds the turn, the one that ran it first, then
    its forks that inherit it, breadth-first (creation order within a level). ``turns``:
    every later completed turn in those sessions whose model saw it, ordered by (session
    order, ordinal). ``spawns``: sessions spawned by a tool call the turn made. ``edges``:
    lineage edges whose artifact cites the turn (every fork anchored at it has one).
    """

    of: TurnRef
    sessions: tuple[SessionId, ...]
    turns: tuple[TurnRef, ...]
    spawns: tuple[SessionId, ...]
    edges: tuple[LineageEdge, ...]


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
    """

    of: TurnRef
    turns: tuple[TurnRef, ...]
    sessions: tuple[SessionId, ...]
    spawns: tuple[SessionId, ...]
    edges: tuple[LineageEdge, ...]
    erased: bool


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
        raise UnknownTurnError(
            f"no turn or message by this id in this host: {turn_or_message_id!r}; "
            "pass the id or message_id of a turn of this host's store",
            id=turn_or_message_id,
        )
    return found


async def _forward(store: Store, turn: TurnRecord) -> tuple[tuple[SessionId, ...], list[TurnRecord], Provenance]:
    """The one walk behind `forward` and `forget`: holders breadth-first, then what rests on the turn."""
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
    if turn.status == "completed":  # a model sees completed turns only
        for session_id in holders:
            resting += (t for t in await store.turns_since(session_id, turn.ordinal + 1) if t.status == "completed")
    spawns = tuple(s.id for s in await store.spawned_during(turn.id))
    edges = tuple(await store.find_edges("turn", turn.id))
    provenance = Provenance(
        of=_ref(turn),
        sessions=tuple(holders),
        turns=tuple(_ref(t) for t in resting),
        spawns=spawns,
        edges=edges,
    )
    return tuple(holders), resting, provenance


async def forward(store: Store, turn_or_message_id: object) -> Provenance:
    """What the host made of a turn (see `Provenance`)."""
    turn = await find_turn(store, turn_or_message_id)
    return (await _forward(store, turn))[2]


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


async def _erase(
    store: Store,
    turns: Iterable[TurnRecord],
    edges: Iterable[LineageEdge],
    *,
    now: Callable[[], datetime],
    applied: Callable[[Sequence[TurnRecord]], None],
) -> None:
    """Carry out a plan in one store transaction: its turns lose their text (those not
    erased already), the artifacts citing them their labels; then tell the host."""
    from ..stores._invariants import ERASED_LABEL, erased

    at = now()
    records = [erased(t, at) for t in turns if t.erased_at is None]
    rewritten = [
        attrs.evolve(e, artifact=LineageArtifact(type=e.artifact.type, source_id=e.artifact.source_id, label=ERASED_LABEL))
        for e in edges
        if e.artifact is not None and e.artifact.label != ERASED_LABEL
    ]
    await store.erase(records, rewritten)
    applied(records)


async def erase_turns(
    store: Store,
    turns: Sequence[TurnRecord],
    *,
    now: Callable[[], datetime],
    applied: Callable[[Sequence[TurnRecord]], None],
) -> None:
    """Forget several turns at once (a deleted session's own turns): the union of their
    plans, computed by the same walk as `forget`, erased in one transaction."""
    planned: dict[TurnId, TurnRecord] = {}
    edges: dict[tuple[SessionId, SessionId], LineageEdge] = {}
    for turn in turns:
        if turn.status == "running":
            raise ValueError(
                f"turn {turn.id!r} of session {turn.session_id!r} is still running; "
                "delete the session once its turns have finished"
            )
        _, resting, provenance = await _forward(store, turn)
        for record in (turn, *resting):
            planned.setdefault(record.id, record)
        for edge in provenance.edges:
            edges[edge.from_session_id, edge.to_session_id] = edge
    await _erase(store, planned.values(), edges.values(), now=now, applied=applied)


async def forget(
    store: Store,
    turn_or_message_id: object,
    *,
    dry_run: bool,
    now: Callable[[], datetime],
    applied: Callable[[Sequence[TurnRecord]], None],
) -> ErasurePlan:
    """The erasure plan of a turn; with ``dry_run=False`` also carry it out, in one transaction.

    ``applied`` is told the erased records once they are durable (the host updates what it
    holds in memory). Raises `ValueError` naming a planned turn that is still running.
    """
    if not isinstance(dry_run, bool):
        raise TypeError(f"dry_run must be True or False, got {dry_run!r}")
    turn = await find_turn(store, turn_or_message_id)
    _, resting, provenance = await _forward(store, turn)
    planned = [turn, *resting]
    plan = ErasurePlan(
        of=provenance.of,
        turns=(provenance.of, *provenance.turns),
        sessions=provenance.sessions,
        spawns=provenance.spawns,
        edges=provenance.edges,
        erased=not dry_run,
    )
    if dry_run:
        return plan
    running = [t for t in planned if t.status == "running"]
    if running:
        raise ValueError(
            f"turn {running[0].id!r} of session {running[0].session_id!r} is still running; "
            "forget it once it has finished (await turn.completed())"
        )
    await _erase(store, planned, provenance.edges, now=now, applied=applied)
    return attrs.evolve(plan, edges=tuple(await store.find_edges("turn", turn.id)))

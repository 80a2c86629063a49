"""The one invariant checker of a store, and the one function that derives its lineage index.

`check` is what ``host-sim fsck`` runs, what a host runs when it opens a store whose index
is of another `INDEX_VERSION`, and what the tests run after every step of their state
machines and after every crash. `derive_index`
is what ``fsck --repair`` and a host opening a store with a stale index write back.

Authoritative data (session and turn records) can only be reported; derived data (the
lineage index: one node per session, the ``branched_from`` and ``spawned_by`` edges) can be
rebuilt from it, and turns a crash left ``running`` can be marked failed.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from datetime import datetime
from typing import Final

from modular_sdk import SessionId

from ._errors import StoreError
from ._protocol import INDEX_VERSION, Store

# The record algebra (erased, interrupted, Violation ...) lives in ``_records``, the bottom
# floor; these names stay importable from here for the tests that read them here.
from ._records import (
    ERASED_LABEL,
    INTERRUPTED,
    LineageEdge,
    SessionNode,
    SessionRecord,
    StoredState,
    TurnRecord,
    Violation,
    ViolationCode,
    erased,
    fork_artifact,
    interrupted,
)
from ._renamed import turns_left_running
from ._shared import SharedStore

__all__ = [
    "ERASED_LABEL",
    "INTERRUPTED",
    "Violation",
    "check",
    "derive_index",
    "erased",
    "heal_index",
    "recover",
    "repair",
]

_STRUCTURAL: Final = frozenset({"branched_from", "spawned_by"})


class _Records:
    """Sessions by id and each session's own turns by ordinal, to walk fork chains."""

    def __init__(self, state: StoredState) -> None:
        self.sessions: dict[SessionId, SessionRecord] = {s.id: s for s in state.sessions}
        self.own: dict[SessionId, dict[int, TurnRecord]] = {}
        self.duplicates: list[TurnRecord] = []
        for turn in state.turns:
            ordinals = self.own.setdefault(turn.session_id, {})
            if turn.ordinal in ordinals:
                self.duplicates.append(turn)
            else:
                ordinals[turn.ordinal] = turn

    def turn_at(self, session_id: SessionId, ordinal: int) -> TurnRecord | None:
        """The turn at ``ordinal`` of a session's history, walking up its fork chain."""
        seen: set[SessionId] = set()
        current = self.sessions.get(session_id)
        while current is not None and current.id not in seen:
            seen.add(current.id)
            turn = self.own.get(current.id, {}).get(ordinal)
            if turn is not None:
                return turn
            lineage = current.lineage
            if lineage.kind != "fork" or ordinal > lineage.parent_turn_ordinal:
                return None
            current = self.sessions.get(lineage.parent_session_id)
        return None

    def depth(self, record: SessionRecord) -> int:
        lineage = record.lineage
        return 0 if lineage.kind == "root" else lineage.depth


def _implied_edge(records: _Records, record: SessionRecord) -> LineageEdge | None:
    lineage = record.lineage
    if lineage.kind == "root" or lineage.parent_session_id not in records.sessions:
        return None
    anchor = records.turn_at(lineage.parent_session_id, lineage.parent_turn_ordinal) if lineage.kind == "fork" else None
    return _structural_edge(record, anchor)


def _structural_edge(record: SessionRecord, anchor: TurnRecord | None) -> LineageEdge | None:
    """The ``branched_from`` (with its ``anchor`` turn, when found) or ``spawned_by`` edge of a fork or spawn."""
    lineage = record.lineage
    if lineage.kind == "root":
        return None
    if lineage.kind == "spawn":
        return LineageEdge(
            from_session_id=lineage.parent_session_id,
            to_session_id=record.id,
            relation="spawned_by",
            created_at=lineage.spawned_at,
        )
    return LineageEdge(
        from_session_id=lineage.parent_session_id,
        to_session_id=record.id,
        relation="branched_from",
        created_at=lineage.forked_at,
        artifact=None if anchor is None else fork_artifact(anchor.id, anchor.ordinal, erased=anchor.erased_at is not None),
    )


def _implied_node(record: SessionRecord, old: SessionNode | None) -> SessionNode:
    if old is not None and old.created_at == record.created_at and old.agent_id == record.agent_id:
        return old
    return SessionNode(
        session_id=record.id,
        created_at=record.created_at,
        agent_id=record.agent_id,
        summary=None if old is None else old.summary,
        completed_at=None if old is None else old.completed_at,
        metrics=None if old is None else old.metrics,
    )


async def heal_index(store: Store, record: SessionRecord) -> SessionNode:
    """Write back the lineage node (and the fork's or spawn's edge, when missing too) that
    ``record`` implies: derived rows a read found missing, rebuilt by key like `derive_index`
    would. Returns the node. Raises `StoreError` naming ``host-sim fsck --repair`` when the
    store cannot be written (a read-only store)."""
    node = _implied_node(record, None)
    lineage = record.lineage
    edge: LineageEdge | None = None
    if lineage.kind != "root" and await store.get_session(lineage.parent_session_id) is not None:
        incoming = await store.get_edges([record.id], "in")
        if not any(e.from_session_id == lineage.parent_session_id for e in incoming):
            anchor = None
            if lineage.kind == "fork":
                anchor = await _turn_by_key(store, lineage.parent_session_id, lineage.parent_turn_ordinal)
            edge = _structural_edge(record, anchor)
    try:
        await store.save_node(node)
        if edge is not None:
            await store.save_edge(edge)
    except StoreError as exc:
        raise StoreError(
            f"session {record.id!r} is stored but its lineage node is missing (derived data, "
            f"rebuildable from its record), and it cannot be rebuilt here: {exc}; rebuild the "
            "index with 'host-sim fsck --repair --store STORE'",
            path=exc.path,
        ) from exc
    return node


async def _turn_by_key(store: Store, session_id: SessionId, ordinal: int) -> TurnRecord | None:
    """The turn at ``ordinal`` of a session's history, read up its fork chain by key."""
    seen: set[SessionId] = set()
    current = await store.get_session(session_id)
    while current is not None and current.id not in seen:
        seen.add(current.id)
        own = await store.turns_since(current.id, ordinal)
        if own and own[0].ordinal == ordinal:
            return own[0]
        lineage = current.lineage
        if lineage.kind != "fork" or ordinal > lineage.parent_turn_ordinal:
            return None
        current = await store.get_session(lineage.parent_session_id)
    return None


def derive_index(state: StoredState) -> tuple[tuple[SessionNode, ...], tuple[LineageEdge, ...]]:
    """The lineage index the records imply: what a store's nodes and edges must be.

    One node per session (keeping the completion and summary an earlier node held); the
    ``branched_from`` edge of every fork (its artifact the anchor turn) and the
    ``spawned_by`` edge of every spawn; and every other stored edge whose two sessions
    exist and which does not shadow a structural edge. Stored order is kept; missing
    structural edges follow in session order.
    """
    records = _Records(state)
    old_nodes = {n.session_id: n for n in state.nodes}
    nodes = tuple(_implied_node(r, old_nodes.get(r.id)) for r in state.sessions)
    implied: dict[tuple[SessionId, SessionId], LineageEdge] = {}
    for record in state.sessions:
        edge = _implied_edge(records, record)
        if edge is not None:
            implied[edge.from_session_id, edge.to_session_id] = edge
    edges: list[LineageEdge] = []
    placed: set[tuple[SessionId, SessionId]] = set()
    for edge in state.edges:
        pair = (edge.from_session_id, edge.to_session_id)
        if pair in placed:
            continue
        if pair in implied:
            edges.append(implied[pair])
            placed.add(pair)
        elif (
            edge.relation not in _STRUCTURAL
            and edge.from_session_id in records.sessions
            and edge.to_session_id in records.sessions
            and edge.from_session_id != edge.to_session_id
        ):
            edges.append(edge)
            placed.add(pair)
    edges.extend(edge for pair, edge in implied.items() if pair not in placed)
    return nodes, tuple(edges)


def _index_problems(
    state: StoredState, nodes: Sequence[SessionNode], edges: Sequence[LineageEdge]
) -> Iterable[Violation]:
    def stale(subject: str, message: str) -> Violation:
        return Violation(code="index-stale", subject=subject, message=message, repairable=True)

    have_nodes: Mapping[SessionId, SessionNode] = {n.session_id: n for n in state.nodes}
    want_nodes = {n.session_id: n for n in nodes}
    for session_id, node in want_nodes.items():
        got = have_nodes.get(session_id)
        if got is None:
            yield stale(session_id, f"session {session_id!r} has no lineage node")
        elif got != node:
            yield stale(session_id, f"the lineage node of session {session_id!r} does not match its record")
    for session_id in have_nodes.keys() - want_nodes.keys():
        yield stale(session_id, f"lineage node {session_id!r} belongs to no session")
    if len(state.nodes) != len(have_nodes):
        yield stale("nodes", "a session has more than one lineage node")
    have_edges = {(e.from_session_id, e.to_session_id): e for e in state.edges}
    want_edges = {(e.from_session_id, e.to_session_id): e for e in edges}
    for (source, target), edge in want_edges.items():
        got_edge = have_edges.get((source, target))
        if got_edge is None:
            yield stale(target, f"the {edge.relation!r} edge {source!r} -> {target!r} is missing")
        elif got_edge != edge:
            yield stale(target, f"the edge {source!r} -> {target!r} does not match what the records imply")
    for source, target in have_edges.keys() - want_edges.keys():
        relation = have_edges[source, target].relation
        yield stale(target, f"the {relation!r} edge {source!r} -> {target!r} is implied by no record")


def check(state: StoredState) -> list[Violation]:
    """Every broken invariant of ``state``, authoritative damage first; empty when sound.

    Checked: each fork or spawn names a parent the store holds and has depth = parent + 1;
    each fork's anchor turn exists in its parent's history, is completed, and matches the
    lineage's runner and message ids; each session's own turns have unique, contiguous
    ordinals starting right after its anchor (0 for roots and spawns); no turn belongs to
    an unknown session; no turn is left ``running``; the lineage index equals
    `derive_index`.
    """
    records = _Records(state)
    found: list[Violation] = []

    def damage(code: ViolationCode, subject: str, message: str) -> None:
        found.append(Violation(code=code, subject=subject, message=message, repairable=False))

    for record in state.sessions:
        lineage = record.lineage
        if lineage.kind == "root":
            continue
        parent = records.sessions.get(lineage.parent_session_id)
        if parent is None:
            damage(
                "unknown-parent",
                record.id,
                f"session {record.id!r} is a {lineage.kind} of {lineage.parent_session_id!r}, "
                "which the store does not hold",
            )
            continue
        if lineage.depth != records.depth(parent) + 1:
            damage(
                "depth",
                record.id,
                f"session {record.id!r} has depth {lineage.depth}, but its parent "
                f"{parent.id!r} has depth {records.depth(parent)}",
            )
        if lineage.kind != "fork":
            continue
        anchor = records.turn_at(parent.id, lineage.parent_turn_ordinal)
        if anchor is None:
            damage(
                "anchor-missing",
                record.id,
                f"fork {record.id!r} continues after turn {lineage.parent_turn_ordinal} of "
                f"{parent.id!r}, which its history does not hold",
            )
        elif anchor.status != "completed":
            damage(
                "anchor-not-completed",
                record.id,
                f"fork {record.id!r} continues after turn {anchor.ordinal} ({anchor.id!r}), "
                f"which is {anchor.status}; only completed turns are anchors",
            )
        elif anchor.runner_id != lineage.parent_runner_id or lineage.parent_user_message_id not in (
            None,
            anchor.message_id,
        ):
            damage(
                "anchor-mismatch",
                record.id,
                f"fork {record.id!r} names runner {lineage.parent_runner_id!r} and message "
                f"{lineage.parent_user_message_id!r} for its anchor, but turn {anchor.id!r} has "
                f"{anchor.runner_id!r} and {anchor.message_id!r}",
            )
    for turn in records.duplicates:
        damage("ordinals", turn.id, f"session {turn.session_id!r} has two turns at ordinal {turn.ordinal}")
    for session_id, own in records.own.items():
        owner = records.sessions.get(session_id)
        if owner is None:
            for turn in own.values():
                damage("orphan-turn", turn.id, f"turn {turn.id!r} belongs to {session_id!r}, which the store does not hold")
            continue
        lineage = owner.lineage
        first = lineage.parent_turn_ordinal + 1 if lineage.kind == "fork" else 0
        ordinals = sorted(own)
        if ordinals != list(range(first, first + len(ordinals))):
            damage(
                "ordinals",
                session_id,
                f"the turns of session {session_id!r} have ordinals {_ranges(ordinals)}; "
                f"they must run contiguously from {first}",
            )
    for turn in state.turns:
        if turn.status == "running":
            found.append(
                Violation(
                    code="turn-running",
                    subject=turn.id,
                    message=f"turn {turn.ordinal} ({turn.id!r}) of session {turn.session_id!r} "
                    "was left running by a host that stopped; it will be marked failed",
                    repairable=True,
                )
            )
    nodes, edges = derive_index(state)
    found.extend(_index_problems(state, nodes, edges))
    return found


def _ranges(values: Sequence[int]) -> str:
    shown = ", ".join(str(v) for v in values[:8])
    return f"[{shown}{', ...' if len(values) > 8 else ''}]"


async def repair(store: Store, state: StoredState, clock: Callable[[], datetime]) -> None:
    """What ``fsck --repair`` does to a store whose records are sound: fails turns a crash
    left ``running`` and rebuilds the lineage index from the records (always: the repair is
    also how an index damaged by hand is made right again)."""
    for turn in state.turns:
        if turn.status == "running":
            await store.finish_turn(interrupted(turn, clock()))
    nodes, edges = derive_index(await store.read_all())
    await store.rebuild_index(nodes, edges)


async def recover(store: Store, clock: Callable[[], datetime]) -> None:
    """Make a store sound for a host to open, reading no more than it must.

    Marks turns a crash left ``running`` failed (`INTERRUPTED`), found through the store's
    index of running turns (on a `SharedStore`, the hosts' link does it once their host's
    claim has been gone for a grace period, with their events: it may be reconnecting). When the store says its lineage index was not built by this
    `INDEX_VERSION` (a store from an older host, or one ``fsck`` found stale but could not
    repair), reads every record once, checks it, and rebuilds the index; damage to the
    records themselves cannot be repaired: it raises `StoreError`, listing it.
    """
    if not isinstance(store, SharedStore):  # several hosts: a live host's link claims them after a grace
        for turn in await turns_left_running(store):  # (their host may only be reconnecting, docs/embedding.md)
            await store.finish_turn(interrupted(turn, clock()))
    if await store.index_version() == INDEX_VERSION:
        return
    state = await store.read_all()
    damage = [v for v in check(state) if not v.repairable]
    if damage:
        path = getattr(store, "path", None)
        where = f"the store {str(path)!r}" if path is not None else "the store"
        shown = "\n".join(f"  - {v.message}" for v in damage[:10])
        more = f"\n  ... and {len(damage) - 10} more" if len(damage) > 10 else ""
        raise StoreError(
            f"{where} is damaged ({len(damage)} broken invariant{'s' if len(damage) != 1 else ''}):\n"
            f"{shown}{more}\nthe records themselves are wrong, so no host can open it; see every "
            "problem with 'host-sim fsck --store PATH'",
            path=None if path is None else str(path),
        )
    nodes, edges = derive_index(state)
    await store.rebuild_index(nodes, edges)

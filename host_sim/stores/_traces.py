"""`TraceStore`: what a store offers to keep traces, their index, pending actions and spool ids.

A separate protocol from `Store`, so a store without it still hosts sessions: the host
checks ``isinstance(store, TraceStore)`` and, without it, answers ``host.traces`` (and
everything that needs traces) with `host_sim.TraceError` naming the store. `MemoryStore`,
`SqliteStore` and `PostgresStore` implement it.

Records are authoritative and written once, never changed (append-only): a trace (its
origin fixed at creation), the task a trace got (once), each session's link to its trace,
each output, the first commit of each output, each proposed action and its one outcome,
each applied spool event id; the one change allowed is an erasure (`TraceStore.erase`),
which takes the text out of an action's payload or an output's kind and keeps the rest. A
trace as the host shows it is assembled from them. The
reverse index (task ref, session, output, commit -> trace) is derived from the records:
written in the transaction that writes what it indexes, checked by `check_traces`, and
rebuilt from the records by `derive_trace_index` (``host-sim fsck --repair``, and a host
opening a store whose trace index was built by another `TRACE_INDEX_VERSION`, or never).
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from datetime import datetime
from typing import TYPE_CHECKING, Final, Protocol, runtime_checkable

from modular_sdk import SessionId, TurnId

from ._records import LineageEdge, SessionNode, SessionRecord, Violation

# The trace records live in ``_trace_records``, below every store module; these names stay
# importable from here for the tests that read them here.
from ._trace_records import (
    ActionOutcomeRecord,
    IndexKind,
    ProposedActionRecord,
    TraceCommitRecord,
    TraceIndexEntry,
    TraceOutputRecord,
    TraceRecord,
    TraceRecords,
    TraceState,
    TraceTaskRecord,
)

if TYPE_CHECKING:
    from ._erasure import Erasure

__all__ = [
    "SEPARATOR",
    "TRACE_INDEX_VERSION",
    "ActionOutcomeRecord",
    "ProposedActionRecord",
    "TraceCommitRecord",
    "TraceRecord",
    "TraceStore",
    "TraceTaskRecord",
    "check_traces",
    "derive_trace_index",
    "namespace",
    "namespace_of",
    "recover_traces",
    "scoped_key",
    "shown_key",
]

TRACE_INDEX_VERSION: Final = 1
"""How the trace index is derived from the trace records; another (or none) makes a host rebuild it."""

INDEX_ORDER: Final[tuple[IndexKind, ...]] = ("task", "session", "output", "commit")

# -- the scope is part of the key (docs/embedding.md) ----------------------------------------------
# A task ref, output id or commit that a scope (a tenant) writes is stored under its scope's
# namespace: ``namespace(tags) + SEPARATOR + key``, so two tenants' ``gh:1`` are two keys
# (two traces) and one tenant's key never finds, blocks or plants the other's. The unscoped
# host (the integrator's) writes plain keys (namespace ``""``): stores made before scopes
# read as they were. The namespace is JSON (which writes the separator only escaped), and
# the host refuses the separator in the keys it is given, so no key can be spelled into
# another namespace.

SEPARATOR: Final = "\x1f"
"""Between a key's namespace and the key (never in a namespace, refused in a given key)."""


def namespace(tags: Mapping[str, str] | None) -> str:
    """The namespace of the keys a scope with ``tags`` writes (``""``: unscoped)."""
    if not tags:
        return ""
    return json.dumps(sorted(tags.items()), ensure_ascii=True, separators=(",", ":"))


def scoped_key(space: str, key: str) -> str:
    """``key`` as the store keeps it in namespace ``space``."""
    return f"{space}{SEPARATOR}{key}" if space else key


def namespace_of(stored: str) -> str:
    """The namespace a stored key was written in (``""``: unscoped)."""
    space, sep, _ = stored.partition(SEPARATOR)
    return space if sep else ""


def shown_key(stored: str) -> str:
    """A stored key as its writer gave it (without its namespace)."""
    return stored.partition(SEPARATOR)[2] if SEPARATOR in stored else stored


@runtime_checkable
class TraceStore(Protocol):
    """A store that keeps traces (see the module docstring). Each write is one transaction.

    Every read is by key and served by an index. Writes refuse what would change a record
    (`host_sim.StoreError`): a second task for a trace, a task ref another trace holds, a
    session linked twice, an action decided twice, an event id applied twice.
    """

    async def create_trace(self, trace: TraceRecord, task: TraceTaskRecord | None) -> None:
        """Write a new trace (and its task) with their index rows; refuses a task ref another trace holds."""
        ...

    async def create_linked_session(
        self,
        record: SessionRecord,
        node: SessionNode,
        edge: LineageEdge | None,
        trace_id: str | None,
    ) -> None:
        """`Store.create_session`, and in the same transaction the session's trace link.

        With ``trace_id``, the session joins that trace (refused when the store holds no
        such trace). Without, a fork or spawn joins its parent's trace if the parent has
        one, as the store holds it at that moment; a root joins none.
        """
        ...

    async def add_output(
        self,
        *,
        output_id: str,
        session_id: SessionId,
        kind: str,
        created_at: datetime,
        chat_trace: TraceRecord,
        event_id: str | None = None,
        turn_id: TurnId | None = None,
        position: int | None = None,
    ) -> None:
        """Link an output to the trace of its session, in one transaction.

        A session in no trace first gets ``chat_trace`` (origin ``chat``) and joins it. An
        output id already stored is left as it is (read it back to see where it is).
        Refuses a session the store does not hold. ``event_id`` (a spool event) is recorded
        as applied in the same transaction, and refused if it was applied before.
        ``turn_id`` and ``position`` say where in the session it was reported
        (`TraceOutputRecord`), so that forgetting that turn erases it.
        """
        ...

    async def record_commit(self, commit: TraceCommitRecord, *, event_id: str | None = None) -> None:
        """Record the first commit of an output (a later one is ignored: never overwritten).

        Refuses an output the store does not hold. ``event_id`` as for `add_output`.
        """
        ...

    async def attach_task(self, task: TraceTaskRecord) -> None:
        """Give a trace its task; refuses a trace that has one and a ref another trace holds."""
        ...

    async def apply_event(self, event_id: str, at: datetime) -> None:
        """Record a spool event as applied when applying it wrote nothing; refuses an id applied before."""
        ...

    async def event_applied(self, event_id: str) -> bool:
        """Whether a spool event with this id was applied."""
        ...

    async def get_trace(self, trace_id: str) -> TraceRecords | None:
        """One trace's records, or ``None``."""
        ...

    async def find_trace(self, key: str) -> str | None:
        """The trace ``key`` is the id of, or else leads to in the index (task ref, session,
        output, commit, in this order; the earliest written), or ``None``."""
        ...

    async def trace_of_session(self, session_id: SessionId) -> str | None:
        """The trace a session is linked to, or ``None`` (from the records, not the index)."""
        ...

    async def get_output(self, output_id: str) -> TraceOutputRecord | None:
        """One output's record, or ``None``."""
        ...

    async def get_commit(self, output_id: str) -> TraceCommitRecord | None:
        """The commit recorded for an output, or ``None``."""
        ...

    async def propose_actions(self, actions: Sequence[ProposedActionRecord]) -> None:
        """Write proposed actions (all or none); refuses an id already stored."""
        ...

    async def decide_action(self, outcome: ActionOutcomeRecord) -> None:
        """Write the user's decision about a pending action; refuses one decided before."""
        ...

    async def get_action(self, action_id: str) -> tuple[ProposedActionRecord, ActionOutcomeRecord | None] | None:
        """An action and its outcome (``None``: pending), or ``None`` for an unknown id."""
        ...

    async def pending_actions(self, session_id: SessionId) -> Sequence[ProposedActionRecord]:
        """A session's actions with no outcome yet, in the order proposed."""
        ...

    async def session_actions(self, session_id: SessionId) -> Sequence[tuple[ProposedActionRecord, ActionOutcomeRecord | None]]:
        """Every action proposed in a session with its outcome (``None``: pending), in the order proposed."""
        ...

    async def trace_index_version(self) -> int | None:
        """The `TRACE_INDEX_VERSION` the trace index was built with (``None``: never)."""
        ...

    async def read_traces(self) -> TraceState:
        """Every trace record and index row (for checks and repair: it reads every row)."""
        ...

    async def rebuild_trace_index(self, entries: Sequence[TraceIndexEntry]) -> None:
        """Replace the whole trace index by ``entries`` and record `TRACE_INDEX_VERSION`, in one transaction."""
        ...

    async def erase(self, erasure: Erasure) -> None:
        """`Store.erase`, plus the trace records' text it reaches, in the same transaction.

        Erased (stores/_erasure.py ``PLACES``): the payload of every action proposed in a planned
        turn or a deleted session (``{}``, ``erased_at`` set) and the kind of every output a
        deleted session reported. A durable store leaves no copy of that text in its files.
        """
        ...


def derive_trace_index(state: TraceState) -> tuple[TraceIndexEntry, ...]:
    """The index the trace records imply: each task ref, linked session, output and commit
    leads to its trace. The one function ``fsck --repair`` and a host opening a store use."""
    entries: dict[tuple[IndexKind, str, str], None] = {}
    for task in state.tasks:
        entries["task", task.ref, task.trace_id] = None
    for link in state.links:
        entries["session", link.session_id, link.trace_id] = None
    trace_of_output: dict[str, str] = {}
    for output in state.outputs:
        entries["output", output.output_id, output.trace_id] = None
        trace_of_output[output.output_id] = output.trace_id
    for commit in state.commits:
        trace_id = trace_of_output.get(commit.output_id)
        if trace_id is not None:  # a commit is found in the namespace of its output
            entries["commit", scoped_key(namespace_of(commit.output_id), commit.commit_hash), trace_id] = None
    return tuple(TraceIndexEntry(kind=k, key=key, trace_id=t) for k, key, t in entries)


def check_traces(state: TraceState, sessions: Sequence[SessionRecord] | None = None) -> list[Violation]:
    """Every broken invariant of the trace records and index, damage first; empty when sound.

    Checked: every task, link and output names a trace the store holds; an output's trace
    is its session's; every commit is of a stored output; (given ``sessions``) every link
    names a stored session; the index equals `derive_trace_index`.
    """
    found: list[Violation] = []

    def damage(subject: str, message: str) -> None:
        found.append(Violation(code="trace-orphan", subject=subject, message=message, repairable=False))

    traces = {t.id for t in state.traces}
    known_sessions = None if sessions is None else {s.id for s in sessions}
    link_of = {link.session_id: link.trace_id for link in state.links}
    outputs = {o.output_id for o in state.outputs}
    for task in state.tasks:
        if task.trace_id not in traces:
            damage(task.trace_id, f"task {task.ref!r} belongs to trace {task.trace_id!r}, which the store does not hold")
    for link in state.links:
        if link.trace_id not in traces:
            damage(link.session_id, f"session {link.session_id!r} is linked to trace {link.trace_id!r}, which the store does not hold")
        if known_sessions is not None and link.session_id not in known_sessions:
            damage(link.session_id, f"trace {link.trace_id!r} links session {link.session_id!r}, which the store does not hold")
    for output in state.outputs:
        if output.trace_id not in traces:
            damage(output.output_id, f"output {output.output_id!r} belongs to trace {output.trace_id!r}, which the store does not hold")
        elif link_of.get(output.session_id) != output.trace_id:
            damage(
                output.output_id,
                f"output {output.output_id!r} is in trace {output.trace_id!r}, but its session "
                f"{output.session_id!r} is linked to {link_of.get(output.session_id)!r}",
            )
    for commit in state.commits:
        if commit.output_id not in outputs:
            damage(commit.output_id, f"commit {commit.commit_hash!r} is recorded for output {commit.output_id!r}, which the store does not hold")
    want = set(derive_trace_index(state))
    have = set(state.index)
    for entry in sorted(want - have, key=_entry_key):
        found.append(
            Violation(
                code="index-stale",
                subject=entry.key,
                message=f"the trace index lacks {entry.kind} {entry.key!r} -> trace {entry.trace_id!r}",
                repairable=True,
            )
        )
    for entry in sorted(have - want, key=_entry_key):
        found.append(
            Violation(
                code="index-stale",
                subject=entry.key,
                message=f"the trace index holds {entry.kind} {entry.key!r} -> trace {entry.trace_id!r}, which no record implies",
                repairable=True,
            )
        )
    return found


def _entry_key(entry: TraceIndexEntry) -> tuple[str, str, str]:
    return (entry.kind, entry.key, entry.trace_id)


async def recover_traces(store: TraceStore, sessions: Sequence[SessionRecord] | None = None) -> bool:
    """Rebuild the trace index when it was not built by this `TRACE_INDEX_VERSION`; ``True`` if it did.

    Reads every trace record only then (a store with a current index is opened reading
    nothing). Damage to trace records is left for ``host-sim fsck`` to report: the index
    is rebuilt from what is sound.
    """
    if await store.trace_index_version() == TRACE_INDEX_VERSION:
        return False
    await store.rebuild_trace_index(derive_trace_index(await store.read_traces()))
    return True

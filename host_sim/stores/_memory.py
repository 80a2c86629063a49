"""`MemoryStore`: the default store, keeping records in this process's memory."""

from __future__ import annotations

import bisect
from array import array
from collections.abc import Callable, Mapping, Sequence
from datetime import datetime
from typing import Literal, TypeVar, final

import attrs

from modular_sdk import MemoryRecord, RecordId, SessionId, TurnId

from . import _rows
from ._approvals import MemoryApprovals
from ._erasure import PLACES, Erasure, Place, erase_record, erase_rows
from ._errors import StoreError
from ._memory_records import RecordsKept
from ._protocol import INDEX_VERSION
from ._records import (
    Invocation,
    JobRecord,
    JobStatus,
    LineageEdge,
    SessionNode,
    SessionRecord,
    StoredState,
    TurnRecord,
    erased_call,
    erased_widget,
)
from ._renamed import warn_renamed
from ._trace_records import (
    ActionOutcomeRecord,
    ApprovalRuleRecord,
    IndexKind,
    ProposedActionRecord,
    TraceCommitRecord,
    TraceIndexEntry,
    TraceLinkRecord,
    TraceOutputRecord,
    TraceRecord,
    TraceRecords,
    TraceState,
    TraceTaskRecord,
)
from ._traces import INDEX_ORDER, TRACE_INDEX_VERSION, namespace_of, scoped_key

__all__ = ["MemoryStore"]

def _ordinal(turn: TurnRecord) -> int:
    return turn.ordinal


@final
class MemoryStore:
    """A store that keeps what a host writes in memory, for as long as this object lives.

    The default store of `Host`. Records are kept as given (they are immutable), never
    copied, and indexed by every key a host reads by, so each read costs what it returns.
    A host closed and reopened on the same `MemoryStore` sees every session, turn, node
    and edge written before; nothing survives the process. It keeps the same rules as
    `SqliteStore`: session records never change, a turn is begun once and finished once.
    Use `SqliteStore` to keep them on disk.

    >>> store = MemoryStore()
    >>> async with Host(store=store) as host: ...  # doctest: +SKIP
    """

    __slots__ = (
        "_all",
        "_approvals",
        "_by_artifact",
        "_by_tag",
        "_deleted",
        "_invocations",
        "_jobs",
        "_job_order",
        "_job_position",
        "_jobs_by",
        "_cancel_requested",
        "_reads",
        "_roots",
        "_by_message",
        "_children",
        "_edge_order",
        "_in",
        "_index_version",
        "_invocations_of",
        "_notifications",
        "_nodes",
        "_open",
        "_out",
        "_running",
        "_sessions",
        "_spawned_during",
        "_turns",
        "_turns_of",
        "_tr",
        "_mem",
    )

    def __init__(self) -> None:
        self._open = False
        self._sessions: dict[SessionId, SessionRecord] = {}
        self._children: dict[SessionId, list[SessionId]] = {}
        self._spawned_during: dict[TurnId, list[SessionId]] = {}
        self._turns: dict[TurnId, TurnRecord] = {}
        self._turns_of: dict[SessionId, list[TurnRecord]] = {}
        self._by_message: dict[str, TurnId] = {}
        self._running: dict[TurnId, None] = {}
        # Only nodes that say more than their record (a summary, a completion): a plain node
        # is derived from the session record when read (`_plain_node`), never kept.
        self._nodes: dict[SessionId, SessionNode] = {}
        # Edges are kept once, by target: the edge into a session (its one parent's, most
        # often, held directly) or its edges by source. The other indexes hold targets only,
        # one held directly, several in a list: no (source, target) pair is kept per edge.
        self._in: dict[SessionId, LineageEdge | dict[SessionId, LineageEdge]] = {}
        self._out: dict[SessionId, SessionId | list[SessionId]] = {}  # targets, first written first
        # Per artifact, the target of each edge carrying it: a read costs the edges into those
        # targets (one for most: a session's parent edge; all of a hub's for a hub target).
        self._by_artifact: dict[tuple[str, str], SessionId | list[SessionId]] = {}
        self._edge_order: list[SessionId] = []  # each edge's target, in the order first written
        self._index_version: int | None = INDEX_VERSION
        self._approvals = MemoryApprovals()  # ApprovalStore: standing approvals (docs/protocols.md)
        self._tr = _Traces()  # TraceStore: traces, their index, actions, applied spool events
        self._mem = RecordsKept()  # RecordStore: memory records and their indexes (docs/memory.md)
        # Listing indexes: ids in creation order with their positions (1-based, in _all) in a
        # parallel array, so a page is a bisect and a walk (a few bytes per session).
        self._all: list[SessionId] = []
        self._roots: tuple[list[SessionId], array[int]] = ([], array("q"))
        self._by_tag: dict[tuple[str, str], tuple[list[SessionId], array[int]]] = {}
        self._deleted: dict[SessionId, datetime] = {}
        self._invocations: dict[str, Invocation] = {}
        self._invocations_of: dict[SessionId, list[str]] = {}
        self._jobs: dict[str, JobRecord] = {}
        # Job listing indexes: ids in start order (position = index + 1), and per filter
        # ("session", id), ("status", s), ("tag", key, value) the ascending positions of its jobs.
        self._job_order: list[str] = []
        self._job_position: dict[str, int] = {}
        self._jobs_by: dict[tuple[str, ...], array[int]] = {}
        self._cancel_requested: dict[str, datetime] = {}
        self._reads: dict[TurnId, datetime] = {}
        self._notifications: dict[TurnId, int] = {}  # notification turns, each with its place in order

    def __repr__(self) -> str:
        return f"<MemoryStore {len(self._sessions)} sessions, {len(self._turns)} turns, {len(self._edge_order)} edges>"

    async def open(self) -> None:
        """Open the store; what was written to it before is still there."""
        self._open = True

    async def close(self) -> None:
        """Close the store; the records stay for the next `open`."""
        self._open = False

    # -- writes ---------------------------------------------------------------------------

    async def create_session(self, record: SessionRecord, node: SessionNode, edge: LineageEdge | None) -> None:
        """Keep a new session, its node and its edge; refuses an id already kept."""
        self._check_open()
        if record.id in self._sessions:
            raise StoreError(_rows.session_taken(record.id))
        self._sessions[record.id] = record
        self._all.append(record.id)
        position = len(self._all)
        if record.lineage.kind == "root":
            self._roots[0].append(record.id)
            self._roots[1].append(position)
        for pair in record.tags.items():
            ids, positions = self._by_tag.setdefault(pair, ([], array("q")))
            ids.append(record.id)
            positions.append(position)
        if record.lineage.kind != "root":
            self._children.setdefault(record.lineage.parent_session_id, []).append(record.id)
        if record.trigger_turn_id is not None:
            self._spawned_during.setdefault(record.trigger_turn_id, []).append(record.id)
        self._keep_node(record, node)
        if edge is not None:
            self._put_edge(edge)

    async def begin_turn(self, record: TurnRecord) -> None:
        """Keep a turn that starts (status ``running``)."""
        self._check_open()
        _rows.check_begin_turn(record)
        own = self._turns_of.get(record.session_id, [])  # in ordinal order
        at = bisect.bisect_left(own, record.ordinal, key=_ordinal)  # the end, for the next turn
        _rows.check_turn_begins_at(
            record,
            session_stored=record.session_id in self._sessions,
            taken=record.id in self._turns or (at < len(own) and own[at].ordinal == record.ordinal),
        )
        own = self._turns_of.setdefault(record.session_id, own)
        self._turns[record.id] = record
        own.insert(at, record)
        self._by_message.setdefault(record.message_id, record.id)
        self._running[record.id] = None
        if record.message.type == "notification":
            self._notifications.setdefault(record.id, len(self._notifications))

    async def finish_turn(self, record: TurnRecord) -> None:
        """Replace a running turn by its finished record."""
        self._check_open()
        _rows.check_finish_turn(record)
        _rows.check_turn_finishes(self._turns.get(record.id), record)
        self._turns[record.id] = record
        own = self._turns_of[record.session_id]
        own[bisect.bisect_left(own, record.ordinal, key=_ordinal)] = record
        del self._running[record.id]

    async def retract_turn(self, turn_id: TurnId, at: datetime, reason: str) -> TurnRecord:
        """Mark a finished turn retracted, once (a turn retracted before keeps its first reason)."""
        self._check_open()
        old = self._turns.get(turn_id)
        if old is None or old.status == "running":
            raise StoreError(_rows.no_finished_turn(turn_id))
        if old.retracted_at is not None:
            return old
        record = attrs.evolve(old, retracted_at=at, retraction_reason=reason)
        self._turns[turn_id] = record
        own = self._turns_of[record.session_id]
        own[bisect.bisect_left(own, record.ordinal, key=_ordinal)] = record
        return record

    async def save_node(self, node: SessionNode) -> None:
        """Replace the node of a session kept here."""
        self._check_open()
        record = self._sessions.get(node.session_id)
        if record is None:
            raise StoreError(_rows.no_session(node.session_id, "a node belongs to a stored session"))
        self._keep_node(record, node)

    async def save_edge(self, edge: LineageEdge) -> None:
        """Keep a lineage edge (an edge between the same two sessions replaces it)."""
        self._check_open()
        _rows.check_ends(edge, self._stored(edge))
        self._put_edge(edge)

    async def rebuild_index(self, nodes: Sequence[SessionNode], edges: Sequence[LineageEdge]) -> None:
        """Replace every node and edge."""
        self._check_open()
        self._nodes = {}
        for node in nodes:
            record = self._sessions.get(node.session_id)
            if record is None or not _is_plain(node, record):
                self._nodes[node.session_id] = node
        self._in, self._out, self._by_artifact, self._edge_order = {}, {}, {}, []
        for edge in edges:
            self._put_edge(edge)
        self._index_version = INDEX_VERSION

    async def erase(self, erasure: Erasure) -> None:
        """Carry out an erasure over every place that keeps text (``PLACES``), all or nothing."""
        self._check_open()
        turns, edges = erasure.turns, erasure.edges
        for turn in turns:
            _rows.check_erase_turn(turn)
            old = self._turns.get(turn.id)
            if (
                old is None
                or old.status == "running"
                or old.erased_at is not None
                or turn.erased_at is None
                or attrs.evolve(
                    old,
                    message=turn.message,
                    reply=turn.reply,
                    error=turn.error,
                    erased_at=turn.erased_at,
                    tool_calls=tuple(erased_call(call) for call in old.tool_calls),
                    retraction_reason=turn.retraction_reason,
                    widgets=tuple(erased_widget(placed) for placed in old.widgets),
                )
                != turn
            ):
                raise StoreError(_rows.turn_not_erasable(turn.id))
        for edge in edges:
            _rows.check_ends(edge, self._stored(edge))
        place = next(p for p in PLACES if p.table == "turns")
        quoted: list[TurnRecord] = []  # turns that keep their text but lose an error quoting erased text
        for table, turn_id in erasure.errors:
            old = self._turns.get(TurnId(turn_id)) if table == "turns" else None
            if old is not None and old.status == "running":
                raise StoreError(_rows.quoted_error_running(turn_id))
            new = None if old is None else erase_record(place, old, erasure)
            if new is not None:
                quoted.append(new)
        for turn in (*turns, *quoted):
            self._turns[turn.id] = turn
            own = self._turns_of[turn.session_id]
            own[bisect.bisect_left(own, turn.ordinal, key=_ordinal)] = turn
        for edge in edges:
            self._put_edge(edge)
        tr = self._tr
        tables: dict[str, Callable[[Place], None]] = {
            "invocations": lambda place: erase_rows(self._invocations, place, erasure),
            "jobs": lambda place: erase_rows(self._jobs, place, erasure),
            "actions": lambda place: erase_rows(tr.actions, place, erasure),
            "action_outcomes": lambda place: erase_rows(tr.outcomes, place, erasure),
            "trace_outputs": lambda place: erase_rows(tr.outputs, place, erasure),
            "nodes": lambda place: erase_rows(self._nodes, place, erasure),
            "approval_rules": lambda place: erase_rows(self._approvals.rules, place, erasure),
            "memory_records": lambda place: erase_rows(self._mem.records, place, erasure),
        }
        for place in PLACES:
            if "record" not in place.rows:
                tables[place.table](place)  # KeyError: a place this store does not keep yet (add it here)
        for trace_id, outputs in tr.outputs_of.items():
            tr.outputs_of[trace_id] = [tr.outputs[o.output_id] for o in outputs]
        for action_id, action in tr.actions.items():
            if action.erased_at is not None:
                tr.pending_of.get(action.session_id, {}).pop(action_id, None)

    # -- memory records (RecordStore, stores/_memory_records.py) ---------------------------

    async def add_record(self, record: MemoryRecord, rests_on: Sequence[TurnId]) -> None:
        self._check_open()
        if record.id in self._mem.records:
            raise StoreError(f"refused a write: memory record {record.id!r} is already stored; records never change")
        if record.session_id not in self._sessions:
            raise StoreError(f"refused a write: memory record {record.id!r} names session {record.session_id!r}, which the store does not hold")
        self._mem.add(record, rests_on)

    async def get_record(self, record_id: str) -> MemoryRecord | None:
        self._check_open()
        return self._mem.records.get(RecordId(record_id))

    async def rests_on(self, record_id: RecordId) -> Sequence[TurnId]:
        self._check_open()
        return self._mem.turns_of(record_id)

    async def records_on_turns(self, turn_ids: Sequence[TurnId]) -> Sequence[MemoryRecord]:
        self._check_open()
        return self._mem.on_turns(turn_ids)

    async def records_derived_from(self, record_ids: Sequence[RecordId]) -> Sequence[MemoryRecord]:
        self._check_open()
        return self._mem.derived(record_ids)

    async def retract_record(self, record_id: RecordId, at: datetime, reason: str) -> MemoryRecord:
        self._check_open()
        old = self._mem.records.get(record_id)
        if old is None:
            raise StoreError(f"refused a write: no memory record {record_id!r} to retract")
        if old.retracted_at is not None:
            return old
        new = attrs.evolve(old, retracted_at=at, retraction_reason=reason)
        self._mem.records[record_id] = new
        return new

    def _tagged(self, tags: Mapping[str, str]) -> Callable[[SessionId], bool]:
        def ok(session_id: SessionId) -> bool:
            session = self._sessions.get(session_id)
            return session is not None and all(session.tags.get(k) == v for k, v in tags.items())

        return ok

    async def page_records(
        self,
        session_id: SessionId | None,
        kind: str | None,
        tags: Mapping[str, str],
        include_retracted: bool,
        limit: int,
        after: int | None,
    ) -> tuple[Sequence[MemoryRecord], int | None]:
        self._check_open()
        ok, mem = self._tagged(tags), self._mem
        found: list[MemoryRecord] = []
        ids = mem.ids if session_id is None else mem.of_session.get(session_id, [])
        start = 0 if after is None else bisect.bisect_right(ids, after, key=mem.order.__getitem__)
        for index in range(start, len(ids)):
            record = mem.records[ids[index]]
            if kind is not None and record.kind != kind:
                continue
            if (record.retracted_at is not None and not include_retracted) or not ok(record.session_id):
                continue
            if len(found) == limit:
                return found, self._mem.order[found[-1].id]
            found.append(record)
        return found, None

    async def search_records(self, query: str, tags: Mapping[str, str], limit: int) -> Sequence[MemoryRecord]:
        self._check_open()
        return self._mem.search(query, self._tagged(tags), limit)

    # -- the integrator's records (IntegratorStore) ----------------------------------------

    async def begin_invocation(self, record: Invocation) -> None:
        self._check_open()
        if record.id in self._invocations:
            raise StoreError(_rows.invocation_taken(record.id))
        self._invocations[record.id] = record
        if record.session_id is not None:
            self._invocations_of.setdefault(record.session_id, []).append(record.id)

    async def finish_invocation(self, record: Invocation) -> None:
        self._check_open()
        _rows.check_finish_invocation(record)
        old = self._invocations.get(record.id)
        if old is None or old.finished_at is not None:
            raise StoreError(_rows.invocation_not_started(record.id))
        self._invocations[record.id] = record

    async def invocations_of(self, session_id: SessionId) -> Sequence[Invocation]:
        self._check_open()
        return tuple(self._invocations[i] for i in self._invocations_of.get(session_id, ()))

    async def save_job(self, record: JobRecord) -> None:
        self._check_open()
        before = self._jobs.get(record.id)
        if before is not None and record.status == "running":  # a job starts once
            raise StoreError(_rows.job_taken(record.id))
        if before is None:
            self._job_order.append(record.id)
            position = self._job_position[record.id] = len(self._job_order)
            session = self._sessions.get(record.session_id)
            keys: list[tuple[str, ...]] = [("session", record.session_id), ("status", record.status)]
            keys += [("tag", k, v) for k, v in (session.tags.items() if session is not None else ())]
            for key in keys:
                self._jobs_by.setdefault(key, array("q")).append(position)
        elif before.status != record.status:  # move the job to its new status's list
            position = self._job_position[record.id]
            old = self._jobs_by[("status", before.status)]
            del old[bisect.bisect_left(old, position)]
            bisect.insort(self._jobs_by.setdefault(("status", record.status), array("q")), position)
        self._jobs[record.id] = record

    async def list_jobs(self) -> Sequence[JobRecord]:
        self._check_open()
        return tuple(self._jobs.values())

    async def get_job(self, job_id: str) -> JobRecord | None:
        self._check_open()
        return self._jobs.get(job_id)

    async def page_jobs(
        self,
        session_id: SessionId | None,
        status: JobStatus | None,
        tags: Mapping[str, str],
        limit: int,
        before: int | None,
    ) -> tuple[Sequence[JobRecord], int | None]:
        self._check_open()
        keys: list[tuple[str, ...]] = [("tag", k, v) for k, v in tags.items()]
        if session_id is not None:
            keys.append(("session", session_id))
        if status is not None:
            keys.append(("status", status))
        end = len(self._job_order) if before is None else before - 1
        if keys:  # walk the shortest list; check the others per job
            positions = min((self._jobs_by.get(k, array("q")) for k in keys), key=len)
            candidates: Sequence[int] = positions[: bisect.bisect_right(positions, end)]
        else:
            candidates = range(1, min(end, len(self._job_order)) + 1)
        page: list[JobRecord] = []
        last = 0
        for position in reversed(candidates):
            job = self._jobs[self._job_order[position - 1]]
            session = self._sessions.get(job.session_id)
            if (session_id is not None and job.session_id != session_id) or (status is not None and job.status != status):
                continue
            if any(session is None or session.tags.get(k) != v for k, v in tags.items()):
                continue
            if len(page) == limit:
                return tuple(page), last
            page.append(job)
            last = position
        return tuple(page), None

    async def job_turn_began(self, job_id: str, turn_id: TurnId) -> None:
        self._check_open()
        job = self._jobs.get(job_id)
        if job is not None and job.status == "running":
            self._jobs[job_id] = attrs.evolve(job, turn_id=turn_id)

    async def request_job_cancel(self, job_id: str, at: datetime) -> None:
        self._check_open()
        job = self._jobs.get(job_id)
        if job is not None and job.status == "running":
            self._cancel_requested.setdefault(job_id, at)

    async def cancel_requests(self, job_ids: Sequence[str]) -> Sequence[str]:
        self._check_open()
        return tuple(j for j in job_ids if j in self._cancel_requested and self._jobs[j].status == "running")

    async def interrupt_jobs(self, now: Callable[[], datetime]) -> int:
        self._check_open()
        running = [j for j in self._jobs.values() if j.status == "running"]
        at = now() if running else None
        for job in running:
            await self.save_job(
                attrs.evolve(
                    job,
                    status="interrupted",
                    finished_at=at,
                    error="the host closed before the job finished",
                    error_kind="interrupted",
                )
            )
        return len(running)

    async def mark_read(self, turn_id: TurnId, at: datetime) -> None:
        self._check_open()
        if turn_id not in self._turns:
            raise StoreError(_rows.no_turn(turn_id, "mark a stored notification read"))
        self._reads.setdefault(turn_id, at)

    async def notification_turns(
        self, session_id: SessionId | None, unread_only: bool, tags: Mapping[str, str]
    ) -> Sequence[TurnRecord]:
        self._check_open()
        if session_id is not None:
            candidates: Sequence[TurnRecord] = [
                t for t in self._turns_of.get(session_id, ()) if t.message.type == "notification"
            ]
        elif tags:  # the sessions of the rarest tag, by the tag index: a tenant's inbox costs its own turns
            ids = min((self._by_tag.get(pair, ([], array("q")))[0] for pair in tags.items()), key=len)
            found = [t for s in ids for t in self._turns_of.get(s, ()) if t.id in self._notifications]
            candidates = sorted(found, key=lambda t: self._notifications[t.id])
        else:
            candidates = [self._turns[t] for t in self._notifications]
        return tuple(
            t
            for t in candidates
            if not (unread_only and t.id in self._reads)
            and all(self._sessions[t.session_id].tags.get(k) == v for k, v in tags.items())
        )

    async def page_sessions(
        self, tags: Mapping[str, str], roots_only: bool, limit: int, before: int | None
    ) -> tuple[Sequence[SessionRecord], int | None]:
        self._check_open()
        end = len(self._all) if before is None else before - 1  # positions below ``before``
        lists = [self._by_tag.get(pair, ([], array("q"))) for pair in tags.items()]
        if lists or roots_only:
            ids, positions = min(lists, key=lambda pair: len(pair[0])) if lists else self._roots
            start = bisect.bisect_right(positions, end)
        else:
            ids, positions, start = self._all, array("q"), min(end, len(self._all))
        page: list[SessionRecord] = []
        last = 0
        for index in range(start - 1, -1, -1):
            session_id = ids[index]
            record = self._sessions[session_id]
            if session_id in self._deleted or (roots_only and record.lineage.kind != "root"):
                continue
            if any(record.tags.get(k) != v for k, v in tags.items()):
                continue
            if len(page) == limit:
                return tuple(page), last
            page.append(record)
            last = positions[index] if positions else index + 1
        return tuple(page), None

    async def delete_session(self, session_id: SessionId, at: datetime) -> None:
        self._check_open()
        if session_id not in self._sessions:
            raise StoreError(_rows.no_session(session_id, "delete a stored session"))
        self._deleted.setdefault(session_id, at)

    async def deleted_at(self, session_id: SessionId) -> datetime | None:
        self._check_open()
        return self._deleted.get(session_id)

    # -- reads ----------------------------------------------------------------------------

    async def index_version(self) -> int | None:
        self._check_open()
        return self._index_version

    async def get_session(self, session_id: SessionId) -> SessionRecord | None:
        self._check_open()
        return self._sessions.get(session_id)

    async def get_turns(self, session_id: SessionId) -> Sequence[TurnRecord]:
        self._check_open()
        return tuple(self._turns_of.get(session_id, ()))

    async def turns_since(self, session_id: SessionId, ordinal: int) -> Sequence[TurnRecord]:
        self._check_open()
        own = self._turns_of.get(session_id, [])
        return tuple(own[bisect.bisect_left(own, ordinal, key=_ordinal) :])

    async def find_turn(self, turn_or_message_id: str) -> TurnRecord | None:
        self._check_open()
        found = self._turns.get(TurnId(turn_or_message_id))
        if found is None:
            by_message = self._by_message.get(turn_or_message_id)
            found = None if by_message is None else self._turns[by_message]
        return found

    async def spawned_during(self, turn_id: str) -> Sequence[SessionRecord]:
        self._check_open()
        return tuple(self._sessions[s] for s in self._spawned_during.get(TurnId(turn_id), ()))

    async def turns_left_running(self) -> Sequence[TurnRecord]:
        self._check_open()
        return tuple(self._turns[t] for t in self._running)

    async def running_turns(self) -> Sequence[TurnRecord]:
        """Deprecated: renamed `turns_left_running` (this name warns, and goes in the next release)."""
        warn_renamed(f"{type(self).__name__}.running_turns", "turns_left_running")
        return await self.turns_left_running()

    async def child_sessions(self, session_id: SessionId) -> Sequence[SessionRecord]:
        self._check_open()
        return tuple(self._sessions[c] for c in self._children.get(session_id, ()))

    async def list_sessions(self) -> Sequence[SessionRecord]:
        self._check_open()
        return tuple(self._sessions.values())

    async def get_nodes(self, session_ids: Sequence[SessionId]) -> Sequence[SessionNode]:
        self._check_open()
        found: list[SessionNode] = []
        for session_id in session_ids:
            node = self._nodes.get(session_id)
            if node is None:
                record = self._sessions.get(session_id)
                if record is None:
                    continue
                node = _plain_node(record)
            found.append(node)
        return tuple(found)

    async def get_edges(
        self, session_ids: Sequence[SessionId], direction: Literal["out", "in"]
    ) -> Sequence[LineageEdge]:
        self._check_open()
        out: list[LineageEdge] = []
        if direction == "out":
            for s in dict.fromkeys(session_ids):  # a session asked twice: its edges once
                out += (self._edge(s, t) for t in _held(self._out.get(s)))
        else:
            for s in dict.fromkeys(session_ids):
                out += self._edges_into(s)
        return tuple(out)

    async def find_edges(self, artifact_type: str, source_id: str) -> Sequence[LineageEdge]:
        self._check_open()
        found: list[LineageEdge] = []
        held = self._by_artifact.get((artifact_type, source_id))
        for target in (held,) if isinstance(held, str) else dict.fromkeys(held or ()):  # a target once
            into = self._in[target]
            for edge in (into,) if isinstance(into, LineageEdge) else into.values():
                artifact = edge.artifact
                if artifact is not None and artifact.source_id == source_id and artifact.type == artifact_type:
                    found.append(edge)
        return tuple(found)

    async def read_all(self) -> StoredState:
        """Everything kept, in the order first written (a rewrite keeps its place)."""
        self._check_open()
        return StoredState(
            sessions=tuple(self._sessions.values()),
            turns=tuple(self._turns.values()),
            nodes=tuple(self._nodes.get(r.id) or _plain_node(r) for r in self._sessions.values())
            + tuple(n for s, n in self._nodes.items() if s not in self._sessions),
            edges=self._edges_in_order(),
        )

    # -- traces and actions (TraceStore, stores/_traces.py) -------------------------------

    async def create_trace(self, trace: TraceRecord, task: TraceTaskRecord | None) -> None:
        """Keep a new trace and its task; refuses a taken trace id or task ref."""
        self._check_open()
        tr = self._tr
        if trace.id in tr.traces:
            raise StoreError(f"trace {trace.id!r} is already stored; trace records never change")
        if task is not None:
            tr.check_task(task)
        tr.traces[trace.id] = trace
        if task is not None:
            tr.put_task(task)

    async def create_linked_session(
        self, record: SessionRecord, node: SessionNode, edge: LineageEdge | None, trace_id: str | None
    ) -> None:
        """`create_session`, and the session's trace link with it (all or nothing)."""
        self._check_open()
        tr = self._tr
        if trace_id is not None and trace_id not in tr.traces:
            raise StoreError(_rows.no_trace(trace_id, "a session joins a stored trace"))
        if trace_id is None and record.lineage.kind != "root":
            trace_id = tr.link_of.get(record.lineage.parent_session_id)
        await self.create_session(record, node, edge)
        if trace_id is not None:
            tr.put_link(TraceLinkRecord(session_id=record.id, trace_id=trace_id, created_at=record.created_at))

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
        """Link an output to its session's trace (a new chat trace when it has none)."""
        self._check_open()
        tr = self._tr
        if session_id not in self._sessions:
            raise StoreError(_rows.no_session(session_id, "an output belongs to a stored session"))
        tr.check_event(event_id)
        if output_id not in tr.outputs:
            trace_id = tr.link_of.get(session_id)
            if trace_id is None:
                if chat_trace.id in tr.traces:
                    raise StoreError(f"trace {chat_trace.id!r} is already stored; trace records never change")
                tr.traces[chat_trace.id] = chat_trace
                tr.put_link(TraceLinkRecord(session_id=session_id, trace_id=chat_trace.id, created_at=created_at))
                trace_id = chat_trace.id
            output = TraceOutputRecord(
                output_id=output_id, trace_id=trace_id, session_id=session_id, kind=kind, created_at=created_at,
                turn_id=turn_id, position=position,
            )
            tr.outputs[output_id] = output
            tr.outputs_of.setdefault(trace_id, []).append(output)
            tr.put_index(TraceIndexEntry(kind="output", key=output_id, trace_id=trace_id))
        tr.mark_event(event_id)

    async def record_commit(self, commit: TraceCommitRecord, *, event_id: str | None = None) -> None:
        """Keep the first commit of a stored output (a later one is ignored)."""
        self._check_open()
        tr = self._tr
        output = tr.outputs.get(commit.output_id)
        if output is None:
            raise StoreError(_rows.no_output(commit.output_id))
        tr.check_event(event_id)
        if commit.output_id not in tr.commits:
            tr.commits[commit.output_id] = commit
            key = scoped_key(namespace_of(commit.output_id), commit.commit_hash)
            tr.put_index(TraceIndexEntry(kind="commit", key=key, trace_id=output.trace_id))
        tr.mark_event(event_id)

    async def attach_task(self, task: TraceTaskRecord) -> None:
        """Give a stored trace its task, once."""
        self._check_open()
        tr = self._tr
        if task.trace_id not in tr.traces:
            raise StoreError(_rows.no_trace(task.trace_id, "a task is given to a stored trace"))
        tr.check_task(task)
        tr.put_task(task)

    async def apply_event(self, event_id: str, at: datetime) -> None:
        """Mark a spool event applied."""
        self._check_open()
        self._tr.check_event(event_id)
        self._tr.mark_event(event_id)

    async def event_applied(self, event_id: str) -> bool:
        self._check_open()
        return event_id in self._tr.events

    async def get_trace(self, trace_id: str) -> TraceRecords | None:
        self._check_open()
        tr = self._tr
        trace = tr.traces.get(trace_id)
        if trace is None:
            return None
        outputs = tuple(tr.outputs_of.get(trace_id, ()))
        return TraceRecords(
            trace=trace,
            task=tr.tasks.get(trace_id),
            links=tuple(tr.links_of.get(trace_id, ())),
            outputs=outputs,
            commits=tuple(c for o in outputs if (c := tr.commits.get(o.output_id)) is not None),
        )

    async def find_trace(self, key: str) -> str | None:
        self._check_open()
        tr = self._tr
        if key in tr.traces:
            return key
        for kind in INDEX_ORDER:
            found = tr.index.get((kind, key))
            if found:
                return next(iter(found))
        return None

    async def trace_of_session(self, session_id: SessionId) -> str | None:
        self._check_open()
        return self._tr.link_of.get(session_id)

    async def get_output(self, output_id: str) -> TraceOutputRecord | None:
        self._check_open()
        return self._tr.outputs.get(output_id)

    async def get_commit(self, output_id: str) -> TraceCommitRecord | None:
        self._check_open()
        return self._tr.commits.get(output_id)

    async def propose_actions(self, actions: Sequence[ProposedActionRecord]) -> None:
        """Keep proposed actions, all or none."""
        self._check_open()
        tr = self._tr
        _rows.check_actions([a.id for a in actions])
        for proposed in actions:
            if proposed.id in tr.actions:
                raise StoreError(_rows.action_taken(proposed.id))
            if proposed.session_id not in self._sessions:
                raise StoreError(_rows.no_session(proposed.session_id, "an action belongs to a stored session"))
        for proposed in actions:
            tr.actions[proposed.id] = proposed
            tr.pending_of.setdefault(proposed.session_id, {})[proposed.id] = None
            tr.actions_of.setdefault(proposed.session_id, []).append(proposed.id)

    async def decide_action(self, outcome: ActionOutcomeRecord) -> None:
        """Keep the one decision about a pending action."""
        self._check_open()
        tr = self._tr
        proposed = tr.actions.get(outcome.action_id)
        if proposed is None:
            raise StoreError(_rows.no_action(outcome.action_id))
        if outcome.action_id in tr.outcomes:
            raise StoreError(_rows.action_decided(outcome.action_id))
        tr.outcomes[outcome.action_id] = outcome
        tr.pending_of[proposed.session_id].pop(outcome.action_id, None)

    async def get_action(self, action_id: str) -> tuple[ProposedActionRecord, ActionOutcomeRecord | None] | None:
        self._check_open()
        proposed = self._tr.actions.get(action_id)
        return None if proposed is None else (proposed, self._tr.outcomes.get(action_id))

    async def pending_actions(self, session_id: SessionId) -> Sequence[ProposedActionRecord]:
        self._check_open()
        return tuple(self._tr.actions[a] for a in self._tr.pending_of.get(session_id, ()))

    # -- standing approvals (ApprovalStore, stores/_approvals.py) ------------------------

    async def add_approval_rule(self, rule: ApprovalRuleRecord) -> None:
        self._check_open()
        self._approvals.add(rule)

    async def revoke_approval_rule(self, rule_id: str, at: datetime, by: str) -> None:
        self._check_open()
        self._approvals.revoke(rule_id, at, by)

    async def get_approval_rule(self, rule_id: str) -> ApprovalRuleRecord | None:
        self._check_open()
        return self._approvals.rules.get(rule_id)

    async def approval_rules(self, action_type: str | None = None) -> Sequence[ApprovalRuleRecord]:
        self._check_open()
        return self._approvals.of_type(action_type)

    async def decide_by_rule(self, outcome: ActionOutcomeRecord, rule_id: str) -> None:
        self._check_open()
        rule = self._approvals.rules.get(rule_id)
        if rule is None or rule.revoked_at is not None:  # checked and written with no await between
            raise StoreError(f"approval rule {rule_id!r} was revoked; action {outcome.action_id!r} waits for the user")
        await self.decide_action(outcome)

    async def session_actions(self, session_id: SessionId) -> Sequence[tuple[ProposedActionRecord, ActionOutcomeRecord | None]]:
        self._check_open()
        tr = self._tr
        return tuple((tr.actions[a], tr.outcomes.get(a)) for a in tr.actions_of.get(session_id, ()))

    async def trace_index_version(self) -> int | None:
        self._check_open()
        return self._tr.index_version

    async def read_traces(self) -> TraceState:
        self._check_open()
        tr = self._tr
        return TraceState(
            traces=tuple(tr.traces.values()),
            tasks=tuple(tr.tasks.values()),
            links=tuple(tr.links.values()),
            outputs=tuple(tr.outputs.values()),
            commits=tuple(tr.commits.values()),
            index=tuple(tr.entries()),
        )

    async def rebuild_trace_index(self, entries: Sequence[TraceIndexEntry]) -> None:
        """Replace the trace index."""
        self._check_open()
        self._tr.index = {}
        for entry in entries:
            self._tr.put_index(entry)
        self._tr.index_version = TRACE_INDEX_VERSION

    # -- internals ------------------------------------------------------------------------

    def _keep_node(self, record: SessionRecord, node: SessionNode) -> None:
        """Keep ``node`` only if it says more than ``record`` (else it is derived when read)."""
        if _is_plain(node, record):
            self._nodes.pop(record.id, None)
        else:
            self._nodes[record.id] = node

    def _put_edge(self, edge: LineageEdge) -> None:
        """Keep ``edge``; an edge between the same two sessions is replaced and keeps its place."""
        source, target = edge.from_session_id, edge.to_session_id
        held = self._in.get(target)
        old: LineageEdge | None = None
        if held is None:  # a new session's edge from its parent: nothing to replace or compare
            self._in[target] = edge
            _hold(self._out, source, target)
            self._edge_order.append(target)
            if edge.artifact is not None:
                _hold(self._by_artifact, (edge.artifact.type, edge.artifact.source_id), target)
            return
        if isinstance(held, LineageEdge):
            if held.from_session_id == source:
                old = held
                self._in[target] = edge
            else:
                self._in[target] = {held.from_session_id: held, source: edge}
        else:
            old = held.get(source)
            held[source] = edge
        if old is None:
            _hold(self._out, source, target)
            self._edge_order.append(target)
        old_key, new_key = _artifact_key(old), _artifact_key(edge)
        if old_key != new_key:  # a target is listed once per edge into it carrying the artifact
            if old_key is not None:
                _unhold(self._by_artifact, old_key, target)
            if new_key is not None:
                _hold(self._by_artifact, new_key, target)

    def _edges_into(self, target: SessionId) -> Sequence[LineageEdge]:
        held = self._in.get(target)
        if held is None:
            return ()
        return (held,) if isinstance(held, LineageEdge) else tuple(held.values())

    def _edge(self, source: SessionId, target: SessionId) -> LineageEdge:
        held = self._in[target]
        return held if isinstance(held, LineageEdge) else held[source]

    def _edges_in_order(self) -> tuple[LineageEdge, ...]:
        """Every edge, in the order first written: the n-th time a target is listed, its n-th edge."""
        seen: dict[SessionId, int] = {}
        edges: list[LineageEdge] = []
        for target in self._edge_order:
            nth = seen.get(target, 0)
            seen[target] = nth + 1
            into = self._edges_into(target)
            edges.append(into[nth])
        return tuple(edges)

    def _stored(self, edge: LineageEdge) -> list[SessionId]:
        return [s for s in (edge.from_session_id, edge.to_session_id) if s in self._sessions]

    def _check_open(self) -> None:
        if not self._open:
            raise StoreError(
                "this MemoryStore is not open; a Host opens its store when entered "
                "(async with Host(store=...)), or call 'await store.open()' first"
            )


def _artifact_key(edge: LineageEdge | None) -> tuple[str, str] | None:
    if edge is None or edge.artifact is None:
        return None
    return (edge.artifact.type, edge.artifact.source_id)


_K = TypeVar("_K")


def _held(value: SessionId | list[SessionId] | None) -> Sequence[SessionId]:
    """The ids an index entry holds: none, one held directly, or a list."""
    if value is None:
        return ()
    return (value,) if isinstance(value, str) else value


def _hold(index: dict[_K, SessionId | list[SessionId]], key: _K, session_id: SessionId) -> None:
    """Add ``session_id`` under ``key``: the first held directly, more in a list."""
    held = index.get(key)
    if held is None:
        index[key] = session_id
    elif isinstance(held, str):
        index[key] = [held, session_id]
    else:
        held.append(session_id)


def _unhold(index: dict[_K, SessionId | list[SessionId]], key: _K, session_id: SessionId) -> None:
    """Remove one ``session_id`` held under ``key`` (a replaced edge's: rare, costs the list)."""
    held = index.get(key)
    if held == session_id:
        del index[key]
    elif isinstance(held, list) and session_id in held:
        held.remove(session_id)
        if not held:
            del index[key]


def _plain_node(record: SessionRecord) -> SessionNode:
    """The node a session has until it is completed or summarized: what its record implies."""
    return SessionNode(session_id=record.id, created_at=record.created_at, agent_id=record.agent_id)


def _is_plain(node: SessionNode, record: SessionRecord) -> bool:
    """``node == _plain_node(record)``, without making one (a fork's write path)."""
    return (
        node.session_id == record.id
        and node.created_at == record.created_at
        and node.agent_id == record.agent_id
        and node.summary is None
        and node.completed_at is None
        and node.metrics is None
    )


class _Traces:
    """What a `MemoryStore` keeps for `TraceStore`: the records, indexed by every key read."""

    __slots__ = (
        "actions",
        "actions_of",
        "commits",
        "events",
        "index",
        "index_version",
        "link_of",
        "links",
        "links_of",
        "outcomes",
        "outputs",
        "outputs_of",
        "pending_of",
        "tasks",
        "traces",
    )

    def __init__(self) -> None:
        self.traces: dict[str, TraceRecord] = {}
        self.tasks: dict[str, TraceTaskRecord] = {}  # by trace id
        self.links: dict[SessionId, TraceLinkRecord] = {}
        self.link_of: dict[SessionId, str] = {}
        self.links_of: dict[str, list[TraceLinkRecord]] = {}
        self.outputs: dict[str, TraceOutputRecord] = {}
        self.outputs_of: dict[str, list[TraceOutputRecord]] = {}
        self.commits: dict[str, TraceCommitRecord] = {}  # by output id
        self.index: dict[tuple[IndexKind, str], dict[str, None]] = {}
        self.index_version: int | None = TRACE_INDEX_VERSION
        self.events: set[str] = set()
        self.actions: dict[str, ProposedActionRecord] = {}
        self.outcomes: dict[str, ActionOutcomeRecord] = {}
        self.pending_of: dict[SessionId, dict[str, None]] = {}
        self.actions_of: dict[SessionId, list[str]] = {}  # every action of a session, in the order proposed

    def check_task(self, task: TraceTaskRecord) -> None:
        if task.trace_id in self.tasks:
            raise StoreError(f"trace {task.trace_id!r} already has a task; a trace gets one task, once")
        if self.index.get(("task", task.ref)):
            raise StoreError(f"task {task.ref!r} already has a trace; a task has one trace")

    def put_task(self, task: TraceTaskRecord) -> None:
        self.tasks[task.trace_id] = task
        self.put_index(TraceIndexEntry(kind="task", key=task.ref, trace_id=task.trace_id))

    def put_link(self, link: TraceLinkRecord) -> None:
        if link.session_id in self.links:
            raise StoreError(f"session {link.session_id!r} is already in a trace; a session joins one trace, once")
        self.links[link.session_id] = link
        self.link_of[link.session_id] = link.trace_id
        self.links_of.setdefault(link.trace_id, []).append(link)
        self.put_index(TraceIndexEntry(kind="session", key=link.session_id, trace_id=link.trace_id))

    def put_index(self, entry: TraceIndexEntry) -> None:
        self.index.setdefault((entry.kind, entry.key), {})[entry.trace_id] = None

    def entries(self) -> list[TraceIndexEntry]:
        return [TraceIndexEntry(kind=kind, key=key, trace_id=t) for (kind, key), ts in self.index.items() for t in ts]

    def check_event(self, event_id: str | None) -> None:
        if event_id is not None and event_id in self.events:
            raise StoreError(f"spool event {event_id!r} was applied before; an event is applied once")

    def mark_event(self, event_id: str | None) -> None:
        if event_id is not None:
            self.events.add(event_id)

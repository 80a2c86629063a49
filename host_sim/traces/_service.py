"""`Traces` (``host.traces``) and what the host wires into its engine for traces.

The host links, not the model: a session joins a trace when it is created (``trace=``,
or its parent's, for forks and spawns: `link_session`), and an output joins the trace of
the session whose handler reported it (`TraceLinker.report_output`). Nothing here is
called by a model except through the read-only lineage tool (``_lineage_tool``).
"""

from __future__ import annotations

import inspect
import re
import secrets
from collections.abc import Awaitable, Callable, Mapping
from datetime import datetime
from typing import Final, final

from modular_sdk import (
    ActionStateError,
    InvalidArgumentError,
    ModDefinitionError,
    SerializationError,
    SessionId,
    TurnId,
)
from modular_sdk._frozen import FrozenJsonObject, freeze_object
from modular_sdk._rules import show, unstorable_text

from .._host_made import NoPublicConstructor
from ..stores._errors import StoreError
from ..stores._protocol import Store
from ..stores._records import LineageEdge, SessionNode, SessionRecord
from ..stores._trace_records import TraceCommitRecord, TraceRecord, TraceRecords, TraceTaskRecord
from ..stores._traces import TraceStore, namespace, scoped_key, shown_key
from ._errors import TraceError, UnknownTraceError
from ._types import TaskRef, Trace, TraceLink, TraceOutput, TraceTask
from ._visible import admits, check_key, output_space, visible_trace

__all__ = [
    "CommitResolver",
    "TraceLinker",
    "Traces",
    "new_trace_id",
    "no_traces",
    "require_traces",
    "unknown_action",
    "unknown_trace",
]

CommitResolver = Callable[[TraceOutput], "str | None | Awaitable[str | None]"]
"""``Host(commit_resolver=fn)``: ``fn(output)`` (plain or async) answers the commit that landed
an output, or ``None`` when it does not know yet."""

_COMMIT: Final = re.compile(r"[0-9A-Za-z._/+-]{4,200}")


def new_trace_id() -> str:
    return f"trc_{secrets.token_hex(6)}"


def require_traces(store: Store | object) -> TraceStore:
    """``store`` as a `TraceStore`, or `TraceError` naming it and what to use instead."""
    if isinstance(store, TraceStore):
        return store
    raise no_traces(store)


def no_traces(store: object) -> TraceError:
    """The error of a host whose store keeps no traces."""
    return TraceError(
        f"the store {store!r} keeps no traces (it does not implement host_sim's TraceStore "
        "protocol), so this host has no traces, pending actions or event spool; use "
        "MemoryStore(), SqliteStore(path) or PostgresStore(dsn) for them"
    )


def check_text(argument: str, value: object, *, what: str) -> str:
    if not isinstance(value, str) or not value.strip() or len(value) > 500:
        raise InvalidArgumentError(
            f"{argument} must be {what} (non-empty text, at most 500 characters), got {show(value)}",
            argument=argument,
            value=value,
        )
    try:
        value.encode("utf-8")
    except UnicodeEncodeError:
        raise InvalidArgumentError(
            f"{argument} holds text that is not valid Unicode ({value!r}); pass plain text",
            argument=argument,
            value=value,
        ) from None
    return value


def check_commit(commit: object) -> str:
    if not isinstance(commit, str) or not _COMMIT.fullmatch(commit):
        raise InvalidArgumentError(
            f"commit must be a commit hash or ref (4-200 characters of letters, digits and ._/+-), "
            f"got {show(commit)}; pass the output of 'git rev-parse HEAD'",
            argument="commit",
            value=commit,
        )
    return commit


def _snapshot(snapshot: object) -> FrozenJsonObject:
    try:
        return freeze_object({} if snapshot is None else snapshot, type_name="the task snapshot")
    except SerializationError as exc:
        raise InvalidArgumentError(
            f"snapshot must be a JSON object (a dict of JSON data), got {show(snapshot)}: {exc}",
            argument="snapshot",
            value=snapshot,
        ) from None


def _task_ref(ref: object) -> TaskRef:
    if isinstance(ref, TaskRef):
        check_key("ref", ref.ref)
        return ref
    if isinstance(ref, str):
        check_key("ref", ref)
        try:
            return TaskRef.parse(ref)
        except ModDefinitionError as exc:
            raise InvalidArgumentError(str(exc), argument="ref", value=ref) from None
    raise InvalidArgumentError(
        f"ref must be a TaskRef (or 'source:id'), got {show(ref)}; write TaskRef(source='github', id='42')",
        argument="ref",
        value=ref,
    )


def assemble(records: TraceRecords, commits: Mapping[str, str] | None = None) -> Trace:
    """The `Trace` its records make (``commits``: hashes resolved but not yet read back, by
    stored output id). Task refs and output ids show as their writer gave them (no namespace)."""
    known = {c.output_id: c.commit_hash for c in records.commits}
    if commits:
        known = {**commits, **known}
    by_session: dict[str, list[TraceOutput]] = {}
    for output in records.outputs:
        by_session.setdefault(output.session_id, []).append(
            TraceOutput(
                output_id=shown_key(output.output_id),
                kind=output.kind,
                created_at=output.created_at,
                commit=known.get(output.output_id),
            )
        )
    times = [records.trace.created_at]
    times += [link.created_at for link in records.links]
    times += [o.created_at for o in records.outputs] + [c.recorded_at for c in records.commits]
    task = records.task
    if task is not None:
        times.append(task.captured_at)
    return Trace(
        id=records.trace.id,
        origin=records.trace.origin,
        task=None
        if task is None
        else TraceTask(ref=shown_key(task.ref), snapshot=task.snapshot, captured_at=task.captured_at),
        links=tuple(
            TraceLink(session_id=link.session_id, created_at=link.created_at, outputs=tuple(by_session.get(link.session_id, ())))
            for link in records.links
        ),
        created_at=records.trace.created_at,
        updated_at=max(times),
    )


def no_trace_by(key: str) -> UnknownTraceError:
    """What `Traces.find` answers for a key that leads to no trace (or none the scope sees)."""
    return UnknownTraceError(
        f"no trace is found by {key!r}: it is no trace id, task ref, session, output or "
        "commit this host's store knows; a session joins a trace through "
        "host.sessions.create(trace=...), a fork or spawn of one, or its first reported output",
        id=key,
    )


def no_output(output_id: str) -> UnknownTraceError:
    """What `Traces.record_commit` answers for an output no trace holds (or none the scope sees)."""
    return UnknownTraceError(
        f"no output {output_id!r} is linked to a trace; report it first (ctx.report_output, "
        "or an 'output' spool event), then record its commit",
        id=output_id,
    )


def no_trace_id(trace_id: str) -> UnknownTraceError:
    return UnknownTraceError(f"no trace {trace_id!r} in this host's store; use a Trace.id from host.traces", id=trace_id)


def unknown_trace(trace_id: str) -> UnknownTraceError:
    """What ``sessions.create(trace=...)`` answers for a trace id the store does not hold (or a scope does not see)."""
    return UnknownTraceError(
        f"no trace {trace_id!r} in this host's store; pass trace= a Trace.id from host.traces (for_task or find)",
        id=trace_id,
    )


def unknown_action(action_id: str) -> ActionStateError:
    """What the host answers for an action id never proposed in its store (or proposed outside a scope)."""
    return ActionStateError(
        f"no action {action_id!r} was proposed in this host's store; use an id from "
        "Submission.actions or host.pending_actions(session)",
        action_id=action_id,
        state="unknown",
    )


@final
class Traces(metaclass=NoPublicConstructor):
    """The host's traces: why code exists, from task to session to output to commit.

    Obtain it as ``host.traces`` (raises `TraceError` when the host's store keeps no
    traces: use `MemoryStore` or `SqliteStore`). Every read goes through the store's
    trace index; a trace read here gets the missing commits of its outputs from the host's
    ``commit_resolver`` (if any) and stores the first one found.

    It acts within a scope (`ScopedTraces` holds one made by ``_within``; the integrator's
    has none): one surface, parameterised by the scope.
    """

    __slots__ = ("_clock", "_resolver", "_scope", "_sessions", "_store")

    def __init__(
        self,
        store: TraceStore,
        clock: Callable[[], datetime],
        resolver: CommitResolver | None,
        sessions: Store,
        scope: Mapping[str, str] | None = None,
    ) -> None:
        self._store = store
        self._sessions = sessions  # the same store, as the keeper of session records (their tags)
        self._clock = clock
        self._resolver = resolver
        self._scope = scope  # the tags of the scope it acts within (None: every trace)

    def _within(self, scope: Mapping[str, str] | None) -> Traces:
        """These traces as a scope with tags ``scope`` sees them."""
        return Traces._create(self._store, self._clock, self._resolver, self._sessions, scope)

    async def for_task(self, ref: TaskRef, snapshot: Mapping[str, object] | None = None) -> Trace:
        """The trace of task ``ref``, created (origin ``"task"``, with ``snapshot``, a JSON
        object describing the task as it is now) when the task has none yet.

        An existing trace is returned as it is: its snapshot is the one first captured.
        """
        task_ref = _task_ref(ref)
        frozen = _snapshot(snapshot)
        key = scoped_key(namespace(self._scope), task_ref.ref)  # the scope is part of the key
        existing = await self._store.find_trace(key)
        if existing is not None and (records := await self._store.get_trace(existing)) is not None:
            if records.task is not None and records.task.ref == key:
                return await self.find(existing)
        now = self._clock()
        trace_id = new_trace_id()
        try:
            await self._store.create_trace(
                TraceRecord(id=trace_id, origin="task", created_at=now),
                TraceTaskRecord(trace_id=trace_id, ref=key, snapshot=frozen, captured_at=now),
            )
        except StoreError:
            found = await self._store.find_trace(key)  # made meanwhile: that one is it
            if found is None:
                raise
            trace_id = found
        return await self.find(trace_id)

    async def find(self, id: str) -> Trace:
        """The trace ``id`` leads to: a trace id, a task ref (``"github:42"``), a session id,
        an output id or a commit hash. Raises `UnknownTraceError` for anything else."""
        key = id.ref if isinstance(id, TaskRef) else id
        records = await visible_trace(self._sessions, self._store, self._scope, key)
        if records is None:
            assert isinstance(key, str)
            raise no_trace_by(key)
        return await self._read(records)

    async def attach_task(
        self, trace_id: str, ref: TaskRef, snapshot: Mapping[str, object] | None = None
    ) -> Trace:
        """Give trace ``trace_id`` (a chat trace) its task; its origin stays as it was.

        Raises `UnknownTraceError` for an unknown trace and `TraceError` when the trace
        already has a task or task ``ref`` already has a trace.
        """
        task_ref = _task_ref(ref)
        frozen = _snapshot(snapshot)
        records = await self._records(trace_id)
        key = scoped_key(namespace(self._scope), task_ref.ref)
        if records.task is not None:
            raise TraceError(
                f"trace {trace_id!r} already has task {shown_key(records.task.ref)!r}; a trace gets one task, "
                f"once: start another trace with host.traces.for_task({task_ref.ref!r})",
                trace_id=trace_id,
            )
        holder = await self._store.find_trace(key)
        if holder is not None and holder != trace_id:
            raise TraceError(
                f"task {task_ref.ref!r} already has trace {holder!r}; a task has one trace: work "
                f"on it with host.sessions.create(trace={holder!r})",
                trace_id=trace_id,
            )
        try:
            await self._store.attach_task(
                TraceTaskRecord(trace_id=trace_id, ref=key, snapshot=frozen, captured_at=self._clock())
            )
        except StoreError as exc:
            raise TraceError(f"cannot attach task {task_ref.ref!r} to trace {trace_id!r}: {exc}", trace_id=trace_id) from exc
        return await self.find(trace_id)

    async def record_commit(self, output_id: str, commit: str) -> str:
        """Store ``commit`` as the commit that landed output ``output_id``, unless one is stored.

        Returns the hash now stored: ``commit``, or the earlier one (a different value is the
        conflict; nothing was written). Raises `UnknownTraceError` for an output no trace holds.
        """
        check_text("output_id", output_id, what="an output id")
        check_commit(commit)
        stored = await self._output(output_id)
        return await record_commit(self._store, self._clock, stored, commit, event_id=None)

    async def _output(self, output_id: str) -> str:
        """The stored id of output ``output_id`` as ``scope`` names it (its namespace's, else
        the unscoped one's, of a session of the scope); `UnknownTraceError` otherwise."""
        scope = self._scope
        if unstorable_text(output_id):
            raise no_output(output_id)
        space = namespace(scope)
        for stored in dict.fromkeys((scoped_key(space, output_id), output_id)):
            output = await self._store.get_output(stored)
            if output is None:
                continue
            if scope:
                session = await self._sessions.get_session(output.session_id)
                if session is None or not admits(scope, session.tags):
                    break
            return stored
        raise no_output(output_id)

    async def _records(self, trace_id: str) -> TraceRecords:
        if not isinstance(trace_id, str) or not trace_id:
            raise InvalidArgumentError(f"trace_id must be a trace id (str), got {show(trace_id)}", argument="trace_id", value=trace_id)
        records = await visible_trace(self._sessions, self._store, self._scope, trace_id)
        if records is None or records.trace.id != trace_id:
            raise no_trace_id(trace_id)
        return records

    async def _read(self, records: TraceRecords) -> Trace:
        """The trace, its missing commits resolved (lazily) and the first found persisted."""
        resolver = self._resolver
        if resolver is None:
            return assemble(records)
        trace = assemble(records)
        known = {c.output_id for c in records.commits}
        stored: dict[str, str] = {}
        for record, output in zip(records.outputs, trace.outputs):
            if record.output_id in known:
                continue
            try:
                found = resolver(output)
                if inspect.isawaitable(found):
                    found = await found
            except Exception as exc:  # the integrator's resolver: named, never swallowed
                raise TraceError(
                    f"the commit_resolver raised {exc!r} for output {output.output_id!r}; make it "
                    "return the commit hash, or None when it does not know one",
                    trace_id=trace.id,
                ) from exc
            if found is None:
                continue
            if not isinstance(found, str):
                raise TraceError(
                    f"the commit_resolver returned {found!r} for output {output.output_id!r}; it "
                    "returns a commit hash (str) or None",
                    trace_id=trace.id,
                )
            check_commit(found)
            stored[record.output_id] = await record_commit(self._store, self._clock, record.output_id, found, event_id=None)
        return assemble(records, stored) if stored else trace


async def record_commit(
    store: TraceStore, clock: Callable[[], datetime], output_id: str, commit: str, *, event_id: str | None
) -> str:
    """`Traces.record_commit` of a stored output id, also as a spool event applies it (``event_id``)."""
    check_text("output_id", output_id, what="an output id")
    check_commit(commit)
    if await store.get_output(output_id) is None:
        raise no_output(output_id)
    await store.record_commit(TraceCommitRecord(output_id=output_id, commit_hash=commit, recorded_at=clock()), event_id=event_id)
    stored = await store.get_commit(output_id)
    assert stored is not None
    return stored.commit_hash


@final
class TraceLinker:
    """What the host wires into its engine: links sessions and outputs to traces."""

    __slots__ = ("_clock", "_store", "_traces")

    def __init__(self, store: Store, clock: Callable[[], datetime]) -> None:
        self._store = store
        self._clock = clock
        # Asked once: a runtime Protocol check walks every member of TraceStore, and every
        # session created (a fork, a spawn) asked it again.
        self._traces: TraceStore | None = store if isinstance(store, TraceStore) else None

    async def link_session(
        self, record: SessionRecord, node: SessionNode, edge: LineageEdge | None, trace_id: str | None
    ) -> None:
        """Create the session and its trace link in one store transaction."""
        store = self._traces
        if store is None:
            if trace_id is not None:
                require_traces(self._store)
            await self._store.create_session(record, node, edge)
            return
        if trace_id is not None and await store.get_trace(trace_id) is None:
            raise unknown_trace(trace_id)
        await store.create_linked_session(record, node, edge, trace_id)

    async def report_output(
        self,
        session_id: SessionId,
        kind: str,
        output_id: str,
        turn_id: TurnId | None = None,
        position: int | None = None,
        *,
        event_id: str | None = None,
    ) -> None:
        """Link output ``output_id`` to the trace of ``session_id`` (a new chat trace if none).

        ``turn_id`` (a tool's turn) and ``position`` (where a command was typed) are kept
        with it, so that forgetting that turn erases it.
        """
        store = require_traces(self._store)
        check_text("kind", kind, what="what the output is, like 'proposal'")
        check_key("output_id", check_text("output_id", output_id, what="the output's stable id, like 'chg-1'"))
        key = scoped_key(await output_space(self._store, store, session_id), output_id)  # the scope is part of the key
        now = self._clock()
        await store.add_output(
            output_id=key,
            session_id=session_id,
            kind=kind,
            created_at=now,
            chat_trace=TraceRecord(id=new_trace_id(), origin="chat", created_at=now),
            event_id=event_id,
            turn_id=turn_id,
            position=position,
        )
        stored = await store.get_output(key)
        if stored is None:  # the session's link is missing: the store refused nothing but linked nothing
            raise TraceError(f"output {output_id!r} of session {session_id!r} could not be linked; run host-sim fsck")
        if stored.session_id != session_id:
            mine, theirs = await self._store.get_session(session_id), await self._store.get_session(stored.session_id)
            if mine is not None and theirs is not None and admits(mine.tags, theirs.tags):
                raise TraceError(
                    f"output {output_id!r} was reported by session {stored.session_id!r} (trace "
                    f"{stored.trace_id!r}), not {session_id!r}; output ids are unique: give each output its own id",
                    trace_id=stored.trace_id,
                )
            raise TraceError(  # a session the reporting one's scope does not see: nothing of it is named
                f"output {output_id!r} was reported before by another session; output ids are unique: "
                "give each output its own id"
            )

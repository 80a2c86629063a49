"""The `Store` protocol: where a host keeps sessions, turns and lineage.

Every method that writes is one transaction: when it returns, everything it was given is
durable (for a durable store) and when it raises, nothing of it is. A write that fails
fails only its own call. Every method that reads reads by key (an id, a session's turns, a
session's edges) and costs what it returns: a host opens a store without reading it, and
reads what it touches. This is the shape a database shared by several hosts needs.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from datetime import datetime
from typing import TYPE_CHECKING, Final, Literal, Protocol, runtime_checkable

from modular_sdk import SessionId, TurnId

from ._records import Invocation, JobRecord, JobStatus, LineageEdge, SessionNode, SessionRecord, StoredState, TurnRecord

if TYPE_CHECKING:
    from ._erasure import Erasure

__all__ = ["INDEX_VERSION", "IntegratorStore", "Store"]

INDEX_VERSION: Final = 1
"""How the derived index is built from the records; a store whose index was built another
way (or never) reports a different `Store.index_version` and the host rebuilds it."""


class Store(Protocol):
    """Durable (or not) persistence for a `Host`: authoritative records and a derived index.

    Session and turn records are authoritative. A session record is written once and
    never changes (``create_session`` refuses an id it already holds). A turn is written
    ``running`` by ``begin_turn`` before its model is called, and finished once by
    ``finish_turn``. The lineage index (one node per session, the ``branched_from`` and
    ``spawned_by`` edges) is derived from the records: it is written with them and can be
    rebuilt from them (``rebuild_index``, which also records `INDEX_VERSION`). Edges of
    other relations and node completion (``save_node``) are the host's own additions to
    the index.

    Reads come in the order things were first written (a replaced edge or node keeps its
    place). Every method raises `host_sim.StoreError` naming the problem (a row it cannot
    read included); ``open`` raises `host_sim.StoreLockedError` when another host holds a
    store that allows one writer.
    """

    async def open(self) -> None:
        """Open the store (creating it if it allows); reads none of its records."""
        ...

    async def close(self) -> None:
        """Flush and close; the store may be opened again."""
        ...

    # -- writes ---------------------------------------------------------------------------

    async def create_session(
        self, record: SessionRecord, node: SessionNode, edge: LineageEdge | None
    ) -> None:
        """Write a new session with its lineage node and (fork, spawn) its edge, in one transaction.

        Refuses a session id the store already holds: records never change.
        """
        ...

    async def begin_turn(self, record: TurnRecord) -> None:
        """Write a turn that starts now (status ``running``). Refuses a taken id or ordinal."""
        ...

    async def finish_turn(self, record: TurnRecord) -> None:
        """Replace a ``running`` turn by its finished record (same id). Refuses any other."""
        ...

    async def retract_turn(self, turn_id: TurnId, at: datetime, reason: str) -> TurnRecord:
        """Set a finished turn's ``retracted_at`` and ``retraction_reason``, once, and return
        its record as stored: a turn retracted before is returned unchanged (its first
        reason kept). Refuses a running or unknown turn."""
        ...

    async def save_node(self, node: SessionNode) -> None:
        """Replace the lineage node of a session the store holds (completion, metrics)."""
        ...

    async def save_edge(self, edge: LineageEdge) -> None:
        """Write a lineage edge between two sessions the store holds (same pair: replaced)."""
        ...

    async def rebuild_index(self, nodes: Sequence[SessionNode], edges: Sequence[LineageEdge]) -> None:
        """Replace the whole lineage index by these and record `INDEX_VERSION`, in one transaction."""
        ...

    async def erase(self, erasure: Erasure) -> None:
        """Carry out one erasure (``forget``, a session's deletion) in one transaction.

        It reaches every place this store keeps text (stores/_erasure.py ``PLACES``): planned turns
        become their erased records (same id, ordinal, author, times and status; text and
        error text gone; ``erased_at`` set), edges are rewritten, and, in a store that keeps
        the integrator's log, the invocations, jobs and nodes the erasure reaches lose their
        text. A store that also keeps traces erases them too (`TraceStore.erase`).

        Refuses a turn that is running, unknown or already erased. A durable store leaves
        no copy of the erased text in its files once this returns.
        """
        ...

    # -- reads by key ---------------------------------------------------------------------

    async def index_version(self) -> int | None:
        """The `INDEX_VERSION` the index was last rebuilt with (``None``: never). Reads no rows."""
        ...

    async def get_session(self, session_id: SessionId) -> SessionRecord | None:
        """One session's record, or ``None``."""
        ...

    async def get_turns(self, session_id: SessionId) -> Sequence[TurnRecord]:
        """A session's own turns (not those a fork inherits), in ordinal order."""
        ...

    async def turns_since(self, session_id: SessionId, ordinal: int) -> Sequence[TurnRecord]:
        """A session's own turns from ``ordinal`` on, in ordinal order (costs what it returns)."""
        ...

    async def find_turn(self, turn_or_message_id: str) -> TurnRecord | None:
        """The turn with this turn id, or else with this message id, or ``None``."""
        ...

    async def spawned_during(self, turn_id: str) -> Sequence[SessionRecord]:
        """Sessions spawned by a tool call that turn ``turn_id`` made, in creation order."""
        ...

    async def turns_left_running(self) -> Sequence[TurnRecord]:
        """Every turn still ``running`` (after a crash: those it interrupted)."""
        ...

    async def child_sessions(self, session_id: SessionId) -> Sequence[SessionRecord]:
        """The forks and spawns of a session, in creation order."""
        ...

    async def list_sessions(self) -> Sequence[SessionRecord]:
        """Every session, in creation order."""
        ...

    async def get_nodes(self, session_ids: Sequence[SessionId]) -> Sequence[SessionNode]:
        """The nodes of these sessions (those the index holds), in the order asked."""
        ...

    async def get_edges(
        self, session_ids: Sequence[SessionId], direction: Literal["out", "in"]
    ) -> Sequence[LineageEdge]:
        """Edges out of (or into) these sessions: per session in the order asked, then in writing order."""
        ...

    async def find_edges(self, artifact_type: str, source_id: str) -> Sequence[LineageEdge]:
        """Edges whose artifact has this type and source id, in writing order."""
        ...

    async def read_all(self) -> StoredState:
        """Everything the store holds (for checks, repair and export: it reads every row)."""
        ...


@runtime_checkable
class IntegratorStore(Protocol):
    """What a store keeps for an integrator beside sessions and turns (docs/embedding.md).

    Command invocations, host-owned jobs, notification read state, deletions, and listing
    sessions by tag, newest first, a page at a time (served by an index: a page costs what
    it returns, never the number of unrelated sessions). `MemoryStore` and `SqliteStore`
    implement it; a host on a store that does not keeps these in memory only (lost on
    close) and says so in ``host.log``'s and ``host.jobs``'s docstrings.
    """

    async def begin_invocation(self, record: Invocation) -> None:
        """Write a command invocation that starts (no ``finished_at``)."""
        ...

    async def finish_invocation(self, record: Invocation) -> None:
        """Replace a started invocation by its finished record (same id)."""
        ...

    async def invocations_of(self, session_id: SessionId) -> Sequence[Invocation]:
        """A session's invocations, in the order they started."""
        ...

    async def save_job(self, record: JobRecord) -> None:
        """Write a job record: a running one starts the job, refused (`StoreError`) when a job
        with its id is stored already, in the same atomic write (a start's request id keys its
        job: two starts with one key store one job); its end then replaces it (same id)."""
        ...

    async def list_jobs(self) -> Sequence[JobRecord]:
        """Every job, in the order they were started."""
        ...

    async def get_job(self, job_id: str) -> JobRecord | None:
        """One job's record (one read by key), or ``None``."""
        ...

    async def page_jobs(
        self,
        session_id: SessionId | None,
        status: JobStatus | None,
        tags: Mapping[str, str],
        limit: int,
        before: int | None,
    ) -> tuple[Sequence[JobRecord], int | None]:
        """Jobs (of one session, with one status, of sessions whose tags include ``tags``),
        newest first, at most ``limit``, older than position ``before``; and the position to
        pass for the next page (``None`` on the last). Served by an index per filter: a page
        costs what it returns."""
        ...

    async def job_turn_began(self, job_id: str, turn_id: TurnId) -> None:
        """Note the turn a running job's submission runs (``Job.turn_id`` while it runs)."""
        ...

    async def request_job_cancel(self, job_id: str, at: datetime) -> None:
        """Ask whichever host runs this job to cancel it (a running job only; else no change)."""
        ...

    async def cancel_requests(self, job_ids: Sequence[str]) -> Sequence[str]:
        """Which of these jobs (the running ones of the asking host) were asked to cancel: one read by key."""
        ...

    async def interrupt_jobs(self, now: Callable[[], datetime]) -> int:
        """Mark every ``running`` job ``interrupted`` at ``now()`` (its host closed or crashed); how many."""
        ...

    async def mark_read(self, turn_id: TurnId, at: datetime) -> None:
        """Remember that the user read this notification turn (again: no change)."""
        ...

    async def notification_turns(
        self, session_id: SessionId | None, unread_only: bool, tags: Mapping[str, str]
    ) -> Sequence[TurnRecord]:
        """Notification turns (of one session, or of all), oldest first; ``unread_only`` skips
        read ones; only those of sessions whose tags include every one of ``tags``."""
        ...

    async def page_sessions(
        self, tags: Mapping[str, str], roots_only: bool, limit: int, before: int | None
    ) -> tuple[Sequence[SessionRecord], int | None]:
        """Live (not deleted) sessions whose tags include ``tags``, newest first, at most
        ``limit``, older than position ``before``; and the position to pass for the next page
        (``None`` on the last)."""
        ...

    async def delete_session(self, session_id: SessionId, at: datetime) -> None:
        """Hide a session from listing (its text is erased before, by `Store.erase`)."""
        ...

    async def deleted_at(self, session_id: SessionId) -> datetime | None:
        """When the session was deleted, or ``None``."""
        ...

    async def erase(self, erasure: Erasure) -> None:
        """Erase the invocations and jobs an erasure reaches.

        A store that keeps the log does it in `Store.erase`'s one transaction; a log kept
        apart from its store erases only its own records."""
        ...

"""`SharedStore`: what a store that several hosts write at once offers beyond `Store`.

A host's engine keeps the sessions it touched in memory. With one writer (`MemoryStore`,
`SqliteStore`) that memory is the truth; with several (`PostgresStore`) another host may
have added turns since, and turns of one session must still run one at a time across
hosts. The engine asks a store for this capability with ``isinstance(store, SharedStore)``
and, when it has it:

- holds ``lock_session(id)`` from before a turn of that session begins to after it
  finishes (the database grants it to hosts in the order they asked), and first catches
  up with ``turns_since(id, next_ordinal)``, so the turn's ordinal is the next one;
- catches up (without the lock) when it reads a session's history or forks it;
- reads the erasure generation once it holds the lock (``lock_session`` yields it, read
  in the same round trip as the lock, with the turns since ``next_ordinal``): when it moved, another host
  erased or deleted something, and the session's chain is read again before the model
  is called (a forgotten message never reaches a model on any host).
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterator, Sequence
from contextlib import AbstractAsyncContextManager
from contextvars import ContextVar
from datetime import datetime
from typing import Protocol, runtime_checkable

import attrs

from modular_sdk import SessionId

from ._records import TurnRecord

__all__ = ["EventRow", "SharedStore", "Staged", "staged", "staged_rows"]


@attrs.frozen(kw_only=True)
class EventRow:
    """One event as a shared store writes it: its kind, what it is about, and its JSON. Immutable."""

    kind: str
    session_id: str | None
    turn_id: str | None
    event: str


@attrs.define(kw_only=True)
class Staged:
    """Event rows that commit with the next write of the task that staged them (a transactional
    outbox): the write's transaction inserts them, numbered, or neither commits. ``first_seq``
    is set once they were written (the rows are numbered ``first_seq``, ``first_seq + 1``...);
    ``rewritten`` says whether the transaction changed their text after inserting them (an
    erasure committed before them erased what they hold: the hub then reads the rows
    rather than hand out the events it made)."""

    rows: Sequence[EventRow]
    first_seq: int | None = None
    rewritten: bool = False

    def written(self, first_seq: int, *, rewritten: bool = False) -> None:
        """The store wrote the rows, numbered from ``first_seq`` (0: settled without them)."""
        self.first_seq = first_seq
        self.rewritten = rewritten


_STAGED: ContextVar[Staged | None] = ContextVar("host_sim_staged_events", default=None)


@contextlib.contextmanager
def staged(rows: Sequence[EventRow]) -> Iterator[Staged]:
    """Stage ``rows`` for the next write transaction this task makes (one only, in the block)."""
    batch = Staged(rows=tuple(rows))
    token = _STAGED.set(batch)
    try:
        yield batch
    finally:
        _STAGED.reset(token)


def staged_rows() -> Staged | None:
    """What a store's write transaction must insert with its change (``None``: nothing, or written already)."""
    batch = _STAGED.get()
    return batch if batch is not None and batch.first_seq is None and batch.rows else None


@attrs.frozen
class Locked:
    """What `SharedStore.lock_session` read once the lock was granted (one round trip with it)."""

    generation: int  # the erasure generation
    turns: Sequence[TurnRecord] | None = None  # the session's turns from ``since`` on (``None``: not asked)


@runtime_checkable
class SharedStore(Protocol):
    """A store several hosts write at once (see the module docstring).

    Its write of a session whose parent (a fork's, a spawn's) is deleted is refused, checked
    in the write's own transaction in order with deletions (the host reads no deletion first)."""

    def lock_session(self, session_id: SessionId, since: int | None = None) -> AbstractAsyncContextManager[Locked]:
        """Hold the session's turn lock across hosts for the ``async with`` block (waits,
        cancellably); yields what was read once the lock was granted, in the lock's round
        trip: the erasure generation and (``since`` given) ``turns_since(session_id, since)``."""
        ...

    async def turns_since(self, session_id: SessionId, ordinal: int) -> Sequence[TurnRecord]:
        """The session's own turns from ``ordinal`` on, in ordinal order."""
        ...

    async def erasure_generation(self) -> int:
        """A counter every erasure and deletion bumps in its own transaction (one indexed read)."""
        ...

    @property
    def host_id(self) -> str:
        """Who this host is among the hosts of the store (the events it writes carry it)."""
        ...

    async def append_events(self, rows: Sequence[EventRow]) -> tuple[int, bool]:
        """Write event rows in one transaction, numbered in commit order, and wake the other
        hosts' listeners; the first row's seq, and whether the transaction changed their
        text after inserting them (`Staged.rewritten`)."""
        ...

    async def events_after(self, seq: int, limit: int) -> Sequence[tuple[int, str, str]]:
        """Event rows after ``seq`` as ``(seq, host_id, event)``, in seq order."""
        ...

    async def trimmed_events(self) -> int:
        """The newest seq retention deleted (0: none)."""
        ...

    async def last_event_seq(self) -> int:
        """The newest event row's seq (0: none)."""
        ...

    async def wait_for_events(self, timeout: float) -> list[str]:
        """Wait for a wake-up (another host wrote rows) or ``timeout``; returns reply_delta
        payloads received. This host's own writes wake nothing: its hub has their events
        (`Staged.first_seq`, `append_events`'s answer) and asks for a read when it cannot
        hand them out in order."""
        ...

    async def send_delta(self, payload: str) -> None:
        """Send a reply_delta to the other hosts, best-effort."""
        ...

    async def trim_events(self) -> int:
        """Delete event rows older than the store's retention."""
        ...

    async def finish_turn(self, record: TurnRecord) -> None:
        """Replace a running turn (of this host) by its finished record."""
        ...

    async def keep_claim(self) -> bool:
        """Make sure this host's liveness claim is held (taken again after the server restarted
        or the connection holding it was lost); whether it had to be taken again."""
        ...

    async def absent_hosts(self) -> set[str]:
        """The hosts (their ``host_id``) that left work running (turns, jobs) and hold no claim now."""
        ...

    async def claim_dead(
        self,
        host_ids: Sequence[str],
        now: Callable[[], datetime],
        announce: Callable[[Sequence[TurnRecord], Sequence[str]], Sequence[EventRow]],
    ) -> tuple[Sequence[TurnRecord], Sequence[str]]:
        """Fail the running turns (as interrupted) and interrupt the running jobs of ``host_ids``
        whose claim is still gone, in one transaction with the event rows ``announce`` makes of
        them; returns them. A turn is claimed by one host only, ever."""
        ...

"""Several hosts on one store: what the engine does when its store is a `SharedStore`.

A host keeps the sessions it touched in memory (``Engine.sessions``). Another host on the
same `PostgresStore` may add turns to them; this module is how the engine learns of them
and how one session's turns stay one at a time across hosts. With a single-writer store
(`MemoryStore`, `SqliteStore`) every function here does nothing.

When a host sees turns other hosts added to a session it holds:

- ``send`` (and ``submit``, ``run``, ``notify``): always. The turn waits for the session's
  lock in the database (`across_hosts`), then reads every turn added since, so its ordinal
  is the next one and the model sees the whole history.
- ``turns()`` of a session handle, and ``fork()`` at the session's last completed turn:
  the turns other hosts have *finished* by then (`catch_up`). A turn still running on
  another host shows once it has finished.
- Loading a session for the first time (``sessions.get``, ``children``, ``list``): its
  finished turns.

A turn found ``running`` while this host holds the session's lock was left by a host that
died (a live host would hold the lock): the store's `running_turns` hands it over, and it
is failed as interrupted, like a host opening the store does.
"""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator, Callable
from datetime import datetime

import anyio

from ..stores._errors import StoreError
from ..stores._invariants import interrupted
from ..stores._protocol import Store
from ..stores._records import TurnRecord
from ..stores._shared import SharedStore
from ._state import SessionState, TurnState

__all__ = ["across_hosts", "catch_up", "running_elsewhere"]

_DEAD_HOST_GRACE = 30.0  # seconds a dead host's last connection may take to close


@contextlib.asynccontextmanager
async def across_hosts(store: Store, session: SessionState, now: Callable[[], datetime]) -> AsyncIterator[None]:
    """Hold ``session``'s lock in a shared store for one turn, caught up first; nothing otherwise."""
    if not isinstance(store, SharedStore):
        yield
        return
    async with store.lock_session(session.id):
        await catch_up(store, session, now, locked=True)
        yield


async def catch_up(store: Store, session: SessionState, now: Callable[[], datetime], *, locked: bool = False) -> None:
    """Add to ``session`` the turns other hosts finished since this host last looked (shared stores only).

    With ``locked`` (this host holds the session's lock), a ``running`` turn is one a dead
    host left: it is failed as interrupted first.
    """
    if not isinstance(store, SharedStore):
        return
    records = await store.turns_since(session.id, session.next_ordinal)
    waited = 0.0
    while locked and any(r.status == "running" for r in records):
        for orphan in await store.running_turns():  # handed to this host: it finishes them
            await store.finish_turn(interrupted(orphan, now()))
        records = await store.turns_since(session.id, session.next_ordinal)
        if not any(r.status == "running" for r in records):
            break
        # A dead host's connections close one by one: its session lock may be gone a moment
        # before the server has ended the connection that marks it alive.
        if waited >= _DEAD_HOST_GRACE:
            running = next(r for r in records if r.status == "running")
            raise StoreError(
                f"turn {running.ordinal} ({running.id!r}) of session {session.id!r} is running on a host "
                "that is alive but does not hold the session's lock; every host of a shared store must "
                "run turns through Host (which takes the lock), never write turns to the store directly",
                path=getattr(store, "path", None),
            )
        await anyio.sleep(0.05)
        waited += 0.05
    for record in records:
        if record.ordinal < session.next_ordinal:
            continue  # another task of this host caught up meanwhile
        if record.ordinal > session.next_ordinal or record.status == "running":
            break
        turn = TurnState.from_record(record)
        session.add_turn(turn)
        if turn.status == "completed":
            session.add_entry(turn)
            session.last_completed = turn


def running_elsewhere(store: Store, record: TurnRecord) -> bool:
    """Whether a turn read from a shared store is still running (on another host): not loaded yet."""
    return record.status == "running" and isinstance(store, SharedStore)

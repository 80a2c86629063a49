"""One listener on a host's events for all its AG-UI runs, routed to each run by session.

A run reading ``host.subscribe()`` itself would read every event of every other run: with n
runs at once that is n times the events, each woken for nothing. Even one shared subscriber
costs a task wake-up per event. Instead the first run of a host installs a listener on the
host's event hub (``EventHub.listen``: called as the ring receives each event, no task, no
buffer to fall behind) that hands each event to the runs watching its session (a job's end
by the job's session, a spawn by its parent's); it is removed when no run watches, and the
host's closing ends every run's watch. A run registers before it starts its job, so it
misses nothing.
"""

from __future__ import annotations

import weakref
from collections import deque
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from typing import Final, final

import anyio

from modular_sdk import SpawnLineage

from ..sessions._events import HostEvent, JobFinished, JobStarted, SessionCreated, TurnStarted
from ..sessions._host import Host

__all__ = ["QUIET", "Router", "Watch"]

QUIET: Final = (JobStarted, TurnStarted)
"""Events a run sends nothing for (it only notes them): routed without waking the run, which
reads them, in order, with the next event that wakes it (a wake-up costs a task switch)."""


@final
class Watch:
    """The events routed to one run, taken a batch at a time (`Router.watch`).

    A deque and an event, not a memory object stream: a run takes everything that arrived
    since it last looked in one step, instead of one scheduler round trip per event.
    """

    __slots__ = ("_closed", "_queue", "_ready")

    def __init__(self) -> None:
        self._queue: deque[HostEvent] = deque()
        self._ready = anyio.Event()
        self._closed = False

    def put(self, event: HostEvent, *, wake: bool = True) -> None:
        """Queue ``event``; ``wake=False`` leaves the run asleep (it takes it with the next batch)."""
        if not self._closed:
            self._queue.append(event)
            if wake:
                self._ready.set()

    def close(self) -> None:
        self._closed = True
        self._ready.set()

    async def batch(self) -> list[HostEvent]:
        """The events that arrived since the last batch (waiting for one); ``[]`` once closed."""
        while not self._queue:
            if self._closed:
                return []
            await self._ready.wait()
            self._ready = anyio.Event()
        out = list(self._queue)
        self._queue.clear()
        return out


@final
class Router:
    """The event router of one host (see the module docstring); ``Router.of(host)``."""

    _of_host: weakref.WeakKeyDictionary[Host, Router] = weakref.WeakKeyDictionary()

    def __init__(self, host: Host) -> None:
        self._host = host
        self._watching: dict[str, set[Watch]] = {}
        self._jobs: dict[str, str] = {}  # job id -> session id, from job_started
        self._stop: Callable[[], None] | None = None  # ends the listening

    @classmethod
    def of(cls, host: Host) -> Router:
        found = cls._of_host.get(host)
        if found is None:
            found = cls._of_host[host] = Router(host)
        return found

    @asynccontextmanager
    async def watch(self, session_id: str) -> AsyncIterator[Watch]:
        """The events of ``session_id`` (and of the jobs and spawns of it) from now until exit."""
        mine = Watch()
        self._watching.setdefault(session_id, set()).add(mine)
        try:
            if self._stop is None:
                self._stop = self._host._open().events.listen(self._route)
            yield mine
        finally:
            watchers = self._watching.get(session_id, set())
            watchers.discard(mine)
            mine.close()
            if not watchers:
                self._watching.pop(session_id, None)
            if not self._watching and self._stop is not None:
                self._stop()
                self._stop = None
                self._jobs.clear()

    def _route(self, event: HostEvent | None) -> None:
        if event is None:  # the host closed: every watcher's stream ends
            for watchers in self._watching.values():
                for watch in watchers:
                    watch.close()
            return
        if isinstance(event, JobStarted):
            self._jobs[event.job_id] = event.session_id
        if isinstance(event, JobFinished):
            session_id = self._jobs.pop(event.job_id, None)
        elif isinstance(event, SessionCreated) and isinstance(event.lineage, SpawnLineage):
            session_id = event.lineage.parent_session_id
        else:
            session_id = getattr(event, "session_id", None)
        if isinstance(session_id, str):
            wake = not isinstance(event, QUIET)
            for watch in self._watching.get(session_id, ()):
                watch.put(event, wake=wake)

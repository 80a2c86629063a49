"""One subscription to a host's events for all its AG-UI runs, routed to each run by session.

A run reading ``host.subscribe()`` itself would read every event of every other run: with n
runs at once that is n times the events, each woken for nothing. Instead the first run of a
host starts a pump in the host's task group (closed with the host) that reads the events
once and hands each to the runs watching its session (a job's end by the job's session, a
spawn by its parent's, ``lagged`` to all); the pump stops when no run watches. A run
registers (and the pump has subscribed) before it starts its job, so it misses nothing.
"""

from __future__ import annotations

import math
import weakref
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import final

import anyio
from anyio.streams.memory import MemoryObjectReceiveStream, MemoryObjectSendStream

from modular_sdk import SpawnLineage

from ..sessions._events import HostEvent, JobFinished, JobStarted, Lagged, SessionCreated
from ..sessions._host import Host

__all__ = ["Router"]


@final
class Router:
    """The event router of one host (see the module docstring); ``Router.of(host)``."""

    _of_host: weakref.WeakKeyDictionary[Host, Router] = weakref.WeakKeyDictionary()

    def __init__(self, host: Host) -> None:
        self._host = host
        self._watching: dict[str, set[MemoryObjectSendStream[HostEvent]]] = {}
        self._jobs: dict[str, str] = {}  # job id -> session id, from job_started
        self._pump: anyio.CancelScope | None = None
        self._subscribed = anyio.Event()
        self._generation = 0

    @classmethod
    def of(cls, host: Host) -> Router:
        found = cls._of_host.get(host)
        if found is None:
            found = cls._of_host[host] = Router(host)
        return found

    @asynccontextmanager
    async def watch(self, session_id: str) -> AsyncIterator[MemoryObjectReceiveStream[HostEvent]]:
        """The events of ``session_id`` (and of the jobs and spawns of it) from now until exit."""
        send, receive = anyio.create_memory_object_stream[HostEvent](math.inf)
        self._watching.setdefault(session_id, set()).add(send)
        try:
            if self._pump is None:
                self._generation += 1
                self._subscribed = anyio.Event()
                self._pump = anyio.CancelScope()
                pump, generation, subscribed = self._pump, self._generation, self._subscribed

                async def run() -> None:
                    await self._run_pump(pump, generation, subscribed)

                self._host._start_owned(run)
            await self._subscribed.wait()
            with receive:
                yield receive
        finally:
            watchers = self._watching.get(session_id, set())
            watchers.discard(send)
            send.close()
            if not watchers:
                self._watching.pop(session_id, None)
            if not self._watching and self._pump is not None:
                self._pump.cancel()
                self._pump = None

    async def _run_pump(self, scope: anyio.CancelScope, generation: int, subscribed: anyio.Event) -> None:
        try:
            with scope:
                async with self._host.subscribe(buffer=1_000_000) as events:
                    subscribed.set()
                    async for event in events:
                        if generation != self._generation:
                            return
                        self._route(event)
        finally:
            subscribed.set()
            if generation == self._generation:  # the host closed: every watcher's stream ends
                for watchers in self._watching.values():
                    for send in watchers:
                        send.close()

    def _route(self, event: HostEvent) -> None:
        if isinstance(event, Lagged):
            targets = [s for watchers in self._watching.values() for s in watchers]
        else:
            if isinstance(event, JobStarted):
                self._jobs[event.job_id] = event.session_id
            if isinstance(event, JobFinished):
                session_id = self._jobs.pop(event.job_id, None)
            elif isinstance(event, SessionCreated) and isinstance(event.lineage, SpawnLineage):
                session_id = event.lineage.parent_session_id
            else:
                session_id = getattr(event, "session_id", None)
            targets = list(self._watching.get(session_id, ())) if isinstance(session_id, str) else []
        for send in targets:
            try:
                send.send_nowait(event)
            except (anyio.ClosedResourceError, anyio.BrokenResourceError):
                pass  # that run ended between two events

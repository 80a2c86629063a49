"""Per-scope event numbering (docs/embedding.md): ``seq`` as a scope sees it counts only its events.

The host numbers its events in one sequence (``seq``); a scoped subscriber that saw those
numbers would read another tenant's activity in the gaps. `ScopeNumbers` is fed every
event the host's ring receives (`EventHub`'s ``observe`` seam) and numbers, per scope,
the events that scope sees: 1, 2, 3, ... with no gap, in host order. A `ScopedEventStream`
hands out those numbers as ``seq``, reports ``lagged(missed=N)`` with N counted in them,
and resumes ``subscribe(after=N)`` from them. Which event a scope sees is decided once,
here (`Membership`), for numbering and filtering alike.

Numbers are this host's, over the events it keeps (``history``, or the largest buffer a
subscriber asked for): a scope is numbered from the oldest event kept when it is first
numbered, and a client resumes on the host that numbered it (a seq this host never gave
is "all that is new", as for `Host.subscribe`). With several hosts on one store, events
written before this host started are not numbered by it (a scoped stream starts with
what this host saw).
"""

from __future__ import annotations

from collections import deque
from collections.abc import Callable
from typing import TYPE_CHECKING, Final, final

import anyio

from modular_sdk import SessionId

from ._events import HostEvent, Lagged

if TYPE_CHECKING:
    from ..stores._protocol import IntegratorStore, Store
    from ._scope import Scope

__all__ = ["Membership", "ScopeNumbers"]

_CACHED: Final = 4096
"""Sessions (and jobs) whose membership a scope remembers; beyond, it reads them again."""


@final
class Membership:
    """Whether an event belongs to a scope: by the tags of its session (read once per session)."""

    __slots__ = ("_integrator_store", "_jobs", "_scope", "_store", "_visible")

    def __init__(self, store: Store, integrator_store: IntegratorStore, scope: Scope) -> None:
        self._store = store  # the sessions' records: their tags
        self._integrator_store = integrator_store  # the jobs' records: their sessions
        self._scope = scope
        self._visible: dict[str, bool] = {}  # session id -> inside (tags never change)
        self._jobs: dict[str, bool] = {}  # job id -> inside

    async def _inside(self, session_id: str) -> bool:
        known = self._visible.get(session_id)
        if known is None:
            if len(self._visible) >= _CACHED:  # a host-lived cache stays bounded: start again
                self._visible.clear()
            record = await self._store.get_session(SessionId(session_id))
            known = self._visible[session_id] = record is not None and self._scope.admits(record.tags)
        return known

    async def passes(self, event: HostEvent) -> bool:
        """Whether ``event`` is the scope's (an event of no session, a palette command's, is no tenant's)."""
        if isinstance(event, Lagged):
            return False  # a scope counts its own (ScopedEventStream)
        session_id = getattr(event, "session_id", None)
        job_id = getattr(event, "job_id", None)
        if event.kind == "session_created":
            self._visible[event.session_id] = self._scope.admits(event.tags)
        if isinstance(session_id, str):
            inside = await self._inside(session_id)
            if isinstance(job_id, str):
                self._jobs[job_id] = inside
            return inside
        if isinstance(job_id, str):  # job_finished names only its job: the job's session decides
            known = self._jobs.get(job_id)
            if known is None:
                if len(self._jobs) >= _CACHED:
                    self._jobs.clear()
                record = await self._integrator_store.get_job(job_id)
                known = self._jobs[job_id] = record is not None and await self._inside(record.session_id)
            return known
        return False


@final
class _Count:
    """One scope's numbering: how many of its events were counted, through which position."""

    __slots__ = ("count", "lock", "membership", "numbered", "through")

    def __init__(self, membership: Membership, through: int) -> None:
        self.membership = membership
        self.count = 0
        self.through = through  # the position (in ScopeNumbers' events ever kept) counted up to
        self.numbered: dict[int, int] = {}  # host seq -> scope seq, for the events still kept
        self.lock = anyio.Lock()

    async def advance(self, events: deque[HostEvent], end: Callable[[], int], keep: int) -> None:
        """Number the scope's events up to the newest one kept (in order, once each); ``end()``:
        the position after the newest event (it moves while membership is read)."""
        async with self.lock:
            while True:
                oldest = end() - len(events)
                self.through = max(self.through, oldest)  # dropped before being numbered: never will be
                if self.through >= end():
                    break
                event = events[self.through - oldest]
                self.through += 1
                if await self.membership.passes(event):
                    self.count += 1
                    assert event.seq is not None
                    self.numbered[event.seq] = self.count
            if len(self.numbered) > 2 * max(keep, 1):  # forget the numbers of events no longer kept
                kept = {e.seq for e in events}
                self.numbered = {s: n for s, n in self.numbered.items() if s in kept}


@final
class ScopeNumbers:
    """The host's per-scope numbering of its events (see the module docstring). One per host."""

    __slots__ = ("_counts", "_end", "_events", "_integrator_store", "_newest", "_store", "keep")

    def __init__(self, keep: int, *, store: Store, integrator_store: IntegratorStore) -> None:
        self._store = store  # what a scope's membership reads: the sessions' tags
        self._integrator_store = integrator_store  # and the jobs' sessions
        self.keep = keep  # grown by a subscriber's larger buffer (ScopedHost.subscribe)
        self._events: deque[HostEvent] = deque()  # the numbered (seq) events kept, oldest first
        self._end = 0  # the position after the newest event (events ever kept)
        self._newest = 0  # the newest seq kept
        self._counts: dict[frozenset[tuple[str, str]], _Count] = {}

    def saw(self, event: HostEvent) -> None:
        """`EventHub`'s ``observe``: every event its ring receives, in order (deltas are not numbered)."""
        if event.seq is None or event.seq <= self._newest:
            return  # a delta, or (several hosts) a row a catching-up stream read before the ring got it
        self._newest = event.seq
        self._events.append(event)
        self._end += 1
        while len(self._events) > self.keep:
            self._events.popleft()

    def _count(self, scope: Scope) -> _Count:
        key = frozenset(scope.tags.items())
        count = self._counts.get(key)
        if count is None:
            count = self._counts[key] = _Count(Membership(self._store, self._integrator_store, scope), self._end - len(self._events))
        return count

    async def _advance(self, count: _Count) -> None:
        await count.advance(self._events, lambda: self._end, self.keep)

    def keep_at_least(self, buffer: int) -> None:
        """Keep as many events as a subscriber's ``buffer`` (its lag is counted in them)."""
        self.keep = max(self.keep, buffer)

    async def number(self, scope: Scope, event: HostEvent) -> int | None:
        """The scope's seq of ``event`` (one the hub delivered), or ``None`` when it is not the scope's."""
        count = self._count(scope)
        if event.seq is None:
            return None
        self.saw(event)  # several hosts: a stream catching up from the store's rows may read it before the ring
        if event.seq not in count.numbered:
            await self._advance(count)
        return count.numbered.get(event.seq)

    async def upto(self, scope: Scope, host_seq: int) -> int:
        """The scope's seq of its newest event at or before ``host_seq`` (0: none numbered)."""
        count = self._count(scope)
        await self._advance(count)
        return max((n for s, n in count.numbered.items() if s <= host_seq), default=0)

    async def host_seq(self, scope: Scope, after: int) -> int | None:
        """The host seq to resume after, for a scope's ``after`` (``None``: a seq the scope was
        never given here, so only what is new follows)."""
        count = self._count(scope)
        await self._advance(count)
        if after == 0:
            return 0
        if after > count.count:
            return None
        by_scope = {n: s for s, n in count.numbered.items()}
        if after in by_scope:
            return by_scope[after]
        later = [s for s, n in count.numbered.items() if n > after]
        return min(later) - 1 if later else None  # numbered, then dropped: the gap is a lagged event

    async def passes(self, scope: Scope, event: HostEvent) -> bool:
        """Whether an unnumbered event (a reply delta) is the scope's."""
        return await self._count(scope).membership.passes(event)

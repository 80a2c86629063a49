"""Several hosts on one store: the event link between them (`HostsLink`).

What a host keeps of the store, and how fresh each read of it is, is `SessionCache`'s
(``_cache.py``): it takes a session's lock for a turn and reads what other hosts added and
erased, catches up with what they finished, and applies their facts. This module is the
link that feeds it, designed here once:

- the **event log**: every event but ``reply_delta`` is a row of the store, numbered in
  commit order, written in the transaction of the change it reports (a transactional
  outbox, `EventHub.committing`) or else (`EventHub.written`) before the session lock is
  let go or the call that published it returns, so seq order is the order things happened
  across hosts;
  each host hands its own events out from memory once their rows committed
  (`EventHub.written_own`), reads the other hosts' rows (woken by their NOTIFY, and every
  second anyway) and hands them to its subscribers, and ``subscribe(after=seq)`` reads
  them back;
- **coherent caches**: another host's ``turn_finished``, ``turn_erased``,
  ``turn_retracted`` and ``session_deleted`` rows are applied to the cache
  (`SessionCache.apply`) before subscribers see them, so reads are stale by about a second
  at most;
- **liveness**: each host keeps a claim it takes back by itself after a fault; every host
  looks for work whose host's claim has been gone for a grace period, and fails it as
  interrupted with its ``turn_finished`` in one transaction (one host claims each turn),
  then has the cache take in what changed.

With a single-writer store (`MemoryStore`, `SqliteStore`) there is no link.
"""

from __future__ import annotations

import contextlib
import json
from collections.abc import Callable, Sequence
from datetime import datetime
from typing import TYPE_CHECKING, final, get_args

import anyio
import attrs

from modular_sdk import ModularError, SerializationError
from modular_sdk._json import structure

from ..stores._errors import StoreError
from ..stores._records import TurnRecord
from ..stores._shared import EventRow, SharedStore
from ._cache import turn_finished
from ._events import EventHub, HostEvent, JobFinished, Replay, ReplyDelta, event_row

if TYPE_CHECKING:
    from ._cache import SessionCache

__all__ = [
    "APPLY_OTHER_HOSTS_FACTS",
    "DEAD_HOST_GRACE",
    "Absences",
    "HostsLink",
    "Outbox",
    "announce_claimed",
    "dead_hosts",
    "event_of",
    "event_row",
    "replay_of",
]


# -- one log for events, caches and dead hosts (docs/embedding.md) ----------------------------

_EVENT_CLASSES: dict[str, type[HostEvent]] = {  # every kind of the union (kinds added later included)
    attrs.fields(cls).kind.default: cls for cls in get_args(HostEvent)
}
_POLL = 1.0  # seconds between reads of the event rows when no NOTIFY woke this host (the rows are the truth)
_WATCH = 1.0  # seconds between looks for dead hosts' running turns
_KEEP = 0.5  # seconds between checks that this host's liveness claim is held
_UNWATCHED_READS = 0.1  # seconds a read waits for more rows when no subscriber waits for events (caches: 1 s bound)
DEAD_HOST_GRACE = 5.0  # seconds a host's claim must be seen gone on end before it is dead
_TRIM = 60.0  # seconds between deletions of event rows older than the retention

APPLY_OTHER_HOSTS_FACTS = True
"""Whether this host's event reader applies what other hosts committed to what it holds in
memory (`SessionCache.apply`). Always, but for tests, which set it ``False`` (the module's
seam for them) to play a reader that is late for good: the checks a host makes itself,
per session, must then keep an erased message from a model on their own."""


def event_of(seq: int | None, host_id: str, text: str) -> HostEvent:
    """The event a row (or a delta's payload) holds, numbered ``seq``, published by ``host_id``."""
    data = json.loads(text)
    cls = _EVENT_CLASSES.get(data.pop("kind", None))
    if cls is None:
        raise SerializationError(f"an event row of kind {text[:60]!r} is no kind this host knows", value=text, type_name="HostEvent")
    event: HostEvent = structure({**data, "seq": seq, "host_id": host_id}, cls)
    return event


def replay_of(store: SharedStore) -> Replay:
    """``subscribe(after=...)`` reading a shared store's event rows."""

    async def replay(after: int, limit: int) -> tuple[list[HostEvent], int]:
        trimmed = await store.trimmed_events()  # read first: rows deleted after it are then missing below
        rows = await store.events_after(after, limit)
        events: list[HostEvent] = []
        for seq, host, text in rows:
            try:
                events.append(event_of(seq, host, text))
            except (ValueError, TypeError, KeyError, ModularError):
                continue  # written by a newer host (a kind this one lacks)
        if rows and not events:  # a page of kinds this host lacks: the next one starts after it
            return await replay(rows[-1][0], limit)
        return events, trimmed

    return replay


@final
class Outbox:
    """Writes an `EventHub`'s outbox to the shared store, one batch at a time so rows keep the
    order of publishing: what the hub asks before a caller goes on or a subscriber starts
    (`OutboxWriter`), and what `HostsLink`'s writer task runs. Made before the hub, which
    passes itself with each request."""

    __slots__ = ("_store", "_writing")

    def __init__(self, store: SharedStore) -> None:
        self._store = store
        self._writing = anyio.Lock()

    async def write(self, hub: EventHub) -> None:
        """Write what ``hub`` has yet to write; `StoreError` (the events kept, in order) when the store is away."""
        async with self._writing:
            await hub.write_retries()
            while batch := hub.take_outbox():
                try:
                    with anyio.CancelScope(shield=True):  # a started write finishes
                        first, rewritten = await self._store.append_events([event_row(e) for e in batch])
                except StoreError:
                    hub.put_back(batch)  # kept, in order, for the next try
                    hub.want_read()  # (written, perhaps, before the connection failed)
                    raise
                hub.written_own(first, batch, rewritten=rewritten)

    async def written(self, hub: EventHub) -> None:
        """Write the outbox now, after any batch being written (`EventHub.written`); when the
        store is unreachable the writer keeps the events and tries again. Nothing to wait for
        (most events commit with their change) returns at once."""
        if not hub.unwritten() and not self._writing.locked():
            return
        with contextlib.suppress(StoreError):
            await self.write(hub)

    async def settle(self, hub: EventHub) -> int:
        """Write the outbox now; the newest seq (where a new subscriber starts)."""
        await self.write(hub)
        return await self._store.last_event_seq()


class HostsLink:
    """This host among the hosts of a shared store: one mechanism, run in the host's task group.

    - **The outbox.** Most events commit with the change they report (`EventHub.committing`
      stages their rows for the store write's transaction); what is left (events that report
      no write of their own) is written here, in order, batched; so are the writes the store
      was away for (`EventHub.retry`: a turn's finish, with its one ``turn_finished``).
    - **Reading.** Reads every host's rows after the last it read, woken by another host's
      NOTIFY or every `_POLL` seconds (a NOTIFY is a hint; the rows are the truth); when no
      subscriber waits for events it reads at most every `_UNWATCHED_READS` seconds (each
      host reads every other host's rows: with several hosts busy, a read per NOTIFY made
      each turn cost every host a read), and before handing another
      host's ``turn_finished``, ``turn_erased`` or ``session_deleted`` to subscribers has the
      cache reflect it (`SessionCache.apply`: stale by at most about a second).
    - **Liveness, a lease that survives faults.** Every `_KEEP` seconds makes sure this host's
      claim is held (`SharedStore.keep_claim`: taken back by itself after a server restart or
      a killed connection). Every `_WATCH` seconds looks for hosts that left work running and
      hold no claim; a host is dead only when this host has *seen* its claim gone for
      `DEAD_HOST_GRACE` seconds on end (an outage this host lived through counts for
      nothing: it saw nothing), so a live host whose connection blinked takes its claim
      back first. A dead host's turns are failed as interrupted and its jobs interrupted in
      one transaction with their ``turn_finished`` / ``job_finished`` rows
      (`SharedStore.claim_dead`): one host claims each, once.
    - Deletes event rows older than the store's retention.
    """

    def __init__(
        self, store: SharedStore, *, events: EventHub, outbox: Outbox, cache: SessionCache, now: Callable[[], datetime]
    ) -> None:
        self._events = events
        self._outbox = outbox  # what writes the hub's outbox (the hub asks it too)
        self._cache = cache  # what this host keeps of the store: fed every other host's facts
        self._now = now
        self._store = store
        self._reading = anyio.Lock()  # one read of the rows at a time (woken, asked for by the hub, closing)
        self._absences = Absences()  # hosts seen without their claim, and since when

    async def start(self) -> None:
        """Where this host starts reading: the newest row when it opens."""
        self._events.start_reading(await self._store.last_event_seq())

    async def run(self) -> None:
        async with anyio.create_task_group() as tg:
            tg.start_soon(self._write)
            tg.start_soon(self._read)
            tg.start_soon(self._watch)
            tg.start_soon(self._keep)

    async def flush(self) -> None:
        """Write what is left in the outbox and hand this host's subscribers the rows they have
        not read yet (the host closes: its last turns and jobs ended meanwhile)."""
        with contextlib.suppress(StoreError):  # the database is gone: a live host reports the turns
            await self._write_outbox()
            await self._catch_up()

    async def _write_outbox(self) -> None:
        await self._outbox.write(self._events)

    async def _write(self) -> None:
        hub = self._events
        while True:
            await hub.outbox_filled()
            for delta in hub.take_deltas():  # best-effort: a delta that cannot be sent is dropped
                with contextlib.suppress(StoreError):
                    await self._store.send_delta(f"{self._store.host_id} {event_row(delta).event}")
            try:
                await self._write_outbox()
                if hub.take_read_wanted():  # rows of this host's the hub could not hand out from memory
                    await self._catch_up()
            except StoreError:
                hub.wake_writer()
                await anyio.sleep(_POLL / 4)  # the server is unreachable: try again

    async def _read(self) -> None:
        while True:
            try:
                deltas = await self._store.wait_for_events(_POLL)
                for payload in deltas:
                    self._delta(payload)
                if not self._events.watched():  # nobody waits for them: one read for what a moment brings
                    await anyio.sleep(_UNWATCHED_READS)
                await self._catch_up()
            except StoreError:
                await anyio.sleep(_POLL / 4)  # the server is unreachable: try again

    def _delta(self, payload: str) -> None:
        host_id, _, text = payload.partition(" ")
        if host_id == self._store.host_id:
            return
        try:
            event = event_of(None, host_id, text)
        except (ValueError, KeyError, TypeError, ModularError):
            return  # best-effort: a payload that is not a delta is dropped
        if isinstance(event, ReplyDelta):
            self._events.deliver(event)

    async def _catch_up(self) -> None:
        """Hand out the rows after the last handed out, in seq order, each once: the hub hands
        out this host's own rows from memory when it can (`EventHub.written_own`), so a row
        read here may have been handed out meanwhile (`EventHub.deliver_row` passes it)."""
        hub = self._events
        async with self._reading:
            while True:
                rows = await self._store.events_after(hub.read_to, 500)
                for seq, host_id, text in rows:
                    if seq <= hub.read_to:
                        continue  # handed out from memory while the rows were read
                    try:
                        event = event_of(seq, host_id, text)
                    except (ValueError, TypeError, KeyError, ModularError):
                        hub.deliver_row(seq, None)  # written by a newer host (a kind this one lacks): not this host's to show
                        continue
                    if host_id != self._store.host_id and APPLY_OTHER_HOSTS_FACTS:
                        await self._cache.apply(event)  # what this host holds now says what another host committed
                    hub.deliver_row(seq, event)
                if len(rows) < 500:
                    return

    async def _keep(self) -> None:
        """Hold this host's claim: taken back by itself once the server is back."""
        while True:
            with contextlib.suppress(StoreError):  # the server is away: look again soon
                if await self._store.keep_claim():
                    self._events.wake_writer()  # back: write what waited
            await anyio.sleep(_KEEP)

    async def _watch(self) -> None:
        trimmed_at = 0.0
        while True:
            await anyio.sleep(_WATCH)
            try:
                await self._claim_dead()
                if anyio.current_time() - trimmed_at > _TRIM:
                    trimmed_at = anyio.current_time()
                    await self._store.trim_events()
            except StoreError:
                self._absences.clear()  # what this host did not see does not count as gone
                continue

    async def _claim_dead(self) -> None:
        """Fail the work of the hosts whose claim has been seen gone for `DEAD_HOST_GRACE` seconds."""
        absent = await self._store.absent_hosts() - {self._store.host_id}  # never itself: it is taking its claim back
        dead = self._absences.dead(absent, anyio.current_time())
        if not dead:
            return
        turns, jobs = await self._store.claim_dead(dead, self._now, announce_claimed(self._now))
        self._absences.clear(dead)
        await self._cache.claimed(turns)
        if turns or jobs:
            self._events.want_read()  # their rows, which this host's listener lets pass


class Absences:
    """When a host is dead, the one rule (`HostsLink` and ``host-sim fsck`` both follow it): its
    claim was seen gone on every look for `DEAD_HOST_GRACE` seconds on end. A look that
    failed counts for nothing (`clear`), so a live host whose connection blinked, or that
    lived through an outage, takes its claim back first."""

    def __init__(self) -> None:
        self._since: dict[str, float] = {}  # host -> when its claim was first seen gone

    def dead(self, absent: set[str], now: float) -> list[str]:
        """A look at ``now`` (seconds, `anyio.current_time`) found ``absent`` without their
        claim: those seen so for `DEAD_HOST_GRACE` seconds on end (a host seen back starts over)."""
        self._since = {h: self._since.get(h, now) for h in absent}
        return sorted(h for h, since in self._since.items() if now - since >= DEAD_HOST_GRACE)

    def clear(self, hosts: Sequence[str] | None = None) -> None:
        """Forget ``hosts`` (claimed), or every host (a look failed: nothing was seen)."""
        for host in list(self._since) if hosts is None else hosts:
            self._since.pop(host, None)


async def dead_hosts(store: SharedStore) -> list[str]:
    """The hosts dead by `Absences`' rule, looking every `_WATCH` seconds until each host seen
    without its claim is dead or back: at once when none is, else after `DEAD_HOST_GRACE`
    seconds (at most three times that while hosts keep coming and going)."""
    absences = Absences()
    began = anyio.current_time()
    while True:
        now = anyio.current_time()
        absent = await store.absent_hosts() - {store.host_id}
        dead = absences.dead(absent, now)
        if set(dead) == absent or now - began >= 3 * DEAD_HOST_GRACE:
            return dead
        await anyio.sleep(_WATCH)


def _job_interrupted(job_id: str) -> Callable[[int, datetime], JobFinished]:
    return lambda seq, at: JobFinished(seq=seq, at=at, job_id=job_id, status="interrupted", error_kind="interrupted")


def announce_claimed(now: Callable[[], datetime]) -> Callable[[Sequence[TurnRecord], Sequence[str]], Sequence[EventRow]]:
    """The ``turn_finished`` and ``job_finished`` rows of a dead host's turns and jobs (in the
    claim's transaction: whoever claims them says so, once)."""

    def rows(turns: Sequence[TurnRecord], jobs: Sequence[str]) -> Sequence[EventRow]:
        at = now()
        return [
            *(event_row(turn_finished(record)(0, record.finished_at or at)) for record in turns),
            *(event_row(_job_interrupted(job_id)(0, at)) for job_id in jobs),
        ]

    return rows

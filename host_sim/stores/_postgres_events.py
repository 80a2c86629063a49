"""The event log of hosts sharing a `PostgresStore` (docs/embedding.md), part of
`PostgresDriver` (see the `PostgresStore` module docstring, "The event log"): rows of ``host_sim.events``
written in seq order, a NOTIFY that wakes the other hosts, reply_delta payloads sent
best-effort, retention; and the statements with which an erasure takes the text of its
turns and commands out of the rows written before and after it.
"""

from __future__ import annotations

import contextlib
import threading
import time
from collections.abc import Callable, Sequence
from datetime import timedelta
from typing import TYPE_CHECKING, Any, Final, TypeVar

import anyio
import anyio.to_thread

from ._errors import StoreError
from ._postgres_sql import OWNER_LOCK, close_quietly
from ._records import ERASED_LABEL
from ._shared import EventRow

__all__ = [
    "APPEND_EVENTS_BODY",
    "APPEND_EVENTS_FUNCTION",
    "APPEND_EVENTS_SIGNATURE",
    "ERASE_COMMAND_EVENTS",
    "ERASE_COMMAND_EVENTS_OF",
    "ERASE_EVENTS",
    "ERASE_QUOTED_COMMAND_EVENTS",
    "ERASE_QUOTED_TURN_EVENTS",
    "FORGET_GONE_LISTENERS",
    "LISTENERS",
    "LOCK_EVENTS",
    "PostgresEvents",
    "appended",
    "close_listener",
]

_R = TypeVar("_R")

_EVENT_LOCK: Final = 0x48530004  # advisory lock (transaction): event rows commit in seq order
_EVENTS_CHANNEL: Final = "host_sim_events"  # NOTIFY: new event rows (a wake-up, never the rows)
_DELTAS_CHANNEL: Final = "host_sim_deltas"  # NOTIFY: reply_delta payloads (best-effort, live only)
_MAX_NOTIFY_PAYLOAD: Final = 7900  # bytes; PostgreSQL's limit is 8000

_BLANK = "CASE WHEN e.event::jsonb->>'{0}' IS NULL THEN NULL ELSE '' END"


def _erased_event(message: str) -> str:
    """The JSON of event row ``e`` with the text of its (erased) turn gone; ``message`` is the erased message."""
    return (
        "(CASE e.kind "
        f"WHEN 'turn_started' THEN jsonb_set(e.event::jsonb, '{{message}}', {message}) "
        f"WHEN 'turn_finished' THEN e.event::jsonb || jsonb_build_object('reply', {_BLANK.format('reply')}, "
        f"'error', {_BLANK.format('error')}) "
        "WHEN 'tool_called' THEN jsonb_set(e.event::jsonb, '{input}', '{}'::jsonb) "
        f"WHEN 'tool_finished' THEN e.event::jsonb || jsonb_build_object('output', {_BLANK.format('output')}, "
        f"'error', {_BLANK.format('error')}) "
        "WHEN 'notification' THEN e.event::jsonb || '{\"title\": \"\", \"body\": \"\"}'::jsonb "
        "WHEN 'turn_retracted' THEN e.event::jsonb || '{\"reason\": \"(erased)\"}'::jsonb "
        "ELSE e.event::jsonb END)::text"
    )


ERASE_EVENTS: Final = (  # what the event rows of an erased turn said goes with it (the kinds that hold text)
    f"UPDATE host_sim.events e SET event = {_erased_event('%s::jsonb')} WHERE e.turn_id = %s"
)
ERASE_COMMAND_EVENTS_OF: Final = (  # the command_finished rows of the commands an erasure erased
    "UPDATE host_sim.events e SET event = (e.event::jsonb || jsonb_build_object('text', '', "
    f"'error', {_BLANK.format('error')}))::text WHERE e.session_id = ANY(%s) AND e.kind = 'command_finished' "
    "AND EXISTS (SELECT 1 FROM host_sim.invocations i WHERE i.id = e.event::jsonb->>'invocation_id' "
    "AND i.erased_at IS NOT NULL)"
)
# Rows just written that an erasure committed before them would have erased (made before it,
# written after): each statement is sent only when the batch holds rows of the kinds it erases,
# and is driven by the batch's own turns or sessions (``%s``: their ids) and seqs (``FIRST_SEQ``:
# the batch's first, an InitPlan evaluated once), so it reads a few rows by key whatever the
# size of the tables (a filter on every erased turn and a volatile seq bound per row cost a
# turn more than its commit's fsync).
_ERASE_NEW_EVENTS: Final = (  # rows about a turn erased meanwhile
    f"UPDATE host_sim.events e SET event = {_erased_event('t.message::jsonb')} FROM host_sim.turns t "
    "WHERE t.id = ANY(%s) AND t.erased_at IS NOT NULL AND e.turn_id = t.id AND e.seq >= FIRST_SEQ"
)
_ERASE_NEW_COMMAND_EVENTS: Final = (  # command_finished rows of a session deleted meanwhile
    "UPDATE host_sim.events e SET event = (e.event::jsonb || jsonb_build_object('text', '', "
    f"'error', {_BLANK.format('error')}))::text FROM host_sim.deletions d "
    "WHERE d.session_id = ANY(%s) AND e.session_id = d.session_id AND e.seq >= FIRST_SEQ "
    "AND e.kind = 'command_finished'"
)
_ERASE_NEW_QUOTED_EVENTS: Final = (  # rows about a turn that lost a quoted error meanwhile
    f"UPDATE host_sim.events e SET event = (e.event::jsonb || jsonb_build_object('error', '{ERASED_LABEL}'))::text "
    f"FROM host_sim.turns t WHERE t.id = ANY(%s) AND t.erased_at IS NULL AND t.error = '{ERASED_LABEL}' "
    "AND e.turn_id = t.id AND e.seq >= FIRST_SEQ AND e.kind = 'turn_finished' AND e.event::jsonb->>'error' IS NOT NULL"
)
_ERASE_NEW_ERASED_COMMAND_EVENTS: Final = (  # rows about a command erased meanwhile (forget, a quoted error)
    "UPDATE host_sim.events e SET event = (e.event::jsonb || jsonb_build_object('text', '', "
    f"'error', {_BLANK.format('error')}))::text FROM host_sim.invocations i "
    "WHERE e.seq >= FIRST_SEQ AND e.kind = 'command_finished' AND i.id = e.event::jsonb->>'invocation_id' "
    "AND (i.erased_at IS NOT NULL OR i.error = '')"
)
_TURN_TEXT_KINDS: Final = frozenset(  # the kinds whose text `_erased_event` takes out
    {"turn_started", "turn_finished", "tool_called", "tool_finished", "notification", "turn_retracted"}
)
ERASE_QUOTED_TURN_EVENTS: Final = (  # the turn_finished rows of turns whose error quoted erased text
    f"UPDATE host_sim.events e SET event = (e.event::jsonb || jsonb_build_object('error', '{ERASED_LABEL}'))::text "
    "WHERE e.turn_id = ANY(%s) AND e.kind = 'turn_finished' AND e.event::jsonb->>'error' IS NOT NULL"
)
ERASE_QUOTED_COMMAND_EVENTS: Final = (  # the command_finished rows of commands whose error quoted erased text
    "UPDATE host_sim.events e SET event = (e.event::jsonb || jsonb_build_object('text', '', "
    f"'error', {_BLANK.format('error')}))::text WHERE e.kind = 'command_finished' "
    "AND e.event::jsonb->>'invocation_id' = ANY(%s) AND e.event::jsonb->>'error' IS NOT NULL"
)
LOCK_EVENTS: Final = f"SELECT pg_advisory_xact_lock({_EVENT_LOCK}, 0)"  # appends and erasures, one at a time

def _each(array: str, found: str) -> str:
    """PL/pgSQL: ``v_hit`` true when ``found`` (a condition on ``v_key``) holds for a key of ``array``."""
    return f"FOREACH v_key IN ARRAY {array} LOOP v_hit := v_hit OR EXISTS (SELECT 1 {found}); END LOOP;"


def _gated(check: str, rule: str, using: str) -> str:
    """PL/pgSQL: run ``rule`` (an erasure rule's UPDATE, through EXECUTE, bound ``using``) only
    when ``check`` sets ``v_hit``, counting the rows it rewrote into ``v_changed``."""
    return f"""
    v_hit := false;
    {check}
    IF v_hit THEN
        EXECUTE $rule${rule}$rule$ USING {using};
        GET DIAGNOSTICS v_count = ROW_COUNT;
        v_changed := v_changed + v_count;
    END IF;"""


# What a batch of event rows does in its transaction, as one function of the schema: PL/pgSQL
# plans each of its statements once per connection (a simple query's statements are planned
# at every call: the erasure rules' UPDATEs took 0.3 to 0.7 ms of a turn's server time to plan,
# though they change a row only in a race). Each rule's UPDATE (the statements above, run as
# they are with EXECUTE) runs only when a check by key of the batch's own turns, sessions or
# commands finds what it would erase: every row an UPDATE could change needs that row to
# exist, so the checks change nothing of what is erased. Returns the first row's seq and how
# many rows the rules rewrote. Its parameters, in `PostgresEvents.event_statement`'s order:
_APPEND_PARAMETERS: Final = (
    ("p_host", "text"),
    ("p_kinds", "text[]"),
    ("p_sessions", "text[]"),
    ("p_turns", "text[]"),
    ("p_events", "text[]"),
    ("p_erase_turns", "text[]"),
    ("p_erase_sessions", "text[]"),
    ("p_quoted_turns", "text[]"),
)
APPEND_EVENTS: Final = f"SELECT host_sim.append_events({', '.join('%s' for _ in _APPEND_PARAMETERS)})"
APPEND_EVENTS_SIGNATURE: Final = f"host_sim.append_events({', '.join(kind for _, kind in _APPEND_PARAMETERS)})"
_ERASED_COMMAND_IN_BATCH: Final = (  # a command_finished row of the batch whose command was erased
    "FOR i IN 1 .. cardinality(p_kinds) LOOP IF p_kinds[i] = 'command_finished' THEN "
    "v_hit := v_hit OR EXISTS (SELECT 1 FROM host_sim.invocations WHERE id = p_events[i]::jsonb->>'invocation_id' "
    "AND (erased_at IS NOT NULL OR error = '')); END IF; END LOOP;"
)
APPEND_EVENTS_FUNCTION: Final = f"""
CREATE OR REPLACE FUNCTION host_sim.append_events(
    {", ".join(f"{name} {kind}" for name, kind in _APPEND_PARAMETERS)}
) RETURNS bigint[] LANGUAGE plpgsql AS $append$
DECLARE
    v_first bigint;
    v_seq bigint;
    v_changed bigint := 0;
    v_count bigint;
    v_key text;
    v_hit boolean;
BEGIN
    PERFORM pg_advisory_xact_lock({_EVENT_LOCK}, 0);
    FOR i IN 1 .. cardinality(p_kinds) LOOP
        INSERT INTO host_sim.events (host_id, kind, session_id, turn_id, event)
        VALUES (p_host, p_kinds[i], p_sessions[i], p_turns[i], p_events[i]) RETURNING seq INTO v_seq;
        v_first := coalesce(v_first, v_seq);
    END LOOP;{_gated(
        _each("p_erase_turns", "FROM host_sim.turns WHERE id = v_key AND erased_at IS NOT NULL"),
        _ERASE_NEW_EVENTS.replace("%s", "$1").replace("FIRST_SEQ", "$2"),
        "p_erase_turns, v_first",
    )}{_gated(
        _each("p_erase_sessions", "FROM host_sim.deletions WHERE session_id = v_key"),
        _ERASE_NEW_COMMAND_EVENTS.replace("%s", "$1").replace("FIRST_SEQ", "$2"),
        "p_erase_sessions, v_first",
    )}{_gated(
        _each("p_quoted_turns", f"FROM host_sim.turns WHERE id = v_key AND erased_at IS NULL AND error = '{ERASED_LABEL}'"),
        _ERASE_NEW_QUOTED_EVENTS.replace("%s", "$1").replace("FIRST_SEQ", "$2"),
        "p_quoted_turns, v_first",
    )}{_gated(_ERASED_COMMAND_IN_BATCH, _ERASE_NEW_ERASED_COMMAND_EVENTS.replace("FIRST_SEQ", "$1"), "v_first")}
    IF EXISTS (SELECT 1 FROM host_sim.listeners WHERE owner <> substr(p_host, 4)::bigint) THEN
        PERFORM pg_notify('{_EVENTS_CHANNEL}', p_host);  -- only another host listens for it
    END IF;
    RETURN ARRAY[v_first, v_changed];
END
$append$
"""
"""`host_sim.append_events`, made (or made again) by `_postgres_schema.prepare` whenever a
host opens a store that lacks it, or holds another version of it."""
APPEND_EVENTS_BODY: Final = APPEND_EVENTS_FUNCTION.split("$append$")[1]
"""What ``pg_proc.prosrc`` holds for this version of the function."""
LISTENERS: Final = """
CREATE TABLE IF NOT EXISTS host_sim.listeners (owner bigint PRIMARY KEY, since timestamptz NOT NULL DEFAULT now());
"""
"""The hosts that listen for event rows (their owner keys), which `APPEND_EVENTS_FUNCTION`
NOTIFYs: a row is written before its host LISTENs and deleted when it closes; a killed
host's row stays until a host opens the store (it costs a NOTIFY nobody hears, no more)."""
_JOIN_LISTENERS: Final = "INSERT INTO host_sim.listeners (owner) VALUES (%s) ON CONFLICT (owner) DO NOTHING"
_LEAVE_LISTENERS: Final = "DELETE FROM host_sim.listeners WHERE owner = %s"
FORGET_GONE_LISTENERS: Final = (  # the rows of hosts whose claim is gone (run by a host that opens)
    "DELETE FROM host_sim.listeners s WHERE NOT EXISTS (SELECT 1 FROM pg_catalog.pg_locks l "
    f"WHERE l.locktype = 'advisory' AND l.granted AND l.classid = {OWNER_LOCK}::oid AND l.objsubid = 2 "
    "AND l.objid = s.owner::oid)"
)
ERASE_COMMAND_EVENTS: Final = (  # a deleted session's command_finished events lose their text
    "UPDATE host_sim.events e SET event = (e.event::jsonb || jsonb_build_object('text', '', "
    f"'error', {_BLANK.format('error')}))::text WHERE e.session_id = %s AND e.kind = 'command_finished'"
)


class PostgresEvents:
    """The event log methods of `PostgresStore` (see the module docstring)."""

    __slots__ = ()

    if TYPE_CHECKING:  # supplied by PostgresDriver
        _owner: int
        _owner_conn: Any
        _listener: Any
        _listening: threading.Lock
        _event_retention: timedelta
        _psycopg: Any

        def connect(self) -> Any: ...
        def closed_error(self) -> StoreError: ...
        def fail(self, problem: str, remedy: str) -> StoreError: ...
        def database_error(self, exc: BaseException, doing: str) -> StoreError: ...
        async def query(self, sql: str, params: tuple[object, ...]) -> list[tuple[Any, ...]]: ...
        async def with_connection(self, work: Callable[[Any], _R]) -> _R: ...

    # -- the event log (docs/embedding.md) ------------------------------------------------

    @property
    def host_id(self) -> str:
        """This open store's owner key as text: the ``host_id`` of the events its host publishes."""
        return f"pg-{self._owner}"

    async def append_events(self, rows: Sequence[EventRow]) -> tuple[int, bool]:
        """Write event rows (in order) in one transaction and wake every other listening host;
        the first row's seq and whether the transaction rewrote their text (`Staged.rewritten`).

        The transaction holds an advisory lock while it takes its seqs, so event rows
        commit in seq order across hosts: a reader that has read up to seq N never later
        finds a row below N it has not read.
        """
        if not rows:
            return 0, False
        self.check_event_rows(rows)

        def run(conn: Any) -> tuple[int, bool]:
            try:
                with contextlib.ExitStack() as tail, conn.transaction():  # COMMIT ends tail's pipeline
                    written = self.insert_events(conn, rows, tail)
                return written()
            except self._psycopg.Error as exc:
                raise self.database_error(exc, "could not write events") from exc

        return await self.with_connection(run)

    def check_event_rows(self, rows: Sequence[EventRow]) -> None:
        for r in rows:
            if "\x00" in r.event:
                raise self.fail(f"cannot store a {r.kind} event holding a NUL character", "remove it where the text enters")

    def insert_events(
        self, conn: Any, rows: Sequence[EventRow], tail: contextlib.ExitStack
    ) -> Callable[[], tuple[int, bool]]:
        """In a worker thread, inside a transaction (the one of the change they report, or
        their own): queue ``rows`` numbered in commit order, and the NOTIFY that wakes the
        listening hosts (`event_statement`), in a pipeline ``tail`` ends. The caller ends its
        transaction block inside ``tail``, so its COMMIT rides in the same round trip: the
        event lock (taken last) and PostgreSQL's own NOTIFY lock are held only while the
        server numbers the rows and commits, never while this host's thread waits to be
        scheduled (on a loaded machine, what made two hosts slower than one).
        `PostgresDriver.transact` sends the same statement in its one simple query instead.
        What it returns gives, once the transaction committed, the first row's seq and whether
        the erasure rules rewrote any of them (`Staged.rewritten`)."""
        tail.enter_context(conn.pipeline())
        statement, params = self.event_statement(rows)
        cursor = conn.execute(statement, params)
        return lambda: appended(cursor.fetchone())

    def event_statement(self, rows: Sequence[EventRow]) -> tuple[str, tuple[object, ...]]:
        """The statement that inserts ``rows`` in a transaction (`APPEND_EVENTS`): takes the
        event lock, numbers and inserts the rows, has them apply to themselves the erasures
        committed before them (each rule keyed on the batch's own turns or sessions), and
        NOTIFYs the other hosts when one listens (its row in ``host_sim.listeners``), with
        this host's id as payload (its own listener lets it pass: the host has the events
        already). Its one row is `appended`'s to read."""
        turns = sorted({r.turn_id for r in rows if r.turn_id is not None and r.kind in _TURN_TEXT_KINDS})
        sessions = sorted({r.session_id for r in rows if r.session_id is not None and r.kind == "command_finished"})
        quoted = sorted({r.turn_id for r in rows if r.turn_id is not None and r.kind == "turn_finished"})
        return APPEND_EVENTS, (
            self.host_id,
            [r.kind for r in rows],
            [r.session_id for r in rows],
            [r.turn_id for r in rows],
            [r.event for r in rows],
            turns,
            sessions,
            quoted,
        )

    async def events_after(self, seq: int, limit: int) -> Sequence[tuple[int, str, str]]:
        """Up to ``limit`` event rows after ``seq`` as ``(seq, host_id, event)``, in seq order."""
        rows = await self.query(
            "SELECT seq, host_id, event FROM host_sim.events WHERE seq > %s ORDER BY seq LIMIT %s", (seq, limit)
        )
        return [(int(r[0]), str(r[1]), str(r[2])) for r in rows]

    async def trimmed_events(self) -> int:
        """The newest seq retention deleted (0: none)."""
        rows = await self.query("SELECT value FROM host_sim.meta WHERE key = 'events_trimmed'", ())
        return int(rows[0][0]) if rows else 0

    async def last_event_seq(self) -> int:
        """The newest event row's seq (0: none): where a host that opens starts reading."""
        rows = await self.query("SELECT max(seq) FROM host_sim.events", ())
        return int(rows[0][0]) if rows and rows[0][0] is not None else 0

    async def wait_for_events(self, timeout: float) -> list[str]:
        """Wait until a host wrote event rows (a NOTIFY) or ``timeout`` seconds passed; returns
        the reply_delta payloads that arrived meanwhile. A wake-up, never the truth: the rows are."""
        if self._owner_conn is None:
            raise self.closed_error()
        if self._listener is None or self._listener.closed:  # first use, or lost (the server restarted)
            await anyio.to_thread.run_sync(self._listen)  # the store holds it even if this task is cancelled
            return []  # listening now: what was written before, the caller reads at once
        listener, listening = self._listener, self._listening

        own = self.host_id

        def wait() -> list[str]:
            with listening:
                if listener.closed:
                    return []
                deltas: list[str] = []
                until = time.monotonic() + timeout
                try:
                    woken = False
                    while not woken and (left := until - time.monotonic()) > 0:
                        for note in listener.notifies(timeout=left, stop_after=1):
                            if note.channel == _DELTAS_CHANNEL:
                                deltas.append(note.payload)
                            elif note.payload != own:  # this host's own rows: its hub hands them out (or asks for a read)
                                woken = True
                        woken = woken or bool(deltas)
                    for note in listener.notifies(timeout=0):  # what came meanwhile: one read covers it
                        if note.channel == _DELTAS_CHANNEL:
                            deltas.append(note.payload)
                except self._psycopg.Error as exc:
                    close_quietly(listener)
                    raise self.database_error(exc, "lost its event listener") from exc
                return deltas

        return await anyio.to_thread.run_sync(wait, abandon_on_cancel=True)

    def _listen(self) -> None:
        if self._listener is not None:
            close_listener(self._listener, self._listening, None)
        conn = self.connect()
        try:
            # A host NOTIFYs only while another host's row is in host_sim.listeners, which
            # it reads under the event lock (`APPEND_EVENTS_FUNCTION`). This host's row goes
            # in first, then it listens, then it waits once for the event lock: an append
            # that looked before the row was there still holds that lock, so its rows are
            # committed before the caller's read; every append after that lock NOTIFYs.
            try:
                self.join_listeners(conn)
            except self._psycopg.errors.UndefinedTable:  # a store whose function NOTIFYs always (made
                pass  # by an older host-sim; a role that may not create tables opened it since)
            conn.execute(f"LISTEN {_EVENTS_CHANNEL}", ())
            conn.execute("SET lock_timeout = '10s'", ())  # a stuck appender fails this (retried), never hangs a close
            conn.execute(LOCK_EVENTS, ())
            conn.execute(f"LISTEN {_DELTAS_CHANNEL}", ())
        except self._psycopg.Error as exc:  # the connection died at once: the reader retries
            close_quietly(conn)
            raise self.database_error(exc, "could not listen for events") from exc
        except BaseException:
            close_quietly(conn)
            raise
        self._listener = conn

    def join_listeners(self, conn: Any) -> None:
        """On ``conn``: this host listens (its row in ``host_sim.listeners``; kept if there)."""
        conn.execute(_JOIN_LISTENERS, (self._owner,))

    def leave_listeners(self, conn: Any) -> None:
        """On ``conn``, best-effort: this host listens no more, so the other hosts stop
        NOTIFYing for it (a row left behind costs them a NOTIFY nobody hears, until a host
        opens the store and forgets it)."""
        with contextlib.suppress(self._psycopg.Error):
            if conn is not None and not conn.closed and not conn.broken:
                conn.execute(_LEAVE_LISTENERS, (self._owner,))

    async def send_delta(self, payload: str) -> None:
        """Hand a reply_delta to the other hosts' listeners (best-effort: dropped when too large)."""
        if len(payload.encode("utf-8")) > _MAX_NOTIFY_PAYLOAD or "\x00" in payload:
            return
        await self.query(f"SELECT pg_notify('{_DELTAS_CHANNEL}', %s)", (payload,))

    async def trim_events(self) -> int:
        """Delete event rows older than ``event_retention``; returns how many."""
        cutoff_seconds = self._event_retention.total_seconds()

        def run(conn: Any) -> int:
            try:
                with conn.transaction():
                    row = conn.execute(
                        "DELETE FROM host_sim.events WHERE seq <= (SELECT max(seq) FROM host_sim.events "
                        "WHERE written < now() - make_interval(secs => %s)) RETURNING seq",
                        (cutoff_seconds,),
                    ).fetchall()
                    if row:
                        conn.execute(
                            "INSERT INTO host_sim.meta (key, value) VALUES ('events_trimmed', %s) "
                            "ON CONFLICT (key) DO UPDATE SET value = GREATEST(host_sim.meta.value::bigint, "
                            "excluded.value::bigint)::text",
                            (str(max(int(r[0]) for r in row)),),
                        )
                    return len(row)
            except self._psycopg.Error as exc:
                raise self.database_error(exc, "could not delete old events") from exc

        return await self.with_connection(run)


def appended(row: Sequence[Any] | None) -> tuple[int, bool]:
    """What `APPEND_EVENTS` answered: the first row's seq, and whether a rule rewrote a row."""
    if row is None or not row[0] or row[0][0] is None:
        raise StoreError(
            f"host_sim.append_events answered {row!r}, not the first seq of the rows it wrote; "
            "the function was changed by hand: drop it (DROP FUNCTION host_sim.append_events), and the next "
            "host that opens the store makes it again"
        )
    first, changed = row[0]
    return int(first), int(changed) > 0


def close_listener(conn: Any, listening: threading.Lock, waker: Any) -> None:
    """Close a listener connection once no thread waits on it (``waker`` NOTIFYs to end a wait)."""
    try:
        if waker is not None and not waker.closed and not waker.broken:
            waker.execute(f"NOTIFY {_EVENTS_CHANNEL}", ())
    except Exception:  # noqa: BLE001 (the wait then ends at its timeout)
        pass
    with listening:
        close_quietly(conn)

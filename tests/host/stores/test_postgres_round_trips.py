"""What a warm turn and a fork cost a `PostgresStore` in round trips to the server, counted
at the driver (libpq's trace of every connection the store opens: a round trip is a
``Query`` or a ``Sync`` the client sends), so that a change that adds one fails here, not
only in benchmarks/postgres.py's figures.

A warm turn of a held session is four: the session lock with the erasure generation and the
turns other hosts added (one pipeline), the turn's begin (one transaction with its event
row), its finish (likewise), and the unlock (sent by the store's unlocker thread: the
caller does not wait for it). A fork is one: its transaction, which also
checks that the parent is not deleted (exact, API.md section 13, with no read before it). The host's link to the
other hosts (reading event rows, keeping its claim, looking for dead hosts) runs meanwhile
on its own schedule; its statements are not the turn's and are left out by their text.
A write transaction's statements go as EXECUTEs of statements the connection prepared on
their first use there (a round trip of its own, once per statement and connection, not
counted here; an EXECUTE is read as the statement it runs).
"""

from __future__ import annotations

import re
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path
from typing import IO, Any

import anyio
import psycopg
import pytest
from psycopg import pq

from host_sim import Host, HostEvent, PostgresStore, StoreError
from host_sim.testing import PostgresDriver

# The link's own statements (sessions/_across_hosts.py), which run beside a turn, not in it.
_LINK = re.compile(
    r"FROM host_sim\.events WHERE seq >|^SELECT 1$|SELECT DISTINCT o\.owner|events_trimmed|max\(seq\)|^LISTEN |"
    r"DELETE FROM host_sim\.events|pg_try_advisory_lock"
)


# A statement prepared on a connection, and what prepares one (`PreparedStatements`): once per
# statement and connection, not part of what a turn costs.
_EXECUTE = re.compile(r"EXECUTE (host_sim_[0-9a-f]+)")
_PREPARING = re.compile(r"PREPARE host_sim_|SET plan_cache_mode")


class Traced:
    """libpq's trace of every connection `PostgresDriver.connect` makes, one file each."""

    def __init__(self, folder: Path) -> None:
        self._folder = folder
        self._files: list[IO[bytes]] = []
        self._seen: list[int] = []

    def connect(self, original: Any) -> Any:
        def connect(driver: PostgresDriver) -> Any:
            conn = original(driver)
            trace = tempfile.TemporaryFile(dir=self._folder)
            conn.pgconn.trace(trace.fileno())
            conn.pgconn.set_trace_flags(pq.Trace.SUPPRESS_TIMESTAMPS | pq.Trace.REGRESS_MODE)
            self._files.append(trace)
            self._seen.append(0)
            return conn

        return connect

    def mark(self) -> None:
        """From here on: what `round_trips` counts."""
        for i, trace in enumerate(self._files):
            trace.seek(0, 2)
            self._seen[i] = trace.tell()

    def _since_mark(self) -> Iterator[list[list[str]]]:
        """Per connection, the round trips since `mark` (each the statements it carried, an
        EXECUTE of a statement the connection prepared spelled as that statement), and
        without the round trips that prepare statements (`preparing`)."""
        for i, trace in enumerate(self._files):
            trace.seek(0)
            prepared: dict[str, str] = {}
            trips: list[list[str]] = []
            pending: list[str] = []
            at = 0
            for raw in trace.read().splitlines(keepends=True):
                at += len(raw)
                fields = raw.decode(errors="replace").rstrip("\n").split("\t")
                if len(fields) < 3 or fields[0] != "F":
                    continue
                kind, rest = fields[2], "\t".join(fields[3:])
                query = rest.strip()[1:-1] if kind == "Query" else ""
                if query.startswith("PREPARE "):
                    name, _, body = query.removeprefix("PREPARE ").partition(" AS ")
                    prepared[name] = body
                if at <= self._seen[i] or _PREPARING.match(query):
                    continue
                if kind == "Parse":
                    pending.append(rest.split('"')[3])
                elif kind == "Query":
                    trips.append([_EXECUTE.sub(lambda m: prepared.get(m.group(1), m.group(0)), query)])
                elif kind == "Sync":
                    trips.append(pending)
                    pending = []
            yield trips

    def preparing(self) -> list[list[str]]:
        """Per connection, the names of the statements it prepared (since it connected)."""
        names: list[list[str]] = []
        for trace in self._files:
            trace.seek(0)
            text = trace.read().decode(errors="replace")
            names.append(re.findall(r'\tQuery\t "PREPARE (host_sim_[0-9a-f]+) AS ', text))
        return names

    def all_round_trips(self) -> list[list[str]]:
        """The round trips since `mark`, the link's included."""
        return [trip for trips in self._since_mark() for trip in trips]

    def round_trips(self) -> list[list[str]]:
        """The round trips since `mark` (each the statements it carried), the link's left out
        (a transaction of the link's, BEGIN and COMMIT included)."""
        kept: list[list[str]] = []
        for trips in self._since_mark():
            group: list[list[str]] = []  # the trips of a transaction begun with a BEGIN of its own
            for trip in trips:
                if not group and trip in (["COMMIT"], ["ROLLBACK"]):
                    continue  # ends a transaction begun before `mark` (the link's): not what is measured
                if trip == ["BEGIN"] or group:
                    group.append(trip)
                    if trip in (["COMMIT"], ["ROLLBACK"]):
                        if not all(_LINK.search(s) for t in group[1:-1] for s in t):
                            kept += group
                        group = []
                elif not all(_LINK.search(statement) for statement in trip):
                    kept.append(trip)
            kept += group
        return kept

    def close(self) -> None:
        for trace in self._files:
            trace.close()


@pytest.fixture
def traced(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Iterator[Traced]:
    traced = Traced(tmp_path)
    monkeypatch.setattr(PostgresDriver, "connect", traced.connect(PostgresDriver.connect))
    try:
        yield traced
    finally:
        traced.close()


async def _settled() -> None:
    await anyio.sleep(0.3)  # the link read the rows this host's last write woke it for


@pytest.mark.anyio
async def test_a_warm_turn_is_four_round_trips_and_a_fork_one_at_any_length_of_history(
    traced: Traced, postgres_dsn: str
) -> None:
    async with Host(store=PostgresStore(postgres_dsn)) as host:
        chat = await host.sessions.create()
        for i in range(3):
            await chat.run(f"warm {i}")
        middle = (await chat.turns())[1]
        await middle.fork()
        for length in (3, 30):
            while len(await chat.turns()) < length:
                await chat.run("more history")
            await chat.run("warm again")
            await _settled()

            traced.mark()
            await chat.run("the measured turn")
            await _settled()  # the unlock, which the store's unlocker thread sends after the turn returned
            turn = traced.round_trips()
            await _settled()
            traced.mark()
            await middle.fork()
            fork = traced.round_trips()

            assert len(turn) == 4, f"a warm turn at {length} turns took {len(turn)} round trips: {turn}"
            (lock,) = [t for t in turn if "pg_advisory_lock(" in t[0]]
            (query,) = lock  # one simple query: the lock, the erasure generation, the turns other hosts added
            assert "erasure_generation" in query and "FROM host_sim.turns" in query, lock
            assert len([t for t in turn if _transaction(t)]) == 2, turn  # the begin and the finish
            assert any("pg_advisory_unlock(" in t[0] for t in turn), turn
            assert len(fork) == 1, f"a fork at {length} turns took {len(fork)} round trips: {fork}"
            assert _transaction(fork[0]), fork
            assert "host_sim.deletions" in fork[0][0], fork  # the parent's deletion, checked in it
        prepared = traced.preparing()
        assert any(prepared), "the store prepared none of its statements"
        for names in prepared:  # once per statement and connection: never again at a later turn
            assert len(names) == len(set(names)), names


@pytest.mark.anyio
async def test_a_host_alone_hands_out_its_own_events_without_reading_its_rows_back(
    traced: Traced, postgres_dsn: str
) -> None:
    """Every event of a host alone reaches its subscriber, numbered as its row, with no read of
    the rows it wrote (it has their events: two reads a turn, when it read them back). Only
    the link's once-a-second look for other hosts' rows reads, whatever the number of turns."""
    async with Host(store=PostgresStore(postgres_dsn)) as host, host.subscribe() as events:
        chat = await host.sessions.create()
        await chat.run("warm")
        await _settled()
        traced.mark()
        began = time.monotonic()
        for i in range(20):
            await chat.run(f"turn {i}")
        await (await chat.turns())[3].fork()
        took = time.monotonic() - began
        reads = [s for trip in traced.all_round_trips() for s in trip if "FROM host_sim.events WHERE seq >" in s]
        seen: list[HostEvent] = []
        with anyio.fail_after(10):
            async for event in events:
                seen.append(event)
                if event.kind == "session_created" and event.session_id != chat.id:
                    break
    assert len(reads) <= 1 + took, f"{len(reads)} reads of the event rows in {took:.2f} s: {reads[:3]}"
    assert [e.kind for e in seen].count("turn_finished") == 21
    with psycopg.connect(postgres_dsn, autocommit=True) as conn:
        stored = [int(r[0]) for r in conn.execute("SELECT seq FROM host_sim.events ORDER BY seq").fetchall()]
    assert [e.seq for e in seen] == stored[-len(seen) :]


def _transaction(trip: list[str]) -> bool:
    """Whether ``trip`` carried a whole write transaction, BEGIN to COMMIT."""
    return len(trip) == 1 and trip[0].startswith("BEGIN;") and trip[0].endswith("; COMMIT")


@pytest.mark.anyio
async def test_a_write_whose_expectation_fails_is_refused_whole_with_its_own_words(postgres_dsn: str) -> None:
    """A turn finished twice (a dead host's turn claimed meanwhile, say): the second finish
    changes no row, the server refuses it inside the one round trip, nothing of it commits,
    and the refusal names the turn, as when each statement was its own round trip."""
    store = PostgresStore(postgres_dsn)
    async with Host(store=store) as host:
        chat = await host.sessions.create()
        await chat.run("first")
        record = (await store.get_turns(chat.id))[0]
        with pytest.raises(StoreError, match=re.escape(record.id)) as refused:
            await store.finish_turn(record)
        assert "refused a write" in str(refused.value)
    with psycopg.connect(postgres_dsn, autocommit=True) as conn:
        assert conn.execute("SELECT count(*) FROM host_sim.turns").fetchone() == (1,)
        assert conn.execute("SELECT status FROM host_sim.turns").fetchone() == ("completed",)


@pytest.mark.anyio
async def test_text_with_percents_quotes_and_backslashes_is_stored_as_sent(postgres_dsn: str) -> None:
    """The statements of a transaction travel with their parameters bound by the driver:
    what a user types is stored byte for byte, whatever it quotes."""
    tricky = "100% of %s and %(name)s, it's \\'; DROP TABLE x; -- \u00e9\U0001f600 $1 ?"
    store = PostgresStore(postgres_dsn)
    async with Host(store=store) as host:
        chat = await host.sessions.create(tags={"user": tricky})
        answer = await chat.run(tricky)
        (record,) = await store.get_turns(chat.id)
    assert answer.text == f"echo: {tricky}"
    assert record.reply == f"echo: {tricky}"
    async with Host(store=PostgresStore(postgres_dsn)) as again:
        reread = await again.sessions.get(chat.id)
        assert [t.reply for t in await reread.turns()] == [f"echo: {tricky}"]
        assert reread.tags == {"user": tricky}


@pytest.mark.anyio
async def test_a_host_whose_connections_lost_their_prepared_statements_keeps_writing(
    traced: Traced, postgres_dsn: str
) -> None:
    """A pooler's ``DISCARD ALL`` (or a ``DEALLOCATE ALL``) between turns takes away what the
    store's connections prepared: the next turn, lock and fork still run (unprepared, once),
    nothing is refused or lost, and the statements are prepared again for the turns after."""
    connections: list[Any] = []
    original = PostgresDriver.connect

    def keeping(driver: PostgresDriver) -> Any:
        conn = original(driver)
        connections.append(conn)
        return conn

    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(PostgresDriver, "connect", keeping)
        async with Host(store=PostgresStore(postgres_dsn)) as host:
            chat = await host.sessions.create()
            await chat.run("before")
            await _settled()
            before = sum(len(names) for names in traced.preparing())
            replies: list[str] = []
            for i in range(3):  # each time on the connections as the last turn left them
                await _settled()
                for conn in connections:  # psycopg serializes this with the store's own use of conn
                    if not conn.closed:
                        conn.execute("DEALLOCATE ALL")
                replies.append((await chat.run(f"after reset {i}")).text)
                fork = await (await chat.turns())[0].fork()
                replies.append((await fork.run(f"in fork {i}")).text)
            await _settled()
            history = [t.reply for t in await chat.turns()]
    assert replies == [f"echo: {p} {i}" for i in range(3) for p in ("after reset", "in fork")]
    assert history == [f"echo: {p}" for p in ("before", "after reset 0", "after reset 1", "after reset 2")]
    assert sum(len(names) for names in traced.preparing()) > before  # prepared again
    with psycopg.connect(postgres_dsn, autocommit=True) as conn:
        assert conn.execute("SELECT count(*) FROM host_sim.turns").fetchone() == (7,)  # four in the session, one in each fork

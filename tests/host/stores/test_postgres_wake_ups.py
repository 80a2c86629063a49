"""Who a PostgreSQL host wakes when it writes event rows.

A host NOTIFYs ``host_sim_events`` only while another host listens (its row in
``host_sim.listeners``, written before it LISTENs): a host alone wakes nobody, since its own
listener would only let the NOTIFY pass, and the server and the host spent a tenth of a
turn on it. What must never follow is a host that listens and is not woken: these tests
make the other hosts' safety net (a read every second even when nobody woke them) a minute
long, so that a missed wake-up hangs the test instead of arriving a second late.
"""

from __future__ import annotations

from collections.abc import Iterator

import anyio
import psycopg
import pytest
from psycopg.rows import TupleRow

from host_sim import Host, PostgresStore
from host_sim.testing import across_hosts


@pytest.fixture
def no_safety_net(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    monkeypatch.setattr(across_hosts, "_POLL", 60.0)  # a host reads other hosts' rows only when woken
    yield


def _heard(conn: psycopg.Connection[TupleRow], seconds: float) -> list[str]:
    return [n.payload for n in conn.notifies(timeout=seconds)]


@pytest.mark.anyio
async def test_a_host_alone_wakes_nobody_and_wakes_a_host_once_it_listens(postgres_dsn: str) -> None:
    with psycopg.connect(postgres_dsn, autocommit=True) as ear:
        store = PostgresStore(postgres_dsn)
        async with Host(store=store) as host:
            me = store.host_id
            ear.execute("LISTEN host_sim_events")  # not a host: no row in host_sim.listeners
            chat = await host.sessions.create()
            for i in range(5):
                await chat.run(f"alone {i}")
            await (await chat.turns())[0].fork()
            alone = await anyio.to_thread.run_sync(_heard, ear, 0.5)

            async with Host(store=PostgresStore(postgres_dsn)) as other, other.subscribe():
                with anyio.fail_after(10):
                    while not ear.execute("SELECT count(*) FROM host_sim.listeners").fetchone() == (2,):
                        await anyio.sleep(0.05)  # the other host's reader started listening
                await chat.run("watched")
                watched = await anyio.to_thread.run_sync(_heard, ear, 0.5)
            await anyio.to_thread.run_sync(_heard, ear, 0.2)  # the other host's listener woken to close
            await chat.run("alone again")
            again = await anyio.to_thread.run_sync(_heard, ear, 0.5)
    assert alone == [], f"a host alone sent {len(alone)} NOTIFYs"
    assert me in watched, f"a host did not wake the host that listens: {watched}"
    assert again == [], "the other host closed: its row went with it"
    with psycopg.connect(postgres_dsn, autocommit=True) as conn:
        assert conn.execute("SELECT count(*) FROM host_sim.listeners").fetchone() == (0,)


@pytest.mark.anyio
async def test_a_host_that_joins_while_another_writes_is_woken_for_every_row_after_it_listens(
    postgres_dsn: str, no_safety_net: None
) -> None:
    """Host A writes turns without pause while hosts join one after another; each joining
    host's subscriber gets A's next turns promptly: never one that waits for a wake-up A
    did not send (A may have looked for listeners just before the joining host wrote its row)."""
    async with Host(store=PostgresStore(postgres_dsn)) as writer:
        chat = await writer.sessions.create()
        await chat.run("first")
        done = anyio.Event()

        async def write() -> None:
            i = 0
            while not done.is_set():
                await chat.run(f"busy {i}")
                i += 1

        async with anyio.create_task_group() as tasks:
            tasks.start_soon(write)
            for _ in range(8):
                async with Host(store=PostgresStore(postgres_dsn)) as joining, joining.subscribe() as events:
                    finished = 0
                    with anyio.fail_after(20):  # a missed wake-up would wait out the 60 s read
                        async for event in events:
                            if event.kind == "turn_finished" and event.session_id == chat.id:
                                finished += 1
                                if finished == 3:
                                    break
            done.set()

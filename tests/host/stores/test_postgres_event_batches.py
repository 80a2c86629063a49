"""A batch of event rows written after an erasure erases its own text, on PostgreSQL.

A host makes an event (a turn's ``turn_finished``, a command's ``command_finished``) before
an erasure and may write it after: the batch's function (``host_sim.append_events``) runs
each erasure rule on the batch's own rows, but only when a check by key finds what the rule
erases, and says whether it rewrote any row. The host hands a batch out from memory only
when it did not (`EventHub.written_own`); so the answer must be exact: a rewritten row
reported as untouched would show a subscriber text the store no longer holds.
"""

from __future__ import annotations

import json

import psycopg
import pytest

from host_sim import Host, PostgresStore, StoreError
from host_sim.testing import EventRow


def _row(kind: str, session_id: str, turn_id: str | None, **data: object) -> EventRow:
    event = {"kind": kind, "at": "2026-12-06T00:00:00+00:00", "session_id": session_id, **data}
    if turn_id is not None:
        event["turn_id"] = turn_id
    return EventRow(kind=kind, session_id=session_id, turn_id=turn_id, event=json.dumps(event))


def _stored(dsn: str, seq: int) -> dict[str, object]:
    with psycopg.connect(dsn, autocommit=True) as conn:
        row = conn.execute("SELECT event FROM host_sim.events WHERE seq = %s", (seq,)).fetchone()
    assert row is not None
    loaded: dict[str, object] = json.loads(row[0])
    return loaded


@pytest.mark.anyio
async def test_a_late_row_about_a_forgotten_turn_loses_its_text_and_says_it_was_rewritten(postgres_dsn: str) -> None:
    store = PostgresStore(postgres_dsn)
    async with Host(store=store) as host:
        chat = await host.sessions.create()
        kept = await chat.run("kept")
        forgotten = await chat.run("forget me")
        await host.lineage.forget(forgotten.turn.id, dry_run=False)

        late = _row("turn_finished", chat.id, forgotten.turn.id, status="completed", reply="forget me, echoed", error=None)
        first, rewritten = await store.append_events([late])
        assert rewritten
        assert _stored(postgres_dsn, first)["reply"] == ""

        alive = _row("turn_finished", chat.id, kept.turn.id, status="completed", reply="still here", error=None)
        first, rewritten = await store.append_events([alive])
        assert not rewritten
        assert _stored(postgres_dsn, first)["reply"] == "still here"


@pytest.mark.anyio
async def test_a_late_command_row_of_a_deleted_session_loses_its_text_and_says_it_was_rewritten(postgres_dsn: str) -> None:
    store = PostgresStore(postgres_dsn)
    async with Host(store=store) as host:
        gone = await host.sessions.create()
        await gone.run("hello")
        kept = await host.sessions.create()
        await host.sessions.delete(gone.id)

        def command(session_id: str) -> EventRow:
            return _row(
                "command_finished",
                session_id,
                None,
                mod_id="m",
                command_id="c",
                invocation_id="inv_none",
                text="/c secret",
                ok=True,
                error=None,
            )

        first, rewritten = await store.append_events([command(kept.id), command(gone.id)])
        assert rewritten
        assert _stored(postgres_dsn, first)["text"] == "/c secret"
        assert _stored(postgres_dsn, first + 1)["text"] == ""

        first, rewritten = await store.append_events([command(kept.id)])
        assert not rewritten
        assert _stored(postgres_dsn, first)["text"] == "/c secret"


@pytest.mark.anyio
async def test_a_store_made_before_the_batch_function_gets_it_when_a_host_opens_it(postgres_dsn: str) -> None:
    async with Host(store=PostgresStore(postgres_dsn)) as host:
        chat = await host.sessions.create()
        await chat.run("before")
    with psycopg.connect(postgres_dsn, autocommit=True) as conn:  # as a store of an older host-sim was
        conn.execute("DROP FUNCTION host_sim.append_events")
    async with Host(store=PostgresStore(postgres_dsn)) as host:
        again = await host.sessions.get(chat.id)
        assert (await again.run("after")).text == "echo: after"
    with psycopg.connect(postgres_dsn, autocommit=True) as conn:
        kinds = [r[0] for r in conn.execute("SELECT kind FROM host_sim.events ORDER BY seq").fetchall()]
    assert kinds[-2:] == ["turn_started", "turn_finished"]


@pytest.mark.anyio
async def test_a_store_without_the_batch_function_that_a_role_may_not_make_opens_and_its_writes_say_why(
    postgres_dsn: str,
) -> None:
    async with Host(store=PostgresStore(postgres_dsn)) as host:
        chat = await host.sessions.create()
        await chat.run("before")
    role = f"{psycopg.conninfo.conninfo_to_dict(postgres_dsn)['dbname']}_rows_only"  # roles are the server's: one per test
    with psycopg.connect(postgres_dsn, autocommit=True) as conn:  # an older store; a role that may only read and write rows
        conn.execute("DROP FUNCTION host_sim.append_events")
        conn.execute(f"CREATE ROLE {role} LOGIN")
        conn.execute(f"GRANT USAGE ON SCHEMA host_sim TO {role}")
        conn.execute(f"GRANT SELECT, INSERT, UPDATE ON ALL TABLES IN SCHEMA host_sim TO {role}")
        conn.execute(f"GRANT USAGE ON ALL SEQUENCES IN SCHEMA host_sim TO {role}")
    limited = psycopg.conninfo.make_conninfo(postgres_dsn, user=role)
    async with Host(store=PostgresStore(limited)) as host:
        again = await host.sessions.get(chat.id)
        assert [t.reply for t in await again.turns()] == ["echo: before"]
        with pytest.raises(StoreError, match="lacks the function host_sim.append_events") as refused:
            await again.run("after")
        assert "open it once with a role that may" in str(refused.value)

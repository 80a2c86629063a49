"""A memory record never changes except by its retraction and its erasure (API.md section 20),
and the database itself says so: on both SQL stores a trigger refuses an UPDATE or DELETE made
through raw SQL (a migration script, a careless admin) that would rewrite what a record is,
rests on or was made by, change its words while it is not erased, or un-retract it."""

from __future__ import annotations

import sqlite3
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Final

import pytest

from host_sim import Host, PostgresStore, SqliteStore, Store
from modular_sdk import AiPromptMessage

pytestmark = pytest.mark.anyio

FIXED: Final = ("id", "session_id", "kind", "read_from", "cites", "derived_from", "made_by", "created_at")
"""What a record is, rests on and was made by: never changes, whatever state the record is in."""

WORDS: Final = ("text", "data")
"""Its words: change only by its erasure."""

Run = Callable[[str, tuple[object, ...]], None]


@contextmanager
def sqlite_sql(path: Path) -> Iterator[Run]:
    conn = sqlite3.connect(path)
    try:

        def run(sql: str, params: tuple[object, ...]) -> None:
            with conn:
                conn.execute(sql.replace("%s", "?").replace("host_sim.", ""), params)

        yield run
    finally:
        conn.close()


@contextmanager
def postgres_sql(dsn: str) -> Iterator[Run]:
    import psycopg

    with psycopg.connect(dsn, autocommit=True) as conn:

        def run(sql: str, params: tuple[object, ...]) -> None:
            conn.execute(sql, params)

        yield run


async def three_records(store: Store) -> tuple[str, str, str]:
    """A live record, a retracted one and an erased one, written by a host."""
    async with Host(store=store) as h:
        chat = await h.sessions.create()
        turn = await chat.send(AiPromptMessage(text="I live in Lisbon"))
        live = await h.memory.record(chat, "Alice lives in Lisbon", kind="state", cites=(turn.id,), data={"c": 1})
        retracted = await h.memory.record(chat, "Alice lives in Porto", kind="state", cites=(turn.id,), data={"c": 2})
        await h.memory.retract(retracted.id, reason="she moved")
        erased = await h.memory.record(chat, "Alice works at Acme", kind="state", cites=(turn.id,), data={"c": 3})
        await h.lineage.forget(erased.id, dry_run=False)
        return live.id, retracted.id, erased.id


def refuses(run: Run, sql: str, params: tuple[object, ...]) -> bool:
    try:
        run(sql, params)
    except Exception as exc:  # sqlite3.IntegrityError, psycopg.errors.IntegrityConstraintViolation
        assert "memory record" in str(exc), exc
        return True
    return False


def check_every_change(run: Run, live: str, retracted: str, erased: str) -> None:
    update = "UPDATE host_sim.memory_records SET {column} = %s WHERE id = %s"
    # an erased record is erased for good, and a reason is given once, with its retraction
    for column in (*WORDS, "erased_at", "retraction_reason"):
        assert refuses(run, update.format(column=column), ("changed", erased)), column
    assert refuses(run, update.format(column="retraction_reason"), ("another reason", retracted))
    for record_id in (live, retracted, erased):
        for column in FIXED:
            assert refuses(run, update.format(column=column), ("changed", record_id)), (column, record_id)
        assert refuses(run, "DELETE FROM host_sim.memory_records WHERE id = %s", (record_id,)), record_id
    for record_id in (live, retracted):  # words change only with the erasure
        for column in WORDS:
            assert refuses(run, update.format(column=column), ("changed", record_id)), (column, record_id)
    # a retraction is once, and for good
    assert refuses(run, update.format(column="retracted_at"), (None, retracted))
    assert refuses(run, update.format(column="retracted_at"), ("2020-01-01T00:00:00+00:00", retracted))
    # the changes the host itself makes are still allowed: a first retraction, an erasure
    run("UPDATE host_sim.memory_records SET retracted_at = %s, retraction_reason = %s WHERE id = %s", ("2030-01-01T00:00:00+00:00", "wrong", live))
    run(
        "UPDATE host_sim.memory_records SET text = %s, data = NULL, erased_at = %s WHERE id = %s",
        ("(erased)", "2030-01-01T00:00:00+00:00", live),
    )


async def test_a_sqlite_store_refuses_a_raw_sql_change_to_a_memory_record(tmp_path: Path) -> None:
    path = tmp_path / "store.sqlite"
    ids = await three_records(SqliteStore(path))
    with sqlite_sql(path) as run:
        check_every_change(run, *ids)


async def test_a_postgres_store_refuses_a_raw_sql_change_to_a_memory_record(postgres_dsn: str) -> None:
    ids = await three_records(PostgresStore(postgres_dsn))
    with postgres_sql(postgres_dsn) as run:
        check_every_change(run, *ids)
        assert refuses(run, "TRUNCATE host_sim.memory_records CASCADE", ())


async def test_a_postgres_store_made_before_the_guard_gets_it_when_a_host_opens_it(postgres_dsn: str) -> None:
    live, _, _ = await three_records(PostgresStore(postgres_dsn))
    with postgres_sql(postgres_dsn) as run:
        run("DROP TRIGGER memory_records_never_change ON host_sim.memory_records", ())
        run("DROP TRIGGER memory_records_are_kept ON host_sim.memory_records", ())
        run("DROP TRIGGER memory_records_are_never_truncated ON host_sim.memory_records", ())
    async with Host(store=PostgresStore(postgres_dsn)):
        pass
    with postgres_sql(postgres_dsn) as run:
        assert refuses(run, "UPDATE host_sim.memory_records SET kind = %s WHERE id = %s", ("changed", live))
        assert refuses(run, "DELETE FROM host_sim.memory_records WHERE id = %s", (live,))


async def test_a_sqlite_store_made_under_the_looser_rule_gets_the_strict_one_when_a_host_opens_it(tmp_path: Path) -> None:
    path = tmp_path / "store.sqlite"
    _, retracted, erased = await three_records(SqliteStore(path))
    with sqlite_sql(path) as run:  # the rule a store got before: an erased record's words could change
        run("DROP TRIGGER memory_records_never_change", ())
        run(
            "CREATE TRIGGER memory_records_never_change BEFORE UPDATE ON memory_records "
            "WHEN NEW.id IS NOT OLD.id BEGIN SELECT RAISE(ABORT, 'a memory record never changes'); END",
            (),
        )
        assert not refuses(run, "UPDATE host_sim.memory_records SET text = %s WHERE id = %s", ("(erased)", erased))
    async with Host(store=SqliteStore(path)):
        pass
    with sqlite_sql(path) as run:
        assert refuses(run, "UPDATE host_sim.memory_records SET text = %s WHERE id = %s", ("changed", erased))
        assert refuses(run, "UPDATE host_sim.memory_records SET retraction_reason = %s WHERE id = %s", ("other", retracted))

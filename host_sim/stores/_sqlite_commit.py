"""How a `SqliteStore` commits: each store call is a transaction of steps, and calls made
while another commits are committed together (group commit: one fsync for all), each in
its own savepoint, so a call that fails rolls back only itself.

Also the two statements every table is written with (`insert`, `upsert`). SQL and one connection only; `SqliteStore` queues the calls (`Batch`) and runs `commit` in
its worker thread.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Callable
from typing import Final

import attrs

from ._errors import StoreError
from ._rows import Need, Table
from ._sql import Dialect, Step

__all__ = ["DIALECT", "Batch", "Refused", "Step", "Txn", "check", "commit", "insert", "run", "upsert"]

DIALECT: Final = Dialect(
    mark="?",
    schema="",
    order="rowid",
    or_ignore=True,
    tag_position="position",
    parent_of="json_extract(lineage, '$.parent_session_id')",
    is_root="json_extract(s.lineage, '$.kind') = 'root'",
    by_artifact="artifact IS NOT NULL AND json_extract(artifact, '$.type') = ? AND json_extract(artifact, '$.source_id') = ?",
    is_notification="json_extract(message, '$.type') = 'notification'",
    session_tag_join="s.rowid = t.position",
    tags_of_sessions=(
        "INSERT INTO session_tags (session_id, key, value, position) "
        "SELECT s.id, j.key, j.value, s.rowid FROM sessions s, json_each(s.tags) j WHERE s.tags IS NOT NULL"
    ),
)
"""How SQLite spells what both SQL stores write (`_sql.Dialect`)."""


@attrs.define(eq=False)
class Txn:
    """One store call: its statements, and how it went."""

    steps: list[Step]
    error: StoreError | None = None


@attrs.define
class Batch:
    """Store calls queued for one commit."""

    txns: list[Txn] = attrs.Factory(list)
    done: bool = False


class Refused(Exception):
    """A step was refused (raised inside a transaction, turned into a `StoreError`)."""


def run(conn: sqlite3.Connection, txn: Txn) -> None:
    """Run the steps of ``txn``; raises `Refused` when one is refused."""
    for step in txn.steps:
        try:
            cursor = conn.execute(step.sql, step.params)
        except sqlite3.IntegrityError as exc:
            raise Refused(f"{step.refusal} ({exc})") from None
        if step.expect == "change" and cursor.rowcount < 1:
            raise Refused(step.refusal)
        if step.expect == "row" and cursor.fetchone() is None:
            raise Refused(step.refusal)


def commit(
    conn: sqlite3.Connection,
    txns: list[Txn],
    *,
    refuse: Callable[[str], StoreError],
    write_error: Callable[[sqlite3.Error], StoreError],
) -> None:
    """Run every transaction of a batch, each in its own savepoint, and commit once; each
    one's error (``refuse`` of a refusal, ``write_error`` of a database error) is left on it."""
    if len(txns) == 1 and len(txns[0].steps) == 1 and txns[0].steps[0].expect == "any":
        try:  # autocommit: one statement is one transaction
            run(conn, txns[0])
        except Refused as refused:
            txns[0].error = refuse(str(refused))
        except sqlite3.Error as exc:
            txns[0].error = write_error(exc)
        return
    try:
        conn.execute("BEGIN IMMEDIATE")
        for txn in txns:
            conn.execute("SAVEPOINT call")
            try:
                run(conn, txn)
            except (Refused, sqlite3.Error) as exc:
                conn.execute("ROLLBACK TO call")
                txn.error = refuse(str(exc)) if isinstance(exc, Refused) else write_error(exc)
            conn.execute("RELEASE call")
        conn.execute("COMMIT")
    except sqlite3.Error as exc:
        if conn.in_transaction:
            try:
                conn.execute("ROLLBACK")
            except sqlite3.Error:
                pass  # the connection reports the first error below
        error = write_error(exc)
        for txn in txns:
            txn.error = txn.error or error


def insert(table: Table) -> str:
    """The statement that writes a new row of ``table``."""
    return f"INSERT INTO {table.name} ({', '.join(table.columns)}) VALUES ({', '.join('?' for _ in table.columns)})"


def upsert(table: Table) -> str:
    """The statement that writes a row of ``table``, replacing the one of the same key."""
    updates = ", ".join(f"{c} = excluded.{c}" for c in table.columns if c not in table.key)
    return f"{insert(table)} ON CONFLICT ({', '.join(table.key)}) DO UPDATE SET {updates}"


def check(need: Need) -> Step:
    """The step that checks ``need`` (a row the write needs, or must not find) in SQLite."""
    return DIALECT.check(need)

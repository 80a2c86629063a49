"""What every `PostgresStore` module builds its SQL from: column lists, placeholders and
the step of a transaction (a statement with what its refusal means)."""

from __future__ import annotations

from typing import Any, Final

from ._rows import Need, Table
from ._sql import Dialect, Step

__all__ = ["DIALECT", "OWNER_LOCK", "Refused", "Step", "check", "close_quietly", "cols", "diagnosis", "marks"]

OWNER_LOCK: Final = 0x48530002  # advisory lock class: a live store (its owner key; the driver takes it)

DIALECT: Final = Dialect(
    mark="%s",
    schema="host_sim.",
    order="seq",
    or_ignore=False,
    tag_position="seq",
    extra_columns={
        "sessions": ("parent_session_id",),
        "turns": ("owner",),
        "edges": ("artifact_type", "artifact_source_id"),
        "jobs": ("owner",),
    },
    several_writers=True,
    array_parameters=True,
    writes_in_with=True,
    parent_of="parent_session_id",
    is_root="s.parent_session_id IS NULL",
    by_artifact="artifact_type = %s AND artifact_source_id = %s",
    is_notification="""message LIKE '{"type":"notification"%%'""",  # how the one converter writes one (type first)
    session_tag_join="s.id = t.session_id",
    tags_of_sessions=(
        "INSERT INTO host_sim.session_tags (key, value, seq, session_id) "
        "SELECT t.key, t.value, s.seq, s.id FROM host_sim.sessions s, jsonb_each_text(s.tags::jsonb) t "
        "WHERE s.tags IS NOT NULL"
    ),
)
"""How PostgreSQL spells what both SQL stores write (`_sql.Dialect`)."""


def cols(table: Table, alias: str = "") -> str:
    """The table's columns, comma-separated (each prefixed by ``alias``)."""
    return ", ".join(f"{alias}{c}" for c in table.columns)


def marks(n: int) -> str:
    """``n`` psycopg placeholders, comma-separated."""
    return ", ".join("%s" for _ in range(n))


class Refused(Exception):
    """A step was refused (raised inside a transaction, turned into a `StoreError`)."""


def diagnosis(exc: BaseException) -> str:
    """The server's primary message (and the constraint it names), else the exception's first line."""
    diag = getattr(exc, "diag", None)
    primary = getattr(diag, "message_primary", None)
    constraint = getattr(diag, "constraint_name", None)
    if isinstance(primary, str) and primary:
        return f"{primary}; constraint {constraint}" if isinstance(constraint, str) and constraint else primary
    lines = str(exc).strip().splitlines()
    return " ".join(line.strip() for line in lines) if lines else type(exc).__name__


def close_quietly(conn: Any, unlock: bool = False) -> None:
    try:
        if unlock and not conn.closed and not conn.broken:
            conn.execute("SELECT pg_advisory_unlock_all()", ())
        conn.close()
    except Exception:  # noqa: BLE001 (a connection that cannot close cleanly is gone anyway)
        pass


def check(need: Need) -> Step:
    """The step that checks ``need`` (a row the write needs, or must not find) in PostgreSQL."""
    return DIALECT.check(need)

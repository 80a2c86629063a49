"""Statements a `PostgresStore` connection prepared (`PreparedStatements`). Kept apart from
the modules whose strings are SQL for psycopg (tests/host/stores/test_postgres_sql.py reads
every percent there as a placeholder): this one rewrites those placeholders."""

from __future__ import annotations

import functools
import hashlib
import re
import threading
import weakref
from typing import Any, Final

__all__ = ["PREPARED_PER_CONNECTION", "PreparedStatements"]


_PLACEHOLDER: Final = re.compile(r"%(.)", re.DOTALL)
PREPARED_PER_CONNECTION: Final = 256
"""How many statements one connection keeps prepared (`PreparedStatements`); past them, a
statement new to it runs as it is."""


@functools.lru_cache(maxsize=1024)
def _prepared_form(template: str) -> tuple[str, str, int] | None:
    """``template`` (psycopg's ``%s`` placeholders, ``%%`` for a percent) as the server
    prepares it: its name (a digest of the template), its body (``$n`` placeholders) and its
    number of parameters; ``None`` for BEGIN, COMMIT and a template with another placeholder."""
    if template in ("BEGIN", "COMMIT"):
        return None
    count = 0
    foreign = False

    def number(match: re.Match[str]) -> str:
        nonlocal count, foreign
        if match.group(1) == "%":
            return "%"
        if match.group(1) != "s":
            foreign = True
            return match.group(0)
        count += 1
        return f"${count}"

    body = _PLACEHOLDER.sub(number, template)
    if foreign:
        return None
    return "host_sim_" + hashlib.blake2b(template.encode(), digest_size=10).hexdigest(), body, count


class PreparedStatements:
    """Which statements each connection of a `PostgresStore` has prepared (the one owner of
    that fact): `executing` turns statement templates into EXECUTEs of statements the
    connection prepared on their first use there, so that the server parses and plans a
    write transaction's statements once per connection instead of at every turn (0.2 to 0.4
    ms of its server time), while they still travel as one simple query, their parameters
    bound by the client. Only writes are prepared so: each finds its rows by key, where a
    generic plan is the plan (a read is never prepared; see `PostgresDriver.connect`).

    Preparing is a round trip of its own, once per statement and connection, outside any
    transaction (PREPARE is not transactional: a prepared statement outlives a rollback, so
    it is never sent inside the batch whose failure would leave its fate unknown). A
    statement the server will not prepare (a parameter whose type only its literal tells, as
    in ``IN (VALUES (%s, %s))``) is remembered on that connection and runs as it is. A
    connection that lost its statements (``DISCARD ALL`` from a pooler, ``DEALLOCATE``)
    raises `InvalidSqlStatementName` on an EXECUTE; its caller calls `forget` and runs the
    statements unprepared once (they are prepared again on their next use).
    """

    __slots__ = ("_guard", "_known", "_psycopg")

    def __init__(self, psycopg: Any) -> None:
        self._psycopg = psycopg
        self._guard = threading.Lock()  # the map is shared by the worker threads
        self._known: weakref.WeakKeyDictionary[Any, dict[str, bool]] = weakref.WeakKeyDictionary()

    def executing(self, conn: Any, statements: list[str]) -> list[str]:
        """In the worker thread that holds ``conn``: ``statements`` (templates, their
        parameters unchanged and in the same order) as EXECUTEs of prepared statements where
        the server prepares them; prepares those new to ``conn`` first."""
        with self._guard:
            known = self._known.setdefault(conn, {})
        out: list[str] = []
        for text in statements:
            form = _prepared_form(text)
            if form is None:
                out.append(text)
                continue
            name, body, count = form
            prepared = known.get(name)
            if prepared is None and len(known) < PREPARED_PER_CONNECTION:
                try:
                    conn.execute(f"PREPARE {name} AS {body}".replace("%", "%%"), ())
                    prepared = True
                except self._psycopg.ProgrammingError:  # the server will not: e.g. a parameter of no one type
                    prepared = False
                known[name] = prepared
            if not prepared:
                out.append(text)
            elif count:
                out.append(f"EXECUTE {name}({', '.join('%s' for _ in range(count))})")
            else:
                out.append(f"EXECUTE {name}")
        return out

    def forget(self, conn: Any) -> None:
        """``conn`` holds no prepared statement any more (they are prepared again on use)."""
        with self._guard:
            self._known.pop(conn, None)

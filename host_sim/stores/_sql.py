"""What the two SQL stores share beyond their rows (`_rows`): the step of a transaction, and a
`Dialect`, how each database spells a parameter, a table, writing order and a conflict it
ignores, with which code written once (`_sql_traces`, `_sql_jobs`, the checks of `_rows.Need`) becomes
SQL for either. What varies between SQLite and PostgreSQL is SQL, connections and
transactions; the rest is written once.
"""

from __future__ import annotations

from typing import Literal

import attrs

from ._rows import Need

__all__ = ["Dialect", "Step"]


@attrs.frozen
class Step:
    """One statement of a transaction; ``refusal`` is the error when it breaks a constraint,
    or (``expect="change"``) changes no row, or (``expect="row"``) finds none."""

    sql: str
    params: tuple[object, ...]
    refusal: str
    expect: Literal["any", "change", "row"] = "any"


@attrs.frozen(kw_only=True)
class Dialect:
    """How one database spells what both SQL stores write. Immutable.

    ``mark``: a parameter (``?``, ``%s``); ``schema``: what a table's name is prefixed with
    (``host_sim.``); ``order``: the column that keeps writing order (``rowid``, ``seq``);
    ``or_ignore``: whether ``INSERT OR IGNORE`` ignores a conflict (SQLite), else
    ``ON CONFLICT (...) DO NOTHING`` (PostgreSQL).
    """

    mark: str
    schema: str
    order: str
    or_ignore: bool

    def table(self, name: str) -> str:
        """The table ``name`` as a statement names it."""
        return f"{self.schema}{name}"

    def marks(self, n: int) -> str:
        """``n`` parameters, comma-separated."""
        return ", ".join(self.mark for _ in range(n))

    def insert_ignoring(self, table: str, columns: str, rest: str, key: str) -> str:
        """``INSERT INTO table (columns) rest`` that ignores a row whose ``key`` is taken."""
        if self.or_ignore:
            return f"INSERT OR IGNORE INTO {self.table(table)} ({columns}) {rest}"
        return f"INSERT INTO {self.table(table)} ({columns}) {rest} ON CONFLICT ({key}) DO NOTHING"

    def set_meta(self, key: str) -> str:
        """The statement that sets meta ``key`` (a constant) to one parameter."""
        if self.or_ignore:
            return f"INSERT OR REPLACE INTO {self.table('meta')} (key, value) VALUES ('{key}', {self.mark})"
        return (
            f"INSERT INTO {self.table('meta')} (key, value) VALUES ('{key}', {self.mark}) "
            "ON CONFLICT (key) DO UPDATE SET value = excluded.value"
        )

    def check(self, need: Need) -> Step:
        """The step that checks ``need`` (a row the write needs, or must not find)."""
        where = f"{need.column} = {self.mark}" + (f" AND {need.condition}" if need.condition else "")
        exists = f"{'NOT ' if need.absent else ''}EXISTS (SELECT 1 FROM {self.table(need.table)} WHERE {where})"
        return Step(f"SELECT 1 WHERE {exists}", (need.value,), need.refusal, "row")

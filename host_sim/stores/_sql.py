"""What the two SQL stores share beyond their rows (`_rows`): the step of a transaction, and a
`Dialect`, how each database spells a parameter, a table, writing order and a conflict it
ignores, with which code written once (`_sql_traces`, `_sql_jobs`, the checks of `_rows.Need`) becomes
SQL for either. What varies between SQLite and PostgreSQL is SQL, connections and
transactions; the rest is written once.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, Literal, Protocol, TypeVar

import attrs

from . import _rows
from ._errors import StoreError
from ._records import StoredState
from ._rows import Need, Table

__all__ = ["Dialect", "Driver", "SqlPart", "Step"]

_R = TypeVar("_R")


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
    ``ON CONFLICT (...) DO NOTHING`` (PostgreSQL); ``tag_position``: the column of a tag
    row that holds its session's ``order`` (``position``, ``seq``); ``extra_columns``: the
    columns a table has beyond its record's, by table (PostgreSQL copies fields out of
    the JSON so that a B-tree index serves each read, and names the host running a turn
    or job: ``owner``); ``several_writers``: hosts write the database at once (rebuilding
    the index locks its tables and refuses when sessions appeared meanwhile);
    ``any_of``: how a column is matched against a list (``IN (?, ...)``, ``= ANY(%s)``);
    ``writes_in_with``: a ``WITH`` may hold an ``INSERT ... RETURNING`` whose rows the rest
    of the statement reads (PostgreSQL: two writes in one statement, one planned and run
    where they were two).

    Where one database reads a field out of a record's JSON and the other a column copied
    from it (PostgreSQL, served by a B-tree index): ``parent_of``, a session row's parent
    id; ``is_root``, a root session (its row as ``s``); ``by_artifact``, an edge made for
    an artifact (two parameters: its type and source id); ``is_notification``, a turn whose
    message is a notification; ``session_tag_join``, a session (``s``) joined to its tag
    rows (``t``); ``tags_of_sessions``, the statement that derives every tag row from the
    sessions' JSON (rebuilding the index).
    """

    mark: str
    schema: str
    order: str
    or_ignore: bool
    tag_position: str
    extra_columns: Mapping[str, tuple[str, ...]] = attrs.field(factory=dict)
    several_writers: bool = False
    array_parameters: bool = False
    writes_in_with: bool = False
    parent_of: str
    is_root: str
    by_artifact: str
    is_notification: str
    session_tag_join: str
    tags_of_sessions: str

    def select(self, table: Table, where: str, columns: str | None = None) -> str:
        """The statement that reads ``columns`` (default: all of the record's) of the rows of ``table`` that ``where`` picks."""
        listed = ", ".join(table.columns) if columns is None else columns
        return f"SELECT {listed} FROM {self.table(table.name)} {where}".rstrip()

    def extra(self, table: Table) -> tuple[str, ...]:
        """The columns ``table`` has beyond its record's fields (written after them)."""
        return self.extra_columns.get(table.name, ())

    def insert(self, table: Table) -> str:
        """The statement that writes a new row of ``table`` (its extra columns last)."""
        columns = (*table.columns, *self.extra(table))
        return f"INSERT INTO {self.table(table.name)} ({', '.join(columns)}) VALUES ({self.marks(len(columns))})"

    def upsert(self, table: Table) -> str:
        """The statement that writes a row of ``table``, replacing the one of the same key."""
        updates = ", ".join(f"{c} = excluded.{c}" for c in (*table.columns, *self.extra(table)) if c not in table.key)
        return f"{self.insert(table)} ON CONFLICT ({', '.join(table.key)}) DO UPDATE SET {updates}"

    def any_of(self, column: str, values: Sequence[object]) -> tuple[str, tuple[object, ...]]:
        """``column`` matched against ``values`` (a list parameter where the database has them)."""
        if self.array_parameters:
            return f"{column} = ANY({self.mark})", (list(values),)
        return f"{column} IN ({self.marks(len(values))})", tuple(values)

    def table(self, name: str) -> str:
        """The table ``name`` as a statement names it."""
        return f"{self.schema}{name}"

    def marks(self, n: int) -> str:
        """``n`` parameters, comma-separated."""
        return ", ".join(self.mark for _ in range(n))

    def insert_ignoring(self, table: str, columns: str, rest: str, key: str) -> str:
        """``INSERT INTO table (columns) rest`` that ignores a row whose ``key`` is taken (``""``: any conflict)."""
        if self.or_ignore:
            return f"INSERT OR IGNORE INTO {self.table(table)} ({columns}) {rest}"
        target = f" ({key})" if key else ""
        return f"INSERT INTO {self.table(table)} ({columns}) {rest} ON CONFLICT{target} DO NOTHING"

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


class Driver(Protocol):
    """What the SQL store engine (`_sql_store.SqlStore`) needs of a database connection: the
    driver below it (sqlite3's `_sqlite.SqliteDriver`, psycopg's
    `_postgres_commit.PostgresDriver`). It runs statements and says what failed; what to
    write, and in which words, is the engine's and the `Dialect`'s."""

    async def open(self) -> None:
        """Connect and check (or make) the schema; opening an open driver does nothing."""
        ...

    async def close(self) -> None:
        """Let go of every connection; everything acknowledged is durable. Idempotent."""
        ...

    async def query(self, sql: str, params: tuple[object, ...]) -> list[tuple[Any, ...]]:
        """The rows of one read."""
        ...

    async def transact(self, steps: list[Step]) -> None:
        """Run ``steps`` in one transaction: all of them, or (raising) none."""
        ...

    async def read_all(self) -> StoredState:
        """Every record and index row, in writing order, from one consistent snapshot."""
        ...

    def columns(self, table: _rows.Table, alias: str = "") -> str:
        """The select list of ``table`` (each column prefixed by ``alias``)."""
        ...

    def row(self, table: _rows.Table, record: object) -> tuple[object, ...]:
        """The row ``record`` is written as (refused when the database cannot hold it)."""
        ...

    def decode(self, table: _rows.Table, record: type[_R], row: Sequence[object]) -> _R:
        """The record a row read holds (a damaged row raises)."""
        ...

    def refuse(self, problem: str) -> StoreError:
        """A write the store refuses."""
        ...

    def fail(self, problem: str, remedy: str) -> StoreError:
        """Any other failure, naming the store."""
        ...

    def damaged(self, problem: str) -> StoreError:
        """A row that cannot be read back (edited by hand, or a damaged file), naming the store."""
        ...

    @property
    def owner(self) -> int | None:
        """The key written into the running turns and jobs this host begins (``owner``), or
        ``None`` where one host writes the database."""
        ...

    def lacks(self, column: str) -> bool:
        """Whether the database lacks ``table.column`` (an older schema a reader opened)."""
        ...

    def has_table(self, table: str) -> bool:
        """Whether the database has the table ``table``."""
        ...


class SqlPart:
    """One part of the SQL store engine: the engine itself (`_sql_store.SqlStore`: sessions,
    turns, lineage) and the families it is composed of (`_sql_jobs.SqlJobs`,
    `_sql_traces.SqlTraces`, `_approvals.SqlApprovals`, `_sql_memory.SqlMemory`), each built
    over the engine's one `Dialect` and `Driver`. A part reaches the database only through
    its driver, by the few calls below."""

    __slots__ = ("_dialect", "_driver")

    def __init__(self, dialect: Dialect, driver: Driver) -> None:
        self._dialect = dialect
        self._driver = driver

    async def _query(self, sql: str, params: tuple[object, ...]) -> list[tuple[Any, ...]]:
        return await self._driver.query(sql, params)

    async def _transact(self, steps: list[Step]) -> None:
        await self._driver.transact(steps)

    async def _select(self, table: Table, record: type[_R], sql: str, params: tuple[object, ...]) -> tuple[_R, ...]:
        """The records of ``table`` a whole statement ``sql`` reads."""
        rows = await self._query(sql, params)
        return tuple(self._driver.decode(table, record, row) for row in rows)

    async def _records_where(self, table: Table, record: type[_R], where: str, params: tuple[object, ...]) -> tuple[_R, ...]:
        """The records of ``table`` that ``where`` (and what follows it: order, limit) picks."""
        sql = self._dialect.select(table, where, self._driver.columns(table))
        return await self._select(table, record, sql, params)

    def _row(self, table: Table, record: object) -> tuple[object, ...]:
        return self._driver.row(table, record)

    def _decode(self, table: Table, record: type[_R], row: Sequence[object]) -> _R:
        return self._driver.decode(table, record, row)

    def _refuse(self, problem: str) -> StoreError:
        return self._driver.refuse(problem)

    def _fail(self, problem: str, remedy: str) -> StoreError:
        return self._driver.fail(problem, remedy)

    def _lacks(self, column: str) -> bool:
        return self._driver.lacks(column)

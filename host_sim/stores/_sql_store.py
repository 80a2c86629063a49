"""The SQL store engine: what `SqliteStore` and `PostgresStore` are, written once.

SQLAlchemy's shape: an engine that does the work, over a `Dialect` that says how one
database spells it (parameters, upserts, ordering, the copied columns PostgreSQL indexes)
and a `Driver` below that runs it (sqlite3's file and group commit, psycopg's pool and
transactions). The engine holds the statements, the checks made before each write
(`_rows`), the step lists of each write and the erasure steps; a public store is this
engine built with its dialect and driver, plus what only its database can do (PostgreSQL:
several hosts, `_shared.SharedStore`).

Every read goes through `SqlStore._query` and every write through `SqlStore._transact`:
one place where a statement meets the driver.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, TypeVar

from . import _rows
from ._errors import StoreError
from ._records import StoredState
from ._sql import Dialect, Driver, Step

__all__ = ["SqlStore"]

_R = TypeVar("_R")


class SqlStore:
    """The engine both SQL stores are built on (see the module docstring): a `Dialect` and a `Driver`."""

    __slots__ = ("_dialect", "_driver")

    def __init__(self, dialect: Dialect, driver: Driver) -> None:
        self._dialect = dialect
        self._driver = driver

    async def open(self) -> None:
        """Open the store (connect, check or create its schema); reads no records. Opening an open store does nothing."""
        await self._driver.open()

    async def close(self) -> None:
        """Close the store; everything acknowledged is durable. Idempotent; it may be opened again."""
        await self._driver.close()

    async def read_all(self) -> StoredState:
        """Every record and index row, in writing order, from one consistent snapshot."""
        return await self._driver.read_all()

    # -- where a statement meets the driver --------------------------------------------

    async def _query(self, sql: str, params: tuple[object, ...]) -> Sequence[Sequence[Any]]:
        return await self._driver.query(sql, params)

    async def _transact(self, steps: list[Step]) -> None:
        await self._driver.transact(steps)

    async def _select(self, table: _rows.Table, record: type[_R], sql: str, params: tuple[object, ...]) -> tuple[_R, ...]:
        """The records of ``table`` a whole statement ``sql`` reads."""
        rows = await self._query(sql, params)
        return tuple(self._driver.decode(table, record, row) for row in rows)

    async def _records_where(
        self, table: _rows.Table, record: type[_R], where: str, params: tuple[object, ...]
    ) -> tuple[_R, ...]:
        """The records of ``table`` that ``where`` (and what follows it: order, limit) picks."""
        sql = f"SELECT {self._driver.columns(table)} FROM {self._dialect.table(table.name)} {where}"
        return await self._select(table, record, sql, params)

    def _row(self, table: _rows.Table, record: object) -> tuple[object, ...]:
        return self._driver.row(table, record)

    def _decode(self, table: _rows.Table, record: type[_R], row: Sequence[object]) -> _R:
        return self._driver.decode(table, record, row)

    def _refuse(self, problem: str) -> StoreError:
        return self._driver.refuse(problem)

    def _fail(self, problem: str, remedy: str) -> StoreError:
        return self._driver.fail(problem, remedy)

    def _lacks(self, column: str) -> bool:
        return self._driver.lacks(column)

    def _traces_present(self) -> bool:
        return self._driver.has_table("traces")

    def _approvals_present(self) -> bool:
        return self._driver.has_table("approval_rules")

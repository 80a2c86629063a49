"""Fixtures of the host tests: a real PostgreSQL server for the `PostgresStore` tests.

The server is started once per test session from the Debian binaries (see
``postgres_server.py``) and only when a test asks for it. Without the binaries those tests
skip with a message locally; under ``CI=true`` they fail instead, never skip (``.ci/run``
installs the ``postgresql`` package).
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Final, TypeAlias

import pytest

from host_sim import MemoryStore, PostgresStore, SqliteStore, Store

from .postgres_server import MISSING, PostgresServer, find_binaries


@pytest.fixture(scope="session")
def postgres() -> Iterator[PostgresServer]:
    """A PostgreSQL server for the whole test session (fsync off: tests kill hosts, not the server)."""
    binaries = find_binaries()
    if binaries is None:
        if os.environ.get("CI") == "true":
            pytest.fail(f"CI must run the PostgresStore tests, but {MISSING}")
        pytest.skip(MISSING)
    server = PostgresServer(binaries)
    try:
        yield server
    finally:
        server.stop()


@pytest.fixture
def postgres_dsn(postgres: PostgresServer) -> str:
    """The DSN of a new, empty database on the session's server."""
    return postgres.database()


STORE_KINDS: Final = ("memory", "sqlite", "postgres")
"""Every store host_sim ships; a store contract suite runs on each (tests/host/stores/test_store_contract_coverage.py)."""

StoreFactory: TypeAlias = Callable[[], Store]


@pytest.fixture(params=STORE_KINDS)
def any_store(request: pytest.FixtureRequest, tmp_path: Path) -> StoreFactory:
    """A factory of store objects that all see the same data, one test per store kind.

    Calling it again is reopening: the one `MemoryStore` object, a new `SqliteStore` on the
    same file, a new `PostgresStore` on the same (fresh) database. Every store contract
    suite takes this fixture rather than listing store kinds itself, so none can leave
    PostgreSQL out.
    """
    kind: str = request.param
    if kind == "memory":
        memory = MemoryStore()
        return lambda: memory
    if kind == "sqlite":
        path = tmp_path / "store.sqlite"
        return lambda: SqliteStore(path)
    dsn: str = request.getfixturevalue("postgres_dsn")
    return lambda: PostgresStore(dsn)

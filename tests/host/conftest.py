"""Fixtures of the host tests: a real PostgreSQL server for the `PostgresStore` tests.

The server is started once per test session from the Debian binaries (see
``postgres_server.py``) and only when a test asks for it. Without the binaries those tests
skip with a message locally; under ``CI=true`` they fail instead, never skip (``.ci/run``
installs the ``postgresql`` package).
"""

from __future__ import annotations

import os
from collections.abc import Iterator

import pytest

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

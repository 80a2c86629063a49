"""Fixtures of the model tests: a fake OpenAI-compatible server on loopback, fixed ids."""

from __future__ import annotations

import itertools
from collections.abc import Iterator

import pytest

from host_sim.testing import ids as _ids

from ._fake_openai import FakeOpenAI


@pytest.fixture
def fake() -> Iterator[FakeOpenAI]:
    """A started fake server; the test fails if it was asked more than its script held."""
    server = FakeOpenAI()
    server.start()
    try:
        yield server
    finally:
        server.stop()
    assert server.unexpected == 0, f"the fake server got {server.unexpected} request(s) past its script"


class CountingSecrets:
    """Stands in for `secrets` in the host's id module: ids ``ses_000000000001``, ... from ``start``."""

    def __init__(self, start: int) -> None:
        self._next = itertools.count(start)

    def token_hex(self, nbytes: int) -> str:
        return f"{next(self._next):0{2 * nbytes}x}"


@pytest.fixture
def fixed_ids(monkeypatch: pytest.MonkeyPatch) -> CountingSecrets:
    """Session, turn, message and call ids counted from 1 (``reset`` starts again)."""
    counter = CountingSecrets(1)
    monkeypatch.setattr(_ids, "secrets", counter)
    return counter

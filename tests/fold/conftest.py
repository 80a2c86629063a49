"""Build tests run from the project root: relative specs and displayed paths depend on it."""

from __future__ import annotations

import pytest

from ._support import ROOT


@pytest.fixture(autouse=True)
def _project_root(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(ROOT)

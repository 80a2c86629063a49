"""Helpers shared by the build tests: fixture paths and the ``file:line`` of a marker."""

from __future__ import annotations

import os
from pathlib import Path

FIXTURES = Path(__file__).resolve().parent / "fixtures"
ROOT = Path(__file__).resolve().parents[2]


def fixture(name: str) -> str:
    """The spec (an absolute path) of ``fixtures/<name>.py``."""
    return str(FIXTURES / f"{name}.py")


def shown(path: str | Path) -> str:
    """A path as error messages show it: relative to the cwd when below it."""
    rel = os.path.relpath(path)
    return str(path) if rel.startswith(os.pardir) else rel


def where(path: str | Path, marker: str) -> str:
    """``file:line`` of the line of ``path`` that ends with the comment ``# <marker>``."""
    lines = Path(path).read_text().splitlines()
    hits = [i for i, line in enumerate(lines, 1) if line.rstrip().endswith(f"# {marker}")]
    assert len(hits) == 1, f"marker {marker!r} found {len(hits)} times in {path}"
    return f"{shown(path)}:{hits[0]}"

"""The project installs under a name of its own: ``modular-chat-sdk``, never ``modular-sdk``.

``modular-sdk`` on the package index is an unrelated project; a hint that says to install it
sends a user to that project. These tests keep such hints from coming back anywhere in the
tree: code, error messages, docs, README, CI scripts.
"""

from __future__ import annotations

import importlib.metadata
import re
import tomllib
from pathlib import Path

from host_sim._cli import DISTRIBUTION

ROOT = Path(__file__).resolve().parents[1]
_SKIPPED = {".git", ".venv", "__pycache__", ".mypy_cache", ".pytest_cache", ".hypothesis", ".ruff_cache"}
_TEXT = {".py", ".pyi", ".md", ".toml", ".txt", ".json", ".cfg", ".ini", ".sh", ".yml", ".yaml", ""}

_OTHER = "modular" + "-sdk"  # spelled in two parts so this file does not match itself
_HINTS = re.compile(rf"pip\s+install\s+(?:-\S+\s+)*['\"]?{_OTHER}\b(?!-)|{_OTHER}\[")


def _tree() -> list[Path]:
    files: list[Path] = []
    for path in ROOT.rglob("*"):
        if any(part in _SKIPPED or part.endswith(".egg-info") for part in path.relative_to(ROOT).parts):
            continue
        if path.is_file() and path.suffix in _TEXT:
            files.append(path)
    return files


def test_pyproject_names_the_distribution_the_cli_reports() -> None:
    project = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]
    assert project["name"] == DISTRIBUTION == "modular-chat-sdk"
    extras = [req for reqs in project["optional-dependencies"].values() for req in reqs if "[" in req]
    assert extras and all(req.startswith(f"{DISTRIBUTION}[") for req in extras if "sdk" in req), extras


def test_the_installed_distribution_is_found_under_its_name() -> None:
    assert importlib.metadata.version(DISTRIBUTION)
    top = importlib.metadata.distribution(DISTRIBUTION).read_text("top_level.txt")
    assert top is None or set(top.split()) <= {"modular_sdk", "host_sim"}


def test_no_hint_anywhere_installs_the_unrelated_modular_sdk() -> None:
    offenders = [
        f"{path.relative_to(ROOT)}:{text.count(chr(10), 0, hit.start()) + 1}: {hit.group(0)!r}"
        for path in _tree()
        for text in [path.read_text(encoding="utf-8", errors="replace")]
        for hit in _HINTS.finditer(text)
    ]
    assert not offenders, f"hints that install the unrelated {_OTHER!r}; say {DISTRIBUTION!r}:\n" + "\n".join(offenders)


def test_the_hint_pattern_catches_each_way_of_writing_it() -> None:
    for hint in (
        f"pip install {_OTHER}",
        f"pip install '{_OTHER}[openai]'",
        f"pip\ninstall {_OTHER}",
        f"pip install -q -U {_OTHER}",
        f'"{_OTHER}[dev]"',
    ):
        assert _HINTS.search(hint), hint
    assert not _HINTS.search(f"pip install {DISTRIBUTION}")
    assert not _HINTS.search(f"pip install '{DISTRIBUTION}[openai]'")

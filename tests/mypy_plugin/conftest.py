"""Run the pytest-mypy-plugins cases against this checkout's SDK and plugin.

Each ``test_*.yml`` case runs mypy in a subprocess whose environment holds only what the
case sets: give it the repository on ``PYTHONPATH`` (mypy imports the plugin by module name)
and find this interpreter's ``mypy`` even when the venv is not activated.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Generator
from pathlib import Path

import pytest
from pytest_mypy_plugins.item import YamlTestItem

ROOT = Path(__file__).resolve().parents[2]


@pytest.hookimpl(wrapper=True)
def pytest_runtest_call(item: pytest.Item) -> Generator[None, None, None]:
    if not isinstance(item, YamlTestItem):
        return (yield)
    item.environment_variables.setdefault("PYTHONPATH", str(ROOT))
    saved = os.environ.get("PATH")
    os.environ["PATH"] = os.pathsep.join([str(Path(sys.executable).parent), saved or ""])
    try:
        return (yield)
    finally:
        if saved is None:
            del os.environ["PATH"]
        else:
            os.environ["PATH"] = saved

"""The CLI as a user meets it: the console script of a wheel installed into a fresh venv.

`installed` builds one venv per test session (``pip install <checkout>``, not editable,
no extras: trio is not installed) and every test runs its ``host-sim`` from a folder of
its own, far from the checkout, so nothing is found by accident in the working directory.
"""

from __future__ import annotations

import subprocess
import venv
from collections.abc import Iterator
from pathlib import Path

import pytest

from ._support import ROOT, Installed


@pytest.fixture(scope="session")
def installed(tmp_path_factory: pytest.TempPathFactory) -> Installed:
    """``pip install <checkout>`` (a built wheel, not editable) into a fresh venv, once."""
    where = tmp_path_factory.mktemp("wheel-venv") / "venv"
    venv.EnvBuilder(with_pip=True, clear=True).create(where)
    pip = subprocess.run(
        [str(where / "bin" / "python"), "-m", "pip", "install", "-q", "--disable-pip-version-check", str(ROOT)],
        capture_output=True, text=True, timeout=600, check=False,
    )  # fmt: skip
    assert pip.returncode == 0, pip.stdout[-3000:] + pip.stderr[-3000:]
    return Installed(bin=where / "bin")


@pytest.fixture
def user_dir(tmp_path: Path) -> Iterator[Path]:
    """An empty folder outside the checkout, where a user types the commands."""
    folder = tmp_path / "work"
    folder.mkdir()
    yield folder

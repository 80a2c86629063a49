"""The type tests next to this file hold under the project's mypy configuration.

They are checked by the main ``mypy`` run too; this test keeps them enforced when only
pytest runs. A failing ``assert_type`` shows up here as a mypy error on its line.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
PYPROJECT = HERE.parents[1] / "pyproject.toml"


def test_type_tests_pass_strict_mypy_with_the_plugin(tmp_path: Path) -> None:
    """mypy --strict with the modular_sdk plugin reports nothing on tests/typing/*_types.py."""
    files = sorted(str(path) for path in HERE.glob("*_types.py"))
    assert files, f"no *_types.py files in {HERE}"
    # A subprocess, not mypy.api: mypy's compiled modules do not survive two in-process
    # runs in one interpreter (KeyError: 'mypy.nativeparse' once another test ran it).
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "mypy",
            "--config-file",
            str(PYPROJECT),
            "--cache-dir",
            str(tmp_path / "mypy_cache"),
            "--no-error-summary",
            "--no-pretty",
            *files,
        ],
        capture_output=True,
        text=True,
        cwd=HERE.parents[1],
        check=False,
    )
    stdout, stderr, status = done.stdout, done.stderr, done.returncode
    assert not stderr, stderr
    ours = [line for line in stdout.splitlines() if _in_here(line)]
    assert ours == [], "\n".join(ours)
    # Errors elsewhere (the SDK itself) belong to the main mypy run; still, mypy must have run.
    assert status in (0, 1), stdout


def _in_here(line: str) -> bool:
    """The mypy output line is about a file in this folder (mypy may print it relative)."""
    return Path(line.split(":", 1)[0]).resolve().parent == HERE

"""Every test file under tests/ is collected by the README's test command.

pytest silently skips folders named like build output (``build``, ``dist``, ``venv``...
in its default ``norecursedirs``); a test that CI never collects does not exist. This
test runs the collection the README's command runs, in a subprocess, and names every
``test_*.py`` file it left out.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def test_every_test_file_under_tests_is_collected_by_the_readme_command() -> None:
    result = subprocess.run(
        [sys.executable, "-m", "pytest", "--collect-only", "-q", "-p", "no:cacheprovider"],
        cwd=ROOT, capture_output=True, text=True, timeout=300, check=False,
    )
    assert result.returncode == 0, result.stdout[-4000:] + result.stderr[-4000:]
    collected = {line.split("::", 1)[0] for line in result.stdout.splitlines() if "::" in line}
    on_disk = {
        path.relative_to(ROOT).as_posix()
        for path in (ROOT / "tests").rglob("test_*.py")
        if "fixtures" not in path.relative_to(ROOT / "tests").parts
    }
    missing = sorted(on_disk - collected)
    assert not missing, (
        f"pytest does not collect {missing}: a folder named like build output "
        "(build, dist, venv...) is skipped by norecursedirs; rename it after what it holds"
    )
    assert "tests/test_collection.py" in collected

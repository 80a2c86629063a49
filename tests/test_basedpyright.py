"""basedpyright (what most editors show mod authors) in strict mode over host_sim/examples/ and the docs.

The public types must need no ``# type: ignore`` in user code: every example and every
Markdown block (except those documented to fail type-checking) passes strict mode.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tools import mdcheck

BASEDPYRIGHT = shutil.which("basedpyright", path=str(Path(sys.executable).parent)) or shutil.which("basedpyright")


@pytest.mark.skipif(BASEDPYRIGHT is None, reason="basedpyright is not installed (pip install -e '.[dev]')")
def test_examples_and_docs_pass_basedpyright_strict(tmp_path: Path) -> None:
    assert BASEDPYRIGHT is not None
    programs, _ = mdcheck.generate(mdcheck.default_docs(), tmp_path / "docs")
    checked = [p for p in programs if p.blocks[0].expect_mypy is None]
    labels = {str(p.path.resolve()): p.label for p in checked}
    config = {
        "typeCheckingMode": "strict",
        "pythonVersion": "3.11",
        "pythonPlatform": "Linux",
        "venvPath": str(Path(sys.prefix).parent),
        "venv": Path(sys.prefix).name,
        "extraPaths": [str(tmp_path / "docs"), str(mdcheck.ROOT)],
        "include": [str(mdcheck.ROOT / "host_sim" / "examples"), *(str(p.path) for p in checked)],
    }
    (tmp_path / "pyrightconfig.json").write_text(json.dumps(config), encoding="utf-8")
    done = subprocess.run(
        [BASEDPYRIGHT, "--outputjson", "-p", str(tmp_path / "pyrightconfig.json")],
        capture_output=True,
        text=True,
        cwd=tmp_path,
        check=False,
    )
    report = json.loads(done.stdout)
    problems = []
    for diagnostic in report["generalDiagnostics"]:
        if diagnostic["severity"] != "error":
            continue
        file = str(Path(diagnostic["file"]).resolve())
        where = labels.get(file) or Path(file).relative_to(mdcheck.ROOT).as_posix()
        line = diagnostic["range"]["start"]["line"] + 1
        problems.append(f"{where}:{line}: {diagnostic['message']} ({diagnostic.get('rule', '')})")
    assert not problems, "\n".join(problems)
    assert report["summary"]["filesAnalyzed"] >= len(checked)

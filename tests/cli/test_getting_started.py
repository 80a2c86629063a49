"""docs/getting-started.md, step by step, in an empty folder with only the wheel: no checkout.

The test builds the wheel (``pip wheel --no-deps``), offers it to pip next to the usual
indexes (``PIP_FIND_LINKS``: the name ``modular-chat-sdk`` is ours, so pip finds this
wheel), and turns the guide into one shell script: each ``sh`` block is run as written,
each block with ``file=NAME`` is written to that file, and each plain ``python`` block is
run with the venv's python. The script runs in a fresh folder outside the checkout, with
a PATH holding only the base interpreter and the system's tools, so nothing of the
checkout or its venv can be found by accident.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

from ._support import ROOT

GUIDE = ROOT / "docs" / "getting-started.md"
_FENCE = re.compile(r"^```(?P<lang>\w+)(?P<options>[^\n]*)\n(?P<body>.*?)^```$", re.S | re.M)


def guide_as_script(text: str) -> str:
    """The guide's blocks, in order, as one bash script that stops at the first failure."""
    lines = ["set -euxo pipefail"]
    for block in _FENCE.finditer(text):
        lang, options, body = block["lang"], block["options"], block["body"]
        file = re.search(r"\bfile=(\S+)", options)
        if file is not None:
            lines.append(f"cat > {file[1]} <<'GUIDE_BLOCK'\n{body}GUIDE_BLOCK")
        elif lang == "sh":
            lines.append(body.rstrip("\n"))
        elif lang == "python":
            lines.append(f"python - <<'GUIDE_BLOCK'\n{body}GUIDE_BLOCK")
        else:
            raise AssertionError(f"a ```{lang} block without file=: the test does not know what to do with it")
    return "\n".join(lines) + "\n"


def test_the_guide_becomes_a_script_of_every_block() -> None:
    script = guide_as_script(GUIDE.read_text(encoding="utf-8"))
    assert "pip install -q modular-chat-sdk pytest mypy" in script
    assert "cat > hello.py <<'GUIDE_BLOCK'" in script and "cat > pyproject.toml <<'GUIDE_BLOCK'" in script
    assert "cat > test_hello.py <<'GUIDE_BLOCK'" in script and "pytest test_hello.py" in script
    assert "python - <<'GUIDE_BLOCK'" in script and "mypy hello.py" in script
    assert "-e '.[dev]'" not in script.split("Working on this repository")[0]  # no checkout needed


def test_the_readme_and_the_guide_say_how_to_install_before_the_package_index_has_it() -> None:
    for page in (ROOT / "README.md", GUIDE):
        text = " ".join(page.read_text(encoding="utf-8").split())
        assert "not on the package index yet" in text.lower(), page.name
        assert "pip wheel --no-deps -w wheels path/to/checkout" in text, page.name  # what the test below builds
        assert "--find-links" in text and "pip install" in text, page.name


def test_getting_started_works_step_by_step_from_the_wheel_in_an_empty_folder(tmp_path: Path) -> None:
    wheels = tmp_path / "wheels"
    built = subprocess.run(
        [sys.executable, "-m", "pip", "wheel", "-q", "--no-deps", str(ROOT), "-w", str(wheels)],
        capture_output=True, text=True, timeout=600, check=False,
    )  # fmt: skip
    assert built.returncode == 0, built.stderr[-3000:]
    (wheel,) = wheels.glob("modular_chat_sdk-*.whl")

    folder = tmp_path / "my-first-mod"
    folder.mkdir()
    (tmp_path / "guide.sh").write_text(guide_as_script(GUIDE.read_text(encoding="utf-8")), encoding="utf-8")
    base = Path(getattr(sys, "_base_executable", sys.executable)).resolve().parent
    env = {
        k: v
        for k, v in os.environ.items()
        if not k.startswith(("PYTEST", "PYTHON", "VIRTUAL_ENV", "HOST_SIM")) and k not in ("PATH", "CI")
    }
    env["PATH"] = f"{base}:/usr/bin:/bin"
    env["PIP_FIND_LINKS"] = " ".join(filter(None, [os.environ.get("PIP_FIND_LINKS", ""), str(wheels)]))
    env["PIP_DISABLE_PIP_VERSION_CHECK"] = "1"
    done = subprocess.run(
        ["bash", str(tmp_path / "guide.sh")], cwd=folder, stdin=subprocess.DEVNULL, capture_output=True, text=True,
        timeout=900, check=False, env=env,
    )  # fmt: skip
    output = done.stdout + done.stderr
    assert done.returncode == 0, output[-6000:]
    assert "Traceback" not in output, output[-6000:]
    assert "Success: no issues found in 1 source file" in done.stdout  # mypy hello.py, with the plugin
    assert "ok      hello.py: hello (1 command)" in done.stdout  # host-sim check
    assert "Hello, Ada! The model says: echo: Say hello to Ada" in done.stdout  # host-sim run, then Python
    assert re.search(r"2 passed", done.stdout), done.stdout[-3000:]  # pytest test_hello.py
    installed = subprocess.run(
        [str(folder / ".venv" / "bin" / "python"), "-c", "import host_sim, modular_sdk; print(host_sim.__file__)"],
        cwd=folder, env=env, capture_output=True, text=True, check=True,
    )  # fmt: skip
    assert str(ROOT) not in installed.stdout and ".venv/lib/" in installed.stdout
    assert wheel.name.startswith("modular_chat_sdk-")

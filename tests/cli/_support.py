"""Helpers of the CLI tests: run the installed ``host-sim`` as a user would."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import attrs

ROOT = Path(__file__).resolve().parents[2]
FIXTURES = Path(__file__).resolve().parent / "fixtures"


@attrs.frozen(kw_only=True)
class Installed:
    """A venv holding the wheel: its ``host-sim`` and its ``python``."""

    bin: Path

    @property
    def host_sim(self) -> str:
        return str(self.bin / "host-sim")

    @property
    def python(self) -> str:
        return str(self.bin / "python")


@attrs.frozen(kw_only=True)
class Result:
    code: int
    out: str
    err: str


def clean_env(**extra: str) -> dict[str, str]:
    """The environment a user has: no PYTHONPATH into the checkout, no $HOST_SIM_STORE."""
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "HOST_SIM_STORE", "PYTEST_ADDOPTS")}
    env.update(extra)
    return env


def host_sim(
    installed: Installed, cwd: Path, *args: str, stdin: str = "", env: dict[str, str] | None = None, timeout: float = 120
) -> Result:
    """Run the installed ``host-sim ARGS`` in ``cwd`` and collect its exit code and output."""
    done = subprocess.run(
        [installed.host_sim, *args], cwd=cwd, input=stdin, capture_output=True, text=True,
        timeout=timeout, check=False, env=clean_env() if env is None else env,
    )  # fmt: skip
    return Result(code=done.returncode, out=done.stdout, err=done.stderr)


def no_traceback(result: Result) -> None:
    assert "Traceback" not in result.err + result.out, result.err



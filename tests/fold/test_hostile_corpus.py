"""The hostile corpus: each mod in ``hostile/`` is refused, naming what it tried, and what it
tried does not happen: in the build sandbox, and when a host imports it in its own process.

Each corpus file says what to expect in comments at its top:

- ``# expect: TEXT`` (alternatives split by ``|``): in the build's refusal;
- ``# build: clean``: the build cannot tell (the mod behaves in the sandbox);
- ``# runtime: TEXT``: in the refusal of the host's import (default: the ``expect`` text);
  ``# runtime: in a subprocess: TEXT`` when a failure would end the test process;
  ``# runtime: none: WHY`` when the host's guard does not cover it (the build does);
- ``# timeout: SECONDS`` for the build.

Every mod runs in a directory of its own, beside a file and a directory of the "user"
(``victim.txt``, ``victim_dir/``) and its local helper modules (``_*.py``). After each
build and each import: no ``*.marker`` file, the user's file and directory intact, the
environment and the working directory unchanged.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import attrs
import pytest

from host_sim import Host
from host_sim.fold import Manifest, build_manifest, load_mod, load_verified
from modular_sdk import ManifestBuildError

from ._support import ROOT

HOSTILE = Path(__file__).resolve().parent / "hostile"
MODS = sorted(p for p in HOSTILE.glob("*.py") if not p.name.startswith("_"))
HELPERS = sorted(HOSTILE.glob("_*.py"))
VICTIM_TEXT = "precious user data\n"
ENV = "MODULAR_HOSTILE"


@attrs.frozen(kw_only=True)
class Case:
    name: str
    expect: tuple[str, ...]
    build_clean: bool
    runtime: str | None
    runtime_in_subprocess: bool
    timeout: float


def _case(path: Path) -> Case:
    meta: dict[str, str] = {}
    for line in path.read_text().splitlines()[:12]:
        match = re.match(r"# (expect|build|runtime|timeout): (.*)$", line)
        if match:
            meta[match[1]] = match[2]
    expect = tuple(meta.get("expect", "").split("|")) if "expect" in meta else ()
    runtime = meta.get("runtime", "|".join(expect))
    in_subprocess = runtime.startswith("in a subprocess: ")
    return Case(
        name=path.stem,
        expect=expect,
        build_clean=meta.get("build") == "clean",
        runtime=None if runtime.startswith("none: ") else runtime.removeprefix("in a subprocess: "),
        runtime_in_subprocess=in_subprocess,
        timeout=float(meta.get("timeout", "10")),
    )


CASES = {p.stem: _case(p) for p in MODS}
IN_PROCESS = [n for n, c in CASES.items() if c.runtime is not None and not c.runtime_in_subprocess]
IN_SUBPROCESS = [n for n, c in CASES.items() if c.runtime is not None and c.runtime_in_subprocess]


def _plant(root: Path, name: str) -> Path:
    """A fresh directory with the mod, its helpers, and the user's file and directory."""
    folder = root / name
    folder.mkdir()
    for source in [HOSTILE / f"{name}.py", *HELPERS]:
        shutil.copy(source, folder / source.name)
    (folder / "victim.txt").write_text(VICTIM_TEXT)
    (folder / "victim_dir").mkdir()
    (folder / "victim_dir" / "keep.txt").write_text(VICTIM_TEXT)
    return folder / f"{name}.py"


def _harm(folder: Path) -> list[str]:
    """Every trace of a side effect in ``folder`` and in this process."""
    harm = [f"{p.relative_to(folder)} was created" for p in sorted(folder.rglob("*.marker"))]
    victim = folder / "victim.txt"
    if not victim.is_file() or os.stat(victim).st_mode & 0o400 == 0 or victim.read_text() != VICTIM_TEXT:
        harm.append("victim.txt was changed or removed")
    if not (folder / "victim_dir" / "keep.txt").is_file():
        harm.append("victim_dir/ was removed")
    if ENV in os.environ:
        harm.append(f"${ENV} was set")
    if os.getcwd() != str(ROOT):
        harm.append(f"the working directory changed to {os.getcwd()}")
    return harm


def _matches(case: Case, message: str, expected: str | None = None) -> bool:
    alternatives = (expected or "").split("|") if expected is not None else case.expect
    return any(text and text in message for text in alternatives)


def _build(spec: Path, timeout: float) -> Manifest | ManifestBuildError:
    try:
        return build_manifest(str(spec), timeout=timeout)
    except ManifestBuildError as exc:
        return exc


@pytest.fixture(scope="module")
def builds(tmp_path_factory: pytest.TempPathFactory) -> dict[str, tuple[Path, Manifest | ManifestBuildError]]:
    """Every corpus mod built once, four at a time."""
    root = tmp_path_factory.mktemp("hostile-builds")
    specs = {name: _plant(root, name) for name in CASES}
    previous = os.getcwd()
    os.chdir(ROOT)  # as the autouse fixture does for each test, which runs after this one
    try:
        with ThreadPoolExecutor(max_workers=4) as pool:
            futures = {name: pool.submit(_build, spec, CASES[name].timeout) for name, spec in specs.items()}
            return {name: (specs[name], future.result()) for name, future in futures.items()}
    finally:
        os.chdir(previous)


@pytest.fixture
def isolated_imports(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """``load_mod`` puts each mod's folder on ``sys.path``: undo it after the test."""
    monkeypatch.setattr(sys, "path", list(sys.path))
    before = set(sys.modules)
    yield
    for name in set(sys.modules) - before:
        if name in CASES or name.startswith("_local_"):
            del sys.modules[name]
    os.environ.pop(ENV, None)


def test_the_corpus_is_large_and_every_file_says_what_to_expect() -> None:
    assert len(CASES) >= 40
    for case in CASES.values():
        assert case.expect or case.build_clean, f"{case.name}: no '# expect:' line"
        assert case.runtime is not None or case.build_clean is False


@pytest.mark.parametrize("name", sorted(CASES))
def test_the_build_refuses_it_and_nothing_happens(
    name: str, builds: dict[str, tuple[Path, Manifest | ManifestBuildError]]
) -> None:
    case = CASES[name]
    spec, outcome = builds[name]
    if case.build_clean:  # it behaves in the sandbox: the host's guard must catch it
        assert isinstance(outcome, Manifest), outcome
    else:
        assert isinstance(outcome, ManifestBuildError), f"{name} built a manifest"
        assert _matches(case, str(outcome)), str(outcome)
        assert outcome.spec == str(spec)
    assert _harm(spec.parent) == []


@pytest.mark.parametrize("name", IN_PROCESS)
@pytest.mark.usefixtures("isolated_imports")
def test_the_hosts_import_refuses_it_and_nothing_happens(name: str, tmp_path: Path) -> None:
    case = CASES[name]
    spec = _plant(tmp_path, name)
    with pytest.raises(ManifestBuildError) as info:
        load_mod(str(spec))
    assert _matches(case, str(info.value), case.runtime), str(info.value)
    assert str(info.value).startswith(f"cannot load mod {str(spec)!r} in this process")
    assert name not in sys.modules
    if name == "fresh_thread_module":
        time.sleep(0.6)  # the thread it started would write after 0.3 s
    assert _harm(spec.parent) == []


@pytest.mark.parametrize("name", IN_SUBPROCESS)
def test_the_hosts_import_of_a_process_killer_is_refused_and_the_host_survives(name: str, tmp_path: Path) -> None:
    case = CASES[name]
    spec = _plant(tmp_path, name)
    script = (
        "import json, sys\n"
        "from host_sim.fold import load_mod\n"
        "from modular_sdk import ManifestBuildError\n"
        "try:\n"
        "    load_mod(sys.argv[1])\n"
        "except ManifestBuildError as exc:\n"
        "    print(json.dumps({'refused': str(exc)}))\n"
        "else:\n"
        "    print(json.dumps({'loaded': True}))\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", script, str(spec)],
        cwd=ROOT,
        env={"PYTHONPATH": str(ROOT), "PATH": os.environ.get("PATH", "")},
        capture_output=True,
        timeout=60,
    )
    assert done.returncode == 0, (done.returncode, done.stderr.decode())
    outcome = json.loads(done.stdout)
    assert "refused" in outcome and _matches(case, outcome["refused"], case.runtime), outcome
    assert _harm(spec.parent) == []


@pytest.mark.anyio
@pytest.mark.usefixtures("isolated_imports")
async def test_a_mod_that_detects_the_sandbox_gains_nothing_in_a_host(tmp_path: Path) -> None:
    spec = _plant(tmp_path, "detects_sandbox")
    with pytest.raises(ManifestBuildError, match=r"detects_sandbox\.py:\d+: opens file .* for writing \(open\)"):
        async with Host(mods=[str(spec)]):
            pass
    assert _harm(spec.parent) == []


@pytest.mark.anyio
@pytest.mark.usefixtures("isolated_imports")
async def test_a_mod_that_patches_the_host_is_refused_and_the_host_restored(tmp_path: Path) -> None:
    from host_sim.testing import mod_specs as spec_module

    original = spec_module.load_mod
    spec = _plant(tmp_path, "patches_host")
    with pytest.raises(ManifestBuildError, match=r"changes the host's own code \(host_sim\.fold\._spec\.load_mod\)"):
        await load_verified(str(spec))
    assert spec_module.load_mod is original

"""build_manifest: the sandboxed build-time fold and the side effects it refuses."""

from __future__ import annotations

import re
import subprocess
import sys
import time
from pathlib import Path

import pytest

from host_sim.fold import Manifest, build_manifest, build_manifest_async
from modular_sdk import ManifestBuildError, ModularError

from ._support import FIXTURES, ROOT, fixture, shown, where

EXAMPLES = sorted(p for p in (ROOT / "host_sim" / "examples").glob("*.py") if not p.name.startswith("_"))
PURE_FIXTURES = [("fx_pure", "pure-fixture"), ("fx_uses_noisy_dep", "uses-noisy-dep"), ("fx_drift", "drift")]


@pytest.mark.parametrize("path", EXAMPLES, ids=lambda p: p.name)
def test_every_example_builds_a_manifest(path: Path) -> None:
    manifest = build_manifest(str(path))
    assert isinstance(manifest, Manifest)
    assert manifest.manifest_version == 1
    assert manifest.to_json().endswith("}\n")


@pytest.mark.parametrize(("name", "mod_id"), PURE_FIXTURES)
def test_pure_fixture_mods_build(name: str, mod_id: str) -> None:
    assert build_manifest(fixture(name)).id == mod_id


def test_the_pure_fixture_manifest_lists_every_declaration() -> None:
    m = build_manifest(fixture("fx_pure"))
    assert [(c.kind, c.id) for c in m.commands] == [("slash", "task"), ("palette", "pure.open")]
    assert m.commands[0].kind == "slash" and m.commands[0].argument_hint == "<prompt>"
    assert [t.name for t in m.tools] == ["search"]
    assert m.tools[0].input_schema["type"] == "object"
    assert [a.id for a in m.agents] == ["helper"]
    assert [h.target for h in m.hooks] == ["session.fork", "command:task"]
    assert [e.id for e in m.effects] == ["watch"]
    assert [(v.id, v.title) for v in m.views] == [("summary", "Summary")]


def _refusal(name: str, timeout: float = 10.0) -> ManifestBuildError:
    with pytest.raises(ManifestBuildError) as info:
        build_manifest(fixture(name), timeout=timeout)
    assert isinstance(info.value, ModularError)
    assert info.value.spec == fixture(name)
    return info.value


@pytest.mark.parametrize(
    ("name", "marker", "operation"),
    [
        ("fx_os_write", "effect: os.write", "writes to stdout (os.write(1, ...))"),
        ("fx_print", "effect: print", "writes to stdout (print"),
        ("fx_print", "effect: stderr", "writes to stderr"),
        ("fx_file_read", "effect: read", "opens file"),
        ("fx_subprocess", "effect: subprocess", "starts a subprocess"),
        ("fx_os_system", "effect: system", "runs a shell command 'true' (os.system)"),
        ("fx_sleep", "effect: sleep", "sleeps 30 s (time.sleep)"),
        ("fx_thread", "effect: thread", "starts a thread 'poller' (threading.Thread.start)"),
    ],
)
def test_top_level_effect_is_refused_with_operation_and_line(name: str, marker: str, operation: str) -> None:
    error = _refusal(name)
    expected = f"{where(FIXTURES / f'{name}.py', marker)}: {operation}"
    assert any(p.startswith(expected) for p in error.problems), error.problems
    assert expected in str(error)
    assert "move it into a handler" in str(error)


def test_socket_in_a_helper_names_the_statement_and_the_helper_line() -> None:
    error = _refusal("fx_socket_helper")
    path = FIXTURES / "fx_socket_helper.py"
    assert error.problems == (
        f"{where(path, 'statement: socket')}: creates a socket (socket.socket), "
        f"inside _connect() at {where(path, 'effect: socket')}",
    )


def test_every_effect_of_a_module_is_reported_at_once() -> None:
    error = _refusal("fx_many")
    path = FIXTURES / "fx_many.py"
    assert [p.split(": ", 1)[0] for p in error.problems] == [
        where(path, "effect: print"),
        where(path, "effect: sleep"),
        where(path, "effect: listdir"),
    ]


def test_sleep_is_recorded_without_waiting() -> None:
    started = time.monotonic()
    _refusal("fx_sleep")
    assert time.monotonic() - started < 20


def test_a_hanging_import_is_killed_and_refused_at_the_hanging_line() -> None:
    started = time.monotonic()
    # 3 s: enough for the child to import modular_sdk on a busy machine before it hangs
    error = _refusal("fx_hang", timeout=3.0)
    assert time.monotonic() - started < 10
    path = FIXTURES / "fx_hang.py"
    (problem,) = error.problems
    assert problem.startswith(f"{where(path, 'statement: hang')}: the import did not finish within 3 s")
    assert f"inside _wait_forever() at {where(path, 'effect: hang')}" in problem


def test_a_dependency_doing_io_at_its_own_import_is_not_the_mods_fault(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    site = tmp_path / "site"
    site.mkdir()
    (site / "chatty_dependency.py").write_text(
        "import os, time\n"
        "from pathlib import Path\n"
        "print('chatty_dependency imported')\n"
        "os.write(2, b'on stderr')\n"
        "time.sleep(0.01)\n"
        "SOURCE = Path(__file__).read_text()\n"
        "def greeting() -> str:\n"
        "    return 'hello'\n"
    )
    monkeypatch.syspath_prepend(str(site))
    mods = tmp_path / "mods"
    mods.mkdir()
    (mods / "uses_chatty_mod.py").write_text(
        "from chatty_dependency import greeting\n"
        "from modular_sdk import ModMetadata, define_mod\n"
        "mod = define_mod(metadata=ModMetadata(display_name='Uses Chatty', description=f'Say {greeting()}'))\n"
    )
    manifest = build_manifest(str(mods / "uses_chatty_mod.py"))
    assert manifest.metadata.description == "Say hello"


def test_a_standard_library_module_printing_at_its_import_is_not_the_mods_fault() -> None:
    manifest = build_manifest(fixture("fx_uses_noisy_dep"))
    assert manifest.commands[0].kind == "slash"
    assert manifest.commands[0].description == "Say hello"


def test_a_local_module_is_checked_like_the_mod() -> None:
    error = _refusal("fx_uses_local_noisy")
    helper = FIXTURES / "fx_noisy_dep" / "__init__.py"
    imported = f"in a local module imported at {where(FIXTURES / 'fx_uses_local_noisy.py', 'statement: local import')}"
    assert error.problems == (
        f"{where(helper, 'effect: print')}: writes to stdout (print or sys.stdout.write), {imported}",
        f"{where(helper, 'effect: os.write')}: writes to stderr (os.write(2, ...)), {imported}",
        f"{where(helper, 'effect: sleep')}: sleeps 0.01 s (time.sleep), {imported}",
        f"{where(helper, 'effect: read')}: opens file {shown(helper)!r} for reading (open), {imported}",
    )


def test_output_that_bypasses_the_guards_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "echoes_mod.py"
    path.write_text(
        "import os\n"
        "from modular_sdk import ModMetadata, define_mod\n"
        "os.writev(1, [b'leaked\\n'])  # not audited, not wrapped\n"
        "mod = define_mod(metadata=ModMetadata(display_name='Echoes', description='d'))\n"
    )
    with pytest.raises(ManifestBuildError) as info:
        build_manifest(str(path))
    (problem,) = info.value.problems
    assert "wrote 7 bytes to stdout past the sandbox's guards" in problem and "leaked" in problem


def test_import_machinery_and_reads_after_import_are_not_effects(tmp_path: Path) -> None:
    (tmp_path / "lazy_helper_mod.py").write_text(
        "from modular_sdk import ModMetadata, define_mod, command\n"
        "def _run(ctx: object) -> str:\n"
        "    return open(__file__).read()\n"
        "import json, email.utils\n"
        "mod = define_mod(metadata=ModMetadata(display_name='Lazy', description='d'),\n"
        "    commands=[command(id='read', title='Read', run=_run)])\n"
    )
    assert build_manifest(str(tmp_path / "lazy_helper_mod.py")).id == "lazy"


def test_manifests_are_byte_identical_across_processes(tmp_path: Path) -> None:
    spec = fixture("fx_pure")
    here = build_manifest(spec).to_json().encode()
    assert build_manifest(spec).to_json().encode() == here
    elsewhere = subprocess.run(
        [sys.executable, "-c", "import sys; from host_sim.fold import build_manifest; "
         "sys.stdout.buffer.write(build_manifest(sys.argv[1]).to_json().encode())", spec],
        cwd=tmp_path,
        env={"PYTHONPATH": str(ROOT)},
        capture_output=True,
        check=True,
    )
    assert elsewhere.stdout == here
    text = here.decode()
    assert not re.search(r"0x[0-9a-f]{6,}|<function|<class", text)
    assert str(ROOT) not in text and str(tmp_path) not in text


def test_timeout_must_be_positive() -> None:
    with pytest.raises(ValueError, match="timeout must be a positive number"):
        build_manifest(fixture("fx_pure"), timeout=0)


@pytest.mark.anyio
async def test_async_build_matches_the_sync_build() -> None:
    assert await build_manifest_async(fixture("fx_pure")) == build_manifest(fixture("fx_pure"))


@pytest.mark.anyio
async def test_async_build_refuses_like_the_sync_build() -> None:
    with pytest.raises(ManifestBuildError, match="creates a socket"):
        await build_manifest_async(fixture("fx_socket_helper"))


@pytest.mark.anyio
async def test_async_build_enforces_the_time_limit() -> None:
    with pytest.raises(ManifestBuildError, match="did not finish within 1 s"):
        await build_manifest_async(fixture("fx_hang"), timeout=1.0)

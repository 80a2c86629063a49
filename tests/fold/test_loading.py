"""load_mod, mod specs and entry-point discovery: every loading error is clear, no traceback."""

from __future__ import annotations

import importlib.metadata
from collections.abc import Callable
from pathlib import Path

import pytest

from host_sim.fold import build_manifest, discover_mods, load_mod
from host_sim.testing import mod_specs as spec_module
from modular_sdk import ManifestBuildError, Mod

from ._support import FIXTURES, fixture, shown

Loader = Callable[[str], object]
LOADERS: list[Loader] = [load_mod, build_manifest]
LOADER_IDS = ["load_mod", "build_manifest"]


def test_load_mod_returns_the_mod_attribute() -> None:
    mod = load_mod(fixture("fx_pure"))
    assert isinstance(mod, Mod)
    assert mod.id == "pure-fixture"


def test_load_mod_accepts_an_attribute_after_a_colon() -> None:
    assert load_mod(f"{fixture('fx_attrs')}:second").metadata.display_name == "Second"


def test_load_mod_accepts_a_module_spec() -> None:
    assert load_mod("host_sim.examples.background_tasks").id == "background-tasks"
    assert load_mod("host_sim.examples.background_tasks:mod") is load_mod("host_sim/examples/background_tasks.py")


def test_a_module_spec_builds_in_the_sandbox() -> None:
    assert build_manifest("host_sim.examples.background_tasks:mod").id == "background-tasks"


@pytest.mark.parametrize("load", LOADERS, ids=LOADER_IDS)
def test_missing_file(load: Loader) -> None:
    with pytest.raises(ManifestBuildError, match=r"file 'no/such/mod\.py' not found") as info:
        load("no/such/mod.py")
    assert info.value.spec == "no/such/mod.py"
    assert info.value.__suppress_context__ or info.value.__cause__ is None


@pytest.mark.parametrize("load", LOADERS, ids=LOADER_IDS)
def test_unknown_module(load: Loader) -> None:
    with pytest.raises(ManifestBuildError, match="no module named 'no_such_mod_pkg'"):
        load("no_such_mod_pkg.mod")


@pytest.mark.parametrize("spec", ["not a spec!", "pkg.mod:1bad", ""])
def test_malformed_spec(spec: str) -> None:
    with pytest.raises(ManifestBuildError, match="cannot load mod"):
        load_mod(spec)


@pytest.mark.parametrize("load", LOADERS, ids=LOADER_IDS)
def test_syntax_error_names_file_and_line(load: Loader, tmp_path: Path) -> None:
    path = tmp_path / f"broken_syntax_{load.__name__}.py"
    path.write_text("from modular_sdk import define_mod\n\nmod = define_mod(\n")
    with pytest.raises(ManifestBuildError, match=rf"{shown(path)}:3: syntax error: '\(' was never closed"):
        load(str(path))


@pytest.mark.parametrize("load", LOADERS, ids=LOADER_IDS)
def test_missing_dependency_is_named_with_the_importing_line(load: Loader, tmp_path: Path) -> None:
    path = tmp_path / f"needs_dep_{load.__name__}.py"
    path.write_text("import os\nimport no_such_dependency_xyz\n")
    with pytest.raises(ManifestBuildError) as info:
        load(str(path))
    (problem,) = info.value.problems
    assert problem.startswith(f"{shown(path)}:2: the module imports 'no_such_dependency_xyz', which cannot be found")


@pytest.mark.parametrize("load", LOADERS, ids=LOADER_IDS)
def test_missing_attribute_lists_the_modules_mods(load: Loader) -> None:
    with pytest.raises(ManifestBuildError) as info:
        load(fixture("fx_attrs"))
    message = str(info.value)
    assert "module 'fold.fixtures.fx_attrs' has no attribute 'mod'" in message
    assert f"'first' (use '{fixture('fx_attrs')}:first')" in message
    assert "'second'" in message


@pytest.mark.parametrize("load", LOADERS, ids=LOADER_IDS)
def test_attribute_that_is_not_a_mod(load: Loader) -> None:
    with pytest.raises(ManifestBuildError, match=r"fx_attrs\.not_a_mod is 42 \(an int\), not a Mod; set it to define_mod"):
        load(f"{fixture('fx_attrs')}:not_a_mod")


@pytest.mark.parametrize("load", LOADERS, ids=LOADER_IDS)
def test_module_without_mods(load: Loader) -> None:
    with pytest.raises(ManifestBuildError, match=r"it defines no Mod value: define one as `mod = define_mod\(...\)`"):
        load(fixture("fx_common"))


@pytest.mark.parametrize("load", LOADERS, ids=LOADER_IDS)
def test_module_without_mods_and_another_attribute_named(load: Loader) -> None:
    with pytest.raises(ManifestBuildError, match=r"has no attribute 'other'; it defines no Mod value: define one as `other = define_mod\(...\)`"):
        load(f"{fixture('fx_common')}:other")


@pytest.mark.parametrize("load", LOADERS, ids=LOADER_IDS)
def test_error_raised_at_import_names_the_line(load: Loader) -> None:
    line = next(i for i, t in enumerate((FIXTURES / "fx_raises.py").read_text().splitlines(), 1) if "Bad Id!" in t)
    with pytest.raises(ManifestBuildError, match=rf"fx_raises\.py:{line}: importing 'fold\.fixtures\.fx_raises' raised ModDefinitionError"):
        load(fixture("fx_raises"))


def test_a_shadowed_file_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "json.py"
    path.write_text("mod = None\n")
    with pytest.raises(ManifestBuildError, match="would be imported as 'json', but that name resolves to"):
        load_mod(str(path))


def test_discover_mods_reads_the_entry_point_group(monkeypatch: pytest.MonkeyPatch) -> None:
    found = importlib.metadata.EntryPoints(
        [
            importlib.metadata.EntryPoint(name="tasks", value="host_sim.examples.background_tasks:mod", group="modular.mods"),
            importlib.metadata.EntryPoint(name="guard", value="host_sim.examples.guardrails", group="modular.mods"),
        ]
    )
    seen: list[str] = []

    def fake(*, group: str) -> importlib.metadata.EntryPoints:
        seen.append(group)
        return found

    monkeypatch.setattr(spec_module, "entry_points", fake)
    assert discover_mods() == {"guard": "host_sim.examples.guardrails", "tasks": "host_sim.examples.background_tasks:mod"}
    assert seen == ["modular.mods"]
    assert all(load_mod(spec).id for spec in discover_mods().values())

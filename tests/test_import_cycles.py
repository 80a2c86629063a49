"""Modules import each other without circles: host_sim's at run time (type-only imports
aside), modular_sdk's at all, type-only imports included. And host_sim is built in floors:
records at the bottom, stores on them, lineage and traces on stores, sessions above; a
folder imports only the floors below it (type-only imports too)."""

from __future__ import annotations

import ast
import functools
from pathlib import Path

import pytest

import host_sim
import modular_sdk

ROOT = Path(host_sim.__file__).parent
SDK_ROOT = Path(modular_sdk.__file__).parent


def module_name(path: Path, root: Path = ROOT) -> str:
    parts = [root.name, *path.relative_to(root).with_suffix("").parts]
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def imports_of(path: Path, root: Path = ROOT, *, type_only: bool = False) -> set[str]:
    """Every module ``path`` imports at run time, at top level or inside functions (with
    ``type_only``, also those imported under ``if TYPE_CHECKING:``)."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    name = module_name(path, root)
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    skip: set[int] = set()
    for node in ast.walk(tree):
        if not type_only and isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test):
            skip.update(id(n) for n in ast.walk(node))
    found: set[str] = set()
    for node in ast.walk(tree):
        if id(node) in skip:
            continue
        if isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")
                base = base[: len(base) - (node.level - 1)]
                target = ".".join(base + ([node.module] if node.module else []))
            else:
                target = node.module or ""
            found.add(target)
            found.update(f"{target}.{alias.name}" for alias in node.names)
        elif isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
    return found


def graph(root: Path = ROOT, *, type_only: bool = False) -> dict[str, set[str]]:
    modules = {module_name(p, root): p for p in root.rglob("*.py")}
    return {
        name: {
            t
            for t in imports_of(path, root, type_only=type_only)
            if t in modules and t != name and not t.startswith(name + ".")
        }
        for name, path in modules.items()
        if not name.endswith("__init__")
    }


def cycles_of(root: Path, *, type_only: bool = False) -> list[str]:
    edges = graph(root, type_only=type_only)
    packages = {name for name in edges if (root / Path(*name.split(".")[1:]) / "__init__.py").exists()}
    cycles: list[str] = []
    for start in edges:
        if start in packages:
            continue
        # Depth-first, iteratively, through modules only (a package's __init__ re-exports).
        stack = [(start, [start])]
        seen: set[str] = set()
        while stack:
            current, path = stack.pop()
            for nxt in edges.get(current, ()):
                if nxt in packages:
                    continue
                if nxt == start:
                    cycles.append(" -> ".join([*path, start]))
                elif nxt not in seen:
                    seen.add(nxt)
                    stack.append((nxt, [*path, nxt]))
    return cycles


def test_no_module_of_host_sim_imports_one_that_imports_it_back() -> None:
    assert cycles_of(ROOT) == []


def test_no_module_of_modular_sdk_imports_one_that_imports_it_back_even_for_types() -> None:
    assert cycles_of(SDK_ROOT, type_only=True) == []


# -- floors --------------------------------------------------------------------------------

BOTTOM: dict[str, str] = {
    "host_sim.stores._records": "what a store keeps: sessions, turns, jobs, lineage nodes and edges",
    "host_sim._host_made": "the metaclass of classes only the host instantiates",
}
"""Modules every floor builds on; they import nothing of host_sim."""

MAY_IMPORT: dict[str, frozenset[str]] = {
    "stores": frozenset(),
    "lanes": frozenset(),
    "models": frozenset({"lanes"}),
    "lineage": frozenset({"stores"}),
    "traces": frozenset({"stores"}),
    "memory": frozenset({"stores", "lineage", "models", "lanes"}),
}
"""For each lower floor, the other folders of host_sim it may import (besides `BOTTOM`)."""


@functools.cache
def floors_graph() -> dict[str, frozenset[str]]:
    """host_sim's imports, type-only ones included (read once for the floor tests)."""
    return {name: frozenset(targets) for name, targets in graph(type_only=True).items()}


def floor(module: str) -> str:
    """The folder of host_sim a module belongs to (``host_sim`` itself for the package)."""
    parts = module.split(".")
    return parts[1] if len(parts) > 1 else parts[0]


@pytest.mark.parametrize("module", sorted(BOTTOM))
def test_a_bottom_module_imports_nothing_of_host_sim(module: str) -> None:
    assert floors_graph()[module] == set()


@pytest.mark.parametrize("folder", sorted(MAY_IMPORT))
def test_a_floor_imports_only_the_floors_below_it(folder: str) -> None:
    allowed = MAY_IMPORT[folder] | {folder}
    wrong = sorted(
        f"{module} imports {target}"
        for module, targets in floors_graph().items()
        if floor(module) == folder
        for target in targets
        if target not in BOTTOM and floor(target) not in allowed
    )
    assert wrong == []


def test_the_floors_are_folders_that_exist() -> None:
    assert all((ROOT / folder / "__init__.py").exists() for folder in MAY_IMPORT)
    assert all(module in floors_graph() for module in BOTTOM)

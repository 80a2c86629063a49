"""Modules import each other without circles, type-only imports included, in host_sim
and in modular_sdk (which imports nothing of host_sim). And host_sim is built in floors:
records at the bottom, stores on them, lineage and traces on stores, sessions above, the
front ends (CLI, studio, protocols) on top; every folder and top-level module of host_sim
has a floor, and imports only the floors below it (type-only imports too).

Where the code still breaks a rule, the exception is named here with why (`KNOWN_CIRCLES`,
`KNOWN_UPWARD`), and a test fails when it is gone, so the list only shrinks."""

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


def circles_of(root: Path, *, type_only: bool = False) -> set[frozenset[str]]:
    """The circles of ``root``'s modules: each a set of modules that all reach each other
    through imports (a strongly connected component of two or more). A package's
    ``__init__`` only re-exports, so no path runs through it."""
    edges = graph(root, type_only=type_only)
    packages = {name for name in edges if (root / Path(*name.split(".")[1:]) / "__init__.py").exists()}
    modules = sorted(set(edges) - packages)
    targets = {name: sorted(t for t in edges[name] if t in edges and t not in packages) for name in modules}
    # Tarjan's algorithm, iteratively (a deep chain must not hit the recursion limit).
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: set[frozenset[str]] = set()
    for start in modules:
        if start in index:
            continue
        work = [(start, 0)]
        while work:
            node, i = work.pop()
            if i == 0:
                index[node] = low[node] = len(index)
                stack.append(node)
                on_stack.add(node)
            if i < len(targets[node]):
                work.append((node, i + 1))
                nxt = targets[node][i]
                if nxt not in index:
                    work.append((nxt, 0))
                elif nxt in on_stack:
                    low[node] = min(low[node], index[nxt])
                continue
            if low[node] == index[node]:
                component = set()
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    component.add(member)
                    if member == node:
                        break
                if len(component) > 1:
                    found.add(frozenset(component))
            if work:
                parent = work[-1][0]
                low[parent] = min(low[parent], low[node])
    return found


KNOWN_CIRCLES: dict[frozenset[str], str] = {}
"""Circles the code still has, and why; each one is a debt, and this list only shrinks."""


def test_no_module_of_host_sim_imports_one_that_imports_it_back_even_for_types() -> None:
    found = circles_of(ROOT, type_only=True)
    assert sorted(map(sorted, found - KNOWN_CIRCLES.keys())) == []
    assert sorted(map(sorted, KNOWN_CIRCLES.keys() - found)) == [], "a known circle is gone: take it off KNOWN_CIRCLES"


def test_no_module_of_modular_sdk_imports_one_that_imports_it_back_even_for_types() -> None:
    assert circles_of(SDK_ROOT, type_only=True) == set()


def test_modular_sdk_imports_nothing_of_host_sim_even_for_types() -> None:
    wrong = sorted(
        f"{module_name(path, SDK_ROOT)} imports {target}"
        for path in SDK_ROOT.rglob("*.py")
        for target in imports_of(path, SDK_ROOT, type_only=True)
        if target == "host_sim" or target.startswith("host_sim.")
    )
    assert wrong == []


# -- floors --------------------------------------------------------------------------------

BOTTOM: dict[str, str] = {
    "host_sim.stores._records": "what a store keeps: sessions, turns, jobs, lineage nodes and edges, and records made from them",
    "host_sim.stores._trace_records": "what a store keeps of traces, proposed actions, their outcomes and approval rules",
    "host_sim._host_made": "the metaclass of classes only the host instantiates",
}
"""Modules every floor builds on; they import nothing of host_sim."""

_SESSIONS_AND_BELOW = frozenset(
    {"stores", "lanes", "fold", "models", "lineage", "traces", "memory", "observability", "mcp", "sessions"}
)

MAY_IMPORT: dict[str, frozenset[str]] = {
    "stores": frozenset(),
    "lanes": frozenset(),
    "fold": frozenset(),
    "models": frozenset({"lanes"}),
    "lineage": frozenset({"stores"}),
    "traces": frozenset({"stores"}),
    "memory": frozenset({"stores", "lineage", "models", "lanes"}),
    "observability": frozenset({"stores", "models", "lanes"}),
    "mcp": frozenset({"stores", "lineage", "traces", "models", "lanes"}),
    "sessions": _SESSIONS_AND_BELOW - {"sessions"},
    "pytest_plugin": _SESSIONS_AND_BELOW,
    "testing": _SESSIONS_AND_BELOW | {"agui"},
    "acp": _SESSIONS_AND_BELOW,
    "agui": _SESSIONS_AND_BELOW,
    "lineage_mcp": _SESSIONS_AND_BELOW,
    "studio": _SESSIONS_AND_BELOW | {"agui"},
    "host_sim": _SESSIONS_AND_BELOW | {"agui", "lineage_mcp"},
    "examples": frozenset({"host_sim"}),
    "cli": _SESSIONS_AND_BELOW | {"acp", "agui", "lineage_mcp", "studio", "examples", "host_sim"},
    "_cli": frozenset({"cli", "host_sim"}),  # host_sim: the start guard it takes back
    "__main__": frozenset({"_cli"}),
}
"""For each folder of host_sim (``host_sim`` itself: the package's public door, its
``__init__``; a top-level module: its name), the other floors it may import (besides
`BOTTOM`)."""

KNOWN_UPWARD: dict[tuple[str, str], str] = {}
"""Imports that still run up a floor, and why; each one is a debt, and this list only shrinks."""


@functools.cache
def floors_graph() -> dict[str, frozenset[str]]:
    """host_sim's imports, type-only ones included (read once for the floor tests); the
    package's own ``__init__`` with the modules it re-exports from."""
    edges = {name: frozenset(targets) for name, targets in graph(type_only=True).items()}
    door = imports_of(ROOT / "__init__.py", type_only=True)
    edges["host_sim"] = frozenset(t for t in door if t in edges and t != "host_sim")
    return edges


def floor(module: str) -> str:
    """The folder of host_sim a module belongs to (``host_sim`` itself for the package)."""
    parts = module.split(".")
    return parts[1] if len(parts) > 1 else parts[0]


def upward_imports() -> set[tuple[str, str]]:
    """Every import from one floor to another that its `MAY_IMPORT` does not allow."""
    return {
        (module, target)
        for module, targets in floors_graph().items()
        if module not in BOTTOM
        for target in targets
        if target not in BOTTOM and floor(target) != floor(module) and floor(target) not in MAY_IMPORT[floor(module)]
    }


@pytest.mark.parametrize("module", sorted(BOTTOM))
def test_a_bottom_module_imports_nothing_of_host_sim(module: str) -> None:
    assert floors_graph()[module] == set()


@pytest.mark.parametrize("folder", sorted(MAY_IMPORT))
def test_a_floor_imports_only_the_floors_below_it(folder: str) -> None:
    wrong = sorted(
        f"{module} imports {target}" for module, target in upward_imports() - KNOWN_UPWARD.keys() if floor(module) == folder
    )
    assert wrong == []


def test_a_known_upward_import_that_is_gone_leaves_the_list() -> None:
    assert sorted(KNOWN_UPWARD.keys() - upward_imports()) == []


def test_every_folder_and_module_of_host_sim_has_a_floor() -> None:
    floors = {floor(module) for module in floors_graph() if module not in BOTTOM}
    assert sorted(floors - MAY_IMPORT.keys()) == []
    assert sorted(MAY_IMPORT.keys() - floors) == []


def test_the_floors_are_one_way() -> None:
    """No floor may import, through the floors it may import, itself: the rule is an order."""
    for start in MAY_IMPORT:
        reached: set[str] = set()
        todo = list(MAY_IMPORT[start])
        while todo:
            current = todo.pop()
            assert current != start, f"floor {start!r} may import itself through {current!r}"
            if current not in reached:
                reached.add(current)
                todo.extend(MAY_IMPORT.get(current, ()))


def test_the_floors_are_folders_that_exist() -> None:
    assert all((ROOT / folder / "__init__.py").exists() or (ROOT / f"{folder}.py").exists() or folder == "host_sim" for folder in MAY_IMPORT)
    assert all(module in floors_graph() for module in BOTTOM)

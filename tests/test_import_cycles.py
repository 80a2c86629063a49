"""Modules import each other without circles: host_sim's at run time (type-only imports
aside), modular_sdk's at all, type-only imports included."""

from __future__ import annotations

import ast
from pathlib import Path

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

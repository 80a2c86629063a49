"""host_sim's modules import each other without circles (type-only imports aside)."""

from __future__ import annotations

import ast
from pathlib import Path

import host_sim

ROOT = Path(host_sim.__file__).parent


def module_name(path: Path) -> str:
    parts = ["host_sim", *path.relative_to(ROOT).with_suffix("").parts]
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def imports_of(path: Path) -> set[str]:
    """Every host_sim module ``path`` imports at run time, at top level or inside functions."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    package = module_name(path) if path.name == "__init__.py" else module_name(path).rpartition(".")[0]
    skip: set[int] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test):
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


def graph() -> dict[str, set[str]]:
    modules = {module_name(p): p for p in ROOT.rglob("*.py")}
    return {
        name: {t for t in imports_of(path) if t in modules and t != name and not t.startswith(name + ".")}
        for name, path in modules.items()
        if not name.endswith("__init__")
    }


def test_no_module_of_host_sim_imports_one_that_imports_it_back() -> None:
    edges = graph()
    packages = {name for name in edges if (ROOT / Path(*name.split(".")[1:]) / "__init__.py").exists()}
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
    assert cycles == []

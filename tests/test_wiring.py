"""host_sim wires its objects through their constructors: no module assigns another object's
attributes after construction (mutable records aside, listed with why), and no context is
entered by calling ``__aenter__`` by hand (an ``AsyncExitStack`` enters it)."""

from __future__ import annotations

import ast
from pathlib import Path

import host_sim

ROOT = Path(host_sim.__file__).parent

_LIVE_STATE = "SessionState/TurnState: the engine's mutable records of live sessions and turns"
_HELD = "SessionState: SessionCache's own records of the sessions it holds (it made them; every change to them is its)"

ALLOWED: dict[tuple[str, str], str] = {
    ("__init__.py", "obj"): "re-exports set __module__ so reprs and docs say host_sim.X (STYLE: one public door)",
    ("cli/_run.py", "namespace"): "argparse's Namespace of parsed options, filled in as argparse does",
    ("fold/_guard.py", "trampoline"): "a wrapper takes its target's name, as functools.wraps does",
    ("fold/_guard.py", "sys"): "the sandbox's interpreter setting (no bytecode written)",
    ("fold/_guard.py", "_sys"): "the sandbox's interpreter setting (no bytecode written)",
    ("fold/_sandbox_child.py", "time"): "the sandbox child replaces the module functions it records",
    ("fold/_sandbox_child.py", "os"): "the sandbox child replaces the module functions it records",
    ("lanes/_ext_host.py", "scope"): "anyio's CancelScope.deadline is meant to be set",
    ("mcp/_client.py", "connection"): "_Connection: McpTools' mutable record of one server",
    ("models/_openai.py", "pieces"): "_ToolCallPieces: one streamed tool call as its deltas arrive",
    ("sessions/_turns.py", "turn"): _LIVE_STATE,
    ("sessions/_turns.py", "session"): _LIVE_STATE,
    ("sessions/_engine.py", "session"): _LIVE_STATE,
    ("sessions/_engine.py", "anchor"): _LIVE_STATE,
    ("sessions/_state.py", "turn"): _LIVE_STATE,
    ("sessions/_state.py", "use"): _LIVE_STATE,
    ("sessions/_commands.py", "state"): _LIVE_STATE,
    ("sessions/_cache.py", "state"): _HELD,
    ("sessions/_cache.py", "session"): _HELD,
    ("sessions/_cache.py", "current"): _HELD,
    ("stores/_sqlite.py", "txn"): "Txn: the commit queue's record of how one store call went",
    ("stores/_sqlite.py", "batch"): "Batch: the commit queue's record of one commit",
    ("stores/_sqlite_commit.py", "txn"): "Txn: the commit queue's record of how one store call went",
    ("stores/_sqlite_commit.py", "txns"): "Txn: the commit queue's record of how one store call went",
}


def _root(node: ast.expr) -> ast.expr:
    while isinstance(node, (ast.Attribute, ast.Subscript)):
        node = node.value
    return node


def _private(attribute: str) -> bool:
    """Another object's private attribute: never assigned from outside, whatever the object."""
    return attribute.startswith("_") and not attribute.endswith("__")


def assignments() -> list[tuple[str, str, str, int]]:
    """(file, root name, target, line) of every attribute assigned on something not ``self``/``cls``."""
    found: list[tuple[str, str, str, int]] = []
    for path in sorted(ROOT.rglob("*.py")):
        name = path.relative_to(ROOT).as_posix()
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Assign):
                targets = node.targets
            elif isinstance(node, (ast.AugAssign, ast.AnnAssign)):
                targets = [node.target]
            else:
                continue
            for target in targets:
                for sub in ast.walk(target):
                    if not (isinstance(sub, ast.Attribute) and isinstance(sub.ctx, ast.Store)):
                        continue
                    root = _root(sub.value)
                    owner = root.id if isinstance(root, ast.Name) else ast.unparse(root)
                    if owner not in ("self", "cls"):
                        found.append((name, owner, ast.unparse(sub), node.lineno))
    return found


def test_no_module_assigns_the_attributes_of_an_object_it_did_not_make_itself() -> None:
    unexplained = [
        f"{path}:{line}: {target} = ..."
        for path, owner, target, line in assignments()
        if (path, owner) not in ALLOWED or _private(target.rpartition(".")[2])
    ]
    assert unexplained == [], "pass it to the constructor (or add a method that says what it does)"


def test_no_context_is_entered_or_exited_by_hand() -> None:
    found = [
        f"{path.relative_to(ROOT).as_posix()}:{node.lineno}: {ast.unparse(node)}"
        for path in sorted(ROOT.rglob("*.py"))
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8")))
        if isinstance(node, ast.Call)
        and isinstance(node.func, ast.Attribute)
        and node.func.attr in ("__aenter__", "__aexit__", "__enter__", "__exit__")
    ]
    assert found == [], "enter it with `async with` or an AsyncExitStack"


def test_the_allow_list_names_only_assignments_that_are_there() -> None:
    assert set(ALLOWED) <= {(path, owner) for path, owner, _, _ in assignments()}

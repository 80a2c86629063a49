"""modular_sdk and host_sim raise `ModularError` subclasses, never a bare builtin exception,
except where a Python protocol asks for the builtin itself (each listed here with why)."""

from __future__ import annotations

import ast
import builtins
from pathlib import Path

import host_sim
import modular_sdk

ROOTS = (Path(modular_sdk.__file__).parent, Path(host_sim.__file__).parent)

BUILTIN_ERRORS = frozenset(
    name
    for name in dir(builtins)
    if isinstance(getattr(builtins, name), type) and issubclass(getattr(builtins, name), BaseException)
)

ALLOWED: dict[tuple[str, str], str] = {
    ("host_sim/sessions/_state.py", "IndexError"): "Sequence.__getitem__: iteration, `in` and index() stop on IndexError",
    ("host_sim/sessions/_events.py", "StopAsyncIteration"): "__anext__ of an async iterator ends with it",
    ("host_sim/sessions/_scoped.py", "StopAsyncIteration"): "__anext__ of an async iterator ends with it",
    ("host_sim/pytest_plugin.py", "AssertionError"): "a test helper: pytest reports an AssertionError as a failure",
    ("host_sim/cli/_chat.py", "EOFError"): "stdin at its end, as input() says it; the chat loop ends on it like Ctrl-D",
    ("host_sim/cli/_chat.py", "KeyboardInterrupt"): "Ctrl-C handed on, so the command ends with 130",
    ("host_sim/cli/_endings.py", "KeyboardInterrupt"): "Ctrl-C handed on, so the command ends with 130",
    ("host_sim/examples/integration/app.py", "RuntimeError"): (
        "an example application's own startup check (OTLP asked for, SDK missing): the reader's code, not the library's"
    ),
    ("host_sim/cli/_mcp.py", "KeyboardInterrupt"): "a SIGINT handler: the signal uvicorn raises again becomes Python's Ctrl-C",
    ("host_sim/stores/__init__.py", "AttributeError"): "a module __getattr__ (the renamed names) says a name is missing with it",
}


def bare_raises() -> set[tuple[str, str, int]]:
    found: set[tuple[str, str, int]] = set()
    for root in ROOTS:
        for path in root.rglob("*.py"):
            name = path.relative_to(root.parent).as_posix()
            for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
                if not isinstance(node, ast.Raise) or node.exc is None:
                    continue
                raised = node.exc.func if isinstance(node.exc, ast.Call) else node.exc
                if isinstance(raised, ast.Name) and raised.id in BUILTIN_ERRORS:
                    found.add((name, raised.id, node.lineno))
                elif isinstance(raised, ast.Attribute) and isinstance(raised.value, ast.Name) and raised.value.id == "builtins":
                    found.add((name, raised.attr, node.lineno))
    return found


def test_every_raise_is_a_modular_error_or_a_builtin_a_protocol_asks_for() -> None:
    unexplained = sorted(f"{path}:{line}: raise {error}" for path, error, line in bare_raises() if (path, error) not in ALLOWED)
    assert unexplained == [], "raise a ModularError subclass (one that also inherits the builtin, for callers catching it)"


def test_the_allow_list_names_only_raises_that_are_there() -> None:
    assert set(ALLOWED) <= {(path, error) for path, error, _ in bare_raises()}

"""No store contract suite can leave PostgreSQL (or any store) out.

A suite that listed its own store kinds once skipped PostgreSQL, and ``host.notifications``
shipped broken there. Store suites take the one `any_store` fixture (tests/host/conftest.py),
which runs each test on every kind in `STORE_KINDS`; this test reads every test module and
fails on a hand-made list of store kinds that lacks one of them.
"""

from __future__ import annotations

import ast
from pathlib import Path

from ..conftest import STORE_KINDS

HERE = Path(__file__).resolve().parent
TESTS = HERE.parents[1]

# A model-based test of one host's turn ordering against a model kept beside the store
# (it reopens SQLite read-only between steps); ordering across hosts on PostgreSQL is what
# test_postgres_store.py checks. Adding a module here needs a reason like this one.
# A store of an integrator's own still named ``running_turns`` is asked by that name when a
# host recovers what a crash left running at open, which a single-writer store does (a host
# on PostgreSQL leaves a gone host's turns to claim_dead after the grace); the file's other
# tests take any_store.
SINGLE_HOST_MODELS = {
    "tests/host/stores/test_order_state_machine.py",
    "tests/host/stores/test_renamed_names.py",
}


def _store_kind_lists(tree: ast.AST) -> list[tuple[int, list[str]]]:
    """Every list, tuple or Literal[...] of string constants that names a store kind."""
    found: list[tuple[int, list[str]]] = []
    for node in ast.walk(tree):
        if not isinstance(node, (ast.List, ast.Tuple)) or not node.elts:
            continue
        if not all(isinstance(e, ast.Constant) and isinstance(e.value, str) for e in node.elts):
            continue
        names = [str(e.value) for e in node.elts if isinstance(e, ast.Constant)]
        if {"memory", "sqlite", "postgres"} & set(names) and len(set(names) & set(STORE_KINDS)) >= 2:
            found.append((node.lineno, names))
    return found


def test_every_list_of_store_kinds_in_the_tests_names_every_store() -> None:
    offenders: list[str] = []
    for path in sorted(TESTS.rglob("*.py")):
        name = path.relative_to(TESTS.parent).as_posix()
        if name in SINGLE_HOST_MODELS or path == Path(__file__).resolve():
            continue
        for line, names in _store_kind_lists(ast.parse(path.read_text(encoding="utf-8"))):
            missing = [k for k in STORE_KINDS if k not in names]
            if missing:
                offenders.append(f"{name}:{line} lists {names!r} without {missing!r}")
    assert not offenders, (
        "store suites run on every store: take the any_store fixture (tests/host/conftest.py) "
        "instead of listing store kinds; " + "; ".join(offenders)
    )


def test_the_checker_catches_a_suite_that_leaves_postgresql_out() -> None:
    source = '@pytest.fixture(params=["memory", "sqlite"])\ndef reopenable(): ...\n'
    assert _store_kind_lists(ast.parse(source)) == [(1, ["memory", "sqlite"])]
    literal = 'StoreKind = Literal["memory", "sqlite"]\n'
    assert _store_kind_lists(ast.parse(literal)) == [(1, ["memory", "sqlite"])]


def test_any_store_runs_every_store_kind() -> None:
    assert STORE_KINDS == ("memory", "sqlite", "postgres")

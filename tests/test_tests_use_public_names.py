"""Tests reach the code through its public names, or through the seams the code declares
for its own tests (`host_sim.testing`, `host_sim.cli.testing`), never through a private
module: a test that imports ``host_sim.stores._invariants`` breaks when the code moves
inside its package, though nothing a user sees changed.

Where a test must still import a private module, the exception is named here with why
(`ALLOWED`), and a test fails when it is no longer used, so the list only shrinks."""

from __future__ import annotations

import ast
import textwrap
from pathlib import Path

TESTS = Path(__file__).parent
PACKAGES = ("host_sim", "modular_sdk")

ALLOWED: dict[tuple[str, str], str] = {
    ("host_sim._cli", ""): "the `host-sim` console script's entry point (pyproject.toml: host_sim._cli:main); "
    "tests run the command in-process through it, as the installed script does",
    ("modular_sdk._json", "sdk/"): "unit tests of the SDK's JSON converter (structure, unstructure, load_json), "
    "the SDK's internal interface to the host (tests/test_public_api.py INTERNAL); modular_sdk's tests import no host_sim",
    ("modular_sdk._schema", "sdk/"): "unit tests of the SDK's JSON Schema derivation (json_schema, DRAFT, SchemaError), as above",
    ("modular_sdk._frozen", "sdk/"): "unit tests of the SDK's frozen JSON values (freeze, thaw), as above",
    ("modular_sdk._rules", "sdk/"): "the limits and quoting the SDK's bad-input tests check messages against (MAX_DEPTH, show), as above",
    ("modular_sdk._frozen", "typing/mod_types.py"): "a type test of what mypy infers for a mod's frozen JSON fields; it names the type it expects",
    ("host_sim.acp._agent", "cli/test_acp_agent.py"): "the ACP agent imports the optional `acp` package at import time, "
    "so no seam of host_sim can re-export it; the test drives it in-process (tests/cli/test_acp.py runs `host-sim acp`)",
    ("host_sim.fold._spec", "fold/hostile/"): "a mod of the hostile corpus: patching the host's private module is the attack "
    "the guard must refuse (tests/fold/test_hostile_corpus.py)",
    ("host_sim.fold._guard", "fold/test_guard.py"): "the source of a hostile mod that opens a guarded region of its own: "
    "reaching the guard's private module is the attack the guard must refuse",
    ("host_sim.agui._wire", "protocols/test_agui_wire.py"): "the AG-UI app's SSE templates import the optional "
    "`ag_ui` package at import time, so host_sim.testing cannot re-export them without loading it for every test; "
    "the test compares their bytes with the protocol's own encoder",
    ("host_sim.lineage_mcp._server", "host/mcp/test_mcp_lineage_server.py"): "a subprocess imports the modules that serve MCP "
    "to check that importing them loads no `mcp`: the modules are what the test checks",
    ("host_sim.cli._mcp", "host/mcp/test_mcp_lineage_server.py"): "as above: `host-sim mcp`'s module must load no `mcp` on import",
}
"""(private module, the test file or folder under tests/ that may import it, "" for all): why."""


def private_imports(source: str) -> set[str]:
    """The private modules (and private names) of host_sim and modular_sdk that ``source``
    imports, at top level or inside functions, type-only imports included, and those that
    the Python in its strings imports (a script a test runs in a subprocess, a mod's source)."""
    found: set[str] = set()
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Constant) and isinstance(node.value, str) and "import" in node.value:
            try:
                found |= private_imports(textwrap.dedent(node.value))
            except SyntaxError:  # prose, not Python
                pass
            continue
        if isinstance(node, ast.Import):
            names = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            names = [node.module] + [f"{node.module}.{alias.name}" for alias in node.names]
        else:
            continue
        for name in names:
            parts = name.split(".")
            if parts[0] not in PACKAGES:
                continue
            private = next((i for i, part in enumerate(parts) if part.startswith("_") and not part.startswith("__")), None)
            if private is not None:
                found.add(".".join(parts[: private + 1]))
    return found


def imports_by_file() -> dict[str, set[str]]:
    """Each file under tests/ (but this one, whose examples below are private imports) with
    the private modules it imports."""
    return {
        path.relative_to(TESTS).as_posix(): found
        for path in sorted(TESTS.rglob("*.py"))
        if path.name != Path(__file__).name and (found := private_imports(path.read_text(encoding="utf-8")))
    }


def allowed(where: str, module: str) -> bool:
    return any(module == allowed_module and where.startswith(prefix) for allowed_module, prefix in ALLOWED)


def test_no_test_imports_a_private_module_the_allowlist_does_not_name() -> None:
    wrong = sorted(
        f"tests/{where} imports {module}: use its public name, or a seam declared in host_sim.testing"
        for where, modules in imports_by_file().items()
        for module in modules
        if not allowed(where, module)
    )
    assert wrong == []


def test_an_allowance_no_test_uses_leaves_the_list() -> None:
    used = {
        (module, prefix)
        for where, modules in imports_by_file().items()
        for module in modules
        for allowed_module, prefix in ALLOWED
        if module == allowed_module and where.startswith(prefix)
    }
    assert sorted(ALLOWED.keys() - used) == []


def test_the_check_sees_every_form_of_a_private_import() -> None:
    source = (
        "import host_sim.fold._spec as spec\n"
        "from host_sim.stores._invariants import check\n"
        "from host_sim.sessions import _ids\n"
        "from host_sim.models._openai import _retry_after\n"
        "def later() -> None:\n"
        "    from modular_sdk._schema import JsonObject\n"
        "if TYPE_CHECKING:\n"
        "    from host_sim.stores._shared import EventRow\n"
        "SCRIPT = '''\n"
        "    from host_sim.traces import _spool\n"
        "    _spool.write_event(sys.argv[1], {})\n"
        "    '''\n"
    )
    assert private_imports(source) == {
        "host_sim.traces._spool",
        "host_sim.fold._spec",
        "host_sim.stores._invariants",
        "host_sim.sessions._ids",
        "host_sim.models._openai",
        "modular_sdk._schema",
        "host_sim.stores._shared",
    }


def test_the_check_lets_public_names_seams_and_other_packages_through() -> None:
    source = (
        "from host_sim import Host\n"
        "from host_sim.stores import TurnRecord\n"
        "from host_sim.testing import check, ids\n"
        "from host_sim.cli.testing import run_chat\n"
        "from modular_sdk import define_mod\n"
        "from . import _stores\n"
        "from ..postgres_server import PostgresServer\n"
        "import _pytest.monkeypatch\n"
        "from __future__ import annotations\n"
    )
    assert private_imports(source) == set()

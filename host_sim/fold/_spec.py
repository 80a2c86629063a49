"""Mod specs: parse ``path/to/file.py[:attr]`` or ``package.module[:attr]``, load, discover."""

from __future__ import annotations

import os
import sys
from collections.abc import Callable
from importlib.metadata import entry_points
from typing import TypeVar

import attrs

from modular_sdk import ManifestBuildError, Mod

from ._guard import Scope, run_guarded
from ._importing import LoadFailure, expected_file, find_mod, import_module, locate, scope_dirs
from ._refusal import refusal

__all__ = ["ENTRY_POINT_GROUP", "Target", "discover_mods", "guarded", "load_mod", "parse_spec", "search_path"]

_T = TypeVar("_T")
_MAX_SPEC = 4096  # PATH_MAX on Linux: a longer spec names nothing (and would not fit a command line)

PROTECTED = (
    "builtins",
    "host_sim",
    "host_sim.fold",
    "host_sim.fold._fold",
    "host_sim.fold._guard",
    "host_sim.fold._importing",
    "host_sim.fold._manifest",
    "host_sim.fold._refusal",
    "host_sim.fold._sandbox",
    "host_sim.fold._spec",
)
"""Modules a mod's import must leave as they were: the guard restores them and refuses."""

ENTRY_POINT_GROUP = "modular.mods"
"""The entry-point group through which installed packages expose mod specs."""


@attrs.frozen(kw_only=True)
class Target:
    """A parsed mod spec: what to import and where from. Immutable."""

    spec: str
    """The spec as given."""
    module: str
    """The dotted module name to import."""
    attr: str
    """The module attribute holding the `Mod` (default ``mod``)."""
    file: str | None
    """The absolute source file for a file spec, else ``None``."""
    root: str
    """The directory to put first on the search path (a file spec's root, or the cwd)."""

    @property
    def spec_base(self) -> str:
        """The spec without its ``:attr``."""
        return self.spec.rsplit(":", 1)[0] if self.spec.endswith(f":{self.attr}") else self.spec


def _refuse(spec: str, problem: str) -> ManifestBuildError:
    return ManifestBuildError(f"cannot load mod {spec!r}: {problem}", spec=spec, problems=[problem])


def _is_dotted(name: str) -> bool:
    return bool(name) and all(part.isidentifier() for part in name.split("."))


def parse_spec(spec: str) -> Target:
    """Parse a mod spec; raises `ManifestBuildError` for a missing file or a malformed spec."""
    if not isinstance(spec, str) or not spec.strip():
        raise _refuse(
            str(spec),
            "a mod spec must be 'path/to/file.py' or 'package.module' (optionally with "
            f"':attr'), got {spec!r}",
        )
    if len(spec) > _MAX_SPEC or "\x00" in spec:  # no file or module is named so: refused before any process
        shown = spec if len(spec) <= 80 else spec[:60] + f"... ({len(spec):,} characters)"
        why = (
            f"no path or module name is longer than {_MAX_SPEC:,} characters"
            if len(spec) > _MAX_SPEC
            else "no path or module name holds a NUL character"
        )
        raise _refuse(shown, f"{why}; pass 'path/to/file.py' or 'package.module'")
    base, attr = spec, "mod"
    head, sep, tail = spec.rpartition(":")
    if sep and tail.isidentifier() and head:
        base, attr = head, tail
    elif sep and not (len(head) == 1 and head.isalpha()):  # not a Windows drive letter
        raise _refuse(spec, f"{tail!r} after ':' is not an attribute name; write 'SPEC:attr'")
    if base.endswith(".py") or "/" in base or os.sep in base:
        return _file_target(spec, base, attr)
    if not _is_dotted(base):
        raise _refuse(
            spec,
            f"{base!r} is neither a path to a .py file nor a dotted module name; "
            "write 'path/to/file.py' or 'package.module'",
        )
    return Target(spec=spec, module=base, attr=attr, file=None, root=os.getcwd())


def _file_target(spec: str, base: str, attr: str) -> Target:
    path = os.path.abspath(base)
    if os.path.isdir(path):
        init = os.path.join(path, "__init__.py")
        if not os.path.isfile(init):
            raise _refuse(spec, f"{base!r} is a directory, not a .py file; pass the mod's .py file")
        path = init
    if not os.path.isfile(path):
        raise _refuse(spec, f"file {base!r} not found (looked for {path}); check the path")
    if not path.endswith(".py"):
        raise _refuse(spec, f"{base!r} is not a Python source file (.py)")
    directory, name = os.path.split(path)
    parts = [] if name == "__init__.py" else [name[:-3]]
    if name == "__init__.py":
        parts.insert(0, os.path.basename(directory))
        directory = os.path.dirname(directory)
    while os.path.isfile(os.path.join(directory, "__init__.py")):
        parts.insert(0, os.path.basename(directory))
        directory = os.path.dirname(directory)
    module = ".".join(parts)
    if not _is_dotted(module):
        raise _refuse(
            spec,
            f"{base!r} cannot be imported as module {module!r}: each part of a module name must "
            "be an identifier; rename it (e.g. my_mod.py, not my-mod.py)",
        )
    return Target(spec=spec, module=module, attr=attr, file=path, root=directory)


def search_path(target: Target) -> list[str]:
    """The module search path for ``target``: its root, then this process's ``sys.path``.

    Relative entries (``''`` included) are made absolute against the working directory, so
    a child process resolves exactly the modules this process would.
    """
    entries = [target.root]
    for entry in sys.path:
        entries.append(os.path.abspath(entry) if entry else os.getcwd())
    return list(dict.fromkeys(entries))


def guarded(spec: str, action: Callable[[], _T]) -> _T:
    """Run ``action`` (importing or folding the mod of ``spec``) under the purity guard.

    In this process, for this thread only: what the build sandbox blocks is blocked here
    too, so a mod that behaves differently outside the sandbox gains nothing. Raises
    `ManifestBuildError` naming every operation the guard stopped or reported (with its
    ``file:line``), or the loading error `action` raised.
    """
    target = parse_spec(spec)
    path = search_path(target)
    mod_file = target.file or expected_file(target.module, path) or ""
    local, foreign = scope_dirs(target.module, mod_file or None, path)
    before = set(sys.modules)
    result, error, records = run_guarded(action, Scope(mod_file, local, foreign, PROTECTED))
    problems = error.problems if isinstance(error, LoadFailure) else []
    if records:
        _forget(set(sys.modules) - before, mod_file, local, foreign)
        raise refusal(spec, records, problems, head=f"cannot load mod {spec!r} in this process") from None
    if isinstance(error, LoadFailure):
        raise ManifestBuildError(
            f"cannot load mod {spec!r}: " + "; ".join(problems), spec=spec, problems=problems
        ) from None
    if error is not None:
        raise error
    return result  # type: ignore[return-value]  # no error: the action returned


def _forget(names: set[str], mod_file: str, local: tuple[str, ...], foreign: tuple[str, ...]) -> None:
    """Drop the refused mod and its local modules from ``sys.modules``: a second load must
    run (and refuse) them again, not hand out what the guard stopped halfway."""
    inside = tuple(d.rstrip(os.sep) + os.sep for d in local)
    outside = tuple(d.rstrip(os.sep) + os.sep for d in foreign)
    for name in names:
        file = getattr(sys.modules.get(name), "__file__", None)
        if not isinstance(file, str):
            continue
        path = os.path.abspath(file)
        if path == mod_file or (path.startswith(inside) and not path.startswith(outside)):
            del sys.modules[name]


def load_mod(spec: str) -> Mod:
    """Import the mod module named by ``spec`` in this process and return its `Mod`.

    ``spec`` is ``path/to/file.py``, ``package.module``, or either with ``:attr`` (default
    attribute ``mod``). A file spec's root (the first directory above it that is not a
    package) is put first on ``sys.path``; a module spec also searches the working
    directory. Raises `ManifestBuildError` with one readable line, never a traceback: file
    not found, syntax error (``file:line``), a dependency that cannot be imported (named),
    a missing attribute (listing the module's `Mod` values), an attribute that is not a
    `Mod`.

    The import runs under the purity guard (see `guarded`): an operation the build sandbox
    refuses is stopped before it happens and raises `ManifestBuildError` naming it. The
    guard keeps a mod's top level pure; it does not make untrusted code safe to run (use
    `load_verified`, and see docs/manifest.md for what the guard cannot stop).
    """
    target = parse_spec(spec)
    if target.root not in sys.path:
        sys.path.insert(0, target.root)

    def load() -> Mod:
        mod_file = locate(target.module, target.file)
        module = import_module(target.module, mod_file)
        found = find_mod(module, target.attr, target.spec_base, Mod)
        assert isinstance(found, Mod)
        return found

    return guarded(spec, load)


def discover_mods() -> dict[str, str]:
    """Installed mods: entry-point name -> mod spec, from the group ``modular.mods``.

    A package declares one in its ``pyproject.toml``::

        [project.entry-points."modular.mods"]
        review = "review_mod.mod:mod"
    """
    found = {ep.name: ep.value for ep in entry_points(group=ENTRY_POINT_GROUP)}
    return dict(sorted(found.items()))


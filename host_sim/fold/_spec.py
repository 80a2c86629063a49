"""Mod specs: parse ``path/to/file.py[:attr]`` or ``package.module[:attr]``, load, discover."""

from __future__ import annotations

import os
import sys
from importlib.metadata import entry_points

import attrs
from modular_sdk import ManifestBuildError, Mod

from ._importing import LoadFailure, find_mod, import_module, locate

__all__ = ["ENTRY_POINT_GROUP", "Target", "discover_mods", "load_mod", "parse_spec", "search_path"]

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


def load_mod(spec: str) -> Mod:
    """Import the mod module named by ``spec`` in this process and return its `Mod`.

    ``spec`` is ``path/to/file.py``, ``package.module``, or either with ``:attr`` (default
    attribute ``mod``). A file spec's root (the first directory above it that is not a
    package) is put first on ``sys.path``; a module spec also searches the working
    directory. Raises `ManifestBuildError` with one readable line, never a traceback: file
    not found, syntax error (``file:line``), a dependency that cannot be imported (named),
    a missing attribute (listing the module's `Mod` values), an attribute that is not a
    `Mod`.

    This runs the module's top level here: use `load_verified` for mods you do not trust
    to be pure.
    """
    target = parse_spec(spec)
    if target.root not in sys.path:
        sys.path.insert(0, target.root)
    try:
        mod_file = locate(target.module, target.file)
        module = import_module(target.module, mod_file)
        found = find_mod(module, target.attr, target.spec_base, Mod)
    except LoadFailure as exc:
        raise ManifestBuildError(
            f"cannot load mod {spec!r}: " + "; ".join(exc.problems), spec=spec, problems=exc.problems
        ) from None
    assert isinstance(found, Mod)
    return found


def discover_mods() -> dict[str, str]:
    """Installed mods: entry-point name -> mod spec, from the group ``modular.mods``.

    A package declares one in its ``pyproject.toml``::

        [project.entry-points."modular.mods"]
        review = "review_mod.mod:mod"
    """
    found = {ep.name: ep.value for ep in entry_points(group=ENTRY_POINT_GROUP)}
    return dict(sorted(found.items()))


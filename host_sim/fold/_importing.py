"""Import a mod module and pick its `Mod` value, turning every failure into readable lines.

Shared by `load_mod` (in the host process) and the sandbox child, which loads this file by
path: it imports nothing but the standard library at module level and uses no relative
imports.
"""

from __future__ import annotations

import errno
import importlib
import importlib.util
import os
import sys
from collections.abc import Iterator
from types import FrameType, ModuleType, TracebackType

__all__ = [
    "BLOCKED",
    "LoadFailure",
    "display_path",
    "expected_file",
    "find_mod",
    "import_module",
    "locate",
    "scope_dirs",
]

BLOCKED = "blocked by the mod purity guard: "
"""How the purity guard's `PermissionError` starts (``_guard.BLOCKED``; this file imports no
other file of the package)."""


class LoadFailure(Exception):
    """Loading failed; ``problems`` holds one readable line per reason."""

    def __init__(self, problems: list[str]) -> None:
        super().__init__("; ".join(problems))
        self.problems = [p for p in problems if p]


def display_path(path: str) -> str:
    """``path`` relative to the working directory when it lies below it, else absolute."""
    try:
        rel = os.path.relpath(path)
    except ValueError:  # another drive
        return path
    return path if rel == os.pardir or rel.startswith(os.pardir + os.sep) else rel


def _tb_frames(tb: TracebackType | None) -> Iterator[tuple[FrameType, int]]:
    while tb is not None:
        yield tb.tb_frame, tb.tb_lineno
        tb = tb.tb_next


def _where(exc: BaseException, mod_file: str | None) -> str:
    """``file:line`` of the mod's innermost frame in the traceback, else the last frame's."""
    frames = list(_tb_frames(exc.__traceback__))
    own = [(f, line) for f, line in frames if mod_file and f.f_code.co_filename == mod_file]
    chosen = own[-1] if own else (frames[-1] if frames else None)
    if chosen is None:
        return display_path(mod_file) if mod_file else "<unknown>"
    frame, line = chosen
    return f"{display_path(frame.f_code.co_filename)}:{line}"


def _first_line(exc: BaseException) -> str:
    text = str(exc).strip()
    return text if text else type(exc).__name__


def describe(
    exc: BaseException, module: str, mod_file: str | None, *, memory: str = "", file_size: str = ""
) -> str:
    """One readable line for an exception raised while importing ``module``.

    ``""`` for the purity guard's own `PermissionError`: the guard reports that operation
    itself. ``memory`` and ``file_size`` say which limits apply (in the sandbox).
    """
    if isinstance(exc, PermissionError) and str(exc).startswith(BLOCKED):
        return ""
    if isinstance(exc, MemoryError):
        return (
            f"{_where(exc, mod_file)}: the import ran out of memory (MemoryError){memory}; a mod's "
            "top level must not build large data: load it in a handler"
        )
    if isinstance(exc, OSError) and exc.errno == errno.EFBIG:
        return (
            f"{_where(exc, mod_file)}: the import wrote past the file size limit{file_size} "
            "(EFBIG); a mod's top level must not write"
        )
    if isinstance(exc, SyntaxError):
        where = display_path(exc.filename) if exc.filename else _where(exc, mod_file)
        line = f":{exc.lineno}" if exc.lineno else ""
        whose = "" if exc.filename == mod_file else " (in a module it imports)"
        return f"{where}{line}: syntax error{whose}: {exc.msg}; fix the code there"
    if isinstance(exc, ModuleNotFoundError):
        name = exc.name or "?"
        return (
            f"{_where(exc, mod_file)}: the module imports {name!r}, which cannot be found "
            f"({exc}); install it or fix the import (the search path is the project's "
            "sys.path plus the mod file's root)"
        )
    if isinstance(exc, ImportError):
        return f"{_where(exc, mod_file)}: an import failed: {exc}; fix the import"
    if isinstance(exc, SystemExit):
        return (
            f"{_where(exc, mod_file)}: the module called sys.exit({exc.code!r}) at import; "
            "a mod module must only define its mod"
        )
    return (
        f"{_where(exc, mod_file)}: importing {module!r} raised {type(exc).__name__}: "
        f"{_first_line(exc)}"
    )


def locate(module: str, expected_file: str | None) -> str | None:
    """The source file that importing ``module`` would run (its parents get imported).

    Raises `LoadFailure` when the module cannot be found, or when ``expected_file`` is given
    and another module of that name comes first on the search path.
    """
    try:
        spec = importlib.util.find_spec(module)
    except ModuleNotFoundError as exc:
        raise LoadFailure(
            [
                f"no module named {exc.name or module!r} (needed for {module!r}); pass a file "
                "path (path/to/mod.py) or a module importable from the working directory "
                "or an installed package"
            ]
        ) from None
    except (Exception, SystemExit) as exc:  # a parent package failed to import
        raise LoadFailure([describe(exc, module, None)]) from None
    if spec is None:
        raise LoadFailure(
            [
                f"no module named {module!r}; pass a file path (path/to/mod.py) or a module "
                "importable from the working directory or an installed package"
            ]
        )
    origin = spec.origin if spec.has_location else None
    if expected_file is not None and (origin is None or not _same(origin, expected_file)):
        raise LoadFailure(
            [
                f"{display_path(expected_file)} would be imported as {module!r}, but that name "
                f"resolves to {display_path(origin) if origin else 'a built-in module'}; "
                "rename the file"
            ]
        )
    return origin


def expected_file(module: str, path: list[str]) -> str | None:
    """The source file that importing ``module`` from ``path`` would run, found without
    running any code (no parent package is imported); None if it cannot be told."""
    from importlib.machinery import PathFinder

    search: list[str] | None = path
    spec = None
    parts = module.split(".")
    for index in range(len(parts)):
        spec = PathFinder.find_spec(".".join(parts[: index + 1]), search)
        if spec is None:
            return None
        search = list(spec.submodule_search_locations or [])
    if spec is None or not spec.has_location or spec.origin is None:
        return None
    return os.path.abspath(spec.origin)


def scope_dirs(module: str, mod_file: str | None, path: list[str]) -> tuple[tuple[str, ...], tuple[str, ...]]:
    """``(local, foreign)``: the directories of the mod's own modules, and those below them
    that are not its own (the standard library, installed packages, a virtualenv).

    A mod's own modules are its top-level package (every directory of it), or, for a
    top-level module, the files beside it.
    """
    import sysconfig
    from importlib.machinery import PathFinder

    local: list[str] = []
    top = module.split(".")[0]
    spec = PathFinder.find_spec(top, path)
    if spec is not None and spec.submodule_search_locations:
        local = [os.path.abspath(d) for d in spec.submodule_search_locations]
    elif spec is not None and spec.has_location and spec.origin:
        local = [os.path.dirname(os.path.abspath(spec.origin))]
    elif mod_file:
        local = [os.path.dirname(mod_file)]
    paths = sysconfig.get_paths()
    candidates = {paths[k] for k in ("stdlib", "platstdlib", "purelib", "platlib") if k in paths}
    candidates |= {p for p in sys.path if os.path.basename(p) in ("site-packages", "dist-packages")}
    candidates |= {sys.prefix, sys.base_prefix, sys.exec_prefix}
    foreign = sorted(
        {
            os.path.abspath(c)
            for c in candidates
            if any(os.path.abspath(c).startswith(d.rstrip(os.sep) + os.sep) for d in local)
        }
    )
    return tuple(local), tuple(foreign)


def _same(a: str, b: str) -> bool:
    try:
        return os.path.samefile(a, b)
    except OSError:
        return False


def import_module(module: str, mod_file: str | None, *, memory: str = "", file_size: str = "") -> ModuleType:
    """Import ``module``; raises `LoadFailure` describing any error with its ``file:line``."""
    try:
        return importlib.import_module(module)
    except (Exception, SystemExit) as exc:
        sys.modules.pop(module, None)
        raise LoadFailure([describe(exc, module, mod_file, memory=memory, file_size=file_size)]) from None


def find_mod(module: ModuleType, attr: str, spec_base: str, mod_type: type) -> object:
    """``module.<attr>``, checked to be a ``mod_type`` (`Mod`); raises `LoadFailure`."""
    values = vars(module)
    mods = sorted(name for name, value in values.items() if isinstance(value, mod_type))
    if mods:
        others = "its Mod values are " + ", ".join(
            f"{name!r} (use '{spec_base}:{name}')" for name in mods
        )
    else:
        others = f"it defines no Mod value: define one as `{attr} = define_mod(...)`"
    if attr not in values:
        raise LoadFailure([f"module {module.__name__!r} has no attribute {attr!r}; {others}"])
    value = values[attr]
    if not isinstance(value, mod_type):
        raise LoadFailure(
            [
                f"{module.__name__}.{attr} is {_short(value)} ({_a(type(value).__name__)}), not a Mod; "
                "set it to define_mod(...)" + (f" ({others})" if mods else "")
            ]
        )
    return value


def _a(noun: str) -> str:
    """``noun`` with its indefinite article: 'an int', 'a str'."""
    return f"{'an' if noun[:1].lower() in 'aeiou' else 'a'} {noun}"


def _short(value: object) -> str:
    text = repr(value)
    return text if len(text) <= 60 else text[:57] + "..."

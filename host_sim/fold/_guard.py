"""The mod purity guard: one audit-hook policy, used by the build sandbox and by the host.

A mod module's top level must only define its mod. While a mod is imported (in the build
sandbox child, or in the host by `load_mod`), a PEP 578 audit hook stops every operation
that would change anything outside the interpreter *before* it happens, by raising
``PermissionError("blocked by the mod purity guard: ...")`` from the hook:

- file writes, deletes, renames, permission changes (``open`` for writing, ``os.remove``,
  ``shutil.rmtree``, ...); subprocesses, ``os.system``, ``os.exec*``, ``os.posix_spawn``,
  ``os.fork``, signals to other processes; sockets and name resolution; environment
  changes (``os.environ[...] = ...``), ``os.chdir``, resource limits, ``fcntl``;
- the ways around the hook that Python offers: ``ctypes`` (loading libraries, resolving
  symbols, reading memory), ``sys.setprofile``/``sys.settrace``/``sys.addaudithook``,
  ``gc.get_objects``/``get_referrers``/``get_referents``, ``sys._current_frames``, and
  replacing a function's ``__code__``;
- thread starts and (in the host) ending the process (``os._exit``, ``os.abort``,
  ``faulthandler._sigsegv`` ...), and re-creating the built-in modules the guard relies on,
  through trampolines: the module attributes are replaced by stand-ins that hold no
  original and ask the hook, which alone holds the originals, to decide.

Reads, directory listings (and, in the sandbox, output and sleeps) are reported when the
mod's own code does them, not blocked. Every operation is reported with the ``file:line``
of the mod's statement: the innermost module body on the stack that the import system is
running, when it is the mod's file or one of its *local* modules (files below the mod's
package or directory that are not the standard library or installed packages). What a
dependency does while its own module body runs is not the mod's: reads are not reported,
but a blocked operation still is (the build must not change anything, whoever asks).

Integrity: the hook is a closure created once per process and referenced by nothing but
the interpreter's hook list; every name its decisions use (tables, builtins, originals,
the per-thread state) is bound in that closure before any mod code runs, so rebinding a
module global, a builtin or ``sys.modules['__main__']`` changes nothing. Entering and
leaving a guarded region are audit events that the hook accepts only from the frame of
`run_guarded` (checked by code object identity), so a mod cannot switch the guard off. At
the end of a region the hook puts back what the import changed of the host's own modules
(``host_sim.fold``, ``builtins``) and of the ``sys.modules`` entries the guard relies on
(``_thread``, ``os``, ...), and the mod is refused.

What it cannot do (see docs/manifest.md): it is a purity guard for trusted code, not a
jail. Code in C (extensions, ``ctypes`` function pointers created before the guard) can
make system calls no hook sees; unaudited calls such as ``os.write`` on an inherited file
descriptor, ``os.close``, ``signal.signal`` are not stopped; code the import leaves behind
to run later (an import hook, an event-loop callback, a monkeypatch) runs unguarded, like
the mod's handlers.

This file imports only the standard library and uses no relative imports: the sandbox child
loads it by path.
"""

from __future__ import annotations

import _thread
import faulthandler
import json
import json.encoder
import os
import signal
import sys
import threading
import types
from collections.abc import Callable
from types import CodeType, FrameType, ModuleType
from typing import NamedTuple, TypeVar

__all__ = ["BLOCKED", "Scope", "arm_process", "install", "run_guarded", "soft"]

BLOCKED = "blocked by the mod purity guard: "
"""The start of the message of every `PermissionError` the guard raises."""

_OS_WRITE = os.write  # the real one, before the sandbox child wraps it
_encode_json_string: Callable[[str], str] = json.encoder.encode_basestring_ascii  # C, when available

_ENTER = "modular.guard/enter"
_EXIT = "modular.guard/exit"
_SOFT = "modular.guard/soft"
_CALL = "modular.guard/call:"

_T = TypeVar("_T")


class Scope(NamedTuple):
    """What the guard needs to know about the mod it guards."""

    mod_file: str
    """The mod's source file (absolute), or ``""`` when unknown."""
    local_dirs: tuple[str, ...]
    """Directories whose modules are the mod's own (its package, or its directory)."""
    foreign_dirs: tuple[str, ...]
    """Directories below those that are not the mod's (a virtualenv in the project)."""
    protected: tuple[str, ...] = ()
    """Modules of the host that the mod must not change (restored and refused if it does)."""


# (module, attribute) pairs replaced by trampolines. Thread starts are always blocked in a
# guarded region; process ends are blocked in the host and reported, then done, in the
# sandbox child (whose exit code the parent reports).
_THREAD_STARTS = (("_thread", "start_new_thread"), ("_thread", "start_new"), ("threading", "_start_new_thread"))
_PROCESS_ENDS = (
    (os.name, "_exit"),
    ("os", "_exit"),
    (os.name, "abort"),
    ("os", "abort"),
    ("_signal", "raise_signal"),
    ("signal", "raise_signal"),
    ("faulthandler", "_sigsegv"),
    ("faulthandler", "_sigabrt"),
    ("faulthandler", "_sigfpe"),
    ("faulthandler", "_read_null"),
    ("faulthandler", "_stack_overflow"),
    ("faulthandler", "_fatal_error"),
    ("faulthandler", "_fatal_error_c_thread"),
)

_REBUILDS = (("_imp", "create_builtin"), ("_imp", "exec_builtin"))
"""Re-creating or re-running a loaded built-in module hands out fresh, unguarded functions:
refused for the modules the guard relies on, allowed otherwise."""

_NOTHING = object()
"""An argument a trampoline was not given."""


def _trampoline(event: str) -> Callable[..., object]:
    """A stand-in that holds no original: it asks the hook, which alone holds them, to decide
    (and to call the original, putting the result in ``box``, when the caller may).

    Its ``__defaults__`` are a tuple, and the hook refuses to replace them (or its code).
    """

    def trampoline(
        a: object = _NOTHING,
        b: object = _NOTHING,
        c: object = _NOTHING,
        /,
        _audit: Callable[..., None] = sys.audit,
        _event: str = event,
    ) -> object:
        box: list[object] = []
        _audit(_event, (a, b, c), box)
        return box[0] if box else None

    trampoline.__name__ = trampoline.__qualname__ = event.rpartition(".")[2]
    return trampoline


_WRITE_FLAGS = os.O_WRONLY | os.O_RDWR | os.O_APPEND | os.O_CREAT | os.O_TRUNC

_FS_CHANGES = frozenset(
    {
        "os.mkdir", "os.remove", "os.rename", "os.rmdir", "os.truncate", "os.chmod", "os.chown",
        "os.chflags", "os.lchflags", "os.link", "os.symlink", "os.utime", "os.setxattr",
        "os.removexattr", "shutil.rmtree", "shutil.copyfile", "shutil.copymode", "shutil.copystat",
        "shutil.copytree", "shutil.move", "shutil.chown", "shutil.make_archive",
        "shutil.unpack_archive", "tempfile.mkstemp", "tempfile.mkdtemp",
    }
)
_PROCESSES = frozenset(
    {"subprocess.Popen", "os.system", "os.exec", "os.spawn", "os.posix_spawn", "os.fork", "os.forkpty", "os.startfile"}
)
_NETWORK = frozenset(
    {
        "socket.__new__", "socket.bind", "socket.connect", "socket.sendto", "socket.sendmsg",
        "socket.getaddrinfo", "socket.gethostbyname", "socket.gethostbyname_ex",
        "socket.gethostbyaddr", "socket.getnameinfo", "urllib.Request",
        "webbrowser.open", "ftplib.connect", "smtplib.connect", "http.client.connect",
        "imaplib.open", "poplib.connect", "nntplib.connect", "telnetlib.Telnet.open",
    }
)
_PROCESS_STATE = {
    "os.putenv": "changes environment variable {0!r} (os.environ)",
    "os.unsetenv": "removes environment variable {0!r} (os.environ)",
    "os.chdir": "changes the working directory to {0!r} (os.chdir)",
    "socket.sethostname": "changes the host name (socket.sethostname)",
    "os.kill": "sends a signal to process {0!r} (os.kill)",
    "os.killpg": "sends a signal to process group {0!r} (os.killpg)",
    "signal.pthread_kill": "sends a signal to a thread (signal.pthread_kill)",
    "resource.setrlimit": "changes a resource limit (resource.setrlimit)",
    "resource.prlimit": "changes a resource limit (resource.prlimit)",
    "fcntl.fcntl": "changes a file descriptor (fcntl.fcntl)",
    "fcntl.ioctl": "controls a device (fcntl.ioctl)",
    "fcntl.flock": "locks a file (fcntl.flock)",
    "fcntl.lockf": "locks a file (fcntl.lockf)",
    "sqlite3.connect": "opens an SQLite database {0!r} (sqlite3.connect)",
    "sqlite3.enable_load_extension": "enables SQLite extensions (sqlite3.enable_load_extension)",
    "sqlite3.load_extension": "loads an SQLite extension (sqlite3.load_extension)",
    "syslog.openlog": "opens the system log (syslog.openlog)",
    "syslog.syslog": "writes to the system log (syslog.syslog)",
    "_posixshmem.shm_open": "opens shared memory {0!r} (shm_open)",
    "_posixshmem.shm_unlink": "removes shared memory {0!r} (shm_unlink)",
    "builtins.input": "reads from the terminal (input)",
    "ctypes.dlopen": "loads a C library {0!r} (ctypes.dlopen)",
    "ctypes.dlsym": "looks up C symbol {1!r} (ctypes.dlsym)",
    "ctypes.dlsym/handle": "looks up a C symbol (ctypes.dlsym)",
    "ctypes.cdata": "reads raw memory (ctypes.from_address)",
    "ctypes.cdata/buffer": "reads raw memory (ctypes.from_buffer)",
    "ctypes.string_at": "reads raw memory (ctypes.string_at)",
    "ctypes.wstring_at": "reads raw memory (ctypes.wstring_at)",
    "ctypes.call_function": "calls a C function (ctypes)",
    "ctypes.PyObj_FromPtr": "turns an address into an object (ctypes)",
    "sys.setprofile": "installs a profile hook (sys.setprofile)",
    "sys.settrace": "installs a trace hook (sys.settrace)",
    "sys.addaudithook": "installs an audit hook (sys.addaudithook)",
    "setopencodehook": "replaces the source-opening hook (setopencodehook)",
    "sys._current_frames": "inspects other threads' stacks (sys._current_frames)",
    "gc.get_objects": "walks every live object (gc.get_objects)",
    "gc.get_referrers": "searches object referrers (gc.get_referrers)",
    "gc.get_referents": "searches object referents (gc.get_referents)",
}
_CODE_ATTRIBUTES = frozenset({"__code__"})
_PINNED = ("_thread", "threading", "os", os.name, "sys", "builtins", "_signal", "signal", "faulthandler", "importlib", "importlib._bootstrap", "importlib._bootstrap_external")
"""Modules whose ``sys.modules`` entry a guarded region must leave as it found it."""
_REIMPORTS = frozenset({"_thread", "threading", os.name, "os", "_signal", "signal", "faulthandler", "_frozen_importlib", "_frozen_importlib_external"})
"""Modules whose re-import during a guarded region would hand out unguarded originals."""


def _display(path: str) -> str:
    try:
        rel = os.path.relpath(path)
    except ValueError:
        return path
    return path if rel == os.pardir or rel.startswith(os.pardir + os.sep) else rel


def _shown(value: object) -> str:
    if isinstance(value, bytes):
        value = value.decode("utf-8", "replace")
    return repr(_display(value)) if isinstance(value, str) else repr(value)


def _text(event: str, args: tuple[object, ...], writing: bool) -> str:
    """The operation, in words, for the report (never used to decide anything)."""
    first = args[0] if args else None
    if event == "open":
        if isinstance(first, int):
            return f"opens file descriptor {first} (open)"
        return f"opens file {_shown(first)} for {'writing' if writing else 'reading'} (open)"
    if event in ("os.listdir", "os.scandir"):
        return f"lists directory {_shown(first)} ({event})"
    if event in _FS_CHANGES:
        return f"changes the file system: {event}({_shown(first)})"
    if event == "subprocess.Popen":
        return f"starts a subprocess {args[1]!r} (subprocess.Popen)"
    if event == "os.system":
        command = first.decode("utf-8", "replace") if isinstance(first, bytes) else first
        return f"runs a shell command {command!r} (os.system)"
    if event in ("os.exec", "os.posix_spawn", "os.spawn", "os.startfile"):
        path = args[1] if event == "os.spawn" else first
        return f"starts program {_shown(path)} ({event}{'' if event == 'os.posix_spawn' else '*'})"
    if event in ("os.fork", "os.forkpty"):
        return f"forks the process ({event})"
    if event == "socket.__new__":
        return "creates a socket (socket.socket)"
    if event in ("socket.connect", "socket.bind", "socket.sendto", "socket.sendmsg"):
        verb = {"socket.connect": "connects a socket to", "socket.bind": "binds a socket on"}.get(event, "sends to")
        return f"{verb} {args[1]!r} ({event})"
    if event.startswith("socket."):
        return f"resolves host {first!r} ({event})"
    if event in _NETWORK:
        return f"opens {first!r} ({event})"
    if event in ("object.__setattr__", "object.__delattr__"):
        name = getattr(first, "__qualname__", type(first).__name__)
        return f"replaces the {args[1]} of {name!r} ({event.replace('object.', '')})"
    if event == "import":
        return f"re-imports module {first!r} to get around the guard (import)"
    if event == "mmap.__new__":
        return f"maps file descriptor {first!r} into memory (mmap)"
    template = _PROCESS_STATE.get(event)
    if template is not None:
        shown = [a.decode("utf-8", "replace") if isinstance(a, bytes) else a for a in args]
        return template.format(*shown, None, None, None)
    return event


def _call_text(key: str, args: tuple[object, ...]) -> str:
    module, _, name = key.partition(".")
    if name in ("start_new_thread", "start_new", "_start_new_thread"):
        target = args[0] if args else None
        owner = getattr(target, "__self__", None)
        thread_name = getattr(owner, "name", None) if owner is not None else None
        if isinstance(thread_name, str):
            return f"starts a thread {thread_name!r} (threading.Thread.start)"
        return f"starts a thread ({module}.{name})"
    if name == "_exit":
        return f"exits the process with code {args[0] if args else '?'!r} (os._exit)"
    if name == "abort":
        return "aborts the process (os.abort)"
    if name == "raise_signal":
        number = args[0] if args else None
        try:
            shown = signal.Signals(number).name if isinstance(number, int) else repr(number)
        except ValueError:
            shown = repr(number)
        return f"raises signal {shown} in its own process (signal.raise_signal)"
    return f"crashes the process on purpose ({key})"


def _machinery_codes() -> list[CodeType]:
    """Code objects of the import system (and of the source readers it uses for messages)."""
    import linecache
    import tokenize
    import zipimport

    modules: list[ModuleType] = [
        sys.modules["_frozen_importlib"],
        sys.modules["_frozen_importlib_external"],
        zipimport,
        linecache,
        tokenize,
    ]
    importlib = sys.modules.get("importlib")
    if importlib is not None:
        modules.append(importlib)
    found: list[CodeType] = []

    def add(code: object) -> None:
        if isinstance(code, CodeType):
            found.append(code)
            for const in code.co_consts:
                add(const)

    def add_callable(value: object) -> None:
        if isinstance(value, (staticmethod, classmethod)):
            value = value.__func__
        if isinstance(value, property):
            for part in (value.fget, value.fset, value.fdel):
                add_callable(part)
            return
        if isinstance(value, types.FunctionType):
            add(value.__code__)

    for module in modules:
        for value in list(vars(module).values()):
            if isinstance(value, type) and value.__module__ == module.__name__:
                for member in list(vars(value).values()):
                    add_callable(member)
            else:
                add_callable(value)
    return found


def _make_hook(*, runner: CodeType, permanent: Scope | None, sink: Callable[[str], None] | None) -> Callable[[str, tuple[object, ...]], None]:
    """The audit hook. Everything it decides with is bound here, before any mod code runs."""
    # builtins and functions, bound now: rebinding them later changes nothing here
    _type, _id, _isinstance, _len, _any, _bool = type, id, isinstance, len, any, bool
    _str, _int, _list, _set, _dict, _tuple, _frozenset = str, int, list, set, dict, tuple, frozenset
    _tuple_get, _list_extend, _list_append = tuple.__getitem__, list.extend, list.append
    _PermissionError, _ValueError = PermissionError, ValueError
    _function, _module_type = types.FunctionType, types.ModuleType
    _getframe, _get_ident, _setattr, _getattr = sys._getframe, _thread.get_ident, setattr, getattr
    _abspath, _sep = os.path.abspath, os.sep
    _text_of, _call_text_of, _display_of = _text, _call_text, _display
    modules = sys.modules
    _sys = sys
    machinery_codes = _machinery_codes()  # kept alive here: their ids stay theirs
    machinery = _frozenset(_id(c) for c in machinery_codes)
    fs_changes, processes, network = _FS_CHANGES, _PROCESSES, _NETWORK
    process_state = _frozenset(_PROCESS_STATE)
    code_attributes, reimports, write_flags, pinned = _CODE_ATTRIBUTES, _REIMPORTS, _WRITE_FLAGS, _PINNED
    soft_events = _frozenset({"os.listdir", "os.scandir"})
    # `import ctypes` opens the interpreter itself (ctypes.pythonapi = PyDLL(None)): its own
    # module body may; symbols looked up through it are still refused
    ctypes_init = os.path.join(os.path.dirname(os.__file__), "ctypes", "__init__.py")
    control = _frozenset({_ENTER, _EXIT})

    # trampolines: during a region (for good in the sandbox child) these module attributes
    # are stand-ins that hold no original; only this closure holds the originals
    originals: dict[str, Callable[..., object]] = {}
    slots: list[tuple[str, str, str]] = []
    for group in (_THREAD_STARTS, _PROCESS_ENDS, _REBUILDS):
        for module_name, attr in group:
            module = modules.get(module_name)
            original = _getattr(module, attr, None) if module is not None else None
            if original is None:
                continue
            event = _CALL + f"{'os' if module_name == os.name else module_name}.{attr}"
            originals.setdefault(event, original)
            slots.append((module_name, attr, event))
    thread_events = _frozenset(e for _, a, e in slots if "start_new" in a)
    rebuild_events = _frozenset(e for _, a, e in slots if a in ("create_builtin", "exec_builtin"))
    trampolines = {event: _trampoline(event) for _, _, event in slots}
    trampoline_ids = _frozenset(_id(t) for t in trampolines.values())
    nothing = _NOTHING
    interest = _frozenset(
        {"open", "import", "mmap.__new__", "object.__setattr__", "object.__delattr__", _SOFT}
        | fs_changes | processes | network | process_state | soft_events | _set(trampolines)
    )

    class Entry:
        __slots__ = ("frame", "mod_file", "local", "foreign", "records", "seen", "cache", "snapshot", "pins", "threads")

        def __init__(self, frame: FrameType | None, scope: Scope, threads: frozenset[int]) -> None:
            self.frame = frame
            self.mod_file = _str(_tuple_get(scope, 0))
            self.local = _tuple(_str(d).rstrip(_sep) + _sep for d in _tuple_get(scope, 1))
            self.foreign = _tuple(_str(d).rstrip(_sep) + _sep for d in _tuple_get(scope, 2))
            self.records: list[str] = []
            self.seen: set[str] = _set()
            self.cache: dict[str, bool] = {}
            self.snapshot: dict[str, tuple[ModuleType, dict[str, object]]] = {}
            for name in _tuple_get(scope, 3):
                module = modules.get(name)
                if module is not None:
                    self.snapshot[name] = (module, _dict(module.__dict__))
            self.pins = {name: modules[name] for name in pinned if name in modules}
            self.threads = threads

    active: dict[int, list[Entry]] = {}
    bookkeeping = _thread.allocate_lock()  # two threads may open or close regions at once
    steady = Entry(None, permanent, _frozenset()) if permanent is not None else None
    saved: list[bool] = []  # sys.dont_write_bytecode while regions are open

    def is_local(entry: Entry, filename: str) -> bool:
        known = entry.cache.get(filename)
        if known is not None:
            return known
        path = filename if filename[:1] in ("<", "") else _abspath(filename)
        result = path == entry.mod_file or (
            _any(path.startswith(d) for d in entry.local) and not _any(path.startswith(d) for d in entry.foreign)
        )
        entry.cache[filename] = result
        return result

    def is_body(f: FrameType) -> bool:
        back = f.f_back
        return f.f_code.co_name == "<module>" and back is not None and _id(back.f_code) in machinery

    def mod_body(entry: Entry, frame: FrameType | None) -> str | None:
        """``file:line`` of the nearest module body of the mod (or a local module) from ``frame`` up."""
        f = frame
        while f is not None:
            if is_body(f) and is_local(entry, f.f_code.co_filename):
                return f"{_display_of(f.f_code.co_filename)}:{f.f_lineno}"
            f = f.f_back
        return None

    def owner(entry: Entry, frame: FrameType | None, block: bool) -> str | None:
        """Where to report an operation (``{}`` stands for it), or None when it is not the mod's.

        The owner is the innermost module body the import system runs: the mod's own (or a
        local module's) when no import machinery lies between it and the operation.
        """
        inner: list[tuple[str, int, str]] = []
        importing = False
        f = frame
        while f is not None:
            code = f.f_code
            if _id(code) in machinery:
                importing = True
            else:
                filename = code.co_filename
                local = is_local(entry, filename)
                if is_body(f):
                    if local and not importing:
                        where = f"{_display_of(filename)}:{f.f_lineno}: {{}}"
                        where += "".join(f", inside {fn}() at {_display_of(fl)}:{ln}" for fl, ln, fn in reversed(inner))
                        if filename != entry.mod_file:
                            outer = mod_body(entry, f.f_back)
                            if outer is not None:
                                where += f", in a local module imported at {outer}"
                        return where
                    if not block:
                        return None
                    if local:  # the mod asked the import system to do it
                        return f"{_display_of(filename)}:{f.f_lineno}: {{}}, through the import system"
                    outer = mod_body(entry, f.f_back)
                    return (f"{outer}: " if outer else "") + f"{{}}, while importing {_display_of(filename)}"
                if local and not importing:
                    inner.append((filename, f.f_lineno, code.co_name))
            f = f.f_back
        if not block:
            return None
        if inner:
            fl, ln, fn = inner[0]
            return f"{_display_of(fl)}:{ln}: {{}}, inside {fn}() after the import (code the import left behind)"
        return "{}, outside the mod's import (code it left behind, or another thread)"

    def record(entry: Entry, text: str) -> None:
        if text in entry.seen:
            return
        entry.seen.add(text)
        _list_append(entry.records, text)
        if sink is not None:
            sink(text)

    def foreign_thread(ident: int, frame: FrameType | None) -> Entry | None:
        """A thread born while a region is open, running the mod's code (or no Python code)."""
        for stack in _list(active.values()):  # a copy: other threads open and close regions
            entry = stack[0]
            if ident in entry.threads:
                continue
            if frame is None:
                return entry
            f: FrameType | None = frame
            while f is not None:
                if is_local(entry, f.f_code.co_filename):
                    return entry
                f = f.f_back
        return None

    def classify(event: str, args: tuple[object, ...]) -> int:
        """0: not ours, 1: report when the mod did it, 2: block (and always report)."""
        if event == "open":
            if _len(args) < 3:
                return 2
            mode, flags = args[1], args[2]
            if _type(mode) is _str:
                return 2 if _any(c in mode for c in "wax+") else 1  # type: ignore[operator]
            if _type(flags) is _int:
                return 2 if flags & write_flags else 1  # type: ignore[operator]
            return 2
        if event in soft_events:
            return 1
        if event in fs_changes or event in processes or event in network or event in process_state:
            return 2
        if event == "object.__setattr__" or event == "object.__delattr__":
            if _len(args) < 2 or not _isinstance(args[0], _function):
                return 0
            return 2 if args[1] in code_attributes or _id(args[0]) in trampoline_ids else 0
        if event == "import":
            return 2 if _len(args) >= 1 and args[0] in reimports else 0
        if event == "mmap.__new__":
            return 2 if _len(args) >= 1 and args[0] != -1 else 0
        return 0

    def enter(frame: FrameType, args: tuple[object, ...]) -> None:
        if frame.f_code is not runner or _len(args) != 2 or _type(args[1]) is not _frozenset:
            raise _PermissionError(BLOCKED + "entering a guarded region is for the guard's runner only")
        entry = Entry(frame, args[0], args[1])  # type: ignore[arg-type]
        with bookkeeping:
            if not active:
                saved[:] = [_bool(_sys.dont_write_bytecode)]
                _sys.dont_write_bytecode = True
                for module_name, attr, event in slots:
                    module = modules.get(module_name)
                    if module is not None:
                        _setattr(module, attr, trampolines[event])
            active.setdefault(_get_ident(), []).append(entry)

    def restore(entry: Entry) -> None:
        shown = _display_of(entry.mod_file) if entry.mod_file else "the mod"
        for name, pinned_module in entry.pins.items():
            if modules.get(name) is not pinned_module:
                modules[name] = pinned_module
                record(entry, f"{shown}: replaces module {name!r} in sys.modules (to get around the guard)")
        for name, (module, before) in entry.snapshot.items():
            if modules.get(name) is not module:
                modules[name] = module
                record(entry, f"{shown}: replaces the host's module {name!r} in sys.modules")
            now = module.__dict__
            for key, value in before.items():
                if key not in now or now[key] is not value:
                    now[key] = value
                    record(entry, f"{shown}: changes the host's own code ({name}.{key})")
            for key in [k for k in now if k not in before]:
                value = now[key]
                if key == "__warningregistry__" or (_isinstance(value, _module_type) and value.__name__ == f"{name}.{key}"):
                    continue  # a warning shown, a submodule imported for the first time
                del now[key]
                record(entry, f"{shown}: adds {key!r} to the host's own module {name}")

    def leave(frame: FrameType, args: tuple[object, ...]) -> None:
        ident = _get_ident()
        stack = active.get(ident)
        if not stack or stack[-1].frame is not frame or _len(args) != 1 or _type(args[0]) is not _list:
            if stack:
                _list_append(stack[-1].records, "tampers with the purity guard (a forged exit from a guarded region)")
            raise _PermissionError(BLOCKED + "leaving a guarded region is for the guard's runner only")
        entry = stack.pop()
        restore(entry)
        if stack:  # a nested region (the mod called the runner): its findings are the outer one's too
            _list_extend(stack[-1].records, entry.records)
        with bookkeeping:
            if not stack:
                del active[ident]
            if not active:
                for module_name, attr, event in slots:
                    module = modules.get(module_name)
                    if module is not None:
                        _setattr(module, attr, originals[event])
                if saved:
                    _sys.dont_write_bytecode = saved.pop()
        _list_extend(args[0], entry.records)  # type: ignore[arg-type]

    def call(event: str, args: tuple[object, ...]) -> None:
        """A trampoline's call, allowed: call the original, hand back its result."""
        if _len(args) == 2 and _type(args[0]) is _tuple and _type(args[1]) is _list:
            given = [a for a in args[0] if a is not nothing]  # type: ignore[attr-defined]
            _list_append(args[1], originals[event](*given))  # type: ignore[arg-type]

    def rebuilds_a_guard_module(event: str, args: tuple[object, ...]) -> bool:
        given = args[0] if _len(args) == 2 and _type(args[0]) is _tuple else ()
        target = given[0] if given else None  # type: ignore[index]
        name = _getattr(target, "name", None) if event.endswith("create_builtin") else _getattr(target, "__name__", None)
        return name in reimports and (name in modules or event.endswith("exec_builtin"))

    def hook(event: str, args: tuple[object, ...]) -> None:
        if event in control:
            runner_frame = _getframe(1)
            if event == _ENTER:
                enter(runner_frame, args)
            else:
                leave(runner_frame, args)
            return
        if steady is None and not active:
            if event in trampolines:  # a stand-in someone kept, called outside any region
                call(event, args)
            return
        if event not in interest:
            return
        try:
            frame: FrameType | None = _getframe(1)  # the frame that asked for the operation
        except _ValueError:
            frame = None
        if event in trampolines and frame is not None:
            frame = frame.f_back  # past the stand-in itself
        entry = steady
        if entry is None:
            stack = active.get(_get_ident())
            entry = stack[-1] if stack else foreign_thread(_get_ident(), frame)
        if entry is None:  # another thread of the host: not guarded
            if event in trampolines:
                call(event, args)
            return
        if event in trampolines:
            if event in rebuild_events and not rebuilds_a_guard_module(event, args):
                call(event, args)
                return
            given = args[0] if _len(args) == 2 and _type(args[0]) is _tuple else ()
            operation = event
            try:
                if event in rebuild_events:
                    operation = f"re-creates a loaded built-in module to get around the guard ({event[_len(_CALL) :]})"
                else:
                    operation = _call_text_of(event[_len(_CALL) :], _tuple(a for a in given if a is not nothing))  # type: ignore[attr-defined]
                place = owner(entry, frame, True)
                if place is not None:
                    record(entry, place.replace("{}", operation, 1))
            finally:
                if event in thread_events or event in rebuild_events or steady is None:
                    raise _PermissionError(BLOCKED + operation)
            call(event, args)  # the sandbox child: end the process; the parent reports it
            return
        if event == _SOFT:
            if _len(args) == 2 and _type(args[1]) is _list:
                place = owner(entry, frame, False)
                if place is not None:
                    record(entry, place.replace("{}", _str(args[0]), 1))
                    _list_append(args[1], True)  # type: ignore[arg-type]
            return
        verdict = classify(event, args)
        if verdict == 0:
            return
        if event == "ctypes.dlopen" and args[:1] == (None,) and frame is not None:
            body = frame.f_back
            if (
                frame.f_code.co_filename == ctypes_init
                and body is not None
                and body.f_code.co_filename == ctypes_init
                and is_body(body)
            ):
                return
        block = verdict == 2
        operation = event
        try:
            place = owner(entry, frame, block)
            if place is not None or block:
                operation = _text_of(event, args, block)
            if place is not None:
                record(entry, place.replace("{}", operation, 1))
        finally:
            if block:
                raise _PermissionError(BLOCKED + operation)

    if steady is not None:  # the sandbox child: the stand-ins stay, for good
        for module_name, attr, event in slots:
            module = modules.get(module_name)
            if module is not None:
                _setattr(module, attr, trampolines[event])

    return hook


_RUNNER: list[CodeType] = []
"""The code of `run_guarded` the process hook was made for (set once)."""


def install() -> None:
    """Install the process-wide hook (once): it is idle until `run_guarded` opens a region."""
    if _RUNNER:
        return
    _RUNNER.append(run_guarded.__code__)
    sys.addaudithook(_make_hook(runner=run_guarded.__code__, permanent=None, sink=None))


def run_guarded(
    action: Callable[[], _T],
    scope: Scope,
    _audit: Callable[..., None] = sys.audit,
    _frames: Callable[[], dict[int, FrameType]] = sys._current_frames,
    _count: Callable[[], int] = _thread._count,
    _base: type[BaseException] = BaseException,
) -> tuple[_T | None, BaseException | None, list[str]]:
    """Run ``action`` (importing a mod) with the purity guard on for this thread.

    Returns ``(result, error, records)``: the action's result (or ``None``), the exception
    it raised (or ``None``), and one line per operation the guard reported, blocked ones
    included. The caller decides what to raise: a non-empty ``records`` means refuse.
    The trailing parameters are bound at definition (a tuple the guard protects), so a mod
    that rebinds ``sys.audit`` or a builtin cannot skip the region's exit.
    """
    install()
    out: list[str] = []
    result: _T | None = None
    error: BaseException | None = None
    before = frozenset(_frames())
    started = _count()
    _audit(_ENTER, scope, before)
    try:
        result = action()
    except _base as exc:  # noqa: BLE001 - handed to the caller, with the records
        error = exc
    finally:
        _audit(_EXIT, out)  # restores the host's modules (this one included) and builtins
    if _count() > started:
        out.extend(_stop_new_threads(before, scope))
    return result, error, list(dict.fromkeys(out))


def _stop_new_threads(before: frozenset[int], scope: Scope) -> list[str]:
    """Threads that the mod started around the trampolines: report them, and stop them."""
    found: list[str] = []
    local = tuple(d.rstrip(os.sep) + os.sep for d in scope.local_dirs)
    for ident, frame in sys._current_frames().items():
        if ident in before:
            continue
        f: FrameType | None = frame
        where = None
        while f is not None:
            path = os.path.abspath(f.f_code.co_filename)
            if path == scope.mod_file or any(path.startswith(d) for d in local):
                where = f"{_display(path)}:{f.f_lineno}"
            f = f.f_back
        if where is None:
            continue
        import ctypes

        ctypes.pythonapi.PyThreadState_SetAsyncExc(ctypes.c_ulong(ident), ctypes.py_object(SystemExit))
        found.append(
            f"{where}: starts a thread around the guard (a re-created _thread module); the guard "
            "stopped the thread at its next Python instruction"
        )
    return found


def arm_process(scope: Scope, report_fd: int) -> None:
    """Guard this whole process from now on (the sandbox child): every thread, for good.

    Each report is appended to ``report_fd`` at once, as a JSON line ``{"effect": ...}``,
    by a writer that only the hook holds: a mod can add lines but not take one back, nor
    silence the writer. Process ends are reported, then done.
    """
    write, encode, view_of, fd = _OS_WRITE, _encode_json_string, memoryview, report_fd

    def sink(text: str) -> None:
        view = view_of(b'{"effect": ' + encode(text).encode() + b"}\n")
        while view:
            view = view[write(fd, view) :]

    sys.dont_write_bytecode = True
    hook = _make_hook(runner=arm_process.__code__, permanent=scope, sink=sink)
    sys.addaudithook(hook)


def soft(operation: str) -> bool:
    """Report ``operation`` (output, a sleep) if the mod's own code does it; True if so."""
    box: list[bool] = []
    sys.audit(_SOFT, operation, box)
    return bool(box)


# imported here so that they are loaded before any region: their re-import is refused
_PRELOADED = (faulthandler, threading)

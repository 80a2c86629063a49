"""The sandbox child: run as ``python -I -S _sandbox_child.py REPORT_FD PAYLOAD_JSON``.

It imports one mod module with an audit hook and output guards installed, records every
side effect that the mod's own top level causes, derives the manifest, writes one JSON
report to the file descriptor ``REPORT_FD`` (never to stdout or stderr) and exits with
``os._exit`` (no atexit handlers, no waiting for threads the mod started).

Attribution rule: an effect is the mod's when the current thread is the importing one, the
mod's module body is on the stack, and no import machinery frame lies between that body and
the effect (which would make it the import system's own file access or a dependency's
import-time behaviour). The report names the mod's statement (``file:line``) and every
frame of the mod's file in between (a helper it called).

This file imports only the standard library at its top level; it is never imported.
"""

from __future__ import annotations

import _thread
import faulthandler
import json
import os
import sys
from types import FrameType, ModuleType
from typing import TYPE_CHECKING, SupportsIndex

if TYPE_CHECKING:
    from typing_extensions import Buffer

_state: dict[str, object] = {"active": False, "mod_file": None, "busy": False}
_MAIN = _thread.get_ident()
_effects: list[str] = []
_seen: set[str] = set()
_write = os.write  # the real one, for the report


def _display(path: str) -> str:
    try:
        rel = os.path.relpath(path)
    except ValueError:
        return path
    return path if rel == os.pardir or rel.startswith(os.pardir + os.sep) else rel


def _chain(frame: FrameType | None) -> list[tuple[int, str]] | None:
    """Mod frames (line, function) from the statement inward, or None if not the mod's."""
    mod_file = _state["mod_file"]
    if not _state["active"] or mod_file is None or _thread.get_ident() != _MAIN:
        return None
    own: list[tuple[int, str]] = []
    importing = False
    while frame is not None:
        code = frame.f_code
        filename = code.co_filename
        if filename == mod_file:
            own.append((frame.f_lineno, code.co_name))
            if code.co_name == "<module>":
                if importing:
                    return None
                own.reverse()
                return own
        elif filename.startswith("<frozen importlib._bootstrap"):
            importing = True
        frame = frame.f_back
    return None


def _record(operation: str, frame: FrameType | None) -> None:
    chain = _chain(frame)
    if chain is None:
        return
    where = _display(str(_state["mod_file"]))
    line, _ = chain[0]
    text = f"{where}:{line}: {operation}"
    for inner_line, func in chain[1:]:
        text += f", inside {func}() at {where}:{inner_line}"
    if text not in _seen:
        _seen.add(text)
        _effects.append(text)


def _path(value: object) -> str:
    if isinstance(value, bytes):
        value = value.decode("utf-8", "replace")
    return repr(_display(value)) if isinstance(value, str) else repr(value)


_WRITE_FLAGS = os.O_WRONLY | os.O_RDWR | os.O_APPEND | os.O_CREAT | os.O_TRUNC


def _open(args: tuple[object, ...]) -> str:
    path, mode, flags = args[0], args[1], args[2]
    if isinstance(path, int):
        return f"opens file descriptor {path} (open)"
    writing = any(c in mode for c in "wax+") if isinstance(mode, str) else bool(
        isinstance(flags, int) and flags & _WRITE_FLAGS
    )
    return f"opens file {_path(path)} for {'writing' if writing else 'reading'} (open)"


def _describe(event: str, args: tuple[object, ...]) -> str | None:
    if event == "open":
        return _open(args)
    if event == "socket.__new__":
        return "creates a socket (socket.socket)"
    if event in ("socket.connect", "socket.bind", "socket.sendto", "socket.sendmsg"):
        verb = {"socket.connect": "connects", "socket.bind": "binds"}.get(event, "sends")
        return f"{verb} a socket {'to' if verb != 'binds' else 'on'} {args[1]!r} ({event})"
    if event in ("socket.getaddrinfo", "socket.gethostbyname", "socket.gethostbyname_ex", "socket.gethostbyaddr"):
        return f"resolves host {args[0]!r} ({event})"
    if event == "subprocess.Popen":
        return f"starts a subprocess {args[1]!r} (subprocess.Popen)"
    if event == "os.system":
        command = args[0]
        if isinstance(command, bytes):
            command = command.decode("utf-8", "replace")
        return f"runs a shell command {command!r} (os.system)"
    if event in ("os.exec", "os.posix_spawn", "os.spawn"):
        path = args[1] if event == "os.spawn" else args[0]
        return f"starts program {_path(path)} ({event}{'*' if event != 'os.posix_spawn' else ''})"
    if event in ("os.fork", "os.forkpty"):
        return f"forks the process ({event})"
    if event in ("os.listdir", "os.scandir"):
        return f"lists directory {_path(args[0])} ({event})"
    if event in _FS_CHANGES:
        return f"changes the file system: {event}({_path(args[0])})"
    if event == "urllib.Request":
        return f"opens URL {args[0]!r} (urllib)"
    if event == "webbrowser.open":
        return f"opens a browser at {args[0]!r} (webbrowser)"
    return None


_FS_CHANGES = frozenset(
    {
        "os.mkdir", "os.remove", "os.rename", "os.rmdir", "os.truncate", "os.chmod", "os.chown",
        "os.link", "os.symlink", "os.utime", "shutil.rmtree", "shutil.copyfile", "shutil.move",
        "shutil.copytree", "shutil.make_archive", "shutil.unpack_archive",
    }
)
_EVENTS = frozenset(
    {
        "open", "socket.__new__", "socket.connect", "socket.bind", "socket.sendto", "socket.sendmsg",
        "socket.getaddrinfo", "socket.gethostbyname", "socket.gethostbyname_ex",
        "socket.gethostbyaddr", "subprocess.Popen", "os.system", "os.exec", "os.posix_spawn",
        "os.spawn", "os.fork", "os.forkpty", "os.listdir", "os.scandir", "urllib.Request",
        "webbrowser.open",
    }
    | _FS_CHANGES
)


def _audit(event: str, args: tuple[object, ...]) -> None:
    if event not in _EVENTS or not _state["active"] or _state["busy"]:
        return
    if event in ("os.exec", "os.posix_spawn") and _inside_subprocess_module():
        return  # already reported as subprocess.Popen
    _state["busy"] = True
    try:
        operation = _describe(event, args)
        if operation is not None:
            _record(operation, sys._getframe(1))
    finally:
        _state["busy"] = False


def _inside_subprocess_module() -> bool:
    frame: FrameType | None = sys._getframe(2)
    while frame is not None:
        if frame.f_code.co_filename.endswith("subprocess.py"):
            return True
        frame = frame.f_back
    return False


class _BinaryGuard:
    def __init__(self, name: str) -> None:
        self._name = name

    def write(self, data: bytes) -> int:
        _record(f"writes to {self._name} ({self._name}.buffer.write)", sys._getframe(1))
        return len(data)

    def flush(self) -> None:
        pass


class _TextGuard:
    """Stands in for sys.stdout / sys.stderr during the import: records, writes nothing."""

    encoding = "utf-8"
    errors = "strict"

    def __init__(self, name: str, fd: int) -> None:
        self._name = name
        self._fd = fd
        self.buffer = _BinaryGuard(name)

    def write(self, text: str) -> int:
        _record(f"writes to {self._name} (print or sys.{self._name}.write)", sys._getframe(1))
        return len(text)

    def writelines(self, lines: object) -> None:
        _record(f"writes to {self._name} (sys.{self._name}.writelines)", sys._getframe(1))

    def flush(self) -> None:
        pass

    def isatty(self) -> bool:
        return False

    def fileno(self) -> int:
        return self._fd


def _guarded_write(fd: int, data: Buffer) -> int:
    if fd in (1, 2) and _state["active"]:
        name = "stdout" if fd == 1 else "stderr"
        _record(f"writes to {name} (os.write({fd}, ...))", sys._getframe(1))
        return len(memoryview(data))
    return _write(fd, data)


def _install() -> None:
    import threading
    import time

    real_sleep = time.sleep
    real_start = threading.Thread.start

    def sleep(seconds: float | SupportsIndex) -> None:
        if not _state["active"]:
            real_sleep(seconds)
            return
        _record(f"sleeps {seconds!r} s (time.sleep)", sys._getframe(1))

    def start(self: threading.Thread) -> None:
        if _state["active"]:
            _record(f"starts a thread {self.name!r} (threading.Thread.start)", sys._getframe(1))
        real_start(self)

    time.sleep = sleep
    threading.Thread.start = start  # type: ignore[method-assign]
    os.write = _guarded_write
    for name, fd in (("stdout", 1), ("stderr", 2)):
        guard = _TextGuard(name, fd)
        setattr(sys, name, guard)
        setattr(sys, f"__{name}__", guard)
    sys.addaudithook(_audit)


def _load_helper(name: str, path: str) -> ModuleType:
    import importlib.util

    spec = importlib.util.spec_from_file_location(name, path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module


def _report(fd: int, data: dict[str, object]) -> None:
    faulthandler.cancel_dump_traceback_later()
    payload = json.dumps(data, sort_keys=True).encode()
    os.lseek(fd, 0, os.SEEK_SET)
    os.ftruncate(fd, 0)
    view = memoryview(payload)
    while view:
        view = view[_write(fd, view) :]


def main() -> None:
    fd = int(sys.argv[1])
    payload = json.loads(sys.argv[2])
    sys.path[:] = payload["path"]
    module_name: str = payload["module"]
    problems: list[str] = []
    manifest: object = None
    _install()
    importing = _load_helper("_modular_build_importing", payload["importing"])
    load_failure: type[Exception] = importing.LoadFailure
    module = None
    try:
        mod_file = importing.locate(module_name, payload["file"])
        if mod_file is not None:
            _write(fd, f"#mod-file {mod_file}\n".encode())
        faulthandler.dump_traceback_later(payload["timeout"], exit=True, file=fd)
        _state["mod_file"] = mod_file
        _state["active"] = True
        import warnings

        with warnings.catch_warnings(record=True):
            warnings.simplefilter("ignore")
            try:
                module = importing.import_module(module_name, mod_file)
            finally:
                _state["active"] = False
    except load_failure as exc:
        problems.extend(getattr(exc, "problems", [str(exc)]))
    if module is not None and not problems:
        try:
            from modular_sdk import Mod

            mod = importing.find_mod(module, payload["attr"], payload["spec_base"], Mod)
            manifest_module = _load_helper("_modular_build_manifest", payload["manifest"])
            manifest = manifest_module.manifest_from_mod(mod).to_data()
        except load_failure as exc:
            problems.extend(getattr(exc, "problems", [str(exc)]))
        except Exception as exc:  # noqa: BLE001 - reported to the parent, never shown raw
            problems.append(f"deriving the manifest failed: {type(exc).__name__}: {exc}")
    _report(fd, {"effects": _effects, "problems": problems, "manifest": manifest})


if __name__ == "__main__":
    try:
        main()
    except BaseException:  # a bug of the sandbox itself: tell the parent through stderr
        import traceback

        _write(2, traceback.format_exc().encode())
        os._exit(3)
    os._exit(0)

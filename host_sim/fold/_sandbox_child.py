"""The sandbox child: run as ``python -I -S _sandbox_child.py REPORT_FD PAYLOAD_JSON``.

It sets resource limits, arms the purity guard (``_guard.py``) for the whole process, then
imports one mod module, derives its manifest and ends with ``os._exit`` (no atexit
handlers, no waiting for threads).

The report is the file descriptor ``REPORT_FD``, which the parent opened append-only: one
JSON object per line (``{"mod_file": ...}``, ``{"effect": ...}`` written by the guard as
each operation happens, ``{"result": {...}}`` at the end, ``{"crash": ...}`` if the sandbox
itself failed), and the stack dumps of ``faulthandler`` (time limit, fatal signal). The
mod can add lines but cannot take one back: the guard refuses ``fcntl`` and truncation.

Output (``print``, ``sys.stdout``/``sys.stderr``, ``os.write(1 or 2, ...)``) is swallowed
and reported, sleeps are reported and skipped, when the mod's own code does them; stdout
and stderr themselves must stay empty (the parent checks).

This file imports only the standard library at its top level; it is never imported.
"""

from __future__ import annotations

import _thread
import faulthandler
import json
import os
import sys
from collections.abc import Callable
from types import ModuleType
from typing import TYPE_CHECKING, SupportsIndex

if TYPE_CHECKING:
    from typing_extensions import Buffer

_write = os.write  # the real ones, bound before the guard replaces or watches them
_exit = os._exit
_count = _thread._count
_CRASH = 70
"""The exit code when the sandbox itself failed (EX_SOFTWARE); the report says why."""


def _emit(fd: int, record: dict[str, object]) -> None:
    view = memoryview(json.dumps(record, sort_keys=True).encode() + b"\n")
    while view:
        view = view[_write(fd, view) :]


def _limit(limits: dict[str, int]) -> None:
    """Resource limits for this process, set before the mod runs (POSIX only)."""
    try:
        import resource
    except ImportError:  # pragma: no cover - Windows
        return
    for name, value in limits.items():
        kind = getattr(resource, name, None)
        if kind is None:
            continue
        soft = hard = value
        if name == "RLIMIT_CPU":  # CPU seconds from now on: the startup so far does not count
            used = resource.getrusage(resource.RUSAGE_SELF)
            soft = int(used.ru_utime + used.ru_stime) + value + 1
            hard = soft + 1
        _, current_hard = resource.getrlimit(kind)
        if current_hard != resource.RLIM_INFINITY:
            soft, hard = min(soft, current_hard), min(hard, current_hard)
        try:
            resource.setrlimit(kind, (soft, hard))
        except (ValueError, OSError):  # a limit we may not lower here: the others still hold
            pass


class _BinaryGuard:
    def __init__(self, name: str, soft: Callable[[str], bool]) -> None:
        self._name = name
        self._soft = soft

    def write(self, data: bytes) -> int:
        self._soft(f"writes to {self._name} ({self._name}.buffer.write)")
        return len(data)

    def flush(self) -> None:
        pass


class _TextGuard:
    """Stands in for sys.stdout / sys.stderr: reports the mod's output, writes nothing."""

    encoding = "utf-8"
    errors = "strict"

    def __init__(self, name: str, fd: int, soft: Callable[[str], bool]) -> None:
        self._name = name
        self._fd = fd
        self._soft = soft
        self.buffer = _BinaryGuard(name, soft)

    def write(self, text: str) -> int:
        self._soft(f"writes to {self._name} (print or sys.{self._name}.write)")
        return len(text)

    def writelines(self, lines: object) -> None:
        self._soft(f"writes to {self._name} (sys.{self._name}.writelines)")

    def flush(self) -> None:
        pass

    def isatty(self) -> bool:
        return False

    def fileno(self) -> int:
        return self._fd


def _watch_output_and_sleep(soft: Callable[[str], bool]) -> None:
    import time

    real_sleep = time.sleep

    def sleep(seconds: float | SupportsIndex) -> None:
        if not soft(f"sleeps {seconds!r} s (time.sleep)"):
            real_sleep(seconds)  # a dependency's sleep: the time limit still holds

    def write(fd: int, data: Buffer) -> int:
        if fd in (1, 2):
            name = "stdout" if fd == 1 else "stderr"
            soft(f"writes to {name} (os.write({fd}, ...))")
            return len(memoryview(data))
        return _write(fd, data)

    time.sleep = sleep
    os.write = write
    for name, fd in (("stdout", 1), ("stderr", 2)):
        guard = _TextGuard(name, fd, soft)
        setattr(sys, name, guard)
        setattr(sys, f"__{name}__", guard)


def _load_helper(name: str, path: str) -> ModuleType:
    import importlib.util

    spec = importlib.util.spec_from_file_location(name, path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module


def main() -> None:
    fd = int(sys.argv[1])
    payload = json.loads(sys.argv[2])
    sys.path[:] = payload["path"]
    module_name: str = payload["module"]
    problems: list[str] = []
    manifest: object = None
    guard = _load_helper("_modular_guard", payload["guard"])
    importing = _load_helper("_modular_build_importing", payload["importing"])
    load_failure: type[Exception] = importing.LoadFailure
    import warnings

    faulthandler.enable(file=fd)  # a fatal signal dumps the stack into the report
    faulthandler.dump_traceback_later(payload["timeout"], exit=True, file=fd)
    _limit(payload["limits"])
    _watch_output_and_sleep(guard.soft)
    guard.arm_process(guard.Scope(*payload["scope"]), fd)
    _emit(fd, {"armed": True})
    # from here on, the purity guard watches every thread of this process, for good
    module = None
    memory = f" at the sandbox's {payload['limits']['RLIMIT_AS'] // 2**20} MiB address-space limit"
    file_size = f" of {payload['limits']['RLIMIT_FSIZE'] // 2**20} MiB"
    try:
        mod_file = importing.locate(module_name, payload["file"])
        _emit(fd, {"mod_file": mod_file})
        with warnings.catch_warnings(record=True):
            warnings.simplefilter("ignore")
            module = importing.import_module(module_name, mod_file, memory=memory, file_size=file_size)
    except load_failure as exc:
        problems.extend(getattr(exc, "problems", [str(exc)]))
    threads = _count()
    if threads:
        problems.append(
            f"the import started {threads} thread(s) around the guard (a re-created _thread "
            "module?); a mod's top level must not start threads: start them in an effect"
        )
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
    faulthandler.cancel_dump_traceback_later()
    _emit(fd, {"result": {"problems": problems, "manifest": manifest}})


if __name__ == "__main__":
    try:
        main()
    except BaseException:  # a bug of the sandbox itself: tell the parent through the report
        import traceback

        try:
            _emit(int(sys.argv[1]), {"crash": traceback.format_exc()})
        finally:
            _exit(_CRASH)
    _exit(0)

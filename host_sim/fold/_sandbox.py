"""The parent side of the build-time fold: run the sandbox child, read its report.

The child is ``python -I -S host_sim/fold/_sandbox_child.py``: isolated mode (no
``PYTHON*`` variables, no user site, no script directory on the path), no ``site`` import,
an empty environment, stdin from ``/dev/null``, its own session (process group), resource
limits (address space, CPU time, file size, processes, no core dumps). It gets the module
search path explicitly (this process's ``sys.path`` after the mod's own root) and the
purity guard's scope. Its stdout and stderr go to files that must stay empty; its report
is an append-only file of JSON lines (see ``_sandbox_child.py``).
"""

from __future__ import annotations

import json
import math
import os
import re
import select
import signal
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import IO

import anyio
import attrs

from modular_sdk import InvalidArgumentError, ManifestBuildError, SerializationError

from ._importing import display_path, expected_file, scope_dirs
from ._manifest import Manifest
from ._refusal import refusal
from ._spec import Target, parse_spec, search_path

__all__ = ["FILE_SIZE_LIMIT", "MEMORY_LIMIT", "build_manifest", "build_manifest_async"]

_HERE = Path(__file__).resolve().parent
_CHILD = _HERE / "_sandbox_child.py"
_GRACE = 2.0
"""Seconds past the time limit before the parent kills a child that did not stop itself."""
MEMORY_LIMIT = 2**30
"""The sandbox child's address-space limit in bytes (``RLIMIT_AS``): a larger allocation
fails with `MemoryError`, which is reported."""
FILE_SIZE_LIMIT = 16 * 2**20
"""The largest file the sandbox child may write (``RLIMIT_FSIZE``): its report and its
captured output. Past it the child is killed by ``SIGXFSZ``, which is reported."""
_SHOWN_OUTPUT = 4096
"""Bytes of stray output read back for the report (the rest is counted, not read)."""


def _limits(timeout: float) -> dict[str, int]:
    return {
        "RLIMIT_AS": MEMORY_LIMIT,
        "RLIMIT_CPU": max(1, math.ceil(timeout)),  # soft; the hard limit (SIGKILL) is 1 s later
        "RLIMIT_FSIZE": FILE_SIZE_LIMIT,
        "RLIMIT_NPROC": 0,  # no new process (or C thread) for a non-root user; root is exempt
        "RLIMIT_CORE": 0,
    }


def _command(target: Target, fd: int, timeout: float) -> list[str]:
    path = search_path(target)
    mod_file = target.file or expected_file(target.module, path) or ""
    local, foreign = scope_dirs(target.module, mod_file or None, path)
    payload = {
        "module": target.module,
        "attr": target.attr,
        "file": target.file,
        "spec_base": target.spec_base,
        "path": path,
        "timeout": timeout,
        "limits": _limits(timeout),
        "scope": [mod_file, list(local), list(foreign), []],
        "guard": str(_HERE / "_guard.py"),
        "importing": str(_HERE / "_importing.py"),
        "manifest": str(_HERE / "_manifest.py"),
    }
    return [sys.executable, "-I", "-S", str(_CHILD), str(fd), json.dumps(payload)]


def _env() -> dict[str, str]:
    # Nothing inherited: the search path comes as an argument. Windows needs SYSTEMROOT.
    return {k: os.environ[k] for k in ("SYSTEMROOT",) if k in os.environ}


def _check_timeout(timeout: float) -> None:
    if not timeout > 0:
        raise InvalidArgumentError(
            f"timeout must be a positive number of seconds, got {timeout!r}", argument="timeout", value=timeout
        )


def _append_only(file: IO[bytes]) -> None:
    """The child may add to its report but not rewrite it (the guard also refuses fcntl)."""
    try:
        import fcntl
    except ImportError:  # pragma: no cover - Windows
        return
    flags = fcntl.fcntl(file.fileno(), fcntl.F_GETFL)
    fcntl.fcntl(file.fileno(), fcntl.F_SETFL, flags | os.O_APPEND)


def _kill(pid: int) -> None:
    try:
        if hasattr(os, "killpg"):
            os.killpg(pid, signal.SIGKILL)  # the child leads its own session
        else:  # pragma: no cover - Windows
            os.kill(pid, signal.SIGTERM)
    except (ProcessLookupError, PermissionError):
        pass


_FRAME = re.compile(r'^\s*File "(?P<file>.*)", line (?P<line>\d+) in (?P<func>.*)$')


@attrs.frozen(kw_only=True)
class _Report:
    """What the child wrote to its report file, parsed."""

    armed: bool
    mod_file: str | None
    effects: list[str]
    result: dict[str, object] | None
    crash: str | None
    dump: str
    """faulthandler's text (a time-limit or fatal-signal stack dump), if any."""


def _parse(data: bytes) -> _Report:
    armed, mod_file, crash = False, None, None
    effects: list[str] = []
    result: dict[str, object] | None = None
    dump: list[str] = []
    for line in data.decode("utf-8", "replace").splitlines():
        record: object = None
        if line.startswith("{"):
            try:
                record = json.loads(line)
            except json.JSONDecodeError:
                record = None
        if not isinstance(record, dict):
            dump.append(line)
        elif "effect" in record:
            effects.append(str(record["effect"]))
        elif "armed" in record:
            armed = True
        elif "mod_file" in record:
            mod_file = record["mod_file"] if isinstance(record["mod_file"], str) else None
        elif "result" in record and isinstance(record["result"], dict):
            result = record["result"]
        elif "crash" in record:
            crash = str(record["crash"])
    return _Report(armed=armed, mod_file=mod_file, effects=effects, result=result, crash=crash, dump="\n".join(dump))


def _stack(dump: str, mod_file: str | None) -> str | None:
    """``file:line`` of the mod's statement in a faulthandler dump, with the helpers inside it."""
    if not mod_file:
        return None
    own: list[tuple[str, str]] = []
    for text in dump.splitlines():  # most recent call first; stop at the module body
        match = _FRAME.match(text)
        if match and match["file"] == mod_file:
            own.append((match["line"], match["func"]))
            if match["func"] == "<module>":
                break
    if not own or own[-1][1] != "<module>":
        return None
    where = display_path(mod_file)
    own.reverse()
    text = f"{where}:{own[0][0]}"
    for line, func in own[1:]:
        text += f", inside {func}() at {where}:{line}"
    return text


def _hang(report: _Report, timeout: float) -> str:
    """The time-limit problem, with the hanging statement when faulthandler dumped it."""
    advice = (
        f"the import did not finish within {timeout:g} s (the sandbox's time limit); a mod's "
        "top level must only define its mod: move long-running work into an effect"
    )
    where = _stack(report.dump, report.mod_file)
    if where is None:
        return advice
    head, _, inner = where.partition(", inside ")
    return f"{head}: {advice}" + (f"; it was inside {inner.replace(', inside ', '; it was inside ')}" if inner else "")


def _death(report: _Report, returncode: int | None, timeout: float) -> str:
    """Why the child ended before it reported: an exit code, or a signal (a limit's or not)."""
    advice = "a mod's top level must only define its mod"
    where = _stack(report.dump, report.mod_file)
    prefix = f"{where}: " if where else ""
    if returncode is None or returncode >= 0:
        return (
            f"{prefix}the import exited with code {returncode} before it finished (os._exit, "
            f"or a C extension that exits); {advice}"
        )
    number = -returncode
    try:
        name = signal.Signals(number).name
    except ValueError:
        name = f"signal {number}"
    killed = f"the import was killed by signal {name} ({number})"
    if name == "SIGXCPU":
        return (
            f"{prefix}{killed}: it used more than {max(1, math.ceil(timeout))} s of CPU time "
            f"(the sandbox's CPU limit); {advice}: move long-running work into an effect"
        )
    if name == "SIGXFSZ":
        return (
            f"{prefix}{killed}: it wrote past the sandbox's file size limit of "
            f"{FILE_SIZE_LIMIT // 2**20} MiB; {advice}"
        )
    if name == "SIGKILL":
        return (
            f"{prefix}{killed} (out of memory, or killed from outside; the sandbox limits its "
            f"address space to {MEMORY_LIMIT // 2**20} MiB); {advice}"
        )
    return f"{prefix}{killed}; {advice}"


def _output(name: str, size: int, data: bytes) -> str:
    shown = data.decode("utf-8", "replace")
    if len(shown) > 200:
        shown = shown[:200] + "..."
    return (
        f"the import wrote {size} bytes to {name} past the sandbox's guards (from C code or "
        f"a subprocess): {shown!r}; a mod's top level must not produce output"
    )


def _interpret(
    target: Target,
    *,
    returncode: int | None,
    stdout: tuple[int, bytes],
    stderr: tuple[int, bytes],
    report: bytes,
    timeout: float,
    timed_out: bool,
) -> Manifest:
    spec = target.spec
    parsed = _parse(report)
    if parsed.crash is not None or not parsed.armed and not timed_out:
        detail = (parsed.crash or "").strip().splitlines()[-1:] or [
            stderr[1].decode("utf-8", "replace").strip() or f"exit code {returncode}"
        ]
        raise ManifestBuildError(
            f"cannot build the manifest of {spec!r}: the sandbox process failed: {detail[0]}",
            spec=spec,
            problems=[f"the sandbox process failed: {detail[0]}"],
        )
    problems: list[str] = []
    manifest: object = None
    if timed_out or "Timeout (" in parsed.dump:
        problems.append(_hang(parsed, timeout))
    elif parsed.result is None:
        problems.append(_death(parsed, returncode, timeout))
    else:
        found = parsed.result.get("problems")
        problems.extend(str(p) for p in found) if isinstance(found, list) else None
        manifest = parsed.result.get("manifest")
    for name, (size, data) in (("stdout", stdout), ("stderr", stderr)):
        if size:
            problems.append(_output(name, size, data))
    if parsed.effects or problems or manifest is None:
        raise refusal(spec, parsed.effects, problems)
    try:
        return Manifest.from_data(manifest)
    except SerializationError as exc:
        raise ManifestBuildError(
            f"cannot build the manifest of {spec!r}: the sandbox sent an unreadable manifest: {exc}",
            spec=spec,
            problems=[str(exc)],
        ) from None


def _wait(proc: subprocess.Popen[bytes], seconds: float) -> bool:
    """Wait for ``proc`` to end, waking the moment it does (``Popen.wait`` with a timeout
    polls, up to 50 ms late); False if it is still running after ``seconds``."""
    try:
        pidfd = os.pidfd_open(proc.pid)
    except (AttributeError, OSError):  # not Linux 5.3+: poll
        try:
            proc.wait(timeout=seconds)
        except subprocess.TimeoutExpired:
            return False
        return True
    try:
        ready, _, _ = select.select([pidfd], [], [], seconds)
    finally:
        os.close(pidfd)
    return bool(ready)


def _read(file: IO[bytes], limit: int | None = None) -> tuple[int, bytes]:
    size = os.fstat(file.fileno()).st_size
    file.seek(0)
    return size, file.read(limit) if limit is not None else file.read()


def build_manifest(spec: str, *, timeout: float = 10.0) -> Manifest:
    """Fold ``spec`` at build time: import it in a throwaway sandbox and derive its manifest.

    The sandbox is a ``python -I -S`` subprocess with no host attached, an empty
    environment and resource limits. Its purity guard stops what a mod's top level may not
    do before it happens (file writes and deletes, subprocesses, ``os.system``, forks,
    sockets, threads, ``ctypes``, tracing hooks ...) and reports what it may not do but
    that changes nothing (file reads, output, sleeps), each with the ``file:line`` of the
    mod's statement (and of the line inside a helper it called, or of a local module it
    imported). A dependency's reads at its own import are not the mod's. An import that
    runs past ``timeout`` seconds, exits, or is killed (a crash, a resource limit) is
    refused saying so.

    Raises `ManifestBuildError` listing every problem (and loading errors: file not found,
    syntax error, missing dependency, missing or wrong attribute).

    >>> build_manifest("examples/task.py").to_json()  # doctest: +SKIP
    """
    _check_timeout(timeout)
    target = parse_spec(spec)
    with tempfile.TemporaryFile() as report, tempfile.TemporaryFile() as out, tempfile.TemporaryFile() as err:
        _append_only(report)
        proc = subprocess.Popen(
            _command(target, report.fileno(), timeout),
            stdin=subprocess.DEVNULL,
            stdout=out,
            stderr=err,
            env=_env(),
            pass_fds=(report.fileno(),),
            start_new_session=True,
        )
        timed_out = False
        try:
            timed_out = not _wait(proc, timeout + _GRACE)
        finally:
            _kill(proc.pid)  # the child, or anything it left behind in its process group
            proc.wait()
        return _interpret(
            target,
            returncode=proc.returncode,
            stdout=_read(out, _SHOWN_OUTPUT),
            stderr=_read(err, _SHOWN_OUTPUT),
            report=_read(report)[1],
            timeout=timeout,
            timed_out=timed_out,
        )


async def build_manifest_async(spec: str, *, timeout: float = 10.0) -> Manifest:
    """`build_manifest` for async code (asyncio or trio): the same sandbox, awaited.

    Cancelling the call kills the sandbox process.
    """
    _check_timeout(timeout)
    target = parse_spec(spec)
    with tempfile.TemporaryFile() as report, tempfile.TemporaryFile() as out, tempfile.TemporaryFile() as err:
        _append_only(report)
        async with await anyio.open_process(
            _command(target, report.fileno(), timeout),
            stdin=subprocess.DEVNULL,
            stdout=out,
            stderr=err,
            env=_env(),
            pass_fds=(report.fileno(),),
            start_new_session=True,
        ) as proc:
            try:
                with anyio.move_on_after(timeout + _GRACE) as scope:
                    await proc.wait()
            finally:
                _kill(proc.pid)
                with anyio.CancelScope(shield=True):
                    await proc.wait()
        return _interpret(
            target,
            returncode=proc.returncode,
            stdout=_read(out, _SHOWN_OUTPUT),
            stderr=_read(err, _SHOWN_OUTPUT),
            report=_read(report)[1],
            timeout=timeout,
            timed_out=scope.cancelled_caught,
        )

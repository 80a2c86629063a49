"""The parent side of the build-time fold: run the sandbox child, read its report.

The child is ``python -I -S host_sim/fold/_sandbox_child.py``: isolated mode (no
``PYTHON*`` variables, no user site, no script directory on the path), no ``site`` import,
an empty environment, stdin from ``/dev/null``. It gets the module search path explicitly
(this process's ``sys.path`` after the mod's own root) and writes its report to an
inherited temporary file, never to stdout or stderr, which must stay empty.
"""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import IO

import anyio
from anyio.abc import ByteReceiveStream
from modular_sdk import ManifestBuildError, SerializationError

from ._importing import display_path
from ._manifest import Manifest
from ._spec import Target, parse_spec, search_path

__all__ = ["build_manifest", "build_manifest_async"]

_HERE = Path(__file__).resolve().parent
_CHILD = _HERE / "_sandbox_child.py"
_GRACE = 2.0
"""Seconds past the time limit before the parent kills a child that did not stop itself."""
_CRASH = 3
"""The child's exit code when the sandbox itself failed (its traceback is on stderr)."""


def _command(target: Target, fd: int, timeout: float) -> list[str]:
    payload = {
        "module": target.module,
        "attr": target.attr,
        "file": target.file,
        "spec_base": target.spec_base,
        "path": search_path(target),
        "timeout": timeout,
        "importing": str(_HERE / "_importing.py"),
        "manifest": str(_HERE / "_manifest.py"),
    }
    return [sys.executable, "-I", "-S", str(_CHILD), str(fd), json.dumps(payload)]


def _env() -> dict[str, str]:
    # Nothing inherited: the search path comes as an argument. Windows needs SYSTEMROOT.
    return {k: os.environ[k] for k in ("SYSTEMROOT",) if k in os.environ}


def _check_timeout(timeout: float) -> None:
    if not timeout > 0:
        raise ValueError(f"timeout must be a positive number of seconds, got {timeout!r}")


def _kill(pid: int) -> None:
    try:
        if hasattr(os, "killpg"):
            os.killpg(pid, signal.SIGKILL)  # the child leads its own session
        else:  # pragma: no cover - Windows
            os.kill(pid, signal.SIGTERM)
    except (ProcessLookupError, PermissionError):
        pass


_FRAME = re.compile(r'^\s*File "(?P<file>.*)", line (?P<line>\d+) in (?P<func>.*)$')


def _hang(report: str, timeout: float) -> str:
    """The time-limit problem, with the hanging statement when faulthandler dumped it."""
    advice = (
        f"the import did not finish within {timeout:g} s (the sandbox's time limit); a mod's "
        "top level must only define its mod: move long-running work into an effect"
    )
    header, _, dump = report.partition("\n")
    if not header.startswith("#mod-file "):
        return advice
    mod_file = header[len("#mod-file ") :]
    own: list[tuple[str, str]] = []
    for text in dump.splitlines():  # most recent call first; stop at the module body
        match = _FRAME.match(text)
        if match and match["file"] == mod_file:
            own.append((match["line"], match["func"]))
            if match["func"] == "<module>":
                break
    if not own or own[-1][1] != "<module>":
        return advice
    where = display_path(mod_file)
    own.reverse()
    text = f"{where}:{own[0][0]}: {advice}"
    for line, func in own[1:]:
        text += f"; it was inside {func}() at {where}:{line}"
    return text


def _output(name: str, data: bytes) -> str:
    shown = data.decode("utf-8", "replace")
    if len(shown) > 200:
        shown = shown[:200] + "..."
    return (
        f"the import wrote {len(data)} bytes to {name} past the sandbox's guards (from C code or "
        f"a subprocess): {shown!r}; a mod's top level must not produce output"
    )


def _interpret(
    target: Target,
    *,
    returncode: int | None,
    stdout: bytes,
    stderr: bytes,
    report: bytes,
    timeout: float,
    timed_out: bool,
) -> Manifest:
    spec = target.spec
    text = report.decode("utf-8", "replace")
    data: object = None
    if text.startswith("{"):
        try:
            data = json.loads(text)
        except json.JSONDecodeError:
            data = None
    if returncode == _CRASH or (not isinstance(data, dict) and not timed_out and not text):
        detail = stderr.decode("utf-8", "replace").strip() or f"exit code {returncode}"
        raise ManifestBuildError(
            f"cannot build the manifest of {spec!r}: the sandbox process failed: {detail}",
            spec=spec,
            problems=[f"the sandbox process failed: {detail}"],
        )
    effects: list[str] = []
    problems: list[str] = []
    manifest: object = None
    if isinstance(data, dict):
        effects = [str(e) for e in data.get("effects", [])]
        problems = [str(p) for p in data.get("problems", [])]
        manifest = data.get("manifest")
    else:
        problems.append(_hang(text, timeout))
    if stdout:
        problems.append(_output("stdout", stdout))
    if stderr:
        problems.append(_output("stderr", stderr))
    if effects or problems or manifest is None:
        raise _refusal(spec, effects, problems)
    try:
        return Manifest.from_data(manifest)
    except SerializationError as exc:
        raise ManifestBuildError(
            f"cannot build the manifest of {spec!r}: the sandbox sent an unreadable manifest: {exc}",
            spec=spec,
            problems=[str(exc)],
        ) from None


def _refusal(spec: str, effects: list[str], problems: list[str]) -> ManifestBuildError:
    head = f"cannot build the manifest of {spec!r}"
    lines: list[str] = []
    if effects:
        lines.append(
            f"{head}: its top level does I/O, which would run on every build and every load "
            "with no host attached; move it into a handler (run, activate, handle):"
        )
        lines += [f"  {e}" for e in effects]
        if problems:
            lines.append("and:")
    elif len(problems) == 1:
        return ManifestBuildError(f"{head}: {problems[0]}", spec=spec, problems=problems)
    else:
        lines.append(f"{head}:")
    lines += [f"  {p}" for p in problems]
    if not effects and not problems:  # pragma: no cover - the child always says why
        lines.append("  the sandbox returned no manifest")
    return ManifestBuildError("\n".join(lines), spec=spec, problems=effects + problems)


def _read(report: IO[bytes]) -> bytes:
    report.seek(0)
    return report.read()


def build_manifest(spec: str, *, timeout: float = 10.0) -> Manifest:
    """Fold ``spec`` at build time: import it in a throwaway sandbox and derive its manifest.

    The sandbox is a ``python -I -S`` subprocess with no host attached and an empty
    environment. It refuses a module whose top level does I/O: file opens (not the import
    system's), sockets, subprocesses, ``os.system``/``exec``, ``time.sleep``, thread starts,
    output to stdout or stderr (``print``, ``sys.stdout.write``, ``os.write(1, ...)``),
    naming each operation with the ``file:line`` of the mod's statement (and of the line
    inside a helper it called). A dependency's own import-time behaviour is not the mod's
    and is not reported. An import that runs past ``timeout`` seconds is killed and
    refused.

    Raises `ManifestBuildError` listing every problem (and loading errors: file not found,
    syntax error, missing dependency, missing or wrong attribute).

    >>> build_manifest("examples/task.py").to_json()  # doctest: +SKIP
    """
    _check_timeout(timeout)
    target = parse_spec(spec)
    with tempfile.TemporaryFile() as report:
        proc = subprocess.Popen(
            _command(target, report.fileno(), timeout),
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            env=_env(),
            pass_fds=(report.fileno(),),
            start_new_session=True,
        )
        timed_out = False
        try:
            stdout, stderr = proc.communicate(timeout=timeout + _GRACE)
        except subprocess.TimeoutExpired:
            timed_out = True
            _kill(proc.pid)
            proc.kill()
            stdout, stderr = proc.communicate()
        finally:
            if proc.returncode is None:  # interrupted: never leave the child behind
                _kill(proc.pid)
                proc.kill()
                proc.wait()
        return _interpret(
            target,
            returncode=proc.returncode,
            stdout=stdout,
            stderr=stderr,
            report=_read(report),
            timeout=timeout,
            timed_out=timed_out,
        )


async def _drain(stream: ByteReceiveStream | None, into: bytearray) -> None:
    if stream is None:
        return
    async for chunk in stream:
        into += chunk


async def build_manifest_async(spec: str, *, timeout: float = 10.0) -> Manifest:
    """`build_manifest` for async code (asyncio or trio): the same sandbox, awaited.

    Cancelling the call kills the sandbox process.
    """
    _check_timeout(timeout)
    target = parse_spec(spec)
    with tempfile.TemporaryFile() as report:
        stdout, stderr = bytearray(), bytearray()
        async with await anyio.open_process(
            _command(target, report.fileno(), timeout),
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            env=_env(),
            pass_fds=(report.fileno(),),
            start_new_session=True,
        ) as proc:
            try:
                with anyio.move_on_after(timeout + _GRACE) as scope:
                    async with anyio.create_task_group() as tg:
                        tg.start_soon(_drain, proc.stdout, stdout)
                        tg.start_soon(_drain, proc.stderr, stderr)
                    await proc.wait()
            finally:
                if proc.returncode is None:
                    _kill(proc.pid)
                    proc.kill()
                    with anyio.CancelScope(shield=True):
                        await proc.wait()
        return _interpret(
            target,
            returncode=proc.returncode,
            stdout=bytes(stdout),
            stderr=bytes(stderr),
            report=_read(report),
            timeout=timeout,
            timed_out=scope.cancelled_caught,
        )

"""How a command ends early without a traceback: a closed pipe, or Ctrl-C.

`host_sim._cli.main` catches both once, at the top: a closed standard output ends the
command quietly with status 0 (as ``cat`` and ``grep`` do under ``| head``), Ctrl-C with one
line and status 130. Commands that run an event loop wrap their work in `stops_on_ctrl_c`,
so Ctrl-C cancels the whole run (every step still to come, not only the one running) and
then surfaces as `KeyboardInterrupt` for ``main`` to report.
"""

from __future__ import annotations

import os
import signal
import sys
import threading
from collections.abc import Awaitable, Callable
from typing import Literal, TypeVar

import anyio

__all__ = ["early_ending", "path_failure", "quiet_stdout", "say_interrupted", "say_path_failure", "stops_on_ctrl_c"]

T = TypeVar("T")


def early_ending(exc: BaseException) -> Literal["pipe closed", "interrupted"] | None:
    """How ``exc`` (or the exception group it is) ended a command early, if it did.

    Ctrl-C wins over a closed pipe: both may travel in one group out of a task group.
    """
    if isinstance(exc, KeyboardInterrupt):
        return "interrupted"
    if isinstance(exc, BrokenPipeError):
        return "pipe closed"
    if isinstance(exc, BaseExceptionGroup):
        endings = {early_ending(sub) for sub in exc.exceptions}
        if "interrupted" in endings:
            return "interrupted"
        if "pipe closed" in endings:
            return "pipe closed"
    return None


def path_failure(exc: BaseException) -> OSError | None:
    """The `OSError` about a path (it names a file: too long, missing folder, not allowed,
    a NUL ...) that ended a command, also inside an exception group; ``None`` for any other
    ending. Every command's such failure ends in the one line `say_path_failure` writes."""
    if isinstance(exc, OSError) and exc.filename is not None and not isinstance(exc, BrokenPipeError):
        return exc
    if isinstance(exc, BaseExceptionGroup):
        for sub in exc.exceptions:
            found = path_failure(sub)
            if found is not None:
                return found
    return None


def _shown_path(path: object) -> str:
    text = os.fsdecode(path) if isinstance(path, (str, bytes, os.PathLike)) else str(path)
    return repr(text) if len(text) <= 120 else f"{text[:80]!r}... ({len(text):,} characters)"


def say_path_failure(command: str, exc: OSError) -> None:
    """The one line a failing path leaves on standard error: the path (shortened), why."""
    why = exc.strerror or str(exc)
    other = f" and {_shown_path(exc.filename2)}" if exc.filename2 is not None else ""
    try:
        sys.stderr.write(f"{command}: error: cannot use {_shown_path(exc.filename)}{other}: {why}; check the path\n")
        sys.stderr.flush()
    except (OSError, ValueError):
        pass


def quiet_stdout() -> None:
    """Point standard output at /dev/null, so the interpreter's last flush has nowhere to fail."""
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        os.close(devnull)
    except (OSError, ValueError):  # no file descriptor behind sys.stdout (embedded, tests)
        pass


def say_interrupted(command: str) -> None:
    """The one line Ctrl-C leaves on standard error."""
    try:
        sys.stderr.write(f"\n{command}: interrupted\n")
        sys.stderr.flush()
    except (OSError, ValueError):  # standard error is gone too: nothing left to tell
        pass


async def stops_on_ctrl_c(work: Callable[[], Awaitable[T]]) -> T:
    """Await ``work``; Ctrl-C (SIGINT) cancels all of it and raises `KeyboardInterrupt`.

    The cancellation is anyio's, level-triggered: once Ctrl-C is pressed every later
    ``await`` of ``work`` is cancelled too, so a step that turns its own cancellation into
    a failed turn cannot let the next step run. Cleanup (closing the host, which records
    the running turns as interrupted) runs as usual. Outside the main thread (no signals
    there) it only awaits ``work``.
    """
    if threading.current_thread() is not threading.main_thread():
        return await work()
    interrupted = False
    result: list[T] = []
    try:
        async with anyio.create_task_group() as tg:

            async def watch() -> None:
                nonlocal interrupted
                with anyio.open_signal_receiver(signal.SIGINT) as received:
                    async for _ in received:
                        interrupted = True
                        tg.cancel_scope.cancel()
                        return

            async def do() -> None:
                result.append(await work())
                tg.cancel_scope.cancel()

            tg.start_soon(watch)
            tg.start_soon(do)
    except BaseExceptionGroup as group:  # the task group's wrapping: callers see what work raised
        if interrupted:
            raise KeyboardInterrupt from None
        if len(group.exceptions) == 1:
            raise group.exceptions[0] from None
        raise
    if interrupted:
        raise KeyboardInterrupt
    return result[0]


"""The ext-host lane: runs mod handlers (commands, tools, hooks, effects) in isolation.

A handler may be ``def`` or ``async def``. Plain functions run in a daemon thread so a
blocking one can neither stall the host nor keep the process alive once abandoned. Every
call has a timeout; a handler that raises anything (custom `BaseException` subclasses
included), hangs past it, or is cancelled becomes a `HandlerFailed` carrying a clear
message, and the caller fails only its own command or turn. Only cancellation from outside
(the host closing, the caller cancelled), `KeyboardInterrupt` and `SystemExit` pass
through.
"""

from __future__ import annotations

import functools
import inspect
import os
import traceback
from collections.abc import Callable
from typing import TypeVar

import anyio
import anyio.lowlevel

from modular_sdk import ModularError

from ._threads import run_in_daemon_thread

__all__ = ["HandlerFailed", "call_handler", "describe_exception", "raised_at"]

T = TypeVar("T")


class HandlerFailed(Exception):
    """A mod handler failed; ``reason`` is the message shown to the user."""

    def __init__(self, reason: str, *, cause: BaseException | None = None, timed_out: bool = False) -> None:
        super().__init__(reason)
        self.reason = reason
        self.cause = cause
        self.timed_out = timed_out


def describe_exception(exc: BaseException) -> str:
    if isinstance(exc, ModularError):
        return str(exc)
    text = str(exc)
    return f"{type(exc).__name__}: {text}" if text else type(exc).__name__


def _source_file(fn: Callable[..., object]) -> str | None:
    """The file a handler's code is in (through partials, decorators and ``__call__``)."""
    while isinstance(fn, functools.partial):
        fn = fn.func
    target: object = inspect.unwrap(fn)
    code = getattr(getattr(target, "__func__", target), "__code__", None)
    if code is None:  # a callable object: its __call__
        call = getattr(type(target), "__call__", None)
        code = getattr(call, "__code__", None)
    filename = getattr(code, "co_filename", None)
    return filename if isinstance(filename, str) else None


_HOST_PACKAGE = os.path.dirname(os.path.dirname(os.path.abspath(__file__))) + os.sep  # host_sim/
_SHIPPED_MODS = os.path.join(_HOST_PACKAGE, "examples") + os.sep  # mods, though shipped with the host


def _is_host_file(filename: str) -> bool:
    path = os.path.abspath(filename)
    return path.startswith(_HOST_PACKAGE) and not path.startswith(_SHIPPED_MODS)


def raised_at(fn: Callable[..., object], exc: BaseException) -> str | None:
    """``path:line`` of the innermost frame of ``exc``'s traceback in the handler's own file.

    That is the mod's line that raised, or that called what raised (a library, the host);
    ``None`` when the traceback never passed through the handler's file, or when that file is
    the host's own (a model the host ships, such as `ScriptedModel`, is no mod).
    """
    filename = _source_file(fn)
    if filename is None or _is_host_file(filename):
        return None
    found = None
    for frame in traceback.extract_tb(exc.__traceback__):
        if frame.filename == filename:
            found = f"{frame.filename}:{frame.lineno}"
    return found


def _is_async(fn: Callable[..., object]) -> bool:
    while isinstance(fn, functools.partial):
        fn = fn.func
    return inspect.iscoroutinefunction(fn) or inspect.iscoroutinefunction(
        getattr(fn, "__call__", None)
    )


async def _invoke(what: str, fn: Callable[..., object], args: tuple[object, ...]) -> object:
    if _is_async(fn):
        result = fn(*args)
    else:
        result = await run_in_daemon_thread(fn, args, name=f"host-sim {what}")
    if inspect.isawaitable(result):
        result = await result
    return result


async def call_handler(
    what: str,
    fn: Callable[..., object],
    args: tuple[object, ...],
    *,
    timeout: float | None,
) -> object:
    """Run the handler ``fn(*args)``; raise `HandlerFailed` on any failure.

    ``what`` names the handler in messages (``"command /task"``, ``"tool 'grep'"``). Who
    the handler acts as travels in the handles it is given, not in this call.
    """
    with anyio.CancelScope() as scope:
        if timeout is not None:
            scope.deadline = anyio.current_time() + timeout
        try:
            return await _invoke(what, fn, args)
        except anyio.get_cancelled_exc_class():
            if scope.cancel_called:
                raise  # our timeout: the scope swallows it, handled below
            # A cancellation we did not ask for: either the host is closing (the next
            # checkpoint raises again and we let it go) or the handler cancelled itself.
            await anyio.lowlevel.checkpoint_if_cancelled()
            raise HandlerFailed(f"{what} was cancelled") from None
        except (HandlerFailed, KeyboardInterrupt, SystemExit):
            raise
        except BaseException as exc:  # custom BaseException subclasses fail the handler too
            where = raised_at(fn, exc)
            at = "" if where is None else f" (raised at {where})"
            raise HandlerFailed(f"{what} failed: {describe_exception(exc)}{at}", cause=exc) from exc
    raise HandlerFailed(
        f"{what} timed out after {timeout:g}s; make it finish sooner or raise the host's handler_timeout",
        timed_out=True,
    )

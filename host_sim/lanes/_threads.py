"""Plain ``def`` handlers and models run in daemon threads the host can walk away from.

anyio's worker threads are not daemons: a handler blocked forever in one keeps the process
alive after the host closed (asyncio joins them at exit). A blocked plain function cannot be
stopped in Python, so the host abandons it at its timeout instead, in a daemon thread that
never holds the process open, and never blocks the event loop while it runs.
"""

from __future__ import annotations

import contextvars
import threading
from collections.abc import Callable
from typing import TypeVar

import anyio
import anyio.from_thread
import anyio.lowlevel

__all__ = ["run_in_daemon_thread"]

T = TypeVar("T")


async def run_in_daemon_thread(fn: Callable[..., T], args: tuple[object, ...], *, name: str) -> T:
    """``fn(*args)`` in a new daemon thread (with this context's variables); wait for it.

    Cancelling the wait abandons the thread: it runs on, or blocks forever, without holding
    up the event loop or the process's exit; its result is dropped.
    """
    token = anyio.lowlevel.current_token()
    done = anyio.Event()
    result: list[T] = []
    error: list[BaseException] = []
    context = contextvars.copy_context()

    def target() -> None:
        try:
            result.append(context.run(fn, *args))
        except BaseException as exc:  # handed to the waiting task, which decides
            error.append(exc)
        try:
            anyio.from_thread.run_sync(done.set, token=token)
        except Exception:  # the event loop is gone: nobody waits for this result any more
            return

    threading.Thread(target=target, name=name, daemon=True).start()
    await done.wait()
    if error:
        raise error[0]
    return result[0]

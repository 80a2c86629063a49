"""Plain ``def`` handlers and models run in daemon threads the host can walk away from.

anyio's worker threads are not daemons: a handler blocked forever in one keeps the process
alive after the host closed (asyncio joins them at exit). A blocked plain function cannot be
stopped in Python, so the host abandons it at its timeout instead, in a daemon thread that
never holds the process open, and never blocks the event loop while it runs.

The thread is an anyio worker thread in every way a handler can see: it is claimed for the
host's event loop, so ``anyio.from_thread.run(ctx.session.send, message)`` (anyio's
documented way back from a worker thread) works inside a plain ``def`` handler, tool or hook.
"""

from __future__ import annotations

import contextvars
import sys
import threading
from collections.abc import Callable
from typing import TypeVar

import anyio
import anyio.from_thread
import anyio.lowlevel
import anyio.to_thread

# anyio marks its own asyncio worker threads with this (private, but the only way to give a
# thread of ours the same standing); tests/host/lanes/test_handler_isolation.py fails if it changes.
from anyio._core._eventloop import claim_worker_thread

__all__ = ["run_in_daemon_thread"]

T = TypeVar("T")


async def run_in_daemon_thread(fn: Callable[..., T], args: tuple[object, ...], *, name: str) -> T:
    """``fn(*args)`` in a daemon thread (with this context's variables); wait for it.

    Cancelling the wait abandons the thread: it runs on, or blocks forever, without holding
    up the event loop or the process's exit; its result is dropped.
    """
    if _in_trio():
        # trio's own worker threads are daemons already, and only they can find their way
        # back with trio.from_thread (which anyio.from_thread uses); a limiter per call, so
        # that abandoned threads never make the next handler wait for a slot
        context = contextvars.copy_context()
        return await anyio.to_thread.run_sync(
            context.run, fn, *args, abandon_on_cancel=True, limiter=anyio.CapacityLimiter(1)
        )
    token = anyio.lowlevel.current_token()
    done = anyio.Event()
    result: list[T] = []
    error: list[BaseException] = []
    context = contextvars.copy_context()

    def target() -> None:
        try:
            with claim_worker_thread(token.backend_class, token.native_token):
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


def _in_trio() -> bool:
    """Whether this task runs under trio (only then has anything imported trio)."""
    trio = sys.modules.get("trio")
    return trio is not None and bool(trio.lowlevel.in_trio_run())

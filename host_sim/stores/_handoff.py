"""The thread that runs a `SqliteStore`'s connection, and how a task waits for it without
starving it.

A thread that runs Python needs the GIL to start a call and again after each C call that
let go of it (every ``sqlite3`` step, the commit's fsync). A loop that never idles (tasks
yielding with ``sleep(0)``) holds the GIL and lets go of it only for an instant at each
pass (its zero-timeout poll), and each of those instants wakes the waiting thread and
starts its wait for the switch interval again, so the thread almost never asks the loop to
let go: awaiting the thread's result (``anyio.to_thread.run_sync``) left a commit waiting
while the loop ran tens of thousands of passes (docs/performance.md, "Writers beside busy
readers").

So the task that awaits a call here hands the GIL over: it blocks the loop's thread on the
call's result for at most one switch interval at a time (the wait lets go of the GIL, so
the connection's thread takes it as soon as it needs it), then lets every other ready task
run once, and waits again; when the call is done they run once more, so a task calling the
store in a loop never keeps the loop to itself. A call costs the loop what the call takes,
in slices between which its other tasks run, instead of an unbounded wait for the GIL.
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor, wait
from typing import TypeVar, final

import anyio
import anyio.lowlevel

__all__ = ["ConnectionThread"]

_R = TypeVar("_R")


@final
class ConnectionThread:
    """One thread that runs a connection's calls, one at a time, in the order given."""

    __slots__ = ("_executor", "_name")

    def __init__(self, name: str) -> None:
        self._name = name
        self._executor: ThreadPoolExecutor | None = None

    async def run(self, fn: Callable[..., _R], *args: object) -> _R:
        """``fn(*args)`` in the thread, its result or its exception. Like
        ``anyio.to_thread.run_sync``: a checkpoint (a caller already cancelled raises before
        the call starts; the loop's other tasks run at least once), and once started the
        call always finishes (a caller cancelled meanwhile is cancelled at its next checkpoint)."""
        await anyio.lowlevel.checkpoint_if_cancelled()
        if self._executor is None:
            self._executor = ThreadPoolExecutor(max_workers=1, thread_name_prefix=self._name)
        future = self._executor.submit(fn, *args)
        with anyio.CancelScope(shield=True):
            finished = False
            while not finished:
                # wait() blocks this thread without the GIL: the connection's thread takes it at once
                finished = future in wait((future,), timeout=sys.getswitchinterval()).done
                await anyio.sleep(0)  # the loop's other tasks run once (shielded: never raises)
        return future.result()

    def stop(self) -> None:
        """End the thread (after the last call returned); `run` starts another."""
        executor, self._executor = self._executor, None
        if executor is not None:
            executor.shutdown(wait=True)

"""A piped ``host-sim chat`` takes every Ctrl-C, even one that arrives just before it sleeps.

Python raises `KeyboardInterrupt` in the main thread between two steps of Python code. A
signal that arrives while the main thread sleeps in a system call ends the call early; one
that arrives just before the call starts (or that the kernel hands to another thread) is only
noted, and a plain blocking read then sleeps on until the script's next line. A piped chat
whose writer stays open slept forever on its second Ctrl-C (seen once in CI). The chat's
main thread therefore waits in slices (`WAKE_EVERY`).

The race is made certain here: the main thread blocks SIGINT, so the kernel hands it to a
thread that sleeps, exactly as when it lands in the gap before the read.
"""

from __future__ import annotations

import os
import platform
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path
from typing import Final

import pytest
from hypothesis import given
from hypothesis import strategies as st

from host_sim.cli.testing import WAKE_EVERY, ScriptLines

_SCRIPT = textwrap.dedent(
    """
    import os, signal, sys, threading, time
    from concurrent.futures import Future
    from host_sim.cli.testing import ScriptLines, main_thread_result

    taker = threading.Thread(target=time.sleep, args=(120,), daemon=True)
    taker.start()
    signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGINT})  # the kernel hands SIGINT to `taker`
    read_end, write_end = os.pipe()  # a script whose writer stays open and says nothing more
    os.write(write_end, b"first line\\n")
    lines = ScriptLines(read_end, "utf-8", "strict")
    print(lines(""), end="", flush=True)
    try:
        if sys.argv[1] == "next line":
            lines("")
        elif sys.argv[1] == "a call still running":
            main_thread_result(Future())
        else:
            os.read(read_end, 1)  # what sys.stdin.readline() does: one blocking read
    except KeyboardInterrupt:
        print("interrupted", flush=True)
    """
)


WAITING_SYSCALLS: Final = {0, 7, 23, 202, 270, 271}
"""x86-64 numbers of the system calls the script's main thread waits in: read, poll, select,
futex, pselect6, ppoll."""


def _asleep_in_its_wait(pid: int) -> None:
    """Until the main thread of ``pid`` sleeps in a system call that waits (``/proc``'s view):
    the Ctrl-C must arrive while the script waits, not while it still runs Python code up to
    the wait (there it is raised at once, and proves nothing)."""
    if platform.machine() != "x86_64":  # (the numbers above): a pause does nearly as well
        time.sleep(0.5)
        return
    deadline = time.monotonic() + 30
    state = Path(f"/proc/{pid}/task/{pid}")
    while time.monotonic() < deadline:
        try:
            call = (state / "syscall").read_text().split()
            sleeping = (state / "stat").read_text().rsplit(")", 1)[1].split()[0] == "S"
        except OSError:  # no /proc, or not allowed to read it: a pause does nearly as well
            time.sleep(0.5)
            return
        if sleeping and call and call[0].isdigit() and int(call[0]) in WAITING_SYSCALLS:
            return
        time.sleep(0.01)
    raise AssertionError(f"process {pid} never waited")


def _ctrl_c_while_waiting_for(what: str, timeout: float) -> str | None:
    """What the script printed after a Ctrl-C; None when it was still waiting ``timeout`` later."""
    proc = subprocess.Popen(
        [sys.executable, "-c", _SCRIPT, what], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
    )
    try:
        assert proc.stdout is not None
        assert proc.stdout.readline() == "first line\n"
        _asleep_in_its_wait(proc.pid)
        os.kill(proc.pid, signal.SIGINT)
        try:
            out, err = proc.communicate(timeout=timeout)
        except subprocess.TimeoutExpired:
            return None
        assert proc.returncode == 0, err
        return out
    finally:
        proc.kill()
        proc.communicate()


@pytest.mark.parametrize("what", ["next line", "a call still running"])
def test_a_ctrl_c_taken_by_another_thread_still_interrupts_the_wait(what: str) -> None:
    assert _ctrl_c_while_waiting_for(what, timeout=30) == "interrupted\n"


def test_a_plain_blocking_read_sleeps_through_that_ctrl_c() -> None:
    """Why the slices: the same Ctrl-C leaves one blocking read asleep (the test above would
    fail with it)."""
    assert _ctrl_c_while_waiting_for("one blocking read", timeout=max(2.0, 20 * WAKE_EVERY)) is None


@given(
    text=st.text(alphabet=st.sampled_from(["a", "é", "€", "𝄞", "\n", " "]), max_size=60),
    cuts=st.lists(st.integers(min_value=0, max_value=240), max_size=8),
)
def test_script_lines_are_the_text_cut_at_its_newlines_however_the_bytes_arrive(text: str, cuts: list[int]) -> None:
    """Lines come whole and in order when the bytes arrive in pieces that split a character."""
    data = text.encode()
    bounds = sorted({0, len(data), *(cut for cut in cuts if cut < len(data))})
    read_end, write_end = os.pipe()
    lines = ScriptLines(read_end, "utf-8", "strict")
    got: list[str] = []
    try:
        for start, end in zip(bounds, bounds[1:], strict=False):
            os.write(write_end, data[start:end])
        os.close(write_end)
        while True:
            try:
                got.append(lines(""))
            except EOFError:
                break
    finally:
        os.close(read_end)
    assert "".join(got) == text
    assert all(line.endswith("\n") for line in got[:-1])
    assert all("\n" not in line[:-1] for line in got)

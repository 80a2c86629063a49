"""A pseudo-terminal to drive the installed ``host-sim`` as a person at a keyboard does."""

from __future__ import annotations

import fcntl
import os
import select
import subprocess
import termios
import time
from pathlib import Path

from ._support import Installed, clean_env

__all__ = ["Terminal"]


def _own_terminal() -> None:
    """In the child: a session of its own whose controlling terminal is the pty (its stdin),
    so Ctrl-C typed there is SIGINT, as in a real terminal."""
    os.setsid()
    fcntl.ioctl(0, termios.TIOCSCTTY, 0)


class Terminal:
    """``host-sim ARGS`` on a pty: `type` keys, `expect` text, `close` to end it."""

    def __init__(self, installed: Installed, cwd: Path, *args: str) -> None:
        main, child = os.openpty()
        env = clean_env(TERM="xterm", COLUMNS="100", LINES="40")
        self._proc = subprocess.Popen(
            [installed.host_sim, *args], cwd=cwd, stdin=child, stdout=child, stderr=child,
            env=env, close_fds=True, preexec_fn=_own_terminal,
        )  # fmt: skip
        os.close(child)
        self._fd = main
        self.seen = ""

    def type(self, keys: str) -> None:
        os.write(self._fd, keys.encode())

    def interrupt(self) -> None:
        """Ctrl-C, at a person's pace: CPython's readline loses a SIGINT that lands in the
        moment between drawing the prompt and waiting for a key (it only checks for
        signals when that wait is interrupted), so a test must not type it within
        microseconds of the prompt."""
        time.sleep(0.3)
        self.type("\x03")

    def _read(self, timeout: float) -> None:
        ready, _, _ = select.select([self._fd], [], [], timeout)
        if ready:
            try:
                chunk = os.read(self._fd, 65536)
            except OSError:  # the child closed the terminal
                chunk = b""
            self.seen += chunk.decode(errors="replace")

    def expect(self, text: str, timeout: float = 30.0) -> str:
        """Wait until ``text`` shows (after what an earlier `expect` consumed); return what came."""
        deadline = time.monotonic() + timeout
        while text not in self.seen:
            if time.monotonic() > deadline:
                raise AssertionError(f"{text!r} did not show within {timeout}s; the terminal shows:\n{self.seen[-3000:]}")
            self._read(0.1)
        shown, _, self.seen = self.seen.partition(text)
        return shown + text

    def wait(self, timeout: float = 30.0) -> int:
        """The exit code, reading what is left meanwhile."""
        deadline = time.monotonic() + timeout
        while self._proc.poll() is None and time.monotonic() < deadline:
            self._read(0.1)
        self._read(0.1)
        return self._proc.wait(timeout=1)

    def close(self) -> None:
        if self._proc.poll() is None:
            self._proc.kill()
            self._proc.wait()
        os.close(self._fd)

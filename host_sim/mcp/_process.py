"""A stdio MCP server leaves nothing behind (docs/embedding.md).

The ``mcp`` package starts a stdio server in a new session (its own process group) and, when
the connection closes, ends that group only if the server is still running: a server that
exited by itself leaves the processes it started. `ServerMark` marks a server's environment
with a token only this connection knows; when the connection ends, every process of the
server's group and every process carrying the token (a child that left the group but kept
its environment) is sent ``SIGTERM``, then ``SIGKILL`` after `GRACE` seconds.

Processes are found through ``/proc`` (Linux); elsewhere this does nothing more than the
``mcp`` package does.
"""

from __future__ import annotations

import os
import secrets
import signal
from contextlib import suppress
from pathlib import Path
from typing import Final

import anyio
import anyio.to_thread

__all__ = ["GRACE", "MARK_VARIABLE", "ServerMark"]

MARK_VARIABLE: Final = "HOST_SIM_MCP_SERVER"
"""The environment variable the host sets for each stdio server it starts (a random token)."""
GRACE: Final = 2.0
_POLL: Final = 0.02
_PROC: Final = Path("/proc")


def _stat(pid: str) -> tuple[str, int] | None:
    """The state letter and process group of process ``pid``, or ``None`` when it is gone."""
    try:
        text = (_PROC / pid / "stat").read_text()
    except OSError:
        return None
    fields = text[text.rfind(")") + 2 :].split()  # after "pid (comm) ": state ppid pgrp ...
    return (fields[0], int(fields[2])) if len(fields) > 2 else None


def _marked(pid: str, mark: bytes) -> bool:
    try:
        return mark in (_PROC / pid / "environ").read_bytes().split(b"\0")
    except OSError:
        return False


def members(mark: bytes, groups: set[int]) -> dict[int, int]:
    """Live processes (zombies aside) in ``groups`` or carrying ``mark``: pid -> process group."""
    if not _PROC.is_dir():
        return {}
    found: dict[int, int] = {}
    own = os.getpid()
    for entry in os.listdir(_PROC):
        if not entry.isdigit() or int(entry) == own:
            continue
        stat = _stat(entry)
        if stat is None or stat[0] in ("Z", "X"):
            continue
        if stat[1] in groups or _marked(entry, mark):
            found[int(entry)] = stat[1]
    return found


class ServerMark:
    """The token of one stdio server's connection, and the ending of what it started."""

    __slots__ = ("_groups", "_mark", "token")

    def __init__(self) -> None:
        self.token = secrets.token_hex(16)
        self._mark = f"{MARK_VARIABLE}={self.token}".encode()
        self._groups: set[int] = set()

    @property
    def env(self) -> dict[str, str]:
        return {MARK_VARIABLE: self.token}

    async def started(self) -> None:
        """Note the server's process group (call once it answers)."""
        found = await anyio.to_thread.run_sync(members, self._mark, set())
        self._groups |= set(found.values()) - {os.getpgrp()}

    async def end(self) -> None:
        """End every process of the server's group and every process carrying the token:
        ``SIGTERM``, then ``SIGKILL`` to what is left after `GRACE` seconds."""
        own_group = os.getpgrp()
        found = await anyio.to_thread.run_sync(members, self._mark, self._groups)
        if not found:
            return
        self._signal(found, signal.SIGTERM, own_group)
        with anyio.move_on_after(GRACE):
            while found:
                await anyio.sleep(_POLL)
                found = await anyio.to_thread.run_sync(members, self._mark, self._groups)
            return
        self._signal(found, signal.SIGKILL, own_group)

    def _signal(self, found: dict[int, int], number: signal.Signals, own_group: int) -> None:
        self._groups |= set(found.values()) - {own_group}
        for group in set(found.values()) - {own_group}:  # groups with members now, never a stale number
            with suppress(ProcessLookupError, PermissionError):
                os.killpg(group, number)
        for pid, group in found.items():
            if group == own_group:  # left the server's group but kept the token: only itself
                with suppress(ProcessLookupError, PermissionError):
                    os.kill(pid, number)

"""Who is calling: the context variables that stamp authors and spawn triggers.

Outside any mod handler the caller is the user. The ext-host lane sets these around every
handler it runs, so what a handler sends is stamped with its mod and command or tool, and
nothing a mod passes can change the stamp.
"""

from __future__ import annotations

from contextvars import ContextVar
from typing import Literal

import attrs

from modular_sdk import Author, CommandTrigger, ModAuthor, SessionId, SpawnTrigger, ToolTrigger, UserAuthor

__all__ = ["HandlerFrame", "current_author", "current_frame", "frame_var", "running_turns_var"]


@attrs.frozen(kw_only=True)
class HandlerFrame:
    """The mod handler running in this context."""

    mod_id: str
    kind: Literal["command", "palette", "tool", "hook", "effect", "view"]
    command_id: str | None = None
    tool_name: str | None = None
    call_id: str | None = None

    @property
    def author(self) -> ModAuthor:
        return ModAuthor(mod_id=self.mod_id, command_id=self.command_id, tool_name=self.tool_name)

    @property
    def trigger(self) -> SpawnTrigger | None:
        """What a spawn made here is triggered by (``None``: spawning is refused)."""
        if self.command_id is not None and self.kind in ("command", "palette"):
            return CommandTrigger(mod_id=self.mod_id, command_id=self.command_id)
        if self.tool_name is not None and self.call_id is not None:
            return ToolTrigger(mod_id=self.mod_id, tool_name=self.tool_name, call_id=self.call_id)
        return None


frame_var: ContextVar[HandlerFrame | None] = ContextVar("modular_handler_frame", default=None)
running_turns_var: ContextVar[frozenset[SessionId]] = ContextVar(
    "modular_running_turns", default=frozenset()
)
_USER = UserAuthor()


def current_frame() -> HandlerFrame | None:
    return frame_var.get()


def current_author() -> Author:
    frame = frame_var.get()
    return _USER if frame is None else frame.author

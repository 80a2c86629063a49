"""Who is calling: the frame a handler runs as, which its handles carry as their authority.

A handle the host gives to a mod handler carries that handler's `HandlerFrame`, and every
handle reached from it carries the same frame: that is what stamps authors and spawn
triggers (a handle with no frame acts as the user). Losing or replacing a ``contextvars``
context, a thread hop, or a task started elsewhere never changes it. The context variables
here only cache what is running, to refuse a handler that would wait for itself.
"""

from __future__ import annotations

from contextvars import ContextVar
from typing import Final, Literal, TypeAlias

import attrs

from modular_sdk import Author, CommandTrigger, ModAuthor, SessionId, SpawnTrigger, ToolTrigger, TurnId, UserAuthor

__all__ = ["USER", "Actor", "HandlerFrame", "author_of", "sessions_in_turn_var"]


@attrs.frozen(kw_only=True)
class HandlerFrame:
    """The mod handler running in this context."""

    mod_id: str
    kind: Literal["command", "palette", "tool", "hook", "effect", "view"]
    command_id: str | None = None
    tool_name: str | None = None
    call_id: str | None = None
    turn_id: TurnId | None = None  # a tool's: the turn whose model called it
    session_id: SessionId | None = None  # the session a slash command or tool runs in
    position: int | None = None  # a slash command's: its session's next ordinal when it was run
    enclosing_sessions: frozenset[SessionId] = frozenset()  # the sessions and turns this handler
    enclosing_turns: frozenset[TurnId] = frozenset()  # runs inside (awaiting one would deadlock)

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


sessions_in_turn_var: ContextVar[frozenset[SessionId]] = ContextVar(
    "modular_sessions_in_turn", default=frozenset()
)
"""The sessions whose turn the current context runs inside: a turn it awaited in one of them
would wait for itself."""
USER: Final = UserAuthor()

Actor: TypeAlias = "HandlerFrame | None"
"""Who a handle acts as: a mod handler's frame, or ``None`` for the user."""


def author_of(actor: Actor) -> Author:
    """The author stamped on what ``actor`` sends."""
    return USER if actor is None else actor.author

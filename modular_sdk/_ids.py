"""Identifier types and the closed literal sets of the contract."""

from __future__ import annotations

from typing import Literal, NewType, TypeAlias

__all__ = ["HOST_ACTIONS", "AiRunnerId", "HostAction", "SessionId", "TurnId", "TurnStatus"]

SessionId = NewType("SessionId", str)
"""Stable identifier of an AI session."""

TurnId = NewType("TurnId", str)
"""Stable identifier of one turn of a session."""

AiRunnerId = NewType("AiRunnerId", str)
"""Identifier of the model runner that produced a turn."""

HostAction: TypeAlias = Literal[
    "session.create", "session.spawn", "session.fork", "session.send", "session.notify"
]
"""The host actions a ``before_action`` hook can target."""

HOST_ACTIONS: tuple[HostAction, ...] = (
    "session.create",
    "session.spawn",
    "session.fork",
    "session.send",
    "session.notify",
)

TurnStatus: TypeAlias = Literal["running", "completed", "failed"]
"""Where a turn is: still running, completed with a reply, or failed."""

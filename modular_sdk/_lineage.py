"""How a session came to exist: the closed union ``RootLineage | SpawnLineage | ForkLineage``.

Never flatten it to a parent id: that loses whether history was copied, the exact fork
anchor, and the command or tool that created a spawn.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any, Literal, TypeAlias

import attrs

from ._errors import ModDefinitionError
from ._ids import AiRunnerId, SessionId
from ._rules import show, text_validator

__all__ = [
    "AiSessionLineage",
    "CommandTrigger",
    "ForkLineage",
    "RootLineage",
    "SpawnLineage",
    "SpawnTrigger",
    "ToolTrigger",
]


def aware_datetime(instance: object, attribute: attrs.Attribute[datetime], value: datetime) -> None:
    if not isinstance(value, datetime) or value.tzinfo is None or value.utcoffset() is None:
        raise ModDefinitionError(
            f"{type(instance).__name__}.{attribute.name} must be a timezone-aware datetime, "
            f"got {show(value)}; use datetime.now(timezone.utc)",
            field=attribute.name,
            value=value,
        )


def _positive(instance: object, attribute: attrs.Attribute[int], value: int) -> None:
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise ModDefinitionError(
            f"{type(instance).__name__}.{attribute.name} must be an int >= 1 "
            f"(a child is one deeper than its parent), got {show(value)}",
            field=attribute.name,
            value=value,
        )


def non_negative_int(instance: object, attribute: attrs.Attribute[int], value: int) -> None:
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise ModDefinitionError(
            f"{type(instance).__name__}.{attribute.name} must be an int >= 0, got {show(value)}",
            field=attribute.name,
            value=value,
        )


_str = text_validator()


def _trigger(instance: object, attribute: attrs.Attribute[Any], value: object) -> None:
    if not isinstance(value, (CommandTrigger, ToolTrigger)):
        raise ModDefinitionError(
            f"{type(instance).__name__}.{attribute.name} must be a CommandTrigger or a "
            f"ToolTrigger, got {show(value)} ({type(value).__name__})",
            field=attribute.name,
            value=value,
        )


@attrs.frozen(kw_only=True)
class CommandTrigger:
    """A spawn made by a command handler. Immutable."""

    kind: Literal["command"] = attrs.field(default="command", init=False)
    mod_id: str = attrs.field(validator=_str)
    command_id: str = attrs.field(validator=_str)


@attrs.frozen(kw_only=True)
class ToolTrigger:
    """A spawn made by a tool handler the model called. Immutable."""

    kind: Literal["tool"] = attrs.field(default="tool", init=False)
    mod_id: str = attrs.field(validator=_str)
    tool_name: str = attrs.field(validator=_str)
    call_id: str = attrs.field(validator=_str)


SpawnTrigger: TypeAlias = CommandTrigger | ToolTrigger
"""What made a spawn; discriminated by ``kind``."""


@attrs.frozen(kw_only=True)
class RootLineage:
    """A session with no parent: made by the user or ``ctx.ai.sessions.create``. Immutable."""

    kind: Literal["root"] = attrs.field(default="root", init=False)


@attrs.frozen(kw_only=True)
class SpawnLineage:
    """A fresh child with empty history, made by a command or tool handler. Immutable."""

    kind: Literal["spawn"] = attrs.field(default="spawn", init=False)
    parent_session_id: SessionId = attrs.field(validator=_str)
    parent_chat_uri: str = attrs.field(validator=_str)
    depth: int = attrs.field(validator=_positive)
    spawned_at: datetime = attrs.field(validator=aware_datetime)
    trigger: SpawnTrigger = attrs.field(validator=_trigger)


@attrs.frozen(kw_only=True)
class ForkLineage:
    """A session whose history is its parent's turns ``0..parent_turn_ordinal``. Immutable.

    ``parent_turn_ordinal`` is the anchor turn, ``parent_runner_id`` the runner that produced
    it, and ``parent_user_message_id`` the anchor's ``message_id`` when the user wrote it
    (``None`` when a mod did).
    """

    kind: Literal["fork"] = attrs.field(default="fork", init=False)
    parent_session_id: SessionId = attrs.field(validator=_str)
    parent_turn_ordinal: int = attrs.field(validator=non_negative_int)
    parent_runner_id: AiRunnerId = attrs.field(validator=_str)
    depth: int = attrs.field(validator=_positive)
    forked_at: datetime = attrs.field(validator=aware_datetime)
    parent_user_message_id: str | None = attrs.field(default=None, validator=text_validator(optional=True))


AiSessionLineage: TypeAlias = RootLineage | SpawnLineage | ForkLineage
"""How a session came to exist; discriminated by ``kind``. ``match`` on it exhaustively."""

"""What a ``before_action`` hook sees and answers."""

from __future__ import annotations

from typing import Literal, TypeAlias

import attrs

from ._errors import ModDefinitionError
from ._ids import SessionId, TurnId
from ._lineage import CommandTrigger, SpawnTrigger, ToolTrigger
from ._messages import Author, ModAuthor, UserAuthor
from ._rules import show, text_validator


def _author(instance: object, attribute: attrs.Attribute[Author], value: object) -> None:
    if not isinstance(value, (UserAuthor, ModAuthor)):
        raise ModDefinitionError(
            f"ActionEvent.author must be a UserAuthor or a ModAuthor, got {show(value)} "
            f"({type(value).__name__})",
            field=attribute.name,
            value=value,
        )

def _optional_ordinal(instance: object, attribute: attrs.Attribute[int | None], value: object) -> None:
    if value is not None and (isinstance(value, bool) or not isinstance(value, int) or value < 0):
        raise ModDefinitionError(
            f"ActionEvent.{attribute.name} must be a turn ordinal (an int >= 0) or None, got {show(value)}",
            field=attribute.name,
            value=value,
        )


def _optional_trigger(instance: object, attribute: attrs.Attribute[SpawnTrigger | None], value: object) -> None:
    if value is not None and not isinstance(value, (CommandTrigger, ToolTrigger)):
        raise ModDefinitionError(
            f"ActionEvent.trigger must be a CommandTrigger, a ToolTrigger or None, got {show(value)} "
            f"({type(value).__name__})",
            field=attribute.name,
            value=value,
        )


__all__ = ["ActionEvent", "Allow", "Deny", "HookDecision"]


@attrs.frozen(kw_only=True)
class ActionEvent:
    """An action about to happen, shown to ``before_action`` hooks. Immutable.

    ``action`` is the `HostAction` (``"session.fork"`` ...) or ``"command:<id>"``;
    ``session_id`` the session it acts on (``None`` for ``session.create`` and palette
    commands); ``author`` who is doing it, stamped by the host. A ``session.fork`` also
    says where the fork starts: ``anchor_ordinal`` and ``anchor_turn_id``, the turn it
    continues after (a hook may allow forks of the latest turn only, say); a
    ``session.spawn`` carries its ``trigger`` (the command or tool spawning). Other
    actions leave these ``None``.
    """

    action: str = attrs.field(validator=text_validator())
    session_id: SessionId | None = attrs.field(validator=text_validator(optional=True))
    author: Author = attrs.field(validator=_author)
    anchor_ordinal: int | None = attrs.field(default=None, validator=_optional_ordinal)
    anchor_turn_id: TurnId | None = attrs.field(default=None, validator=text_validator(optional=True))
    trigger: SpawnTrigger | None = attrs.field(default=None, validator=_optional_trigger)


@attrs.frozen(kw_only=True)
class Allow:
    """A hook's answer: let the action happen. Immutable."""

    kind: Literal["allow"] = attrs.field(default="allow", init=False)


@attrs.frozen(kw_only=True)
class Deny:
    """A hook's answer: refuse the action. Immutable.

    The caller gets `ActionDeniedError` carrying ``reason``.
    """

    kind: Literal["deny"] = attrs.field(default="deny", init=False)
    reason: str = attrs.field(
        validator=text_validator(non_empty=True, fix="say why the action is refused")
    )


HookDecision: TypeAlias = Allow | Deny
"""A hook's answer; discriminated by ``kind``."""

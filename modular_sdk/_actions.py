"""What a ``before_action`` hook sees and answers."""

from __future__ import annotations

from typing import Literal

import attrs
from typing_extensions import TypeAlias

from ._ids import SessionId
from ._messages import Author

__all__ = ["ActionEvent", "Allow", "Deny", "HookDecision"]


@attrs.frozen(kw_only=True)
class ActionEvent:
    """An action about to happen, shown to ``before_action`` hooks. Immutable.

    ``action`` is the `HostAction` (``"session.fork"`` ...) or ``"command:<id>"``;
    ``session_id`` the session it acts on (``None`` for ``session.create`` and palette
    commands); ``author`` who is doing it, stamped by the host.
    """

    action: str
    session_id: SessionId | None
    author: Author


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
    reason: str = attrs.field(validator=attrs.validators.instance_of(str))

    @reason.validator
    def _check_reason(self, attribute: attrs.Attribute[str], value: str) -> None:
        if not value.strip():
            raise ValueError("Deny.reason must not be empty; say why the action is refused")


HookDecision: TypeAlias = Allow | Deny
"""A hook's answer; discriminated by ``kind``."""

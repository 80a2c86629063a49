"""What ``host.submit`` gives back: `Submission` (its own module: jobs and the host both make them)."""

from __future__ import annotations

from typing import Literal

import attrs

from ..stores._records import ErrorKind
from ..traces._types import PendingAction
from ._handles import TurnHandle

__all__ = ["Submission"]


@attrs.frozen(kw_only=True)
class Submission:
    """What ``host.submit`` (or ``host.run_command``) gives back. Immutable.

    ``kind`` is ``"prompt"`` or ``"command"``; ``text`` is what the user sees (the reply,
    or the command's output, or the error message); ``turn`` the prompt's turn (else
    ``None``); ``error`` is set when the command or turn failed, and is never raised;
    ``error_kind`` says why, for a program to branch on: ``"unknown_command"``,
    ``"denied"`` (a ``before_action`` hook refused the command, or an action its handler
    attempted and did not catch), ``"handler_failed"``, ``"timeout"``,
    ``"model_failed"``, ``"invalid_input"`` (empty text, or a bare ``/``), or ``None``.
    """

    kind: Literal["prompt", "command"]
    text: str
    turn: TurnHandle | None = None
    error: str | None = None
    error_kind: ErrorKind | None = None
    actions: tuple[PendingAction, ...] = ()  # what the turn's reply proposed, waiting for host.confirm
    action_errors: tuple[str, ...] = ()  # <mod-action> tags that created no action, and why
    widget_errors: tuple[str, ...] = ()  # <mod-widget> tags that placed no widget (turn.widgets), and why

    @property
    def ok(self) -> bool:
        """True when nothing failed."""
        return self.error is None

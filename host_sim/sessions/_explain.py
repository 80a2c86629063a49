"""Wording shared by the engine, the handles and the host: failed turns, "did you mean"."""

from __future__ import annotations

import difflib
from collections.abc import Sequence

from modular_sdk import TurnFailedError

from ._state import TurnState

__all__ = ["close_names", "turn_failed"]


def turn_failed(turn: TurnState) -> TurnFailedError:
    """The error for awaiting a turn that did not complete."""
    return TurnFailedError(
        f"turn {turn.ordinal} of session {turn.session_id!r} failed: {turn.error}",
        turn_id=turn.id,
        reason=turn.error or "failed",
    )


def close_names(name: str, known: Sequence[str]) -> list[str]:
    """Up to three of ``known`` that look like ``name`` (for "did you mean ...?")."""
    return difflib.get_close_matches(name, list(known), n=3, cutoff=0.5)

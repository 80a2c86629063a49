"""`ContextPolicy`: how much history a model call may carry, and how the host compacts the rest."""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Sequence
from typing import Final

import attrs

from modular_sdk import InvalidArgumentError
from modular_sdk._rules import show

from ..models._protocol import HistoryEntry

__all__ = ["CHARS_PER_TOKEN", "ContextPolicy", "Summarize"]

CHARS_PER_TOKEN: Final = 4
"""The estimate of a history's tokens when the model has no ``count_tokens``: about 4 characters a token."""

Summarize = Callable[[Sequence[HistoryEntry]], Awaitable[str]]
"""``summarize(entries) -> text``: the summary of a window of history entries (an earlier summary first, when there is one)."""


def _positive(instance: object, attribute: attrs.Attribute[int], value: int) -> None:
    if isinstance(value, bool) or not isinstance(value, int) or value < (1 if attribute.name == "max_tokens" else 0):
        raise InvalidArgumentError(
            f"ContextPolicy.{attribute.name} must be an int >= {1 if attribute.name == 'max_tokens' else 0}, got {show(value)}",
            argument=attribute.name,
            value=value,
        )


def _summarizer(instance: object, attribute: attrs.Attribute[Summarize | None], value: Summarize | None) -> None:
    if value is not None and not callable(value):
        raise InvalidArgumentError(
            f"ContextPolicy.summarize must be an async function (entries) -> str or None, got {show(value)}",
            argument="summarize",
            value=value,
        )


@attrs.frozen(kw_only=True)
class ContextPolicy:
    """How much history a model call may carry (``Host(context=ContextPolicy(...))``). Immutable.

    Before a model call whose history, as the model would see it, is over ``max_tokens``
    (the model's ``count_tokens(text)`` when it has one, else about 4 characters a token),
    the host compacts: a record of kind ``"summary"`` read from the oldest window of turns
    that brings the history under the budget, keeping the last ``keep_recent`` turns whole.
    Its text comes from ``summarize(entries)`` (default: one call of the session's model
    with a fixed instruction). Later calls see one ``HistoryEntry(kind="summary")`` in place
    of the window. See docs/memory.md.
    """

    max_tokens: int = attrs.field(validator=_positive)
    keep_recent: int = attrs.field(default=4, validator=_positive)
    summarize: Summarize | None = attrs.field(default=None, validator=_summarizer)

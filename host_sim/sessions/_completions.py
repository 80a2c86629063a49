"""Typeahead: slash-command names at once, and a command's argument values when awaited.

``host.completions(text)`` stays a plain call, cheap enough for every keystroke: it returns a
`Completions` list of the commands matching what was typed. A command may also offer values
for its argument (``slash_command(..., complete=fn)``); producing those runs mod code (``def``
or ``async def``, with the handler timeout), so it happens only when the list is awaited:
``await host.completions("/task wri")`` is the same list with the argument values first.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Generator, Iterable, Sequence
from typing import Any, Final, final

import attrs

from modular_sdk import Mod, SlashCommand

from ..lanes._ext_host import HandlerFailed, call_handler

__all__ = ["Completion", "Completions", "argument_values"]

_MAX_VALUES: Final = 100  # argument values kept from one completer


@attrs.frozen(kw_only=True)
class Completion:
    """One typeahead entry of ``host.completions("/ta")``. Immutable.

    A command (``argument`` is ``None``), or, when awaited, a value the command offers for
    its argument: accepting it types ``/<name> <argument>``.
    """

    name: str
    description: str
    argument_hint: str | None
    mod_id: str
    argument: str | None = None


@final
class Completions(list[Completion]):
    """What ``host.completions(text)`` returns: the matching commands, best first.

    A list, at once. Awaited (``await host.completions("/task wri")``) it gives the same
    entries preceded by the argument values the typed command offers (its ``complete``
    function, run with the handler timeout; a completer that fails, times out or returns
    something other than strings offers nothing, and never raises).
    """

    __slots__ = ("_values",)

    def __init__(self, found: Iterable[Completion], values: Callable[[], Awaitable[list[Completion]]] | None) -> None:
        super().__init__(found)
        self._values = values

    def __await__(self) -> Generator[Any, None, list[Completion]]:
        return self._with_values().__await__()

    async def _with_values(self) -> list[Completion]:
        values = [] if self._values is None else await self._values()
        return [*values, *self]


@attrs.frozen
class _Context:
    """What a completer gets (implements `modular_sdk.CompletionContext`)."""

    mod_id: str
    command_id: str


async def argument_values(mod: Mod, declared: SlashCommand[str], prefix: str, *, timeout: float | None) -> list[Completion]:
    """The values ``declared.complete`` offers for ``prefix`` (none when it has no completer or fails)."""
    complete = declared.complete
    if complete is None:
        return []
    try:
        offered = await call_handler(
            f"completions of command /{declared.id} of mod {mod.id!r}",
            complete,
            (prefix, _Context(mod_id=mod.id, command_id=declared.id)),
            timeout=timeout,
        )
    except HandlerFailed:
        return []  # typeahead is a hint: a broken completer offers nothing
    if isinstance(offered, str) or not isinstance(offered, Sequence):
        return []
    values = [v for v in offered if isinstance(v, str) and v.strip() and _storable(v)][:_MAX_VALUES]
    return [
        Completion(
            name=declared.id, description=declared.description, argument_hint=declared.argument_hint, mod_id=mod.id, argument=v
        )
        for v in dict.fromkeys(values)
    ]


def _storable(text: str) -> bool:
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True

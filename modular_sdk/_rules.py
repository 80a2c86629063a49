"""The rules a declaration must follow, shared by every constructor and `define_mod`.

Each check returns problems instead of raising, so one call can report all of them.
"""

from __future__ import annotations

import difflib
import inspect
import re
from collections.abc import Callable, Iterable, Sequence

import attrs

from ._errors import ModDefinitionError

__all__ = ["ID_PATTERN", "Problem", "close_match", "raise_problems", "slug"]

ID_PATTERN = re.compile(r"[a-z][a-z0-9._-]*")


@attrs.frozen
class Problem:
    """One broken rule: the field, its value, and a message that says what to do."""

    field: str
    value: object
    message: str


def slug(text: str) -> str:
    """``"Background Tasks"`` -> ``"background-tasks"`` (may be empty)."""
    return re.sub(r"[^a-z0-9]+", "-", text.lower()).strip("-")


def close_match(word: str, candidates: Iterable[str], *, prefix: str = "") -> str:
    """``"; did you mean 'x'?"`` for the closest candidate, or ``""``.

    ``prefix`` is put before the match in the suggestion (``"command:"`` + id).
    """
    found = difflib.get_close_matches(word, list(candidates), n=1, cutoff=0.6)
    return f"; did you mean {prefix + found[0]!r}?" if found else ""


def check_id(field: str, value: object, what: str) -> list[Problem]:
    if not isinstance(value, str):
        return [Problem(field, value, f"{field} must be a str, got {value!r} ({type(value).__name__})")]
    if ID_PATTERN.fullmatch(value):
        return []
    suggestion = slug(value)
    hint = (
        f"; try {suggestion!r}"
        if suggestion and ID_PATTERN.fullmatch(suggestion)
        else "; start with a lowercase letter"
    )
    return [
        Problem(
            field,
            value,
            f"{what} {value!r} is not a valid id: use lowercase letters, digits, '.', '_' "
            f"and '-', starting with a letter (pattern [a-z][a-z0-9._-]*){hint}",
        )
    ]


def check_text(field: str, value: object, *, optional: bool = False) -> list[Problem]:
    if value is None and optional:
        return []
    if not isinstance(value, str):
        return [Problem(field, value, f"{field} must be a str, got {value!r} ({type(value).__name__})")]
    if not value.strip():
        return [Problem(field, value, f"{field} must not be empty, got {value!r}; write a short sentence for the user")]
    return []


def check_handler(
    field: str, handler: object, params: Sequence[str], *, define: str = "async def"
) -> list[Problem]:
    """The handler is callable with ``len(params)`` positional arguments.

    ``define`` is how the fix spells the function (``"def"`` for pure views).
    """
    call = f"{field.rsplit('.', 1)[-1]}({', '.join(params)})"
    if not callable(handler):
        return [
            Problem(
                field,
                handler,
                f"{field} must be a function (def or async def) called as {call}, "
                f"got {handler!r} ({type(handler).__name__})",
            )
        ]
    try:
        signature = inspect.signature(handler)
    except (TypeError, ValueError):  # some builtins have no signature: trust them
        return []
    try:
        signature.bind(*params)
    except TypeError as exc:
        name = getattr(handler, "__qualname__", repr(handler))
        return [
            Problem(
                field,
                handler,
                f"{field} {name}{signature} cannot be called as {call} ({exc}); "
                f"define it as `{define} {field.rsplit('.', 1)[-1]}({', '.join(params)})`",
            )
        ]
    return []


def raise_problems(where: str, problems: Sequence[Problem]) -> None:
    """Raise one `ModDefinitionError` naming every problem, or return if there are none."""
    if not problems:
        return
    errors = [
        ModDefinitionError(f"{where}: {p.message}", field=p.field, value=p.value) for p in problems
    ]
    if len(errors) == 1:
        raise errors[0]
    lines = "\n".join(f"  - {p.message}" for p in problems)
    raise ModDefinitionError(
        f"{where} has {len(problems)} problems:\n{lines}",
        field=problems[0].field,
        value=problems[0].value,
        problems=errors,
    )


def callable_name(handler: Callable[..., object]) -> str:
    return getattr(handler, "__qualname__", type(handler).__name__)

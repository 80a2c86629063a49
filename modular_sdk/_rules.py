"""The rules a declaration must follow, shared by every constructor and `define_mod`.

Each check returns problems instead of raising, so one call can report all of them. Also
here: the limits every value of ours keeps so that it can be stored as JSON text (`MAX_DEPTH`,
text with no lone surrogates, integers JSON can write), and `show`, the one way an error
message quotes a value a caller passed (short, and it never raises).
"""

from __future__ import annotations

import difflib
import inspect
import re
import reprlib
import sys
from collections.abc import Callable, Iterable, Mapping, Sequence, Set
from typing import Any

import attrs

from ._errors import ModDefinitionError, SerializationError

__all__ = [
    "ID_PATTERN",
    "MAX_DEPTH",
    "Problem",
    "check_json_data",
    "close_match",
    "raise_problems",
    "show",
    "slug",
    "text_validator",
    "unstorable_text",
]

ID_PATTERN = re.compile(r"[a-z][a-z0-9._-]*")

MAX_DEPTH = 100
"""How deeply JSON arrays and objects may nest in a value we read or write.

Deeper data is refused with `SerializationError` before anything recurses into it: the
converter, ``json``, ``repr`` and ``copy`` all recurse, and Python's stack ends near 1,000
frames. Real tool inputs and records nest a handful of levels; 100 leaves room for recursive
input types (a tree of attrs classes) with a wide margin under the stack, since structuring
takes several frames per level.
"""


class _Shown(reprlib.Repr):
    """`reprlib` sized for error messages, and safe for integers too long to print."""

    def __init__(self) -> None:
        super().__init__()
        self.maxlevel = 4
        self.maxstring = 160
        self.maxother = 160
        self.maxlong = 60
        self.maxlist = self.maxtuple = self.maxset = self.maxfrozenset = self.maxdeque = 12
        self.maxdict = 8

    def repr_int(self, x: int, level: int) -> str:
        if x.bit_length() > 200:
            return f"<int of {x.bit_length()} bits>"
        return super().repr_int(x, level)


_SHOWN = _Shown()


def show(value: object) -> str:
    """``repr(value)`` for an error message: shortened when long, never raising.

    A message must survive whatever a caller passes: a list nested 5,000 deep, an integer
    of 10,000 digits, an object whose ``__repr__`` raises.
    """
    try:
        return _SHOWN.repr(value)
    except Exception:  # a __repr__ that raises, a RecursionError inside one
        return f"<{type(value).__name__} object>"


_SURROGATE = re.compile("[\ud800-\udfff]")


def unstorable_text(text: str) -> str | None:
    """Why ``text`` cannot be stored as UTF-8 (it holds a lone surrogate), or ``None``."""
    if text.isascii():
        return None
    found = _SURROGATE.search(text)
    if found is None:
        return None
    return (
        f"holds the lone surrogate {found.group()!r} at index {found.start()}, which cannot be "
        "stored as UTF-8; remove it (it usually comes from bytes decoded with "
        "errors='surrogateescape' or from broken UTF-16)"
    )


def text_validator(
    *, optional: bool = False, non_empty: bool = False, fix: str = "pass some text"
) -> Callable[[Any, attrs.Attribute[Any], Any], None]:
    """An attrs validator: a ``str`` (or ``None`` when ``optional``) that can be stored.

    Raises `ModDefinitionError` naming the class, the field and the value. (Typed loosely
    so that ``NewType`` fields such as ``SessionId`` accept it.)
    """

    def check(instance: object, attribute: attrs.Attribute[Any], value: object) -> None:
        where = f"{type(instance).__name__}.{attribute.name}"
        if value is None and optional:
            return
        if not isinstance(value, str):
            expected = "a str or None" if optional else "a str"
            raise ModDefinitionError(
                f"{where} must be {expected}, got {show(value)} ({type(value).__name__}); {fix}",
                field=attribute.name,
                value=value,
            )
        if non_empty and not value.strip():
            raise ModDefinitionError(
                f"{where} must not be empty, got {show(value)}; {fix}",
                field=attribute.name,
                value=value,
            )
        why = unstorable_text(value)
        if why is not None:
            raise ModDefinitionError(f"{where} {show(value)} {why}", field=attribute.name, value=value)

    return check


_ALWAYS_FITS = 14_000
"""Bits of an integer that prints in any case: 4,214 digits at most."""


def _fits_json_int(value: int) -> bool:
    """Whether ``str(value)`` works: Python refuses integers over 4,300 digits by default."""
    if value.bit_length() < _ALWAYS_FITS:
        return True
    try:
        str(value)
    except ValueError:
        return False
    return True


_Path = tuple["_Path", object] | None


def _where(path: _Path) -> str:
    """``$['items'][2]``: where in the data; long paths keep their first steps."""
    steps: list[str] = []
    while path is not None:
        path, step = path
        steps.append(f"[{show(step)}]")
    steps.reverse()
    if len(steps) > 8:
        steps = [*steps[:6], f"...({len(steps) - 6} more)"]
    return "$" + "".join(steps)


def _check_text(text: str, path: _Path, type_name: str, what: str = "text") -> None:
    why = unstorable_text(text)
    if why is not None:
        raise SerializationError(
            f"the {what} {show(text)} at {_where(path)} {why}", value=text, type_name=type_name
        )


def _check_int(number: int, path: _Path, type_name: str) -> None:
    if not _fits_json_int(number):
        raise SerializationError(
            f"the integer at {_where(path)} has more than the "
            f"{sys.get_int_max_str_digits()} digits Python writes as text "
            f"({number.bit_length()} bits); send it as a string of digits",
            value=number,
            type_name=type_name,
        )


_PLAIN = (float, type(None))


def check_json_data(value: object, type_name: str) -> None:
    """Refuse data that could not be stored as JSON text, without recursing into it.

    Raises `SerializationError` for arrays and objects nested more than `MAX_DEPTH` deep
    (a cycle is infinitely deep), text with a lone surrogate (keys too), and integers
    over Python's digit limit for ``str(int)``. Lists, tuples, sets, mappings and attrs
    instances count as levels; anything else is left for the converter to judge. One pass
    over the data, a fraction of what structuring it costs.
    """
    stack: list[tuple[object, int, _Path]] = [(value, 0, None)]
    while stack:
        item, depth, path = stack.pop()
        if isinstance(item, str):
            _check_text(item, path, type_name)
            continue
        if isinstance(item, int):
            _check_int(item, path, type_name)
            continue
        children: Iterable[tuple[object, object]]
        fields = getattr(type(item), "__attrs_attrs__", None)
        if isinstance(item, Mapping):
            children = item.items()
        elif isinstance(item, (list, tuple, Set)):
            children = enumerate(item)
        elif fields is not None:
            children = [(f.name, getattr(item, f.name, None)) for f in fields]
        else:
            continue
        if depth >= MAX_DEPTH:
            raise SerializationError(
                f"the data at {_where(path)} is nested more than {MAX_DEPTH} levels deep "
                "(arrays and objects inside each other); flatten it",
                value=value,
                type_name=type_name,
            )
        keys_are_text = isinstance(item, Mapping)
        for key, child in children:
            if keys_are_text and isinstance(key, str) and not key.isascii():
                _check_text(key, path, type_name, "key")
            if isinstance(child, str):  # the common leaves, checked here rather than stacked
                if not child.isascii():
                    _check_text(child, (path, key), type_name)
            elif isinstance(child, int):
                if child.bit_length() >= _ALWAYS_FITS:
                    _check_int(child, (path, key), type_name)
            elif not isinstance(child, _PLAIN):
                stack.append((child, depth + 1, (path, key)))


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
        return [Problem(field, value, f"{field} must be a str, got {show(value)} ({type(value).__name__})")]
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
            f"{what} {show(value)} is not a valid id: use lowercase letters, digits, '.', '_' "
            f"and '-', starting with a letter (pattern [a-z][a-z0-9._-]*){hint}",
        )
    ]


def check_text(field: str, value: object, *, optional: bool = False) -> list[Problem]:
    if value is None and optional:
        return []
    if not isinstance(value, str):
        return [Problem(field, value, f"{field} must be a str, got {show(value)} ({type(value).__name__})")]
    if not value.strip():
        return [Problem(field, value, f"{field} must not be empty, got {show(value)}; write a short sentence for the user")]
    why = unstorable_text(value)
    if why is not None:
        return [Problem(field, value, f"{field} {show(value)} {why}")]
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
                f"got {show(handler)} ({type(handler).__name__})",
            )
        ]
    try:
        signature = inspect.signature(handler)
    except (TypeError, ValueError):  # some builtins have no signature: trust them
        return []
    except Exception as exc:  # a __signature__ (or __wrapped__ ...) that raises: refuse it now
        return [
            Problem(
                field,
                handler,
                f"{field} {show(handler)}: its signature cannot be read ({type(exc).__name__}: "
                f"{show(str(exc))}), so the host could not call it safely; checked when the mod is "
                f"defined: pass a plain function, `{define} {field.rsplit('.', 1)[-1]}({', '.join(params)})`",
            )
        ]
    try:
        signature.bind(*params)
    except TypeError as exc:
        name = getattr(handler, "__qualname__", None)
        name = name if isinstance(name, str) else show(handler)
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

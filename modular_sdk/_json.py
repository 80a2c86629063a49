"""The one JSON converter of modular-sdk.

Built from `cattrs.preconf.json`, strict: no silent coercion (``"yes"`` is not a ``bool``,
``123`` is not a `SessionId`), unknown keys refused, and tagged unions dispatched on an
explicit, stable tag (``kind`` or ``type``), never a class name. Every failure is a
`SerializationError` naming the offending value.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from datetime import datetime
from types import UnionType
from typing import Any, TypeVar, get_args, overload

import attrs
import cattrs
from cattrs.gen import make_dict_structure_fn, make_dict_unstructure_fn
from cattrs.preconf.json import JsonConverter, make_converter

from ._actions import Allow, Deny
from ._errors import SerializationError
from ._lineage import CommandTrigger, ForkLineage, RootLineage, SpawnLineage, ToolTrigger
from ._messages import AiNotificationMessage, AiPromptMessage, ModAuthor, UserAuthor

__all__ = ["converter", "from_json", "register_tagged", "structure", "to_json", "unstructure"]

T = TypeVar("T")


def _type_name(tp: object) -> str:
    return getattr(tp, "__name__", None) or str(tp)


def _strict_str(value: object, tp: type) -> str:
    if not isinstance(value, str):
        raise SerializationError(
            f"expected a JSON string for {_type_name(tp)}, got {value!r} ({type(value).__name__})",
            value=value,
            type_name=_type_name(tp),
        )
    return value


def _strict_int(value: object, tp: type) -> int:
    if isinstance(value, bool) or not isinstance(value, int):
        raise SerializationError(
            f"expected a JSON integer, got {value!r} ({type(value).__name__})",
            value=value,
            type_name="int",
        )
    return value


def _strict_float(value: object, tp: type) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise SerializationError(
            f"expected a JSON number, got {value!r} ({type(value).__name__})",
            value=value,
            type_name="float",
        )
    return float(value)


def _strict_bool(value: object, tp: type) -> bool:
    if not isinstance(value, bool):
        raise SerializationError(
            f"expected a JSON boolean (true or false), got {value!r} ({type(value).__name__})",
            value=value,
            type_name="bool",
        )
    return value


def _aware_datetime(value: object, tp: type) -> datetime:
    text = _strict_str(value, datetime)
    try:
        parsed = datetime.fromisoformat(text)
    except ValueError:
        raise SerializationError(
            f"expected an ISO 8601 date-time, got {value!r}", value=value, type_name="datetime"
        ) from None
    if parsed.tzinfo is None:
        raise SerializationError(
            f"expected a timezone-aware date-time (with an offset such as +00:00), got {value!r}",
            value=value,
            type_name="datetime",
        )
    return parsed


converter: JsonConverter = make_converter(forbid_extra_keys=True)
converter.register_structure_hook(str, _strict_str)
converter.register_structure_hook(int, _strict_int)
converter.register_structure_hook(float, _strict_float)
converter.register_structure_hook(bool, _strict_bool)
converter.register_structure_hook(datetime, _aware_datetime)
converter.register_unstructure_hook(datetime, lambda value: value.isoformat())

_TAGS: dict[type, tuple[str, str]] = {}


def register_tagged(cls: type, tag_name: str) -> None:
    """Unstructure ``cls`` with its tag field (``init=False``) and check it on the way in."""
    tag_value = attrs.fields_dict(cls)[tag_name].default
    assert isinstance(tag_value, str)
    _TAGS[cls] = (tag_name, tag_value)
    base_unstructure = make_dict_unstructure_fn(cls, converter)
    base_structure = make_dict_structure_fn(cls, converter, _cattrs_forbid_extra_keys=True)

    def unstructure_tagged(value: Any) -> dict[str, Any]:
        data: dict[str, Any] = {tag_name: tag_value}
        data.update(base_unstructure(value))
        return data

    def structure_tagged(value: object, _: type) -> Any:
        if not isinstance(value, Mapping):
            raise SerializationError(
                f"expected a JSON object for {cls.__name__}, got {value!r}",
                value=value,
                type_name=cls.__name__,
            )
        found = value.get(tag_name, None)
        if found != tag_value:
            raise SerializationError(
                f"expected {tag_name!r} = {tag_value!r} for {cls.__name__}, got {found!r} in {value!r}",
                value=value,
                type_name=cls.__name__,
            )
        rest = {k: v for k, v in value.items() if k != tag_name}
        return base_structure(rest, cls)

    converter.register_unstructure_hook(cls, unstructure_tagged)
    converter.register_structure_hook(cls, structure_tagged)


def _register_union(union: UnionType, name: str) -> None:
    members: tuple[type, ...] = get_args(union)
    tag_name = _TAGS[members[0]][0]
    by_tag = {_TAGS[m][1]: m for m in members}
    known = ", ".join(repr(t) for t in by_tag)

    def structure_union(value: object, _: object) -> Any:
        if not isinstance(value, Mapping):
            raise SerializationError(
                f"expected a JSON object for {name}, got {value!r}", value=value, type_name=name
            )
        if tag_name not in value:
            raise SerializationError(
                f"{name} needs a {tag_name!r} key (one of {known}), got {value!r}",
                value=value,
                type_name=name,
            )
        tag = value[tag_name]
        member = by_tag.get(tag) if isinstance(tag, str) else None
        if member is None:
            raise SerializationError(
                f"unknown {name} {tag_name} {tag!r} in {value!r}; expected one of {known}",
                value=value,
                type_name=name,
            )
        return converter.structure(value, member)

    converter.register_structure_hook(union, structure_union)
    converter.register_unstructure_hook(union, lambda value: converter.unstructure(value, type(value)))


for _cls in (RootLineage, SpawnLineage, ForkLineage, CommandTrigger, ToolTrigger, UserAuthor, ModAuthor, Allow, Deny):
    register_tagged(_cls, "kind")
for _cls in (AiPromptMessage, AiNotificationMessage):
    register_tagged(_cls, "type")
_register_union(RootLineage | SpawnLineage | ForkLineage, "AiSessionLineage")
_register_union(CommandTrigger | ToolTrigger, "SpawnTrigger")
_register_union(UserAuthor | ModAuthor, "Author")
_register_union(AiPromptMessage | AiNotificationMessage, "AiMessage")
_register_union(Allow | Deny, "HookDecision")


def _flatten(exc: BaseException) -> list[str]:
    if isinstance(exc, SerializationError):
        return [str(exc)]
    if isinstance(exc, BaseExceptionGroup):
        notes: list[str] = []
        for sub in exc.exceptions:
            where = [n for n in getattr(sub, "__notes__", []) if isinstance(n, str)]
            for line in _flatten(sub):
                notes.append(f"{line} ({where[0]})" if where else line)
        return notes
    if isinstance(exc, cattrs.ForbiddenExtraKeysError):
        return [f"unknown keys {sorted(exc.extra_fields)!r}; remove them"]
    if isinstance(exc, KeyError):
        return [f"missing required key {exc.args[0]!r}"]
    return [f"{type(exc).__name__}: {exc}"]


def structure(value: object, tp: object) -> Any:
    """Structure plain JSON data into ``tp``; raises `SerializationError`."""
    try:
        return converter.structure(value, tp)
    except SerializationError:
        raise
    except (cattrs.BaseValidationError, KeyError, TypeError, ValueError, AttributeError) as exc:
        name = _type_name(tp)
        lines = _flatten(exc)
        raise SerializationError(
            f"cannot read {value!r} as {name}: " + "; ".join(lines), value=value, type_name=name
        ) from None


def unstructure(value: object) -> Any:
    """Plain JSON data (dicts, lists, str, numbers) for one of our values."""
    return converter.unstructure(value)


def to_json(value: object) -> str:
    """Serialize a message, author, lineage, trigger or decision to JSON (sorted keys).

    >>> to_json(RootLineage())
    '{"kind": "root"}'
    """
    return json.dumps(unstructure(value), sort_keys=True, ensure_ascii=False)


@overload
def from_json(text: str | bytes, tp: type[T]) -> T: ...
@overload
def from_json(text: str | bytes, tp: object) -> object: ...
def from_json(text: str | bytes, tp: object) -> object:
    """Read JSON written by `to_json` back as ``tp`` (a class or a union alias).

    Raises `SerializationError` naming the offending value: unknown or missing ``kind`` /
    ``type`` tags, wrong JSON types (never coerced), unknown keys.
    """
    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        raise SerializationError(f"not JSON: {exc}", value=text, type_name=_type_name(tp)) from None
    return structure(data, tp)

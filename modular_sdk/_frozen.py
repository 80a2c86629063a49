"""Frozen JSON: the immutable form of the JSON data a declaration holds.

A declaration is immutable all the way down, so JSON it carries (a tool's input schema)
is frozen when the declaration is made: a JSON object becomes a read-only
`types.MappingProxyType` and a JSON array a `JsonArray` (a tuple). `thaw` gives back plain
``dict``/``list`` data, a fresh copy each call, for whoever needs to change it or hand it
to ``json.dumps``; the converter of `_json` unstructures frozen values the same way.
"""

from __future__ import annotations

import math
import types
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, TypeAlias, Union

from ._errors import SerializationError
from ._rules import MAX_DEPTH, check_json_data, show

__all__ = [
    "FrozenJsonObject",
    "FrozenJsonValue",
    "JsonArray",
    "JsonObject",
    "JsonValue",
    "freeze",
    "freeze_object",
    "thaw",
    "thaw_object",
]

# Plain JSON data (what `thaw` gives and json.loads reads): defined here, below `_json` and
# `_schema` (which re-exports them), so the three modules import in one direction.
if TYPE_CHECKING:
    JsonValue: TypeAlias = Union[
        None, bool, int, float, str, list["JsonValue"], dict[str, "JsonValue"]
    ]
else:  # the recursive alias cannot be evaluated at runtime (get_type_hints)
    JsonValue = Union[None, bool, int, float, str, list[Any], dict[str, Any]]
JsonObject: TypeAlias = dict[str, JsonValue]


class JsonArray(tuple["FrozenJsonValue", ...]):
    """A frozen JSON array: a tuple that also equals a list of equal items.

    JSON has one kind of array, so ``schema["required"] == ["query"]`` holds for a frozen
    schema just as it did for the plain one. Hashes like the tuple of its items.
    """

    __slots__ = ()

    def __eq__(self, other: object) -> bool:
        if isinstance(other, list):
            other = tuple(other)
        return tuple.__eq__(self, other)

    def __ne__(self, other: object) -> bool:
        if isinstance(other, list):
            other = tuple(other)
        return tuple.__ne__(self, other)

    __hash__ = tuple.__hash__


if TYPE_CHECKING:
    FrozenJsonValue: TypeAlias = Union[
        None, bool, int, float, str, JsonArray, Mapping[str, "FrozenJsonValue"]
    ]
else:  # the recursive alias cannot be evaluated at runtime (get_type_hints)
    FrozenJsonValue = Union[None, bool, int, float, str, JsonArray, Mapping[str, Any]]

FrozenJsonObject: TypeAlias = Mapping[str, FrozenJsonValue]
"""A frozen JSON object: a read-only mapping of frozen JSON values."""


def freeze(value: object, *, type_name: str = "JSON data") -> FrozenJsonValue:
    """The frozen copy of plain JSON data (dicts, lists, tuples, str, numbers, None).

    Raises `SerializationError` naming the offending value for anything that is not JSON
    data: other types, non-``str`` keys, NaN or infinite floats, text with a lone surrogate,
    integers too long to write, nesting deeper than `MAX_DEPTH` (a cycle is endless).
    """
    check_json_data(value, type_name)
    return _freeze(value, type_name, 0)


def _freeze(value: object, type_name: str, depth: int) -> FrozenJsonValue:
    if value is None or isinstance(value, (bool, int, str)):
        return value
    if isinstance(value, float):
        if not math.isfinite(value):
            raise SerializationError(
                f"{type_name} holds {show(value)}, which JSON cannot represent; use a finite number",
                value=value,
                type_name=type_name,
            )
        return value
    if depth >= MAX_DEPTH:  # check_json_data saw the same; kept so this never recurses far
        raise SerializationError(
            f"{type_name} is nested more than {MAX_DEPTH} levels deep; flatten it",
            value=value,
            type_name=type_name,
        )
    if isinstance(value, (list, tuple)):
        return JsonArray(_freeze(item, type_name, depth + 1) for item in value)
    if isinstance(value, Mapping):
        frozen: dict[str, FrozenJsonValue] = {}
        for key, item in value.items():
            if not isinstance(key, str):
                raise SerializationError(
                    f"{type_name} has the key {show(key)} ({type(key).__name__}); "
                    "JSON object keys are strings",
                    value=value,
                    type_name=type_name,
                )
            frozen[key] = _freeze(item, type_name, depth + 1)
        return types.MappingProxyType(frozen)
    raise SerializationError(
        f"{type_name} holds {show(value)} ({type(value).__name__}), which is not JSON data; "
        "use dict, list, str, int, float, bool or None",
        value=value,
        type_name=type_name,
    )


def freeze_object(value: object, *, type_name: str = "JSON object") -> FrozenJsonObject:
    """`freeze` for a JSON object; raises `SerializationError` for anything else."""
    if not isinstance(value, Mapping):
        raise SerializationError(
            f"expected a JSON object for {type_name}, got {show(value)} ({type(value).__name__})",
            value=value,
            type_name=type_name,
        )
    frozen = freeze(value, type_name=type_name)
    assert isinstance(frozen, Mapping)
    return frozen


def thaw(value: FrozenJsonValue | JsonValue) -> JsonValue:
    """Plain, mutable JSON data (dicts and lists) equal to ``value``; a fresh copy."""
    if isinstance(value, Mapping):
        return {key: thaw(item) for key, item in value.items()}
    if isinstance(value, (list, tuple)):
        return [thaw(item) for item in value]
    return value


def thaw_object(value: FrozenJsonObject | JsonObject) -> JsonObject:
    """`thaw` for a JSON object: a fresh ``dict``."""
    return {key: thaw(item) for key, item in value.items()}

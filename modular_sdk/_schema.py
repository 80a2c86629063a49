"""JSON Schema for tool ``input_type`` attrs classes (placeholder, being written)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Union

import attrs
from typing_extensions import TypeAlias

__all__ = ["JsonObject", "JsonValue", "SchemaError", "json_schema"]

if TYPE_CHECKING:
    JsonValue: TypeAlias = Union[
        None, bool, int, float, str, list["JsonValue"], dict[str, "JsonValue"]
    ]
else:  # the recursive alias cannot be evaluated at runtime (get_type_hints)
    JsonValue = Union[None, bool, int, float, str, list[Any], dict[str, Any]]
JsonObject: TypeAlias = dict[str, JsonValue]


class SchemaError(ValueError):
    """A type that has no JSON representation."""


def json_schema(tp: type[object]) -> JsonObject:
    if not (isinstance(tp, type) and attrs.has(tp)):
        raise SchemaError(f"input_type must be an attrs class, got {tp!r}; decorate it with @attrs.frozen")
    return {"type": "object"}

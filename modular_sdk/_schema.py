"""JSON Schema (draft 2020-12) for tool ``input_type`` attrs classes.

`json_schema` describes exactly what the strict converter of `_json` accepts for the class,
so the host can hand the schema to the model and structure the model's answer with
``structure(data, tool.input_type)``:

============================  =====================================================
annotation                    schema
============================  =====================================================
``str`` / ``int`` / ``float``  ``{"type": "string" | "integer" | "number"}``
``bool`` / ``None``           ``{"type": "boolean" | "null"}``
``Literal["a", 1]``           ``{"enum": ["a", 1]}`` (``const`` for one value)
``Enum`` (str or int values)  ``{"enum": [...values]}``
``datetime``                  ``{"type": "string", "format": "date-time"}`` (with an offset)
``list[X]``, ``Sequence[X]``  ``{"type": "array", "items": X}``
``tuple[X, ...]``             ``{"type": "array", "items": X}``
``tuple[X, Y]``               ``prefixItems`` with exactly that many items
``dict[str, X]``              ``{"type": "object", "additionalProperties": X}``
``X | Y``, ``Optional[X]``    ``{"anyOf": [X, Y]}``
an attrs class                ``{"$ref": "#/$defs/Name"}`` (``"#"`` for the root itself)
============================  =====================================================

Every attrs class becomes ``{"type": "object", "properties": ..., "required": [...],
"additionalProperties": false}``: fields without a default are required, JSON defaults are
given as ``default``, the class docstring is the ``description`` and a field's
``metadata={"description": ...}`` describes its property. ``NewType``\\s and ``Annotated``
are read as their underlying type. Anything else (``bytes``, ``set``, ``Any``, ``dict``
with non-``str`` keys, arbitrary classes ...) raises `SchemaError` naming the class, the
field and the type, and what to use instead.
"""

from __future__ import annotations

import collections.abc
import datetime as _dt
import enum
import inspect
import json
import sys
import types
import typing
from typing import Annotated, Any, Literal, Union, get_args, get_origin

import attrs

from ._frozen import JsonObject, JsonValue
from ._json import unstructure
from ._rules import show

__all__ = ["DRAFT", "JsonObject", "JsonValue", "SchemaError", "json_schema"]

DRAFT = "https://json-schema.org/draft/2020-12/schema"
"""The ``$schema`` of every schema `json_schema` returns."""


class SchemaError(ValueError):
    """A tool ``input_type`` has a field with no JSON representation.

    ``cls`` is the attrs class, ``field`` the field name and ``type`` the offending type
    (``None`` when the input type itself is not an attrs class). ``problems`` holds one line
    per bad field; the message lists them all.
    """

    def __init__(
        self,
        message: str,
        *,
        cls: object = None,
        field: str | None = None,
        type: object = None,
        problems: tuple[str, ...] = (),
    ) -> None:
        super().__init__(message)
        self.cls = cls
        self.field = field
        self.type = type
        self.problems = problems or (message,)


_SEQUENCES = (list, collections.abc.Sequence, collections.abc.MutableSequence)
_MAPPINGS = (dict, collections.abc.Mapping, collections.abc.MutableMapping)
_SETS = (set, frozenset, collections.abc.Set, collections.abc.MutableSet)
_SCALARS: dict[object, JsonObject] = {
    str: {"type": "string"},
    bool: {"type": "boolean"},
    int: {"type": "integer"},
    float: {"type": "number"},
    type(None): {"type": "null"},
    None: {"type": "null"},
    _dt.datetime: {"type": "string", "format": "date-time"},
}
_GENERIC_DOCS = frozenset({"An enumeration.", ""})


def _show(tp: object) -> str:
    """A type as an author wrote it: ``set[int]``, ``bytes``, ``Any``."""
    if tp is type(None):
        return "None"
    if tp is Any:
        return "Any"
    if isinstance(tp, type) and get_origin(tp) is None:
        if tp.__module__.partition(".")[0] in sys.stdlib_module_names - {"builtins", "typing"}:
            return f"{tp.__module__}.{tp.__qualname__}"  # datetime.date, decimal.Decimal
        return tp.__qualname__
    origin = get_origin(tp)
    if origin is Literal:
        return f"Literal[{', '.join(repr(arg) for arg in get_args(tp))}]"
    if origin in (Union, types.UnionType):
        return " | ".join(_show(arg) for arg in get_args(tp))
    if origin is not None:
        args = ", ".join("..." if arg is ... else _show(arg) for arg in get_args(tp))
        return f"{_show(origin)}[{args}]"
    return repr(tp).replace("typing.", "")


def _instead(tp: object) -> str:
    """What to use instead of a type with no JSON representation."""
    origin = get_origin(tp) or tp
    if tp is Any or tp is object:
        return "use a concrete type: str, int, float, bool, an attrs class, or a union of them"
    if origin in (bytes, bytearray, memoryview):
        return "use str (for binary data, base64 text)"
    if origin in _SETS:
        return "use list[X] or tuple[X, ...] (JSON has no sets)"
    if origin in _MAPPINGS:
        return "use dict[str, X]: JSON object keys are strings"
    if origin in _SEQUENCES or origin is tuple:
        return "give the item type: list[str], tuple[int, ...]"
    if tp in (_dt.date, _dt.time, _dt.timedelta):
        return "use datetime (an ISO 8601 date-time with an offset) or str"
    if isinstance(tp, type) and issubclass(tp, enum.Enum):
        return "give the enum str or int values, or use Literal[...]"
    if isinstance(origin, type) and attrs.has(origin):
        return "declare a non-generic attrs class with concrete field types for the input"
    if isinstance(tp, typing.TypeVar):
        return "use a concrete type (generic input types are not supported)"
    if isinstance(tp, type):
        return "make it an attrs class (@attrs.frozen) or use str, int, float, bool, list, dict"
    return "use str, int, float, bool, None, Literal, an Enum, list, tuple, dict[str, X] or an attrs class"


class _Unsupported(Exception):
    def __init__(self, tp: object, why: str = "has no JSON representation") -> None:
        super().__init__(why)
        self.tp = tp
        self.why = why


class _Builder:
    """Walks attrs classes once each; nested classes land in ``$defs``."""

    def __init__(self, root: type) -> None:
        self.root = root
        self.defs: dict[str, JsonObject] = {}
        self.names: dict[type, str] = {root: ""}
        self.problems: list[tuple[type, str, object, object, str]] = []

    def ref(self, cls: type) -> JsonObject:
        if cls in self.names:
            name = self.names[cls]
            return {"$ref": f"#/$defs/{name}" if name else "#"}
        name = cls.__name__
        if name in self.defs or name in self.names.values():
            name = f"{cls.__module__}.{cls.__qualname__}"
        self.names[cls] = name
        self.defs[name] = {}  # claim it before recursing: a class may refer to itself
        self.defs[name] = self.object_schema(cls)
        return {"$ref": f"#/$defs/{name}"}

    def object_schema(self, cls: type) -> JsonObject:
        hints = _hints(cls)
        properties: dict[str, JsonValue] = {}
        required: list[JsonValue] = []
        for field in attrs.fields(cls):
            if not field.init:
                continue  # never read from JSON: the class sets it itself
            annotation = hints.get(field.name, field.type)
            try:
                prop = self.type_schema(annotation)
            except _Unsupported as exc:
                self.problems.append((cls, field.name, annotation, exc.tp, exc.why))
                continue
            description = field.metadata.get("description")
            if isinstance(description, str) and description.strip():
                prop = {**prop, "description": description.strip()}
            if field.default is attrs.NOTHING:
                required.append(field.name)
            else:
                default = _default(field.default)
                if not isinstance(default, _NoDefault):
                    prop = {**prop, "default": default}
            properties[field.name] = prop
        schema: JsonObject = {"type": "object", "title": cls.__name__}
        description = _doc(cls)
        if description:
            schema["description"] = description
        schema["properties"] = properties
        if required:
            schema["required"] = required
        schema["additionalProperties"] = False
        return schema

    def type_schema(self, tp: object) -> JsonObject:
        if get_origin(tp) is Annotated:
            return self.type_schema(get_args(tp)[0])
        supertype = getattr(tp, "__supertype__", None)
        if supertype is not None:  # NewType
            return self.type_schema(supertype)
        if isinstance(tp, str):
            raise _Unsupported(tp, "is an unresolved string annotation")
        if tp in _SCALARS:
            return dict(_SCALARS[tp])
        origin = get_origin(tp)
        args = get_args(tp)
        if origin is Literal:
            return _literal(tp, args)
        if origin in (Union, types.UnionType):
            return {"anyOf": [self.type_schema(arg) for arg in args]}
        if origin in _SEQUENCES and args:
            return {"type": "array", "items": self.type_schema(args[0])}
        if origin is tuple and args:
            if len(args) == 2 and args[1] is ...:
                return {"type": "array", "items": self.type_schema(args[0])}
            if args == ((),):  # tuple[()]
                return {"type": "array", "maxItems": 0}
            return {
                "type": "array",
                "prefixItems": [self.type_schema(arg) for arg in args],
                "items": False,
                "minItems": len(args),
                "maxItems": len(args),
            }
        if origin in _MAPPINGS and len(args) == 2:
            key = args[0]
            key = getattr(key, "__supertype__", key)
            if key is not str:
                raise _Unsupported(tp, f"has {_show(args[0])} keys")
            return {"type": "object", "additionalProperties": self.type_schema(args[1])}
        if isinstance(tp, type) and issubclass(tp, enum.Enum):
            return _enum(tp)
        if isinstance(tp, type) and attrs.has(tp):
            return self.ref(tp)
        if origin is not None and isinstance(origin, type) and attrs.has(origin):
            raise _Unsupported(tp, "is a parametrized generic attrs class")
        raise _Unsupported(tp)


class _NoDefault:
    pass


_NO_DEFAULT = _NoDefault()


def _default(default: object) -> JsonValue | _NoDefault:
    """The JSON form of a field default, or ``_NO_DEFAULT`` when it has none we can show.

    Factories are called only when they are classes (``list``, ``dict``, an attrs class):
    a function such as ``uuid4`` or ``datetime.now`` gives a different value each call and
    would make the schema (and the manifest) non-deterministic.
    """
    if isinstance(default, attrs.Factory):  # type: ignore[arg-type]  # attrs types it as a function
        factory: object = getattr(default, "factory", None)
        takes_self = getattr(default, "takes_self", False)
        if takes_self or not isinstance(factory, type):
            return _NO_DEFAULT
        try:
            default = factory()
        except Exception:  # a factory that needs arguments: no default to show
            return _NO_DEFAULT
    try:
        plain = unstructure(default)
        value: JsonValue = json.loads(json.dumps(plain, allow_nan=False))
        return value
    except (TypeError, ValueError):
        return _NO_DEFAULT


def _literal(tp: object, args: tuple[object, ...]) -> JsonObject:
    values: list[JsonValue] = []
    for arg in args:
        value = arg.value if isinstance(arg, enum.Enum) else arg
        if value is not None and not isinstance(value, (str, int)):  # bool is an int
            raise _Unsupported(tp, f"has the value {show(value)}, which is not a JSON scalar")
        values.append(value)
    return {"const": values[0]} if len(values) == 1 else {"enum": values}


def _enum(tp: type[enum.Enum]) -> JsonObject:
    values: list[JsonValue] = []
    for member in tp:
        value = member.value
        if isinstance(value, bool) or not isinstance(value, (str, int)):
            raise _Unsupported(tp, f"has the value {show(value)} ({member.name}), not a str or int")
        values.append(value)
    schema: JsonObject = {"enum": values}
    description = _doc(tp)
    if description:
        schema["description"] = description
    return schema


def _doc(cls: type) -> str:
    doc = cls.__dict__.get("__doc__")
    if not isinstance(doc, str):
        return ""
    text = inspect.cleandoc(doc)
    return "" if text in _GENERIC_DOCS else text


def _hints(cls: type) -> dict[str, object]:
    """The resolved annotations of ``cls`` (``from __future__ import annotations`` too)."""
    try:
        return typing.get_type_hints(cls, include_extras=True)
    except Exception as exc:  # NameError, or a TypeError from a bad annotation
        raise SchemaError(
            f"cannot resolve the annotations of {cls.__qualname__} ({type(exc).__name__}: {exc}); "
            "define every type it names at module level, before the class or imported "
            "(not inside a function or under `if TYPE_CHECKING:`)",
            cls=cls,
        ) from None


def json_schema(tp: type[object]) -> JsonObject:
    """The JSON Schema (draft 2020-12) of an attrs class used as a tool ``input_type``.

    Nested attrs classes are described once under ``$defs`` and referenced with ``$ref``;
    a class that refers to itself is fine. Raises `SchemaError` listing every field whose
    type has no JSON representation.

    >>> @attrs.frozen
    ... class Search:
    ...     \"\"\"Search the repository.\"\"\"
    ...     query: str
    ...     limit: int = 10
    >>> json_schema(Search)["properties"]
    {'query': {'type': 'string'}, 'limit': {'type': 'integer', 'default': 10}}
    """
    if not (isinstance(tp, type) and attrs.has(tp)):
        raise SchemaError(
            f"input_type must be an attrs class, got {show(tp)}; decorate it with @attrs.frozen",
            type=tp,
        )
    builder = _Builder(tp)
    body = builder.object_schema(tp)
    if builder.problems:
        lines = tuple(
            f"{cls.__qualname__}.{field}: {_show(bad)}"
            + (f" (in {_show(annotation)})" if annotation is not bad else "")
            + f" {why}; {_instead(bad)}"
            for cls, field, annotation, bad, why in builder.problems
        )
        cls, field, _, bad, _ = builder.problems[0]
        message = (
            lines[0]
            if len(lines) == 1
            else f"{tp.__qualname__} has {len(lines)} fields with no JSON representation:\n"
            + "\n".join(f"  - {line}" for line in lines)
        )
        raise SchemaError(message, cls=cls, field=field, type=bad, problems=lines)
    schema: JsonObject = {"$schema": DRAFT, **body}
    if builder.defs:
        schema["$defs"] = dict(sorted(builder.defs.items()))
    return schema

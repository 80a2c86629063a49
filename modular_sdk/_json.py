"""The one JSON converter of modular-sdk.

Built from `cattrs.preconf.json`, strict: no silent coercion (``"yes"`` is not a ``bool``,
``123`` is not a `SessionId`, ``true`` is not an ``int``, ``"ab"`` is not a ``list``),
unknown keys refused, and tagged unions dispatched on an explicit, stable tag (``kind`` or
``type``), never a class name. Every failure is a `SerializationError` naming the offending
value and, inside an attrs class, the field (``field 'items[2].count': ...``).

The host structures tool inputs with it too: ``structure(json_value, tool.input_type)``
accepts exactly what `json_schema` describes. Plain unions (``int | str``, ``A | B | None``)
try their members in order and take the first that fits; ``None`` only matches ``null``.

Data that could not be stored as JSON text is refused with `SerializationError` before the
converter (or ``json``) recurses into it, on the way in and on the way out: arrays and
objects nested more than `MAX_DEPTH` (100) levels deep, text with a lone surrogate, integers
over Python's 4,300-digit limit; and JSON text that is not a ``str`` or ``bytes``, or bytes
that do not decode.

JSON text from outside (a model reply, a server response, a cassette, a manifest) is read
by one function, `parse_json_text`, with one rule for numbers: integers in the signed 64-bit
range (`INT_RANGE`) and finite floats; longer integers, floats that overflow, ``NaN`` and
infinities are refused with `SerializationError`, like any other bad JSON.
"""

from __future__ import annotations

import collections.abc
import enum
import json
import math
import types
from collections.abc import Callable, Mapping
from datetime import datetime
from typing import Any, Literal, TypeVar, Union, get_args, get_origin, overload

import attrs
import cattrs
from cattrs.cols import (
    homogenous_tuple_structure_factory,
    list_structure_factory,
    mapping_structure_factory,
)
from cattrs.errors import AttributeValidationNote, IterableValidationNote
from cattrs.gen import make_dict_structure_fn, make_dict_unstructure_fn
from cattrs.preconf.json import JsonConverter, make_converter

from ._actions import Allow, Deny
from ._errors import SerializationError
from ._frozen import FrozenJsonObject, FrozenJsonValue, JsonArray, freeze, freeze_object, thaw, thaw_object
from ._lineage import CommandTrigger, ForkLineage, RootLineage, SpawnLineage, ToolTrigger
from ._memory import HostAuthor
from ._messages import AiNotificationMessage, AiPromptMessage, ModAuthor, UserAuthor
from ._rules import MAX_DEPTH, check_json_data, show

__all__ = [
    "converter",
    "INT_RANGE",
    "from_json",
    "load_json",
    "parse_json_text",
    "register_tagged",
    "structure",
    "to_json",
    "unstructure",
]

T = TypeVar("T")


def _type_name(tp: object) -> str:
    """``int``, ``list[str]``, ``N | None``: the type as an author wrote it."""
    if tp is type(None) or tp is None:
        return "None"
    if get_origin(tp) in (Union, types.UnionType):
        return " | ".join(_type_name(arg) for arg in get_args(tp))
    origin = get_origin(tp)
    if origin is Literal:
        return f"Literal[{', '.join(repr(arg) for arg in get_args(tp))}]"
    if origin is not None:
        args = ", ".join("..." if arg is ... else _type_name(arg) for arg in get_args(tp))
        return f"{_type_name(origin)}[{args}]"
    name = getattr(tp, "__name__", None)
    return name if isinstance(name, str) else str(tp)


def _strict_enum(value: object, tp: type[enum.Enum]) -> enum.Enum:
    """An enum member by its exact JSON value (``true`` is not ``1``, ``1.0`` is not ``1``)."""
    for member in tp:
        if type(member.value) is type(value) and member.value == value:
            return member
    known = ", ".join(repr(m.value) for m in tp)
    raise SerializationError(
        f"expected one of {known} for {tp.__name__}, got {show(value)} ({type(value).__name__})",
        value=value,
        type_name=tp.__name__,
    )


def _is_enum(tp: object) -> bool:
    return isinstance(tp, type) and issubclass(tp, enum.Enum)


def _strict_str(value: object, tp: type) -> Any:
    if _is_enum(tp):  # a ``str`` mixin enum dispatches here before ``Enum``
        return _strict_enum(value, tp)
    if not isinstance(value, str):
        raise SerializationError(
            f"expected a JSON string for {_type_name(tp)}, got {show(value)} ({type(value).__name__})",
            value=value,
            type_name=_type_name(tp),
        )
    return value


def _strict_int(value: object, tp: type) -> Any:
    if _is_enum(tp):  # IntEnum dispatches here before ``Enum``
        return _strict_enum(value, tp)
    if isinstance(value, bool) or not isinstance(value, int):
        raise SerializationError(
            f"expected a JSON integer, got {show(value)} ({type(value).__name__})",
            value=value,
            type_name="int",
        )
    return value


def _strict_float(value: object, tp: type) -> Any:
    if _is_enum(tp):
        return _strict_enum(value, tp)
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise SerializationError(
            f"expected a JSON number, got {show(value)} ({type(value).__name__})",
            value=value,
            type_name="float",
        )
    return float(value)


def _strict_bool(value: object, tp: type) -> bool:
    if not isinstance(value, bool):
        raise SerializationError(
            f"expected a JSON boolean (true or false), got {show(value)} ({type(value).__name__})",
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
            f"expected an ISO 8601 date-time, got {show(value)}", value=value, type_name="datetime"
        ) from None
    if parsed.tzinfo is None:
        raise SerializationError(
            f"expected a timezone-aware date-time (with an offset such as +00:00), got {show(value)}",
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
converter.register_structure_hook(enum.Enum, _strict_enum)


def _literal_hook(tp: Any) -> Callable[[object, object], object]:
    choices: tuple[object, ...] = get_args(tp)
    known = ", ".join(repr(c.value if isinstance(c, enum.Enum) else c) for c in choices)

    def structure_literal(value: object, _: object) -> object:
        for choice in choices:
            plain = choice.value if isinstance(choice, enum.Enum) else choice
            if type(plain) is type(value) and plain == value:
                return choice
        raise SerializationError(
            f"expected one of {known}, got {show(value)} ({type(value).__name__})",
            value=value,
            type_name="Literal",
        )

    return structure_literal


def _array_hook(
    factory: Callable[[Any, Any], Callable[[Any, Any], Any]],
) -> Callable[[Any], Callable[[object, object], object]]:
    """Wrap a cattrs sequence hook: only a JSON array (list or tuple) is a sequence."""

    def make(tp: Any) -> Callable[[object, object], object]:
        inner = factory(tp, converter)

        def structure_array(value: object, t: object) -> object:
            if not isinstance(value, (list, tuple)):
                raise SerializationError(
                    f"expected a JSON array for {_type_name(tp)}, got {show(value)} "
                    f"({type(value).__name__})",
                    value=value,
                    type_name=_type_name(tp),
                )
            return inner(value, t)

        return structure_array

    return make


def _fixed_tuple_hook(tp: Any) -> Callable[[object, object], object]:
    items: tuple[Any, ...] = get_args(tp)
    hooks = [converter.get_structure_hook(item) for item in items]

    def structure_tuple(value: object, _: object) -> tuple[object, ...]:
        if not isinstance(value, (list, tuple)) or len(value) != len(items):
            raise SerializationError(
                f"expected a JSON array of exactly {len(items)} items for {_type_name(tp)}, "
                f"got {show(value)}",
                value=value,
                type_name=_type_name(tp),
            )
        out: list[object] = []
        errors: list[Exception] = []
        for index, (item, hook, item_type) in enumerate(zip(value, hooks, items)):
            try:
                out.append(hook(item, item_type))
            except Exception as exc:
                note = IterableValidationNote(f"Structuring {tp} @ index {index}", index, item_type)
                exc.__notes__ = [*getattr(exc, "__notes__", []), note]
                errors.append(exc)
        if errors:
            raise cattrs.IterableValidationError(f"While structuring {tp!r}", errors, tp)
        return tuple(out)

    return structure_tuple


def _json_object_only(
    tp: Any, inner: Callable[[Any, Any], object]
) -> Callable[[object, object], object]:
    """``inner`` behind a check that the value is a JSON object (never a list of pairs)."""

    def structure_object(value: object, t: object) -> object:
        if not isinstance(value, Mapping):
            raise SerializationError(
                f"expected a JSON object for {_type_name(tp)}, got {show(value)} "
                f"({type(value).__name__})",
                value=value,
                type_name=_type_name(tp),
            )
        return inner(value, t)

    return structure_object


def _object_hook(tp: Any) -> Callable[[object, object], object]:
    return _json_object_only(tp, mapping_structure_factory(tp, converter))


_LISTS = (list, collections.abc.Sequence, collections.abc.MutableSequence)
_MAPPINGS = (dict, collections.abc.Mapping, collections.abc.MutableMapping)


def _origin(tp: object) -> object:
    return get_origin(tp) or tp


def _is_union(tp: object) -> bool:
    return get_origin(tp) in (Union, types.UnionType)


def _union_hook(tp: Any) -> Callable[[object, object], object]:
    members: tuple[Any, ...] = get_args(tp)

    def structure_union(value: object, _: object) -> object:
        if value is None:
            if type(None) in members:
                return None
        failures: list[str] = []
        for member in members:
            if member is type(None):
                continue
            try:
                return converter.structure(value, member)
            except _FAILURES as exc:
                failures.append(f"not {_type_name(member)}: " + "; ".join(_flatten(exc)))
        expected = _type_name(tp)
        raise SerializationError(
            f"expected {expected}, got {show(value)} ({type(value).__name__}) ("
            + "; ".join(failures)
            + ")",
            value=value,
            type_name=expected,
        )

    return structure_union


def _is_literal(tp: Any) -> bool:
    return get_origin(tp) is Literal


def _is_list(tp: Any) -> bool:
    return _origin(tp) in _LISTS and tp not in _LISTS


def _is_variadic_tuple(tp: Any) -> bool:
    args = get_args(tp)
    return get_origin(tp) is tuple and len(args) == 2 and args[1] is ...


def _is_fixed_tuple(tp: Any) -> bool:
    return get_origin(tp) is tuple and not _is_variadic_tuple(tp)


def _is_mapping(tp: Any) -> bool:
    return _origin(tp) in _MAPPINGS and tp not in _MAPPINGS


converter.register_structure_hook_factory(_is_literal, _literal_hook)
converter.register_structure_hook_factory(_is_list, _array_hook(list_structure_factory))
converter.register_structure_hook_factory(
    _is_variadic_tuple, _array_hook(homogenous_tuple_structure_factory)
)
converter.register_structure_hook_factory(_is_fixed_tuple, _fixed_tuple_hook)
converter.register_structure_hook_factory(_is_mapping, _object_hook)
converter.register_structure_hook_factory(_is_union, _union_hook)


def _attrs_hook(tp: Any) -> Callable[[object, object], object]:
    return _json_object_only(tp, make_dict_structure_fn(tp, converter, _cattrs_forbid_extra_keys=True))


def _is_new_type(tp: Any) -> bool:
    return hasattr(tp, "__supertype__")


def _new_type_hook(tp: Any) -> Callable[[object, object], object]:
    """``SessionId``: its base type's hook, with the NewType's name in messages."""
    base = converter.get_structure_hook(tp.__supertype__)

    def structure_new_type(value: object, _: object) -> object:
        return base(value, tp)

    return structure_new_type


converter.register_structure_hook_factory(_is_new_type, _new_type_hook)


def _is_attrs(tp: Any) -> bool:
    return isinstance(tp, type) and attrs.has(tp)


converter.register_structure_hook_factory(_is_attrs, _attrs_hook)

_TAGS: dict[type, tuple[str, str]] = {}


def register_tagged(cls: type, tag_name: str) -> None:
    """Unstructure ``cls`` with its tag field (``init=False``) and check it on the way in."""
    tag_value = attrs.fields_dict(cls)[tag_name].default
    assert isinstance(tag_value, str)
    _TAGS[cls] = (tag_name, tag_value)
    base_unstructure: Callable[[Any], dict[str, Any]] = make_dict_unstructure_fn(cls, converter)
    # built on first use, so that fields typed with a tagged union (``trigger:
    # SpawnTrigger``) pick up the union hooks registered after this call
    base_structure: list[Callable[[Mapping[str, Any], Any], Any]] = []

    def unstructure_tagged(value: Any) -> dict[str, Any]:
        data: dict[str, Any] = {tag_name: tag_value}
        data.update(base_unstructure(value))
        return data

    def structure_tagged(value: object, _: type) -> Any:
        if not isinstance(value, Mapping):
            raise SerializationError(
                f"expected a JSON object for {cls.__name__}, got {show(value)}",
                value=value,
                type_name=cls.__name__,
            )
        found = value.get(tag_name, None)
        if found != tag_value:
            raise SerializationError(
                f"expected {tag_name!r} = {tag_value!r} for {cls.__name__}, got {show(found)} in {show(value)}",
                value=value,
                type_name=cls.__name__,
            )
        rest = {k: v for k, v in value.items() if k != tag_name}
        if not base_structure:
            base_structure.append(
                make_dict_structure_fn(cls, converter, _cattrs_forbid_extra_keys=True)
            )
        return base_structure[0](rest, cls)

    converter.register_unstructure_hook(cls, unstructure_tagged)
    converter.register_structure_hook(cls, structure_tagged)


def _register_union(union: object, name: str) -> None:
    members: tuple[type, ...] = get_args(union)
    tag_name = _TAGS[members[0]][0]
    by_tag = {_TAGS[m][1]: m for m in members}
    known = ", ".join(repr(t) for t in by_tag)

    def structure_union(value: object, _: object) -> Any:
        if not isinstance(value, Mapping):
            raise SerializationError(
                f"expected a JSON object for {name}, got {show(value)}", value=value, type_name=name
            )
        if tag_name not in value:
            raise SerializationError(
                f"{name} needs a {tag_name!r} key (one of {known}), got {show(value)}",
                value=value,
                type_name=name,
            )
        tag = value[tag_name]
        member = by_tag.get(tag) if isinstance(tag, str) else None
        if member is None:
            raise SerializationError(
                f"unknown {name} {tag_name} {show(tag)} in {show(value)}; expected one of {known}",
                value=value,
                type_name=name,
            )
        return converter.structure(value, member)

    # a predicate registered after the generic union hook takes precedence over it
    converter.register_structure_hook_func(lambda t: t == union, structure_union)
    converter.register_unstructure_hook(union, lambda value: converter.unstructure(value, type(value)))


def _tag_fields(tp: Any) -> bool:
    """An attrs class with a tag field (``init=False``, a str default): an event, a record."""
    return (
        isinstance(tp, type)
        and attrs.has(tp)
        and any(not f.init and isinstance(f.default, str) for f in attrs.fields(tp))
    )


# Any tagged class the SDK does not register itself (the host's events, say) is still
# written with its tag: a reader must be able to tell the kinds apart.
converter.register_unstructure_hook_factory(
    _tag_fields, lambda cls: make_dict_unstructure_fn(cls, converter, _cattrs_include_init_false=True)
)

_KIND_TAGGED: tuple[type, ...] = (
    RootLineage,
    SpawnLineage,
    ForkLineage,
    CommandTrigger,
    ToolTrigger,
    UserAuthor,
    ModAuthor,
    HostAuthor,
    Allow,
    Deny,
)
for _cls in _KIND_TAGGED:
    register_tagged(_cls, "kind")
for _cls in (AiPromptMessage, AiNotificationMessage):
    register_tagged(_cls, "type")
_register_union(RootLineage | SpawnLineage | ForkLineage, "AiSessionLineage")
_register_union(CommandTrigger | ToolTrigger, "SpawnTrigger")
_register_union(UserAuthor | ModAuthor, "Author")
_register_union(UserAuthor | ModAuthor | HostAuthor, "MemoryAuthor")
_register_union(AiPromptMessage | AiNotificationMessage, "AiMessage")
_register_union(Allow | Deny, "HookDecision")


# Frozen JSON (a tool's input schema, as a declaration holds it) is written as plain JSON
# and read back frozen.
converter.register_unstructure_hook(JsonArray, thaw)
converter.register_unstructure_hook(types.MappingProxyType, thaw)
converter.register_unstructure_hook_func(lambda tp: tp == FrozenJsonObject, thaw_object)
converter.register_structure_hook_func(
    lambda tp: tp == FrozenJsonObject, lambda value, _: freeze_object(value)
)
converter.register_structure_hook_func(lambda tp: tp == FrozenJsonValue, lambda value, _: freeze(value))
converter.register_unstructure_hook_func(lambda tp: tp == FrozenJsonValue, thaw)

# Anything a hook raises means "this value does not fit": cattrs' own errors, our
# SerializationError, and whatever an attrs validator of an input type raises.
_FAILURES = (Exception,)


def _step(note: object) -> str:
    if isinstance(note, AttributeValidationNote):
        return f".{note.name}"
    if isinstance(note, IterableValidationNote):
        return f"[{show(note.index)}]"
    return ""


def _flatten(exc: BaseException, path: str = "") -> list[str]:
    """One line per leaf error, prefixed with the field path (``field 'a.b[2]': ...``)."""
    if isinstance(exc, BaseExceptionGroup):
        lines: list[str] = []
        for sub in exc.exceptions:
            steps = "".join(_step(n) for n in reversed(getattr(sub, "__notes__", [])))
            lines += _flatten(sub, path + steps)
        return lines
    if isinstance(exc, SerializationError):
        line = str(exc)
    elif isinstance(exc, cattrs.ForbiddenExtraKeysError):
        line = f"unknown keys {show(sorted(exc.extra_fields))}; remove them"
    elif isinstance(exc, cattrs.StructureHandlerNotFoundError):
        line = (
            f"{_safe_type_name(exc.type_)} is not a type the SDK reads; pass one of its classes "
            "(AiPromptMessage, ForkLineage ...), a union alias (AiMessage ...) or an attrs class"
        )
    elif isinstance(exc, KeyError):
        where = path.lstrip(".") or str(exc.args[0])
        return [f"field {where!r} is required but missing"]
    else:
        line = f"{type(exc).__name__}: {exc}"
    where = path.lstrip(".")
    return [f"field {where!r}: {line}" if where else line]


def _safe_type_name(tp: object) -> str:
    try:
        return _type_name(tp)
    except Exception:  # a junk "type" whose name or args cannot be read
        return show(tp)


def structure(value: object, tp: object) -> Any:
    """Structure plain JSON data into ``tp``; raises `SerializationError`.

    The message names the field (``field 'items[2].count': expected a JSON integer, got
    '1' (str)``); the host uses it for tool inputs: ``structure(data, tool.input_type)``.
    Data nested more than `MAX_DEPTH` levels deep, text with a lone surrogate and
    integers too long to write are refused before anything recurses into them.
    """
    name = _safe_type_name(tp)
    check_json_data(value, name)
    try:
        return converter.structure(value, tp)  # type: ignore[arg-type]  # unions, aliases
    except SerializationError:
        raise
    except _FAILURES as exc:
        lines = _flatten(exc)
        raise SerializationError(
            f"cannot read {show(value)} as {name}: " + "; ".join(lines), value=value, type_name=name
        ) from None


def unstructure(value: object) -> Any:
    """Plain JSON data (dicts, lists, str, numbers) for one of our values.

    Raises `SerializationError` for data that could not be stored as JSON text (see
    `structure`), before recursing into it.
    """
    check_json_data(value, type(value).__name__)
    try:
        return converter.unstructure(value)
    except Exception as exc:  # an unstructure hook that cannot handle the value
        raise SerializationError(
            f"cannot write {show(value)} ({type(value).__name__}) as JSON data: "
            f"{type(exc).__name__}: {exc}",
            value=value,
            type_name=type(value).__name__,
        ) from None


def to_json(value: object) -> str:
    """Serialize a message, author, lineage, trigger or decision to JSON (sorted keys).

    A tagged value is written with its tag (``kind`` or ``type``), a host's events included,
    so a reader can tell the kinds apart. Raises `SerializationError` for a value with no JSON form.

    >>> to_json(RootLineage())
    '{"kind": "root"}'
    """
    data = unstructure(value)
    try:
        return json.dumps(data, sort_keys=True, ensure_ascii=False)
    except (TypeError, ValueError) as exc:  # an object json cannot write; unsortable keys
        raise SerializationError(
            f"cannot write {show(value)} ({type(value).__name__}) as JSON: {exc}; "
            "pass one of the SDK's values (a message, author, lineage, trigger or decision) "
            "or plain JSON data",
            value=value,
            type_name=type(value).__name__,
        ) from None


INT_RANGE = (-(2**63), 2**63 - 1)
"""The integers JSON text from outside may hold: the signed 64-bit range.

What every store column and most JSON readers in other languages hold exactly; a longer
number of digits would also cost time to convert (quadratic in its length).
"""

_MAX_INT_DIGITS = 19  # 9223372036854775807 = 2**63 - 1: no integer in range has more digits


class _RefusedNumber(Exception):
    """Raised inside ``json.loads`` by the number hooks; `load_json` words it."""

    def __init__(self, text: str, why: str) -> None:
        super().__init__(why)
        self.text = text
        self.why = why


def _shown_number(text: str) -> str:
    if len(text) <= 40:
        return repr(text)
    return f"{text[:20]!r}...({len(text)} characters)"


def _json_int(text: str) -> int:
    digits = len(text) - text.startswith("-")
    if digits > _MAX_INT_DIGITS:  # refused before int() converts it (quadratic in its length)
        raise _RefusedNumber(text, f"an integer of {digits} digits, outside the signed 64-bit range")
    value = int(text)
    if not INT_RANGE[0] <= value <= INT_RANGE[1]:
        raise _RefusedNumber(text, "an integer outside the signed 64-bit range (-2**63 to 2**63-1)")
    return value


def _json_float(text: str) -> float:
    value = float(text)  # float() is linear in the text: no digit limit to fear
    if not math.isfinite(value):
        raise _RefusedNumber(text, "a number too large for a float (it overflows to infinity)")
    return value


def _json_constant(text: str) -> object:
    raise _RefusedNumber(text, "not a JSON number (JSON has no NaN or infinities)")


def parse_json_text(text: str) -> Any:
    """``json.loads`` with the numbers rule: the one reader of JSON text from outside.

    Accepts integers in `INT_RANGE` and finite floats; refuses longer integers, floats
    that overflow, ``NaN``, ``Infinity`` and ``-Infinity`` (``json`` accepts all of them).
    Raises ``json.JSONDecodeError``, ``RecursionError`` or `SerializationError` (a
    number); callers that word their own messages catch those three. Linear in the text.
    """
    try:
        return json.loads(text, parse_int=_json_int, parse_float=_json_float, parse_constant=_json_constant)
    except _RefusedNumber as refused:
        raise SerializationError(
            f"the number {_shown_number(refused.text)} is {refused.why}; numbers "
            "must fit a 64-bit integer or a finite float (send longer numbers as strings)",
            value=refused.text,
            type_name="JSON number",
        ) from None


def load_json(text: object, type_name: str) -> object:
    """Parse JSON text (``str``, or ``bytes`` in UTF-8, -16 or -32) into plain data.

    Raises `SerializationError` for anything else: not text, bytes that do not decode,
    text that is not JSON, nesting too deep to parse, and numbers JSON readers cannot all
    hold: integers outside the signed 64-bit range, floats that overflow, ``NaN`` and
    infinities (see `parse_json_text`).
    """
    if isinstance(text, (bytes, bytearray)):
        raw = bytes(text)
        try:
            text = raw.decode(json.detect_encoding(raw))
        except UnicodeDecodeError as exc:
            raise SerializationError(
                f"the JSON bytes for {type_name} are not {exc.encoding}: {exc.reason} at byte "
                f"{exc.start} ({show(raw[exc.start : exc.start + 8])}); send UTF-8 text",
                value=raw,
                type_name=type_name,
            ) from None
    if not isinstance(text, str):
        raise SerializationError(
            f"expected JSON text (str or bytes) for {type_name}, got {show(text)} "
            f"({type(text).__name__}); to read data you already parsed, structure it instead",
            value=text,
            type_name=type_name,
        )
    try:
        return parse_json_text(text)
    except json.JSONDecodeError as exc:
        raise SerializationError(f"not JSON: {exc}", value=text, type_name=type_name) from None
    except RecursionError:
        raise SerializationError(
            f"the JSON for {type_name} is nested more than {MAX_DEPTH} levels deep (arrays "
            "and objects inside each other); flatten it",
            value=text,
            type_name=type_name,
        ) from None
    except SerializationError as exc:
        raise SerializationError(f"the JSON for {type_name} is refused: {exc}", value=text, type_name=type_name) from None


@overload
def from_json(text: str | bytes, tp: type[T]) -> T: ...
@overload
def from_json(text: str | bytes, tp: object) -> object: ...
def from_json(text: str | bytes, tp: object) -> object:
    """Read JSON written by `to_json` back as ``tp`` (a class or a union alias).

    Raises `SerializationError` naming the offending value: unknown or missing ``kind`` /
    ``type`` tags, wrong JSON types (never coerced), unknown keys; text that is not JSON or
    not text at all, bytes that are not UTF-8 (or UTF-16/32); data nested more than 100
    levels deep, text with a lone surrogate, numbers `parse_json_text` refuses (integers
    beyond 64 bits, floats that overflow, NaN, infinities).
    """
    return structure(load_json(text, _safe_type_name(tp)), tp)

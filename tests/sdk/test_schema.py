"""A tool's ``input_type`` becomes a JSON Schema that accepts exactly what the host reads.

Every schema is checked against the draft 2020-12 meta-schema, real instances (unstructured
by the converter, through JSON text) validate, and what the schema rejects the converter
refuses too.
"""

from __future__ import annotations

import enum
import json
import re
from collections.abc import Mapping, Sequence
from datetime import UTC, date, datetime
from typing import Annotated, Any, Generic, Literal, NewType, Optional, TypeVar, cast

import attrs
import jsonschema
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from modular_sdk import SerializationError, SessionId
from modular_sdk._json import structure, unstructure
from modular_sdk._schema import DRAFT, JsonObject, SchemaError, json_schema

relaxed = settings(deadline=None, max_examples=60)


def validator(schema: JsonObject) -> Any:
    jsonschema.Draft202012Validator.check_schema(schema)
    return jsonschema.Draft202012Validator(schema)


def as_json(value: object) -> Any:
    """What the host would send the model and get back: real JSON text."""
    return json.loads(json.dumps(unstructure(value)))


# -- input types a mod author writes ----------------------------------------------------


class Priority(enum.Enum):
    """How urgent a task is."""

    LOW = "low"
    HIGH = "high"


class Level(enum.IntEnum):
    ONE = 1
    TWO = 2


class Weight(enum.Enum):
    LIGHT = 0.5


Label = NewType("Label", str)


@attrs.frozen(kw_only=True)
class Step:
    """One step of a plan."""

    title: str = attrs.field(metadata={"description": "What to do, in a few words"})
    done: bool = False


@attrs.frozen(kw_only=True)
class Plan:
    """A plan the model proposes.

    It has steps.
    """

    goal: str
    steps: list[Step]
    priority: Priority = Priority.LOW
    level: Level = Level.ONE
    mode: Literal["draft", "final"] = "draft"
    estimate: float | None = None
    tags: tuple[str, ...] = ()
    span: tuple[int, int] = (0, 1)
    notes: dict[str, str] = attrs.Factory(dict)
    owner: Optional[Label] = None
    due: datetime | None = None
    session: SessionId | None = None
    size: Annotated[int, "tokens"] = 0


@attrs.frozen(kw_only=True)
class Tree:
    """A node of a tree."""

    name: str
    children: list[Tree] = attrs.Factory(list)


@attrs.frozen(kw_only=True)
class Ping:
    pong: Pong | None = None


@attrs.frozen(kw_only=True)
class Pong:
    ping: Ping | None = None


@attrs.frozen(kw_only=True)
class Options:
    verbose: bool = False
    depth: int = 2


@attrs.frozen(kw_only=True)
class WithFactories:
    items: list[int] = attrs.Factory(list)
    step: Step = attrs.Factory(lambda: Step(title="first"))
    options: Options = attrs.Factory(Options)
    stamp: str = attrs.Factory(lambda: datetime.now(UTC).isoformat())
    copy: str = attrs.Factory(lambda self: "x", takes_self=True)
    computed: str = attrs.field(init=False, default="never read")


@attrs.frozen(kw_only=True)
class Empty:
    pass


# -- shapes ---------------------------------------------------------------------------


def typed(annotation: object) -> Any:
    """An attrs field of this annotation, for `attrs.make_class`."""
    return attrs.field(type=cast(type, annotation))


def property_schema(annotation: object) -> object:
    cls = attrs.make_class("Shape", {"value": typed(annotation)})
    properties = json_schema(cls)["properties"]
    assert isinstance(properties, dict)
    return properties["value"]


@pytest.mark.parametrize(
    ("annotation", "expected"),
    [
        (str, {"type": "string"}),
        (int, {"type": "integer"}),
        (float, {"type": "number"}),
        (bool, {"type": "boolean"}),
        (type(None), {"type": "null"}),
        (datetime, {"type": "string", "format": "date-time"}),
        (Literal["a"], {"const": "a"}),
        (Literal["a", 1, True, None], {"enum": ["a", 1, True, None]}),
        (Literal[Priority.HIGH], {"const": "high"}),
        (Level, {"enum": [1, 2]}),
        (Priority, {"enum": ["low", "high"], "description": "How urgent a task is."}),
        (list[str], {"type": "array", "items": {"type": "string"}}),
        (Sequence[int], {"type": "array", "items": {"type": "integer"}}),
        (tuple[str, ...], {"type": "array", "items": {"type": "string"}}),
        (
            tuple[int, str],
            {
                "type": "array",
                "prefixItems": [{"type": "integer"}, {"type": "string"}],
                "items": False,
                "minItems": 2,
                "maxItems": 2,
            },
        ),
        (dict[str, int], {"type": "object", "additionalProperties": {"type": "integer"}}),
        (Mapping[Label, bool], {"type": "object", "additionalProperties": {"type": "boolean"}}),
        (Optional[int], {"anyOf": [{"type": "integer"}, {"type": "null"}]}),
        (int | str, {"anyOf": [{"type": "integer"}, {"type": "string"}]}),
        (Label, {"type": "string"}),
        (Annotated[int, "meta"], {"type": "integer"}),
        (list[list[float]], {"type": "array", "items": {"type": "array", "items": {"type": "number"}}}),
        (Step, {"$ref": "#/$defs/Step"}),
    ],
    ids=str,
)
def test_each_annotation_has_its_json_schema(annotation: object, expected: object) -> None:
    assert property_schema(annotation) == expected


def test_a_class_becomes_a_closed_object_with_required_fields_and_defaults() -> None:
    schema = json_schema(Step)
    assert schema == {
        "$schema": DRAFT,
        "type": "object",
        "title": "Step",
        "description": "One step of a plan.",
        "properties": {
            "title": {"type": "string", "description": "What to do, in a few words"},
            "done": {"type": "boolean", "default": False},
        },
        "required": ["title"],
        "additionalProperties": False,
    }
    validator(schema)


def test_a_docstring_is_cleaned_into_the_description() -> None:
    assert json_schema(Plan)["description"] == "A plan the model proposes.\n\nIt has steps."


def test_a_class_without_docstring_or_fields_has_neither_description_nor_required() -> None:
    schema = json_schema(Empty)
    assert "description" not in schema
    assert "required" not in schema
    assert schema["properties"] == {}
    assert validator(schema).is_valid({})
    assert not validator(schema).is_valid({"x": 1})


def test_defaults_are_given_in_their_json_form() -> None:
    properties = json_schema(Plan)["properties"]
    assert isinstance(properties, dict)
    assert properties["priority"] == {
        "enum": ["low", "high"],
        "description": "How urgent a task is.",
        "default": "low",
    }
    assert properties["tags"] == {"type": "array", "items": {"type": "string"}, "default": []}
    assert properties["span"]["default"] == [0, 1]  # type: ignore[index,call-overload]
    assert properties["notes"]["default"] == {}  # type: ignore[index,call-overload]
    assert properties["level"]["default"] == 1  # type: ignore[index,call-overload]


def test_factories_give_defaults_only_when_they_are_deterministic_classes() -> None:
    schema = json_schema(WithFactories)
    properties = schema["properties"]
    assert isinstance(properties, dict)
    assert properties["items"] == {"type": "array", "items": {"type": "integer"}, "default": []}
    assert properties["options"] == {"$ref": "#/$defs/Options", "default": {"verbose": False, "depth": 2}}
    assert "default" not in properties["step"]  # type: ignore[operator]  # a lambda: not called
    assert "default" not in properties["stamp"]  # type: ignore[operator]  # would change every call
    assert "default" not in properties["copy"]  # type: ignore[operator]  # takes_self
    assert "computed" not in properties  # init=False: never read from JSON
    assert "required" not in schema
    assert json_schema(WithFactories) == schema


def test_a_nested_class_is_defined_once_and_referenced() -> None:
    schema = json_schema(Plan)
    assert schema["properties"]["steps"] == {"type": "array", "items": {"$ref": "#/$defs/Step"}}  # type: ignore[index,call-overload]
    assert list(schema["$defs"]) == ["Step"]  # type: ignore[arg-type]
    assert schema["$defs"]["Step"]["required"] == ["title"]  # type: ignore[index,call-overload]


def test_a_class_that_contains_itself_refers_to_the_root() -> None:
    schema = json_schema(Tree)
    assert schema["properties"]["children"] == {  # type: ignore[index,call-overload]
        "type": "array",
        "items": {"$ref": "#"},
        "default": [],
    }
    assert "$defs" not in schema
    check = validator(schema)
    deep = Tree(name="a", children=[Tree(name="b", children=[Tree(name="c")])])
    check.validate(as_json(deep))
    assert not check.is_valid({"name": "a", "children": [{"name": "b", "children": [{"name": 3}]}]})


def test_mutually_recursive_classes_are_described_through_defs() -> None:
    schema = json_schema(Ping)
    assert schema["$defs"] == {
        "Pong": {
            "type": "object",
            "title": "Pong",
            "properties": {"ping": {"anyOf": [{"$ref": "#"}, {"type": "null"}], "default": None}},
            "additionalProperties": False,
        }
    }
    check = validator(schema)
    value = Ping(pong=Pong(ping=Ping(pong=Pong())))
    check.validate(as_json(value))
    assert structure(as_json(value), Ping) == value


def test_two_classes_with_one_name_get_distinct_definitions() -> None:
    def make(kind: type) -> type:
        return attrs.make_class("Item", {"value": typed(kind)})

    first, second = make(int), make(str)
    outer = attrs.make_class("Outer", {"a": typed(first), "b": typed(second)})
    schema = json_schema(outer)
    defs = schema["$defs"]
    assert isinstance(defs, dict)
    assert len(defs) == 2
    check = validator(schema)
    assert check.is_valid({"a": {"value": 1}, "b": {"value": "x"}})
    assert not check.is_valid({"a": {"value": "x"}, "b": {"value": "x"}})


def test_string_annotations_are_resolved_in_the_module_of_the_class() -> None:
    # this module uses `from __future__ import annotations`: every annotation is a string
    assert isinstance(attrs.fields(Plan).steps.type, str)
    assert json_schema(Plan)["properties"]["goal"] == {"type": "string"}  # type: ignore[index,call-overload]


def test_the_schema_is_deterministic() -> None:
    assert json.dumps(json_schema(Plan)) == json.dumps(json_schema(Plan))


# -- real instances validate; what the schema rejects the converter refuses -------------

PLAN = Plan(
    goal="ship it",
    steps=[Step(title="write tests", done=True), Step(title="fix bugs")],
    priority=Priority.HIGH,
    level=Level.TWO,
    mode="final",
    estimate=2.5,
    tags=("a", "b"),
    span=(3, 4),
    notes={"why": "because"},
    owner=Label("ada"),
    due=datetime(2025, 1, 2, 3, 4, 5, tzinfo=UTC),
    session=SessionId("s-1"),
    size=12,
)


def test_a_real_plan_validates_and_structures_back() -> None:
    check = validator(json_schema(Plan))
    data = as_json(PLAN)
    check.validate(data)
    assert structure(data, Plan) == PLAN


def test_the_smallest_plan_validates() -> None:
    data = {"goal": "g", "steps": []}
    validator(json_schema(Plan)).validate(data)
    assert structure(data, Plan) == Plan(goal="g", steps=[])


BAD_PLANS: list[tuple[str, dict[str, object], str]] = [
    ("missing goal", {"steps": []}, "field 'goal' is required but missing"),
    ("unknown key", {"goal": "g", "steps": [], "colour": "red"}, "unknown keys ['colour']; remove them"),
    ("int as str", {"goal": 1, "steps": []}, "field 'goal': expected a JSON string for str, got 1 (int)"),
    ("str as int", {"goal": "g", "steps": [], "size": "1"}, "field 'size': expected a JSON integer, got '1' (str)"),
    ("bool as int", {"goal": "g", "steps": [], "size": True}, "field 'size': expected a JSON integer, got True (bool)"),
    ("str as bool", {"goal": "g", "steps": [{"title": "t", "done": "yes"}]}, "field 'steps[0].done': expected a JSON boolean (true or false), got 'yes' (str)"),
    ("unknown enum", {"goal": "g", "steps": [], "priority": "urgent"}, "field 'priority': expected one of 'low', 'high' for Priority, got 'urgent' (str)"),
    ("bool as int enum", {"goal": "g", "steps": [], "level": True}, "field 'level': expected one of 1, 2 for Level, got True (bool)"),
    ("unknown literal", {"goal": "g", "steps": [], "mode": "done"}, "field 'mode': expected one of 'draft', 'final', got 'done' (str)"),
    ("string as list", {"goal": "g", "steps": "ab"}, "field 'steps': expected a JSON array for list[Step], got 'ab' (str)"),
    ("object as list", {"goal": "g", "steps": {}}, "field 'steps': expected a JSON array"),
    ("short tuple", {"goal": "g", "steps": [], "span": [1]}, "field 'span': expected a JSON array of exactly 2 items for tuple[int, int], got [1]"),
    ("long tuple", {"goal": "g", "steps": [], "span": [1, 2, 3]}, "field 'span': expected a JSON array of exactly 2 items"),
    ("bad tuple item", {"goal": "g", "steps": [], "span": [1, "2"]}, "field 'span[1]': expected a JSON integer, got '2' (str)"),
    ("list as dict", {"goal": "g", "steps": [], "notes": ["x"]}, "field 'notes': expected a JSON object for dict[str, str], got ['x'] (list)"),
    ("bad dict value", {"goal": "g", "steps": [], "notes": {"k": 1}}, "field \"notes['k']\": expected a JSON string for str, got 1 (int)"),
    ("bad nested", {"goal": "g", "steps": [{"title": "t"}, {"done": True}]}, "field 'steps[1].title' is required but missing"),
    ("nested extra", {"goal": "g", "steps": [{"title": "t", "x": 1}]}, "field 'steps[0]': unknown keys ['x']; remove them"),
    ("nested not object", {"goal": "g", "steps": ["t"]}, "field 'steps[0]': expected a JSON object for Step, got 't' (str)"),
    ("bad optional", {"goal": "g", "steps": [], "estimate": "2"}, "field 'estimate': expected float | None, got '2' (str) (not float: expected a JSON number, got '2' (str))"),
    ("number as session id", {"goal": "g", "steps": [], "session": 5}, "field 'session': expected SessionId | None, got 5 (int) (not SessionId: expected a JSON string for SessionId, got 5 (int))"),
]


@pytest.mark.parametrize(("data", "message"), [(d, m) for _, d, m in BAD_PLANS], ids=[n for n, _, _ in BAD_PLANS])
def test_what_the_schema_rejects_the_converter_refuses_naming_the_field(data: dict[str, object], message: str) -> None:
    assert not validator(json_schema(Plan)).is_valid(data)
    with pytest.raises(SerializationError, match=re.escape(message)) as info:
        structure(data, Plan)
    assert info.value.value == data
    assert info.value.type_name == "Plan"


def test_a_naive_date_time_is_refused_by_the_converter() -> None:
    with pytest.raises(SerializationError, match=re.escape("field 'due': expected datetime | None")):
        structure({"goal": "g", "steps": [], "due": "2025-01-02T03:04:05"}, Plan)


def test_an_int_is_a_valid_float() -> None:
    data = {"goal": "g", "steps": [], "estimate": 2}
    validator(json_schema(Plan)).validate(data)
    assert structure(data, Plan).estimate == 2.0


# -- hypothesis: generated instances validate against their schema ------------------------

finite = st.floats(allow_nan=False, allow_infinity=False)
aware = st.datetimes(timezones=st.just(UTC))
steps = st.builds(Step, title=st.text(max_size=10), done=st.booleans())
plans = st.builds(
    Plan,
    goal=st.text(max_size=20),
    steps=st.lists(steps, max_size=3),
    priority=st.sampled_from(Priority),
    level=st.sampled_from(Level),
    mode=st.sampled_from(["draft", "final"]),
    estimate=st.none() | finite,
    tags=st.lists(st.text(max_size=5), max_size=3).map(tuple),
    span=st.tuples(st.integers(), st.integers()),
    notes=st.dictionaries(st.text(max_size=5), st.text(max_size=5), max_size=3),
    owner=st.none() | st.text(max_size=5).map(Label),
    due=st.none() | aware,
    session=st.none() | st.text(max_size=5).map(SessionId),
    size=st.integers(),
)
trees = st.recursive(
    st.builds(Tree, name=st.text(max_size=5)),
    lambda inner: st.builds(Tree, name=st.text(max_size=5), children=st.lists(inner, max_size=3)),
    max_leaves=10,
)

PLAN_VALIDATOR = validator(json_schema(Plan))
TREE_VALIDATOR = validator(json_schema(Tree))


@relaxed
@given(plans)
def test_every_plan_validates_against_its_schema_and_reads_back(plan: Plan) -> None:
    data = as_json(plan)
    PLAN_VALIDATOR.validate(data)
    assert structure(data, Plan) == plan


@relaxed
@given(trees)
def test_every_tree_validates_against_its_schema_and_reads_back(tree: Tree) -> None:
    data = as_json(tree)
    TREE_VALIDATOR.validate(data)
    assert structure(data, Tree) == tree


@relaxed
@given(plans, st.sampled_from(["goal", "steps", "size", "mode", "span", "notes", "priority"]), st.sampled_from([None, 1.5, "x", [], {}, True]))
def test_the_schema_and_the_converter_agree_on_a_changed_field(plan: Plan, key: str, replacement: object) -> None:
    data = as_json(plan)
    data[key] = replacement
    valid = PLAN_VALIDATOR.is_valid(data)
    try:
        structure(data, Plan)
    except SerializationError:
        assert not valid
    else:
        assert valid


# -- what has no JSON representation ------------------------------------------------------


class Opaque:
    pass


@pytest.mark.parametrize(
    ("annotation", "shown", "instead"),
    [
        (bytes, "bytes", "use str (for binary data, base64 text)"),
        (set[int], "set[int]", "use list[X] or tuple[X, ...] (JSON has no sets)"),
        (frozenset[str], "frozenset[str]", "use list[X] or tuple[X, ...] (JSON has no sets)"),
        (Any, "Any", "use a concrete type: str, int, float, bool, an attrs class, or a union of them"),
        (object, "object", "use a concrete type: str, int, float, bool, an attrs class, or a union of them"),
        (date, "datetime.date", "use datetime (an ISO 8601 date-time with an offset) or str"),
        (Opaque, "Opaque", "make it an attrs class (@attrs.frozen) or use str, int, float, bool, list, dict"),
        (list, "list", "give the item type: list[str], tuple[int, ...]"),
        (dict, "dict", "use dict[str, X]: JSON object keys are strings"),
    ],
    ids=str,
)
def test_a_type_with_no_json_form_is_refused_with_what_to_use(annotation: object, shown: str, instead: str) -> None:
    cls = attrs.make_class("Upload", {"payload": typed(annotation)})
    with pytest.raises(SchemaError) as info:
        json_schema(cls)
    assert str(info.value) == f"Upload.payload: {shown} has no JSON representation; {instead}"
    assert info.value.cls is cls
    assert info.value.field == "payload"
    assert info.value.type == annotation
    assert isinstance(info.value, ValueError)


def test_a_dict_with_int_keys_is_refused() -> None:
    cls = attrs.make_class("Counts", {"by_id": typed(dict[int, str])})
    with pytest.raises(SchemaError) as info:
        json_schema(cls)
    assert str(info.value) == "Counts.by_id: dict[int, str] has int keys; use dict[str, X]: JSON object keys are strings"


def test_a_nested_offender_is_named_inside_the_field_annotation() -> None:
    cls = attrs.make_class("Batch", {"files": typed(list[bytes | None])})
    with pytest.raises(SchemaError) as info:
        json_schema(cls)
    assert str(info.value) == (
        "Batch.files: bytes (in list[bytes | None]) has no JSON representation; "
        "use str (for binary data, base64 text)"
    )
    assert info.value.type is bytes


def test_an_enum_with_float_values_is_refused() -> None:
    cls = attrs.make_class("Load", {"weight": typed(Weight)})
    with pytest.raises(SchemaError) as info:
        json_schema(cls)
    assert str(info.value) == (
        "Load.weight: Weight has the value 0.5 (LIGHT), not a str or int; "
        "give the enum str or int values, or use Literal[...]"
    )


def test_every_bad_field_is_reported_at_once() -> None:
    cls = attrs.make_class("Upload", {"data": typed(bytes), "tags": typed(set[str]), "name": typed(str)})
    with pytest.raises(SchemaError) as info:
        json_schema(cls)
    assert str(info.value) == (
        "Upload has 2 fields with no JSON representation:\n"
        "  - Upload.data: bytes has no JSON representation; use str (for binary data, base64 text)\n"
        "  - Upload.tags: set[str] has no JSON representation; use list[X] or tuple[X, ...] (JSON has no sets)"
    )
    assert len(info.value.problems) == 2
    assert info.value.field == "data"


def test_a_bad_field_of_a_nested_class_names_that_class() -> None:
    inner = attrs.make_class("Attachment", {"content": typed(bytes)})
    outer = attrs.make_class("Mail", {"attachments": typed(cast(Any, list)[inner])})
    with pytest.raises(SchemaError, match=r"^Attachment\.content: bytes has no JSON representation") as info:
        json_schema(outer)
    assert info.value.cls is inner


T = TypeVar("T")


@attrs.frozen
class Page(Generic[T]):
    items: list[T]


def test_a_parametrized_generic_class_is_refused() -> None:
    cls = attrs.make_class("Search", {"page": typed(Page[int])})
    with pytest.raises(SchemaError, match=r"^Search\.page: Page\[int\] is a parametrized generic attrs class; declare a non-generic attrs class"):
        json_schema(cls)


def test_an_unresolvable_annotation_says_where_to_define_the_type() -> None:
    @attrs.frozen
    class Local:
        other: Missing  # type: ignore[name-defined]  # noqa: F821

    with pytest.raises(SchemaError) as info:
        json_schema(Local)
    assert str(info.value) == (
        "cannot resolve the annotations of "
        "test_an_unresolvable_annotation_says_where_to_define_the_type.<locals>.Local "
        "(NameError: name 'Missing' is not defined); define every type it names at module "
        "level, before the class or imported (not inside a function or under `if TYPE_CHECKING:`)"
    )
    assert info.value.cls is Local


@pytest.mark.parametrize("not_attrs", [dict, int, Opaque, "Plan", None])
def test_the_input_type_itself_must_be_an_attrs_class(not_attrs: Any) -> None:
    with pytest.raises(SchemaError, match=r"input_type must be an attrs class, got .*; decorate it with @attrs.frozen") as info:
        json_schema(not_attrs)
    assert info.value.type is not_attrs

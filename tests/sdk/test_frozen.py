"""Frozen means frozen: no dict, list or set is reachable from a declaration."""

from __future__ import annotations

import json
import types
from collections.abc import Iterator, Mapping
from datetime import UTC, datetime
from enum import Enum
from typing import Literal

import attrs
import pytest

from modular_sdk import (
    ActionEvent,
    AiContributions,
    AiNotificationMessage,
    AiPromptMessage,
    AiSessionDisplayMetadata,
    Allow,
    CommandContext,
    CommandTrigger,
    Deny,
    EffectContext,
    ForkLineage,
    ModAuthor,
    ModDefinitionError,
    ModMetadata,
    SerializationError,
    SessionId,
    SlashCommandContext,
    SpawnLineage,
    ToolContext,
    ToolTrigger,
    agent,
    before_action,
    command,
    define_mod,
    effect,
    slash_command,
    to_json,
    tool,
    view,
)
from modular_sdk._frozen import JsonArray, freeze, freeze_object, thaw
from modular_sdk._schema import json_schema


class Level(Enum):
    LOW = "low"
    HIGH = "high"


@attrs.frozen
class Step:
    """One step of a plan."""

    name: str
    tags: list[str] = attrs.field(factory=list)
    children: list[Step] = attrs.field(factory=list)


@attrs.frozen
class PlanInput:
    """Plan some work."""

    title: str = attrs.field(metadata={"description": "What the plan is for"})
    steps: list[Step] = attrs.field(factory=list)
    weights: dict[str, float] = attrs.field(factory=dict)
    pair: tuple[int, str] = (1, "a")
    level: Level = Level.LOW
    mode: Literal["fast", "slow"] = "fast"
    limit: int | None = None


def run_task(argument: str | None, ctx: SlashCommandContext) -> str:
    return argument or ""


def open_panel(ctx: CommandContext) -> None:
    return None


def plan(value: PlanInput, ctx: ToolContext) -> str:
    return value.title


def allow(event: ActionEvent) -> Allow:
    return Allow()


async def watch(ctx: EffectContext) -> None:
    return None


def render(data: object) -> str:
    return str(data)


MOD = define_mod(
    metadata=ModMetadata(display_name="Planner", description="Plans work"),
    commands=[
        slash_command(id="plan", description="Plan work", run=run_task, argument_hint="<goal>"),
        command(id="plan.open", title="Open plans", run=open_panel),
    ],
    ai=AiContributions(
        tools=[tool(name="plan", description="Make a plan", input_type=PlanInput, run=plan)],
        agents=[agent(id="planner", description="Plans", model="m", instructions="Plan well")],
    ),
    hooks=[before_action("session.fork", allow), before_action("command:plan", allow)],
    effects=[effect(id="watch", activate=watch)],
    views=[view(id="plans", title="Plans", render=render)],
)
NOW = datetime(2025, 1, 2, 3, 4, 5, tzinfo=UTC)
VALUES: list[object] = [
    MOD,
    AiPromptMessage(text="hi"),
    AiNotificationMessage(title="Build", body="green"),
    AiSessionDisplayMetadata(label="Chat", icon="star"),
    ActionEvent(action="session.fork", session_id=SessionId("s-1"), author=ModAuthor(mod_id="m", command_id="c")),
    Deny(reason="no"),
    SpawnLineage(
        parent_session_id=SessionId("s-1"),
        parent_chat_uri="chat://s-1",
        depth=1,
        spawned_at=NOW,
        trigger=ToolTrigger(mod_id="m", tool_name="t", call_id="c"),
    ),
    ForkLineage(
        parent_session_id=SessionId("s-1"),
        parent_turn_ordinal=0,
        parent_runner_id="r",  # type: ignore[arg-type]
        depth=1,
        forked_at=NOW,
    ),
    CommandTrigger(mod_id="m", command_id="c"),
]

# What a declaration may hold: immutable values, and the author's own code (handlers and
# input types), which the walk does not enter.
IMMUTABLE = (str, int, float, bool, type(None), datetime, Enum, tuple, types.MappingProxyType)


def reachable(value: object, path: str = "") -> Iterator[tuple[str, object]]:
    """Every value reachable from ``value`` through attrs fields, tuples and mappings."""
    yield path, value
    if callable(value):  # a handler, an input type: the author's code
        return
    cls = type(value)
    if attrs.has(cls):
        for field in attrs.fields(cls):
            yield from reachable(getattr(value, field.name), f"{path}.{field.name}")
    elif isinstance(value, tuple):
        for index, item in enumerate(value):
            yield from reachable(item, f"{path}[{index}]")
    elif isinstance(value, Mapping):
        for key, item in value.items():
            yield from reachable(key, f"{path}<key {key!r}>")
            yield from reachable(item, f"{path}[{key!r}]")


@pytest.mark.parametrize("value", VALUES, ids=lambda v: type(v).__name__)
def test_no_mutable_container_is_reachable_from_a_declaration(value: object) -> None:
    seen = list(reachable(value))
    assert len(seen) > 1
    mutable = [
        (path, type(item).__name__)
        for path, item in seen
        if isinstance(item, (dict, list, set, bytearray)) or not (callable(item) or attrs.has(type(item)) or isinstance(item, IMMUTABLE))
    ]
    assert mutable == []
    for path, item in seen:
        if attrs.has(type(item)):
            assert getattr(type(item).__setattr__, "__name__", "") == "_frozen_setattrs", path


def test_the_walk_reaches_into_the_tool_schema() -> None:
    paths = [path for path, _ in reachable(MOD)]
    assert ".ai.tools[0].input_schema['$defs']['Step']['properties']['children']['items']" in paths
    assert ".ai.tools[0].input_schema['required'][0]" in paths


def test_the_walk_finds_a_dict_hidden_in_a_declaration() -> None:
    @attrs.frozen
    class Leaky:
        data: tuple[object, ...]

    found = [path for path, item in reachable(Leaky(data=(1, types.MappingProxyType({"a": [1]})))) if isinstance(item, list)]
    assert found == [".data[1]['a']"]


def test_a_tool_schema_cannot_be_changed() -> None:
    schema = MOD.ai.tools[0].input_schema
    with pytest.raises(TypeError):
        schema["title"] = "changed"  # type: ignore[index]
    required = schema["required"]
    assert isinstance(required, tuple)
    with pytest.raises(AttributeError):
        required.append("x")  # type: ignore[attr-defined]


def test_a_frozen_schema_is_the_same_json_as_the_plain_one() -> None:
    schema = MOD.ai.tools[0].input_schema
    plain = json_schema(PlanInput)
    assert schema == plain
    assert plain == schema
    assert thaw(schema) == plain
    assert json.loads(to_json(schema)) == plain
    assert json.dumps(thaw(schema), sort_keys=True) == json.dumps(plain, sort_keys=True)


def test_thaw_gives_a_fresh_plain_copy_each_call() -> None:
    schema = MOD.ai.tools[0].input_schema
    first = thaw(schema)
    assert isinstance(first, dict) and isinstance(first["required"], list)
    first["title"] = "changed"
    assert thaw(schema) != first
    assert schema["title"] == "PlanInput"


def test_a_json_array_equals_lists_and_tuples_of_equal_items() -> None:
    array = JsonArray(("a", JsonArray((1, 2))))
    assert array == ["a", [1, 2]]
    assert ["a", [1, 2]] == array
    assert array == ("a", (1, 2))
    assert array != ["a", [1, 3]]
    assert not (array != ["a", [1, 2]])
    assert hash(array) == hash(("a", (1, 2)))
    assert json.dumps(array) == '["a", [1, 2]]'


def test_freeze_refuses_what_is_not_json_data() -> None:
    with pytest.raises(SerializationError, match=r"holds \{1, 2\} \(set\), which is not JSON data"):
        freeze({"a": {1, 2}})
    with pytest.raises(SerializationError, match=r"has the key 1 \(int\); JSON object keys are strings"):
        freeze({1: "a"})
    with pytest.raises(SerializationError, match=r"holds nan, which JSON cannot represent"):
        freeze([float("nan")])
    with pytest.raises(SerializationError, match=r"expected a JSON object for the schema, got \[\] \(list\)"):
        freeze_object([], type_name="the schema")


def test_freeze_refuses_a_cycle_as_too_deep() -> None:
    cycle: list[object] = []
    cycle.append(cycle)
    with pytest.raises(SerializationError, match="nested more than 100 levels deep"):
        freeze(cycle)


def test_an_input_type_whose_schema_holds_a_lone_surrogate_is_refused_at_the_call() -> None:
    @attrs.frozen
    class Odd:
        x: int = attrs.field(metadata={"description": "odd \ud800 text"})

    def run(value: Odd, ctx: ToolContext) -> None:
        return None

    with pytest.raises(ModDefinitionError, match="lone surrogate") as info:
        tool(name="odd", description="Odd", input_type=Odd, run=run)
    assert info.value.field == "input_type"

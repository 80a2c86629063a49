"""Bad input gets our errors: the field, the value and what to do, never a builtin's crash.

The cases an outside tester found (issue 9); `test_bad_input_properties.py` generalises them.
"""

from __future__ import annotations

import json
import re
from datetime import datetime
from typing import Any

import attrs
import pytest

from modular_sdk import (
    ActionEvent,
    AiContributions,
    AiNotificationMessage,
    AiPromptMessage,
    AiSessionDisplayMetadata,
    AiSessionLineage,
    Allow,
    CommandContext,
    CommandTrigger,
    Deny,
    ForkLineage,
    ModAuthor,
    ModDefinitionError,
    ModMetadata,
    RootLineage,
    SerializationError,
    SessionId,
    SlashCommandContext,
    SpawnLineage,
    ToolTrigger,
    UserAuthor,
    agent,
    before_action,
    command,
    define_mod,
    from_json,
    slash_command,
    to_json,
)
from modular_sdk._json import structure, unstructure
from modular_sdk._rules import MAX_DEPTH, show

METADATA = ModMetadata(display_name="Tasks", description="Run tasks")
SURROGATE = "bad \ud800 text"


def run_task(argument: str | None, ctx: SlashCommandContext) -> None:
    return None


def open_panel(ctx: CommandContext) -> None:
    return None


def nested(depth: int, leaf: object = "x") -> object:
    value = leaf
    for _ in range(depth):
        value = [value]
    return value


# -- collections that are not collections ------------------------------------------------


@pytest.mark.parametrize("field", ["commands", "hooks", "effects", "views"])
@pytest.mark.parametrize("value", [5, None, "task", {"task": 1}, b"ab"], ids=repr)
def test_define_mod_names_a_collection_field_given_no_collection(field: str, value: object) -> None:
    with pytest.raises(ModDefinitionError, match=rf"{field} must be a list or tuple of declarations made by .*pass {field}=\[\.\.\.\]") as info:
        arguments: dict[str, Any] = {field: value}
        define_mod(metadata=METADATA, **arguments)
    assert info.value.field == field
    assert info.value.value == value


def test_every_collection_problem_is_reported_at_once() -> None:
    with pytest.raises(ModDefinitionError, match="has 4 problems") as info:
        define_mod(metadata=METADATA, commands=5, hooks=3, effects=None, views="abc")  # type: ignore[arg-type]
    assert [p.field for p in info.value.problems] == ["commands", "hooks", "effects", "views"]


@pytest.mark.parametrize("field", ["tools", "agents"])
def test_ai_contributions_names_a_collection_field_given_no_collection(field: str) -> None:
    with pytest.raises(ModDefinitionError, match=rf"^AiContributions: {field} must be a list or tuple") as info:
        arguments: dict[str, Any] = {field: 5}
        AiContributions(**arguments)
    assert (info.value.field, info.value.value) == (field, 5)


def test_ai_contributions_checks_its_items_at_its_call() -> None:
    with pytest.raises(ModDefinitionError, match=r"agents\[1\] must be made by agent, got 'x' \(str\)") as info:
        AiContributions(agents=[agent(id="a", description="A"), "x"])  # type: ignore[list-item]
    assert info.value.field == "agents[1]"


def test_a_generator_is_a_collection() -> None:
    mod = define_mod(metadata=METADATA, commands=(c for c in [command(id="open", title="Open", run=open_panel)]))  # type: ignore[arg-type]
    assert [c.id for c in mod.commands] == ["open"]


# -- values whose repr would crash the message ---------------------------------------------


class Unprintable:
    def __repr__(self) -> str:
        raise RuntimeError("no repr")


@pytest.mark.parametrize(
    "value",
    [nested(5000), 10**5000, Unprintable()],
    ids=["nested 5,000 deep", "5,001 digits", "repr raises"],
)
def test_a_message_survives_any_value(value: object) -> None:
    with pytest.raises(ModDefinitionError, match=r"description must be a str, got .{1,200} \(") as info:
        slash_command(id="task", description=value, run=run_task)  # type: ignore[arg-type]
    assert info.value.value is value


def test_show_shortens_and_never_raises() -> None:
    assert show("task") == "'task'"
    assert show([1, (2,), {"a": None}]) == "[1, (2,), {'a': None}]"
    assert show(10**5000) == f"<int of {(10**5000).bit_length()} bits>"
    assert show(Unprintable()).startswith("<")
    assert len(show("x" * 10_000)) < 200
    assert len(show(nested(5000))) < 50


# -- text that cannot be stored -------------------------------------------------------------


@pytest.mark.parametrize(
    ("make", "field"),
    [
        (lambda: AiPromptMessage(text=SURROGATE), "text"),
        (lambda: AiNotificationMessage(title=SURROGATE, body="b"), "title"),
        (lambda: AiNotificationMessage(title="t", body=SURROGATE), "body"),
        (lambda: AiSessionDisplayMetadata(label=SURROGATE), "label"),
        (lambda: AiSessionDisplayMetadata(label="Chat", icon=SURROGATE), "icon"),
        (lambda: ModAuthor(mod_id=SURROGATE), "mod_id"),
        (lambda: ModAuthor(mod_id="m", tool_name=SURROGATE), "tool_name"),
        (lambda: CommandTrigger(mod_id="m", command_id=SURROGATE), "command_id"),
        (lambda: ToolTrigger(mod_id="m", tool_name="t", call_id=SURROGATE), "call_id"),
        (lambda: Deny(reason=SURROGATE), "reason"),
        (lambda: ActionEvent(action=SURROGATE, session_id=None, author=UserAuthor()), "action"),
    ],
    ids=lambda v: v if isinstance(v, str) else None,
)
def test_values_refuse_a_lone_surrogate_naming_the_field(make: Any, field: str) -> None:
    with pytest.raises(ModDefinitionError, match=rf"\.{field} 'bad \\ud800 text' holds the lone surrogate '\\ud800' at index 4, which cannot be stored as UTF-8; remove it") as info:
        make()
    assert isinstance(info.value, ValueError)
    assert (info.value.field, info.value.value) == (field, SURROGATE)


@pytest.mark.parametrize(
    ("make", "field"),
    [
        (lambda: ModMetadata(display_name=SURROGATE, description="d"), "metadata.display_name"),
        (lambda: ModMetadata(display_name="d", description=SURROGATE), "metadata.description"),
        (lambda: slash_command(id="t", description=SURROGATE, run=run_task), "description"),
        (lambda: slash_command(id="t", description="d", run=run_task, argument_hint=SURROGATE), "argument_hint"),
        (lambda: command(id="t", title=SURROGATE, run=open_panel), "title"),
        (lambda: agent(id="a", description="d", instructions=SURROGATE), "instructions"),
        (lambda: before_action(SURROGATE, lambda event: Allow()), "target"),
        (lambda: slash_command(id="t\ud800", description="d", run=run_task), "id"),
    ],
    ids=lambda v: v if isinstance(v, str) else None,
)
def test_declarations_refuse_a_lone_surrogate_naming_the_field(make: Any, field: str) -> None:
    with pytest.raises(ModDefinitionError, match=r"\\ud800") as info:
        make()
    assert info.value.field == field


# -- constructors that raised TypeError or a plain ValueError -------------------------------


@pytest.mark.parametrize(
    ("make", "message", "field"),
    [
        (lambda: AiPromptMessage(text=5), r"^AiPromptMessage\.text must be a str, got 5 \(int\); pass some text$", "text"),  # type: ignore[arg-type]
        (lambda: AiNotificationMessage(title=" ", body=""), r"^AiNotificationMessage\.title must not be empty, got ' '; pass some text$", "title"),
        (lambda: AiSessionDisplayMetadata(label="", icon=None), r"^AiSessionDisplayMetadata\.label must not be empty", "label"),
        (lambda: AiSessionDisplayMetadata(label="Chat", icon=3), r"^AiSessionDisplayMetadata\.icon must be a str or None, got 3 \(int\)", "icon"),  # type: ignore[arg-type]
        (lambda: ModAuthor(mod_id=None), r"^ModAuthor\.mod_id must be a str, got None \(NoneType\)", "mod_id"),  # type: ignore[arg-type]
        (lambda: Deny(reason=""), r"^Deny\.reason must not be empty, got ''; say why the action is refused$", "reason"),
        (lambda: ActionEvent(action="session.fork", session_id=None, author="me"), r"^ActionEvent\.author must be a UserAuthor or a ModAuthor, got 'me' \(str\)$", "author"),  # type: ignore[arg-type]
        (lambda: CommandTrigger(mod_id=1, command_id="c"), r"^CommandTrigger\.mod_id must be a str, got 1 \(int\)", "mod_id"),  # type: ignore[arg-type]
        (
            lambda: SpawnLineage(parent_session_id=SessionId("s"), parent_chat_uri="c", depth=0, spawned_at=datetime.now(), trigger=None),  # type: ignore[arg-type]
            r"^SpawnLineage\.depth must be an int >= 1 \(a child is one deeper than its parent\), got 0$",
            "depth",
        ),
        (
            lambda: ForkLineage(parent_session_id=SessionId("s"), parent_turn_ordinal=-1, parent_runner_id="r", depth=1, forked_at=datetime.now()),  # type: ignore[arg-type]
            r"^ForkLineage\.parent_turn_ordinal must be an int >= 0, got -1$",
            "parent_turn_ordinal",
        ),
    ],
    ids=lambda v: v if isinstance(v, str) and not v.startswith("^") else None,
)
def test_values_refuse_bad_fields_with_a_mod_definition_error(make: Any, message: str, field: str) -> None:
    with pytest.raises(ModDefinitionError, match=message) as info:
        make()
    assert info.value.field == field


def test_a_spawn_trigger_of_the_wrong_type_is_named() -> None:
    with pytest.raises(ModDefinitionError, match=r"SpawnLineage\.trigger must be a CommandTrigger or a ToolTrigger, got 'cmd' \(str\)"):
        SpawnLineage(
            parent_session_id=SessionId("s"),
            parent_chat_uri="c",
            depth=1,
            spawned_at=datetime.fromisoformat("2025-01-01T00:00:00+00:00"),
            trigger="cmd",  # type: ignore[arg-type]
        )


# -- the JSON loaders ------------------------------------------------------------------------


def test_from_json_refuses_json_nested_five_thousand_deep() -> None:
    with pytest.raises(SerializationError, match=r"^the JSON for RootLineage \| SpawnLineage \| ForkLineage is nested more than 100 levels deep") as info:
        from_json("[" * 5000 + "]" * 5000, AiSessionLineage)
    assert info.value.type_name == "RootLineage | SpawnLineage | ForkLineage"


def test_from_json_refuses_json_deeper_than_the_limit_that_json_could_parse() -> None:
    text = json.dumps({"kind": "root", "x": nested(MAX_DEPTH)})
    with pytest.raises(SerializationError, match=r"the data at \$\['x'\]\[0\]\[0\]\[0\]\[0\]\[0\]\.\.\.\(9\d more\) is nested more than 100 levels deep"):
        from_json(text, RootLineage)


def test_data_at_the_limit_reaches_the_converter() -> None:
    with pytest.raises(SerializationError, match="unknown keys") as info:
        from_json(json.dumps({"kind": "root", "x": nested(MAX_DEPTH - 1)}), RootLineage)
    assert "nested more than" not in str(info.value)


@pytest.mark.parametrize("raw", [b"\xff\xfe\xfa", b'{"kind": "root\xff"}', b'"\xed\xa0\x80"'], ids=repr)
def test_from_json_refuses_bytes_that_do_not_decode(raw: bytes) -> None:
    with pytest.raises(SerializationError, match=r"^the JSON bytes for RootLineage are not utf-(8|16-le): .* at byte \d+ .*; send UTF-8 text$") as info:
        from_json(raw, RootLineage)
    assert info.value.value == raw


def test_from_json_refuses_an_integer_over_4300_digits() -> None:
    with pytest.raises(SerializationError, match=r"an integer of 5000 digits, outside the signed 64-bit range.*send longer numbers as strings"):
        from_json('{"kind": "fork", "depth": ' + "1" * 5000 + "}", AiSessionLineage)


@pytest.mark.parametrize(
    ("number", "why"),
    [
        (str(2**63), r"an integer outside the signed 64-bit range \(-2\*\*63 to 2\*\*63-1\)"),
        (str(-(2**63) - 1), r"an integer outside the signed 64-bit range \(-2\*\*63 to 2\*\*63-1\)"),
        ("1" * 20, r"an integer of 20 digits, outside the signed 64-bit range"),
        ("1e999", r"a number too large for a float \(it overflows to infinity\)"),
        ("-1e400", r"a number too large for a float \(it overflows to infinity\)"),
        ("NaN", r"not a JSON number \(JSON has no NaN or infinities\)"),
        ("Infinity", r"not a JSON number \(JSON has no NaN or infinities\)"),
        ("-Infinity", r"not a JSON number \(JSON has no NaN or infinities\)"),
    ],
)
def test_from_json_refuses_a_number_json_readers_cannot_all_hold(number: str, why: str) -> None:
    with pytest.raises(SerializationError, match=rf"^the JSON for ForkLineage is refused: the number {re.escape(repr(number[:20]))}.* is {why}; numbers must fit a 64-bit integer or a finite float") as info:
        from_json('{"kind": "fork", "depth": ' + number + "}", ForkLineage)
    assert info.value.type_name == "ForkLineage"


def test_from_json_reads_every_64_bit_integer_and_finite_float() -> None:
    from modular_sdk._json import load_json

    assert load_json(f"[{2**63 - 1}, {-(2**63)}, 1.7976931348623157e308, -0.0, 5e-324]", "X") == [2**63 - 1, -(2**63), 1.7976931348623157e308, -0.0, 5e-324]


@pytest.mark.parametrize("text", [None, 5, ["{}"], object()], ids=["None", "5", "a list", "an object"])
def test_from_json_refuses_what_is_not_text(text: Any) -> None:
    with pytest.raises(SerializationError, match=r"^expected JSON text \(str or bytes\) for RootLineage, got .*; to read data you already parsed, structure it instead$"):
        from_json(text, RootLineage)


def test_from_json_refuses_escaped_lone_surrogates() -> None:
    with pytest.raises(SerializationError, match=r"^the text '\\ud800' at \$\['text'\] holds the lone surrogate"):
        from_json('{"type": "prompt", "text": "\\ud800"}', AiPromptMessage)


def test_from_json_names_a_type_it_cannot_read() -> None:
    with pytest.raises(SerializationError, match=r"^cannot read \{\} as 5: 5 is not a type the SDK reads"):
        from_json("{}", 5)


# -- structure and unstructure, as the host uses them ------------------------------------------


@attrs.frozen
class SearchInput:
    pattern: str
    max_results: int = 5


def test_structure_refuses_a_tool_input_nested_five_thousand_deep_before_recursing() -> None:
    deep = {"pattern": nested(5000)}
    with pytest.raises(SerializationError, match=r"^the data at \$\['pattern'\]\[0\]\[0\]\[0\]\[0\]\[0\]\.\.\.\(\d+ more\) is nested more than 100 levels deep") as info:
        structure(deep, SearchInput)
    assert info.value.type_name == "SearchInput"
    assert info.value.value is deep


def test_structure_refuses_a_cycle() -> None:
    cycle: dict[str, object] = {}
    cycle["pattern"] = cycle
    with pytest.raises(SerializationError, match="nested more than 100 levels deep"):
        structure(cycle, SearchInput)


@pytest.mark.parametrize(
    ("value", "message"),
    [
        ({"pattern": "a\udc80b"}, r"the text 'a\\udc80b' at \$\['pattern'\] holds the lone surrogate '\\udc80' at index 1"),
        ({"pat\ud800": "a"}, r"the key 'pat\\ud800' at \$ holds the lone surrogate"),
        ({"pattern": "a", "max_results": 10**5000}, r"the integer at \$\['max_results'\] has more than the 4300 digits Python writes as text"),
    ],
    ids=["surrogate text", "surrogate key", "huge int"],
)
def test_structure_refuses_data_that_could_not_be_stored(value: object, message: str) -> None:
    with pytest.raises(SerializationError, match=message):
        structure(value, SearchInput)


def test_unstructure_and_to_json_refuse_deep_data_before_recursing() -> None:
    with pytest.raises(SerializationError, match="nested more than 100 levels deep"):
        unstructure({"a": nested(5000)})
    with pytest.raises(SerializationError, match="nested more than 100 levels deep"):
        to_json(nested(5000))


def test_to_json_refuses_a_value_with_no_json_form() -> None:
    with pytest.raises(SerializationError, match=r"^cannot write <object object at .*> \(object\) as JSON: Object of type object is not JSON serializable; pass one of the SDK's values"):
        to_json(object())


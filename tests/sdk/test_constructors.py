"""Each constructor checks its own fields at the call, and returns frozen, comparable data.

Read as a mod author's first afternoon: every mistake below is one a newcomer makes, and
the error says what was wrong, with the value, and what to write instead.
"""

from __future__ import annotations

import re
from typing import Any

import attrs
import pytest

from modular_sdk import (
    ActionEvent,
    Allow,
    CommandContext,
    EffectContext,
    ModDefinitionError,
    ModMetadata,
    SlashCommandContext,
    ToolContext,
    agent,
    before_action,
    command,
    effect,
    slash_command,
    tool,
    view,
)

# -- handlers a mod author writes ------------------------------------------------------


async def run_task(argument: str | None, ctx: SlashCommandContext) -> str:
    return f"started {argument}"


def open_panel(ctx: CommandContext) -> None:
    return None


@attrs.frozen(kw_only=True)
class SearchInput:
    """Search the repository."""

    query: str
    limit: int = 10


async def search(input: SearchInput, ctx: ToolContext) -> str:
    return input.query


def allow_all(event: ActionEvent) -> Allow:
    return Allow()


async def watch(ctx: EffectContext) -> None:
    return None


def render_count(data: int) -> str:
    return str(data)


def two_args(a: object, b: object) -> None:
    return None


def one_arg(a: object) -> None:
    return None


def no_args() -> None:
    return None


def keyword_only(*, ctx: object) -> None:
    return None


def flexible(*args: object) -> None:
    return None


def with_default(argument: object, ctx: object, extra: object = None) -> None:
    return None


class CallableObject:
    def __call__(self, argument: str | None, ctx: SlashCommandContext) -> None:
        return None


ID_RULE = re.escape("(pattern [a-z][a-z0-9._-]*)")


# -- ids ------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "bad_id",
    ["Task", "9lives", "-task", "my task", "task!", "", "tâche", "_task", ".task", "TASK"],
)
def test_slash_command_refuses_ids_outside_the_id_pattern(bad_id: str) -> None:
    with pytest.raises(ModDefinitionError, match=ID_RULE) as info:
        slash_command(id=bad_id, description="Run work in the background", run=run_task)
    assert info.value.field == "id"
    assert info.value.value == bad_id
    assert isinstance(info.value, ValueError)


@pytest.mark.parametrize("good_id", ["task", "t", "task2", "my-task", "my_task", "my.task", "a-1.b_2"])
def test_slash_command_accepts_ids_in_the_id_pattern(good_id: str) -> None:
    assert slash_command(id=good_id, description="Run", run=run_task).id == good_id


def test_a_bad_id_error_suggests_the_slug() -> None:
    with pytest.raises(ModDefinitionError) as info:
        slash_command(id="Bad Id!", description="Run work", run=run_task)
    assert str(info.value) == (
        "slash_command(id='Bad Id!'): slash command id 'Bad Id!' is not a valid id: use "
        "lowercase letters, digits, '.', '_' and '-', starting with a letter "
        "(pattern [a-z][a-z0-9._-]*); try 'bad-id'"
    )


def test_an_id_with_no_usable_slug_says_to_start_with_a_letter() -> None:
    with pytest.raises(ModDefinitionError, match="start with a lowercase letter") as info:
        command(id="42", title="Answer", run=open_panel)
    assert info.value.field == "id"
    assert info.value.value == "42"


def test_a_non_string_id_is_refused_with_its_type() -> None:
    with pytest.raises(ModDefinitionError, match=r"id must be a str, got 42 \(int\)") as info:
        slash_command(id=42, description="Run", run=run_task)  # type: ignore[type-var]
    assert info.value.value == 42


@pytest.mark.parametrize(
    ("make", "field"),
    [
        (lambda i: command(id=i, title="Open", run=open_panel), "id"),
        (lambda i: tool(name=i, description="Search", input_type=SearchInput, run=search), "name"),
        (lambda i: agent(id=i, description="Reviews code"), "id"),
        (lambda i: effect(id=i, activate=watch), "id"),
        (lambda i: view(id=i, title="Count", render=render_count), "id"),
    ],
    ids=["command", "tool", "agent", "effect", "view"],
)
def test_every_constructor_checks_its_id(make: Any, field: str) -> None:
    with pytest.raises(ModDefinitionError, match=ID_RULE) as info:
        make("Not Valid")
    assert info.value.field == field
    assert info.value.value == "Not Valid"


# -- descriptions and titles ----------------------------------------------------------


@pytest.mark.parametrize("empty", ["", "   ", "\n\t"])
def test_slash_command_refuses_an_empty_description(empty: str) -> None:
    with pytest.raises(ModDefinitionError, match="description must not be empty") as info:
        slash_command(id="task", description=empty, run=run_task)
    assert info.value.field == "description"
    assert info.value.value == empty
    assert "write a short sentence for the user" in str(info.value)


@pytest.mark.parametrize(
    ("make", "field"),
    [
        (lambda text: command(id="open", title=text, run=open_panel), "title"),
        (lambda text: tool(name="search", description=text, input_type=SearchInput, run=search), "description"),
        (lambda text: agent(id="reviewer", description=text), "description"),
        (lambda text: view(id="count", title=text, render=render_count), "title"),
        (lambda text: ModMetadata(display_name="Tasks", description=text), "metadata.description"),
        (lambda text: ModMetadata(display_name=text, description="Tasks"), "metadata.display_name"),
    ],
    ids=["command.title", "tool.description", "agent.description", "view.title", "metadata.description", "metadata.display_name"],
)
def test_every_constructor_refuses_empty_text(make: Any, field: str) -> None:
    with pytest.raises(ModDefinitionError, match=f"{re.escape(field)} must not be empty, got ' '") as info:
        make(" ")
    assert info.value.field == field
    assert info.value.value == " "


def test_an_empty_argument_hint_is_refused_but_none_is_fine() -> None:
    assert slash_command(id="task", description="Run", run=run_task).argument_hint is None
    with pytest.raises(ModDefinitionError, match="argument_hint must not be empty") as info:
        slash_command(id="task", description="Run", run=run_task, argument_hint="")
    assert info.value.field == "argument_hint"


def test_an_agent_refuses_an_empty_model_or_instructions() -> None:
    with pytest.raises(ModDefinitionError, match="2 problems") as info:
        agent(id="reviewer", description="Reviews", model="", instructions=" ")
    assert [p.field for p in info.value.problems] == ["model", "instructions"]


# -- handlers --------------------------------------------------------------------------


@pytest.mark.parametrize("not_callable", [None, "run_task", 3, ["run"]])
def test_a_handler_that_is_not_callable_is_refused(not_callable: Any) -> None:
    with pytest.raises(ModDefinitionError, match=r"run must be a function \(def or async def\) called as run\(argument, ctx\)") as info:
        slash_command(id="task", description="Run", run=not_callable)
    assert info.value.field == "run"
    assert info.value.value is not_callable


@pytest.mark.parametrize(
    ("make", "field", "call"),
    [
        (lambda h: slash_command(id="task", description="Run", run=h), "run", "run(argument, ctx)"),
        (lambda h: command(id="open", title="Open", run=h), "run", "run(ctx)"),
        (lambda h: tool(name="search", description="Search", input_type=SearchInput, run=h), "run", "run(input, ctx)"),
        (lambda h: before_action("session.fork", h), "handle", "handle(event)"),
        (lambda h: effect(id="watch", activate=h), "activate", "activate(ctx)"),
        (lambda h: view(id="count", title="Count", render=h), "render", "render(data)"),
    ],
    ids=["slash", "palette", "tool", "hook", "effect", "view"],
)
@pytest.mark.parametrize("handler", [no_args, keyword_only], ids=["no-args", "keyword-only"])
def test_a_handler_that_cannot_take_the_lanes_arguments_is_refused(
    make: Any, field: str, call: str, handler: Any
) -> None:
    with pytest.raises(ModDefinitionError, match=re.escape(f"cannot be called as {call}")) as info:
        make(handler)
    assert info.value.field == field
    assert info.value.value is handler
    define = "def" if call.startswith("render") else "async def"  # views are pure functions
    assert f"define it as `{define} {call}`" in str(info.value)


def test_a_handler_with_too_many_parameters_is_refused() -> None:
    with pytest.raises(ModDefinitionError) as info:
        command(id="open", title="Open", run=two_args)  # type: ignore[arg-type]
    assert str(info.value) == (
        "command(id='open'): run two_args(a: 'object', b: 'object') -> 'None' cannot be called "
        "as run(ctx) (missing a required argument: 'b'); define it as `async def run(ctx)`"
    )


def test_a_slash_command_handler_taking_only_ctx_is_refused() -> None:
    with pytest.raises(ModDefinitionError, match=r"too many positional arguments") as info:
        slash_command(id="task", description="Run", run=one_arg)  # type: ignore[arg-type]
    assert info.value.field == "run"


@pytest.mark.parametrize("handler", [flexible, with_default, CallableObject(), lambda argument, ctx: None])
def test_handlers_that_can_take_the_arguments_are_accepted(handler: Any) -> None:
    assert slash_command(id="task", description="Run", run=handler).run is handler


def test_sync_and_async_handlers_are_both_accepted() -> None:
    def sync_run(argument: str | None, ctx: SlashCommandContext) -> None:
        return None

    assert slash_command(id="a", description="Run", run=sync_run).run is sync_run
    assert slash_command(id="b", description="Run", run=run_task).run is run_task


# -- tools ----------------------------------------------------------------------------


def test_a_tool_derives_the_json_schema_of_its_input_type() -> None:
    t = tool(name="search", description="Search the repo", input_type=SearchInput, run=search)
    assert t.input_schema["properties"] == {
        "query": {"type": "string"},
        "limit": {"type": "integer", "default": 10},
    }
    assert t.input_schema["required"] == ["query"]
    assert t.input_schema["description"] == "Search the repository."


def test_a_tool_input_type_must_be_an_attrs_class() -> None:
    with pytest.raises(ModDefinitionError) as info:
        tool(name="search", description="Search", input_type=dict, run=search)  # type: ignore[type-var, arg-type]
    assert str(info.value) == (
        "tool(name='search'): input_type must be an attrs class, got <class 'dict'>; "
        "decorate it with @attrs.frozen"
    )
    assert info.value.field == "input_type"
    assert info.value.value is dict


@attrs.frozen
class UploadInput:
    data: bytes
    tags: set[str]


def test_a_tool_input_type_with_non_json_fields_names_each_field() -> None:
    with pytest.raises(ModDefinitionError) as info:
        tool(name="upload", description="Upload", input_type=UploadInput, run=search)  # type: ignore[arg-type]
    assert info.value.field == "input_type"
    assert info.value.value is UploadInput
    message = str(info.value)
    assert "UploadInput.data: bytes has no JSON representation; use str" in message
    assert "UploadInput.tags: set[str] has no JSON representation; use list[X] or tuple[X, ...]" in message


def test_a_tool_reports_its_name_description_and_handler_problems_together() -> None:
    with pytest.raises(ModDefinitionError, match=r"tool\(name='Search'\) has 3 problems") as info:
        tool(name="Search", description="", input_type=SearchInput, run=no_args)  # type: ignore[arg-type]
    assert [p.field for p in info.value.problems] == ["name", "description", "run"]


# -- hooks ----------------------------------------------------------------------------


@pytest.mark.parametrize("target", ["", 3, None])
def test_a_hook_target_must_be_a_non_empty_string(target: Any) -> None:
    with pytest.raises(ModDefinitionError, match="hook target must be a host action or 'command:<id>'") as info:
        before_action(target, allow_all)
    assert info.value.field == "target"
    assert info.value.value == target


def test_a_hook_target_is_checked_against_the_mod_by_define_mod_not_at_the_call() -> None:
    hook = before_action("command:not-yet-declared", allow_all)
    assert hook.target == "command:not-yet-declared"


# -- frozen data, equality, evolve ----------------------------------------------------


def make_all() -> list[object]:
    return [
        ModMetadata(display_name="Tasks", description="Background tasks"),
        slash_command(id="task", description="Run", run=run_task, argument_hint="<what>"),
        command(id="open", title="Open", run=open_panel),
        tool(name="search", description="Search", input_type=SearchInput, run=search),
        agent(id="reviewer", description="Reviews", model="m", instructions="Be brief"),
        before_action("session.fork", allow_all),
        effect(id="watch", activate=watch),
        view(id="count", title="Count", render=render_count),
    ]


def test_equal_inputs_give_equal_declarations() -> None:
    first, second = make_all(), make_all()
    assert first == second
    assert [hash(d) for d in first] == [hash(d) for d in second]


@pytest.mark.parametrize("declaration", make_all(), ids=lambda d: type(d).__name__)
def test_declarations_are_frozen(declaration: Any) -> None:
    field = attrs.fields(type(declaration))[-1].name
    with pytest.raises(attrs.exceptions.FrozenInstanceError):
        setattr(declaration, field, "changed")


def test_evolve_gives_a_changed_copy() -> None:
    original = slash_command(id="task", description="Run", run=run_task)
    changed = attrs.evolve(original, description="Run it now")
    assert changed.description == "Run it now"
    assert original.description == "Run"


@pytest.mark.parametrize(
    ("declaration", "changes", "field"),
    [
        (slash_command(id="task", description="Run", run=run_task), {"id": "Task"}, "id"),
        (command(id="open", title="Open", run=open_panel), {"title": ""}, "title"),
        (tool(name="search", description="Search", input_type=SearchInput, run=search), {"input_type": UploadInput}, "input_type"),
        (agent(id="reviewer", description="Reviews"), {"description": " "}, "description"),
        (before_action("session.fork", allow_all), {"handle": no_args}, "handle"),
        (effect(id="watch", activate=watch), {"activate": 3}, "activate"),
        (view(id="count", title="Count", render=render_count), {"render": two_args}, "render"),
        (ModMetadata(display_name="Tasks", description="Tasks"), {"display_name": ""}, "metadata.display_name"),
    ],
    ids=lambda v: type(v).__name__ if attrs.has(type(v)) else None,
)
def test_evolve_validates_again(declaration: Any, changes: dict[str, object], field: str) -> None:
    with pytest.raises(ModDefinitionError) as info:
        attrs.evolve(declaration, **changes)
    assert info.value.field == field


def test_constructors_are_keyword_only() -> None:
    with pytest.raises(TypeError):
        slash_command("task", "Run", run_task)  # type: ignore[call-arg]
    for cls in (ModMetadata, type(command(id="open", title="Open", run=open_panel))):
        assert all(a.kw_only for a in attrs.fields(cls) if a.init)


def test_a_tool_schema_is_not_part_of_equality_but_follows_the_input_type() -> None:
    a = tool(name="search", description="Search", input_type=SearchInput, run=search)
    b = tool(name="search", description="Search", input_type=SearchInput, run=search)
    assert a == b
    assert a.input_schema == b.input_schema

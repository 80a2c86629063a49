"""Any junk given to any public constructor or loader of modular_sdk raises a ModularError.

For each constructor, the test starts from arguments that work and replaces one or more
of them with generated junk: None, numbers (NaN, 5,000-digit integers), text with lone
surrogates, bytes, containers nested up to 5,000 deep, cycles, objects whose ``repr``
raises, classes and functions. The call must either succeed or raise a `ModularError`;
``TypeError``, ``AttributeError``, ``RecursionError`` and friends from inside the library
fail the test. The same for `from_json`, `to_json`, `structure` and `unstructure`.

Calling with a keyword a function does not have is Python's own ``TypeError``, as for
any function, and is not tried here.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from datetime import UTC, datetime, timedelta, timezone
from typing import Any

import attrs
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import modular_sdk
from modular_sdk import (
    ActionContext,
    ActionEvent,
    AiContributions,
    AiNotificationMessage,
    AiPromptMessage,
    AiRunnerId,
    AiRunResult,
    AiSessionDisplayMetadata,
    Allow,
    CommandContext,
    CommandTrigger,
    Deny,
    EffectContext,
    ForkLineage,
    Mod,
    ModAuthor,
    ModDefinitionError,
    ModMetadata,
    ModularError,
    SessionId,
    SlashCommandContext,
    SpawnLineage,
    ToolCallRecord,
    ToolContext,
    ToolTrigger,
    Usage,
    UserAuthor,
    WidgetPlacement,
    action,
    agent,
    before_action,
    command,
    define_mod,
    effect,
    from_json,
    mcp_server,
    slash_command,
    to_json,
    tool,
    view,
    widget,
)
from modular_sdk._json import structure, unstructure

# cattrs compiles a hook on first use: no per-example deadline. Deep values are slow to
# generate by design.
junk_settings = settings(
    max_examples=40,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)


# -- junk -------------------------------------------------------------------------------


class Unprintable:
    """An object whose repr raises."""

    def __repr__(self) -> str:
        raise RuntimeError("no repr for you")


class Incomparable:
    """An object that refuses to be compared or hashed."""

    def __eq__(self, other: object) -> bool:
        raise RuntimeError("no comparing")

    def __hash__(self) -> int:
        raise RuntimeError("no hashing")


class SignatureRaises:
    """A callable whose ``__signature__`` raises (``inspect.signature`` lets that through)."""

    def __call__(self, *args: object) -> None:
        return None

    @property
    def __signature__(self) -> object:
        raise RuntimeError("no signature for you")


@attrs.frozen
class SearchInput:
    """Search the code."""

    pattern: str
    max_results: int = 5


def nest(depth: int, leaf: object, as_dict: bool) -> object:
    value = leaf
    for _ in range(depth):
        value = {"k": value} if as_dict else [value]
    return value


def cycle() -> object:
    loop: list[object] = []
    loop.append(loop)
    return loop


surrogates = st.characters(min_codepoint=0xD800, max_codepoint=0xDFFF)
any_text = st.text(st.characters(codec=None, exclude_categories=()), max_size=12)
bad_text = st.builds(lambda a, s, b: a + s + b, st.text(max_size=4), surrogates, st.text(max_size=4))
ids = st.sampled_from(["task", "a.b-c_d", "Task", "", " ", "session.fork", "command:task", "x" * 300])
scalars = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(),
    st.sampled_from([5000, -4400, 64]).map(lambda n: 10**n if n > 0 else -(10**-n)),  # over 4,300 digits
    st.floats(),
    any_text,
    bad_text,
    ids,
    st.binary(max_size=8),
    st.just(object()),
    st.builds(Unprintable),
    st.builds(SignatureRaises),
    st.builds(Incomparable),
    st.sampled_from([int, str, list, dict, SearchInput, Mod, type(None)]),
    st.sampled_from([len, print, lambda: None, lambda a, b, c: None]),
    st.just(datetime(2025, 1, 1)),
    st.just(datetime(2025, 1, 1, tzinfo=UTC)),
    st.just(UserAuthor()),
)
containers = st.recursive(
    scalars,
    lambda inner: st.one_of(
        st.lists(inner, max_size=3),
        st.tuples(inner, inner),
        st.dictionaries(st.one_of(any_text, bad_text, st.integers()), inner, max_size=3),
        st.frozensets(st.integers(), max_size=3),
    ),
    max_leaves=8,
)
deep = st.builds(nest, st.integers(min_value=95, max_value=5000), scalars, st.booleans())
junk = st.one_of(scalars, containers, deep, st.builds(cycle))


def refuses_only_with_our_errors(call: Callable[[], object]) -> object:
    """Run ``call``; any exception but a ModularError fails the test (with its type)."""
    try:
        return call()
    except ModularError as exc:
        assert str(exc), f"{type(exc).__name__} with an empty message"
        return exc


# -- the constructors, with arguments that work -------------------------------------------


def run_task(argument: str | None, ctx: SlashCommandContext) -> None:
    return None


def open_panel(ctx: CommandContext) -> None:
    return None


def search(value: SearchInput, ctx: ToolContext) -> str:
    return value.pattern


def allow(event: ActionEvent) -> Allow:
    return Allow()


async def watch(ctx: EffectContext) -> None:
    return None


def render(data: object) -> str:
    return str(data)


def create_task(payload: SearchInput, ctx: ActionContext) -> str:
    return payload.pattern


NOW = datetime(2025, 1, 2, 3, 4, 5, tzinfo=timezone(timedelta(hours=2)))
METADATA = ModMetadata(display_name="Tasks", description="Run tasks")
TASK = slash_command(id="task", description="Run a task", run=run_task)
SEARCH = tool(name="search", description="Search", input_type=SearchInput, run=search)

def render_found(data: SearchInput) -> str:
    return "found"


CREATE = action(type="task.create", description="Create a task", payload_type=SearchInput, run=create_task)

CONSTRUCTORS: dict[str, tuple[Callable[..., object], dict[str, object]]] = {
    "action": (action, {"type": "task.create", "description": "Create a task", "payload_type": SearchInput, "run": create_task}),
    "define_mod": (
        define_mod,
        {
            "metadata": METADATA,
            "commands": [TASK, command(id="open", title="Open", run=open_panel)],
            "ai": AiContributions(tools=[SEARCH], agents=[agent(id="helper", description="Helps")]),
            "hooks": [before_action("command:task", allow)],
            "actions": [CREATE],
            "effects": [effect(id="watch", activate=watch)],
            "views": [view(id="count", title="Count", render=render)],
            "widgets": [widget(id="found", description="Search results", data_type=SearchInput, render=render_found)],
            "id": "tasks",
        },
    ),
    "Mod": (Mod, {"id": "tasks", "metadata": METADATA, "commands": (TASK,), "ai": AiContributions()}),
    "slash_command": (slash_command, {"id": "task", "description": "Run", "run": run_task, "argument_hint": "<what>"}),
    "command": (command, {"id": "open", "title": "Open", "run": open_panel}),
    "tool": (tool, {"name": "search", "description": "Search", "input_type": SearchInput, "run": search}),
    "agent": (agent, {"id": "helper", "description": "Helps", "model": "m", "instructions": "Be kind"}),
    "before_action": (before_action, {"target": "session.fork", "handle": allow}),
    "effect": (effect, {"id": "watch", "activate": watch}),
    "view": (view, {"id": "count", "title": "Count", "render": render}),
    "widget": (widget, {"id": "found", "description": "Search results", "data_type": SearchInput, "render": render_found}),
    "mcp_server": (
        mcp_server,
        {"id": "notes", "command": "notes-server", "args": ["--ro"], "env": {"LANG": "C"}, "url": None, "description": "Notes"},
    ),
    "ModMetadata": (ModMetadata, {"display_name": "Tasks", "description": "Run tasks"}),
    "AiContributions": (AiContributions, {"tools": [SEARCH], "agents": [agent(id="helper", description="Helps")]}),
    "AiPromptMessage": (AiPromptMessage, {"text": "Refactor the parser"}),
    "AiNotificationMessage": (AiNotificationMessage, {"title": "Build", "body": "green"}),
    "AiSessionDisplayMetadata": (AiSessionDisplayMetadata, {"label": "Chat", "icon": "star"}),
    "ModAuthor": (ModAuthor, {"mod_id": "tasks", "command_id": "task", "tool_name": None}),
    "CommandTrigger": (CommandTrigger, {"mod_id": "tasks", "command_id": "task"}),
    "ToolTrigger": (ToolTrigger, {"mod_id": "tasks", "tool_name": "search", "call_id": "call-1"}),
    "SpawnLineage": (
        SpawnLineage,
        {
            "parent_session_id": SessionId("s-1"),
            "parent_chat_uri": "chat://s-1",
            "depth": 1,
            "spawned_at": NOW,
            "trigger": CommandTrigger(mod_id="tasks", command_id="task"),
        },
    ),
    "ForkLineage": (
        ForkLineage,
        {
            "parent_session_id": SessionId("s-1"),
            "parent_turn_ordinal": 0,
            "parent_runner_id": AiRunnerId("runner"),
            "depth": 2,
            "forked_at": NOW,
            "parent_user_message_id": "m-1",
        },
    ),
    "Deny": (Deny, {"reason": "not now"}),
    "Usage": (Usage, {"input_tokens": 812, "output_tokens": 64}),
    "Window": (modular_sdk.Window, {"first": "turn_1", "last": "turn_3"}),
    "MemoryRecord": (
        modular_sdk.MemoryRecord,
        {"id": "mem_1", "session_id": "ses_1", "kind": "fact", "text": "Alice lives in Lisbon", "cites": ("turn_2",), "created_at": NOW},
    ),
    "WidgetPlacement": (WidgetPlacement, {"widget_id": "progress", "data": {"done": 2, "total": 4}, "index": 0}),
    "ToolCallRecord": (
        ToolCallRecord,
        {
            "call_id": "call-1",
            "name": "search",
            "input": {"pattern": "parse"},
            "output": "parser.py: def parse",
            "error": None,
            "started_at": NOW,
            "finished_at": NOW,
        },
    ),
    "ActionEvent": (
        ActionEvent,
        {
            "action": "session.fork",
            "session_id": SessionId("s-1"),
            "author": UserAuthor(),
            "anchor_ordinal": 3,
            "anchor_turn_id": "turn-3",
            "trigger": None,
        },
    ),
    "AiRunResult": (AiRunResult, {"text": "done", "turn": None}),
}
NO_FIELDS = [modular_sdk.UserAuthor, modular_sdk.HostAuthor, modular_sdk.RootLineage, modular_sdk.Allow]


def test_every_public_constructor_is_covered() -> None:
    """A public attrs class or declaration function added later must be added here."""
    public = {
        name
        for name in modular_sdk.__all__
        if (isinstance(getattr(modular_sdk, name), type) and attrs.has(getattr(modular_sdk, name)))
        or name in {"define_mod", "slash_command", "command", "tool", "agent", "before_action", "effect", "view", "widget", "action", "mcp_server"}
    }
    made_by_a_function = {"SlashCommand", "PaletteCommand", "Tool", "Agent", "BeforeActionHook", "Effect", "View", "Widget", "Action", "McpServer"}
    assert public - made_by_a_function == set(CONSTRUCTORS) | {cls.__name__ for cls in NO_FIELDS}


@pytest.mark.parametrize("name", sorted(CONSTRUCTORS))
def test_the_working_arguments_work(name: str) -> None:
    make, arguments = CONSTRUCTORS[name]
    assert make(**arguments) == make(**arguments)


@pytest.mark.parametrize("name", sorted(CONSTRUCTORS))
@junk_settings
@given(data=st.data())
def test_junk_in_any_argument_raises_only_a_modular_error(name: str, data: st.DataObject) -> None:
    make, arguments = CONSTRUCTORS[name]
    fields = sorted(arguments)
    replaced = data.draw(st.dictionaries(st.sampled_from(fields), junk, min_size=1, max_size=len(fields)), label="junk")
    refuses_only_with_our_errors(lambda: make(**{**arguments, **replaced}))


@pytest.mark.parametrize("name", sorted(CONSTRUCTORS))
@junk_settings
@given(data=st.data())
def test_junk_inside_a_list_argument_raises_only_a_modular_error(name: str, data: st.DataObject) -> None:
    make, arguments = CONSTRUCTORS[name]
    lists = sorted(k for k, v in arguments.items() if isinstance(v, (list, tuple)))
    if not lists:
        return
    field = data.draw(st.sampled_from(lists))
    items = data.draw(st.lists(junk, min_size=1, max_size=3))
    refuses_only_with_our_errors(lambda: make(**{**arguments, field: [*arguments[field], *items]}))  # type: ignore[misc]


HANDLER_FIELDS = [(name, field) for name, (_, arguments) in CONSTRUCTORS.items() for field, value in arguments.items() if callable(value) and not isinstance(value, type)]


@pytest.mark.parametrize(("name", "field"), HANDLER_FIELDS)
def test_a_handler_whose_signature_raises_is_refused_when_the_mod_is_defined(name: str, field: str) -> None:
    """It used to raise RuntimeError out of the constructor."""
    make, arguments = CONSTRUCTORS[name]
    error = refuses_only_with_our_errors(lambda: make(**{**arguments, field: SignatureRaises()}))
    assert isinstance(error, ModDefinitionError), f"{name}({field}=...) was accepted"
    assert "its signature cannot be read (RuntimeError: 'no signature for you'), so the host could not call it safely; checked when the mod is defined" in str(error)


TEXT_FIELDS: list[tuple[str, str]] = [
    (name, field)
    for name, (_, arguments) in CONSTRUCTORS.items()
    for field, value in arguments.items()
    # a run result holds the model's reply, which the host checks where it enters
    if isinstance(value, str) and name != "AiRunResult"
]


@pytest.mark.parametrize(("name", "field"), TEXT_FIELDS)
@settings(max_examples=15, deadline=None)
@given(text=bad_text)
def test_a_lone_surrogate_in_any_text_field_is_refused_naming_the_field(name: str, field: str, text: str) -> None:
    make, arguments = CONSTRUCTORS[name]
    error = refuses_only_with_our_errors(lambda: make(**{**arguments, field: text}))
    assert isinstance(error, ModDefinitionError), f"{name}({field}={text!r}) was accepted"
    assert error.field is not None and error.field.endswith(field)
    assert error.value == text


FREE_TEXT = [
    ("AiPromptMessage", "text"),
    ("AiNotificationMessage", "body"),
    ("ModMetadata", "description"),
    ("slash_command", "description"),
    ("agent", "instructions"),
    ("Deny", "reason"),
    ("AiSessionDisplayMetadata", "label"),
]


@pytest.mark.parametrize(("name", "field"), FREE_TEXT)
@settings(max_examples=25, deadline=None)
@given(text=st.text(min_size=1).filter(str.strip))
def test_any_storable_text_is_accepted(name: str, field: str, text: str) -> None:
    make, arguments = CONSTRUCTORS[name]
    made = make(**{**arguments, field: text})
    assert getattr(made, field) == text


# -- the loaders --------------------------------------------------------------------------

TYPES: list[object] = [
    modular_sdk.AiMessage,
    modular_sdk.AiSessionLineage,
    modular_sdk.Author,
    modular_sdk.SpawnTrigger,
    modular_sdk.HookDecision,
    AiPromptMessage,
    ForkLineage,
    SpawnLineage,
    ActionEvent,
    AiSessionDisplayMetadata,
    SearchInput,
    list[SearchInput],
    dict[str, int],
    int | None,
]
json_data = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | any_text,
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(any_text, inner, max_size=3),
    max_leaves=10,
)


def json_text_of(value: object) -> str:
    return json.dumps(value)


texts = st.one_of(
    st.builds(json_text_of, json_data),
    st.builds(lambda n: "[" * n + "]" * n, st.integers(min_value=1, max_value=20_000)),
    st.builds(lambda n: '{"a":' * n + "1" + "}" * n, st.integers(min_value=90, max_value=5000)),
    st.builds(lambda n: "1" * n, st.integers(min_value=4000, max_value=6000)),
    st.sampled_from(['"\\ud800"', '{"type": "prompt", "text": "\\udfff"}', "NaN", "", "{", "\ufeff{}", '{"kind": "root"}']),
    any_text,
    st.binary(max_size=40),
    st.builds(lambda t: t.encode("utf-16"), st.builds(json_text_of, json_data)),
    junk,
)


@junk_settings
@given(text=texts, tp=st.sampled_from(TYPES) | junk)
def test_from_json_raises_only_a_modular_error(text: Any, tp: Any) -> None:
    refuses_only_with_our_errors(lambda: from_json(text, tp))


@junk_settings
@given(value=st.one_of(json_data, junk), tp=st.sampled_from(TYPES) | junk)
def test_structure_raises_only_a_modular_error(value: object, tp: Any) -> None:
    refuses_only_with_our_errors(lambda: structure(value, tp))


@junk_settings
@given(value=junk)
def test_unstructure_and_to_json_raise_only_a_modular_error(value: object) -> None:
    refuses_only_with_our_errors(lambda: unstructure(value))
    refuses_only_with_our_errors(lambda: to_json(value))


VALID_VALUES: list[object] = [
    AiPromptMessage(text="hi"),
    AiNotificationMessage(title="Build", body="green"),
    UserAuthor(),
    ModAuthor(mod_id="tasks", tool_name="search"),
    CommandTrigger(mod_id="tasks", command_id="task"),
    SpawnLineage(**CONSTRUCTORS["SpawnLineage"][1]),  # type: ignore[arg-type]
    ForkLineage(**CONSTRUCTORS["ForkLineage"][1]),  # type: ignore[arg-type]
    modular_sdk.RootLineage(),
    modular_sdk.Allow(),
    Deny(reason="no"),
    ActionEvent(action="session.send", session_id=None, author=ModAuthor(mod_id="m")),
    AiSessionDisplayMetadata(label="Chat"),
]


@pytest.mark.parametrize("value", VALID_VALUES, ids=lambda v: type(v).__name__)
def test_valid_values_still_round_trip(value: object) -> None:
    assert from_json(to_json(value), type(value)) == value
    assert structure(unstructure(value), type(value)) == value


@attrs.frozen
class Tree:
    """A recursive input type: the deepest real data nests like this."""

    name: str
    children: list[Tree] = attrs.field(factory=list)


def tree_data(levels: int, name: str) -> dict[str, object]:
    """A chain of ``levels`` trees: two JSON levels (object, array) per tree."""
    data: dict[str, object] = {"name": name, "children": []}
    for _ in range(levels - 1):
        data = {"name": name, "children": [data]}
    return data


@settings(max_examples=40, deadline=None)
@given(pattern=st.text(), levels=st.integers(min_value=1, max_value=50))
def test_valid_input_up_to_the_depth_limit_still_structures(pattern: str, levels: int) -> None:
    assert structure({"pattern": pattern, "max_results": 2**62}, SearchInput) == SearchInput(pattern=pattern, max_results=2**62)
    data = tree_data(levels, pattern)  # 100 levels at most: 50 objects, 50 arrays
    tree = structure(data, Tree)
    assert unstructure(tree) == data
    assert from_json(to_json(tree), Tree) == tree


def test_one_level_over_the_limit_is_refused() -> None:
    data = {"top": [tree_data(50, "x")]}  # 102 levels
    with pytest.raises(modular_sdk.SerializationError, match="nested more than 100 levels deep"):
        structure(data, dict[str, list[Tree]])

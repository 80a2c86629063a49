"""Declarations and their constructors: what a mod is made of.

Every constructor returns frozen data and does nothing else: it registers nothing, starts
nothing, touches no host state and does no I/O. Each checks its own fields at the call;
`define_mod` checks the whole and reports every problem at once.
"""

from __future__ import annotations

import builtins
from collections.abc import Awaitable, Callable, Iterable, Mapping, Sequence
from typing import Any, Generic, Literal, Never, TypeVar, final

import attrs

from ._actions import ActionEvent, HookDecision
from ._errors import SerializationError
from ._frozen import FrozenJsonObject, freeze_object
from ._ids import HOST_ACTIONS
from ._mcp import McpServer
from ._protocols import (
    ActionContext,
    CommandContext,
    CompletionContext,
    EffectContext,
    SlashCommandContext,
    ToolContext,
)
from ._rules import (
    Problem,
    check_handler,
    check_id,
    check_text,
    close_match,
    raise_problems,
    show,
    slug,
    unstorable_text,
)
from ._schema import SchemaError, json_schema

__all__ = [
    "Action",
    "Agent",
    "AiContributions",
    "AnyCommand",
    "BeforeActionHook",
    "Effect",
    "Mod",
    "ModMetadata",
    "PaletteCommand",
    "SlashCommand",
    "Tool",
    "View",
    "Widget",
    "action",
    "agent",
    "before_action",
    "command",
    "define_mod",
    "effect",
    "slash_command",
    "tool",
    "view",
    "widget",
]

IdT = TypeVar("IdT", bound=str, covariant=True)
IdT_inv = TypeVar("IdT_inv", bound=str)
TargetT = TypeVar("TargetT", bound=str, covariant=True)
TargetT_inv = TypeVar("TargetT_inv", bound=str)
InputT = TypeVar("InputT")
RecordT = TypeVar("RecordT", bound=attrs.AttrsInstance)
"""A tool's ``input_type``: an attrs class (mypy refuses a dataclass or a plain class)."""
DataT = TypeVar("DataT")

SlashCommandRun = Callable[[str | None, SlashCommandContext], object]
"""``run(argument, ctx)``; ``def`` or ``async def``; its result is shown as ``str(value)``."""
SlashCommandComplete = Callable[[str, CompletionContext], Sequence[str] | Awaitable[Sequence[str]]]
"""``complete(prefix, ctx)``: argument values for what the user typed after ``/<id> ``; ``def`` or ``async def``."""
CommandRun = Callable[[CommandContext], object]
"""``run(ctx)`` of a palette command; ``def`` or ``async def``."""
HookHandle = Callable[[ActionEvent], HookDecision | Awaitable[HookDecision]]
"""``handle(event)`` returning (or awaiting to) `Allow` or `Deny`, nothing else (not a bool)."""


def _raise_own(where: str, problems: list[Problem]) -> None:
    raise_problems(where, problems)


@final
class _NotACollection(tuple[Never, ...]):
    """What a collection field holds when it was given no collection (``commands=5``).

    An empty tuple, so the field keeps its type, carrying the value for the class's own
    check, which reports it together with every other problem.
    """

    value: object

    def __new__(cls, value: object) -> _NotACollection:
        self = super().__new__(cls, ())
        self.value = value
        return self


T = TypeVar("T")


def _items(value: Iterable[T]) -> tuple[T, ...]:
    """A collection field's value as a tuple; `_NotACollection` for anything that is none.

    Text and mappings are iterable but never a list of declarations.
    """
    given: object = value  # checked: callers may pass anything
    if isinstance(given, (str, bytes, bytearray, Mapping)) or not isinstance(given, Iterable):
        return _NotACollection(given)
    return tuple(value)


def _collection_problems(field: str, value: tuple[object, ...], made_by: str) -> list[Problem]:
    if not isinstance(value, _NotACollection):
        return []
    given = value.value
    return [
        Problem(
            field,
            given,
            f"{field} must be a list or tuple of declarations made by {made_by}, "
            f"got {show(given)} ({type(given).__name__}); pass {field}=[...]",
        )
    ]


@attrs.frozen(kw_only=True)
class ModMetadata:
    """What the user sees of a mod: display name and one-line description. Immutable."""

    display_name: str
    description: str

    def __attrs_post_init__(self) -> None:
        _raise_own(
            "ModMetadata",
            check_text("metadata.display_name", self.display_name)
            + check_text("metadata.description", self.description),
        )


@attrs.frozen(kw_only=True)
class SlashCommand(Generic[IdT]):
    """A command typed in a chat session as ``/<id> [argument]``. Immutable.

    Make one with `slash_command`.
    """

    kind: Literal["slash"] = attrs.field(default="slash", init=False)
    id: IdT
    description: str
    run: SlashCommandRun
    argument_hint: str | None = None
    complete: SlashCommandComplete | None = None

    def __attrs_post_init__(self) -> None:
        _raise_own(
            f"slash_command(id={show(self.id)})",
            check_id("id", self.id, "slash command id")
            + check_text("description", self.description)
            + check_text("argument_hint", self.argument_hint, optional=True)
            + check_handler("run", self.run, ("argument", "ctx"))
            + ([] if self.complete is None else check_handler("complete", self.complete, ("prefix", "ctx"))),
        )


@attrs.frozen(kw_only=True)
class PaletteCommand(Generic[IdT]):
    """A workbench command run from the palette, with no session. Immutable.

    Make one with `command`.
    """

    kind: Literal["palette"] = attrs.field(default="palette", init=False)
    id: IdT
    title: str
    run: CommandRun

    def __attrs_post_init__(self) -> None:
        _raise_own(
            f"command(id={show(self.id)})",
            check_id("id", self.id, "command id")
            + check_text("title", self.title)
            + check_handler("run", self.run, ("ctx",)),
        )


AnyCommand = SlashCommand[str] | PaletteCommand[str]
"""Any entry of ``define_mod(commands=[...])``."""


@attrs.frozen(kw_only=True)
class Tool(Generic[InputT]):
    """An AI tool the model decides to call. Immutable; make one with `tool`.

    ``input_schema`` is the JSON Schema of ``input_type``, derived at construction.
    """

    name: str
    description: str
    input_type: type[InputT]
    run: Callable[[InputT, ToolContext], object]
    input_schema: FrozenJsonObject = attrs.field(init=False, eq=False, repr=False)

    def __attrs_post_init__(self) -> None:
        problems = (
            check_id("name", self.name, "tool name")
            + check_text("description", self.description)
            + check_handler("run", self.run, ("input", "ctx"))
        )
        schema: FrozenJsonObject = {}
        try:
            schema = freeze_object(json_schema(self.input_type), type_name="the input schema")
        except (SchemaError, SerializationError) as exc:
            problems.append(Problem("input_type", self.input_type, str(exc)))
        _raise_own(f"tool(name={show(self.name)})", problems)
        object.__setattr__(self, "input_schema", schema)


@attrs.frozen(kw_only=True)
class Agent:
    """A declared agent: ``ctx.ai.agents.get(id).spawn()`` makes a root session with it.

    Immutable; make one with `agent`.
    """

    id: str
    description: str
    model: str | None = None
    instructions: str | None = None

    def __attrs_post_init__(self) -> None:
        _raise_own(
            f"agent(id={show(self.id)})",
            check_id("id", self.id, "agent id")
            + check_text("description", self.description)
            + check_text("model", self.model, optional=True)
            + check_text("instructions", self.instructions, optional=True),
        )


def _tools(value: Iterable[Tool[Any]]) -> tuple[Tool[Any], ...]:
    return _items(value)


def _agents(value: Iterable[Agent]) -> tuple[Agent, ...]:
    return _items(value)


def _mcp_servers(value: Iterable[McpServer]) -> tuple[McpServer, ...]:
    return _items(value)


@attrs.frozen(kw_only=True)
class AiContributions:
    """A mod's AI contributions: tools the model may call, declared agents, and MCP servers
    whose tools the model may call (`mcp_server`). Immutable.

    Raises `ModDefinitionError` when ``tools``, ``agents`` or ``mcp_servers`` is not a list
    of declarations made by `tool`, `agent` or `mcp_server`, or when two MCP servers share
    an id; `define_mod` checks that names are distinct.
    """

    tools: tuple[Tool[Any], ...] = attrs.field(default=(), converter=_tools)
    agents: tuple[Agent, ...] = attrs.field(default=(), converter=_agents)
    mcp_servers: tuple[McpServer, ...] = attrs.field(default=(), converter=_mcp_servers)

    def __attrs_post_init__(self) -> None:
        problems = _collection_problems("tools", self.tools, "tool(...)")
        problems += _collection_problems("agents", self.agents, "agent(...)")
        problems += _collection_problems("mcp_servers", self.mcp_servers, "mcp_server(...)")
        for index, t in enumerate(self.tools):
            problems += _typed(f"tools[{index}]", t, Tool, "made by tool")
        for index, a in enumerate(self.agents):
            problems += _typed(f"agents[{index}]", a, Agent, "made by agent")
        for index, m in enumerate(self.mcp_servers):
            problems += _typed(f"mcp_servers[{index}]", m, McpServer, "made by mcp_server")
        problems += _duplicates(
            "mcp_servers",
            [(i, m.id) for i, m in enumerate(self.mcp_servers) if isinstance(m, McpServer)],
            "MCP server id",
        )
        _raise_own("AiContributions", problems)


@attrs.frozen(kw_only=True)
class BeforeActionHook(Generic[TargetT]):
    """A policy hook run before a host action or one of the mod's own commands. Immutable.

    Make one with `before_action`.
    """

    target: TargetT
    handle: HookHandle

    def __attrs_post_init__(self) -> None:
        problems: list[Problem] = []
        if not isinstance(self.target, str) or not self.target:
            problems.append(
                Problem(
                    "target",
                    self.target,
                    f"hook target must be a host action or 'command:<id>', got {show(self.target)}",
                )
            )
        elif (why := unstorable_text(self.target)) is not None:
            problems.append(Problem("target", self.target, f"hook target {show(self.target)} {why}"))
        _raise_own(
            f"before_action({show(self.target)})",
            problems + check_handler("handle", self.handle, ("event",)),
        )


@attrs.frozen(kw_only=True)
class Effect:
    """Long-running work started when the host activates the mod, cancelled when it closes.

    Immutable; make one with `effect`.
    """

    id: str
    activate: Callable[[EffectContext], object]

    def __attrs_post_init__(self) -> None:
        _raise_own(
            f"effect(id={show(self.id)})",
            check_id("id", self.id, "effect id") + check_handler("activate", self.activate, ("ctx",)),
        )


@attrs.frozen(kw_only=True)
class View(Generic[DataT]):
    """A renderer-lane view: pure data in, text out, no session access. Immutable.

    Make one with `view`.
    """

    id: str
    title: str
    render: Callable[[DataT], str]

    def __attrs_post_init__(self) -> None:
        _raise_own(
            f"view(id={show(self.id)})",
            check_id("id", self.id, "view id")
            + check_text("title", self.title)
            + check_handler("render", self.render, ("data",), define="def"),
        )


@attrs.frozen(kw_only=True)
class Action(Generic[InputT]):
    """An action the model may propose and the user must confirm. Immutable; make one with `action`.

    The model proposes it in its reply as ``<mod-action type="task.create">{...}</mod-action>``;
    the host accepts only declared types and a payload that structures into
    ``payload_type`` exactly (never coerced), records it as pending, and runs
    ``run(payload, ctx)`` once, when the user confirms it. ``payload_schema`` is the JSON
    Schema of ``payload_type``, derived at construction.
    """

    type: str
    description: str
    payload_type: builtins.type[InputT]  # the field 'type' shadows the builtin in this class
    run: Callable[[InputT, ActionContext], object]
    payload_schema: FrozenJsonObject = attrs.field(init=False, eq=False, repr=False)

    def __attrs_post_init__(self) -> None:
        problems = (
            check_id("type", self.type, "action type")
            + check_text("description", self.description)
            + check_handler("run", self.run, ("payload", "ctx"))
        )
        schema: FrozenJsonObject = {}
        if not (isinstance(self.payload_type, type) and attrs.has(self.payload_type)):
            problems.append(
                Problem(
                    "payload_type",
                    self.payload_type,
                    f"payload_type must be an attrs class (@attrs.frozen), got {show(self.payload_type)}; "
                    "declare the payload's fields on an attrs class",
                )
            )
        else:
            try:
                schema = freeze_object(json_schema(self.payload_type), type_name="the payload schema")
            except (SchemaError, SerializationError) as exc:
                problems.append(Problem("payload_type", self.payload_type, str(exc)))
        _raise_own(f"action(type={show(self.type)})", problems)
        object.__setattr__(self, "payload_schema", schema)


@attrs.frozen(kw_only=True)
class Widget(Generic[InputT]):
    """A small renderer contribution shown inside a chat for one session: a status line, a
    progress bar, a card. Immutable; make one with `widget`.

    It runs in the renderer lane with the same limits as a `View` (no host handles; a
    timeout). Its input is ``data_type``, an attrs class: JSON data given to the host is
    structured into it strictly (never coerced) before ``render(data)`` sees it.
    ``data_schema`` is the JSON Schema of ``data_type``, derived at construction.
    """

    id: str
    description: str
    data_type: builtins.type[InputT]
    render: Callable[[InputT], str]
    data_schema: FrozenJsonObject = attrs.field(init=False, eq=False, repr=False)

    def __attrs_post_init__(self) -> None:
        problems = (
            check_id("id", self.id, "widget id")
            + check_text("description", self.description)
            + check_handler("render", self.render, ("data",), define="def")
        )
        schema: FrozenJsonObject = {}
        if not (isinstance(self.data_type, type) and attrs.has(self.data_type)):
            problems.append(
                Problem(
                    "data_type",
                    self.data_type,
                    f"data_type must be an attrs class (@attrs.frozen), got {show(self.data_type)}; "
                    "declare the widget's data fields on an attrs class",
                )
            )
        else:
            try:
                schema = freeze_object(json_schema(self.data_type), type_name="the widget data schema")
            except (SchemaError, SerializationError) as exc:
                problems.append(Problem("data_type", self.data_type, str(exc)))
        _raise_own(f"widget(id={show(self.id)})", problems)
        object.__setattr__(self, "data_schema", schema)


def _widgets(value: Iterable[Widget[Any]]) -> tuple[Widget[Any], ...]:
    return _items(value)


def _actions(value: Iterable[Action[Any]]) -> tuple[Action[Any], ...]:
    return _items(value)


def _commands(value: Iterable[AnyCommand]) -> tuple[AnyCommand, ...]:
    return _items(value)


def _hooks(value: Iterable[BeforeActionHook[str]]) -> tuple[BeforeActionHook[str], ...]:
    return _items(value)


def _effects(value: Iterable[Effect]) -> tuple[Effect, ...]:
    return _items(value)


def _views(value: Iterable[View[Any]]) -> tuple[View[Any], ...]:
    return _items(value)


@attrs.frozen(kw_only=True)
class Mod:
    """A whole mod, as returned by `define_mod`. Immutable data; the host folds it.

    A mod module exposes it as its module attribute ``mod``.
    """

    id: str
    metadata: ModMetadata
    commands: tuple[AnyCommand, ...] = attrs.field(default=(), converter=_commands)
    ai: AiContributions = attrs.field(factory=AiContributions)
    hooks: tuple[BeforeActionHook[str], ...] = attrs.field(default=(), converter=_hooks)
    effects: tuple[Effect, ...] = attrs.field(default=(), converter=_effects)
    views: tuple[View[Any], ...] = attrs.field(default=(), converter=_views)
    actions: tuple[Action[Any], ...] = attrs.field(default=(), converter=_actions)
    widgets: tuple[Widget[Any], ...] = attrs.field(default=(), converter=_widgets)

    def __attrs_post_init__(self) -> None:
        raise_problems(f"define_mod(id={show(self.id)})", _mod_problems(self))


def _typed(field: str, value: object, cls: type | tuple[type, ...], what: str) -> list[Problem]:
    if isinstance(value, cls):
        return []
    return [
        Problem(
            field,
            value,
            f"{field} must be {what}, got {show(value)} ({type(value).__name__}); "
            f"build it with {what.split()[-1]}(...)",
        )
    ]


def _duplicates(field: str, ids: Sequence[tuple[int, str]], what: str) -> list[Problem]:
    seen: dict[str, int] = {}
    problems: list[Problem] = []
    for index, ident in ids:
        if ident in seen:
            problems.append(
                Problem(
                    f"{field}[{index}].id",
                    ident,
                    f"{what} {show(ident)} is declared twice ({field}[{seen[ident]}] and "
                    f"{field}[{index}]); give each a distinct id",
                )
            )
        else:
            seen[ident] = index
    return problems


def _mod_problems(mod: Mod) -> list[Problem]:
    problems = check_id("id", mod.id, "mod id")
    problems += _typed("metadata", mod.metadata, ModMetadata, "a ModMetadata")
    problems += _typed("ai", mod.ai, AiContributions, "an AiContributions")
    problems += _collection_problems("commands", mod.commands, "slash_command(...) or command(...)")
    problems += _collection_problems("hooks", mod.hooks, "before_action(...)")
    problems += _collection_problems("effects", mod.effects, "effect(...)")
    problems += _collection_problems("views", mod.views, "view(...)")
    command_ids: list[tuple[int, str]] = []
    commands: tuple[object, ...] = mod.commands  # checked: callers may pass anything
    for index, cmd in enumerate(commands):
        if isinstance(cmd, (SlashCommand, PaletteCommand)):
            command_ids.append((index, cmd.id))
        else:
            problems.append(
                Problem(
                    f"commands[{index}]",
                    cmd,
                    f"commands[{index}] must be made by slash_command(...) or command(...), "
                    f"got {show(cmd)} ({type(cmd).__name__})",
                )
            )
    problems += _duplicates("commands", command_ids, "command id")
    if isinstance(mod.ai, AiContributions):  # which checked that its items are tools and agents
        problems += _duplicates(
            "ai.tools",
            [(i, t.name) for i, t in enumerate(mod.ai.tools) if isinstance(t, Tool)],
            "tool name",
        )
        problems += _duplicates(
            "ai.agents",
            [(i, a.id) for i, a in enumerate(mod.ai.agents) if isinstance(a, Agent)],
            "agent id",
        )
    own = [ident for _, ident in command_ids]
    hooks: tuple[object, ...] = mod.hooks
    for index, hook in enumerate(hooks):
        if not isinstance(hook, BeforeActionHook):
            problems += _typed(f"hooks[{index}]", hook, BeforeActionHook, "made by before_action")
            continue
        problems += hook_target_problems(f"hooks[{index}].target", hook.target, mod.id, own)
    for index, e in enumerate(mod.effects):
        problems += _typed(f"effects[{index}]", e, Effect, "made by effect")
    problems += _duplicates(
        "effects", [(i, e.id) for i, e in enumerate(mod.effects) if isinstance(e, Effect)], "effect id"
    )
    for index, v in enumerate(mod.views):
        problems += _typed(f"views[{index}]", v, View, "made by view")
    problems += _duplicates(
        "views", [(i, v.id) for i, v in enumerate(mod.views) if isinstance(v, View)], "view id"
    )
    problems += _collection_problems("actions", mod.actions, "action(...)")
    for index, a in enumerate(mod.actions):
        problems += _typed(f"actions[{index}]", a, Action, "made by action")
    problems += _duplicates(
        "actions", [(i, a.type) for i, a in enumerate(mod.actions) if isinstance(a, Action)], "action type"
    )
    problems += _collection_problems("widgets", mod.widgets, "widget(...)")
    for index, w in enumerate(mod.widgets):
        problems += _typed(f"widgets[{index}]", w, Widget, "made by widget")
    problems += _duplicates(
        "widgets", [(i, w.id) for i, w in enumerate(mod.widgets) if isinstance(w, Widget)], "widget id"
    )
    return problems


def hook_target_problems(field: str, target: str, mod_id: str, own_commands: Sequence[str]) -> list[Problem]:
    """Problems of one hook target against a mod's own command ids (empty if valid)."""
    commands = list(dict.fromkeys(own_commands))
    valid = [*HOST_ACTIONS, *(f"command:{ident}" for ident in commands)]
    if target in valid:
        return []
    if target.startswith("command:"):
        known = ", ".join(repr(c) for c in commands) or "none"
        rule = f"names no command of mod {show(mod_id)} (its commands: {known})"
        # compare ids with ids: 'command:review' is not close to 'command:b'
        suggestion = close_match(target.removeprefix("command:"), commands, prefix="command:")
    else:
        rule = "is neither a host action nor 'command:<id>' of this mod"
        suggestion = close_match(target, valid)
    expected = ", ".join(repr(t) for t in valid)
    return [
        Problem(
            field,
            target,
            f"hook target {show(target)} {rule}{suggestion} (expected one of: {expected})",
        )
    ]


def slash_command(
    *,
    id: IdT_inv,
    description: str,
    run: SlashCommandRun,
    argument_hint: str | None = None,
    complete: SlashCommandComplete | None = None,
) -> SlashCommand[IdT_inv]:
    """Declare a command the user types inside a chat session as ``/<id> [argument]``.

    ``run(argument, ctx)`` (``def`` or ``async def``) gets the text after the name with the
    separating space removed (``None`` when the user typed nothing) and a
    `SlashCommandContext`; its return value is shown to the user (``None`` shows nothing).
    ``complete(prefix, ctx)`` (optional; ``def`` or ``async def``) offers argument values
    for what the user typed after ``/<id> `` (``await host.completions("/task wri")``): a
    sequence of strings, with a `CompletionContext`; it runs with the handler timeout.
    Raises `ModDefinitionError` for a bad id, an empty description or a handler that cannot
    take ``(argument, ctx)``.

    >>> task = slash_command(id="task", description="Run work in the background", run=run_task)
    """
    return SlashCommand(id=id, description=description, run=run, argument_hint=argument_hint, complete=complete)


def command(*, id: IdT_inv, title: str, run: CommandRun) -> PaletteCommand[IdT_inv]:
    """Declare a palette command: workbench work with no session; ``run(ctx)``."""
    return PaletteCommand(id=id, title=title, run=run)


def tool(
    *,
    name: str,
    description: str,
    input_type: type[RecordT],
    run: Callable[[RecordT, ToolContext], object],
) -> Tool[RecordT]:
    """Declare an AI tool the model may call with JSON matching ``input_type``.

    ``input_type`` is an attrs class of JSON-representable fields (a dataclass or a plain
    class is refused, by mypy and at runtime); the host validates the model's input against
    its schema and passes ``run(input, ctx)`` an instance. Input that does not match is not
    passed on: the model gets a tool result with ``error`` saying what was wrong, and may
    call again.
    """
    return Tool(name=name, description=description, input_type=input_type, run=run)


def agent(
    *, id: str, description: str, model: str | None = None, instructions: str | None = None
) -> Agent:
    """Declare an agent for ``AiContributions(agents=[...])``."""
    return Agent(id=id, description=description, model=model, instructions=instructions)


def before_action(target: TargetT_inv, handle: HookHandle) -> BeforeActionHook[TargetT_inv]:
    """Declare a hook run before ``target``: a `HostAction` or ``"command:<own id>"``.

    ``handle(event)`` (``def`` or ``async def``) returns `Allow()` or `Deny(reason=...)`;
    a `Deny` raises `ActionDeniedError` in the caller. `define_mod` checks the target.
    """
    return BeforeActionHook(target=target, handle=handle)


def effect(*, id: str, activate: Callable[[EffectContext], object]) -> Effect:
    """Declare long-running work: started when the host opens, cancelled when it closes."""
    return Effect(id=id, activate=activate)


def view(*, id: str, title: str, render: Callable[[DataT], str]) -> View[DataT]:
    """Declare a renderer-lane view: ``render(data) -> str``, with no session access."""
    return View(id=id, title=title, render=render)


def widget(
    *, id: str, description: str, data_type: type[RecordT], render: Callable[[RecordT], str]
) -> Widget[RecordT]:
    """Declare a widget for ``define_mod(widgets=[...])``: a small rendering shown inside a
    chat for one session, ``render(data) -> str`` in the renderer lane.

    ``data_type`` is an attrs class; the host structures JSON data into it strictly before
    ``render`` sees it (``host.render_widget(id, session, data)``), and a model may place
    one in its reply as ``<mod-widget type="<id>">{json}</mod-widget>``. Raises
    `ModDefinitionError` for a bad id, an empty description, a data type that is not an
    attrs class, or a ``render`` that cannot take ``(data)``.

    >>> progress = widget(id="progress", description="Task progress", data_type=Progress, render=bar)
    """
    return Widget(id=id, description=description, data_type=data_type, render=render)


def action(
    *,
    type: str,
    description: str,
    payload_type: type[RecordT],
    run: Callable[[RecordT, ActionContext], object],
) -> Action[RecordT]:
    """Declare an action the model may propose and the user must confirm, for ``define_mod(actions=[...])``.

    The model proposes one by writing ``<mod-action type="<type>">{json}</mod-action>`` in its
    reply. The host records it as pending only when ``type`` is declared by a loaded mod and
    the JSON structures into ``payload_type`` (an attrs class) exactly; nothing runs until
    the user confirms it (``host.confirm(action_id)``), which calls ``run(payload, ctx)``
    once, as the user. Raises `ModDefinitionError` for a bad type, an empty description, a
    payload type that is not an attrs class, or a handler that cannot take ``(payload, ctx)``.

    >>> create_task = action(type="task.create", description="Create a task", payload_type=NewTask, run=create)
    """
    return Action(type=type, description=description, payload_type=payload_type, run=run)


def define_mod(
    *,
    metadata: ModMetadata,
    commands: Sequence[AnyCommand] = (),
    ai: AiContributions | None = None,
    hooks: Sequence[BeforeActionHook[str]] = (),
    effects: Sequence[Effect] = (),
    views: Sequence[View[Any]] = (),
    actions: Sequence[Action[Any]] = (),
    widgets: Sequence[Widget[Any]] = (),
    id: str | None = None,
) -> Mod:
    """The entry point of the SDK: gather a mod's declarations into one frozen `Mod`.

    Returns data: registers nothing, starts nothing, touches no host state, does no I/O;
    equal inputs give equal values. ``actions`` are what the model may propose for the
    user to confirm (see `action`); ``widgets`` small renderings shown inside a chat (see
    `widget`). ``id`` defaults to the slug of
    ``metadata.display_name`` (``"Background Tasks"`` -> ``"background-tasks"``).
    Raises one `ModDefinitionError` listing every problem (duplicate ids, hook targets that
    are neither a `HostAction` nor ``"command:<own id>"``, ...).
    """
    if id is None:
        display = getattr(metadata, "display_name", "")
        id = slug(display) if isinstance(display, str) else ""
        if not id or not id[0].isalpha():
            raise_problems(
                "define_mod",
                [
                    Problem(
                        "id",
                        display,
                        f"metadata.display_name {show(display)} gives no valid mod id "
                        "(it must start with a letter); pass id='my-mod'",
                    )
                ],
            )
    return Mod(
        id=id,
        metadata=metadata,
        commands=commands,
        ai=ai if ai is not None else AiContributions(),
        hooks=hooks,
        effects=effects,
        views=views,
        actions=actions,
        widgets=widgets,
    )

"""Type tests for declarations: literal ids and the shapes `define_mod` returns.

Checked by mypy (with the ``modular_sdk.mypy_plugin`` plugin), never run.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Literal, assert_type

import attrs

from modular_sdk import (
    ActionEvent,
    AiContributions,
    Allow,
    AnyCommand,
    BeforeActionHook,
    CommandContext,
    Deny,
    McpServer,
    Mod,
    ModMetadata,
    PaletteCommand,
    SlashCommand,
    SlashCommandContext,
    Tool,
    ToolContext,
    before_action,
    command,
    define_mod,
    mcp_server,
    slash_command,
    tool,
)
from modular_sdk._frozen import FrozenJsonValue


def run_task(argument: str | None, ctx: SlashCommandContext) -> str:
    return argument or ""


async def open_panel(ctx: CommandContext) -> None:
    return None


def only_user(event: ActionEvent) -> Allow | Deny:
    return Allow() if event.author.kind == "user" else Deny(reason="only the user may fork")


@attrs.frozen
class Search:
    query: str


def search(input: Search, ctx: ToolContext) -> str:
    return input.query


task = slash_command(id="task", description="Run work in the background", run=run_task)
assert_type(task, SlashCommand[Literal["task"]])
assert_type(task.id, Literal["task"])
assert_type(task.kind, Literal["slash"])

panel = command(id="panel", title="Open the panel", run=open_panel)
assert_type(panel, PaletteCommand[Literal["panel"]])
assert_type(panel.kind, Literal["palette"])

guard = before_action("command:task", only_user)
assert_type(guard, BeforeActionHook[Literal["command:task"]])
assert_type(guard.target, Literal["command:task"])
assert_type(before_action("session.fork", only_user), BeforeActionHook[Literal["session.fork"]])

finder = tool(name="search", description="Search the code", input_type=Search, run=search)
assert_type(finder, Tool[Search])
# The schema is frozen JSON: read-only to the type checker as at runtime.
assert_type(finder.input_schema, Mapping[str, FrozenJsonValue])
finder.input_schema["title"] = "changed"  # type: ignore[index]

# The type parameters are covariant: literal declarations widen to the public aliases.
widened: SlashCommand[str] = task
any_command: AnyCommand = panel
any_tool: Tool[Any] = finder

mod = define_mod(
    metadata=ModMetadata(display_name="Background Tasks", description="Run work in the background"),
    commands=[task, panel],
    hooks=[guard, before_action("session.fork", only_user)],
)
assert_type(mod, Mod)
assert_type(mod.id, str)
assert_type(mod.commands, tuple[AnyCommand, ...])
assert_type(mod.hooks, tuple[BeforeActionHook[str], ...])

for declared in mod.commands:
    if declared.kind == "slash":
        assert_type(declared, SlashCommand[str])
        assert_type(declared.argument_hint, str | None)
    else:
        assert_type(declared, PaletteCommand[str])
        assert_type(declared.title, str)

# MCP servers (API section 16): frozen declarations; the transport is a closed literal.
files = mcp_server(id="files", command="python", args=["files.py"], description="Project files")
assert_type(files, McpServer)
assert_type(files.transport, Literal["stdio", "http"])
assert_type(files.args, tuple[str, ...])
assert_type(files.env, Mapping[str, str] | None)
assert_type(AiContributions(mcp_servers=[files]).mcp_servers, tuple[McpServer, ...])
mcp_server(id="files", command=["python"], description="Project files")  # type: ignore[arg-type]

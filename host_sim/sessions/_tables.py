"""Every mod's declarations, indexed for dispatch (`ModTables`): built once when the host opens.

Commands (slash and palette), tools, agents, views, widgets, MCP servers and hooks, each by
its id; a mod that cannot load with the others is refused (or, with ``skip_bad``, left out
whole and described).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

import attrs

from modular_sdk import (
    Agent,
    BeforeActionHook,
    Mod,
    ModDefinitionError,
    PaletteCommand,
    SlashCommand,
    Tool,
    View,
    Widget,
)

if TYPE_CHECKING:
    from modular_sdk._mcp import McpServer

__all__ = ["ModTables"]


@attrs.frozen
class ModTables:
    """Every mod's declarations, indexed for dispatch; built once when the host opens."""

    mods: tuple[Mod, ...]
    slash: dict[str, tuple[Mod, SlashCommand[str]]]
    palette: dict[str, tuple[Mod, PaletteCommand[str]]]
    tools: dict[str, tuple[Mod, Tool[object]]]
    agents: dict[str, tuple[Mod, Agent]]
    host_hooks: dict[str, list[tuple[Mod, BeforeActionHook[str]]]]
    command_hooks: dict[tuple[str, str], list[tuple[Mod, BeforeActionHook[str]]]]
    views: dict[str, tuple[Mod, View[object]]]
    widgets: dict[str, tuple[Mod, Widget[object]]]
    mcp_servers: dict[str, tuple[Mod, McpServer]] = attrs.field(factory=dict)  # by server id

    @classmethod
    def build(
        cls, mods: Sequence[object], *, skip_bad: bool = False, positions: Sequence[int] | None = None
    ) -> tuple[ModTables, tuple[tuple[int, ModDefinitionError], ...]]:
        """Index ``mods`` for dispatch; with ``skip_bad``, leave out each mod that cannot load.

        A mod is bad when it is not a `Mod`, repeats a loaded mod's id, or declares a
        command, tool, agent or view a mod before it already declared. Without ``skip_bad``
        every problem is raised at once (`ModDefinitionError`); with it, each bad mod is left
        out whole (none of its declarations load) and described by one `ModDefinitionError`
        in the second value, with its position, in ``mods`` order. ``positions`` are the indexes messages
        show for ``mods`` (the caller's own list, when it left some out before).
        """
        problems: list[str] = []
        skipped: list[tuple[int, ModDefinitionError]] = []
        loaded: list[Mod] = []
        seen_mods: dict[str, int] = {}
        slash: dict[str, tuple[Mod, SlashCommand[str]]] = {}
        palette: dict[str, tuple[Mod, PaletteCommand[str]]] = {}
        tools: dict[str, tuple[Mod, Tool[object]]] = {}
        agents: dict[str, tuple[Mod, Agent]] = {}
        views: dict[str, tuple[Mod, View[object]]] = {}
        widgets: dict[str, tuple[Mod, Widget[object]]] = {}
        mcp_servers: dict[str, tuple[Mod, McpServer]] = {}
        host_hooks: dict[str, list[tuple[Mod, BeforeActionHook[str]]]] = {}
        command_hooks: dict[tuple[str, str], list[tuple[Mod, BeforeActionHook[str]]]] = {}

        def claims(mod: Mod) -> list[tuple[dict[str, tuple[Mod, Any]], str, object, str]]:
            """Every (table, key, declaration, what) the mod adds to the tables."""
            out: list[tuple[dict[str, tuple[Mod, Any]], str, object, str]] = []
            for cmd in mod.commands:
                if isinstance(cmd, SlashCommand):
                    out.append((slash, cmd.id, cmd, "slash command /"))
                else:
                    out.append((palette, cmd.id, cmd, "palette command"))
            out += [(tools, t.name, t, "tool") for t in mod.ai.tools]
            out += [(agents, a.id, a, "agent") for a in mod.ai.agents]
            out += [(views, v.id, v, "view") for v in mod.views]
            out += [(widgets, w.id, w, "widget") for w in mod.widgets]
            out += [(mcp_servers, m.id, m, "MCP server") for m in mod.ai.mcp_servers]
            return out

        for at, mod in enumerate(mods):
            index = at if positions is None else positions[at]
            if not isinstance(mod, Mod):
                mine = [f"mods[{index}] must be a Mod from define_mod(...) or a mod spec string, got {mod!r}"]
            elif mod.id in seen_mods:
                mine = [f"mod id {mod.id!r} is loaded twice (mods[{seen_mods[mod.id]}] and mods[{index}])"]
            else:
                wanted = claims(mod)
                mine = [
                    f"{what} {key!r} is declared by both mod {table[key][0].id!r} and mod {mod.id!r}; rename one of them"
                    for table, key, _, what in wanted
                    if key in table
                ]
                if not mine or not skip_bad:
                    seen_mods[mod.id] = index
                    loaded.append(mod)
                    for table, key, value, _ in wanted:
                        table.setdefault(key, (mod, value))
                    for hook in mod.hooks:
                        if hook.target.startswith("command:"):
                            command_hooks.setdefault((mod.id, hook.target), []).append((mod, hook))
                        else:
                            host_hooks.setdefault(hook.target, []).append((mod, hook))
            if mine and skip_bad:
                name = f"mod {mod.id!r}" if isinstance(mod, Mod) else f"mods[{index}]"
                error = ModDefinitionError(f"{name} was not loaded: {'; '.join(mine)}", field=f"mods[{index}]", value=mod)
                skipped.append((index, error))
            else:
                problems += mine
        if problems:
            lines = "\n".join(f"  - {p}" for p in problems)
            raise ModDefinitionError(f"cannot load these mods together:\n{lines}", field="mods", value=list(mods))
        tables = cls(
            mods=tuple(loaded),
            slash=slash,
            palette=palette,
            tools=tools,
            agents=agents,
            host_hooks=host_hooks,
            command_hooks=command_hooks,
            views=views,
            widgets=widgets,
            mcp_servers=mcp_servers,
        )
        return tables, tuple(skipped)

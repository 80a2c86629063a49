"""The manifest: the serializable half of a mod, derived by the build-time fold.

This file also runs inside the sandbox child, which loads it by path: it imports only the
standard library, attrs and modular_sdk, and uses no relative imports.
"""

from __future__ import annotations

import copy
import json
from collections.abc import Mapping
from typing import Literal, cast

import attrs

from modular_sdk import Mod, ModDefinitionError, PaletteCommand, SerializationError, SlashCommand
from modular_sdk._frozen import FrozenJsonObject, freeze_object
from modular_sdk._json import converter, load_json, register_tagged, structure
from modular_sdk._rules import show
from modular_sdk._schema import JsonObject

__all__ = [
    "MANIFEST_VERSION",
    "AgentEntry",
    "CommandEntry",
    "EffectEntry",
    "HookEntry",
    "Manifest",
    "McpServerEntry",
    "ManifestMetadata",
    "PaletteCommandEntry",
    "SlashCommandEntry",
    "ToolEntry",
    "ViewEntry",
    "WidgetEntry",
    "manifest_from_mod",
]

MANIFEST_VERSION = 1
"""The manifest format version written by this host; bumped on incompatible changes."""


@attrs.frozen(kw_only=True)
class ManifestMetadata:
    """What the user sees of a mod: display name and one-line description. Immutable."""

    display_name: str
    description: str


@attrs.frozen(kw_only=True)
class SlashCommandEntry:
    """A slash command: ``/<id> [argument]`` in a chat session. Immutable."""

    kind: Literal["slash"] = attrs.field(default="slash", init=False)
    id: str
    description: str
    argument_hint: str | None = None


@attrs.frozen(kw_only=True)
class PaletteCommandEntry:
    """A palette command: workbench work with no session. Immutable."""

    kind: Literal["palette"] = attrs.field(default="palette", init=False)
    id: str
    title: str


CommandEntry = SlashCommandEntry | PaletteCommandEntry
"""One entry of `Manifest.commands`, discriminated by ``kind``."""


def _frozen_schema(value: FrozenJsonObject | JsonObject) -> FrozenJsonObject:
    return freeze_object(value, type_name="ToolEntry.input_schema")


@attrs.frozen(kw_only=True)
class ToolEntry:
    """An AI tool: its name, description and the JSON Schema of its input. Immutable.

    ``input_schema`` is frozen JSON (read-only mappings and tuples), like the tool's own.
    """

    name: str
    description: str
    input_schema: FrozenJsonObject = attrs.field(hash=False, converter=_frozen_schema)


@attrs.frozen(kw_only=True)
class AgentEntry:
    """A declared agent. Immutable."""

    id: str
    description: str
    model: str | None = None
    instructions: str | None = None


@attrs.frozen(kw_only=True)
class HookEntry:
    """A ``before_action`` hook: its target (a host action or ``command:<id>``). Immutable."""

    target: str


@attrs.frozen(kw_only=True)
class EffectEntry:
    """A long-running effect, by id. Immutable."""

    id: str


@attrs.frozen(kw_only=True)
class ViewEntry:
    """A renderer-lane view. Immutable."""

    id: str
    title: str


@attrs.frozen(kw_only=True)
class ActionEntry:
    """An action a model may propose for the user to confirm: its type, description and the
    JSON Schema of its payload. Immutable."""

    type: str
    description: str
    payload_schema: FrozenJsonObject = attrs.field(hash=False, converter=_frozen_schema)


@attrs.frozen(kw_only=True)
class WidgetEntry:
    """A widget shown inside a chat: its id, description and the JSON Schema of its data. Immutable."""

    id: str
    description: str
    data_schema: FrozenJsonObject = attrs.field(hash=False, converter=_frozen_schema)


@attrs.frozen(kw_only=True)
class McpServerEntry:
    """An MCP server the mod's sessions may use: its id, description and transport
    (``"stdio"`` or ``"http"``), never its tools (the host lists them at runtime), and what
    the mod trusts of it: the tools it declares read-only (``read_only_tools``) and whether
    the server's ``readOnlyHint`` counts (``trust_annotations``). Immutable."""

    id: str
    description: str
    transport: Literal["stdio", "http"]
    read_only_tools: tuple[str, ...] = ()  # absent from manifests made before read-only tools were kept: none
    trust_annotations: bool = False


def _version(instance: object, attribute: attrs.Attribute[int], value: int) -> None:
    if isinstance(value, bool) or value != MANIFEST_VERSION:
        raise SerializationError(
            f"manifest_version {show(value)} is not supported (this host reads version "
            f"{MANIFEST_VERSION}); rebuild the manifest with this host",
            value=value,
            type_name="Manifest",
        )


@attrs.frozen(kw_only=True)
class Manifest:
    """The build-time fold of a mod: everything about it that is data, nothing callable.

    Immutable. Made by `build_manifest` (in a sandbox) or `manifest_from_mod`; `to_json`
    gives the same bytes for the same module on any machine. The format is published as
    ``docs/manifest.schema.json``.
    """

    manifest_version: int = attrs.field(default=MANIFEST_VERSION, validator=_version)
    id: str
    metadata: ManifestMetadata
    commands: tuple[CommandEntry, ...] = ()
    tools: tuple[ToolEntry, ...] = ()
    agents: tuple[AgentEntry, ...] = ()
    hooks: tuple[HookEntry, ...] = ()
    effects: tuple[EffectEntry, ...] = ()
    views: tuple[ViewEntry, ...] = ()
    actions: tuple[ActionEntry, ...] = ()  # absent from manifests made before actions: read as none
    widgets: tuple[WidgetEntry, ...] = ()  # absent from manifests made before widgets: read as none
    mcp_servers: tuple[McpServerEntry, ...] = ()  # absent from manifests made before MCP: read as none

    def to_data(self) -> JsonObject:
        """The manifest as plain JSON data (dicts, lists, strings, numbers, None)."""
        return cast(JsonObject, converter.unstructure(self))

    def to_json(self) -> str:
        """Deterministic JSON: sorted keys, two-space indent, UTF-8 text, trailing newline."""
        return dump_json(self.to_data())

    @classmethod
    def from_json(cls, text: str | bytes) -> Manifest:
        """Read JSON written by `to_json`; raises `SerializationError` naming the problem.

        That includes text that is not JSON or not text at all, bytes that do not decode,
        data nested more than 100 levels deep, and numbers JSON readers cannot all hold
        (integers beyond 64 bits, floats that overflow, NaN, infinities).
        """
        return cls.from_data(load_json(text, "Manifest"))

    @classmethod
    def from_data(cls, data: object) -> Manifest:
        """Structure plain JSON data into a `Manifest`; raises `SerializationError`."""
        result = structure(data, cls)
        assert isinstance(result, Manifest)
        return result


def dump_json(data: object) -> str:
    """The one JSON layout of manifests (sorted keys, fixed separators, final newline)."""
    return json.dumps(data, sort_keys=True, indent=2, separators=(",", ": "), ensure_ascii=False) + "\n"


def _json_object(value: object, _: object) -> JsonObject:
    if not isinstance(value, Mapping) or not all(isinstance(k, str) for k in value):
        raise SerializationError(
            f"expected a JSON object (a JSON Schema), got {show(value)}", value=value, type_name="JsonObject"
        )
    return cast(JsonObject, copy.deepcopy(dict(value)))


def _structure_command(value: object, _: object) -> CommandEntry:
    kind = value.get("kind") if isinstance(value, Mapping) else None
    if kind == "slash":
        return converter.structure(value, SlashCommandEntry)
    if kind == "palette":
        return converter.structure(value, PaletteCommandEntry)
    raise SerializationError(
        f"a manifest command needs 'kind' 'slash' or 'palette', got {show(kind)} in {show(value)}",
        value=value,
        type_name="CommandEntry",
    )


register_tagged(SlashCommandEntry, "kind")
register_tagged(PaletteCommandEntry, "kind")
converter.register_structure_hook(CommandEntry, _structure_command)
converter.register_unstructure_hook(CommandEntry, lambda value: converter.unstructure(value, type(value)))
converter.register_structure_hook_func(lambda tp: tp == JsonObject, _json_object)
converter.register_unstructure_hook_func(lambda tp: tp == JsonObject, lambda value: copy.deepcopy(value))


def manifest_from_mod(mod: Mod) -> Manifest:
    """Derive the manifest of a `Mod`: pure, the same for equal mods.

    Used by the sandbox child (build-time fold) and by `load_verified` to check that the
    runtime fold agrees with the build. Raises `ModDefinitionError` when ``mod`` is not a
    `Mod`.
    """
    if not isinstance(mod, Mod):
        raise ModDefinitionError(
            f"manifest_from_mod needs a Mod made by define_mod(...), got {show(mod)} "
            f"({type(mod).__name__})",
            field="mod",
            value=mod,
        )
    commands: list[CommandEntry] = []
    for cmd in mod.commands:
        if isinstance(cmd, SlashCommand):
            commands.append(
                SlashCommandEntry(id=cmd.id, description=cmd.description, argument_hint=cmd.argument_hint)
            )
        elif isinstance(cmd, PaletteCommand):
            commands.append(PaletteCommandEntry(id=cmd.id, title=cmd.title))
    return Manifest(
        id=mod.id,
        metadata=ManifestMetadata(
            display_name=mod.metadata.display_name, description=mod.metadata.description
        ),
        commands=tuple(commands),
        tools=tuple(
            ToolEntry(name=t.name, description=t.description, input_schema=t.input_schema)
            for t in mod.ai.tools
        ),
        agents=tuple(
            AgentEntry(id=a.id, description=a.description, model=a.model, instructions=a.instructions)
            for a in mod.ai.agents
        ),
        hooks=tuple(HookEntry(target=h.target) for h in mod.hooks),
        effects=tuple(EffectEntry(id=e.id) for e in mod.effects),
        views=tuple(ViewEntry(id=v.id, title=v.title) for v in mod.views),
        actions=tuple(
            ActionEntry(type=a.type, description=a.description, payload_schema=a.payload_schema) for a in mod.actions
        ),
        widgets=tuple(WidgetEntry(id=w.id, description=w.description, data_schema=w.data_schema) for w in mod.widgets),
        mcp_servers=tuple(
            McpServerEntry(
                id=m.id,
                description=m.description,
                transport=m.transport,
                read_only_tools=m.read_only_tools,
                trust_annotations=m.trust_annotations,
            )
            for m in mod.ai.mcp_servers
        ),
    )

"""The `Model` protocol and what a model sees of a turn."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Literal, Protocol

import attrs
from typing_extensions import TypeAlias

from modular_sdk import AiMessage
from modular_sdk._frozen import thaw_object
from modular_sdk._schema import JsonObject, JsonValue

__all__ = ["HistoryEntry", "Model", "ModelReply", "ModelRequest", "ToolCall", "ToolResult", "ToolSpec"]


@attrs.frozen(kw_only=True)
class ToolCall:
    """A model's request to call a mod tool with JSON ``input``; the host answers it."""

    name: str
    input: JsonObject = attrs.field(factory=dict)
    call_id: str | None = None


ModelReply: TypeAlias = str | ToolCall


@attrs.frozen(kw_only=True)
class ToolResult:
    """What a tool call gave back to the model (``error`` set when it failed)."""

    call_id: str
    name: str
    input: JsonObject
    output: str | None
    error: str | None = None


@attrs.frozen(kw_only=True)
class ToolSpec:
    """A tool the model may call: name, description and input JSON Schema.

    ``input_schema`` is plain JSON data (dicts and lists), the spec's own copy of the tool's
    frozen schema: a model may hand it to ``json.dumps`` or change it without touching the
    tool.
    """

    name: str
    description: str
    input_schema: JsonObject = attrs.field(converter=thaw_object)


@attrs.frozen(kw_only=True)
class HistoryEntry:
    """One completed earlier turn as the model sees it.

    ``erased`` is ``True`` for a turn the user had forgotten (``host.lineage.forget``):
    its ``text`` and ``reply`` are then empty, and a model adapter should say that
    something was erased there rather than leave a silent gap. ``retracted`` is ``True``
    for a turn someone found wrong (``host.lineage.retract``), ``retraction_reason`` says
    why: the turn is still there, and a model adapter should say not to rely on it.
    """

    kind: Literal["prompt", "notification"]
    text: str
    reply: str
    erased: bool = False
    retracted: bool = False
    retraction_reason: str | None = None


@attrs.frozen(kw_only=True)
class ModelRequest:
    """What a model is asked for one step of a turn.

    ``text`` is the input exactly as sent (a prompt verbatim; a notification's title and
    body), ``kind`` says which (a notification is a system event, never the user),
    ``history`` the completed turns before this one (a read-only sequence: a view
    over the host's own lists, never a copy; read what you need), ``output_schema`` the JSON Schema the
    reply must match (``run(..., output_type=T)``), ``tools`` what the model may call and
    ``tool_results`` the answers to its earlier calls in this turn.
    """

    session_id: str
    model: str
    kind: Literal["prompt", "notification"]
    text: str
    message: AiMessage
    history: Sequence[HistoryEntry]
    output_schema: JsonValue = None
    instructions: str | None = None
    tools: tuple[ToolSpec, ...] = ()
    tool_results: tuple[ToolResult, ...] = ()


class Model(Protocol):
    """A model: answers a request with reply text or a `ToolCall`."""

    @property
    def name(self) -> str:
        """The model name sessions report as ``session.model``."""
        ...

    async def respond(self, request: ModelRequest) -> str | ToolCall: ...

"""The `Model` protocol and what a model sees of a turn."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Literal, Protocol, TypeAlias

import attrs

from modular_sdk import AiMessage, ModDefinitionError, Usage
from modular_sdk._frozen import thaw_object
from modular_sdk._rules import show
from modular_sdk._schema import JsonObject, JsonValue

__all__ = [
    "HistoryEntry",
    "Model",
    "ModelReply",
    "ModelRequest",
    "Reply",
    "ToolCall",
    "ToolResult",
    "ToolSpec",
    "Usage",
    "add_usage",
]


def add_usage(a: Usage | None, b: Usage | None) -> Usage | None:
    """The two added up; ``None`` only when neither reported usage."""
    if a is None:
        return b
    if b is None:
        return a
    return Usage(input_tokens=a.input_tokens + b.input_tokens, output_tokens=a.output_tokens + b.output_tokens)


def _optional_usage(instance: object, attribute: attrs.Attribute[Usage | None], value: Usage | None) -> None:
    if value is not None and not isinstance(value, Usage):
        raise ModDefinitionError(
            f"{type(instance).__name__}.{attribute.name} must be a Usage or None, got {show(value)}; "
            "pass e.g. Usage(input_tokens=812, output_tokens=64)",
            field=attribute.name,
            value=value,
        )


@attrs.frozen(kw_only=True)
class ToolCall:
    """A model's request to call a mod tool with JSON ``input``; the host answers it.

    ``usage``: the tokens the model call that asked for it used, when the model knows.
    """

    name: str
    input: JsonObject = attrs.field(factory=dict)
    call_id: str | None = None
    usage: Usage | None = attrs.field(default=None, validator=_optional_usage, kw_only=True)


@attrs.frozen(kw_only=True)
class Reply:
    """Reply text with the tokens the model call used. Immutable.

    A model may return plain ``str`` (no usage known) or a `Reply` to report usage::

        return Reply(text="done", usage=Usage(input_tokens=812, output_tokens=64))
    """

    text: str
    usage: Usage | None = attrs.field(default=None, validator=_optional_usage)


ModelReply: TypeAlias = str | Reply | ToolCall
"""What ``Model.respond`` returns: reply text (``str``, or a `Reply` carrying `Usage`) or a `ToolCall`."""


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

    ``kind="summary"`` stands for a compacted window of earlier turns (``Host(context=...)``,
    docs/memory.md): ``text`` is the summary, ``reply`` empty, ``covers`` the ordinals of
    the first and last turns it stands for.
    """

    kind: Literal["prompt", "notification", "summary"]
    text: str
    reply: str
    erased: bool = False
    retracted: bool = False
    retraction_reason: str | None = None
    covers: tuple[int, int] | None = None


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
    """A model: answers a request with reply text (``str`` or `Reply`) or a `ToolCall`.

    A model that knows how many tokens a call used returns a `Reply` (or a `ToolCall`) with
    ``usage``; returning plain ``str`` stays valid. A model may also have
    ``stream(request)``, an async iterator of text chunks that may end with a `ToolCall`
    and may yield one `Usage` (the last one yielded counts) once the server said it.

    A model that holds a secret (an API key) may also have ``scrub(text) -> str``, returning
    ``text`` with every copy of the secret replaced, however it is encoded (`OpenAIModel`
    has it; `RecordingModel` forwards its inner model's): the host passes every text that
    comes from outside through it (replies, tool calls, tool outputs of mods and MCP
    servers, errors) before anything is stored, published, recorded or raised.
    """

    @property
    def name(self) -> str:
        """The model name sessions report as ``session.model``."""
        ...

    async def respond(self, request: ModelRequest) -> ModelReply: ...

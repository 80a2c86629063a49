"""What the CLI shows while a turn runs: tool calls and notifications, as they happen.

`ObservedModel` wraps the host's model and reports each step of a turn to a callback: a
notification delivered to a session, a tool call the model asked for, and what the tool
gave back. Transcripts need none of it: tool calls are part of the turn records (docs/the-record.md),
shown by ``host.transcript``.
"""

from __future__ import annotations

import json
from collections.abc import Callable

import attrs

from modular_sdk import AiMessage

from ..models._protocol import Model, ModelReply, ModelRequest, ToolResult

__all__ = ["Notified", "ObservedModel", "Observation", "ToolReturned", "describe"]


@attrs.frozen(kw_only=True)
class Notified:
    """A notification turn started in ``session_id``."""

    session_id: str
    text: str


@attrs.frozen(kw_only=True)
class ToolReturned:
    """The host answered a tool call of a turn of ``session_id`` with ``result``."""

    session_id: str
    message: AiMessage = attrs.field(eq=False)
    result: ToolResult


Observation = Notified | ToolReturned


def _short(text: str, limit: int = 200) -> str:
    return text if len(text) <= limit else text[: limit - 3] + "..."


def describe(result: ToolResult) -> str:
    """``tool 'grep' {"pattern": "x"} -> 3 matches`` (or ``-> error: ...``)."""
    arguments = json.dumps(result.input, ensure_ascii=False, sort_keys=True)
    outcome = f"error: {result.error}" if result.error is not None else (result.output or "")
    return f"tool {result.name!r} {_short(arguments)} -> {_short(outcome.replace(chr(10), ' '))}"


class ObservedModel:
    """``inner``, reporting notifications and tool results to ``report`` as they happen."""

    def __init__(self, inner: Model, report: Callable[[Observation], None]) -> None:
        self._inner = inner
        self._report = report

    @property
    def name(self) -> str:
        return self._inner.name

    async def respond(self, request: ModelRequest) -> ModelReply:
        if request.tool_results:
            self._report(ToolReturned(session_id=request.session_id, message=request.message, result=request.tool_results[-1]))
        elif request.kind == "notification":
            self._report(Notified(session_id=request.session_id, text=request.text))
        return await self._inner.respond(request)

    def __repr__(self) -> str:
        return f"ObservedModel({self._inner!r})"

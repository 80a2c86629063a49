"""What the CLI shows while a turn runs: tool calls and notifications, as they happen.

`ObservedModel` wraps the host's model and reports each step of a turn to a callback: a
notification delivered to a session, a tool call the model asked for, and what the tool
gave back. The turn records keep neither tool calls nor their results, so the CLI keeps
them (`ToolLog`) to show them in transcripts.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Sequence

import attrs

from modular_sdk import AiMessage

from ..models._protocol import Model, ModelRequest, ToolCall, ToolResult

__all__ = ["Notified", "ObservedModel", "Observation", "ToolLog", "ToolReturned", "describe", "with_tool_calls"]


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


class ToolLog:
    """The tool calls of each turn this process ran, keyed by the turn's message."""

    def __init__(self) -> None:
        self._calls: dict[int, tuple[AiMessage, list[ToolResult]]] = {}

    def add(self, seen: ToolReturned) -> None:
        entry = self._calls.setdefault(id(seen.message), (seen.message, []))
        entry[1].append(seen.result)

    def of(self, message: AiMessage) -> Sequence[ToolResult]:
        entry = self._calls.get(id(message))
        return entry[1] if entry is not None and entry[0] is message else ()


class ObservedModel:
    """``inner``, reporting notifications and tool results to ``report`` as they happen."""

    def __init__(self, inner: Model, report: Callable[[Observation], None]) -> None:
        self._inner = inner
        self._report = report

    @property
    def name(self) -> str:
        return self._inner.name

    async def respond(self, request: ModelRequest) -> str | ToolCall:
        if request.tool_results:
            self._report(ToolReturned(session_id=request.session_id, message=request.message, result=request.tool_results[-1]))
        elif request.kind == "notification":
            self._report(Notified(session_id=request.session_id, text=request.text))
        return await self._inner.respond(request)

    def __repr__(self) -> str:
        return f"ObservedModel({self._inner!r})"


_HEAD = re.compile(r"^#(\d+) \[")


def with_tool_calls(transcript: str, ordinals: dict[int, Sequence[ToolResult]]) -> str:
    """``transcript`` with each turn's tool calls (by ordinal) listed before its reply."""
    if not any(ordinals.values()):
        return transcript
    out: list[str] = []
    pending: Sequence[ToolResult] = ()
    for line in transcript.splitlines():
        head = _HEAD.match(line)
        if head is not None:
            pending = ordinals.get(int(head.group(1)), ())
        elif pending and not line.startswith("    | "):
            out += [f"    {describe(result)}" for result in pending]
            pending = ()
        out.append(line)
    out += [f"    {describe(result)}" for result in pending]
    return "\n".join(out)

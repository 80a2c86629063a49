"""What the host reports to OpenTelemetry, as seen by the engine: `Telemetry`.

This module imports nothing of opentelemetry. Its classes report nothing: they are what a
host runs with when the ``otel`` extra is absent or no provider records, and cost a call
that returns at once. ``_setup.telemetry_for`` picks, when a host opens, between them and
the instrumentation of ``_otel`` (imported only then).
"""

from __future__ import annotations

from contextlib import AbstractContextManager, nullcontext
from typing import TYPE_CHECKING, Literal

if TYPE_CHECKING:
    from modular_sdk import Usage
    from modular_sdk._frozen import FrozenJsonObject

    from ..models._protocol import ModelRequest, ToolResult
    from ..sessions._state import SessionState, TurnState
    from ..sessions._submission import Submission

__all__ = [
    "CAPTURE_CONTENT_ENV",
    "ChatCall",
    "CommandRun",
    "Telemetry",
    "ToolRun",
    "TurnSpan",
    "NO_TELEMETRY",
]

CAPTURE_CONTENT_ENV = "OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT"
"""Set to ``true`` to record prompts, replies and tool input and output on spans."""


class ChatCall:
    """One model call; `replied` says how it ended. This one records nothing."""

    __slots__ = ()

    def replied(self, reply: object, *, usage: Usage | None = None) -> None:
        """The model answered ``reply`` (text, a `ToolCall`, or anything the turn refuses)."""


class ToolRun:
    """One tool call; `finished` says how it ended. This one records nothing."""

    __slots__ = ()

    def finished(self, result: ToolResult) -> None:
        """The tool answered ``result`` (its ``error`` set when it was refused or failed)."""


class CommandRun:
    """One command invocation; `finished` says how it ended. This one records nothing."""

    __slots__ = ()

    def finished(self, submission: Submission) -> None:
        """The command ended with ``submission``."""


class TurnSpan:
    """One turn's span: current around its model and tool calls, ended once the turn is
    durable. This one records nothing."""

    __slots__ = ()

    def current(self) -> AbstractContextManager[object]:
        """Make the turn's span the current one inside the ``with`` block."""
        return _NOTHING

    def end(self, turn: TurnState) -> None:
        """End the span with the turn's outcome (read now: erased text is never read)."""


_NO_CHAT: AbstractContextManager[ChatCall] = nullcontext(ChatCall())
_NO_TOOL: AbstractContextManager[ToolRun] = nullcontext(ToolRun())
_NO_COMMAND: AbstractContextManager[CommandRun] = nullcontext(CommandRun())
_NO_TURN = TurnSpan()
_NOTHING: AbstractContextManager[object] = nullcontext()


class Telemetry:
    """What the host reports through; this one reports nothing and imports nothing."""

    __slots__ = ()

    def turn(self, session: SessionState, turn: TurnState) -> TurnSpan:
        """Start the span of ``turn`` (running now) of ``session``."""
        return _NO_TURN

    def chat(self, session: SessionState, turn: TurnState, request: ModelRequest) -> AbstractContextManager[ChatCall]:
        """Around one model call of ``turn``."""
        return _NO_CHAT

    def tool(self, turn: TurnState, call_id: str, name: str, arguments: FrozenJsonObject) -> AbstractContextManager[ToolRun]:
        """Around one tool call of ``turn`` (a mod's tool or an MCP server's)."""
        return _NO_TOOL

    def command(
        self, *, invocation_id: str, session_id: str | None, mod_id: str, command_id: str, argument: str | None
    ) -> AbstractContextManager[CommandRun]:
        """Around one command invocation."""
        return _NO_COMMAND

    def session_made(self, kind: Literal["fork", "spawn"], session_id: str, parent_turn_id: str | None) -> None:
        """A fork or spawn was made: an event on the current span; the new session's first
        turn will link to the parent turn's span."""

    def carried(self) -> AbstractContextManager[object]:
        """The caller's context, captured now, to make current again in a job's task."""
        return _NOTHING

    def memory_made(self, record_id: str, kind: str, session_id: str) -> None:
        """A memory record was made (API.md section 20): a ``create_memory`` span, a child of
        the current one (the turn whose tool made it, or the turn that compacted)."""


NO_TELEMETRY = Telemetry()

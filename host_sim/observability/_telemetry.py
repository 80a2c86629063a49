"""What the host reports to OpenTelemetry, as seen by the engine: `Telemetry`.

This module imports nothing of opentelemetry. Its classes report nothing: they are what a
host runs with when the ``otel`` extra is absent or no provider records, and cost a call
that returns at once. ``_setup.telemetry_for`` picks, when a host opens, between them and
the instrumentation of ``_otel`` (imported only then).

What it reads of a session, a turn and a command's outcome is declared here, read-only, as
`SessionView`, `TurnView` and `CommandOutcome`: the package imports nothing of the sessions
that call it (trio's ``Instrument`` is the model), so the arrow runs one way, sessions to
observability.
"""

from __future__ import annotations

from contextlib import AbstractContextManager, nullcontext
from datetime import datetime
from typing import TYPE_CHECKING, Literal, Protocol

if TYPE_CHECKING:
    from modular_sdk import AiMessage, Author, TurnStatus, Usage
    from modular_sdk._frozen import FrozenJsonObject

    from ..models._protocol import ModelRequest, ToolResult
    from ..stores._records import ErrorKind, SessionRecord

__all__ = [
    "CAPTURE_CONTENT_ENV",
    "ChatCall",
    "CommandOutcome",
    "CommandRun",
    "SessionView",
    "Telemetry",
    "ToolRun",
    "TurnSpan",
    "TurnView",
    "NO_TELEMETRY",
]

CAPTURE_CONTENT_ENV = "OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT"
"""Set to ``true`` to record prompts, replies and tool input and output on spans."""


class SessionView(Protocol):
    """What telemetry reads of a session (the host's live session state)."""

    @property
    def id(self) -> str: ...
    @property
    def record(self) -> SessionRecord: ...


class TurnView(Protocol):
    """What telemetry reads of a turn, as it runs and when it ends (the host's live turn
    state). Its text is read only while ``erased_at`` is ``None``."""

    @property
    def id(self) -> str: ...
    @property
    def session_id(self) -> str: ...
    @property
    def ordinal(self) -> int: ...
    @property
    def message(self) -> AiMessage: ...
    @property
    def author(self) -> Author: ...
    @property
    def status(self) -> TurnStatus: ...
    @property
    def reply(self) -> str | None: ...
    @property
    def error(self) -> str | None: ...
    @property
    def failure(self) -> ErrorKind | None: ...
    @property
    def usage(self) -> Usage | None: ...
    @property
    def erased_at(self) -> datetime | None: ...


class CommandOutcome(Protocol):
    """What telemetry reads of how a command ended (what ``host.run_command`` gives back)."""

    @property
    def text(self) -> str: ...
    @property
    def error(self) -> str | None: ...
    @property
    def error_kind(self) -> ErrorKind | None: ...


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

    def finished(self, submission: CommandOutcome) -> None:
        """The command ended with ``submission``."""


class TurnSpan:
    """One turn's span: current around its model and tool calls, ended once the turn is
    durable. This one records nothing."""

    __slots__ = ()

    def current(self) -> AbstractContextManager[object]:
        """Make the turn's span the current one inside the ``with`` block."""
        return _NOTHING

    def end(self, turn: TurnView) -> None:
        """End the span with the turn's outcome (read now: erased text is never read)."""


_NO_CHAT: AbstractContextManager[ChatCall] = nullcontext(ChatCall())
_NO_TOOL: AbstractContextManager[ToolRun] = nullcontext(ToolRun())
_NO_COMMAND: AbstractContextManager[CommandRun] = nullcontext(CommandRun())
_NO_TURN = TurnSpan()
_NOTHING: AbstractContextManager[object] = nullcontext()


class Telemetry:
    """What the host reports through; this one reports nothing and imports nothing."""

    __slots__ = ()

    def turn(self, session: SessionView, turn: TurnView) -> TurnSpan:
        """Start the span of ``turn`` (running now) of ``session``."""
        return _NO_TURN

    def chat(self, session: SessionView, turn: TurnView, request: ModelRequest) -> AbstractContextManager[ChatCall]:
        """Around one model call of ``turn``."""
        return _NO_CHAT

    def tool(self, turn: TurnView, call_id: str, name: str, arguments: FrozenJsonObject) -> AbstractContextManager[ToolRun]:
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
        """A memory record was made (docs/memory.md): a ``create_memory`` span, a child of
        the current one (the turn whose tool made it, or the turn that compacted)."""


NO_TELEMETRY = Telemetry()

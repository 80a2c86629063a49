"""The handles and contexts the host gives to handlers.

These are `typing.Protocol` classes: mod code is typed against them and the host
simulator implements them. Handles are made by the host only; a mod never constructs one.
"""

from __future__ import annotations

from datetime import datetime
from typing import Protocol, TypeVar, overload

import attrs

from ._ids import AiRunnerId, SessionId, TurnId, TurnStatus
from ._lineage import AiSessionLineage
from ._memory import AiMemory
from ._messages import AiMessage, AiSessionDisplayMetadata, Author
from ._records import ToolCallRecord, Usage, WidgetPlacement

__all__ = [
    "ActionContext",
    "AgentHandle",
    "AiAgents",
    "AiContext",
    "AiRunResult",
    "AiSessionHandle",
    "AiSessions",
    "AiTurnHandle",
    "CommandContext",
    "EffectContext",
    "SlashCommandContext",
    "ToolContext",
]

T = TypeVar("T")


class AiTurnHandle(Protocol):
    """One turn of a session: its input message, author, reply and status.

    Obtain one from `AiSessionHandle.send`, `AiSessionHandle.notify` or
    `AiSessionHandle.turns`; the host makes them.
    """

    @property
    def id(self) -> TurnId:
        """Stable identifier of this turn."""
        ...

    @property
    def ordinal(self) -> int:
        """0-based position in the conversation (forks keep their parent's ordinals)."""
        ...

    @property
    def session_id(self) -> SessionId:
        """The session that ran this turn (for a copied turn: the ancestor that ran it)."""
        ...

    @property
    def status(self) -> TurnStatus:
        """``"running"``, ``"completed"`` or ``"failed"``, as of now."""
        ...

    @property
    def message(self) -> AiMessage:
        """The input message that drove this turn."""
        ...

    @property
    def message_id(self) -> str:
        """Identifier of the stamped input message."""
        ...

    @property
    def author(self) -> Author:
        """Who sent the input, stamped by the host from the calling context."""
        ...

    @property
    def reply(self) -> str | None:
        """The model's final reply; ``None`` until completed (and for a failed turn)."""
        ...

    @property
    def error(self) -> str | None:
        """Why the turn failed; ``None`` unless ``status == "failed"``."""
        ...

    @property
    def started_at(self) -> datetime:
        """When the turn began (the host's clock)."""
        ...

    @property
    def finished_at(self) -> datetime | None:
        """When it completed or failed; ``None`` while it runs."""
        ...

    @property
    def erased_at(self) -> datetime | None:
        """When the user had it forgotten (its text and reply are gone); ``None`` otherwise."""
        ...

    @property
    def retracted_at(self) -> datetime | None:
        """When someone found it wrong (the turn stays, text and all); ``None`` otherwise."""
        ...

    @property
    def retraction_reason(self) -> str | None:
        """Why it was retracted (the first reason given); ``None`` if it was not."""
        ...

    @property
    def tool_calls(self) -> tuple[ToolCallRecord, ...]:
        """The tool calls the turn made, in order; durable with the turn, erased with it."""
        ...

    @property
    def usage(self) -> Usage | None:
        """The tokens its model calls used, added up; ``None`` when no call reported usage."""
        ...

    @property
    def widgets(self) -> tuple[WidgetPlacement, ...]:
        """The widgets its reply placed (``<mod-widget>`` tags that fit), in reply order; durable, erased with it."""
        ...

    @property
    def runner_id(self) -> AiRunnerId:
        """The model runner that produced this turn."""
        ...

    async def fork(self, *, metadata: AiSessionDisplayMetadata | None = None) -> AiSessionHandle:
        """Fork the session immediately after this turn, whatever entered it afterwards.

        Waits for a running turn to complete. Raises `TurnFailedError` for a failed turn.
        """
        ...


class AiSessionHandle(Protocol):
    """An AI session: a conversation the host runs turn by turn.

    Obtain one from ``ctx.session``, ``ctx.ai.sessions.create()``, ``host.sessions``, or
    from another handle's `fork`, `spawn`, `parent` and `children`.
    """

    @property
    def id(self) -> SessionId:
        """Stable identifier of this session."""
        ...

    @property
    def lineage(self) -> AiSessionLineage:
        """How this session came to exist: root, spawned, or forked."""
        ...

    @property
    def metadata(self) -> AiSessionDisplayMetadata | None:
        """Immutable presentation metadata, if any was given."""
        ...

    @property
    def model(self) -> str:
        """The model this session runs on."""
        ...

    @property
    def cwd(self) -> str:
        """The working directory of this session."""
        ...

    @property
    def created_at(self) -> datetime:
        """When the session was created (the host's clock)."""
        ...

    @property
    def last_activity_at(self) -> datetime:
        """When its latest own turn or command invocation started, else `created_at`."""
        ...

    async def send(self, message: AiMessage, *, request_id: str | None = None) -> AiTurnHandle:
        """Put a message into this session and wait for the turn it drives to complete.

        Raises `TurnFailedError` when the model or a tool fails the turn, and
        `ReentrantTurnError` when called from a handler running inside a turn of this
        session. ``request_id`` is the caller's key: a retry with the same key returns the
        turn the first attempt stored instead of storing the message twice.
        """
        ...

    @overload
    async def run(self, prompt: str) -> AiRunResult: ...

    @overload
    async def run(self, prompt: str, *, output_type: type[T]) -> T: ...

    async def run(self, prompt: str, *, output_type: type[T] | None = None) -> AiRunResult | T:
        """Send a prompt and wait for the finished answer.

        With ``output_type`` the reply is parsed as JSON and structured into that type;
        a reply that does not match raises `ReplyValidationError` (never coerced).
        """
        ...

    async def notify(self, *, title: str, body: str) -> AiTurnHandle:
        """Shorthand for ``send(AiNotificationMessage(title=..., body=...))``."""
        ...

    async def fork(self, *, metadata: AiSessionDisplayMetadata | None = None) -> AiSessionHandle:
        """Copy the conversation through its last completed turn into a new session.

        Raises `NoConversationError` when the session has no completed turn.
        """
        ...

    async def spawn(self, *, metadata: AiSessionDisplayMetadata | None = None) -> AiSessionHandle:
        """Make a fresh child session (empty history, same model and cwd).

        Only inside a command or tool handler; raises `SpawnContextError` elsewhere.
        """
        ...

    async def parent(self) -> AiSessionHandle | None:
        """The session this one was forked or spawned from, or ``None`` for a root."""
        ...

    async def children(self) -> list[AiSessionHandle]:
        """Forks and spawns of this session, in creation order."""
        ...

    async def turns(self) -> list[AiTurnHandle]:
        """The history, inherited turns included, in ordinal order."""
        ...


@attrs.frozen(kw_only=True)
class AiRunResult:
    """The finished answer of `AiSessionHandle.run`: reply ``text`` and the ``turn``. Immutable."""

    text: str
    turn: AiTurnHandle


class AgentHandle(Protocol):
    """A declared agent; obtain one from ``ctx.ai.agents.get(id)``."""

    @property
    def id(self) -> str:
        """The agent id as declared."""
        ...

    async def spawn(self, *, metadata: AiSessionDisplayMetadata | None = None) -> AiSessionHandle:
        """A new root session configured by this agent (not a child of any session)."""
        ...


class AiSessions(Protocol):
    """The workspace session catalogue, ``ctx.ai.sessions``."""

    async def create(
        self,
        *,
        metadata: AiSessionDisplayMetadata | None = None,
        model: str | None = None,
        cwd: str | None = None,
    ) -> AiSessionHandle:
        """A new, empty root session."""
        ...

    async def get(self, session_id: str) -> AiSessionHandle:
        """The session with this id; raises `UnknownSessionError`."""
        ...


class AiAgents(Protocol):
    """The agents declared by loaded mods, ``ctx.ai.agents``."""

    def get(self, agent_id: str) -> AgentHandle:
        """The agent with this id; raises `LookupError` naming the known agents."""
        ...


class AiContext(Protocol):
    """``ctx.ai``: sessions, agents and memory."""

    @property
    def sessions(self) -> AiSessions: ...

    @property
    def agents(self) -> AiAgents: ...

    @property
    def memory(self) -> AiMemory:
        """What this handler remembers (docs/memory.md), stamped with its mod and command or tool."""
        ...


class CommandContext(Protocol):
    """What a palette command's ``run(ctx)`` receives: no session."""

    @property
    def ai(self) -> AiContext: ...

    @property
    def mod_id(self) -> str: ...

    @property
    def command_id(self) -> str: ...


class CompletionContext(Protocol):
    """What a slash command's ``complete(prefix, ctx)`` receives: which command it completes.

    It reaches no session and runs nothing: a completer offers values, fast (it runs on
    every keystroke a UI asks about, with the host's handler timeout).
    """

    @property
    def mod_id(self) -> str: ...

    @property
    def command_id(self) -> str: ...


class SlashCommandContext(Protocol):
    """What a slash command's ``run(argument, ctx)`` receives."""

    @property
    def session(self) -> AiSessionHandle:
        """The chat session the command was typed into."""
        ...

    @property
    def ai(self) -> AiContext: ...

    @property
    def mod_id(self) -> str: ...

    @property
    def command_id(self) -> str: ...

    async def report_output(self, *, kind: str, output_id: str) -> None:
        """Report an output this handler really produced (a proposal, a file, a change).

        The host links it to the trace of the session the handler runs in (making that
        session a ``chat``-origin trace when it has none), in one store transaction. A mod
        never names a trace or a session to link. ``kind`` says what it is
        (``"proposal"``); ``output_id`` is its stable id (``"chg-1"``), unique in the
        store: reporting it again from the same session changes nothing, from another
        session raises the host's ``TraceError``, as does a host whose store keeps no traces.
        """
        ...


class ToolContext(Protocol):
    """What a tool's ``run(input, ctx)`` receives when the model calls it."""

    @property
    def session(self) -> AiSessionHandle:
        """The session whose turn called the tool (sending to it raises `ReentrantTurnError`)."""
        ...

    @property
    def ai(self) -> AiContext: ...

    @property
    def mod_id(self) -> str: ...

    @property
    def tool_name(self) -> str: ...

    @property
    def call_id(self) -> str: ...

    async def report_output(self, *, kind: str, output_id: str) -> None:
        """Report an output this handler really produced (a proposal, a file, a change).

        The host links it to the trace of the session the handler runs in (making that
        session a ``chat``-origin trace when it has none), in one store transaction. A mod
        never names a trace or a session to link. ``kind`` says what it is
        (``"proposal"``); ``output_id`` is its stable id (``"chg-1"``), unique in the
        store: reporting it again from the same session changes nothing, from another
        session raises the host's ``TraceError``, as does a host whose store keeps no traces.
        """
        ...


class EffectContext(Protocol):
    """What an effect's ``activate(ctx)`` receives."""

    @property
    def ai(self) -> AiContext: ...

    @property
    def mod_id(self) -> str: ...

    @property
    def effect_id(self) -> str: ...


class ActionContext(Protocol):
    """What an action's ``run(payload, ctx)`` receives once the user confirmed it.

    It acts as the user (the user confirmed it): ``session`` is the session the action was
    proposed in and ``ai`` the user's session catalogue.
    """

    @property
    def session(self) -> AiSessionHandle:
        """The session whose model proposed the action (its handles act as the user)."""
        ...

    @property
    def ai(self) -> AiContext: ...

    @property
    def mod_id(self) -> str: ...

    @property
    def action_type(self) -> str:
        """The declared type of the confirmed action (``"task.create"``)."""
        ...

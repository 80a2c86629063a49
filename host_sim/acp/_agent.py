"""The ACP agent: what each request of the Agent Client Protocol does to a `Host`.

An ACP session id is the host's session id. ``session/prompt`` runs the text as a host job
(``host.start``: ``/name args`` a slash command of a loaded mod, ``//text`` a literal
slash) and streams what the host's event stream says about it as ``session/update``s: the
model's deltas as ``agent_message_chunk``, tool calls as ``tool_call``/``tool_call_update``;
a reply that did not stream (a model without ``stream``, a command's output) is one chunk.
Each action the turn proposed (an MCP write among them) is asked with
``session/request_permission``; the choice is recorded on the action (``by="acp"``, the
option as the reason). ``session/cancel`` cancels the running job.

Imports the ``acp`` package: only ``host-sim acp`` imports this module, when it runs.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Sequence
from typing import Any, Literal

import anyio
import anyio.abc
from acp import PROTOCOL_VERSION, RequestError
from acp.interfaces import Client
from acp.schema import (
    AgentCapabilities,
    AgentMessageChunk,
    AllowedOutcome,
    AudioContentBlock,
    AuthenticateResponse,
    AvailableCommand,
    AvailableCommandInput,
    AvailableCommandsUpdate,
    ClientCapabilities,
    CloseSessionResponse,
    ContentToolCallContent,
    EmbeddedResourceContentBlock,
    ForkSessionResponse,
    ImageContentBlock,
    Implementation,
    InitializeResponse,
    ListSessionsResponse,
    LoadSessionResponse,
    NewSessionResponse,
    PermissionOption,
    PromptCapabilities,
    PromptResponse,
    ResourceContentBlock,
    ResumeSessionResponse,
    SessionCapabilities,
    SessionCloseCapabilities,
    SessionForkCapabilities,
    SessionInfo,
    SessionListCapabilities,
    SessionResumeCapabilities,
    SetSessionConfigOptionResponse,
    SetSessionModeResponse,
    TextContentBlock,
    ToolCallProgress,
    ToolCallStart,
    ToolCallUpdate,
    UnstructuredCommandInput,
    UserMessageChunk,
)

from modular_sdk import AiNotificationMessage, AiPromptMessage, ModularError, SessionDeletedError, UnknownSessionError
from modular_sdk._frozen import thaw, thaw_object
from modular_sdk._schema import JsonValue

from ..sessions._events import (
    CommandFinished,
    HostEvent,
    JobFinished,
    Lagged,
    ReplyDelta,
    ToolCalled,
    ToolFinished,
    TurnFinished,
    TurnStarted,
)
from ..sessions._handles import SessionHandle, TurnHandle
from ..sessions._host import Host
from ..sessions._jobs import Job
from ..sessions._submission import Submission
from ..traces._types import ActionRecord, PendingAction

__all__ = ["BY", "OPTIONS", "HostAgent", "TURN_META_KEY"]

BY = "acp"
"""Who decided an action answered through ACP (``decided_by``)."""

TURN_META_KEY = "host_sim/turnId"
"""The ``_meta`` key of a turn id: on a prompt's response (the turn it ran), on each user
message ``session/load`` replays, and on ``session/fork`` (fork at that turn: the fork holds
turns 0..it)."""

OptionId = Literal["allow_once", "allow_always", "reject_once", "reject_always"]

OPTIONS: tuple[PermissionOption, ...] = (
    PermissionOption(option_id="allow_once", name="Allow once", kind="allow_once"),
    PermissionOption(option_id="allow_always", name="Allow always", kind="allow_always"),
    PermissionOption(option_id="reject_once", name="Reject once", kind="reject_once"),
    PermissionOption(option_id="reject_always", name="Reject always", kind="reject_always"),
)
"""What ``session/request_permission`` offers for each proposed action; the option id is the kind."""

_OPTION_IDS: frozenset[str] = frozenset(option.option_id for option in OPTIONS)

_Block = TextContentBlock | ImageContentBlock | AudioContentBlock | ResourceContentBlock | EmbeddedResourceContentBlock

_EVENT_BUFFER = 10_000


def _refused(message: str, **data: JsonValue) -> RequestError:
    """A request error (invalid params) whose message is the host's own sentence."""
    return RequestError(-32602, message, {"message": message, **data} if data else {"message": message})


def _failed(message: str, **data: JsonValue) -> RequestError:
    """A request the host could not carry out (internal error), with the host's message."""
    return RequestError(-32603, message, {"message": message, **data})


def _text(text: str) -> TextContentBlock:
    return TextContentBlock(type="text", text=text)


def _prompt_text(blocks: Sequence[_Block]) -> str:
    """The prompt's text: its text blocks, and each resource link as its URI, one per line."""
    parts: list[str] = []
    for block in blocks:
        if isinstance(block, TextContentBlock):
            parts.append(block.text)
        elif isinstance(block, ResourceContentBlock):
            parts.append(block.uri)
        else:
            raise _refused(
                f"a prompt block of type {block.type!r} is not supported (initialize says so: "
                "promptCapabilities are all false); send text and resource links",
                type=block.type,
            )
    return "\n".join(parts)


def _action_key(action: PendingAction | ActionRecord) -> tuple[str, str | None]:
    """What a standing decision matches: the action type, and for an MCP write its tool."""
    if action.type == "mcp.call":
        payload = thaw_object(action.payload)
        server, tool = payload.get("server"), payload.get("tool")
        return action.type, f"{server}.{tool}"
    return action.type, None


def _action_title(action: PendingAction | ActionRecord) -> str:
    kind, tool = _action_key(action)
    return f"{tool} (MCP write)" if tool is not None else f"{kind} (proposed by {action.mod_id})"


class _Rejections:
    """The "reject always" choices an editor made in this process, by ``(type, tool)``.

    "Allow always" is a standing approval the host keeps (``host.approvals``): durable, for
    every host on the store, revocable. The host has no standing rejection, so "reject
    always" dismisses every later action of the same type (and, for an MCP write, the same
    tool) without asking for as long as this process runs.
    """

    def __init__(self) -> None:
        self._rejected: set[tuple[str, str | None]] = set()

    def __contains__(self, action: PendingAction) -> bool:
        return _action_key(action) in self._rejected

    def add(self, action: PendingAction) -> None:
        self._rejected.add(_action_key(action))


class _Seen:
    """What one prompt's stream has told so far: turns whose reply streamed, notifications."""

    def __init__(self) -> None:
        self.streamed: set[str] = set()
        self.notices: dict[str, str] = {}  # running notification turn -> its title
        self.done: list[str] = []  # titles of the notification turns that finished

    def told(self, action_id: str) -> bool:
        """Whether the notification of an action a standing approval ran has finished (its
        title names the action: ``"... (action act_..., allowed by approval rule ...)"``)."""
        return any(f"action {action_id}" in title for title in self.done)


class _Prompt:
    """The prompt running in one session: its job, and whether the client cancelled it."""

    def __init__(self) -> None:
        self._job: Job | None = None
        self._cancelled = False

    @property
    def cancelled(self) -> bool:
        return self._cancelled

    async def started(self, job: Job) -> None:
        """The prompt's job began (a cancel that came first cancels it now)."""
        self._job = job
        if self._cancelled:
            await job.cancel()

    async def cancel(self) -> None:
        """``session/cancel``: cancel the job, and answer the prompt ``cancelled``."""
        self._cancelled = True
        if self._job is not None:
            await self._job.cancel()


class HostAgent:
    """The agent side of ACP over one `Host`: each method answers one request.

    Made by ``host-sim acp`` with the host and a task group it owns (the updates a new
    session announces go out after its response, from there); the connection is handed
    over by the SDK (`on_connect`).
    """

    def __init__(self, host: Host, *, tasks: anyio.abc.TaskGroup, version: str, settle: float) -> None:
        self._host = host
        self._settle = settle
        self._tasks = tasks
        self._version = version
        self._client: Client | None = None
        self._running: dict[str, _Prompt] = {}
        self._rejections = _Rejections()

    def on_connect(self, conn: Client) -> None:
        self._client = conn

    @property
    def _conn(self) -> Client:
        if self._client is None:  # the SDK connects before it reads the first request
            raise _failed("the agent has no client connection yet")
        return self._client

    # -- lifecycle -------------------------------------------------------------------------

    async def initialize(
        self,
        protocol_version: int,
        client_capabilities: ClientCapabilities | None = None,
        client_info: Implementation | None = None,
        **kwargs: Any,
    ) -> InitializeResponse:
        return InitializeResponse(
            protocol_version=min(protocol_version, PROTOCOL_VERSION),
            agent_capabilities=AgentCapabilities(
                load_session=True,
                prompt_capabilities=PromptCapabilities(image=False, audio=False, embedded_context=False),
                session_capabilities=SessionCapabilities(
                    list=SessionListCapabilities(),
                    fork=SessionForkCapabilities(),
                    resume=SessionResumeCapabilities(),
                    close=SessionCloseCapabilities(),
                ),
            ),
            agent_info=Implementation(name="host-sim", title="host-sim (modular_sdk mods)", version=self._version),
            auth_methods=[],
        )

    async def authenticate(self, method_id: str, **kwargs: Any) -> AuthenticateResponse | None:
        raise _refused(f"no authentication method {method_id!r}: host-sim acp offers none (initialize lists none)")

    # -- sessions ----------------------------------------------------------------------------

    async def new_session(
        self,
        cwd: str,
        additional_directories: list[str] | None = None,
        mcp_servers: list[Any] | None = None,
        **kwargs: Any,
    ) -> NewSessionResponse:
        _check_cwd(cwd)
        _ignore_mcp_servers(mcp_servers)
        session = await self._host.sessions.create(cwd=cwd)
        self._announce_soon(session.id)
        return NewSessionResponse(session_id=session.id)

    async def load_session(
        self,
        cwd: str,
        session_id: str,
        mcp_servers: list[Any] | None = None,
        additional_directories: list[str] | None = None,
        **kwargs: Any,
    ) -> LoadSessionResponse | None:
        _ignore_mcp_servers(mcp_servers)
        session = await self._session(session_id)
        await self._replay(session)
        await self._announce(session.id)
        return LoadSessionResponse()

    async def resume_session(
        self,
        session_id: str,
        cwd: str,
        additional_directories: list[str] | None = None,
        mcp_servers: list[Any] | None = None,
        **kwargs: Any,
    ) -> ResumeSessionResponse:
        _ignore_mcp_servers(mcp_servers)
        session = await self._session(session_id)
        self._announce_soon(session.id)
        return ResumeSessionResponse()

    async def list_sessions(self, cwd: str | None = None, cursor: str | None = None, **kwargs: Any) -> ListSessionsResponse:
        try:
            page = await self._host.sessions.list(limit=50, after=cursor)
        except ModularError as exc:
            raise _refused(str(exc), cursor=cursor) from None
        return ListSessionsResponse(
            sessions=[
                SessionInfo(
                    session_id=s.id,
                    cwd=s.cwd,
                    title=s.metadata.label if s.metadata is not None else None,
                    updated_at=s.last_activity_at.isoformat(),
                )
                for s in page.sessions
                if cwd is None or s.cwd == cwd
            ],
            next_cursor=page.next,
        )

    async def fork_session(
        self,
        session_id: str,
        cwd: str,
        additional_directories: list[str] | None = None,
        mcp_servers: list[Any] | None = None,
        **kwargs: Any,
    ) -> ForkSessionResponse:
        _ignore_mcp_servers(mcp_servers)
        session = await self._session(session_id)
        at: object = kwargs.get(TURN_META_KEY)
        try:
            if at is None:
                fork = await session.fork()
            else:
                fork = await (await self._turn_of(session, at)).fork()
        except ModularError as exc:
            raise _refused(str(exc), sessionId=session_id) from None
        self._announce_soon(fork.id)
        return ForkSessionResponse(session_id=fork.id)

    async def close_session(self, session_id: str, **kwargs: Any) -> CloseSessionResponse | None:
        await self._session(session_id)
        await self.cancel(session_id)
        return CloseSessionResponse()

    async def set_session_mode(self, session_id: str, mode_id: str, **kwargs: Any) -> SetSessionModeResponse | None:
        raise _refused(f"no session mode {mode_id!r}: host-sim acp has none (session/new lists none)")

    async def set_config_option(
        self, config_id: str, session_id: str, value: str | bool, **kwargs: Any
    ) -> SetSessionConfigOptionResponse | None:
        raise _refused(f"no config option {config_id!r}: host-sim acp has none (session/new lists none)")

    async def ext_method(self, method: str, params: dict[str, Any]) -> dict[str, Any]:
        raise RequestError.method_not_found(f"_{method}")

    async def ext_notification(self, method: str, params: dict[str, Any]) -> None:
        return None  # extension notifications this agent does not know are ignored, as the protocol asks

    # -- turns -------------------------------------------------------------------------------

    async def prompt(self, session_id: str, prompt: list[_Block], **kwargs: Any) -> PromptResponse:
        text = _prompt_text(prompt)
        session = await self._session(session_id)
        if session.id in self._running:
            raise _refused(
                f"session {session.id!r} is already running a prompt; wait for its response or "
                "send session/cancel first",
                sessionId=session.id,
            )
        running = self._running[session.id] = _Prompt()
        try:
            try:
                submission = await self._run(session, text, running)
            except ModularError as exc:  # the host refused the text, or the session went meanwhile
                raise _refused(str(exc), sessionId=session.id) from None
            if running.cancelled:
                return PromptResponse(stop_reason="cancelled")
            if submission.error is not None:
                turn = submission.turn.id if submission.turn is not None else None
                raise _failed(submission.error, errorKind=submission.error_kind, turnId=turn)
            meta: dict[str, Any] | None = None if submission.turn is None else {TURN_META_KEY: submission.turn.id}
            for action in submission.actions:
                if not await self._decide(session.id, action, running):
                    return PromptResponse(stop_reason="cancelled", field_meta=meta)
            return PromptResponse(stop_reason="end_turn", field_meta=meta)
        finally:
            del self._running[session.id]

    async def cancel(self, session_id: str, **kwargs: Any) -> None:
        running = self._running.get(session_id)
        if running is None:
            return
        await running.cancel()

    async def _run(self, session: SessionHandle, text: str, running: _Prompt) -> Submission:
        """Run ``text`` as a job and stream its events until it ends; its `Submission`.

        An action of the turn that a standing approval confirmed runs after the turn and tells
        its result in a notification turn: the prompt waits for those too (at most
        ``settle`` seconds), so the editor sees what ran before the turn ends.
        """
        seen = _Seen()
        async with self._host.subscribe(buffer=_EVENT_BUFFER) as events:
            job = await self._host.start(session, text)
            await running.started(job)
            try:
                async for event in events:
                    if await self._job_over(event, job):
                        break
                    await self._forward(event, session.id, job.id, seen)
            finally:
                if job.status == "running":  # this request was cancelled (the client went away)
                    with anyio.CancelScope(shield=True):
                        await job.cancel()
            submission = await job.wait()
            if submission.turn is None or running.cancelled:
                return submission
            approved = await self._report_approved(session.id, submission.turn.id)
            with anyio.move_on_after(self._settle):
                while any(not seen.told(action_id) for action_id in approved):
                    await self._forward(await anext(events), session.id, job.id, seen)
        return submission

    async def _job_over(self, event: HostEvent, job: Job) -> bool:
        if isinstance(event, JobFinished):
            return event.job_id == job.id
        if isinstance(event, Lagged):  # missed events: the job may have ended among them
            return (await self._host.job(job.id)).status != "running"
        return False

    async def _forward(self, event: HostEvent, session_id: str, job_id: str, seen: _Seen) -> None:
        """Tell the editor what ``event`` says about the session, if anything."""
        if getattr(event, "session_id", None) != session_id:
            return
        if isinstance(event, ReplyDelta):
            seen.streamed.add(event.turn_id)
            await self._say(session_id, event.text)
        elif isinstance(event, ToolCalled):
            await self._update(
                session_id,
                ToolCallStart(
                    session_update="tool_call",
                    tool_call_id=f"{event.turn_id}/{event.call_id}",
                    title=event.tool_name,
                    kind="other",
                    status="in_progress",
                    raw_input=event.input,
                ),
            )
        elif isinstance(event, ToolFinished):
            await self._update(
                session_id,
                ToolCallProgress(
                    session_update="tool_call_update",
                    tool_call_id=f"{event.turn_id}/{event.call_id}",
                    status="completed" if event.error is None else "failed",
                    content=[_tool_text(event.output if event.error is None else event.error)],
                    raw_output=event.output if event.error is None else {"error": event.error},
                ),
            )
        elif isinstance(event, TurnStarted):
            if isinstance(event.message, AiNotificationMessage):
                seen.notices[event.turn_id] = event.message.title
                await self._say(session_id, f"{event.message.title}\n{event.message.body}\n")
        elif isinstance(event, TurnFinished):
            if event.turn_id in seen.notices:
                seen.done.append(seen.notices.pop(event.turn_id))
            if event.turn_id not in seen.streamed and event.status == "completed" and event.reply:
                await self._say(session_id, event.reply)
        elif isinstance(event, CommandFinished) and event.job_id == job_id:
            if event.error is None and event.text:
                await self._say(session_id, event.text)

    # -- permissions -------------------------------------------------------------------------

    async def _decide(self, session_id: str, action: PendingAction, running: _Prompt) -> bool:
        """Ask the editor about one proposed action and record its choice; False if it cancelled."""
        title = _action_title(action)
        payload = thaw_object(action.payload)
        await self._update(
            session_id,
            ToolCallStart(
                session_update="tool_call",
                tool_call_id=action.id,
                title=title,
                kind="other",
                status="pending",
                raw_input=payload,
            ),
        )
        option: OptionId = "reject_always"
        if action not in self._rejections:
            answer = await self._conn.request_permission(
                session_id=session_id,
                tool_call=ToolCallUpdate(tool_call_id=action.id, title=title, kind="other", status="pending", raw_input=payload),
                options=list(OPTIONS),
            )
            outcome = answer.outcome
            if not isinstance(outcome, AllowedOutcome) or running.cancelled:
                return False  # the prompt was cancelled: the action stays pending, undecided
            option = _option(outcome.option_id)
        try:
            if option == "allow_always":
                kind, tool = _action_key(action)
                await self._host.approvals.allow(
                    action_type=kind,
                    tool=tool,
                    by=BY,
                    reason=f"'Allow always' chosen in an ACP editor (session {session_id}, action {action.id})",
                )
            elif option == "reject_always":
                self._rejections.add(action)
            if option in ("allow_once", "allow_always"):
                result = await self._host.confirm(action.id, by=BY, reason=option)
                ok, said = result.error is None, result.text
            else:
                await self._host.dismiss(action.id, by=BY, reason=option)
                ok, said = False, f"rejected ({option})"
        except ModularError as exc:  # decided meanwhile elsewhere, a rule the store refused...
            ok, said = False, str(exc)
        await self._update(
            session_id,
            ToolCallProgress(
                session_update="tool_call_update",
                tool_call_id=action.id,
                status="completed" if ok else "failed",
                content=[_tool_text(said)],
            ),
        )
        return True

    async def _report_approved(self, session_id: str, turn_id: str) -> list[str]:
        """Show the actions of the turn a standing approval confirmed (nobody was asked).

        Returns the ids of those that tell their result in a notification turn still to come:
        a mod's action, which runs after the turn (an MCP write ran inside it).
        """
        approved = [
            a
            for a in await self._host.actions(session_id)
            if a.turn_id == turn_id and a.status == "confirmed" and a.decided_by not in (None, BY)
        ]
        if not approved:
            return []
        rules = {rule.id: rule for rule in await self._host.approvals.list()}
        shown: list[str] = []
        for action in approved:
            rule = rules.get(action.decided_by or "")
            if rule is None:
                continue
            if action.type != "mcp.call":
                shown.append(action.id)
            await self._update(
                session_id,
                ToolCallStart(
                    session_update="tool_call",
                    tool_call_id=action.id,
                    title=_action_title(action),
                    kind="other",
                    status="completed",
                    content=[_tool_text(f"allowed by the standing approval {rule.id} ({rule.by}: {rule.reason or 'no reason'})")],
                    raw_input=thaw_object(action.payload),
                ),
            )
        return shown

    # -- updates -----------------------------------------------------------------------------

    async def _update(self, session_id: str, update: Any) -> None:
        await self._conn.session_update(session_id=session_id, update=update)

    async def _say(self, session_id: str, text: str) -> None:
        await self._update(session_id, AgentMessageChunk(session_update="agent_message_chunk", content=_text(text)))

    def _commands(self) -> list[AvailableCommand]:
        return [
            AvailableCommand(
                name=c.name,
                description=c.description,
                input=None
                if c.argument_hint is None
                else AvailableCommandInput(root=UnstructuredCommandInput(hint=c.argument_hint)),
            )
            for c in sorted(self._host.completions("/"), key=lambda c: c.name)
        ]

    async def _announce(self, session_id: str) -> None:
        """Tell the editor every slash command of the loaded mods (``available_commands_update``)."""
        update = AvailableCommandsUpdate(session_update="available_commands_update", available_commands=self._commands())
        await self._update(session_id, update)

    def _announce_soon(self, session_id: str) -> None:
        """`_announce` once the response naming the new session has gone out.

        The SDK queues a response as soon as its handler returns, before the task started
        here runs: the editor learns the session id first, then its commands.
        """
        self._tasks.start_soon(self._announce, session_id)

    async def _replay(self, session: SessionHandle) -> None:
        """The session's history as updates: each turn's message and reply, each command."""
        for entry in await self._host.log(session):
            if isinstance(entry, TurnHandle):
                if entry.erased_at is not None:
                    continue
                message = entry.message
                if isinstance(message, AiPromptMessage):
                    await self._update(
                        session.id,
                        UserMessageChunk(
                            session_update="user_message_chunk",
                            content=_text(message.text),
                            field_meta={TURN_META_KEY: entry.id},
                        ),
                    )
                else:  # a notification is no one's message: the agent tells it
                    await self._say(session.id, f"{message.title}\n{message.body}")
                for call in entry.tool_calls:
                    await self._update(
                        session.id,
                        ToolCallStart(
                            session_update="tool_call",
                            tool_call_id=f"{entry.id}/{call.call_id}",
                            title=call.name,
                            kind="other",
                            status="completed" if call.error is None else "failed",
                            content=[_tool_text(call.output if call.error is None else call.error)],
                            raw_input=thaw(call.input),
                        ),
                    )
                if entry.reply:
                    await self._say(session.id, entry.reply)
            else:
                if entry.erased_at is not None:
                    continue
                typed = f"/{entry.command_id}" + (f" {entry.argument}" if entry.argument is not None else "")
                await self._update(
                    session.id, UserMessageChunk(session_update="user_message_chunk", content=_text(typed))
                )
                shown = entry.error if entry.error is not None else entry.text
                if shown:
                    await self._say(session.id, shown)

    # -- lookups -----------------------------------------------------------------------------

    async def _session(self, session_id: str) -> SessionHandle:
        try:
            session = await self._host.sessions.get(session_id)
        except (UnknownSessionError, SessionDeletedError) as exc:
            raise _refused(str(exc), sessionId=session_id) from None
        if session.deleted_at is not None:
            raise _refused(f"session {session_id!r} was deleted; start a new one (session/new)", sessionId=session_id)
        return session

    async def _turn_of(self, session: SessionHandle, turn_id: object) -> TurnHandle:
        """The turn ``turn_id`` of ``session``'s history (its own or one it inherited)."""
        if not isinstance(turn_id, str):
            raise _refused(f"_meta {TURN_META_KEY!r} must be a turn id (a string), got {turn_id!r}")
        for turn in await session.turns():
            if isinstance(turn, TurnHandle) and (turn.id == turn_id or turn.message_id == turn_id):
                return turn
        raise _refused(
            f"session {session.id!r} has no turn {turn_id!r}; name one of its turns "
            "(session/load lists them), or leave _meta out to fork at its end",
            sessionId=session.id,
            turnId=turn_id,
        )


def _option(option_id: str) -> OptionId:
    if option_id == "allow_once":
        return "allow_once"
    if option_id == "allow_always":
        return "allow_always"
    if option_id == "reject_once":
        return "reject_once"
    if option_id == "reject_always":
        return "reject_always"
    raise _refused(f"the client chose option {option_id!r}, which was not offered; choose one of {sorted(_OPTION_IDS)}")


def _tool_text(text: str | None) -> ContentToolCallContent:
    return ContentToolCallContent(type="content", content=_text(text or ""))


def _check_cwd(cwd: str) -> None:
    if not os.path.isabs(cwd):
        raise _refused(f"cwd {cwd!r} is not an absolute path; the protocol asks for one, like '/home/me/project'")


def _ignore_mcp_servers(servers: list[Any] | None) -> None:
    """Mods declare the MCP servers they use; those an editor passes are not added (said on stderr)."""
    if servers:
        names = ", ".join(repr(getattr(s, "name", "?")) for s in servers)
        print(
            f"host-sim acp: not using the MCP servers the editor passed ({names}): the loaded mods "
            "declare the servers they use",
            file=sys.stderr,
        )

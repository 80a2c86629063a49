"""The engine behind `Host`: session state, turns, forks, spawns, hooks and tools.

Turns of one session run one at a time in arrival order: each waits for the turn before
it. Different sessions run concurrently. Everything runs in the task of whoever asked
for it (``send``, ``submit``...), so the host starts no task it does not own.
"""

from __future__ import annotations

import difflib
import json
from collections.abc import Callable, Sequence
from datetime import datetime
from typing import TYPE_CHECKING, TypeVar

import anyio
import attrs

from modular_sdk import (
    ActionDeniedError,
    AiMessage,
    AiNotificationMessage,
    AiPromptMessage,
    AiRunnerId,
    AiSessionDisplayMetadata,
    Allow,
    Author,
    Deny,
    ForkLineage,
    Mod,
    ModDefinitionError,
    NoConversationError,
    ReentrantTurnError,
    ReplyValidationError,
    RootLineage,
    SerializationError,
    SessionId,
    SpawnContextError,
    SpawnLineage,
    TurnFailedError,
    UnknownSessionError,
)
from modular_sdk._actions import ActionEvent
from modular_sdk._json import structure, unstructure
from modular_sdk._mod import Agent, BeforeActionHook, PaletteCommand, SlashCommand, Tool, View
from modular_sdk._schema import JsonValue, SchemaError, json_schema

from ..lanes._calling import HandlerFrame, current_author, current_frame, running_turns_var
from ..lanes._ext_host import HandlerFailed, call_handler
from ..lineage._types import LineageArtifact, SessionNode
from ..models._protocol import HistoryEntry, Model, ModelRequest, ToolCall, ToolResult, ToolSpec
from ..stores._protocol import Store
from ..stores._records import SessionRecord, StoredState
from ._ids import new_call_id, new_message_id, new_session_id, new_turn_id
from ._state import SessionState, TurnState, history, turn_at

if TYPE_CHECKING:
    from ..lineage._graph import LineageGraph

__all__ = ["Engine", "ModTables"]

T = TypeVar("T")


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

    @classmethod
    def build(cls, mods: Sequence[object]) -> ModTables:
        problems: list[str] = []
        loaded: list[Mod] = []
        seen_mods: dict[str, int] = {}
        slash: dict[str, tuple[Mod, SlashCommand[str]]] = {}
        palette: dict[str, tuple[Mod, PaletteCommand[str]]] = {}
        tools: dict[str, tuple[Mod, Tool[object]]] = {}
        agents: dict[str, tuple[Mod, Agent]] = {}
        views: dict[str, tuple[Mod, View[object]]] = {}
        host_hooks: dict[str, list[tuple[Mod, BeforeActionHook[str]]]] = {}
        command_hooks: dict[tuple[str, str], list[tuple[Mod, BeforeActionHook[str]]]] = {}

        def claim(table: dict[str, tuple[Mod, T]], key: str, mod: Mod, value: T, what: str) -> None:
            if key in table:
                problems.append(
                    f"{what} {key!r} is declared by both mod {table[key][0].id!r} and mod "
                    f"{mod.id!r}; rename one of them"
                )
            else:
                table[key] = (mod, value)

        for index, mod in enumerate(mods):
            if not isinstance(mod, Mod):
                problems.append(f"mods[{index}] must be a Mod from define_mod(...) or a mod spec string, got {mod!r}")
                continue
            if mod.id in seen_mods:
                problems.append(f"mod id {mod.id!r} is loaded twice (mods[{seen_mods[mod.id]}] and mods[{index}])")
                continue
            seen_mods[mod.id] = index
            loaded.append(mod)
            for cmd in mod.commands:
                if isinstance(cmd, SlashCommand):
                    claim(slash, cmd.id, mod, cmd, "slash command /")
                else:
                    claim(palette, cmd.id, mod, cmd, "palette command")
            for t in mod.ai.tools:
                claim(tools, t.name, mod, t, "tool")
            for a in mod.ai.agents:
                claim(agents, a.id, mod, a, "agent")
            for v in mod.views:
                claim(views, v.id, mod, v, "view")
            for hook in mod.hooks:
                if hook.target.startswith("command:"):
                    command_hooks.setdefault((mod.id, hook.target), []).append((mod, hook))
                else:
                    host_hooks.setdefault(hook.target, []).append((mod, hook))
        if problems:
            lines = "\n".join(f"  - {p}" for p in problems)
            raise ModDefinitionError(f"cannot load these mods together:\n{lines}", field="mods", value=list(mods))
        return cls(
            mods=tuple(loaded),
            slash=slash,
            palette=palette,
            tools=tools,
            agents=agents,
            host_hooks=host_hooks,
            command_hooks=command_hooks,
            views=views,
        )


class Engine:
    """Owns the live sessions and runs everything the handles ask for."""

    def __init__(
        self,
        *,
        tables: ModTables,
        model: Model,
        store: Store,
        graph: LineageGraph,
        clock: Callable[[], datetime],
        handler_timeout: float | None,
        model_timeout: float | None,
        max_tool_rounds: int,
        cwd: str,
    ) -> None:
        self.tables = tables
        self.model = model
        self.store = store
        self.graph = graph
        self.clock = clock
        self.handler_timeout = handler_timeout
        self.model_timeout = model_timeout
        self.max_tool_rounds = max_tool_rounds
        self.cwd = cwd
        self.sessions: dict[SessionId, SessionState] = {}
        self.tool_specs = tuple(
            ToolSpec(name=t.name, description=t.description, input_schema=t.input_schema)
            for _, t in tables.tools.values()
        )
        self._inflight: set[anyio.CancelScope] = set()  # turns running in callers' tasks
        self._idle: anyio.Event | None = None
        self._closed = False

    async def close(self) -> None:
        """Cancel every turn still running (in whatever task sent it) and wait until each
        has recorded its failure, so nothing writes to the store after the host closes it."""
        self._closed = True
        for scope in list(self._inflight):
            scope.cancel()
        if self._inflight:
            self._idle = anyio.Event()
            with anyio.CancelScope(shield=True):
                await self._idle.wait()

    def _check_open(self, session: SessionState) -> None:
        if self._closed:
            raise RuntimeError(
                f"cannot send to session {session.id!r}: its host is closed; use sessions of an open Host"
            )

    # -- time ---------------------------------------------------------------------------
    def now(self) -> datetime:
        value = self.clock()
        if value.tzinfo is None or value.utcoffset() is None:
            raise ValueError(f"the host clock returned a naive datetime {value!r}; return datetime.now(timezone.utc)")
        return value

    # -- lookup -------------------------------------------------------------------------
    def get(self, session_id: str) -> SessionState:
        state = self.sessions.get(SessionId(session_id))
        if state is None:
            raise UnknownSessionError(
                f"no session {session_id!r} in this host; use an id from host.sessions.create() "
                "or a handle's .id",
                session_id=session_id,
            )
        return state

    # -- restore ------------------------------------------------------------------------
    def restore(self, stored: StoredState) -> None:
        """Rebuild live state from what the store held (parents before children)."""
        turns_by_session: dict[SessionId, list[TurnState]] = {}
        for turn_record in sorted(stored.turns, key=lambda t: t.ordinal):
            turns_by_session.setdefault(turn_record.session_id, []).append(TurnState.from_record(turn_record))
        pending = list(stored.sessions)
        while pending:
            progressed = False
            rest: list[SessionRecord] = []
            for record in pending:
                lineage = record.lineage
                parent: SessionState | None = None
                anchor: TurnState | None = None
                if lineage.kind != "root":
                    parent = self.sessions.get(lineage.parent_session_id)
                    if parent is None:
                        rest.append(record)
                        continue
                    if lineage.kind == "fork":
                        anchor = turn_at(parent, lineage.parent_turn_ordinal)
                state = SessionState(record=record, parent=parent, anchor=anchor)
                own = turns_by_session.get(record.id)
                if own:
                    state.own = own
                completed = [t for t in (own or []) if t.status == "completed"]
                state.last_completed = completed[-1] if completed else anchor
                self.sessions[record.id] = state
                if parent is not None:
                    parent.add_child(state)
                progressed = True
            if not progressed:
                break  # orphans (a parent the store lost): skip rather than guess
            pending = rest

    # -- hooks --------------------------------------------------------------------------
    async def before(
        self, action: str, session_id: SessionId | None, author: Author, *, owner: Mod | None = None
    ) -> None:
        """Run the ``before_action`` hooks for ``action``; raise `ActionDeniedError` on Deny."""
        if owner is not None:
            hooks = self.tables.command_hooks.get((owner.id, action), [])
        else:
            hooks = self.tables.host_hooks.get(action, [])
        if not hooks:
            return
        event = ActionEvent(action=action, session_id=session_id, author=author)
        where = f" on session {session_id!r}" if session_id is not None else ""
        for mod, hook in hooks:
            frame = HandlerFrame(mod_id=mod.id, kind="hook")
            try:
                decision = await call_handler(
                    f"before_action hook {hook.target!r} of mod {mod.id!r}",
                    hook.handle,
                    (event,),
                    frame=frame,
                    timeout=self.handler_timeout,
                )
            except HandlerFailed as failed:
                raise ActionDeniedError(
                    f"{action}{where} was denied because {failed.reason} (a failing hook denies; fix the hook)",
                    action=action,
                    reason=failed.reason,
                    mod_id=mod.id,
                ) from failed.cause
            if isinstance(decision, Deny):
                raise ActionDeniedError(
                    f"{action}{where} was denied by mod {mod.id!r}: {decision.reason}",
                    action=action,
                    reason=decision.reason,
                    mod_id=mod.id,
                )
            if not isinstance(decision, Allow):
                reason = f"hook returned {decision!r}; a hook must return Allow() or Deny(reason=...)"
                raise ActionDeniedError(
                    f"{action}{where} was denied: mod {mod.id!r} {reason}",
                    action=action,
                    reason=reason,
                    mod_id=mod.id,
                )

    # -- sessions -----------------------------------------------------------------------
    async def _add_session(self, state: SessionState, *, summary: str | None = None) -> None:
        record = state.record
        self.sessions[record.id] = state
        if state.parent is not None:
            state.parent.add_child(state)
        with anyio.CancelScope(shield=True):
            await self.store.save_session(record)
            await self.graph._register_session(
                SessionNode(session_id=record.id, created_at=record.created_at, agent_id=record.agent_id, summary=summary)
            )

    def _runner(self, session_id: SessionId, model: str) -> AiRunnerId:
        return AiRunnerId(f"{model}:{session_id}")

    async def create_root(
        self,
        *,
        metadata: AiSessionDisplayMetadata | None,
        model: str | None,
        cwd: str | None,
        agent: Agent | None = None,
    ) -> SessionState:
        _check_metadata(metadata)
        await self.before("session.create", None, current_author())
        session_id = new_session_id()
        model_name = model or (agent.model if agent is not None else None) or self.model.name
        record = SessionRecord(
            id=session_id,
            lineage=RootLineage(),
            metadata=metadata,
            model=model_name,
            cwd=cwd or self.cwd,
            runner_id=self._runner(session_id, model_name),
            created_at=self.now(),
            agent_id=agent.id if agent is not None else None,
        )
        state = SessionState(record=record)
        await self._add_session(state)
        return state

    async def fork(
        self, parent: SessionState, anchor: TurnState | None, metadata: AiSessionDisplayMetadata | None
    ) -> SessionState:
        """Fork ``parent`` after ``anchor`` (default: its last completed turn)."""
        _check_metadata(metadata)
        if anchor is None:
            anchor = parent.last_completed
            if anchor is None:
                raise NoConversationError(
                    f"session {parent.id!r} has no completed turn to fork from; a fork needs a "
                    "completed turn: send a prompt first and fork once it has completed",
                    session_id=parent.id,
                )
        await self.before("session.fork", parent.id, current_author())
        session_id = new_session_id()
        author = anchor.author
        now = self.now()
        record = SessionRecord(
            id=session_id,
            lineage=ForkLineage(
                parent_session_id=parent.id,
                parent_turn_ordinal=anchor.ordinal,
                parent_runner_id=anchor.runner_id,
                depth=parent.depth + 1,
                forked_at=now,
                parent_user_message_id=anchor.message_id if author.kind == "user" else None,
            ),
            metadata=metadata,
            model=parent.record.model,
            cwd=parent.record.cwd,
            runner_id=self._runner(session_id, parent.record.model),
            created_at=now,
            agent_id=parent.record.agent_id,
        )
        state = SessionState(record=record, parent=parent, anchor=anchor, last_completed=anchor)
        await self._add_session(state)
        if anchor.artifact is None:  # one artifact per anchor turn, shared by its forks
            anchor.artifact = LineageArtifact(type="turn", source_id=anchor.id, label=f"turn {anchor.ordinal}")
        await self.graph._record_edge(parent.id, session_id, "branched_from", anchor.artifact, at=now)
        return state

    async def spawn(self, parent: SessionState, metadata: AiSessionDisplayMetadata | None) -> SessionState:
        _check_metadata(metadata)
        frame = current_frame()
        trigger = frame.trigger if frame is not None else None
        if trigger is None:
            where = "outside any mod handler" if frame is None else f"in {_article(frame.kind)} {frame.kind} of mod {frame.mod_id!r}"
            raise SpawnContextError(
                f"spawn() of session {parent.id!r} was called {where}; a spawn needs a command or "
                "tool handler as its trigger: call it from a slash command, palette command or "
                "tool, or use ctx.ai.sessions.create() for a root session",
                session_id=parent.id,
            )
        await self.before("session.spawn", parent.id, current_author())
        session_id = new_session_id()
        now = self.now()
        record = SessionRecord(
            id=session_id,
            lineage=SpawnLineage(
                parent_session_id=parent.id,
                parent_chat_uri=f"chat://{parent.id}",
                depth=parent.depth + 1,
                spawned_at=now,
                trigger=trigger,
            ),
            metadata=metadata,
            model=parent.record.model,
            cwd=parent.record.cwd,
            runner_id=self._runner(session_id, parent.record.model),
            created_at=now,
        )
        state = SessionState(record=record, parent=parent)
        await self._add_session(state)
        await self.graph._record_edge(parent.id, session_id, "spawned_by", None, at=now)
        return state

    async def wait_completed(self, session: SessionState, turn: TurnState) -> TurnState:
        """Wait for ``turn`` to finish; raise `TurnFailedError` unless it completed."""
        if turn.status == "running" and turn.done is not None:
            await turn.done.wait()
        if turn.status != "completed":
            raise TurnFailedError(
                f"turn {turn.ordinal} ({turn.id!r}) of session {turn.session_id!r} failed "
                f"({turn.error}); only completed turns can be fork anchors: fork at an earlier "
                "completed turn",
                turn_id=turn.id,
                reason=turn.error or "failed",
            )
        return turn

    # -- turns --------------------------------------------------------------------------
    async def send(
        self, session: SessionState, message: AiMessage, *, output_schema: JsonValue = None
    ) -> TurnState:
        """Run one turn of ``session`` driven by ``message``; returns it finished.

        The returned turn may have failed; the caller decides whether to raise.
        """
        if not isinstance(message, (AiPromptMessage, AiNotificationMessage)):
            raise TypeError(
                f"send() takes an AiPromptMessage or AiNotificationMessage, got {message!r}; "
                "use session.run(text) for a plain prompt"
            )
        if session.id in running_turns_var.get():
            raise ReentrantTurnError(
                f"a handler running inside a turn of session {session.id!r} tried to send to that "
                "same session, which would wait for itself; send to another session (fork or "
                "spawn one) or return your result from the handler instead",
                session_id=session.id,
            )
        self._check_open(session)
        author = current_author()
        action = "session.notify" if isinstance(message, AiNotificationMessage) else "session.send"
        await self.before(action, session.id, author)
        self._check_open(session)  # the host may have closed while the hooks ran
        turn = TurnState(
            id=new_turn_id(),
            session_id=session.id,
            ordinal=session.next_ordinal,
            message=message,
            message_id=new_message_id(),
            author=author,
            runner_id=session.record.runner_id,
            started_at=self.now(),
            done=anyio.Event(),
        )
        own = session.own
        previous = own[-1] if own else None
        if own is None:
            session.own = [turn]
        else:
            own.append(turn)
        with anyio.CancelScope() as closing:  # cancelled by close() if the host closes first
            self._inflight.add(closing)
            try:
                if previous is not None and previous.done is not None:
                    await previous.done.wait()
                await self._run_turn(session, turn, output_schema)
            except BaseException as exc:
                if turn.status == "running":
                    turn.status = "failed"
                    turn.error = (
                        "the host closed before it completed"
                        if closing.cancel_called
                        else "cancelled before it completed"
                        if isinstance(exc, anyio.get_cancelled_exc_class())
                        else f"host error: {exc!r}"
                    )
                raise
            finally:
                turn.finished_at = self.now()
                if turn.status == "running":
                    turn.status = "failed"
                    turn.error = turn.error or "did not complete"
                assert turn.done is not None
                turn.done.set()
                try:
                    with anyio.CancelScope(shield=True):
                        await self.store.save_turn(turn.record())
                finally:
                    self._inflight.discard(closing)
                    if not self._inflight and self._idle is not None:
                        self._idle.set()
        return turn

    async def _run_turn(self, session: SessionState, turn: TurnState, output_schema: JsonValue) -> None:
        token = running_turns_var.set(running_turns_var.get() | {session.id})
        try:
            earlier = history(session, turn.ordinal - 1) if turn.ordinal > 0 else []
            message = turn.message
            request = ModelRequest(
                session_id=session.id,
                model=session.record.model,
                kind=message.type,
                text=_text_of(message),
                message=message,
                history=tuple(_history_entry(t) for t in earlier if t.status == "completed"),
                output_schema=output_schema,
                instructions=self._instructions(session),
                tools=self.tool_specs,
            )
            rounds = 0
            while True:
                try:
                    reply = await call_handler(
                        f"model {self.model.name!r}",
                        self.model.respond,
                        (request,),
                        frame=None,
                        timeout=self.model_timeout,
                    )
                except HandlerFailed as failed:
                    turn.status, turn.error = "failed", failed.reason
                    return
                if isinstance(reply, ToolCall):
                    rounds += 1
                    if rounds > self.max_tool_rounds:
                        turn.status = "failed"
                        turn.error = (
                            f"the model asked for more than {self.max_tool_rounds} tool calls in one "
                            "turn; raise Host(max_tool_rounds=...) if that is expected"
                        )
                        return
                    try:
                        result = await self._call_tool(session, reply)
                    except HandlerFailed as failed:
                        turn.status, turn.error = "failed", failed.reason
                        return
                    request = attrs.evolve(request, tool_results=(*request.tool_results, result))
                    continue
                if not isinstance(reply, str):
                    turn.status = "failed"
                    turn.error = f"the model returned {reply!r}; a model must return reply text or a ToolCall"
                    return
                turn.reply, turn.status = reply, "completed"
                session.last_completed = turn
                return
        finally:
            running_turns_var.reset(token)

    def _instructions(self, session: SessionState) -> str | None:
        agent_id = session.record.agent_id
        if agent_id is None or agent_id not in self.tables.agents:
            return None
        return self.tables.agents[agent_id][1].instructions

    async def _call_tool(self, session: SessionState, call: ToolCall) -> ToolResult:
        call_id = call.call_id or new_call_id()

        def refused(error: str) -> ToolResult:
            """Told to the model instead of running the tool: its own mistake to correct."""
            return ToolResult(call_id=call_id, name=call.name, input=call.input, output=None, error=error)

        entry = self.tables.tools.get(call.name)
        if entry is None:
            known = ", ".join(repr(n) for n in self.tables.tools) or "none"
            return refused(f"unknown tool {call.name!r}; the tools are: {known}")
        mod, declared = entry
        try:
            value = structure(call.input, declared.input_type)
        except SerializationError as exc:
            return refused(f"invalid input for tool {call.name!r}: {exc}")
        from ._handles import SessionHandle, ToolContextImpl

        ctx = ToolContextImpl._create(
            session=SessionHandle._create(self, session), engine=self, mod_id=mod.id, tool_name=declared.name, call_id=call_id
        )
        frame = HandlerFrame(mod_id=mod.id, kind="tool", tool_name=declared.name, call_id=call_id)
        output = await call_handler(
            f"tool {declared.name!r} of mod {mod.id!r}",
            declared.run,
            (value, ctx),
            frame=frame,
            timeout=self.handler_timeout,
        )
        return ToolResult(call_id=call_id, name=call.name, input=call.input, output=_render_output(output))

    async def run(self, session: SessionState, prompt: str, output_schema: JsonValue = None) -> TurnState:
        """One prompt turn that must complete; raises `TurnFailedError` otherwise."""
        turn = await self.send(session, AiPromptMessage(text=prompt), output_schema=output_schema)
        if turn.status != "completed":
            raise turn_failed(turn)
        return turn

    @staticmethod
    def output_schema(output_type: type[object]) -> JsonValue:
        """The JSON Schema the model is asked to match, when the type has one."""
        try:
            return json_schema(output_type)
        except SchemaError:
            return None

    @staticmethod
    def parse_reply(turn: TurnState, output_type: type[T]) -> T:
        """The reply parsed as JSON and structured into ``output_type``, never coerced."""
        raw = turn.reply or ""
        name = getattr(output_type, "__name__", repr(output_type))
        try:
            data = json.loads(raw)
        except json.JSONDecodeError as exc:
            raise ReplyValidationError(
                f"the reply to run(..., output_type={name}) is not JSON ({exc.msg} at position "
                f"{exc.pos}): {raw[:200]!r}; ask the model for JSON matching the schema",
                raw=raw,
                output_type=name,
            ) from None
        try:
            value: T = structure(data, output_type)
        except SerializationError as exc:
            raise ReplyValidationError(
                f"the reply does not match output_type={name}: {exc}",
                raw=raw,
                output_type=name,
            ) from None
        return value


def turn_failed(turn: TurnState) -> TurnFailedError:
    return TurnFailedError(
        f"turn {turn.ordinal} of session {turn.session_id!r} failed: {turn.error}",
        turn_id=turn.id,
        reason=turn.error or "failed",
    )


def _history_entry(turn: TurnState) -> HistoryEntry:
    """What the model sees of a completed turn; made once per turn, shared by later turns."""
    entry = turn.history_entry
    if entry is None:
        entry = HistoryEntry(kind=turn.message.type, text=_text_of(turn.message), reply=turn.reply or "")
        turn.history_entry = entry
    return entry


def _text_of(message: AiMessage) -> str:
    if isinstance(message, AiNotificationMessage):
        return f"{message.title}\n\n{message.body}" if message.body else message.title
    return message.text


def _render_output(value: object) -> str:
    if value is None:
        return ""
    if isinstance(value, str):
        return value
    if attrs.has(type(value)) or isinstance(value, (dict, list, tuple, int, float, bool)):
        return json.dumps(unstructure(value), sort_keys=True)
    return str(value)


def _article(noun: str) -> str:
    return "an" if noun[:1] in ("a", "e", "i", "o", "u") else "a"


def _check_metadata(metadata: object) -> None:
    if metadata is not None and not isinstance(metadata, AiSessionDisplayMetadata):
        raise TypeError(
            f"metadata must be an AiSessionDisplayMetadata, got {metadata!r}; "
            "write metadata=AiSessionDisplayMetadata(label='Task')"
        )


def close_names(name: str, known: Sequence[str]) -> list[str]:
    return difflib.get_close_matches(name, list(known), n=3, cutoff=0.5)

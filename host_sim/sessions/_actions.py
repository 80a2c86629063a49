"""Agents propose, users confirm: ``<mod-action type="...">{json}</mod-action>`` in a reply.

After a turn completes, the host parses its reply for action tags. Only types a loaded mod
declared (``define_mod(actions=[action(...)])``) with a payload that structures into the
declared ``payload_type`` exactly become a `PendingAction`, durable in the store; every
other tag is reported in ``Submission.action_errors`` and creates nothing. Nothing runs until
``host.confirm(id)``, which runs the action's ``run(payload, ctx)`` once, as the user.
"""

from __future__ import annotations

import secrets
from collections import OrderedDict
from collections.abc import Callable, Coroutine, Sequence
from datetime import datetime
from typing import TYPE_CHECKING, Any, Final, final

from modular_sdk import (
    Action,
    ActionStateError,
    AiNotificationMessage,
    InvalidArgumentError,
    Mod,
    ModularError,
    SerializationError,
    SessionId,
)
from modular_sdk._frozen import freeze_object, thaw_object
from modular_sdk._json import structure, unstructure
from modular_sdk._rules import show, unstorable_text

from .._host_made import NoPublicConstructor
from ..lanes._ext_host import HandlerFailed, call_handler
from ..stores._approvals import ApprovalStore, confirmed_by, rule_for
from ..stores._errors import StoreError
from ..stores._protocol import Store
from ..stores._trace_records import ActionOutcomeRecord, ApprovalRuleRecord, ProposedActionRecord
from ..stores._traces import TraceStore
from ..traces._service import no_traces, unknown_action
from ..traces._types import ActionRecord, PendingAction
from ._events import EventHub, ToolCalled, ToolFinished
from ._handles import AiContextImpl, SessionHandle
from ._ids import new_call_id
from ._reply_tags import TagObject, read_tag_objects
from ._scope import scope_of
from ._state import SessionState, TurnState

if TYPE_CHECKING:
    from ..mcp._client import McpTools
    from ._engine import Engine

__all__ = ["ActionBook", "ActionContextImpl", "parse_actions"]

_KEEP: Final = 1024  # results of recent turns kept for host.submit to return


def parse_actions(
    reply: str, declared: dict[str, tuple[Mod, Action[Any]]]
) -> tuple[list[tuple[Mod, Action[Any], dict[str, object]]], list[str]]:
    """The well-formed, declared proposals of ``reply`` (payload as canonical JSON), and what
    was wrong with every other ``<mod-action>`` tag.

    Linear in the reply's length whatever it holds, at most `MAX_TAGS` tags read (the rest
    are reported), and it never raises: a payload with a number JSON readers cannot all hold
    (see `modular_sdk._json.parse_json_text`) is a bad payload like any other.
    """
    found: list[tuple[Mod, Action[Any], dict[str, object]]] = []

    def take(tag: TagObject[tuple[Mod, Action[Any]]]) -> str | None:
        mod, action = tag.entry
        try:
            canonical = unstructure(structure(tag.data, action.payload_type))
            assert isinstance(canonical, dict)
            freeze_object(canonical, type_name="the action payload")
        except (SerializationError, RecursionError) as exc:
            problem = str(exc) if isinstance(exc, SerializationError) else "nested too deeply"
            return (
                f"<mod-action type={show(tag.type)}> payload does not match {action.payload_type.__name__} "
                f"of mod {mod.id!r}: {problem}; it was ignored"
            )
        found.append((mod, action, canonical))
        return None

    errors = read_tag_objects(
        reply, "mod-action", declared, take, what="declared action", listed="declared", none="none", noun="payload"
    )
    return found, errors


def to_pending(record: ProposedActionRecord) -> PendingAction:
    return PendingAction(
        id=record.id,
        type=record.type,
        payload=record.payload,
        mod_id=record.mod_id,
        session_id=record.session_id,
        turn_id=record.turn_id,
        created_at=record.created_at,
    )


@final
class ActionContextImpl(metaclass=NoPublicConstructor):
    """What an action's ``run(payload, ctx)`` gets (implements `modular_sdk.ActionContext`).

    Made by the host when the user confirms an action; it acts as the user.
    """

    __slots__ = ("_action_type", "_ai", "_mod_id", "_session")

    def __init__(self, engine: Engine, session: SessionState, mod_id: str, action_type: str) -> None:
        self._ai = AiContextImpl._create(engine, None, scope_of(session))  # within the session's tags
        self._session = SessionHandle._create(engine, session, None)
        self._mod_id = mod_id
        self._action_type = action_type

    @property
    def session(self) -> SessionHandle:
        """The session the action was proposed in (acting as the user)."""
        return self._session

    @property
    def ai(self) -> AiContextImpl:
        return self._ai

    @property
    def mod_id(self) -> str:
        return self._mod_id

    @property
    def action_type(self) -> str:
        return self._action_type


@final
class ActionBook:
    """Records what replies propose, lists what waits, confirms and dismisses (host side).

    Made before the engine (which records each completed turn's proposals in it: it is the
    engine's `ProposalBook`); what acts (loads a session, runs an action's handler) acts
    through the engine it is given.
    """

    def __init__(
        self,
        *,
        events: EventHub,
        mods: Sequence[Mod],
        store: Store,
        clock: Callable[[], datetime],
        handler_timeout: float | None,
        mcp: McpTools | None = None,
        start: Callable[[Callable[[], Coroutine[object, object, None]]], None] | None = None,
    ) -> None:
        self._events = events  # what a confirmed mcp.call publishes
        self._start = start  # runs what a standing approval confirmed, in the host's task group
        self._mcp = mcp  # confirms 'mcp.call' actions (a writing MCP tool the model called)
        self._store = store
        self._clock = clock
        self._timeout = handler_timeout
        self.declared: dict[str, tuple[Mod, Action[Any]]] = {}
        for mod in mods:
            for declared in mod.actions:
                self.declared.setdefault(declared.type, (mod, declared))
        self._results: OrderedDict[str, tuple[tuple[PendingAction, ...], tuple[str, ...]]] = OrderedDict()

    @property
    def declared_types(self) -> frozenset[str]:
        """The action types the loaded mods declare (what a standing approval may allow)."""
        return frozenset(self.declared)

    async def after_turn(self, engine: Engine, session: SessionState, turn: TurnState) -> None:
        """Record the actions a completed turn's reply proposed (the engine's `ProposalBook`)."""
        reply = turn.reply or ""
        called = () if self._mcp is None else self._mcp.proposed(turn.id)
        if called:
            self._results[turn.id] = (called, ())
        if "<mod-action" not in reply:
            return
        found, errors = parse_actions(reply, self.declared)
        pending: tuple[PendingAction, ...] = ()
        if found:
            now = self._clock()
            records = [
                ProposedActionRecord(
                    id=f"act_{secrets.token_hex(6)}",
                    type=action.type,
                    payload=freeze_object(payload, type_name="the action payload"),
                    mod_id=mod.id,
                    session_id=session.id,
                    turn_id=turn.id,
                    created_at=now,
                )
                for mod, action, payload in found
            ]
            store = self._store
            if not isinstance(store, TraceStore):
                errors.append(str(no_traces(store)))
            else:
                try:
                    await store.propose_actions(records)
                except StoreError as exc:
                    errors.append(f"the proposed actions could not be stored: {exc}")
                else:
                    pending = tuple([to_pending(r) for r in records if not await self._allowed(engine, store, r, errors)])
        self._results[turn.id] = (called + pending, tuple(errors))
        while len(self._results) > _KEEP:
            self._results.popitem(last=False)

    async def _allowed(self, engine: Engine, store: TraceStore, record: ProposedActionRecord, errors: list[str]) -> bool:
        """Whether a standing approval confirmed ``record`` at once (docs/protocols.md): its
        decision is recorded now, ``decided_by`` the rule, and it runs once the turn is over."""
        try:
            rule = await rule_for(self._store, record)
            if rule is None or self._start is None or not isinstance(self._store, ApprovalStore):
                return False
            await self._store.decide_by_rule(confirmed_by(record, rule, self._clock()), rule.id)  # only while it is live
        except (StoreError, ActionStateError) as exc:
            errors.append(f"action {record.id!r} matched a standing approval, which could not be applied: {exc}")
            return False

        async def run() -> None:
            await self._run_allowed(engine, record, rule)

        try:
            self._start(run)
        except ModularError as exc:  # the host is closing: it was confirmed and will not run
            errors.append(f"action {record.id!r} was confirmed by approval rule {rule.id!r} but did not run: {exc}")
        return True

    async def _run_allowed(self, engine: Engine, record: ProposedActionRecord, rule: ApprovalRuleRecord) -> None:
        """Run an action a rule confirmed, as the user, and deliver what it gave to its session
        as a notification turn (nobody waits for it as a caller of ``confirm`` does)."""
        try:
            session = await engine.load(record.session_id)
            mod, action = self.declared[record.type]
            payload = structure(thaw_object(record.payload), action.payload_type)
            ctx = ActionContextImpl._create(engine, session, mod.id, action.type)
            try:
                value = await call_handler(
                    f"action {action.type!r} of mod {mod.id!r}", action.run, (payload, ctx), timeout=self._timeout
                )
                text, failed = ("" if value is None else str(value)), False
            except HandlerFailed as failure:
                text, failed = failure.reason, True
            verb = "failed" if failed else "ran"
            title = f"{record.type} {verb} (action {record.id}, allowed by approval rule {rule.id})"
            await engine.send(session, AiNotificationMessage(title=title, body=text), None)
        except (ModularError, KeyError):  # the session went, the mod is gone: the decision stays recorded
            return

    def results(self, turn_id: str) -> tuple[tuple[PendingAction, ...], tuple[str, ...]]:
        """What turn ``turn_id`` proposed (for its `Submission`), once."""
        return self._results.pop(turn_id, ((), ()))

    async def pending(self, engine: Engine, session_id: str) -> list[PendingAction]:
        store = self._traces()
        return [to_pending(r) for r in await store.pending_actions(await self._session_id(engine, session_id))]

    async def decisions(self, engine: Engine, session_id: str, status: object) -> list[ActionRecord]:
        """Every action proposed in a session and what became of it, in the order proposed."""
        if status is not None and status not in _STATUSES:
            raise InvalidArgumentError(
                f"actions(status=...) is one of {', '.join(repr(s) for s in _STATUSES)} or None, got {status!r}",
                argument="status",
                value=status,
            )
        store = self._traces()
        records = [to_record(a, o) for a, o in await store.session_actions(await self._session_id(engine, session_id))]
        return [r for r in records if status is None or r.status == status]

    async def dismiss(self, engine: Engine, action_id: str, by: str | None = None, reason: str | None = None) -> None:
        _check_decision(by, reason)
        store = self._traces()
        record = await self._pending_record(engine, store, action_id, "dismiss")
        await self._decide(store, record, "dismissed", by, reason)

    async def confirm(
        self, engine: Engine, action_id: str, by: str | None = None, reason: str | None = None
    ) -> tuple[str, str | None]:
        """Run a pending action once, as the user: (text, error)."""
        _check_decision(by, reason)
        store = self._traces()
        record = await self._pending_record(engine, store, action_id, "confirm")
        if record.type == "mcp.call" and self._mcp is not None:
            await self._decide(store, record, "confirmed", by, reason)  # before it runs: it runs at most once
            return await self._confirm_mcp_call(engine, record, self._mcp)
        entry = self.declared.get(record.type)
        if entry is None or entry[0].id != record.mod_id:
            raise ActionStateError(
                f"action {action_id!r} ({record.type!r}) was declared by mod {record.mod_id!r}, which "
                "this host has not loaded; load that mod to confirm it, or dismiss it",
                action_id=action_id,
                state="pending",
            )
        mod, action = entry
        try:
            payload = structure(thaw_object(record.payload), action.payload_type)
        except SerializationError as exc:
            raise ActionStateError(
                f"the payload of action {action_id!r} no longer matches {action.payload_type.__name__} of "
                f"mod {mod.id!r} ({exc}); dismiss it",
                action_id=action_id,
                state="pending",
            ) from None
        session = await engine.load(record.session_id)
        await self._decide(store, record, "confirmed", by, reason)  # before it runs: it runs at most once
        ctx = ActionContextImpl._create(engine, session, mod.id, action.type)
        try:
            value = await call_handler(
                f"action {action.type!r} of mod {mod.id!r}", action.run, (payload, ctx), timeout=self._timeout
            )
        except HandlerFailed as failed:
            return failed.reason, failed.reason
        return ("" if value is None else str(value)), None

    async def _confirm_mcp_call(
        self, engine: Engine, record: ProposedActionRecord, mcp: McpTools
    ) -> tuple[str, str | None]:
        """Run a confirmed ``mcp.call`` (a ``tool_called``/``tool_finished`` pair) and deliver
        its result to the session it was proposed in, as a notification turn."""
        session = await engine.load(record.session_id)
        payload = thaw_object(record.payload)
        assert isinstance(payload, dict)
        name = f"{payload.get('server')}.{payload.get('tool')}"
        arguments = payload.get("input")
        call_id = new_call_id()
        self._events.publish(
            lambda seq, at: ToolCalled(
                seq=seq,
                at=at,
                session_id=session.id,
                turn_id=record.turn_id,
                call_id=call_id,
                tool_name=name,
                input=arguments if isinstance(arguments, dict) else {},
            )
        )
        text, error = await mcp.confirmed(record)
        self._events.publish(
            lambda seq, at: ToolFinished(
                seq=seq,
                at=at,
                session_id=session.id,
                turn_id=record.turn_id,
                call_id=call_id,
                output=None if error is not None else text,
                error=error,
            )
        )
        title = f"{name} ran (confirmed action {record.id})" if error is None else f"{name} failed (confirmed action {record.id})"
        try:
            await engine.send(session, AiNotificationMessage(title=title, body=text), None)
        except ModularError as exc:  # the tool ran; only the delivery failed: say so
            return text, f"{name} ran, but its result could not be delivered to session {session.id!r}: {exc}"
        return text, error

    async def _decide(
        self, store: TraceStore, record: ProposedActionRecord, state: str, by: str | None, reason: str | None
    ) -> None:
        outcome = ActionOutcomeRecord(
            action_id=record.id,
            state="confirmed" if state == "confirmed" else "dismissed",
            decided_at=self._clock(),
            decided_by=by,
            reason=reason,
            session_id=record.session_id,
            turn_id=record.turn_id,
        )
        try:
            await store.decide_action(outcome)
        except StoreError:
            found = await store.get_action(record.id)
            if found is None or found[1] is None:
                raise
            raise _decided(record.id, found[1]) from None

    async def _pending_record(
        self, engine: Engine, store: TraceStore, action_id: str, verb: str
    ) -> ProposedActionRecord:
        if not isinstance(action_id, str) or unstorable_text(action_id) is not None:
            raise ActionStateError(
                f"{verb}() takes an action id (PendingAction.id, a str of valid text), got {show(action_id)}; "
                "use an id from Submission.actions or host.pending_actions(session)",
                action_id=show(action_id),
                state="unknown",
            )
        found = await store.get_action(action_id)
        if found is None:
            raise unknown_action(action_id)
        record, outcome = found
        if record.erased_at is not None:
            raise ActionStateError(
                f"action {action_id!r} was erased at {record.erased_at.isoformat()} (the turn that proposed it "
                f"was forgotten, or its session deleted), so it cannot be {verb}ed: nothing of it is left to "
                "run; ask the model for a new proposal",
                action_id=action_id,
                state="erased",
            )
        if outcome is not None:
            raise _decided(action_id, outcome)
        if verb == "confirm":
            session = await engine.load(record.session_id)
            if session.deleted_at is not None:
                raise ActionStateError(
                    f"action {action_id!r} was proposed in session {record.session_id!r}, which was deleted at "
                    f"{session.deleted_at.isoformat()}; an action of a deleted session is never confirmed: "
                    "dismiss it, or ask for a new proposal in a live session",
                    action_id=action_id,
                    state="deleted",
                )
        return record

    async def _session_id(self, engine: Engine, session: object) -> SessionId:
        from_handle = getattr(session, "id", session) if isinstance(session, SessionHandle) else session
        state = await engine.load(from_handle)
        return state.id

    def _traces(self) -> TraceStore:
        if not isinstance(self._store, TraceStore):
            raise no_traces(self._store)
        return self._store


_STATUSES: Final = ("pending", "confirmed", "dismissed")


def to_record(action: ProposedActionRecord, outcome: ActionOutcomeRecord | None) -> ActionRecord:
    """An action as ``host.actions`` lists it: the proposal and the decision, if any."""
    return ActionRecord(
        id=action.id,
        type=action.type,
        payload=action.payload,
        mod_id=action.mod_id,
        session_id=action.session_id,
        turn_id=action.turn_id,
        created_at=action.created_at,
        status="pending" if outcome is None else outcome.state,
        decided_by=None if outcome is None else outcome.decided_by,
        decided_at=None if outcome is None else outcome.decided_at,
        reason=None if outcome is None else outcome.reason,
    )


def _check_decision(by: object, reason: object) -> None:
    """Refuse a ``by`` or ``reason`` that is not text a store can keep."""
    for argument, value in (("by", by), ("reason", reason)):
        if value is None:
            continue
        problem = None
        if not isinstance(value, str) or not value.strip():
            problem = "a non-empty str or None"
        else:
            if unstorable_text(value) is not None:
                problem = "valid Unicode text (it holds a lone surrogate)"
            if "\x00" in value:
                problem = "text without NUL characters"
        if problem is not None:
            raise InvalidArgumentError(
                f"{argument}= must be {problem}, got {value!r}; pass e.g. "
                "host.confirm(action_id, by='alice', reason='matches the ticket')",
                argument=argument,
                value=value,
            )


def _decided(action_id: str, outcome: ActionOutcomeRecord) -> ActionStateError:
    return ActionStateError(
        f"action {action_id!r} was already {outcome.state} (at {outcome.decided_at.isoformat()}); an "
        "action is confirmed or dismissed once: ask for a new proposal to run it again",
        action_id=action_id,
        state=outcome.state,
    )



"""Standing approvals (docs/protocols.md): "allow always" as a durable, scoped, revocable record.

``await host.approvals.allow(action_type="task.create", by="alice", reason="...")`` writes an
`ApprovalRule`. From then on, an action of that type proposed in a session the rule covers
(a mod's ``<mod-action>``, or an MCP tool call that writes, type ``mcp.call``) is confirmed
at once: its decision is recorded with ``decided_by`` the rule's id before the turn's
`Submission` returns, and it runs as a confirmed action does (an MCP tool at once, inside the
turn, its answer going to the model; a mod action's ``run`` right after the turn, its result
delivered to the session as a notification turn). Nothing waits, so it is not in
``Submission.actions``. `host_sim.stores._approvals.rule_for` is the one place that decides which rule covers an action;
`Approvals` is the public surface (``host.approvals``, ``view.approvals``).
"""

from __future__ import annotations

import secrets
from collections.abc import Callable, Mapping
from datetime import datetime
from typing import TYPE_CHECKING, Final, final

import attrs

from modular_sdk import InvalidArgumentError, ModularError, SessionId
from modular_sdk._rules import show, unstorable_text

from .._host_made import NoPublicConstructor
from ..stores._approvals import ApprovalStore
from ..stores._errors import StoreError
from ..stores._trace_records import ApprovalRuleRecord
from ._scope import Scope, session_state

if TYPE_CHECKING:
    from ._engine import Engine
    from ._handles import SessionHandle

__all__ = ["ApprovalRule", "Approvals", "UnknownApprovalRuleError"]

MCP_CALL: Final = "mcp.call"


class UnknownApprovalRuleError(ModularError, LookupError):
    """No approval rule has this id (or none the scope sees); ``id`` is the id asked for."""

    def __init__(self, message: str, *, id: str) -> None:
        super().__init__(message)
        self.id = id

    def __str__(self) -> str:  # LookupError subclasses would quote the message
        return str(self.args[0])


@final
@attrs.frozen(kw_only=True)
class ApprovalRule:
    """A standing approval: actions it matches are confirmed at once. Immutable.

    The match: ``action_type`` (a mod's declared action type, or ``"mcp.call"``), ``tool``
    (``"server.tool"``, only for ``mcp.call``; ``None``: any), ``session_id`` (``None``: any
    session) and ``tags`` (the session's tags must include every one; a scope's rule carries
    the scope's). ``by`` allowed it and ``reason`` says why; ``revoked_at``/``revoked_by``
    once revoked (it then matches nothing). A decision it made has ``decided_by`` equal to
    its ``id``. Obtain one from ``host.approvals``.
    """

    id: str
    action_type: str
    tool: str | None
    session_id: SessionId | None
    tags: Mapping[str, str]
    by: str
    reason: str | None
    created_at: datetime
    revoked_at: datetime | None = None
    revoked_by: str | None = None


def to_rule(record: ApprovalRuleRecord) -> ApprovalRule:
    return ApprovalRule(
        id=record.id,
        action_type=record.action_type,
        tool=record.tool,
        session_id=record.session_id,
        tags=record.tags,
        by=record.created_by,
        reason=record.reason,
        created_at=record.created_at,
        revoked_at=record.revoked_at,
        revoked_by=record.revoked_by,
    )


@final
class Approvals(metaclass=NoPublicConstructor):
    """Standing approvals: ``host.approvals`` (every rule) or ``view.approvals`` (a scope's).

    ``allow`` writes a rule, ``list`` reads them, ``revoke`` ends one. Rules are durable on
    every store, shared by every host on it, and a scope's rules match only its sessions.
    Obtain it from ``host.approvals`` or ``host.scoped(tags).approvals``.
    """

    __slots__ = ("_clock", "_declared", "_engine", "_scope")

    def __init__(
        self, engine: Engine, declared: frozenset[str], clock: Callable[[], datetime], scope: Scope | None
    ) -> None:
        self._engine = engine
        self._declared = declared  # the action types the loaded mods declare (fixed when the host opens)
        self._clock = clock
        self._scope = scope

    def _store(self) -> ApprovalStore:
        store = self._engine.store
        if not isinstance(store, ApprovalStore):
            raise InvalidArgumentError(
                f"this host's store ({type(store).__name__}) keeps no approval rules; use MemoryStore, "
                "SqliteStore or PostgresStore",
                argument="store",
                value=type(store).__name__,
            )
        return store

    async def allow(
        self,
        *,
        action_type: str,
        tool: str | None = None,
        session: SessionHandle | SessionId | str | None = None,
        tags: Mapping[str, str] | None = None,
        by: str,
        reason: str | None = None,
    ) -> ApprovalRule:
        """Allow actions of ``action_type`` for good: each one proposed from now on in a session
        the rule covers is confirmed at once, ``decided_by`` this rule's id.

        ``tool`` (``"server.tool"``) narrows an ``"mcp.call"`` rule to one MCP tool;
        ``session`` to one session; ``tags`` to sessions whose tags include them (on a scoped
        view the scope's tags are always added). ``by`` is who allowed it, ``reason`` why.
        An action already waiting is not decided by a new rule: confirm it as usual.
        Raises `InvalidArgumentError` naming a bad argument (an action type no loaded mod
        declares, a ``tool`` for another type), `UnknownSessionError` for a session the host
        (or scope) does not have.
        """
        store = self._store()
        declared = self._declared
        if not isinstance(action_type, str) or action_type not in declared | {MCP_CALL}:
            known = ", ".join(repr(t) for t in sorted(declared | {MCP_CALL}))
            raise InvalidArgumentError(
                f"allow(action_type=...) takes an action type a loaded mod declares, or 'mcp.call' for MCP "
                f"tools that write; got {show(action_type)} (known: {known})",
                argument="action_type",
                value=action_type,
            )
        if tool is not None:
            if action_type != MCP_CALL or not isinstance(tool, str) or "." not in tool.strip(".") or unstorable_text(tool):
                raise InvalidArgumentError(
                    f"allow(tool=...) names one MCP tool as 'server.tool' and only with action_type='mcp.call'; "
                    f"got tool={show(tool)} with action_type={action_type!r}",
                    argument="tool",
                    value=tool,
                )
        _check_text("by", by, required=True)
        _check_text("reason", reason, required=False)
        session_id: SessionId | None = None
        if session is not None:
            session_id = await self._session_id(session)
        merged = _checked_tags(tags) if self._scope is None else self._scope.merged(tags)
        record = ApprovalRuleRecord(
            id=f"rule_{secrets.token_hex(6)}",
            action_type=action_type,
            tool=tool,
            session_id=session_id,
            tags=merged,
            created_by=by,
            reason=reason,
            created_at=self._clock(),
        )
        await store.add_approval_rule(record)
        return to_rule(record)

    async def list(self) -> list[ApprovalRule]:
        """Every rule (revoked ones too, with ``revoked_at``), oldest first; a scope's only."""
        store = self._store()
        return [to_rule(r) for r in await store.approval_rules() if await self._sees(r)]

    async def get(self, rule_id: str) -> ApprovalRule:
        """One rule by id; `UnknownApprovalRuleError` for an id unknown (or outside the scope)."""
        return to_rule(await self._record(rule_id))

    async def revoke(self, rule_id: str, *, by: str) -> ApprovalRule:
        """End a rule: it matches nothing from now on (what it decided stays decided).

        Returns the revoked rule. Raises `UnknownApprovalRuleError` for an id unknown (or
        outside the scope) or a rule revoked before, `InvalidArgumentError` for a bad ``by``.
        """
        _check_text("by", by, required=True)
        store = self._store()
        await self._record(rule_id)
        try:
            await store.revoke_approval_rule(rule_id, self._clock(), by)
        except StoreError:
            found = await store.get_approval_rule(rule_id)
            if found is None or found.revoked_at is None:
                raise
            raise UnknownApprovalRuleError(
                f"approval rule {rule_id!r} was revoked at {found.revoked_at.isoformat()} by {found.revoked_by!r}; "
                "a rule is revoked once (allow again to make a new one)",
                id=rule_id,
            ) from None
        return await self.get(rule_id)

    async def _record(self, rule_id: str) -> ApprovalRuleRecord:
        store = self._store()
        found = await store.get_approval_rule(rule_id) if isinstance(rule_id, str) and not unstorable_text(rule_id) else None
        if found is None or not await self._sees(found):
            raise UnknownApprovalRuleError(
                f"no approval rule {show(rule_id)}; use an id from host.approvals.list()", id=show(rule_id)
            )
        return found

    async def _sees(self, rule: ApprovalRuleRecord) -> bool:
        scope = self._scope
        if scope is None or scope.admits(rule.tags):
            return True
        if rule.session_id is None:
            return False
        record = await self._engine.session_record(rule.session_id)
        return record is not None and scope.admits(record.tags)

    async def _session_id(self, session: object) -> SessionId:
        from ._handles import SessionHandle

        raw = session.id if isinstance(session, SessionHandle) else session
        if not isinstance(raw, str):
            raise InvalidArgumentError(
                f"allow(session=...) takes a session handle or id, got {show(session)}", argument="session", value=session
            )
        if self._scope is not None:
            return (await session_state(self._engine, self._scope, raw)).id
        return (await self._engine.load(raw)).id

    def __repr__(self) -> str:
        return "<Approvals>" if self._scope is None else f"<Approvals {dict(self._scope.tags)!r}>"


def _checked_tags(more: object) -> dict[str, str]:
    if more is None:
        return {}
    if not isinstance(more, Mapping) or not all(isinstance(k, str) and k and isinstance(v, str) for k, v in more.items()):
        raise InvalidArgumentError(
            f"tags must map non-empty str to str, like {{'user': 'alice'}}, got {show(more)}", argument="tags", value=more
        )
    for key, value in more.items():
        problem = unstorable_text(key) or unstorable_text(value)
        if problem is not None:
            raise InvalidArgumentError(f"tags must be storable text: {problem}", argument="tags", value=more)
    return dict(more)


def _check_text(argument: str, value: object, *, required: bool) -> None:
    if value is None and not required:
        return
    problem = None if isinstance(value, str) and value.strip() else "a non-empty str" + ("" if required else " or None")
    if problem is None:
        assert isinstance(value, str)
        problem = unstorable_text(value)
    if problem is not None:
        raise InvalidArgumentError(
            f"{argument}= must be {problem}, got {show(value)}; pass e.g. "
            "host.approvals.allow(action_type='task.create', by='alice', reason='routine')",
            argument=argument,
            value=value,
        )

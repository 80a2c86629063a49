"""Standing approvals as records (docs/protocols.md): what a store keeps of "allow always".

An `ApprovalRuleRecord` is written once when a user (or a protocol front end answering for
one) allows a kind of action for good, and changes only twice at most: once to be revoked
(``revoked_at``, ``revoked_by``), and once to lose its ``reason`` (text) when the session it
names is deleted (stores/_erasure.py ``PLACES``). It is never deleted. `ApprovalStore` is
what a store offers to keep them; `MemoryStore`, `SqliteStore` and `PostgresStore`
implement it (`SqlApprovals` for both SQL stores, over the table ``approval_rules`` made
by ``SQLITE_APPROVALS`` and ``POSTGRES_APPROVALS`` when a writer opens the store).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from datetime import datetime
from typing import TYPE_CHECKING, Final, Protocol, runtime_checkable

import attrs

from . import _rows
from ._errors import StoreError
from ._records import ERASED_LABEL
from ._sql import SqlPart, Step
from ._trace_records import ActionOutcomeRecord, ApprovalRuleRecord, ProposedActionRecord

if TYPE_CHECKING:
    from ._protocol import Store

__all__ = [
    "APPROVAL_RULES",
    "POSTGRES_APPROVALS",
    "SQLITE_APPROVALS",
    "ApprovalStore",
    "SqlApprovals",
    "confirmed_by",
    "no_rule",
    "rule_for",
]

APPROVAL_RULES: Final = _rows.Table("approval_rules", ApprovalRuleRecord, ("id",), frozenset({"tags"}))


def no_rule(rule_id: str) -> str:
    return f"no approval rule {rule_id!r} is stored, or it was revoked before; a rule is revoked once"


@runtime_checkable
class ApprovalStore(Protocol):
    """A store that keeps standing approvals (see the module docstring). Each write is one transaction."""

    async def add_approval_rule(self, rule: ApprovalRuleRecord) -> None:
        """Write a new rule; refuses an id already stored."""
        ...

    async def revoke_approval_rule(self, rule_id: str, at: datetime, by: str) -> None:
        """Mark a live rule revoked; refuses an unknown id and one revoked before."""
        ...

    async def get_approval_rule(self, rule_id: str) -> ApprovalRuleRecord | None:
        """One rule (revoked or not), or ``None``."""
        ...

    async def approval_rules(self, action_type: str | None = None) -> Sequence[ApprovalRuleRecord]:
        """With ``action_type``, the live (unrevoked) rules of that type (an indexed read); without,
        every rule, revoked ones included. In the order they were created."""
        ...

    async def decide_by_rule(self, outcome: ActionOutcomeRecord, rule_id: str) -> None:
        """`TraceStore.decide_action`, only while rule ``rule_id`` is live, in one transaction:
        a revoke that returned is never followed by a decision of that rule. Refuses (`StoreError`)
        a revoked rule, an unknown action and one decided before."""
        ...


class SqlApprovals(SqlPart):
    """The `ApprovalStore` methods of the SQL store engine, `_sql_store.SqlStore`: a part of
    it, over its dialect and driver."""

    __slots__ = ()

    def _approvals_present(self) -> bool:
        return self._driver.has_table("approval_rules")

    async def add_approval_rule(self, rule: ApprovalRuleRecord) -> None:
        d, table = self._dialect, APPROVAL_RULES
        sql = f"INSERT INTO {d.table(table.name)} ({', '.join(table.columns)}) VALUES ({d.marks(len(table.columns))})"
        await self._transact([Step(sql, self._row(table, rule), f"approval rule {rule.id!r} is already stored")])

    async def revoke_approval_rule(self, rule_id: str, at: datetime, by: str) -> None:
        m = self._dialect.mark
        sql = (
            f"UPDATE {self._dialect.table('approval_rules')} SET revoked_at = {m}, revoked_by = {m} "
            f"WHERE id = {m} AND revoked_at IS NULL"
        )
        await self._transact([Step(sql, (at.isoformat(), by, rule_id), no_rule(rule_id), "change")])

    async def get_approval_rule(self, rule_id: str) -> ApprovalRuleRecord | None:
        if not self._approvals_present():
            return None
        m = self._dialect.mark
        found = await self._records_where(APPROVAL_RULES, ApprovalRuleRecord, f"WHERE id = {m}", (rule_id,))
        return found[0] if found else None

    async def decide_by_rule(self, outcome: ActionOutcomeRecord, rule_id: str) -> None:
        d, table = self._dialect, _rows.ACTION_OUTCOMES
        m = d.mark
        share = "" if d.or_ignore else " FOR SHARE"  # PostgreSQL: a concurrent revoke waits, or is seen
        sql = (
            f"INSERT INTO {d.table(table.name)} ({', '.join(table.columns)}) SELECT {d.marks(len(table.columns))} "
            f"WHERE EXISTS (SELECT 1 FROM {d.table('approval_rules')} WHERE id = {m} AND revoked_at IS NULL{share})"
        )
        await self._transact(
            [
                d.check(_rows.action_stored(outcome.action_id)),
                Step(sql, (*self._row(table, outcome), rule_id), _rows.action_decided(outcome.action_id)),
                Step(
                    f"SELECT 1 FROM {d.table(table.name)} WHERE action_id = {m}",
                    (outcome.action_id,),
                    f"approval rule {rule_id!r} was revoked; action {outcome.action_id!r} waits for the user",
                    "row",
                ),
            ]
        )

    async def approval_rules(self, action_type: str | None = None) -> Sequence[ApprovalRuleRecord]:
        if not self._approvals_present():
            return ()
        d = self._dialect
        if action_type is None:
            return await self._records_where(APPROVAL_RULES, ApprovalRuleRecord, f"ORDER BY {d.order}", ())
        return await self._records_where(
            APPROVAL_RULES,
            ApprovalRuleRecord,
            f"WHERE action_type = {d.mark} AND revoked_at IS NULL ORDER BY {d.order}",
            (action_type,),
        )


class MemoryApprovals:
    """The `ApprovalStore` of `MemoryStore`: its rules, by id in creation order."""

    __slots__ = ("rules",)

    def __init__(self) -> None:
        self.rules: dict[str, ApprovalRuleRecord] = {}

    def add(self, rule: ApprovalRuleRecord) -> None:
        if rule.id in self.rules:
            raise StoreError(f"approval rule {rule.id!r} is already stored")
        APPROVAL_RULES.row(rule)  # refuses what a durable store could not keep, alike
        self.rules[rule.id] = rule

    def revoke(self, rule_id: str, at: datetime, by: str) -> None:
        rule = self.rules.get(rule_id)
        if rule is None or rule.revoked_at is not None:
            raise StoreError(no_rule(rule_id))
        self.rules[rule_id] = attrs.evolve(rule, revoked_at=at, revoked_by=by)

    def of_type(self, action_type: str | None) -> tuple[ApprovalRuleRecord, ...]:
        if action_type is None:
            return tuple(self.rules.values())
        return tuple(r for r in self.rules.values() if r.action_type == action_type and r.revoked_at is None)


_SQLITE_COLUMNS: Final = """
    id TEXT PRIMARY KEY, action_type TEXT NOT NULL, tool TEXT, session_id TEXT, tags TEXT NOT NULL,
    created_by TEXT NOT NULL, reason TEXT, created_at TEXT NOT NULL, revoked_at TEXT, revoked_by TEXT
"""

SQLITE_APPROVALS: Final = f"""
CREATE TABLE IF NOT EXISTS approval_rules ({_SQLITE_COLUMNS});
CREATE INDEX IF NOT EXISTS approval_rules_by_type ON approval_rules (action_type) WHERE revoked_at IS NULL;
CREATE INDEX IF NOT EXISTS approval_rules_by_session ON approval_rules (session_id) WHERE session_id IS NOT NULL;
CREATE TRIGGER IF NOT EXISTS approval_rules_never_change BEFORE UPDATE ON approval_rules
WHEN NOT (
    NEW.id = OLD.id AND NEW.action_type = OLD.action_type AND NEW.tool IS OLD.tool
    AND NEW.session_id IS OLD.session_id AND NEW.tags = OLD.tags AND NEW.created_by = OLD.created_by
    AND NEW.created_at = OLD.created_at
    AND ((
        OLD.revoked_at IS NULL AND NEW.revoked_at IS NOT NULL AND NEW.revoked_by IS NOT NULL AND NEW.reason IS OLD.reason
    ) OR (
        NEW.revoked_at IS OLD.revoked_at AND NEW.revoked_by IS OLD.revoked_by
        AND (NEW.reason IS OLD.reason OR NEW.reason = '{ERASED_LABEL}')
    ))
)
BEGIN SELECT RAISE(ABORT, 'an approval rule never changes (except once to be revoked, and to lose its reason, erased)'); END;
CREATE TRIGGER IF NOT EXISTS approval_rules_are_kept BEFORE DELETE ON approval_rules
BEGIN SELECT RAISE(ABORT, 'an approval rule is never deleted (revoke it)'); END;
"""
"""The SQLite table of approval rules (run by a writer whose store lacks it)."""

POSTGRES_APPROVALS: Final = f"""
CREATE TABLE IF NOT EXISTS host_sim.approval_rules (
    seq bigint GENERATED ALWAYS AS IDENTITY, id text PRIMARY KEY, action_type text NOT NULL, tool text,
    session_id text, tags text NOT NULL, created_by text NOT NULL, reason text, created_at text NOT NULL,
    revoked_at text, revoked_by text
);
CREATE INDEX IF NOT EXISTS approval_rules_by_type ON host_sim.approval_rules (action_type, seq) WHERE revoked_at IS NULL;
CREATE INDEX IF NOT EXISTS approval_rules_by_session ON host_sim.approval_rules (session_id) WHERE session_id IS NOT NULL;
CREATE OR REPLACE TRIGGER approval_rules_never_change BEFORE UPDATE ON host_sim.approval_rules FOR EACH ROW
    WHEN (NOT (
        NEW.id = OLD.id AND NEW.action_type = OLD.action_type AND NEW.tool IS NOT DISTINCT FROM OLD.tool
        AND NEW.session_id IS NOT DISTINCT FROM OLD.session_id AND NEW.tags = OLD.tags
        AND NEW.created_by = OLD.created_by AND NEW.created_at = OLD.created_at AND NEW.seq = OLD.seq
        AND ((
            OLD.revoked_at IS NULL AND NEW.revoked_at IS NOT NULL AND NEW.revoked_by IS NOT NULL
            AND NEW.reason IS NOT DISTINCT FROM OLD.reason
        ) OR (
            NEW.revoked_at IS NOT DISTINCT FROM OLD.revoked_at AND NEW.revoked_by IS NOT DISTINCT FROM OLD.revoked_by
            AND (NEW.reason IS NOT DISTINCT FROM OLD.reason OR NEW.reason = '{ERASED_LABEL}')
        ))))
    EXECUTE FUNCTION host_sim.refuse('an approval rule never changes (except once to be revoked, and to lose its reason, erased)');
CREATE OR REPLACE TRIGGER approval_rules_are_kept BEFORE DELETE ON host_sim.approval_rules
    FOR EACH ROW EXECUTE FUNCTION host_sim.refuse('an approval rule is never deleted (revoke it)');
CREATE OR REPLACE TRIGGER approval_rules_are_never_truncated BEFORE TRUNCATE ON host_sim.approval_rules
    FOR EACH STATEMENT EXECUTE FUNCTION host_sim.refuse('approval rules are never deleted');
"""
"""The PostgreSQL table of approval rules (run when a host opens a store that lacks it)."""


MCP_CALL: Final = "mcp.call"


def _tool_of(action: ProposedActionRecord) -> str | None:
    if action.type != MCP_CALL:
        return None
    server, tool = action.payload.get("server"), action.payload.get("tool")
    return f"{server}.{tool}" if isinstance(server, str) and isinstance(tool, str) else None


async def rule_for(store: Store, action: ProposedActionRecord) -> ApprovalRuleRecord | None:
    """The earliest live rule that covers ``action``, or ``None``: the one place that decides it.

    Read from the store (a rule any host wrote counts): one indexed read by action type, and
    the session's record only when a candidate rule names tags.
    """
    if not isinstance(store, ApprovalStore):
        return None
    candidates = [
        rule
        for rule in await store.approval_rules(action.type)
        if (rule.session_id is None or rule.session_id == action.session_id)
        and (rule.tool is None or rule.tool == _tool_of(action))
    ]
    if not candidates:
        return None
    tags: Mapping[str, str] = {}
    if any(rule.tags for rule in candidates):
        record = await store.get_session(action.session_id)
        tags = {} if record is None else record.tags
    for rule in candidates:
        if all(tags.get(key) == value for key, value in rule.tags.items()):
            return rule
    return None


def confirmed_by(action: ProposedActionRecord, rule: ApprovalRuleRecord, at: datetime) -> ActionOutcomeRecord:
    """The decision a rule makes about an action: confirmed, ``decided_by`` the rule's id, its reason."""
    return ActionOutcomeRecord(
        action_id=action.id,
        state="confirmed",
        decided_at=at,
        decided_by=rule.id,
        reason=rule.reason,
        session_id=action.session_id,
        turn_id=action.turn_id,
    )

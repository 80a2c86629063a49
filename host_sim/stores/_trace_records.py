"""What a store keeps of traces and of the actions proposed in them: a trace, its task, its
sessions' links, its outputs and their first commits, the derived index rows, each proposed
action and its one outcome, and the standing approval rules that decide actions.

A floor below every store module: it imports nothing of host_sim, so the trace protocol
(``_traces``), the erasure walk (``_erasure``), the rows (``_rows``) and the stores all build on
it. The rules these records obey (append-only, what an erasure may change) are `TraceStore`'s.
"""

from __future__ import annotations

import types
from collections.abc import Mapping
from datetime import datetime
from typing import Literal

import attrs

from modular_sdk import SessionId, TurnId
from modular_sdk._frozen import FrozenJsonObject

__all__ = [
    "ActionOutcomeRecord",
    "ApprovalRuleRecord",
    "IndexKind",
    "ProposedActionRecord",
    "TraceCommitRecord",
    "TraceIndexEntry",
    "TraceLinkRecord",
    "TraceOutputRecord",
    "TraceRecord",
    "TraceRecords",
    "TraceState",
    "TraceTaskRecord",
]

IndexKind = Literal["task", "session", "output", "commit"]
"""What an index key is; `TraceStore.find_trace` tries them in this order."""


@attrs.frozen(kw_only=True)
class TraceRecord:
    """A trace as created: its id, its origin (never changes) and when. Immutable."""

    id: str
    origin: Literal["task", "chat"]
    created_at: datetime


@attrs.frozen(kw_only=True)
class TraceTaskRecord:
    """The task a trace got (at creation, or once later by ``attach_task``). Immutable."""

    trace_id: str
    ref: str
    snapshot: FrozenJsonObject
    captured_at: datetime


@attrs.frozen(kw_only=True)
class TraceLinkRecord:
    """A session working on a trace; a session is in at most one trace. Immutable."""

    session_id: SessionId
    trace_id: str
    created_at: datetime


@attrs.frozen(kw_only=True)
class TraceOutputRecord:
    """An output a session reported (``ctx.report_output``, a spool event). Immutable.

    ``turn_id``: the turn whose tool reported it; ``position``: the session's next ordinal
    when the slash command that reported it ran (where it was typed). ``None`` for an
    output reported otherwise (a spool event) or written before they were kept. They are
    what lets ``forget`` reach the output (stores/_erasure.py).
    """

    output_id: str
    trace_id: str
    session_id: SessionId
    kind: str
    created_at: datetime
    turn_id: TurnId | None = None
    position: int | None = None


@attrs.frozen(kw_only=True)
class TraceCommitRecord:
    """The first commit hash recorded for an output; never overwritten. Immutable."""

    output_id: str
    commit_hash: str
    recorded_at: datetime


@attrs.frozen(kw_only=True)
class TraceIndexEntry:
    """One row of the derived index: ``key`` (of ``kind``) leads to ``trace_id``. Immutable."""

    kind: IndexKind
    key: str
    trace_id: str


@attrs.frozen(kw_only=True)
class ProposedActionRecord:
    """An action a model proposed, as recorded (its payload as JSON). Immutable.

    It changes once more only if its turn is forgotten or its session deleted: its payload
    goes (``{}``) and ``erased_at`` is set; an erased action is never confirmed.
    """

    id: str
    type: str
    payload: FrozenJsonObject
    mod_id: str
    session_id: SessionId
    turn_id: TurnId
    created_at: datetime
    erased_at: datetime | None = None


@attrs.frozen(kw_only=True)
class ActionOutcomeRecord:
    """What the user decided about a proposed action, once: who (``decided_by``, the
    integrator's name for them) and why (``reason``, text). Immutable.

    ``session_id`` and ``turn_id`` are the action's, copied so the erasure walk finds the
    decision with it (``None`` in decisions stored before they were kept). It changes once
    more only to be erased: its ``reason`` becomes ``"(erased)"``.
    """

    action_id: str
    state: Literal["confirmed", "dismissed"]
    decided_at: datetime
    decided_by: str | None = None
    reason: str | None = None
    session_id: SessionId | None = None
    turn_id: TurnId | None = None


@attrs.frozen(kw_only=True)
class TraceRecords:
    """Every record of one trace: what ``host.traces`` assembles a `Trace` from. Immutable."""

    trace: TraceRecord
    task: TraceTaskRecord | None
    links: tuple[TraceLinkRecord, ...]
    outputs: tuple[TraceOutputRecord, ...]
    commits: tuple[TraceCommitRecord, ...]


@attrs.frozen(kw_only=True)
class TraceState:
    """Every trace record and index row of a store (for checks and repair). Immutable."""

    traces: tuple[TraceRecord, ...] = ()
    tasks: tuple[TraceTaskRecord, ...] = ()
    links: tuple[TraceLinkRecord, ...] = ()
    outputs: tuple[TraceOutputRecord, ...] = ()
    commits: tuple[TraceCommitRecord, ...] = ()
    index: tuple[TraceIndexEntry, ...] = ()


def _frozen_tags(value: Mapping[str, str]) -> Mapping[str, str]:
    return value if isinstance(value, types.MappingProxyType) else types.MappingProxyType(dict(value))


@attrs.frozen(kw_only=True)
class ApprovalRuleRecord:
    """A standing approval as stored. Immutable.

    It matches a pending action of type ``action_type`` (and, for ``mcp.call``, of the MCP
    tool ``tool`` as ``"server.tool"``), proposed in session ``session_id`` when set, in a
    session whose tags include every one of ``tags`` (a scope's rule carries the scope's
    tags). ``created_by`` is who allowed it, ``reason`` why; ``revoked_at``/``revoked_by``
    once revoked (it then matches nothing).
    """

    id: str
    action_type: str
    tool: str | None
    session_id: SessionId | None
    tags: Mapping[str, str] = attrs.field(converter=_frozen_tags, hash=False)
    created_by: str
    reason: str | None
    created_at: datetime
    revoked_at: datetime | None = None
    revoked_by: str | None = None

"""What a store keeps: one record per session, turn, command invocation and job.

Session records are written once and never change. A turn record is written when the
turn starts (status ``running``, no ``finished_at``) and replaced once when it finishes;
so is an invocation. A job record is written when the job starts and when it ends.
"""

from __future__ import annotations

import types
from collections.abc import Mapping
from datetime import datetime
from typing import Literal, TypeAlias

import attrs

from modular_sdk import (
    AiMessage,
    AiRunnerId,
    AiSessionDisplayMetadata,
    AiSessionLineage,
    Author,
    SessionId,
    TurnId,
    TurnStatus,
)

from modular_sdk import ToolCallRecord, Usage, WidgetPlacement

from ..lineage._types import LineageEdge, SessionNode

__all__ = [
    "ErrorKind",
    "Invocation",
    "JobRecord",
    "JobStatus",
    "SessionRecord",
    "StoredState",
    "ToolCallRecord",
    "TurnRecord",
]

ErrorKind: TypeAlias = Literal[
    "unknown_command", "denied", "handler_failed", "timeout", "model_failed", "invalid_input", "interrupted"
]
"""Why a submission failed, for a program to branch on (`Submission.error_kind`); ``"interrupted"``:
its job was stopped before it finished (the host closed or died, or the job was cancelled)."""

JobStatus: TypeAlias = Literal["running", "finished", "failed", "interrupted", "cancelled"]
"""Where a job is: ``"running"``, then one of the others, once."""


_NO_TAGS: Mapping[str, str] = types.MappingProxyType({})


def _frozen_tags(value: Mapping[str, str]) -> Mapping[str, str]:
    if isinstance(value, types.MappingProxyType):
        return value
    return types.MappingProxyType(dict(value)) if value else _NO_TAGS  # most sessions: one shared empty


@attrs.frozen(kw_only=True)
class SessionRecord:
    """A session as created: never changes afterwards. Immutable."""

    id: SessionId
    lineage: AiSessionLineage
    metadata: AiSessionDisplayMetadata | None
    model: str
    cwd: str
    runner_id: AiRunnerId
    created_at: datetime
    agent_id: str | None = None
    trigger_turn_id: TurnId | None = None  # a spawn made by a tool call: the turn that made the call
    tags: Mapping[str, str] = attrs.field(factory=dict, converter=_frozen_tags, hash=False)


@attrs.frozen(kw_only=True)
class TurnRecord:
    """A turn: written ``running`` when it starts, then once more when it finishes. Immutable.

    ``finished_at`` is ``None`` exactly while ``status`` is ``"running"``. A finished turn
    changes only if it is forgotten (once: its text goes, ``erased_at`` is set, and
    everything else, ids, ordinal, author, times, status, stays) or retracted (once:
    ``retracted_at`` and ``retraction_reason`` are set, nothing else changes).
    """

    id: TurnId
    session_id: SessionId
    ordinal: int
    message: AiMessage
    message_id: str
    author: Author
    runner_id: AiRunnerId
    status: TurnStatus
    reply: str | None
    error: str | None
    started_at: datetime
    finished_at: datetime | None
    erased_at: datetime | None = None  # set once by forget: message text and reply are gone
    tool_calls: tuple[ToolCallRecord, ...] = ()  # written with the finished record
    retracted_at: datetime | None = None  # set once by lineage.retract: the turn was found wrong
    retraction_reason: str | None = None  # why (text: erased with the turn)
    usage: Usage | None = None  # its model calls' token usage, summed (None: no call reported any)
    widgets: tuple[WidgetPlacement, ...] = ()  # what its reply placed, written with the finished record


@attrs.frozen(kw_only=True)
class StoredState:
    """Everything a store holds, read back when a host opens on it."""

    sessions: tuple[SessionRecord, ...] = ()
    turns: tuple[TurnRecord, ...] = ()
    nodes: tuple[SessionNode, ...] = ()
    edges: tuple[LineageEdge, ...] = ()


@attrs.frozen(kw_only=True)
class Invocation:
    """One run of a slash or palette command, as ``host.log`` lists it. Immutable.

    Written when the command starts (``finished_at``, ``text`` unset) and once more when it
    finishes. ``session_id`` is ``None`` for a palette command; ``position`` is how many
    turns the session held when it started (so ``host.log`` interleaves it with the turns
    exactly where it happened); ``erased_at`` is set when its session was deleted.
    """

    id: str
    session_id: SessionId | None
    mod_id: str
    command_id: str
    argument: str | None
    author: Author
    started_at: datetime
    finished_at: datetime | None = None
    text: str | None = None
    error: str | None = None
    error_kind: ErrorKind | None = None
    position: int = 0
    erased_at: datetime | None = None


@attrs.frozen(kw_only=True)
class JobRecord:
    """A host-owned job (``host.start``), as stored: written when it starts and when it ends. Immutable."""

    id: str
    session_id: SessionId
    text: str
    status: JobStatus
    created_at: datetime
    finished_at: datetime | None = None
    kind: Literal["prompt", "command"] | None = None
    result: str | None = None
    error: str | None = None
    error_kind: ErrorKind | None = None
    turn_id: TurnId | None = None

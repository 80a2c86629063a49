"""What a store keeps: one record per session and per turn.

Session records are written once and never change. A turn record is written when the
turn starts (status ``running``, no ``finished_at``) and replaced once when it finishes.
"""

from __future__ import annotations

from datetime import datetime

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

from ..lineage._types import LineageEdge, SessionNode

__all__ = ["SessionRecord", "StoredState", "TurnRecord"]


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


@attrs.frozen(kw_only=True)
class TurnRecord:
    """A turn: written ``running`` when it starts, then once more when it finishes. Immutable.

    ``finished_at`` is ``None`` exactly while ``status`` is ``"running"``. A finished turn
    changes once more only if it is forgotten: its text goes, ``erased_at`` is set, and
    everything else (ids, ordinal, author, times, status) stays.
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


@attrs.frozen(kw_only=True)
class StoredState:
    """Everything a store holds, read back when a host opens on it."""

    sessions: tuple[SessionRecord, ...] = ()
    turns: tuple[TurnRecord, ...] = ()
    nodes: tuple[SessionNode, ...] = ()
    edges: tuple[LineageEdge, ...] = ()

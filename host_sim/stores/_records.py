"""What a store keeps: one record per session and per finished turn."""

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


@attrs.frozen(kw_only=True)
class TurnRecord:
    """A finished turn (``completed`` or ``failed``), written once when it finishes."""

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
    finished_at: datetime


@attrs.frozen(kw_only=True)
class StoredState:
    """Everything a store holds, read back when a host opens on it."""

    sessions: tuple[SessionRecord, ...] = ()
    turns: tuple[TurnRecord, ...] = ()
    nodes: tuple[SessionNode, ...] = ()
    edges: tuple[LineageEdge, ...] = ()

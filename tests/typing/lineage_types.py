"""Type tests for lineage: a closed union discriminated by ``kind``.

Checked by mypy, never run.
"""

from __future__ import annotations

from datetime import datetime
from typing import Literal, assert_never, assert_type

from modular_sdk import (
    AiRunnerId,
    AiSessionHandle,
    AiSessionLineage,
    CommandTrigger,
    ForkLineage,
    RootLineage,
    SessionId,
    SpawnLineage,
    SpawnTrigger,
    ToolTrigger,
)


def depth(lineage: AiSessionLineage) -> int:
    """``match`` is exhaustive: a fourth lineage kind would fail ``assert_never``."""
    match lineage:
        case RootLineage():
            assert_type(lineage, RootLineage)
            return 0
        case SpawnLineage(depth=spawn_depth, trigger=trigger):
            assert_type(trigger, SpawnTrigger)
            return spawn_depth
        case ForkLineage():
            assert_type(lineage.parent_turn_ordinal, int)
            return lineage.depth
        case _:
            assert_never(lineage)


def narrow_on_kind(lineage: AiSessionLineage) -> None:
    if lineage.kind == "fork":
        assert_type(lineage, ForkLineage)
        assert_type(lineage.parent_session_id, SessionId)
        assert_type(lineage.parent_runner_id, AiRunnerId)
        assert_type(lineage.parent_user_message_id, str | None)
        assert_type(lineage.forked_at, datetime)
    elif lineage.kind == "spawn":
        assert_type(lineage, SpawnLineage)
        assert_type(lineage.spawned_at, datetime)
    else:
        assert_type(lineage, RootLineage)
        assert_type(lineage.kind, Literal["root"])


def trigger_source(trigger: SpawnTrigger) -> str:
    if trigger.kind == "command":
        assert_type(trigger, CommandTrigger)
        return trigger.command_id
    assert_type(trigger, ToolTrigger)
    return trigger.tool_name


def from_a_session(session: AiSessionHandle) -> None:
    assert_type(session.lineage, AiSessionLineage)
    assert_type(session.lineage, RootLineage | SpawnLineage | ForkLineage)

"""Type tests for session and turn handles: ``run`` overloads, messages, authors.

Checked by mypy, never run.
"""

from __future__ import annotations

from datetime import datetime
from typing import Literal, assert_never, assert_type

import attrs

from modular_sdk import (
    AiMessage,
    AiNotificationMessage,
    AiPromptMessage,
    AiRunnerId,
    AiRunResult,
    AiSessionHandle,
    AiTurnHandle,
    ModAuthor,
    SessionId,
    SlashCommandContext,
    ToolCallRecord,
    TurnId,
    Usage,
    UserAuthor,
    WidgetPlacement,
)


@attrs.frozen
class Plan:
    steps: list[str]


async def run_overloads(session: AiSessionHandle) -> None:
    result = await session.run("Summarize the diff")
    assert_type(result, AiRunResult)
    assert_type(result.text, str)
    assert_type(result.turn, AiTurnHandle)
    plan = await session.run("Plan the work as JSON", output_type=Plan)
    assert_type(plan, Plan)
    assert_type(plan.steps, list[str])


async def handles(session: AiSessionHandle) -> None:
    assert_type(session.id, SessionId)
    turn = await session.send(AiPromptMessage(text="Refactor the parser"))
    assert_type(turn, AiTurnHandle)
    assert_type(await session.notify(title="Build", body="green"), AiTurnHandle)
    assert_type(turn.id, TurnId)
    assert_type(turn.ordinal, int)
    assert_type(turn.session_id, SessionId)
    assert_type(turn.status, Literal["running", "completed", "failed"])
    assert_type(turn.reply, str | None)
    assert_type(turn.runner_id, AiRunnerId)
    assert_type(await turn.fork(), AiSessionHandle)
    assert_type(await session.fork(), AiSessionHandle)
    assert_type(await session.spawn(), AiSessionHandle)
    assert_type(await session.parent(), AiSessionHandle | None)
    assert_type(await session.children(), list[AiSessionHandle])
    assert_type(await session.turns(), list[AiTurnHandle])


async def the_record(session: AiSessionHandle) -> None:
    assert_type(session.created_at, datetime)
    assert_type(session.last_activity_at, datetime)
    for turn in await session.turns():
        assert_type(turn.tool_calls, tuple[ToolCallRecord, ...])
        assert_type(turn.retracted_at, datetime | None)
        assert_type(turn.retraction_reason, str | None)
        for call in turn.tool_calls:
            assert_type(call.output, str | None)
            assert_type(call.finished_at, datetime)
        assert_type(turn.usage, Usage | None)
        if turn.usage is not None:
            assert_type(turn.usage.total_tokens, int)
        assert_type(turn.widgets, tuple[WidgetPlacement, ...])
        for placed in turn.widgets:
            assert_type(placed.widget_id, str)
            assert_type(placed.index, int)


def message_text(message: AiMessage) -> str:
    if message.type == "prompt":
        assert_type(message, AiPromptMessage)
        return message.text
    assert_type(message, AiNotificationMessage)
    return f"{message.title}: {message.body}"


def message_text_by_match(message: AiMessage) -> str:
    match message:
        case AiPromptMessage(text=text):
            return text
        case AiNotificationMessage(title=title):
            return title
        case _:
            assert_never(message)


def author_label(turn: AiTurnHandle) -> str:
    author = turn.author
    if author.kind == "mod":
        assert_type(author, ModAuthor)
        assert_type(author.command_id, str | None)
        assert_type(author.tool_name, str | None)
        return author.mod_id
    assert_type(author, UserAuthor)
    return "user"


async def in_a_command(argument: str | None, ctx: SlashCommandContext) -> str:
    assert_type(ctx.session, AiSessionHandle)
    child = await ctx.ai.sessions.create()
    assert_type(child, AiSessionHandle)
    return ctx.command_id

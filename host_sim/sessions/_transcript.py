"""Plain-text transcripts: who said what, notifications marked as system events."""

from __future__ import annotations

import json
from collections.abc import Sequence

from modular_sdk import AiNotificationMessage, AiPromptMessage, WidgetPlacement
from modular_sdk._frozen import thaw_object

from ..lineage._render import describe_author
from ..stores._records import Invocation, ToolCallRecord, TurnRecord
from ._state import TurnState

__all__ = ["render_transcript"]


def _indent(text: str, prefix: str) -> str:
    return "\n".join(prefix + line if line else prefix.rstrip() for line in text.splitlines() or [""])


def _invocation_block(invocation: Invocation) -> str:
    who = f"{describe_author(invocation.author)}, command of mod {invocation.mod_id}"
    if invocation.erased_at is not None:
        return f"> [{who}] /{invocation.command_id} (erased)"
    typed = f"/{invocation.command_id}" + ("" if invocation.argument is None else f" {invocation.argument}")
    if invocation.finished_at is None:
        tail = "    (running)"
    elif invocation.error is not None:
        tail = f"    FAILED: {invocation.error}"
    else:
        tail = f"    output:\n{_indent(invocation.text or '', '      ')}"
    return f"> [{who}] {typed}\n{tail}"


def _tool_call_line(call: ToolCallRecord) -> str:
    """``    tool 'grep' {"pattern": "x"} -> 3 matches`` (or ``-> error: ...``), on one line."""
    given = json.dumps(thaw_object(call.input), ensure_ascii=False, sort_keys=True)
    outcome = f"error: {call.error}" if call.error is not None else (call.output or "")
    return f"    tool {call.name!r} {_short(given)} -> {_short(outcome.replace(chr(10), ' '))}"


def _widget_line(placed: WidgetPlacement) -> str:
    """``    widget 'build-status' {"state": "green"}``: a widget the reply placed, on one line."""
    data = json.dumps(thaw_object(placed.data), ensure_ascii=False, sort_keys=True)
    return f"    widget {placed.widget_id!r} {_short(data)}"


def _short(text: str, limit: int = 200) -> str:
    return text if len(text) <= limit else text[: limit - 3] + "..."


def render_transcript(items: Sequence[TurnState | TurnRecord | Invocation], session_id: str | None = None) -> str:
    """One block per turn (ordinal, the input and its author, the turn's id on the line after, its tool calls, the reply, the widgets it placed, a retraction) or command invocation
    (what the user typed, the command's output or error), in the order given (``host.log``'s).

    Turns run by another session than ``session_id`` (inherited by a fork) say so; an erased
    turn shows that it was erased, never an empty message.
    """
    blocks: list[str] = []
    for turn in items:
        if isinstance(turn, Invocation):
            blocks.append(_invocation_block(turn))
            continue
        who = describe_author(turn.author)
        if session_id is not None and turn.session_id != session_id:
            who += f", inherited from {turn.session_id}"
        message = turn.message
        turn_id = f"    id {turn.id}"  # what forget, lineage --forward/--backward and the MCP tools take
        if turn.erased_at is not None:
            kind = "notification, system event from " if isinstance(message, AiNotificationMessage) else ""
            blocks.append(f"#{turn.ordinal} [{kind}{who}] (erased)\n{turn_id}")
            continue
        if isinstance(message, AiNotificationMessage):
            head = f"#{turn.ordinal} [notification, system event from {who}] {message.title}"
            body = _indent(message.body, "    | ") if message.body else ""
        else:
            assert isinstance(message, AiPromptMessage)
            head = f"#{turn.ordinal} [{who}] {message.text}"
            body = ""
        if turn.status == "completed":
            reply = _indent(turn.reply or "", "      ")
            tail = f"    model:\n{reply}"
        elif turn.status == "failed":
            tail = f"    FAILED: {turn.error}"
        else:
            tail = "    (running)"
        calls = "\n".join(_tool_call_line(call) for call in turn.tool_calls)
        widgets = "\n".join(_widget_line(placed) for placed in turn.widgets)
        retracted = "" if turn.retracted_at is None else f"    RETRACTED: {turn.retraction_reason}"
        blocks.append("\n".join(part for part in (head, turn_id, body, calls, tail, widgets, retracted) if part))
    return "\n".join(blocks)

"""Plain-text transcripts: who said what, notifications marked as system events."""

from __future__ import annotations

from collections.abc import Sequence

from modular_sdk import AiNotificationMessage, AiPromptMessage, Author, ModAuthor, UserAuthor

from ._state import TurnState

__all__ = ["describe_author", "render_transcript"]


def describe_author(author: Author) -> str:
    """``user`` or ``mod background-tasks /task`` (or ``... tool 'grep'``)."""
    match author:
        case UserAuthor():
            return "user"
        case ModAuthor(mod_id=mod_id, command_id=command_id, tool_name=tool_name):
            if command_id is not None:
                return f"mod {mod_id} /{command_id}"
            if tool_name is not None:
                return f"mod {mod_id} tool {tool_name!r}"
            return f"mod {mod_id}"


def _indent(text: str, prefix: str) -> str:
    return "\n".join(prefix + line if line else prefix.rstrip() for line in text.splitlines() or [""])


def render_transcript(turns: Sequence[TurnState], session_id: str | None = None) -> str:
    """One block per turn: ordinal, the input (prompt or notification) and its author, reply.

    Turns run by another session than ``session_id`` (inherited by a fork) say so.
    """
    blocks: list[str] = []
    for turn in turns:
        who = describe_author(turn.author)
        if session_id is not None and turn.session_id != session_id:
            who += f", inherited from {turn.session_id}"
        message = turn.message
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
        blocks.append("\n".join(part for part in (head, body, tail) if part))
    return "\n".join(blocks)

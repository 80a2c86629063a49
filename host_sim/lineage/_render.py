"""Render sessions as a lineage tree: roots at the left, forks and spawns indented below.

Pure functions over `SessionRecord`s: no host, no store, no I/O, no recursion (lineage
depth is made by users, so every walk keeps its own stack). Used by ``host-sim lineage``
and ``host-sim demo``.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Iterable, Mapping, Sequence
from typing import Final, Literal, assert_never

import attrs

from modular_sdk import (
    Author,
    CommandTrigger,
    ForkLineage,
    ModAuthor,
    RootLineage,
    SessionId,
    SpawnLineage,
    ToolTrigger,
    UnknownSessionError,
    UserAuthor,
)

from ..stores._records import SessionRecord, TurnRecord

__all__ = ["conversation_lengths", "describe_author", "lineage_parent", "render_lineage_tree", "select_lineage_chain"]


def lineage_parent(record: SessionRecord) -> SessionId | None:
    """The session a fork or spawn came from; ``None`` for a root."""
    lineage = record.lineage
    match lineage:
        case RootLineage():
            return None
        case SpawnLineage(parent_session_id=parent) | ForkLineage(parent_session_id=parent):
            return parent
        case _:
            assert_never(lineage)


def describe_session(record: SessionRecord, turn_count: int | None) -> str:
    """One line for a session: id, how it came to be, its label, its turn count.

    >>> describe_session(record, 2)  # doctest: +SKIP
    's-2  fork@1  "Work: write the tests"  2 turns'
    """
    lineage = record.lineage
    match lineage:
        case RootLineage():
            how = "root" if record.agent_id is None else f"root (agent {record.agent_id})"
        case ForkLineage(parent_turn_ordinal=ordinal):
            how = f"fork@{ordinal}"
        case SpawnLineage(trigger=trigger):
            match trigger:
                case CommandTrigger(mod_id=mod_id, command_id=command_id):
                    how = f"spawn via command {mod_id}:{command_id}"
                case ToolTrigger(mod_id=mod_id, tool_name=tool_name, call_id=call_id):
                    how = f"spawn via tool {mod_id}:{tool_name} (call {call_id})"
                case _:
                    assert_never(trigger)
        case _:
            assert_never(lineage)
    parts = [record.id, how]
    if record.metadata is not None:
        parts.append(_quote(record.metadata.label))
    if turn_count is not None:
        parts.append(f"{turn_count} turn" if turn_count == 1 else f"{turn_count} turns")
    return "  ".join(parts)


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


def conversation_lengths(sessions: Sequence[SessionRecord], turns: Iterable[TurnRecord]) -> dict[SessionId, int]:
    """Turns in each session's conversation: a fork's inherited turns (through its anchor) included."""
    own: dict[SessionId, int] = {}
    for turn in turns:
        own[turn.session_id] = own.get(turn.session_id, 0) + 1
    counts: dict[SessionId, int] = {}
    for record in sessions:
        lineage = record.lineage
        match lineage:
            case ForkLineage(parent_turn_ordinal=anchor):
                inherited = anchor + 1
            case RootLineage() | SpawnLineage():
                inherited = 0
            case _:
                assert_never(lineage)
        counts[record.id] = inherited + own.get(record.id, 0)
    return counts


def render_lineage_tree(
    sessions: Sequence[SessionRecord],
    turn_counts: Mapping[SessionId, int],
    root: SessionId | None = None,
) -> str:
    """The sessions as a tree, one line each: roots first, their forks and spawns below.

    Children are listed in the order of ``sessions`` (creation order, as a store returns
    them). A session whose parent is not among ``sessions`` is shown as a root, noting its
    parent. ``turn_counts`` gives the number shown per session (a session missing from it
    shows none). With ``root``, only that session and what came from it are shown; raises
    `modular_sdk.UnknownSessionError` if it is not among ``sessions``.

    A chain is drawn as a column: the only child of a session that is drawn last among its
    siblings (``└──``), or drawn in a column itself, goes directly below it at the same
    indentation, marked ``↳`` (a child of the line above, never a sibling of it). Indentation stops at 16 levels: the children of a session
    that deep are drawn after its tree, at the left margin, each naming its parent. So the
    text grows linearly with the number of sessions however deep lineage goes, and no walk
    recurses.

    ::

        s-1  root  "Chat"  2 turns
        ├── s-2  fork@0  "Work: write the tests"  2 turns
        │   └── s-3  fork@1  "Report"  3 turns
        │       ↳ s-5  fork@2  "Follow-up"  4 turns
        └── s-4  spawn via command background-tasks:task  0 turns
    """
    by_id = {record.id: record for record in sessions}
    children: dict[SessionId, list[SessionRecord]] = {}
    roots: list[SessionRecord] = []
    for record in sessions:
        parent = lineage_parent(record)
        if parent is None or parent not in by_id:
            roots.append(record)
        else:
            children.setdefault(parent, []).append(record)
    if root is not None:
        if root not in by_id:
            raise UnknownSessionError(
                f"root {root!r} is not among the {len(sessions)} sessions to render; "
                "pass the id of one of them, or root=None for all",
                session_id=root,
            )
        roots = [by_id[root]]

    lines: list[str] = []
    shown: set[SessionId] = set()

    def draw(top: _Line) -> list[_Line]:
        """Draw one tree, depth first with a stack; return the subtrees too deep to indent."""
        moved: list[_Line] = []
        stack = [top]
        while stack:
            item = stack.pop()
            record = item.record
            line = (
                f"{item.lead}{_GLYPH[item.place]}"
                f"{describe_session(record, turn_counts.get(record.id))}{item.note}"
            )
            if record.id in shown:  # only a damaged store can make lineage loop
                lines.append(f"{line}  (already shown above)")
                continue
            shown.add(record.id)
            kids = children.get(record.id, [])
            column = item.lead + _BELOW[item.place]
            if len(kids) == 1 and item.place in ("last", "column"):
                lines.append(line)
                stack.append(_Line(kids[0], column, "column"))
            elif kids and len(column) >= _MAX_INDENT:
                what = "its child continues" if len(kids) == 1 else f"its {len(kids)} children continue"
                lines.append(f"{line}  ({what} below)")
                note = f"  (child of {record.id}, continued from above)"
                moved.extend(_Line(kid, "", "top", note) for kid in kids)
            else:
                lines.append(line)
                last = len(kids) - 1
                stack.extend(
                    _Line(kid, column, "last" if i == last else "middle")
                    for i, kid in reversed(list(enumerate(kids)))
                )
        return moved

    def draw_all(tops: deque[_Line]) -> None:
        while tops:
            tops.extendleft(reversed(draw(tops.popleft())))

    def top(record: SessionRecord) -> _Line:
        parent = lineage_parent(record)
        orphan = parent is not None and parent not in by_id
        return _Line(record, "", "top", f"  (parent {parent} not shown)" if orphan else "")

    draw_all(deque(top(record) for record in roots))
    if root is None:
        for record in sessions:  # lineage that loops (a damaged store) has no root
            if record.id not in shown:
                draw_all(deque([top(record)]))
    return "\n".join(lines)


_Place = Literal["top", "middle", "last", "column"]
"""Where a line sits: a tree's top, a branch with siblings below it, the last branch, or
the only child continuing its parent's column (marked ``↳``: drawn without it, at its
parent's indentation, it read as the parent's sibling)."""

_GLYPH: Final[Mapping[_Place, str]] = {"top": "", "middle": "├── ", "last": "└── ", "column": "↳ "}
_BELOW: Final[Mapping[_Place, str]] = {"top": "", "middle": "│   ", "last": "    ", "column": ""}
_MAX_INDENT: Final = 16 * 4
"""Columns of indentation after which children move to the left margin."""


@attrs.frozen
class _Line:
    """A session waiting to be drawn: its record, the text left of its branch, its place."""

    record: SessionRecord
    lead: str
    place: _Place
    note: str = ""


def select_lineage_chain(
    sessions: Sequence[SessionRecord], session_id: SessionId
) -> list[SessionRecord]:
    """The session, the forks and spawns it came from, and all that came from it.

    In the order of ``sessions``. Raises `modular_sdk.UnknownSessionError` if the session
    is not among ``sessions``.
    """
    by_id = {record.id: record for record in sessions}
    if session_id not in by_id:
        raise UnknownSessionError(
            f"session {session_id!r} is not among the {len(sessions)} stored sessions; "
            "pass the id of a stored session",
            session_id=session_id,
        )
    keep: set[SessionId] = set()
    current: SessionId | None = session_id
    while current is not None and current in by_id and current not in keep:
        keep.add(current)
        current = lineage_parent(by_id[current])
    children: dict[SessionId, list[SessionId]] = {}
    for record in sessions:
        parent = lineage_parent(record)
        if parent is not None:
            children.setdefault(parent, []).append(record.id)
    stack = list(children.get(session_id, []))
    while stack:
        sid = stack.pop()
        if sid not in keep:
            keep.add(sid)
            stack.extend(children.get(sid, []))
    return [record for record in sessions if record.id in keep]


def _quote(label: str) -> str:
    return '"' + label.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n") + '"'

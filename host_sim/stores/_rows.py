"""What every store checks before it writes: one definition of each guard, for all backends.

A store refuses a write that would break a record's rules (a turn begins once, running; a
turn finishes once; an invocation finishes with its finish time; an edge joins two stored
sessions ...). The rules live here, once, above the backends, so no store can lack a guard
another has: `MemoryStore` calls the checks with the rows it holds, and the SQL stores call
the checks that need only the record before they write, and give the statements that find
the current rows (a ``WHERE`` that matches no row, a constraint) the refusal made here.
What varies between databases is SQL, connections and transactions; nothing else.

Every refusal is a `StoreError`. ``refuse`` turns the rule's text into that error: a SQL
store passes one that names its file or DSN; the default raises it as it is.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from typing import TypeAlias

from modular_sdk import SessionId, TurnId

from ._errors import StoreError
from ._records import Invocation, LineageEdge, TurnRecord

__all__ = [
    "Refuse",
    "action_taken",
    "check_actions",
    "check_begin_turn",
    "check_ends",
    "check_erase_turn",
    "check_finish_invocation",
    "check_finish_turn",
    "check_turn_begins_at",
    "check_turn_finishes",
    "edge_ends",
    "invocation_not_started",
    "invocation_taken",
    "no_finished_turn",
    "no_session",
    "no_turn",
    "quoted_error_running",
    "session_taken",
    "turn_not_erasable",
    "turn_not_running",
    "turn_taken",
]

Refuse: TypeAlias = Callable[[str], StoreError]
"""Makes the error a store raises from a rule's text."""


def _plain(problem: str) -> StoreError:
    return StoreError(problem)


# -- what each refusal says (a SQL store gives these to the statement that finds the rows) --


def session_taken(session_id: SessionId) -> str:
    return f"session {session_id!r} is already stored and session records never change; create a new session instead"


def no_session(session_id: SessionId, rule: str) -> str:
    return f"no session {session_id!r} is stored; {rule}"


def no_turn(turn_id: TurnId, rule: str) -> str:
    return f"no turn {turn_id!r} is stored; {rule}"


def _turn_at(record: TurnRecord) -> str:
    return f"turn {record.ordinal} ({record.id!r}) of session {record.session_id!r}"


def turn_taken(record: TurnRecord) -> str:
    return f"cannot begin {_turn_at(record)}: its id or ordinal is taken; a turn begins once, at a free ordinal"


def turn_not_running(turn_id: TurnId) -> str:
    return f"turn {turn_id!r} is not a running turn of this store; a turn finishes once, where it began"


def no_finished_turn(turn_id: TurnId) -> str:
    return f"no finished turn {turn_id!r} is stored; only a finished turn of this store is retracted"


def turn_not_erasable(turn_id: TurnId) -> str:
    return (
        f"turn {turn_id!r} is not a finished turn of this store that was not erased yet; "
        "a finished turn is erased once, keeping all but its text"
    )


def quoted_error_running(turn_id: str) -> str:
    return f"cannot erase the error of turn {turn_id!r}: it is still running; erase it once it finished"


def edge_ends(edge: LineageEdge) -> str:
    return (
        f"the edge {edge.from_session_id!r} -> {edge.to_session_id!r} names a session the store does not hold; "
        "an edge joins two stored sessions"
    )


def invocation_taken(invocation_id: str) -> str:
    return f"invocation {invocation_id!r} is already stored; an invocation begins once"


def invocation_not_started(invocation_id: str) -> str:
    return f"invocation {invocation_id!r} is not a started invocation of this store; it finishes once"


def action_taken(action_id: str) -> str:
    return f"action {action_id!r} is already stored; action records never change"


# -- checks made on the record alone, before any write ---------------------------------------


def check_begin_turn(record: TurnRecord, refuse: Refuse = _plain) -> None:
    """A turn begins ``running``, without a finish time."""
    if record.status != "running" or record.finished_at is not None:
        state = record.status if record.finished_at is None else f"{record.status}, finished"
        raise refuse(f"cannot begin {_turn_at(record)} as {state!r}: a turn begins running, unfinished")


def check_finish_turn(record: TurnRecord, refuse: Refuse = _plain) -> None:
    """A turn finishes ``completed`` or ``failed``, with its finish time."""
    if record.status == "running":
        raise refuse(f"cannot finish turn {record.id!r} as running; finish it completed or failed")
    if record.finished_at is None:
        raise refuse(f"cannot finish turn {record.id!r} without finished_at; pass its finished record")


def check_erase_turn(record: TurnRecord, refuse: Refuse = _plain) -> None:
    """An erased turn's record says when it was erased."""
    if record.erased_at is None:
        raise refuse(f"cannot erase turn {record.id!r} without erased_at; pass its erased record")


def check_finish_invocation(record: Invocation, refuse: Refuse = _plain) -> None:
    """An invocation finishes with its finish time."""
    if record.finished_at is None:
        raise refuse(f"cannot finish invocation {record.id!r} without finished_at; pass its finished record")


def check_actions(action_ids: Sequence[str], refuse: Refuse = _plain) -> None:
    """A batch of proposed actions names each id once."""
    seen: set[str] = set()
    for action_id in action_ids:
        if action_id in seen:
            raise refuse(action_taken(action_id))
        seen.add(action_id)


# -- checks made with the rows a store holds (MemoryStore; the SQL stores ask their database) --


def check_turn_begins_at(
    record: TurnRecord, *, session_stored: bool, taken: bool, refuse: Refuse = _plain
) -> None:
    """A turn begins in a stored session, under a new id, at a free ordinal (after `check_begin_turn`)."""
    if not session_stored:
        raise refuse(f"cannot begin {_turn_at(record)}: " + no_session(record.session_id, "a turn begins in a stored session"))
    if taken:
        raise refuse(turn_taken(record))


def check_turn_finishes(old: TurnRecord | None, record: TurnRecord, refuse: Refuse = _plain) -> None:
    """Only a running turn finishes, once, where it began (after `check_finish_turn`)."""
    if old is None or old.status != "running" or old.ordinal != record.ordinal or old.session_id != record.session_id:
        raise refuse(turn_not_running(record.id))


def check_ends(edge: LineageEdge, stored: Iterable[SessionId], refuse: Refuse = _plain) -> None:
    """An edge joins two stored sessions (``stored``: those of its ends the store holds)."""
    if {edge.from_session_id, edge.to_session_id} - set(stored):
        raise refuse(edge_ends(edge))

"""The one erasure walk's map: every place a store keeps text, and what erasing it writes.

``forget`` and ``sessions.delete`` compute an `Erasure` (lineage/_provenance.py: which
turns, which sessions) and hand it to ``Store.erase``, which carries it out over every
place in `PLACES` in one transaction. A place is a table (a record type) with the fields
that hold text from outside the host (what a user typed, what a model or a mod wrote), the
keys that say which of its rows an erasure reaches, and what each field becomes.

Every table a store keeps is either a place or listed in `KEPT` with the reason it holds no
such text, and every field of a place's record (every column of its table) is either
erased or declared kept; tests/host/stores/test_erasure.py reads every table and column from each
store's schema, and every record's fields, and fails on one nobody decided about, so a new
table or field cannot be forgotten. Registering one is a line here.

The rules live here once. What varies between stores is only how a row is written:
`MemoryStore` applies `erase_record` to its records, the SQL stores run `statements`.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from datetime import datetime
from typing import Final, Literal, TypeAlias, TypeVar

import attrs

from modular_sdk import MemoryRecord, RecordId, SessionId, TurnId
from modular_sdk._frozen import FrozenJsonObject, freeze_object

from ._memory_records import ERASED_TEXT
from ._records import ERASED_LABEL, Invocation, JobRecord, LineageEdge, SessionNode, TurnRecord
from ._trace_records import ActionOutcomeRecord, ApprovalRuleRecord, ProposedActionRecord, TraceOutputRecord

__all__ = ["ERASED_BY_STORE", "ERASED_LABEL", "KEPT", "PLACES", "STORE_COLUMNS", "Erasure", "Key", "Place", "erase_record", "erase_rows", "statements"]

_EMPTY: Final[FrozenJsonObject] = freeze_object({}, type_name="an erased payload")

ERASED_TOOL_CALLS: Final = "each call's input {}, output None, error ERASED_LABEL"
"""What a forgotten turn's ``tool_calls`` become (`_records.erased_call`), for a reader of `PLACES`."""

ERASED_WIDGETS: Final = "each placement's data {}"
"""What a forgotten turn's ``widgets`` become (`_records.erased_widget`), for a reader of `PLACES`."""

Key: TypeAlias = Literal["record", "turn", "position", "command", "session", "memory"]
"""Which rows of a place an `Erasure` reaches.

``record``: the erasure carries the rows themselves (`Erasure.turns`, `Erasure.edges`);
``turn``: rows whose ``turn_id`` is a planned turn's; ``position``: rows whose
``(session_id, position)`` is a planned turn's (commands typed where that turn was asked);
``command``: command jobs whose ``(session_id, text)`` is what such a command was typed as;
``session``: rows whose ``session_id`` is a deleted session's; ``memory``: memory records
whose ``id`` the plan lists (`Erasure.records`: those resting on a planned turn or record).
"""


@attrs.frozen(kw_only=True)
class Erasure:
    """What one ``forget`` or session deletion erases, by key. Immutable.

    ``turns`` are the erased records of planned turns not erased before (text gone,
    ``erased_at`` = ``at``) and ``edges`` the rewritten edges citing them; ``turn_ids`` every
    planned turn; ``positions`` their ``(session, ordinal)``; ``commands`` the
    ``(session, typed text)`` of the commands typed at those positions; ``sessions`` the
    deleted sessions, every row of which loses its text; ``errors`` the ``(table, id)`` of
    rows that keep their own text but lose their error, which quotes erased text (a later
    failed turn whose model saw a planned turn, a turn, invocation or job of a reached
    session whose error holds a planned turn's text): the fields a place lists as
    ``quoted``. ``records``: the memory records the plan lists (docs/memory.md).
    """

    at: datetime
    turns: tuple[TurnRecord, ...] = ()
    edges: tuple[LineageEdge, ...] = ()
    turn_ids: frozenset[TurnId] = frozenset()
    positions: frozenset[tuple[SessionId, int]] = frozenset()
    commands: frozenset[tuple[SessionId, str]] = frozenset()
    sessions: frozenset[SessionId] = frozenset()
    errors: frozenset[tuple[str, str]] = frozenset()
    records: frozenset[RecordId] = frozenset()


@attrs.frozen(kw_only=True)
class Place:
    """A table that keeps text, and how an erasure reaches it. Immutable.

    ``erased``: each text field and what it becomes (a field that is ``None`` stays
    ``None``); ``rows``: the keys that select its rows; ``stamp``: the field set to the
    erasure's time (a row stamped before is left as it is); ``kept``: every other field,
    none of which holds text from outside the host (ids, times, statuses, structure). A
    record field that is in none of these is a field nobody decided about: a test fails.
    ``quoted``: the erased fields a row named in `Erasure.errors` (by its ``id``) loses,
    becoming what ``erased`` says, unstamped (its error, and what repeats it).
    """

    table: str
    record: type
    erased: tuple[tuple[str, object], ...]
    rows: tuple[Key, ...]
    stamp: str | None = None
    kept: tuple[str, ...] = ()
    quoted: tuple[str, ...] = ()


PLACES: Final[tuple[Place, ...]] = (
    # A turn's prompt (or notification title and body), its reply, its error (a model's
    # error may quote the prompt) and its tool calls' inputs, outputs and errors
    # (docs/the-record.md; their ids, tool names and times stay), and why it was retracted (that it
    # was, and when, stays; so does its token usage, counts and no text, docs/observability.md),
    # and the data of the widgets its reply placed (their widget ids and indexes stay).
    # Written as erased records (stores/_records.erased and erased_call).
    Place(
        table="turns",
        record=TurnRecord,
        erased=(
            ("message", None),
            ("reply", None),
            ("error", ERASED_LABEL),
            ("tool_calls", ERASED_TOOL_CALLS),
            ("retraction_reason", ERASED_LABEL),
            ("widgets", ERASED_WIDGETS),
        ),
        rows=("record",),
        stamp="erased_at",
        kept=(
            "id", "session_id", "ordinal", "message_id", "author", "runner_id", "status", "started_at", "finished_at",
            "retracted_at", "usage",
        ),  # fmt: skip
        quoted=("error",),  # a later failed turn's model error quoting its history
    ),
    # The label of an artifact citing a planned turn (a fork's anchor), and of every edge an
    # integrator gave a deleted session (add_edge).
    Place(
        table="edges",
        record=LineageEdge,
        erased=(("artifact", None),),  # its label (type and source id are ids)
        rows=("record",),
        kept=("from_session_id", "to_session_id", "relation", "created_at"),
    ),
    # A command typed where a planned turn was asked (its argument is often that prompt).
    Place(
        table="invocations",
        record=Invocation,
        erased=(("argument", None), ("text", ""), ("error", "")),
        rows=("position", "session"),
        stamp="erased_at",
        kept=("id", "session_id", "mod_id", "command_id", "author", "started_at", "finished_at", "error_kind", "position"),
        quoted=("text", "error"),  # a failed command's text is its error
    ),
    # A job's submitted text and what it gave (the reply, or an error quoting it).
    Place(
        table="jobs",
        record=JobRecord,
        erased=(("text", ""), ("result", ""), ("error", ERASED_LABEL)),
        rows=("turn", "command", "session"),
        kept=("id", "session_id", "status", "created_at", "finished_at", "kind", "error_kind", "turn_id"),
        quoted=("result", "error"),  # a failed job's result is its error
    ),
    # An action a planned turn's reply proposed: its payload (pending or decided).
    Place(
        table="actions",
        record=ProposedActionRecord,
        erased=(("payload", _EMPTY),),
        rows=("turn", "session"),
        stamp="erased_at",
        kept=("id", "type", "mod_id", "session_id", "turn_id", "created_at"),
    ),
    # Why the user confirmed or dismissed such an action (docs/the-record.md); who decided is
    # the integrator's name for a user (as tags are), kept for the audit.
    Place(
        table="action_outcomes",
        record=ActionOutcomeRecord,
        erased=(("reason", ERASED_LABEL),),
        rows=("turn", "session"),
        kept=("action_id", "state", "decided_at", "decided_by", "session_id", "turn_id"),
    ),
    # What a tool reported as an output during a planned turn, what a command typed where a
    # planned turn was asked reported, and every output of a deleted session (its kind is
    # the mod's label for it).
    Place(
        table="trace_outputs",
        record=TraceOutputRecord,
        erased=(("kind", ERASED_LABEL),),
        rows=("turn", "position", "session"),
        kept=("output_id", "trace_id", "session_id", "created_at", "turn_id", "position"),  # an output id is how commits find it
    ),
    # Why a user allowed a kind of action for good in a deleted session (docs/protocols.md);
    # who allowed it, the match and when (ids, the integrator's tags, times) stay for the audit.
    Place(
        table="approval_rules",
        record=ApprovalRuleRecord,
        erased=(("reason", ERASED_LABEL),),
        rows=("session",),
        kept=("id", "action_type", "tool", "session_id", "tags", "created_by", "created_at", "revoked_at", "revoked_by"),
    ),
    # What memory made of a conversation (docs/memory.md): a record's text and data, when
    # the plan lists it (it rests on a planned turn or record) or its session is deleted; its
    # kind, ids, what it rests on, who made it and its times stay (lineage stays walkable).
    Place(
        table="memory_records",
        record=MemoryRecord,
        erased=(("text", ERASED_TEXT), ("data", None), ("retraction_reason", ERASED_LABEL)),
        rows=("memory", "session"),
        stamp="erased_at",
        kept=("id", "session_id", "kind", "read_from", "cites", "derived_from", "made_by", "created_at", "retracted_at"),
    ),
    # The summary a deleted (agent) session completed with.
    Place(
        table="nodes",
        record=SessionNode,
        erased=(("summary", ERASED_LABEL),),
        rows=("session",),
        kept=("session_id", "created_at", "agent_id", "completed_at", "metrics"),
    ),
)
"""Every place a store keeps text an erasure removes (see the module docstring)."""

STORE_COLUMNS: Final[Mapping[str, str]] = {
    "seq": "writing order (PostgreSQL)",
    "owner": "the host running a turn (PostgreSQL)",
    "cancel_requested_at": "when a host asked for a job to be cancelled",
    "artifact_type": "an edge's artifact type, copied for its index (PostgreSQL)",
    "artifact_source_id": "an edge's artifact source id, copied for its index (PostgreSQL)",
    "search": "a memory record's text as a tsvector (PostgreSQL), generated from it: recomputed when the text is erased",
}
"""Columns a store adds to a place's table beyond its record's fields, none holding text."""

KEPT: Final[Mapping[str, str]] = {
    "meta": "the store's own settings (application, versions)",
    "sessions": "ids, lineage, times, model and the integrator's tags and label, fixed at creation: what keeps lineage walkable",
    "session_tags": "derived from sessions.tags",
    "job_tags": "derived from sessions.tags (a job's session's)",
    "deletions": "session ids and times",
    "reads": "turn ids and times",
    "traces": "trace ids, origins and times",
    "trace_tasks": "the task a trace is about (a snapshot of the tracker's task), shared by every session of the trace",
    "trace_links": "session and trace ids",
    "trace_commits": "output ids and commit hashes",
    "trace_index": "derived from the trace records' ids",
    "spool_applied": "spool event ids and times",
    "listeners": "the owner keys of the hosts that listen for event rows, and since when (PostgreSQL)",
    "memory_by_turn": "derived from memory_records: turn and record ids",
    "memory_by_record": "derived from memory_records: record ids",
}
"""Every other table a store keeps, and why it holds no text an erasure must remove."""

ERASED_BY_STORE: Final[Mapping[str, str]] = {
    "events": "the event log (PostgreSQL, docs/embedding.md): an event row is JSON of any kind, so the "
    "store erases the rows of erased turns, of erased commands and of deleted sessions in the "
    "erasure's own transaction (stores/_postgres.py, _ERASE_EVENTS), and a row written after an "
    "erasure erases itself in its own; so do the errors of turns and commands that quoted erased "
    "text (_ERASE_QUOTED_TURN_EVENTS, _ERASE_NEW_QUOTED_EVENTS)",
    **{
        name: "SQLite's full-text index of memory_records.text (FTS5, external content): triggers take an "
        "erased text out of it, and the erasure's transaction then merges the index ('optimize'), so no "
        "segment keeps a deleted term (stores/_sql_memory.py)"
        for name in ("memory_fts", "memory_fts_data", "memory_fts_idx", "memory_fts_docsize", "memory_fts_config")
    },
}
"""Tables a store erases itself, in the erasure's transaction, and how."""


def _hits(place: Place, record: object, erasure: Erasure) -> bool:
    def field(name: str) -> object:
        return getattr(record, name, None)

    for key in place.rows:
        if key == "turn" and field("turn_id") in erasure.turn_ids:
            return True
        if key == "position" and (field("session_id"), field("position")) in erasure.positions:
            return True
        if key == "command" and field("kind") == "command" and (field("session_id"), field("text")) in erasure.commands:
            return True
        if key == "session" and field("session_id") in erasure.sessions:
            return True
        if key == "memory" and field("id") in erasure.records:
            return True
    return False


_R = TypeVar("_R")


def erase_record(place: Place, record: _R, erasure: Erasure) -> _R | None:
    """``record`` (a row of ``place``) as the erasure leaves it, or ``None`` when it does not reach it."""
    if "record" in place.rows or not _hits(place, record, erasure):
        return _unquoted(place, record, erasure)
    if place.stamp is not None and getattr(record, place.stamp) is not None:
        return None
    changes: dict[str, object] = {name: value for name, value in place.erased if getattr(record, name) is not None}
    if place.stamp is not None:
        changes[place.stamp] = erasure.at
    if not changes:
        return None
    new: _R = attrs.evolve(record, **changes)  # type: ignore[misc]  # every place's record is an attrs class
    return new


def _unquoted(place: Place, record: _R, erasure: Erasure) -> _R | None:
    """``record`` without its ``quoted`` fields when the erasure names it in ``errors``, else ``None``."""
    if not place.quoted or (place.table, getattr(record, "id", None)) not in erasure.errors:
        return None
    changes = {
        name: value
        for name, value in place.erased
        if name in place.quoted and getattr(record, name) is not None and getattr(record, name) != value
    }
    if not changes:
        return None
    new: _R = attrs.evolve(record, **changes)  # type: ignore[misc]  # every place's record is an attrs class
    return new


def statements(
    erasure: Erasure,
    *,
    tables: Iterable[str],
    mark: str,
    prefix: str = "",
    encode: Callable[[str, str, object], object],
) -> list[tuple[str, tuple[object, ...]]]:
    """The SQL that carries out ``erasure`` over every keyed place among ``tables`` (the tables the store has).

    ``UPDATE``s whose rows are chosen by key lists of at most `_CHUNK` keys each, so a plan
    of n turns costs about n/`_CHUNK` statements per place. ``mark`` is the driver's
    parameter mark (``?``, ``%s``), ``prefix`` the schema (``host_sim.``), ``encode(table,
    field, value)`` the stored form of an erased value.
    """
    present = set(tables)
    out: list[tuple[str, tuple[object, ...]]] = []
    stamp_value = erasure.at.isoformat()
    for place in PLACES:
        if "record" in place.rows or place.table not in present:
            continue
        sets: list[str] = []
        params: list[object] = []
        for name, value in place.erased:
            sets.append(f"{name} = CASE WHEN {name} IS NULL THEN NULL ELSE {mark} END")
            params.append(encode(place.table, name, value))
        unstamped = ""
        if place.stamp is not None:
            sets.append(f"{place.stamp} = {mark}")
            params.append(stamp_value)
            unstamped = f" AND {place.stamp} IS NULL"
        head = f"UPDATE {prefix}{place.table} SET {', '.join(sets)} WHERE "
        for where, values in _selections(place, erasure, mark):
            out.append((head + where + unstamped, (*params, *values)))
    for place in PLACES:  # rows that keep their text but lose an error quoting erased text
        ids = sorted(i for table, i in erasure.errors if table == place.table)
        if not place.quoted or place.table not in present or not ids:
            continue
        quoted = [(name, value) for name, value in place.erased if name in place.quoted]
        sets = [f"{name} = CASE WHEN {name} IS NULL THEN NULL ELSE {mark} END" for name, _ in quoted]
        params = [encode(place.table, name, value) for name, value in quoted]
        head = f"UPDATE {prefix}{place.table} SET {', '.join(sets)} WHERE id IN "
        for start in range(0, len(ids), _CHUNK):
            chunk = ids[start : start + _CHUNK]
            out.append((head + "(" + ", ".join(mark for _ in chunk) + ")", (*params, *chunk)))
    return out


_CHUNK: Final = 200


def _selections(place: Place, erasure: Erasure, mark: str) -> list[tuple[str, tuple[object, ...]]]:
    """``WHERE`` clauses (and their parameters) that select the rows of ``place`` the erasure reaches."""
    keyed: list[tuple[str, str, list[tuple[object, ...]]]] = []  # (columns, extra condition, key tuples)
    for key in place.rows:
        if key == "turn":
            keyed.append(("turn_id", "", [(t,) for t in sorted(erasure.turn_ids)]))
        elif key == "session":
            keyed.append(("session_id", "", [(s,) for s in sorted(erasure.sessions)]))
        elif key == "memory":
            keyed.append(("id", "", [(r,) for r in sorted(erasure.records)]))
        elif key == "position":
            keyed.append(("session_id, position", "", sorted(erasure.positions)))
        elif key == "command":
            keyed.append(("session_id, text", "kind = 'command' AND ", sorted(erasure.commands)))
    out: list[tuple[str, tuple[object, ...]]] = []
    for columns, condition, keys in keyed:
        width = columns.count(",") + 1
        row = "(" + ", ".join(mark for _ in range(width)) + ")"
        for start in range(0, len(keys), _CHUNK):
            chunk = keys[start : start + _CHUNK]
            listed = ", ".join(row for _ in chunk)
            where = f"{columns} IN ({listed})" if width == 1 else f"({columns}) IN (VALUES {listed})"
            out.append((condition + where, tuple(v for key in chunk for v in key)))
    return out


_K = TypeVar("_K")


def erase_rows(table: dict[_K, _R], place: Place, erasure: Erasure) -> None:
    """Apply ``erasure`` to the rows of ``place`` an in-memory ``table`` holds (`MemoryStore`, a log kept in memory)."""
    for key, record in list(table.items()):
        new = erase_record(place, record, erasure)
        if new is not None:
            table[key] = new

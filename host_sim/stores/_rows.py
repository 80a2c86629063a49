"""What every store checks before it writes, and the tables both SQL stores write: one definition of each.

A store refuses a write that would break a record's rules (a turn begins once, running; a
turn finishes once; an invocation finishes with its finish time; an edge joins two stored
sessions ...). The rules live here, once, above the backends, so no store can lack a guard
another has: `MemoryStore` calls the checks with the rows it holds, and the SQL stores call
the checks that need only the record before they write, and give the statements that find
the current rows (a ``WHERE`` that matches no row, a constraint) the refusal made here.
What varies between databases is SQL, connections and transactions; nothing else.

The tables (`Table`: name, key, columns, which hold JSON) are declared here too, with the
conversion of a record to its row and back (`Table.row`, `record_of`) and the columns each
write touches (`TURN_FINISHED`, `TURN_ERASED` ...), so that a column cannot exist in one SQL
store and be forgotten in the other: each store's SQL is built from these.

Every refusal is a `StoreError`. ``refuse`` turns the rule's text into that error: a SQL
store passes one that names its file or DSN; the default raises it as it is.
"""

from __future__ import annotations

import functools
import json
from collections.abc import Callable, Iterable, Sequence
from datetime import datetime
from typing import Final, TypeAlias, TypeVar

import attrs

from modular_sdk import (
    AiMessage,
    AiNotificationMessage,
    AiPromptMessage,
    AiRunnerId,
    Author,
    MemoryRecord,
    SerializationError,
    SessionId,
    ToolCallRecord,
    TurnId,
    Usage,
    WidgetPlacement,
)
from modular_sdk._json import structure, unstructure

from ._errors import StoreError
from ._records import Invocation, JobRecord, LineageEdge, SessionNode, SessionRecord, TurnRecord
from ._trace_records import (
    ActionOutcomeRecord,
    ProposedActionRecord,
    TraceCommitRecord,
    TraceIndexEntry,
    TraceLinkRecord,
    TraceOutputRecord,
    TraceRecord,
    TraceTaskRecord,
)

__all__ = [
    "ACTIONS",
    "ACTION_OUTCOMES",
    "EDGES",
    "INVOCATIONS",
    "INVOCATION_FINISHED",
    "JOBS",
    "LINEAGE_TABLES",
    "LOG_TABLES",
    "NODES",
    "SESSIONS",
    "TRACES",
    "TRACE_COMMITS",
    "TRACE_INDEX",
    "TRACE_LINKS",
    "TRACE_OUTPUTS",
    "TRACE_TABLES",
    "TRACE_TASKS",
    "TURNS",
    "TURN_ERASED",
    "TURN_FINISHED",
    "TURN_KEY",
    "Need",
    "Refuse",
    "Table",
    "action_decided",
    "action_stored",
    "action_taken",
    "check_actions",
    "check_begin_turn",
    "check_ends",
    "check_erase_turn",
    "check_finish_invocation",
    "check_finish_turn",
    "check_turn_begins_at",
    "check_turn_finishes",
    "decode",
    "finished_turn_stored",
    "edge_ends",
    "ends_stored",
    "erased_value",
    "invocation_not_started",
    "invocation_taken",
    "no_action",
    "no_finished_turn",
    "no_output",
    "no_running_turn",
    "no_session",
    "no_trace",
    "no_turn",
    "output_stored",
    "quoted_error_running",
    "record_of",
    "session_of_turn",
    "session_stored",
    "session_taken",
    "time_of",
    "turn_of",
    "turn_not_erasable",
    "trace_stored",
    "turn_not_running",
    "turn_stored",
    "turn_taken",
]

_R = TypeVar("_R")

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


def job_taken(job_id: str) -> str:
    return f"job {job_id!r} is already stored; a job starts once (a start with its request_id returns it)"


def invocation_not_started(invocation_id: str) -> str:
    return f"invocation {invocation_id!r} is not a started invocation of this store; it finishes once"


def no_trace(trace_id: str, rule: str) -> str:
    return f"no trace {trace_id!r} is stored; {rule}"


def no_output(output_id: str) -> str:
    return f"no output {output_id!r} is stored; a commit lands a stored output"


def no_action(action_id: str) -> str:
    return f"no action {action_id!r} is stored; only a proposed action is decided"


def action_decided(action_id: str) -> str:
    return f"action {action_id!r} was decided before; it is decided once"


def action_taken(action_id: str) -> str:
    return f"action {action_id!r} is already stored; action records never change"


# -- checks a SQL store makes in the write's transaction (each renders them in its dialect) ---


@attrs.frozen
class Need:
    """A row a write needs, checked in its own transaction before it writes. Immutable.

    A row of ``table`` whose ``column`` is ``value`` (and that meets ``condition``, SQL both
    databases read alike) must be stored, or with ``absent`` must not be; else the write is
    refused with ``refusal``. `SqliteStore` and `PostgresStore` render it (``_sqlite_commit.check``,
    ``_postgres_sql.check``); `MemoryStore` asks its dicts the same question.
    """

    table: str
    column: str
    value: object
    refusal: str
    condition: str = ""
    absent: bool = False


def session_stored(session_id: SessionId, rule: str) -> Need:
    return Need(table="sessions", column="id", value=session_id, refusal=no_session(session_id, rule))


def session_of_turn(record: TurnRecord) -> Need:
    """A turn begins in a stored session."""
    refusal = f"cannot begin {_turn_at(record)}: " + no_session(record.session_id, "a turn begins in a stored session")
    return Need(table="sessions", column="id", value=record.session_id, refusal=refusal)


def turn_stored(turn_id: TurnId, rule: str) -> Need:
    return Need(table="turns", column="id", value=turn_id, refusal=no_turn(turn_id, rule))


def finished_turn_stored(turn_id: TurnId) -> Need:
    """Only a finished turn of the store is retracted."""
    return Need(
        table="turns", column="id", value=turn_id, refusal=no_finished_turn(turn_id), condition="status <> 'running'"
    )


def no_running_turn(turn_id: str) -> Need:
    """The error of a running turn is not erased."""
    return Need(
        table="turns",
        column="id",
        value=turn_id,
        refusal=quoted_error_running(turn_id),
        condition="status = 'running'",
        absent=True,
    )


def ends_stored(edge: LineageEdge) -> tuple[Need, Need]:
    """An edge joins two stored sessions."""
    refusal = edge_ends(edge)
    return (
        Need(table="sessions", column="id", value=edge.from_session_id, refusal=refusal),
        Need(table="sessions", column="id", value=edge.to_session_id, refusal=refusal),
    )


def trace_stored(trace_id: str, rule: str) -> Need:
    return Need(table="traces", column="id", value=trace_id, refusal=no_trace(trace_id, rule))


def output_stored(output_id: str) -> Need:
    return Need(table="trace_outputs", column="output_id", value=output_id, refusal=no_output(output_id))


def action_stored(action_id: str) -> Need:
    return Need(table="actions", column="id", value=action_id, refusal=no_action(action_id))


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


# -- the tables of the SQL stores ----------------------------------------------------------


@attrs.frozen
class Table:
    """How one record type maps to a table of every SQL store: its columns are the record's attrs fields,
    in their order; ``json_columns`` hold the one converter's JSON as text, the rest their value."""

    name: str
    record: type
    key: tuple[str, ...]
    json_columns: frozenset[str]
    columns: tuple[str, ...] = attrs.field(init=False)

    def __attrs_post_init__(self) -> None:
        object.__setattr__(self, "columns", tuple(f.alias for f in attrs.fields(self.record)))  # SessionRecord's _runner_id: runner_id

    def row(self, record: object) -> tuple[object, ...]:
        """The row of ``record``; raises `StoreError` naming the column it cannot store."""
        try:
            data = unstructure(record)
            row = tuple(
                json.dumps(data[c], ensure_ascii=False, separators=(",", ":"))
                if c in self.json_columns and data[c] is not None
                else data[c]
                for c in self.columns
            )
        except (SerializationError, ValueError, TypeError, RecursionError) as exc:
            raise StoreError(f"cannot store this {self.name} row ({self._key_of(record)}): {exc}") from None
        for column, value in zip(self.columns, row, strict=True):
            if isinstance(value, str):
                try:
                    value.encode("utf-8")
                except UnicodeEncodeError as exc:
                    raise StoreError(
                        f"cannot store {self.name}.{column} of {self._key_of(record)}: it holds text "
                        f"that is not valid Unicode ({exc.reason} at position {exc.start}); refuse such "
                        "text where it enters (a lone surrogate cannot be written to a file)"
                    ) from None
        return row

    def pick(self, row: Sequence[object], columns: Sequence[str]) -> tuple[object, ...]:
        """The values of ``columns`` in ``row`` (a row of this table), in that order."""
        return tuple(row[self.columns.index(c)] for c in columns)

    def _key_of(self, record: object) -> str:
        return ", ".join(f"{k}={getattr(record, k, '?')!r}" for k in self.key)

    def read(self, row: Sequence[object]) -> object:
        """The record of ``row`` (the table's columns in order); raises what the converter raises."""
        data = {
            c: json.loads(v) if c in self.json_columns and isinstance(v, str) else v
            for c, v in zip(self.columns, row, strict=True)
            if not (v is None and c in _NULL_IS_DEFAULT)  # a column added later: NULL in older rows
        }
        return structure(data, self.record)


@functools.lru_cache(maxsize=256)
def _author(text: str) -> Author:
    """An author column (few distinct values: the user, each mod's commands and tools)."""
    value: Author = structure(json.loads(text), Author)
    return value


def time_of(value: object) -> datetime | None:
    """A time column: ISO 8601 text with its offset; `SerializationError` naming it otherwise."""
    if value is None:
        return None
    try:
        parsed = datetime.fromisoformat(value) if isinstance(value, str) else None
    except ValueError:
        parsed = None
    if parsed is None or parsed.utcoffset() is None:
        raise SerializationError(
            f"a time column must be ISO 8601 text with its offset, got {value!r}", value=value, type_name="datetime"
        )
    return parsed


def turn_of(row: Sequence[object]) -> TurnRecord | None:
    """A turn row read without the generic converter (the common, well-formed case); ``None``
    sends the row to the converter, which names whatever is wrong with it."""
    try:
        (id_, session_id, ordinal, message, message_id, author, runner_id, status, reply, error,
         started_at, finished_at, erased_at, tool_calls, retracted_at, retraction_reason, usage, widgets) = row  # fmt: skip  # TURNS.columns, checked below
        if not (
            isinstance(id_, str) and isinstance(session_id, str) and type(ordinal) is int and ordinal >= 0
            and isinstance(message, str) and isinstance(message_id, str) and isinstance(author, str)
            and isinstance(runner_id, str) and status in ("running", "completed", "failed")
            and (reply is None or isinstance(reply, str)) and (error is None or isinstance(error, str))
            and (retraction_reason is None or isinstance(retraction_reason, str))
        ):  # fmt: skip
            return None
        data = json.loads(message)
        kind = data.get("type") if isinstance(data, dict) else None
        if kind == "prompt" and data.keys() == {"type", "text"}:
            parsed: AiMessage = AiPromptMessage(text=data["text"])
        elif kind == "notification" and data.keys() == {"type", "title", "body"}:
            parsed = AiNotificationMessage(title=data["title"], body=data["body"])
        else:
            return None
        started = time_of(started_at)
        assert started is not None
        return TurnRecord(
            id=TurnId(id_),
            session_id=SessionId(session_id),
            ordinal=ordinal,
            message=parsed,
            message_id=message_id,
            author=_author(author),
            runner_id=AiRunnerId(runner_id),
            status=status,
            reply=reply,
            error=error,
            started_at=started,
            finished_at=time_of(finished_at),
            erased_at=time_of(erased_at),
            tool_calls=() if tool_calls is None else _tool_calls(tool_calls),
            retracted_at=time_of(retracted_at),
            retraction_reason=retraction_reason,
            usage=None if usage is None else _usage(usage),
            widgets=() if widgets is None else _widgets(widgets),
        )
    except (ValueError, TypeError, KeyError, AssertionError, SerializationError, RecursionError):
        return None


def _tool_calls(text: object) -> tuple[ToolCallRecord, ...]:
    """A turn's ``tool_calls`` column (JSON written by the one converter)."""
    if not isinstance(text, str):
        raise SerializationError(f"tool_calls must be JSON text, got {text!r}", value=text, type_name="tool_calls")
    value: tuple[ToolCallRecord, ...] = structure(json.loads(text), tuple[ToolCallRecord, ...])
    return value


def _usage(text: object) -> Usage:
    """A turn's ``usage`` column (JSON written by the one converter)."""
    if not isinstance(text, str):
        raise SerializationError(f"usage must be JSON text, got {text!r}", value=text, type_name="usage")
    value: Usage = structure(json.loads(text), Usage)
    return value


def _widgets(text: object) -> tuple[WidgetPlacement, ...]:
    """A turn's ``widgets`` column (JSON written by the one converter)."""
    if not isinstance(text, str):
        raise SerializationError(f"widgets must be JSON text, got {text!r}", value=text, type_name="widgets")
    value: tuple[WidgetPlacement, ...] = structure(json.loads(text), tuple[WidgetPlacement, ...])
    return value


_NULL_IS_DEFAULT: Final = frozenset({"tags", "tool_calls", "widgets"})  # columns added later: NULL in older rows

SESSIONS: Final = Table("sessions", SessionRecord, ("id",), frozenset({"lineage", "metadata", "tags"}))
INVOCATIONS: Final = Table("invocations", Invocation, ("id",), frozenset({"author"}))
JOBS: Final = Table("jobs", JobRecord, ("id",), frozenset())
TURNS: Final = Table("turns", TurnRecord, ("id",), frozenset({"message", "author", "tool_calls", "usage", "widgets"}))
NODES: Final = Table("nodes", SessionNode, ("session_id",), frozenset({"metrics"}))
EDGES: Final = Table("edges", LineageEdge, ("from_session_id", "to_session_id"), frozenset({"artifact"}))
LINEAGE_TABLES: Final = (SESSIONS, TURNS, NODES, EDGES)
TRACES: Final = Table("traces", TraceRecord, ("id",), frozenset())
TRACE_TASKS: Final = Table("trace_tasks", TraceTaskRecord, ("trace_id",), frozenset({"snapshot"}))
TRACE_LINKS: Final = Table("trace_links", TraceLinkRecord, ("session_id",), frozenset())
TRACE_OUTPUTS: Final = Table("trace_outputs", TraceOutputRecord, ("output_id",), frozenset())
TRACE_COMMITS: Final = Table("trace_commits", TraceCommitRecord, ("output_id",), frozenset())
TRACE_INDEX: Final = Table("trace_index", TraceIndexEntry, ("key", "kind", "trace_id"), frozenset())
ACTIONS: Final = Table("actions", ProposedActionRecord, ("id",), frozenset({"payload"}))
ACTION_OUTCOMES: Final = Table("action_outcomes", ActionOutcomeRecord, ("action_id",), frozenset())
TRACE_TABLES: Final = (TRACES, TRACE_TASKS, TRACE_LINKS, TRACE_OUTPUTS, TRACE_COMMITS, TRACE_INDEX, ACTIONS, ACTION_OUTCOMES)
MEMORY_RECORDS: Final = Table(
    "memory_records", MemoryRecord, ("id",), frozenset({"data", "read_from", "cites", "derived_from", "made_by"})
)
LOG_TABLES: Final = (INVOCATIONS, JOBS)  # version 3: absent from a store a reader finds older
assert TURNS.columns == (
    "id", "session_id", "ordinal", "message", "message_id", "author", "runner_id", "status",
    "reply", "error", "started_at", "finished_at", "erased_at", "tool_calls", "retracted_at", "retraction_reason",
    "usage", "widgets",
), "turn_of reads the turns columns in this order"  # fmt: skip


TURN_KEY: Final = ("id", "session_id", "ordinal")
"""The columns that find a turn's row when it finishes or is erased (it must not have moved)."""
TURN_FINISHED: Final = ("status", "reply", "error", "finished_at", "tool_calls", "usage", "widgets")
"""The turns columns finishing a turn writes (every other one was written when it began)."""
TURN_ERASED: Final = ("message", "reply", "error", "erased_at", "tool_calls", "widgets")
"""The turns columns forgetting a turn writes (and its retraction reason, when it has one)."""
INVOCATION_FINISHED: Final = ("finished_at", "text", "error", "error_kind")
"""The invocations columns finishing an invocation writes."""
assert {*TURN_KEY, *TURN_FINISHED} <= set(TURNS.columns) and set(TURN_ERASED) <= set(TURNS.columns)
assert set(INVOCATION_FINISHED) <= set(INVOCATIONS.columns)


def decode(table: Table, record: type[_R], row: Sequence[object], remedy: Callable[[str], StoreError]) -> _R:
    """The record of ``row``, a row of ``table`` holding ``record``s; a row it cannot read is
    ``remedy(problem)`` (the store's error, naming the row by its key and what is wrong)."""
    try:
        value = record_of(table, row)
    except (SerializationError, ValueError, TypeError, RecursionError) as exc:
        key = ", ".join(repr(row[table.columns.index(k)]) for k in table.key)
        problem = "JSON nested too deeply" if isinstance(exc, RecursionError) else str(exc)
        raise remedy(f"holds an unreadable {table.name} row ({key}): {problem}") from None
    assert isinstance(value, record)
    return value


def record_of(table: Table, row: Sequence[object]) -> object:
    """The record of a row of ``table`` (a turn the fast way when it is well-formed, `turn_of`);
    raises what the converter raises for a row it cannot read."""
    if table is TURNS:
        fast = turn_of(row)
        if fast is not None:
            return fast
    return table.read(row)


def erased_value(table: str, field: str, value: object) -> object:
    """How an erased value is stored: text as it is, a JSON value (a payload) as JSON text."""
    if value is None or isinstance(value, str):
        return value
    return json.dumps(unstructure(value), ensure_ascii=False, separators=(",", ":"))

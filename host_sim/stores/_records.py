"""What a store keeps: one record per session, turn, command invocation and job, and the
lineage graph's nodes and edges.

The bottom floor of host_sim: it imports only modular_sdk, so stores, lineage, sessions and
traces all build on it (`host_sim.lineage` re-exports the lineage records).

Session records are written once and never change. A turn record is written when the
turn starts (status ``running``, no ``finished_at``) and replaced once when it finishes;
so is an invocation. A job record is written when the job starts and when it ends.

Records made from records live here too, so every store and the erasure walk share them
from below: a turn forgotten (`erased`, its text replaced by `ERASED_LABEL`) or left
running by a crash (`interrupted`), a fork's anchor artifact (`fork_artifact`), and a
`Violation` that the invariant checker (``_invariants.check``) reports.
"""

from __future__ import annotations

import types
from collections.abc import Mapping
from datetime import datetime
from typing import Any, Final, Literal, TypeAlias, TypeVar, get_args

import attrs
from cattrs.gen import make_dict_structure_fn, make_dict_unstructure_fn

from modular_sdk import (
    AiMessage,
    AiNotificationMessage,
    AiPromptMessage,
    AiRunnerId,
    AiSessionDisplayMetadata,
    AiSessionLineage,
    Author,
    InvalidArgumentError,
    ModDefinitionError,
    SessionId,
    ToolCallRecord,
    TurnId,
    TurnStatus,
    Usage,
    WidgetPlacement,
)
from modular_sdk._json import _json_object_only, converter
from modular_sdk._lineage import aware_datetime, non_negative_int

__all__ = [
    "ERASED_LABEL",
    "HOST_RELATIONS",
    "INTERRUPTED",
    "NATIVE_ARTIFACT_TYPES",
    "ErrorKind",
    "Invocation",
    "JobRecord",
    "JobStatus",
    "LineageArtifact",
    "LineageEdge",
    "LineageRelation",
    "SessionMetrics",
    "SessionNode",
    "SessionRecord",
    "StoredState",
    "ToolCallRecord",
    "TurnRecord",
    "Violation",
    "ViolationCode",
    "erased",
    "erased_call",
    "erased_widget",
    "fork_artifact",
    "interrupted",
]

# -- the lineage graph's records --------------------------------------------------------

LineageRelation: TypeAlias = Literal[
    "continued_from", "branched_from", "spawned_by", "used_result_of", "delegated_from", "planned_by"
]
"""How one session relates to another. Closed: consumers may switch on it exhaustively."""

HOST_RELATIONS: tuple[LineageRelation, ...] = (
    "continued_from",
    "used_result_of",
    "delegated_from",
    "planned_by",
)
"""Relations an integrator records with ``add_edge``; the host records the other two."""

NATIVE_ARTIFACT_TYPES: tuple[str, ...] = ("canvas_card", "job_result", "plan_step", "file", "checkpoint", "turn")
"""Artifact types the host knows. The set is open: never switch exhaustively on it."""

_RELATIONS: frozenset[str] = frozenset(get_args(LineageRelation))


_S = TypeVar("_S", bound=str)


def _relation(instance: object, attribute: attrs.Attribute[_S], value: _S) -> None:
    if value not in _RELATIONS:
        raise ModDefinitionError(
            f"{type(instance).__name__}.{attribute.name} must be one of "
            f"{sorted(_RELATIONS)!r}, got {value!r}",
            field=attribute.name,
            value=value,
        )


def _str(instance: object, attribute: attrs.Attribute[_S], value: _S) -> None:
    if not isinstance(value, str):
        raise InvalidArgumentError(  # a TypeError too, as before
            f"{type(instance).__name__}.{attribute.name} must be a str, got {value!r}",
            argument=attribute.name,
            value=value,
        )


@attrs.frozen(kw_only=True)
class LineageArtifact:
    """What was carried from one session to another. Immutable; ``type`` is open."""

    type: str = attrs.field(validator=_str)
    source_id: str = attrs.field(validator=_str)
    label: str = attrs.field(validator=_str)


@attrs.frozen(kw_only=True)
class SessionMetrics:
    """Aggregates stamped by ``complete_session``. Immutable."""

    tool_calls: int = attrs.field(validator=non_negative_int)
    token_usage: int = attrs.field(validator=non_negative_int)
    duration_ms: int = attrs.field(validator=non_negative_int)
    sessions_spawned: int = attrs.field(validator=non_negative_int)


@attrs.frozen(kw_only=True, weakref_slot=False)  # one per session, turn or edge: 8 bytes each without it
class SessionNode:
    """A vertex of the lineage graph: one session. Immutable (completion makes a new one)."""

    session_id: SessionId = attrs.field(validator=_str)
    created_at: datetime = attrs.field(validator=aware_datetime)
    summary: str | None = None
    agent_id: str | None = None
    completed_at: datetime | None = attrs.field(default=None, validator=attrs.validators.optional(aware_datetime))
    metrics: SessionMetrics | None = None


@attrs.frozen(kw_only=True, weakref_slot=False)  # one per session, turn or edge: 8 bytes each without it
class LineageEdge:
    """A typed relation from ``from_session_id`` to ``to_session_id``. Immutable.

    Writing the same (from, to) pair again replaces the edge.
    """

    from_session_id: SessionId = attrs.field(validator=_str)
    to_session_id: SessionId = attrs.field(validator=_str)
    relation: LineageRelation = attrs.field(validator=_relation)
    created_at: datetime = attrs.field(validator=aware_datetime)
    artifact: LineageArtifact | None = None


# -- the store's records ---------------------------------------------------------------

ErrorKind: TypeAlias = Literal[
    "unknown_command", "denied", "handler_failed", "timeout", "model_failed", "invalid_input", "interrupted"
]
"""Why a submission failed, for a program to branch on (`Submission.error_kind`); ``"interrupted"``:
its job was stopped before it finished (the host closed or died, or the job was cancelled)."""

JobStatus: TypeAlias = Literal["running", "finished", "failed", "interrupted", "cancelled"]
"""Where a job is: ``"running"``, then one of the others, once."""


_NO_TAGS: Mapping[str, str] = types.MappingProxyType({})


def _frozen_tags(value: Mapping[str, str]) -> Mapping[str, str]:
    if isinstance(value, types.MappingProxyType):
        return value
    return types.MappingProxyType(dict(value)) if value else _NO_TAGS  # most sessions: one shared empty


@attrs.frozen(kw_only=True, weakref_slot=False)  # one per session, turn or edge: 8 bytes each without it
class SessionRecord:
    """A session as created: never changes afterwards. Immutable.

    ``runner_id`` (the runner of its turns) is ``"{model}:{id}"`` unless another is given:
    only another is kept (``_runner_id``); the usual one is derived when read, so a session
    costs no runner id string of its own until it runs a turn.
    """

    id: SessionId
    lineage: AiSessionLineage
    metadata: AiSessionDisplayMetadata | None
    model: str
    cwd: str
    _runner_id: AiRunnerId | None = attrs.field(default=None, alias="runner_id")  # None: "{model}:{id}"
    created_at: datetime
    agent_id: str | None = None
    trigger_turn_id: TurnId | None = None  # a spawn made by a tool call: the turn that made the call
    tags: Mapping[str, str] = attrs.field(factory=dict, converter=_frozen_tags, hash=False)

    def __attrs_post_init__(self) -> None:
        if self._runner_id is not None and self._runner_id == _derived_runner_id(self.model, self.id):
            object.__setattr__(self, "_runner_id", None)  # the usual one is derived, never kept

    @property
    def runner_id(self) -> AiRunnerId:
        """The runner of the session's turns: ``"{model}:{id}"`` unless created with another."""
        given = self._runner_id
        return _derived_runner_id(self.model, self.id) if given is None else given


def _derived_runner_id(model: str, session_id: SessionId) -> AiRunnerId:
    return AiRunnerId(f"{model}:{session_id}")


# Rows and JSON name the field ``runner_id`` and always carry its value (derived or given).
_session_to_dict = make_dict_unstructure_fn(SessionRecord, converter, _cattrs_use_alias=True)


def _unstructure_session(record: SessionRecord) -> dict[str, Any]:
    data = _session_to_dict(record)
    data["runner_id"] = record.runner_id
    return data


converter.register_unstructure_hook(SessionRecord, _unstructure_session)
converter.register_structure_hook(
    SessionRecord,
    _json_object_only(
        SessionRecord,
        make_dict_structure_fn(SessionRecord, converter, _cattrs_forbid_extra_keys=True, _cattrs_use_alias=True),
    ),
)


@attrs.frozen(kw_only=True, weakref_slot=False)  # one per session, turn or edge: 8 bytes each without it
class TurnRecord:
    """A turn: written ``running`` when it starts, then once more when it finishes. Immutable.

    ``finished_at`` is ``None`` exactly while ``status`` is ``"running"``. A finished turn
    changes only if it is forgotten (once: its text goes, ``erased_at`` is set, and
    everything else, ids, ordinal, author, times, status, stays) or retracted (once:
    ``retracted_at`` and ``retraction_reason`` are set, nothing else changes).
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
    tool_calls: tuple[ToolCallRecord, ...] = ()  # written with the finished record
    retracted_at: datetime | None = None  # set once by lineage.retract: the turn was found wrong
    retraction_reason: str | None = None  # why (text: erased with the turn)
    usage: Usage | None = None  # its model calls' token usage, summed (None: no call reported any)
    widgets: tuple[WidgetPlacement, ...] = ()  # what its reply placed, written with the finished record


@attrs.frozen(kw_only=True)
class StoredState:
    """Everything a store holds, read back when a host opens on it."""

    sessions: tuple[SessionRecord, ...] = ()
    turns: tuple[TurnRecord, ...] = ()
    nodes: tuple[SessionNode, ...] = ()
    edges: tuple[LineageEdge, ...] = ()


@attrs.frozen(kw_only=True)
class Invocation:
    """One run of a slash or palette command, as ``host.log`` lists it. Immutable.

    Written when the command starts (``finished_at``, ``text`` unset) and once more when it
    finishes. ``session_id`` is ``None`` for a palette command; ``position`` is how many
    turns the session held when it started (so ``host.log`` interleaves it with the turns
    exactly where it happened); ``erased_at`` is set when its session was deleted.
    """

    id: str
    session_id: SessionId | None
    mod_id: str
    command_id: str
    argument: str | None
    author: Author
    started_at: datetime
    finished_at: datetime | None = None
    text: str | None = None
    error: str | None = None
    error_kind: ErrorKind | None = None
    position: int = 0
    erased_at: datetime | None = None


@attrs.frozen(kw_only=True)
class JobRecord:
    """A host-owned job (``host.start``), as stored: written when it starts and when it ends. Immutable."""

    id: str
    session_id: SessionId
    text: str
    status: JobStatus
    created_at: datetime
    finished_at: datetime | None = None
    kind: Literal["prompt", "command"] | None = None
    result: str | None = None
    error: str | None = None
    error_kind: ErrorKind | None = None
    turn_id: TurnId | None = None


# -- records made from records, and what a check finds -----------------------------------

INTERRUPTED: Final = "interrupted: the host stopped before it completed"
"""The error of a turn a crash (or a killed process) left ``running``."""

ViolationCode = Literal[
    "unknown-parent",
    "depth",
    "anchor-missing",
    "anchor-not-completed",
    "anchor-mismatch",
    "orphan-turn",
    "ordinals",
    "turn-running",
    "index-stale",
    "trace-orphan",  # a trace record naming a trace, session or output the store lacks (stores/_traces.py)
]
"""What an invariant violation is about; every code but ``index-stale`` and ``turn-running``
is damage to authoritative records that no repair can undo."""


@attrs.frozen(kw_only=True)
class Violation:
    """One broken invariant of a store. Immutable.

    ``subject`` is the session or turn id it is about, ``message`` says what is wrong,
    ``repairable`` whether ``host-sim fsck --repair`` (or opening a host) fixes it.
    """

    code: ViolationCode
    subject: str
    message: str
    repairable: bool

    def to_data(self) -> dict[str, str | bool]:
        """The violation as JSON data (what ``host-sim fsck --json`` prints)."""
        return {"code": self.code, "subject": self.subject, "message": self.message, "repairable": self.repairable}


ERASED_LABEL: Final = "(erased)"
"""The label of an artifact whose turn was forgotten."""


def fork_artifact(turn_id: str, ordinal: int, *, erased: bool = False) -> LineageArtifact:
    """The artifact a ``branched_from`` edge carries: the anchor turn it forked at."""
    return LineageArtifact(type="turn", source_id=turn_id, label=ERASED_LABEL if erased else f"turn {ordinal}")


def erased(turn: TurnRecord, at: datetime) -> TurnRecord:
    """``turn`` forgotten at ``at``: its message text, reply and error text gone (a failed
    turn's error reads `ERASED_LABEL`: a model's error may quote the prompt), and its tool
    calls' inputs, outputs and errors (`erased_call`), its widgets' data (`erased_widget`) and why
    it was retracted; everything else kept."""
    message: AiMessage = (
        AiNotificationMessage(title=ERASED_LABEL, body="")
        if isinstance(turn.message, AiNotificationMessage)
        else AiPromptMessage(text="")
    )
    error = None if turn.error is None else ERASED_LABEL
    calls = tuple(erased_call(call) for call in turn.tool_calls)
    reason = None if turn.retraction_reason is None else ERASED_LABEL
    widgets = tuple(erased_widget(placed) for placed in turn.widgets)
    return attrs.evolve(
        turn,
        message=message,
        reply=None,
        error=error,
        erased_at=at,
        tool_calls=calls,
        retraction_reason=reason,
        widgets=widgets,
    )


def erased_call(call: ToolCallRecord) -> ToolCallRecord:
    """A tool call of a forgotten turn: its input, output and error text gone; its id, tool name and times kept."""
    error = None if call.error is None else ERASED_LABEL
    return attrs.evolve(call, input={}, output=None, error=error)


def erased_widget(placed: WidgetPlacement) -> WidgetPlacement:
    """A widget a forgotten turn placed: its data gone (the reply wrote it); its widget id and index kept."""
    return attrs.evolve(placed, data={})


def interrupted(turn: TurnRecord, at: datetime) -> TurnRecord:
    """``turn`` (left ``running`` by a crash) finished as failed at ``at``."""
    return attrs.evolve(turn, status="failed", error=INTERRUPTED, reply=None, finished_at=at)

"""What ``host.traces`` answers: `Trace` and its parts, `TaskRef`; and `PendingAction`.

All frozen attrs classes that round-trip through the one converter (``modular_sdk.to_json``
/ ``from_json``). A trace is assembled from the store's append-only trace records.
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import datetime
from typing import Literal, TypeAlias

import attrs

from modular_sdk import ModDefinitionError, SessionId, TurnId
from modular_sdk._frozen import FrozenJsonObject, freeze_object

__all__ = ["ActionRecord", "ActionStatus", "PendingAction", "TaskRef", "Trace", "TraceLink", "TraceOutput", "TraceTask"]


def _text(what: str, *, colon: bool = True) -> Callable[[object, attrs.Attribute[str], object], None]:
    def check(instance: object, attribute: attrs.Attribute[str], value: object) -> None:
        if not isinstance(value, str) or not value.strip() or (not colon and ":" in value):
            rule = "non-empty text" + ("" if colon else " without ':'")
            raise ModDefinitionError(
                f"{what}.{attribute.name} must be {rule}, got {value!r}; "
                "write TaskRef(source='github', id='42')",
                field=attribute.name,
                value=value,
            )

    return check


@attrs.frozen(kw_only=True)
class TaskRef:
    """Where a task lives: ``source`` (``"github"``, ``"jira"``, ``"local"``) and its ``id`` there. Immutable.

    ``str(ref)`` and ``ref.ref`` give ``"source:id"``, the form traces and `Traces.find`
    use; `TaskRef.parse` reads it back.
    """

    source: str = attrs.field(validator=_text("TaskRef", colon=False))
    id: str = attrs.field(validator=_text("TaskRef"))

    @property
    def ref(self) -> str:
        """``"source:id"``."""
        return f"{self.source}:{self.id}"

    def __str__(self) -> str:
        return self.ref

    @classmethod
    def parse(cls, ref: str) -> TaskRef:
        """``TaskRef.parse("github:42") == TaskRef(source="github", id="42")``; raises `ModDefinitionError`."""
        source, sep, ident = ref.partition(":") if isinstance(ref, str) else ("", "", "")
        if not sep:
            raise ModDefinitionError(
                f"a task ref is 'source:id', got {ref!r}; write 'github:42'", field="ref", value=ref
            )
        return cls(source=source, id=ident)


def _snapshot(value: object) -> FrozenJsonObject:
    return freeze_object({} if value is None else value, type_name="the task snapshot")


@attrs.frozen(kw_only=True)
class TraceTask:
    """The task of a trace: ``ref`` (``"source:id"``), a JSON ``snapshot`` of it as it was,
    and when it was ``captured_at``. Immutable."""

    ref: str
    snapshot: FrozenJsonObject = attrs.field(converter=_snapshot)
    captured_at: datetime


@attrs.frozen(kw_only=True)
class TraceOutput:
    """An output a session produced (``kind`` ``"proposal"``, ``output_id`` ``"chg-1"``) and
    the ``commit`` that landed it (``None`` until one is recorded; never overwritten). Immutable."""

    output_id: str
    kind: str
    created_at: datetime
    commit: str | None = None


@attrs.frozen(kw_only=True)
class TraceLink:
    """A session working on the trace, with the outputs it produced, in order. Immutable."""

    session_id: SessionId
    created_at: datetime
    outputs: tuple[TraceOutput, ...] = ()


@attrs.frozen(kw_only=True)
class Trace:
    """Why code exists: a task (or a chat), the sessions that worked on it, their outputs and
    the commits that landed them. Immutable; obtain one from ``host.traces``.

    ``origin`` is ``"task"`` (made by ``for_task``) or ``"chat"`` (made when a session in
    no trace first reported an output); it is set at creation and never changes, also when a
    chat trace later gets its task (``attach_task``). ``links`` has one entry per session,
    in the order they joined; ``updated_at`` is when anything last joined the trace.
    """

    id: str
    origin: Literal["task", "chat"]
    task: TraceTask | None
    links: tuple[TraceLink, ...]
    created_at: datetime
    updated_at: datetime

    @property
    def outputs(self) -> tuple[TraceOutput, ...]:
        """Every output of every session of the trace, in link order."""
        return tuple(o for link in self.links for o in link.outputs)


@attrs.frozen(kw_only=True)
class PendingAction:
    """An action a model proposed, waiting for the user. Immutable.

    ``payload`` is the proposed JSON object, checked against the action's ``payload_type``
    when it was proposed; ``mod_id`` the mod that declared ``type``; ``session_id`` and
    ``turn_id`` where it was proposed. Confirm it with ``host.confirm(id)``, or drop it
    with ``host.dismiss(id)``.
    """

    id: str
    type: str
    payload: FrozenJsonObject
    mod_id: str
    session_id: SessionId
    turn_id: TurnId
    created_at: datetime


ActionStatus: TypeAlias = Literal["pending", "confirmed", "dismissed"]
"""Where a proposed action is: waiting for the user, or decided once."""


@attrs.frozen(kw_only=True)
class ActionRecord:
    """An action a model proposed and what became of it (docs/the-record.md). Immutable.

    The `PendingAction` fields, plus ``status`` and, once decided, who decided
    (``decided_by``, as passed to ``host.confirm`` or ``host.dismiss``), when
    (``decided_at``) and why (``reason``). Listed by ``await host.actions(session)``;
    durable on every store. Erased with the turn that proposed it or its session: the
    ``payload`` becomes ``{}`` and the ``reason`` ``"(erased)"``; who decided and when stay.
    """

    id: str
    type: str
    payload: FrozenJsonObject
    mod_id: str
    session_id: SessionId
    turn_id: TurnId
    created_at: datetime
    status: ActionStatus
    decided_by: str | None = None
    decided_at: datetime | None = None
    reason: str | None = None

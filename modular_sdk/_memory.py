"""Memory records (docs/memory.md, seed 001): what a conversation was read into.

A record rests on the words it was read from: a `Window` of completed turns, cited turns,
or other records. Defined here with the handler-side protocol (``ctx.ai.memory``) that
returns them, and re-exported by ``host_sim`` (one class each).
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime
from typing import Literal, NewType, Protocol, TypeAlias

import attrs

from ._frozen import FrozenJsonValue, JsonValue, freeze
from ._ids import SessionId, TurnId
from ._lineage import aware_datetime
from ._messages import ModAuthor, UserAuthor
from ._rules import text_validator

__all__ = ["AiMemory", "HostAuthor", "MemoryAuthor", "MemoryRecord", "RecordId", "Window"]

RecordId = NewType("RecordId", str)
"""Stable identifier of a memory record (``mem_...``)."""


def _freeze_data(value: object) -> FrozenJsonValue:
    return freeze(value, type_name="a memory record's data")


@attrs.frozen(kw_only=True)
class HostAuthor:
    """The host itself (``host.memory``, a compaction summary), stamped on what it writes. Immutable."""

    kind: Literal["host"] = attrs.field(default="host", init=False)


MemoryAuthor: TypeAlias = UserAuthor | ModAuthor | HostAuthor
"""Who made a memory record; discriminated by ``kind``."""


@attrs.frozen(kw_only=True)
class Window:
    """A contiguous range of completed turns of a session's history, inherited turns
    included: from ``first`` to ``last`` (the same turn for one). Immutable.

    Which turns a record was read from (seed 001's passages); the host checks that both
    are completed turns of the session's history and that ``first`` is not after ``last``.
    """

    first: TurnId = attrs.field(validator=text_validator(non_empty=True, fix="pass a turn id (turn.id)"))
    last: TurnId = attrs.field(validator=text_validator(non_empty=True, fix="pass a turn id (turn.id)"))


@attrs.frozen(kw_only=True)
class MemoryRecord:
    """What memory made of a conversation: text (and data) resting on the turns or records
    it was read from, stamped with who made it (docs/memory.md). Immutable.

    ``read_from``: the window of turns it was read from; ``cites``: turns it names;
    ``derived_from``: records it was made from. It never changes, except that a retraction
    (``memory.retract``) sets ``retracted_at`` and ``retraction_reason`` once, and erasure
    (``lineage.forget`` of anything it rests on, a session's deletion) makes ``text``
    ``"(erased)"`` and ``data`` ``None`` and sets ``erased_at`` (kind, ids and times stay).
    Made by ``host.memory.record`` or ``ctx.ai.memory.record``, never constructed by hand.
    """

    id: RecordId = attrs.field(validator=text_validator(non_empty=True))
    session_id: SessionId = attrs.field(validator=text_validator(non_empty=True))
    kind: str = attrs.field(validator=text_validator(non_empty=True))
    text: str = attrs.field(validator=text_validator())
    data: FrozenJsonValue = attrs.field(default=None, converter=_freeze_data)
    read_from: Window | None = None
    cites: tuple[TurnId, ...] = ()
    derived_from: tuple[RecordId, ...] = ()
    made_by: MemoryAuthor = attrs.field(factory=HostAuthor)
    created_at: datetime = attrs.field(validator=aware_datetime)
    retracted_at: datetime | None = None
    retraction_reason: str | None = attrs.field(default=None, validator=text_validator(optional=True))
    erased_at: datetime | None = None


class AiMemory(Protocol):
    """``ctx.ai.memory``: what a handler remembers, stamped with its mod and command or tool.

    A tool the model calls can remember::

        @tool(name="remember", description="Remember a fact the user stated")
        async def remember(ctx: ToolContext, args: Fact) -> str:
            turns = await ctx.session.turns()
            rec = await ctx.ai.memory.record(ctx.session, args.fact, kind="fact", cites=(turns[-1].id,))
            return f"remembered as {rec.id}"
    """

    async def record(
        self,
        session: object,
        text: str,
        *,
        kind: str,
        read_from: Window | None = None,
        cites: Sequence[TurnId | str] = (),
        derived_from: Sequence[RecordId | str] = (),
        data: JsonValue = None,
    ) -> MemoryRecord:
        """Make a record resting on a window, cited turns or records of ``session`` (a
        handle or an id); raises `InvalidArgumentError` naming a turn or record it cannot
        rest on."""
        ...

    async def get(self, record_id: str) -> MemoryRecord:
        """One record; `UnknownRecordError` for an id the host does not hold."""
        ...

    async def search(self, query: str, *, limit: int = 10) -> tuple[MemoryRecord, ...]:
        """Records matching ``query``, best first (erased and retracted ones left out)."""
        ...

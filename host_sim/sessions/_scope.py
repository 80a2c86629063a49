"""The one rule of scopes (docs/embedding.md): which sessions a scope sees, and how it answers for the rest.

A `Scope` is a set of tags; it sees a session whose tags include every one of them. Every
scoped read decides visibility here, by the session record's tags (fixed at creation), and
answers for an id outside the scope with the very error it gives for an id that does not
exist: both come from the same function below, so a caller cannot tell them apart.
"""

from __future__ import annotations

import types
from collections.abc import Mapping
from typing import TYPE_CHECKING, final

import attrs

from modular_sdk import InvalidArgumentError, SessionId
from modular_sdk._rules import show, unstorable_text

from ..lineage._provenance import find_record, find_turn, unknown_record, unknown_session, unknown_turn
from ..traces._service import unknown_action, unknown_trace
from ..traces._visible import admits
from ._job_errors import unknown_job

if TYPE_CHECKING:
    from modular_sdk import MemoryRecord

    from ..stores._protocol import IntegratorStore, Store
    from ..stores._records import JobRecord, SessionRecord, TurnRecord
    from ..stores._traces import TraceStore
    from ._engine import Engine
    from ._state import SessionState

__all__ = ["Scope", "scope_of"]


def _frozen_tags(tags: Mapping[str, str]) -> Mapping[str, str]:
    return types.MappingProxyType(dict(tags))


@final
@attrs.frozen
class Scope:
    """The tags a scoped view (``host.scoped(tags)``) or a handler acts within. Immutable."""

    tags: Mapping[str, str] = attrs.field(converter=_frozen_tags, eq=False)
    _key: frozenset[tuple[str, str]] = attrs.field(init=False, repr=False)

    @_key.default
    def _key_of(self) -> frozenset[tuple[str, str]]:
        return frozenset(self.tags.items())

    @staticmethod
    def of(tags: object) -> Scope:
        """The scope of ``tags`` (a non-empty mapping of non-empty str to str), checked."""
        if (
            not isinstance(tags, Mapping)
            or not tags
            or not all(isinstance(k, str) and k and isinstance(v, str) for k, v in tags.items())
        ):
            raise InvalidArgumentError(
                f"scoped() takes the tags of one tenant or owner, a non-empty mapping of str to str like "
                f"{{'user': 'alice'}}, got {show(tags)}",
                argument="tags",
                value=tags,
            )
        return Scope(tags)

    def admits(self, tags: Mapping[str, str]) -> bool:
        """Whether a session with these tags is inside the scope (its tags include all of the scope's)."""
        return admits(self.tags, tags)

    def merged(self, more: object, *, what: str = "tags") -> dict[str, str]:
        """The scope's tags plus ``more`` (which may add tags, never change one of the scope's)."""
        if more is None:
            return dict(self.tags)
        if not isinstance(more, Mapping) or not all(isinstance(k, str) and isinstance(v, str) for k, v in more.items()):
            raise InvalidArgumentError(
                f"{what} must map str to str, like {{'project': 'p1'}}, got {show(more)}", argument=what, value=more
            )
        for key, value in more.items():
            problem = unstorable_text(key) or unstorable_text(value)
            if problem is not None:
                raise InvalidArgumentError(
                    f"{what} {show(dict(more))} cannot be stored: {problem}; tags are valid text",
                    argument=what,
                    value=more,
                )
            if key in self.tags and self.tags[key] != value:
                raise InvalidArgumentError(
                    f"{what} {show(dict(more))} sets {key!r} to {value!r}, but this view is scoped to "
                    f"{key!r}={self.tags[key]!r}; leave {key!r} out (the scope's value is added), or use "
                    "a view of that scope",
                    argument=what,
                    value=more,
                )
        return {**self.tags, **more}

    def narrowed(self, more: object) -> Scope:
        """The scope of a view within this one (``scoped(...)`` of a `ScopedHost`)."""
        Scope.of(more)
        return Scope(self.merged(more))

    def __repr__(self) -> str:
        return f"Scope({dict(self.tags)!r})"


def scope_of(session: SessionState) -> Scope | None:
    """The scope a handler running in ``session`` acts within: the session's own tags (they
    include the scope of every view that can see it); ``None`` (unscoped) for an untagged session."""
    tags = session.record.tags
    return Scope(tags) if tags else None


# -- visibility: one check per kind of id, each answering "outside" as "missing" ----------


async def session_record(store: Store, scope: Scope, session_id: object) -> SessionRecord:
    """The record of a session the scope sees (one read by key); `UnknownSessionError` otherwise."""
    if not isinstance(session_id, str):
        raise InvalidArgumentError(
            f"a session id is a str (a SessionId), got {show(session_id)}; pass session.id",
            argument="session_id",
            value=session_id,
        )
    # an id no store could hold (a lone surrogate) is an unknown id, never an encoding error
    record = None if unstorable_text(session_id) else await store.get_session(SessionId(session_id))
    if record is None or not scope.admits(record.tags):
        raise unknown_session(session_id)
    return record


async def session_state(engine: Engine, scope: Scope, session_id: object) -> SessionState:
    """The live state of a session the scope sees; `UnknownSessionError` (as for a missing id) otherwise."""
    live = engine.held(SessionId(session_id)) if isinstance(session_id, str) else None
    if live is not None and scope.admits(live.record.tags):  # tags never change: the cached record decides
        return live
    # a session outside the scope takes the path of a missing id, the store read included: a
    # cache answer that a missing id cannot have would time its existence (docs/embedding.md)
    record = await session_record(engine.store, scope, session_id)
    return await engine.load(record.id)


async def turn_record(store: Store, scope: Scope, turn_id: object) -> TurnRecord:
    """A turn (by turn id or message id) of a session the scope sees; `UnknownTurnError` otherwise."""
    record = await find_turn(store, turn_id)  # a missing id raises here
    session = await store.get_session(record.session_id)
    if session is None or not scope.admits(session.tags):
        assert isinstance(turn_id, str)
        raise unknown_turn(turn_id)
    return record


async def memory_record(store: Store, scope: Scope, record_id: object) -> MemoryRecord:
    """A memory record of a session the scope sees (one read by key each); `UnknownRecordError` otherwise."""
    record = await find_record(store, record_id)  # a missing id raises here
    session = await store.get_session(record.session_id)
    if session is None or not scope.admits(session.tags):
        raise unknown_record(record.id)  # the very error find_record gives for a missing id
    return record


async def job_record(integrator_store: IntegratorStore, store: Store, scope: Scope, job_id: object) -> JobRecord:
    """A job of a session the scope sees (one read by key each); `UnknownJobError` otherwise."""
    if not isinstance(job_id, str):
        raise InvalidArgumentError(
            f"a job id is a str (Job.id, like 'job_3f2a9c1e0b4d'), got {show(job_id)}", argument="job_id", value=job_id
        )
    record = None if unstorable_text(job_id) else await integrator_store.get_job(job_id)
    session = None if record is None else await store.get_session(record.session_id)
    if record is None or session is None or not scope.admits(session.tags):
        raise unknown_job(job_id)
    return record


async def check_action(store: Store, traces: TraceStore, scope: Scope, action_id: object, verb: str) -> None:
    """Refuse an action proposed outside the scope exactly as an action never proposed (the
    host itself answers a bad or missing id)."""
    if not isinstance(action_id, str) or unstorable_text(action_id) is not None:
        return
    found = await traces.get_action(action_id)
    if found is None:
        return
    session = await store.get_session(found[0].session_id)
    if session is None or not scope.admits(session.tags):
        raise unknown_action(action_id)


async def check_trace(store: Store, scope: Scope, trace_id: object) -> None:
    """Refuse ``sessions.create(trace=...)`` of a trace the scope does not see exactly as a
    trace that does not exist (the one scope check of traces: `traces._visible`)."""
    from ..stores._traces import TraceStore
    from ..traces._visible import visible_trace

    if not isinstance(trace_id, str) or not trace_id or unstorable_text(trace_id) or not isinstance(store, TraceStore):
        return  # the unscoped checks name what is wrong with it
    if await store.get_trace(trace_id) is None:
        return  # missing: the unscoped check answers it
    seen = await visible_trace(store, store, scope.tags, trace_id)
    if seen is None or seen.trace.id != trace_id:
        raise unknown_trace(trace_id)

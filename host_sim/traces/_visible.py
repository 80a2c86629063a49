"""The one scope check of traces (docs/embedding.md): what a scope finds by a key, and nothing else.

A scope is given by its tags (``None`` or empty: unscoped, the integrator's host, which
sees every trace). Every trace read through a scope goes through `visible_trace`:
`ScopedTraces` (``view.traces``), the built-in ``lineage_lookup`` tool in a session of a
scope, and ``sessions.create(trace=...)`` through a view. The scope is part of the key:
the task refs, output ids and commits a scope writes are stored in its namespace
(``stores/_traces.py``: `namespace`, `scoped_key`), so another tenant's ``gh:1`` or
``chg-1`` is not the same key and is never found, blocked or planted. What a scope finds
lists only its own part (its sessions' links, their outputs and commits); anything
outside answers ``None``, exactly as a key nobody wrote.
"""

from __future__ import annotations

from collections.abc import Mapping

import attrs

from modular_sdk import InvalidArgumentError, SessionId
from modular_sdk._rules import show, unstorable_text

from ..stores._protocol import Store
from ..stores._trace_records import TraceRecords
from ..stores._traces import SEPARATOR, TraceStore, namespace, namespace_of, scoped_key, shown_key

__all__ = ["Tags", "admits", "check_key", "output_space", "trace_space", "visible_trace"]

Tags = Mapping[str, str] | None
"""A scope's tags; ``None`` (or empty): unscoped."""


def admits(scope: Tags, tags: Mapping[str, str]) -> bool:
    """Whether a session with ``tags`` is inside ``scope`` (its tags include all of the scope's)."""
    return not scope or all(tags.get(key) == value for key, value in scope.items())


def check_key(argument: str, key: str) -> str:
    """Refuse a given task ref or output id that holds the namespace separator (it could be
    spelled into another scope's namespace); ``key`` otherwise."""
    if SEPARATOR in key:
        raise InvalidArgumentError(
            f"{argument} {key!r} holds the control character '\\x1f', which the host keeps to separate "
            "a scope's keys; remove it",
            argument=argument,
            value=key,
        )
    return key


def trace_space(records: TraceRecords) -> str:
    """The namespace a trace was made in: its task's (a ``task`` trace) or its first output's
    (a ``chat`` trace, made by that output)."""
    task = records.task
    if records.trace.origin == "task" and task is not None:
        return namespace_of(task.ref)
    if records.outputs:
        return namespace_of(records.outputs[0].output_id)
    return "" if task is None else namespace_of(task.ref)


async def output_space(store: Store, traces: TraceStore, session_id: SessionId) -> str:
    """The namespace of an output reported in ``session_id``: its trace's, or (a session in no
    trace yet, whose output makes its chat trace) the session's own tags'."""
    trace_id = await traces.trace_of_session(session_id)
    records = None if trace_id is None else await traces.get_trace(trace_id)
    if records is not None:
        return trace_space(records)
    record = await store.get_session(session_id)
    return namespace(None if record is None else record.tags)


async def visible_trace(store: Store, traces: TraceStore, scope: Tags, key: object) -> TraceRecords | None:
    """The records of the trace ``key`` leads to as ``scope`` sees it (its own part only), or
    ``None`` (missing, or outside the scope: the same answer).

    ``key``: a trace id, a session id, or a task ref, output id or commit of the scope's
    namespace (or of the unscoped one, the integrator's). Unscoped: any key, every part.
    """
    if not isinstance(key, str) or not key:
        raise InvalidArgumentError(
            f"find() takes a trace id, task ref, session id, output id or commit (a str), got {show(key)}",
            argument="id",
            value=key,
        )
    if unstorable_text(key):  # an id no store could hold (a lone surrogate) is an unknown id
        return None
    space = namespace(scope)
    trace_id = await traces.find_trace(scoped_key(space, key)) if space else None
    if trace_id is None:
        trace_id = await traces.find_trace(key)
    records = None if trace_id is None else await traces.get_trace(trace_id)
    if records is None or not scope:
        return records
    seen = await _seen(store, scope, records)
    return seen if seen is not None and key in _keys(seen, space) else None


async def _seen(store: Store, scope: Tags, records: TraceRecords) -> TraceRecords | None:
    """``records`` with only the scope's part, or ``None`` when the scope does not see the trace:
    no session of it works on it, or no session works on it and it is another scope's."""
    inside: set[str] = set()
    for link in records.links:
        record = await store.get_session(link.session_id)
        if record is not None and admits(scope, record.tags):
            inside.add(link.session_id)
    if records.links and not inside:
        return None
    if not records.links and trace_space(records) not in ("", namespace(scope)):
        return None
    outputs = tuple(o for o in records.outputs if o.session_id in inside)
    kept = {o.output_id for o in outputs}
    return attrs.evolve(
        records,
        links=tuple(link for link in records.links if link.session_id in inside),
        outputs=outputs,
        commits=tuple(c for c in records.commits if c.output_id in kept),
    )


def _keys(records: TraceRecords, space: str) -> set[str]:
    """What a scope of namespace ``space`` finds ``records`` by: the trace id, its sessions, and
    the task ref, outputs and commits of its own namespace or the unscoped one."""
    mine = ("", space)
    keys: set[str] = {records.trace.id, *(link.session_id for link in records.links)}
    keys |= {shown_key(o.output_id) for o in records.outputs if namespace_of(o.output_id) in mine}
    keys |= {c.commit_hash for c in records.commits if namespace_of(c.output_id) in mine}
    if records.task is not None and namespace_of(records.task.ref) in mine:
        keys.add(shown_key(records.task.ref))
    return keys

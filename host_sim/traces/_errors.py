"""The errors of traces: `UnknownTraceError` and `TraceError`."""

from __future__ import annotations

from modular_sdk import ModularError

__all__ = ["TraceError", "UnknownTraceError"]


class UnknownTraceError(ModularError, LookupError):
    """No trace is found by this id: not a trace id, task ref, session, output or commit the
    store's trace index holds. ``id`` is what was looked up."""

    def __init__(self, message: str, *, id: str) -> None:
        super().__init__(message)
        self.id = id


class TraceError(ModularError, RuntimeError):
    """A trace operation that breaks a rule: a second task for a trace, a task ref another
    trace holds, an output id reported from another session, a conflicting spool event, or a
    host whose store keeps no traces. ``trace_id`` is the trace concerned (``None`` when
    there is none); the message names the value and what to do instead."""

    def __init__(self, message: str, *, trace_id: str | None = None) -> None:
        super().__init__(message)
        self.trace_id = trace_id

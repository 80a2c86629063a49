"""OpenTelemetry spans and metrics of the host (docs/observability.md, extra ``otel``).

`telemetry_for` gives the host what it reports through: a `Telemetry` that reports nothing
when opentelemetry-api is not installed (nothing of it is imported) or no provider records,
else the instrumentation in ``_otel``, imported only then.

One way: sessions import this package, never the reverse; what it reads of a session, a
turn and a command is declared in ``_telemetry`` as read-only protocols.
"""

from __future__ import annotations

from ..models._propagation import inject_trace_headers
from ._setup import telemetry_for
from ._telemetry import CAPTURE_CONTENT_ENV, ChatCall, CommandRun, Telemetry, ToolRun, TurnSpan

__all__ = [
    "CAPTURE_CONTENT_ENV",
    "ChatCall",
    "CommandRun",
    "Telemetry",
    "ToolRun",
    "TurnSpan",
    "inject_trace_headers",
    "telemetry_for",
]

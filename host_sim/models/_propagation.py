"""Trace context on outgoing requests (``traceparent``), without importing opentelemetry
into a process that does not use it."""

from __future__ import annotations

import sys
from collections.abc import MutableMapping

__all__ = ["inject_trace_headers"]


def inject_trace_headers(headers: MutableMapping[str, str]) -> None:
    """Add ``traceparent`` (and any propagated fields) of the current context to ``headers``.

    Does nothing unless opentelemetry is already in use in this process: a context to
    propagate exists only then, and nothing is imported for a process that does not use it.
    """
    if "opentelemetry.trace" not in sys.modules:
        return
    try:
        from opentelemetry.propagate import inject
    except ImportError:
        return
    inject(headers)

"""The arguments of ``Host(...)``, checked before anything starts.

Each bad argument raises `InvalidArgumentError` naming it, quoting the value and saying
what to pass instead; nothing else escapes from the constructor, whatever it is given.
"""

from __future__ import annotations

import math
import os
from collections.abc import Iterable

from modular_sdk import InvalidArgumentError
from modular_sdk._rules import show, unstorable_text

__all__ = ["check_host_arguments"]

_STORE_METHODS = ("open", "close", "begin_turn", "finish_turn")


def _bad(argument: str, value: object, rule: str, fix: str) -> InvalidArgumentError:
    return InvalidArgumentError(
        f"Host's {argument} must {rule}, got {show(value)} ({type(value).__name__}); {fix}",
        argument=argument,
        value=value,
    )


def _finite(value: float) -> bool:
    """Whether ``value`` is a finite float, or an int a float can hold (10**5000 is not)."""
    try:
        return math.isfinite(value)
    except OverflowError:
        return False


def _seconds(argument: str, value: object, default: float) -> None:
    if value is None:
        return
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not _finite(value) or value <= 0:
        raise _bad(argument, value, "be a positive number of seconds or None", f"pass e.g. {argument}={default}")


def _names(value: object) -> tuple[object, ...] | None:
    """The items of a sequence of names, or ``None`` when ``value`` is not one (a str is not)."""
    if isinstance(value, (str, bytes)) or not isinstance(value, Iterable):
        return None
    try:
        return tuple(value)
    except Exception:  # an iterable that fails while iterated is not a sequence of names
        return None


def check_host_arguments(
    *,
    mods: object,
    model: object,
    store: object,
    clock: object,
    handler_timeout: object,
    model_timeout: object,
    max_tool_rounds: object,
    cwd: object,
    spool: object,
    builtin_tools: object,
    known_builtin_tools: tuple[str, ...],
    max_reply_bytes: object,
    max_event_bytes: object,
    commit_resolver: object,
    on_bad_mod: object,
    event_history: object,
    tracer_provider: object = None,
    meter_provider: object = None,
) -> tuple[tuple[object, ...], tuple[str, ...]]:
    """Raise `InvalidArgumentError` for the first argument of ``Host(...)`` that cannot work;
    return the mods and the built-in tool names, read once (an iterator is read here)."""
    specs = _names(mods)  # its items are judged when the host folds them (on_bad_mod decides)
    if specs is None:
        raise _bad("mods", mods, "be a sequence of Mod values or mod specs (str)", "pass e.g. mods=[my_mod.mod, 'path/to/mod.py']")
    if model is not None and not callable(getattr(model, "respond", None)):
        raise _bad("model", model, "be a model (an object with respond(request)) or None", "pass e.g. model=EchoModel()")
    if store is not None and not all(callable(getattr(store, name, None)) for name in _STORE_METHODS):
        raise _bad("store", store, "be a store (MemoryStore, SqliteStore, PostgresStore) or None", "pass e.g. store=SqliteStore('host.sqlite')")
    if clock is not None and not callable(clock):
        raise _bad("clock", clock, "be a function returning an aware datetime, or None", "pass e.g. clock=lambda: datetime.now(timezone.utc)")
    _seconds("handler_timeout", handler_timeout, 30.0)
    _seconds("model_timeout", model_timeout, 120.0)
    if isinstance(max_tool_rounds, bool) or not isinstance(max_tool_rounds, int) or max_tool_rounds < 0:
        raise _bad("max_tool_rounds", max_tool_rounds, "be an int >= 0", "pass e.g. max_tool_rounds=8")
    if cwd is not None and (not isinstance(cwd, str) or unstorable_text(cwd) is not None):
        raise _bad("cwd", cwd, "be a folder path as a str (valid text) or None", "pass e.g. cwd=os.getcwd()")
    if spool is not None and not isinstance(spool, (str, os.PathLike)):
        raise _bad("spool", spool, "be a folder path (str or pathlib.Path) or None", "pass e.g. spool='events'")
    names = _names(builtin_tools)
    if names is None or any(not isinstance(n, str) or n not in known_builtin_tools for n in names):
        raise _bad(
            "builtin_tools",
            builtin_tools,
            f"be a sequence of {', '.join(map(repr, known_builtin_tools))}",
            "write builtin_tools=('lineage',), or leave it out for none",
        )
    if isinstance(max_reply_bytes, bool) or not isinstance(max_reply_bytes, int) or max_reply_bytes < 1:
        raise InvalidArgumentError(
            f"max_reply_bytes must be an int >= 1 (bytes of UTF-8), got {show(max_reply_bytes)}; "
            "pass e.g. max_reply_bytes=1_000_000",
            argument="max_reply_bytes",
            value=max_reply_bytes,
        )
    if isinstance(max_event_bytes, bool) or not isinstance(max_event_bytes, int) or max_event_bytes < 1:
        raise _bad(
            "max_event_bytes",
            max_event_bytes,
            "be a positive int (the largest spool event file read)",
            "leave it out for 1_048_576 (1 MiB)",
        )
    if commit_resolver is not None and not callable(commit_resolver):
        raise _bad("commit_resolver", commit_resolver, "be a function fn(output) -> str | None", "or leave it out")
    if on_bad_mod not in ("raise", "skip"):
        raise _bad(
            "on_bad_mod",
            on_bad_mod,
            "be 'raise' (refuse every mod when one is bad) or 'skip' (load the good ones, list the bad in host.mod_errors)",
            "leave it out for 'raise'",
        )
    if isinstance(event_history, bool) or not isinstance(event_history, int) or event_history < 0:
        raise _bad(
            "event_history",
            event_history,
            "be an int >= 0 (the events kept for subscribe(after=...))",
            "leave it out for 10_000",
        )
    for argument, value, method, example in (
        ("tracer_provider", tracer_provider, "get_tracer", "opentelemetry.sdk.trace.TracerProvider()"),
        ("meter_provider", meter_provider, "get_meter", "opentelemetry.sdk.metrics.MeterProvider()"),
    ):
        if value is not None and not callable(getattr(value, method, None)):
            raise _bad(
                argument,
                value,
                f"be an OpenTelemetry {argument.replace('_', ' ')} (with {method}()) or None",
                f"pass e.g. {argument}={example}, or leave it out for the global one",
            )
    return specs, tuple(n for n in names if isinstance(n, str))

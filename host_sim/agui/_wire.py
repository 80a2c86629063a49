"""The SSE text of the AG-UI events a run sends most, without a pydantic model per event.

A reply streams as many ``TEXT_MESSAGE_CONTENT`` events as the model has deltas; building,
validating and dumping a pydantic model for each (the protocol package's models and encoder)
cost as much as the host's whole turn. Here each such kind is made **once**, at import, by the
protocol's own model and encoder with a marker in each slot, and the text around the markers
kept as a template; an event is that template filled with its values, each written as JSON by
the standard library (``ensure_ascii=False``, compact: what the protocol's encoder writes).
The fields are the host's own typed values (ids and text: ``str``; ``metadata`` and
``result``: objects of ``str`` and ``None``), so there is nothing left to validate; the bytes
are the encoder's, field order and omitted ``None`` fields included, whatever the installed
``ag-ui-protocol`` version does (tests/protocols/test_agui_wire.py compares them, for any text).
Every other event (interrupts, ``CUSTOM`` with a mod's data, ...) goes through its model:
`of_model`.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from json.encoder import encode_basestring
from typing import Final, TypeAlias

from ag_ui.core import (
    BaseEvent,
    RunErrorEvent,
    RunFinishedEvent,
    RunStartedEvent,
    TextMessageContentEvent,
    TextMessageEndEvent,
    TextMessageStartEvent,
    ToolCallArgsEvent,
    ToolCallEndEvent,
    ToolCallResultEvent,
    ToolCallStartEvent,
)
from ag_ui.encoder import EventEncoder

__all__ = [
    "of_model",
    "run_error",
    "run_finished",
    "run_started",
    "text_content",
    "text_end",
    "text_start",
    "tool_args",
    "tool_end",
    "tool_result",
    "tool_start",
]

Data: TypeAlias = "Mapping[str, str | None | Data]"
"""A ``metadata`` or ``result`` object the host fills: text, ``None`` and such objects only
(a number's JSON text could differ between the standard library and pydantic)."""

_ENCODER: Final = EventEncoder()


def of_model(event: BaseEvent) -> str:
    """The SSE text of any event, by the protocol's own encoder (validated when it was built)."""
    return _ENCODER.encode(event)


def _data(value: Data) -> str:
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"))


class _Template:
    """One event kind's SSE text with slots: made by the protocol's encoder, filled by `fill`."""

    __slots__ = ("_parts", "_writers")

    def __init__(self, model: type[BaseEvent], text: tuple[str, ...] = (), data: tuple[str, ...] = (), **fixed: object) -> None:
        markers = {name: f"\x00{n}" for n, name in enumerate(text + data)}
        values: dict[str, object] = {**fixed, **{n: markers[n] for n in text}, **{n: {markers[n]: None} for n in data}}
        sample = model.model_validate(values)
        encoded = of_model(sample)
        found: list[tuple[int, str, str]] = []  # (where, the marker's encoded form, the slot)
        for name in text:
            found.append((encoded.index(f'"{_escaped(markers[name])}"'), f'"{_escaped(markers[name])}"', name))
        for name in data:
            found.append((encoded.index(f'{{"{_escaped(markers[name])}":null}}'), f'{{"{_escaped(markers[name])}":null}}', name))
        found.sort()
        parts: list[str] = []
        rest = encoded
        for _, written, _ in found:
            before, rest = rest.split(written, 1)
            parts.append(before)
        parts.append(rest)
        slots = text + data
        self._parts = tuple(parts)
        order = [slots.index(name) for _, _, name in found]  # the slots in the order they are written
        self._writers = tuple((i, encode_basestring if slots[i] in text else _data) for i in order)

    def fill(self, *values: str | Data) -> str:
        """The SSE text with ``values`` (in the order the slots were declared) in its slots."""
        parts = self._parts
        out = [parts[0]]
        for k, (i, write) in enumerate(self._writers):
            out.append(write(values[i]))  # type: ignore[arg-type]  # a text slot's value is a str, a data slot's a Data
            out.append(parts[k + 1])
        return "".join(out)


def _escaped(marker: str) -> str:
    """How the protocol's encoder writes a marker (a NUL and a digit) inside a JSON string."""
    return "\\u0000" + marker[1:]


_TEXT_START: Final = _Template(TextMessageStartEvent, ("message_id",), role="assistant")
_TEXT_CONTENT: Final = _Template(TextMessageContentEvent, ("message_id", "delta"))
_TEXT_END: Final = _Template(TextMessageEndEvent, ("message_id",))
_TOOL_START: Final = _Template(ToolCallStartEvent, ("tool_call_id", "tool_call_name"))
_TOOL_ARGS: Final = _Template(ToolCallArgsEvent, ("tool_call_id", "delta"))
_TOOL_END: Final = _Template(ToolCallEndEvent, ("tool_call_id",))
_TOOL_RESULT: Final = _Template(ToolCallResultEvent, ("message_id", "tool_call_id", "content"), role="tool")
_RUN_STARTED: Final = _Template(RunStartedEvent, ("thread_id", "run_id"), ("metadata",))
_RUN_STARTED_FORK: Final = _Template(RunStartedEvent, ("thread_id", "run_id", "parent_run_id"), ("metadata",))
_RUN_FINISHED: Final = _Template(RunFinishedEvent, ("thread_id", "run_id"), ("result",))
_RUN_ERROR: Final = _Template(RunErrorEvent, ("message",))
_RUN_ERROR_CODED: Final = _Template(RunErrorEvent, ("message", "code"))


def text_start(message_id: str) -> str:
    return _TEXT_START.fill(message_id)


def text_content(message_id: str, delta: str) -> str:
    return _TEXT_CONTENT.fill(message_id, delta)


def text_end(message_id: str) -> str:
    return _TEXT_END.fill(message_id)


def tool_start(call_id: str, name: str) -> str:
    return _TOOL_START.fill(call_id, name)


def tool_args(call_id: str, delta: str) -> str:
    return _TOOL_ARGS.fill(call_id, delta)


def tool_end(call_id: str) -> str:
    return _TOOL_END.fill(call_id)


def tool_result(message_id: str, call_id: str, content: str) -> str:
    return _TOOL_RESULT.fill(message_id, call_id, content)


def run_started(thread_id: str, run_id: str, parent_run_id: str | None, metadata: Data) -> str:
    if parent_run_id is None:
        return _RUN_STARTED.fill(thread_id, run_id, metadata)
    return _RUN_STARTED_FORK.fill(thread_id, run_id, parent_run_id, metadata)


def run_finished(thread_id: str, run_id: str, result: Data) -> str:
    """``RUN_FINISHED`` with a ``result`` and no outcome (an interrupt outcome: `of_model`)."""
    return _RUN_FINISHED.fill(thread_id, run_id, result)


def run_error(message: str, code: str | None) -> str:
    return _RUN_ERROR.fill(message) if code is None else _RUN_ERROR_CODED.fill(message, code)

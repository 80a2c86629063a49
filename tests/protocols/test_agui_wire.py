"""The app's fast SSE text is the protocol's own encoder's, byte for byte, for any text (host_sim/agui/_wire.py).

The events a run sends most are filled into templates instead of being built as pydantic
models; a front end must not be able to tell: each is compared with ``EventEncoder`` over
the model the protocol package builds from the same values, and parsed back by the models.
"""

from __future__ import annotations

from ag_ui.core import (
    BaseEvent,
    Event,
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
from hypothesis import given
from hypothesis import strategies as st
from pydantic import TypeAdapter

from host_sim.agui import _wire as wire

ENCODER = EventEncoder()
EVENTS = TypeAdapter(Event)

# any text a model, a mod or a client may send: quotes, backslashes, control characters,
# line and paragraph separators, astral characters (no lone surrogates: no UTF-8 for them)
text = st.text(st.characters(exclude_categories=["Cs"]), max_size=40)
maybe = st.none() | text
data = st.recursive(st.dictionaries(text, maybe, max_size=4), lambda inner: st.dictionaries(text, maybe | inner, max_size=3), max_leaves=8)


def same(fast: str, event: BaseEvent) -> None:
    assert fast == ENCODER.encode(event)
    assert fast.startswith("data: ") and fast.endswith("\n\n")
    assert EVENTS.validate_json(fast[len("data: ") : -2]) == event  # what a Python client reads back


@given(text, text)
def test_text_message_events_are_the_encoders_bytes(message_id: str, delta: str) -> None:
    same(wire.text_start(message_id), TextMessageStartEvent(message_id=message_id, role="assistant"))
    same(wire.text_content(message_id, delta), TextMessageContentEvent(message_id=message_id, delta=delta))
    same(wire.text_end(message_id), TextMessageEndEvent(message_id=message_id))


@given(text, text, text)
def test_tool_call_events_are_the_encoders_bytes(call_id: str, name: str, value: str) -> None:
    same(wire.tool_start(call_id, name), ToolCallStartEvent(tool_call_id=call_id, tool_call_name=name))
    same(wire.tool_args(call_id, value), ToolCallArgsEvent(tool_call_id=call_id, delta=value))
    same(wire.tool_end(call_id), ToolCallEndEvent(tool_call_id=call_id))
    result = ToolCallResultEvent(message_id=f"{call_id}.result", tool_call_id=call_id, content=value, role="tool")
    same(wire.tool_result(f"{call_id}.result", call_id, value), result)


@given(text, text, maybe, data, data)
def test_run_events_are_the_encoders_bytes(thread: str, run: str, parent: str | None, metadata: wire.Data, result: wire.Data) -> None:
    started = RunStartedEvent(thread_id=thread, run_id=run, parent_run_id=parent, metadata=dict(metadata))
    same(wire.run_started(thread, run, parent, metadata), started)
    same(wire.run_finished(thread, run, result), RunFinishedEvent(thread_id=thread, run_id=run, result=result))


@given(text, maybe)
def test_run_errors_are_the_encoders_bytes(message: str, code: str | None) -> None:
    same(wire.run_error(message, code), RunErrorEvent(message=message, code=code))

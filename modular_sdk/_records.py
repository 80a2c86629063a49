"""What a turn did, as the host's record keeps it: its tool calls and the widgets its reply
placed (docs/the-record.md), and the tokens its model calls used (section 15).

Defined here, with the handle protocols that return it, and re-exported by ``host_sim``
(one class).
"""

from __future__ import annotations

from datetime import datetime

import attrs

from ._frozen import FrozenJsonObject, freeze_object
from ._lineage import aware_datetime, non_negative_int
from ._rules import text_validator

__all__ = ["ToolCallRecord", "Usage", "WidgetPlacement"]


def _frozen_input(value: object) -> FrozenJsonObject:
    return freeze_object(value, type_name="a tool call's input")


@attrs.frozen(kw_only=True)
class ToolCallRecord:
    """One tool call a turn made, as the record keeps it (docs/the-record.md). Immutable.

    ``input`` is what the model passed, ``output`` what the tool returned (its text, as the
    model saw it) and ``error`` why it failed (``output`` is then ``None``). Written with
    the finished turn, in the same transaction, and read back with it after a reopen; when
    the turn is forgotten its ``input`` becomes ``{}``, its ``output`` ``None`` and its
    ``error`` ``"(erased)"``, while ``call_id``, ``name`` and the times stay. Raises
    `ModDefinitionError` (or `SerializationError` for ``input``) for a field it cannot keep.

    Read them from a turn handle::

        for call in turn.tool_calls:
            print(call.name, call.input, call.output or call.error)
    """

    call_id: str = attrs.field(validator=text_validator(non_empty=True))
    name: str = attrs.field(validator=text_validator(non_empty=True))
    input: FrozenJsonObject = attrs.field(converter=_frozen_input)
    output: str | None = attrs.field(validator=text_validator(optional=True))
    error: str | None = attrs.field(validator=text_validator(optional=True))
    started_at: datetime = attrs.field(validator=aware_datetime)
    finished_at: datetime = attrs.field(validator=aware_datetime)


@attrs.frozen(kw_only=True)
class Usage:
    """The tokens one model call used, as the model's server counted them. Immutable.

    A model reports it with its answer: ``Reply(text=..., usage=...)``,
    ``ToolCall(..., usage=...)``, or, from ``stream``, a `Usage` item after the text. The
    host adds up a turn's calls into ``turn.usage`` (and ``host_sim`` re-exports this class).
    Raises `ModDefinitionError` (a
    `ModularError`) for a count that is not an ``int >= 0``::

        Usage(input_tokens=812, output_tokens=64)
    """

    input_tokens: int = attrs.field(validator=non_negative_int)
    output_tokens: int = attrs.field(validator=non_negative_int)

    @property
    def total_tokens(self) -> int:
        """``input_tokens + output_tokens``."""
        return self.input_tokens + self.output_tokens


def _frozen_data(value: object) -> FrozenJsonObject:
    return freeze_object(value, type_name="a widget's data")


@attrs.frozen(kw_only=True)
class WidgetPlacement:
    """A widget a model placed in its reply, as the turn's record keeps it (docs/the-record.md). Immutable.

    A reply places one with ``<mod-widget type="ID">{json}</mod-widget>``; the host keeps
    each tag that names a loaded widget and whose JSON fits the widget's ``data_type``
    (structured strictly, as ``host.render_widget`` does) as one placement on the turn
    (``turn.widgets``): ``widget_id``, ``data`` (the JSON as the data type reads it back)
    and ``index``, the tag's 0-based position among the reply's well-formed ``<mod-widget>``
    tags (a refused tag keeps its number, so ``index`` finds the tag in the reply).
    The tag stays in the reply text. Durable with the turn; when the turn is forgotten
    ``data`` becomes ``{}`` while ``widget_id`` and ``index`` stay. Raises
    `ModDefinitionError` (or `SerializationError` for ``data``) for a field it cannot keep.

    Show them with the widget's renderer::

        for placed in turn.widgets:
            shown = await host.render_widget(placed.widget_id, session, placed.data)
    """

    widget_id: str = attrs.field(validator=text_validator(non_empty=True))
    data: FrozenJsonObject = attrs.field(converter=_frozen_data)
    index: int = attrs.field(validator=non_negative_int)

"""Widgets a reply places: ``<mod-widget type="ID">{json}</mod-widget>`` (docs/the-record.md).

When a turn completes, the engine reads its reply for widget tags, the way replies are read
for ``<mod-action>`` tags (traces/_actions.py): with `scan_tags`, in time linear in the
reply, at most `MAX_TAGS` tags. A tag that names a loaded widget and holds a JSON object
that structures strictly into the widget's ``data_type`` becomes a `WidgetPlacement` kept
with the turn's record; every other tag is reported (``Submission.widget_errors``) and
placed nothing. Nothing here raises: a reply is input from outside.
"""

from __future__ import annotations

from collections.abc import Mapping

from modular_sdk import Mod, SerializationError, Widget, WidgetPlacement
from modular_sdk._json import structure, unstructure
from modular_sdk._rules import show

from ._reply_tags import TagObject, read_tag_objects

__all__ = ["place_widgets"]

_TAG = "mod-widget"


def place_widgets(
    reply: str, widgets: Mapping[str, tuple[Mod, Widget[object]]]
) -> tuple[tuple[WidgetPlacement, ...], tuple[str, ...]]:
    """The placements of ``reply``'s well-formed ``<mod-widget>`` tags, and what was wrong
    with every other one (each message says it was ignored)."""
    if f"<{_TAG}" not in reply:
        return (), ()
    placed: list[WidgetPlacement] = []

    def take(tag: TagObject[tuple[Mod, Widget[object]]]) -> str | None:
        mod, widget = tag.entry
        try:
            canonical = unstructure(structure(tag.data, widget.data_type))  # what render_widget accepts
            placement = WidgetPlacement(widget_id=widget.id, data=canonical, index=tag.index)
        except (SerializationError, RecursionError, ValueError, TypeError) as exc:
            problem = "nested too deeply" if isinstance(exc, RecursionError) else str(exc)
            return f"<{_TAG} type={show(tag.type)}> data does not fit {widget.data_type.__name__} of mod {mod.id!r}: {problem}; it was ignored"
        placed.append(placement)
        return None

    errors = read_tag_objects(
        reply, _TAG, widgets, take, what="loaded widget", listed="widgets", none="none loaded", noun="data"
    )
    return tuple(placed), tuple(errors)

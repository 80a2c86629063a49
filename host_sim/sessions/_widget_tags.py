"""Widgets a reply places: ``<mod-widget type="ID">{json}</mod-widget>`` (API.md section 17).

When a turn completes, the engine reads its reply for widget tags, the way replies are read
for ``<mod-action>`` tags (traces/_actions.py): with `scan_tags`, in time linear in the
reply, at most `MAX_TAGS` tags. A tag that names a loaded widget and holds a JSON object
that structures strictly into the widget's ``data_type`` becomes a `WidgetPlacement` kept
with the turn's record; every other tag is reported (``Submission.widget_errors``) and
placed nothing. Nothing here raises: a reply is input from outside.
"""

from __future__ import annotations

import json
from collections.abc import Mapping

from modular_sdk import Mod, SerializationError, Widget, WidgetPlacement
from modular_sdk._json import parse_json_text, structure, unstructure
from modular_sdk._rules import show

from ._reply_tags import MAX_TAGS, scan_tags

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
    errors: list[str] = []
    scanned = scan_tags(reply, _TAG, limit=MAX_TAGS)
    for index, tag in enumerate(scanned.tags):
        kind, body = tag.type, tag.body
        where = f"<{_TAG} type={show(kind)}>"
        entry = widgets.get(kind)
        if entry is None:
            known = ", ".join(repr(k) for k in widgets) or "none loaded"
            errors.append(f"{where} names no loaded widget (widgets: {known}); it was ignored")
            continue
        mod, widget = entry
        try:
            data = parse_json_text(body)
        except (json.JSONDecodeError, RecursionError, SerializationError) as exc:
            why = exc.msg if isinstance(exc, json.JSONDecodeError) else str(exc) if isinstance(exc, SerializationError) else "nested too deeply"
            errors.append(f"{where} holds no JSON data ({why}): {show(body)}; it was ignored")
            continue
        if not isinstance(data, dict):
            errors.append(f"{where} holds {show(body)}; its data is a JSON object; it was ignored")
            continue
        try:
            canonical = unstructure(structure(data, widget.data_type))  # what render_widget accepts
            placed.append(WidgetPlacement(widget_id=widget.id, data=canonical, index=index))
        except (SerializationError, RecursionError, ValueError, TypeError) as exc:
            problem = "nested too deeply" if isinstance(exc, RecursionError) else str(exc)
            errors.append(
                f"{where} data does not fit {widget.data_type.__name__} of mod {mod.id!r}: {problem}; it was ignored"
            )
    errors += scanned.problems()
    return tuple(placed), tuple(errors)

"""The renderer lane: views and widgets turn data into text, with no session access."""

from __future__ import annotations

from typing import TYPE_CHECKING

import attrs

from modular_sdk import SerializationError
from modular_sdk._json import structure

from ._ext_host import HandlerFailed, call_handler

if TYPE_CHECKING:
    from modular_sdk import View, Widget

__all__ = ["ViewResult", "render", "render_widget"]


@attrs.frozen(kw_only=True)
class ViewResult:
    """What ``host.render_view`` and ``host.render_widget`` give back: the text, or the error
    that replaced it. Immutable."""

    text: str
    error: str | None = None


async def render(mod_id: str, declared: View[object], data: object, *, timeout: float | None) -> ViewResult:
    """``declared.render(data)``; a failure or a non-str result becomes ``ViewResult.error``."""
    try:
        text = await call_handler(
            f"view {declared.id!r} of mod {mod_id!r}",
            declared.render,
            (data,),
            timeout=timeout,
        )
    except HandlerFailed as failed:
        return ViewResult(text=failed.reason, error=failed.reason)
    if not isinstance(text, str):
        message = f"view {declared.id!r} of mod {mod_id!r} returned {text!r}; render(data) must return a str"
        return ViewResult(text=message, error=message)
    return ViewResult(text=text)


async def render_widget(mod_id: str, declared: Widget[object], data: object, *, timeout: float | None) -> ViewResult:
    """``declared.render(data)`` with ``data`` structured strictly into the widget's data type
    first (an instance of it passes as it is); data that does not fit, a failure or a
    non-str result becomes ``ViewResult.error``."""
    what = f"widget {declared.id!r} of mod {mod_id!r}"
    if not isinstance(data, declared.data_type):
        try:
            data = structure(data, declared.data_type)
        except SerializationError as exc:
            message = f"the data for {what} does not fit {declared.data_type.__name__}: {exc}"
            return ViewResult(text=message, error=message)
    try:
        text = await call_handler(what, declared.render, (data,), timeout=timeout)
    except HandlerFailed as failed:
        return ViewResult(text=failed.reason, error=failed.reason)
    if not isinstance(text, str):
        message = f"{what} returned {text!r}; render(data) must return a str"
        return ViewResult(text=message, error=message)
    return ViewResult(text=text)

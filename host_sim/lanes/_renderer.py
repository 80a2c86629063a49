"""The renderer lane: views turn data into text, with no session access."""

from __future__ import annotations

from typing import TYPE_CHECKING

import attrs

from ._ext_host import HandlerFailed, call_handler

if TYPE_CHECKING:
    from modular_sdk import View

__all__ = ["ViewResult", "render"]


@attrs.frozen(kw_only=True)
class ViewResult:
    """What ``host.render_view`` gives back: the text, or the error that replaced it. Immutable."""

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

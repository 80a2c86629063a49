"""A view's data as its ``render`` takes it: what ``host-sim run --view`` and the studio
hand a view after reading its JSON."""

from __future__ import annotations

import inspect
import typing
from collections.abc import Callable, Sequence

import attrs

from modular_sdk import Mod
from modular_sdk._json import structure

__all__ = ["view_data"]


def view_data(mods: Sequence[Mod], view_id: str, data: object) -> object:
    """``data`` (parsed JSON) as the view's ``render`` takes it.

    When ``render``'s parameter is annotated with an attrs class (``def progress_bar(data:
    Progress)``), the JSON is structured into it with the SDK's converter, so ``--data
    '{"done": 3, "total": 4}'`` renders as ``Progress(done=3, total=4)`` would; otherwise
    (no annotation, ``object``, ``dict``, a list ...) the render gets the JSON as parsed.
    Raises `SerializationError` naming the field when the JSON does not fit the class.
    """
    for mod in mods:
        for declared in mod.views:
            if declared.id == view_id:
                wanted = _data_type(declared.render)
                return structure(data, wanted) if wanted is not None else data
    return data  # an unknown view: render_view says so, listing the views


def _data_type(render: Callable[..., object]) -> type | None:
    """The attrs class ``render``'s one parameter is annotated with, if it is one."""
    try:
        (parameter, *_) = inspect.signature(render).parameters.values()
        hints = typing.get_type_hints(render)
    except (ValueError, TypeError, NameError):  # no signature, or an annotation that does not resolve
        return None
    wanted = hints.get(parameter.name)
    return wanted if isinstance(wanted, type) and attrs.has(wanted) else None

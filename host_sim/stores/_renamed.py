"""Store names renamed for what they hold, answering to their old names for one more release.

``Store.running_turns`` is `Store.turns_left_running` and ``LogStore`` is `IntegratorStore`
(docs/embedding.md, "Renamed store names"). The old names still work and warn with a
`DeprecationWarning` that names the new one; the next release removes them.
"""

from __future__ import annotations

import warnings
from collections.abc import Awaitable, Callable, Sequence
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from ._protocol import Store
    from ._records import TurnRecord

__all__ = ["RENAMED", "turns_left_running", "warn_renamed"]

RENAMED = {"LogStore": "IntegratorStore"}
"""Names of ``host_sim.stores`` that were renamed: old name -> new name."""


def warn_renamed(old: str, new: str, *, stacklevel: int = 3) -> None:
    """Warn that ``old`` is now ``new`` (the default ``stacklevel`` points at the caller of the old name)."""
    warnings.warn(
        f"{old} is renamed {new}: use {new}; the old name is removed in the next release",
        DeprecationWarning,
        stacklevel=stacklevel,
    )


async def turns_left_running(store: Store) -> Sequence[TurnRecord]:
    """``store.turns_left_running()``; a store written before the rename, which has only
    ``running_turns``, is asked that instead (with a `DeprecationWarning`), so it still opens."""
    if not hasattr(store, "turns_left_running") and hasattr(store, "running_turns"):
        warn_renamed(f"{type(store).__name__}.running_turns", "turns_left_running", stacklevel=2)
        old: Callable[[], Awaitable[Sequence[TurnRecord]]] = getattr(store, "running_turns")
        return await old()
    return await store.turns_left_running()

"""`LineageTree`: a session and everything forked or spawned from it, nested, for a UI to draw."""

from __future__ import annotations

import types
from collections.abc import Mapping
from typing import TYPE_CHECKING, Literal

import attrs

from modular_sdk import SessionId, UnknownSessionError

if TYPE_CHECKING:
    from ..stores._protocol import Store
    from ..stores._records import SessionRecord

__all__ = ["LineageTree", "build_tree"]


@attrs.frozen(kw_only=True)
class LineageTree:
    """One session of a lineage tree and its children (forks and spawns, in creation order). Immutable.

    ``kind`` is the session's lineage kind; ``anchor_ordinal`` the turn a fork continues
    from (``None`` for roots and spawns); ``label`` its display label, if any; ``tags``
    the tags it was created with. The tree has no depth cut.
    """

    session_id: SessionId
    label: str | None
    kind: Literal["root", "spawn", "fork"]
    anchor_ordinal: int | None
    tags: Mapping[str, str] = attrs.field(hash=False)
    children: tuple[LineageTree, ...]


async def build_tree(store: Store, root_id: str) -> LineageTree:
    """The tree under ``root_id``, read by key (one read per session), built without recursion."""
    root = await store.get_session(SessionId(root_id)) if isinstance(root_id, str) else None
    if root is None:
        raise UnknownSessionError(
            f"no session {root_id!r} in this host's store; pass the id of a session (session.id)",
            session_id=str(root_id),
        )
    order: list[SessionRecord] = [root]
    kids: dict[SessionId, list[SessionId]] = {}
    index = 0
    while index < len(order):  # breadth-first: every session once, parents before children
        record = order[index]
        index += 1
        children = await store.child_sessions(record.id)
        kids[record.id] = [c.id for c in children]
        order += children
    built: dict[SessionId, LineageTree] = {}
    for record in reversed(order):  # children are built before their parent
        lineage = record.lineage
        built[record.id] = LineageTree(
            session_id=record.id,
            label=None if record.metadata is None else record.metadata.label,
            kind=lineage.kind,
            anchor_ordinal=lineage.parent_turn_ordinal if lineage.kind == "fork" else None,
            tags=types.MappingProxyType(dict(record.tags)),
            children=tuple(built[c] for c in kids[record.id]),
        )
    return built[root.id]

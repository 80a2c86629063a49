"""The seam between the lineage graph and the host it serves: `LineageFacts`.

The graph makes facts (an erasure, a retraction) in the store; the host keeps a cache of the
store that must reflect them. The graph tells it through one object passed to its
constructor, declared here in the graph's own terms (STYLE.md, "Seams and owners").
"""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator, Sequence
from contextlib import AbstractAsyncContextManager, AbstractContextManager
from typing import TYPE_CHECKING, Protocol

if TYPE_CHECKING:
    from modular_sdk import MemoryRecord, RecordId

    from ..stores._erasure import Erasure
    from ..stores._records import TurnRecord

__all__ = ["LineageFacts", "NoHost"]


class LineageFacts(Protocol):
    """What the graph tells the host it serves about the facts it makes (the host's
    `SessionCache` is one): passed in through the constructor, in the graph's own terms.

    ``erasing()`` is held while a forget plans, erases and tells (the host begins no turn
    meanwhile, so a turn that starts during the erasure reads the history after it);
    ``erasure(records, memory)`` is held around the store write that erases ``records`` (and
    the memory records ``memory``) and the telling: what reports it (``turn_erased``) commits
    in that write's transaction (API.md section 23);
    ``erased`` gets the records an erasure changed, the erasure itself and the ids of the
    memory records it erased (API.md section 20), once durable;
    ``retracted`` a retraction (and whether this call made it) with the memory records it
    retracted in turn (the summaries resting on the turn); ``forgotten`` the memory records an
    erasure erased that no erased turn names (a record forgotten by its own id); ``written()`` is awaited
    before a forget or retraction returns, so the events they published get their seq first
    (several hosts: before the caller, or another host, goes on).
    """

    def erasing(self) -> AbstractAsyncContextManager[None]: ...

    def erasure(self, records: Sequence[TurnRecord], memory: Sequence[RecordId]) -> AbstractContextManager[None]: ...

    def erased(self, records: Sequence[TurnRecord], erasure: Erasure, memory: Sequence[RecordId]) -> None: ...

    def retracted(self, record: TurnRecord, first: bool, memory: Sequence[MemoryRecord] = ()) -> None: ...

    def forgotten(self, memory: Sequence[MemoryRecord]) -> None: ...

    async def written(self) -> None: ...


class NoHost(LineageFacts):
    """The facts of a graph no host serves (the CLI's, a test's): nobody to tell."""

    @contextlib.asynccontextmanager
    async def erasing(self) -> AsyncIterator[None]:
        yield

    def erasure(self, records: Sequence[TurnRecord], memory: Sequence[RecordId]) -> AbstractContextManager[None]:
        return contextlib.nullcontext()

    def erased(self, records: Sequence[TurnRecord], erasure: Erasure, memory: Sequence[RecordId]) -> None:
        return None

    def retracted(self, record: TurnRecord, first: bool, memory: Sequence[MemoryRecord] = ()) -> None:
        return None

    def forgotten(self, memory: Sequence[MemoryRecord]) -> None:
        return None

    async def written(self) -> None:
        return None

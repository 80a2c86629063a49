"""The lineage as a read-only MCP server: ``lineage_mcp_server(host)`` and ``host-sim mcp``.

Five tools, each annotated ``readOnlyHint``: ``lineage_lookup`` (the trace an id leads to,
the JSON of the built-in ``lineage_lookup`` tool), ``lineage_forward`` and
``lineage_backward`` (``host.lineage.forward``/``backward`` as JSON, the memory records a
turn became included), ``session_transcript`` (``host.transcript``) and ``memory_search``
(``host.memory.search``: records ranked by the store's full-text index). They read and never write: a mounted server
reads through the host it was given; ``host-sim mcp`` opens its store read-only for each
call. Erased turns show as erased (their text is gone from the store).

The ``mcp`` package (extra ``mcp``) is imported when a server is made, not before.
"""

from __future__ import annotations

import json
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Final, Protocol, TypeVar

from modular_sdk import InvalidArgumentError, MemoryRecord, ModularError, SessionId, UnknownSessionError
from modular_sdk._json import unstructure

from ..lineage._as_json import origin_data, provenance_data, record_origin_data
from ..lineage._provenance import Provenance, RecordOrigin, TurnOrigin, backward, backward_record, forward, is_record_id
from ..mcp._extra import require_mcp
from ..sessions._transcript import render_transcript
from ..stores._memory_records import RecordStore
from ..stores._protocol import IntegratorStore, Store
from ..stores._records import Invocation, TurnRecord
from ..traces._lineage_tool import lookup

if TYPE_CHECKING:
    from mcp.server.mcpserver import MCPServer

    from ..sessions._host import Host

__all__ = ["StoreReader", "lineage_mcp_server", "lineage_server"]

_R = TypeVar("_R")

SERVER_NAME: Final = "host-sim-lineage"
_INSTRUCTIONS: Final = (
    "Read-only lineage of a host-sim store: ask why something exists (lineage_lookup with a "
    "commit hash, output id, session id, task ref or trace id), what a turn became "
    "(lineage_forward), what a turn's reply was read from (lineage_backward), and what was "
    "said in a session (session_transcript). Nothing here writes; erased text shows as erased."
)


class LineageReader(Protocol):
    """What the five tools read: a live host, or a store opened read-only per call."""

    async def lookup(self, key: str) -> dict[str, object]: ...
    async def forward(self, turn_id: str) -> Provenance: ...
    async def backward(self, turn_id: str) -> TurnOrigin | RecordOrigin: ...
    async def transcript(self, session_id: str) -> str: ...
    async def search(self, query: str, limit: int) -> list[dict[str, object]]: ...


def _record_data(record: MemoryRecord) -> dict[str, object]:
    data: dict[str, object] = unstructure(record)
    return data


def lineage_mcp_server(host: Host) -> MCPServer:
    """The read-only lineage of ``host`` as an MCP server, for an application to mount.

    Tools (each annotated ``readOnlyHint``): ``lineage_lookup`` ``{"id"}`` answers the trace
    any id leads to as JSON (the built-in ``lineage_lookup`` tool's answer, docs/traces.md);
    ``lineage_forward`` and ``lineage_backward`` ``{"turn_id"}`` answer
    ``host.lineage.forward``/``backward`` as JSON; ``session_transcript`` ``{"session_id"}``
    answers ``host.transcript``. They write nothing; erased turns show as erased. Serve it
    with the ``mcp`` package: ``await server.run_stdio_async()``, or mount
    ``server.streamable_http_app()`` in an ASGI application. The host must stay open while
    the server runs. Needs the extra ``mcp`` (``pip install 'modular-chat-sdk[mcp]'``).

    Raises `HostClosedError` when ``host`` is not open.
    """
    from ..sessions._host import Host

    if not isinstance(host, Host):
        raise InvalidArgumentError(
            f"lineage_mcp_server() takes an open host_sim.Host, got {host!r}; "
            "call it inside 'async with Host(...) as host:'",
            argument="host",
            value=host,
        )
    host.lineage  # raises HostClosedError for a host that is not open
    return lineage_server(_HostReader(host))


class _HostReader:
    """Reads through a live host: what it shows is what the host shows."""

    def __init__(self, host: Host) -> None:
        self._host = host

    async def lookup(self, key: str) -> dict[str, object]:
        return await lookup(self._host._store, key)

    async def forward(self, turn_id: str) -> Provenance:
        return await self._host.lineage.forward(turn_id)

    async def backward(self, turn_id: str) -> TurnOrigin | RecordOrigin:
        return await self._host.lineage.backward(turn_id)  # a record id (mem_...) answers its RecordOrigin

    async def transcript(self, session_id: str) -> str:
        return await self._host.transcript(session_id)

    async def search(self, query: str, limit: int) -> list[dict[str, object]]:
        return [_record_data(r) for r in await self._host.memory.search(query, limit=limit)]


class StoreReader:
    """Reads a store that ``open_store`` makes afresh for each call (read-only), then closes it.

    Each answer is what the store holds at that moment: a host writing the store meanwhile
    is seen at the next call.
    """

    def __init__(self, open_store: Callable[[], Store]) -> None:
        self._open_store = open_store

    async def _with(self, use: Callable[[Store], Awaitable[_R]]) -> _R:
        store = self._open_store()
        await store.open()
        try:
            return await use(store)
        finally:
            await store.close()

    async def lookup(self, key: str) -> dict[str, object]:
        return await self._with(lambda store: lookup(store, key))

    async def forward(self, turn_id: str) -> Provenance:
        return await self._with(lambda store: forward(store, turn_id))

    async def backward(self, turn_id: str) -> TurnOrigin | RecordOrigin:
        if is_record_id(turn_id):  # a memory record: the words it was read from
            return await self._with(lambda store: backward_record(store, turn_id))
        return await self._with(lambda store: backward(store, turn_id))

    async def transcript(self, session_id: str) -> str:
        return await self._with(lambda store: stored_transcript(store, session_id))

    async def search(self, query: str, limit: int) -> list[dict[str, object]]:
        async def found(store: Store) -> list[dict[str, object]]:
            if not isinstance(store, RecordStore):
                return []
            return [_record_data(r) for r in await store.search_records(query, {}, max(1, min(limit, 100)))]

        return await self._with(found)


async def stored_transcript(store: Store, session_id: str) -> str:
    """``host.transcript`` of a session, read from ``store`` alone (no host, no writes)."""
    record = await store.get_session(SessionId(session_id))
    if record is None:
        raise UnknownSessionError(
            f"no session {session_id!r} in this store; use a session id from host-sim lineage",
            session_id=session_id,
        )
    # The session's history: its own turns, then up the fork chain through each anchor.
    turns: list[TurnRecord] = list(await store.get_turns(record.id))
    current, upto = record, None
    while current.lineage.kind == "fork":
        upto = current.lineage.parent_turn_ordinal if upto is None else min(upto, current.lineage.parent_turn_ordinal)
        parent = await store.get_session(current.lineage.parent_session_id)
        if parent is None:
            break
        limit = upto
        turns = [t for t in await store.get_turns(parent.id) if t.ordinal <= limit] + turns
        current = parent
    turns.sort(key=lambda t: t.ordinal)
    invocations: list[Invocation] = []
    if isinstance(store, IntegratorStore):
        invocations = sorted(await store.invocations_of(record.id), key=lambda i: i.position)
    items: list[TurnRecord | Invocation] = []
    index = 0
    for turn in turns:
        while index < len(invocations) and invocations[index].position <= turn.ordinal:
            items.append(invocations[index])
            index += 1
        items.append(turn)
    items += invocations[index:]
    return render_transcript(items, record.id)


def lineage_server(reader: LineageReader) -> MCPServer:
    """The MCP server of the five read-only lineage tools over ``reader``."""
    require_mcp("the lineage MCP server")
    from mcp.server.mcpserver import MCPServer
    from mcp.server.mcpserver.exceptions import ToolError
    from mcp.types import ToolAnnotations

    server: MCPServer = MCPServer(name=SERVER_NAME, instructions=_INSTRUCTIONS)
    read_only = ToolAnnotations(read_only_hint=True, destructive_hint=False, idempotent_hint=True, open_world_hint=False)

    async def answer(make: Callable[[], Awaitable[str]]) -> str:
        try:
            return await make()
        except ModularError as exc:  # an unknown id, an unreadable store: this call's answer
            raise ToolError(str(exc)) from None

    async def lineage_lookup(id: str) -> str:
        return await answer(lambda: _dumps(reader.lookup(id)))

    async def lineage_forward(turn_id: str) -> str:
        async def make() -> str:
            return json.dumps(provenance_data(await reader.forward(turn_id)), indent=2, ensure_ascii=False)

        return await answer(make)

    async def lineage_backward(turn_id: str) -> str:
        async def make() -> str:
            found = await reader.backward(turn_id)
            data = record_origin_data(found) if isinstance(found, RecordOrigin) else origin_data(found)
            return json.dumps(data, indent=2, ensure_ascii=False)

        return await answer(make)

    async def session_transcript(session_id: str) -> str:
        return await answer(lambda: reader.transcript(session_id))

    async def memory_search(query: str) -> str:
        async def make() -> str:
            return json.dumps(await reader.search(query, 10), indent=2, ensure_ascii=False)

        return await answer(make)

    tools: list[tuple[Callable[[str], Awaitable[str]], str, str]] = [
        (
            lineage_lookup,
            "lineage_lookup",
            "Find why something exists: give any id you have (a commit hash, a proposal or output "
            "id, a session id, a task ref like 'github:42', a trace id) and get its trace as JSON: "
            "origin (task or chat), the task and its snapshot, the sessions that worked on it (with "
            "labels) and their outputs with the commits that landed them; or {\"of\", \"error\"} "
            "when no trace is found. Read-only.",
        ),
        (
            lineage_forward,
            "lineage_forward",
            "What the host made of a turn (a turn id or message id), as JSON: the sessions whose "
            "history holds it, the later turns whose model saw it, sessions spawned by its tool "
            "calls, and the lineage edges citing it. Read-only.",
        ),
        (
            lineage_backward,
            "lineage_backward",
            "What a turn's reply was read from (a turn id or message id), as JSON: the completed "
            "turns its model saw, in order, and the fork chain that carried them; or, for a memory "
            "record id (mem_...), the turns and records it was read from. Read-only.",
        ),
        (
            session_transcript,
            "session_transcript",
            "The transcript of a session (a session id): every turn with its author and the "
            "model's reply, and the commands typed in it; erased turns show as erased. Read-only.",
        ),
        (
            memory_search,
            "memory_search",
            "Search the memory records conversations were read into (facts, states, summaries) for "
            "every word of a query: at most 10 records as JSON, best first, with the turns and records "
            "each rests on (follow them with lineage_backward). Erased and retracted records are "
            "never found. Read-only.",
        ),
    ]
    for fn, name, description in tools:
        server.add_tool(fn, name=name, description=description, annotations=read_only, structured_output=False)
    return server


async def _dumps(data: Awaitable[dict[str, object]]) -> str:
    return json.dumps(await data, indent=2, ensure_ascii=False)

"""Mods use MCP servers' tools (docs/mcp.md, Consume).

`McpTools` is the host's side of every ``mcp_server(...)`` the loaded mods declare. Nothing
starts when the host opens: the first model call that offers tools connects every declared
server (a stdio subprocess, or streamable HTTP), lists its tools and offers each as
``{server}.{tool}`` beside the mods' own tools. A tool the mod declares read-only
(``mcp_server(read_only_tools=...)``, or annotated ``readOnlyHint`` by a server the mod
trusts with ``trust_annotations=True``, as listed again at the call) runs when the model
calls it; any other becomes a pending action (type ``mcp.call``, payload
``{"server", "tool", "input"}``) that runs only when the user confirms it, its result then
delivered to the session as a notification turn. A server that fails to start, list or
answer fails only what needed it (its tools are not offered; a call gets its message), and
is tried again at the next need: a call or a confirmation naming it tries at once, a model
call offering tools at most every `RETRY_AFTER` seconds (so a broken server does not slow
every turn). Each connection lives in a task of the host's task group;
closing the host stops every server: a stdio server's process is ended and reaped.

The ``mcp`` package (extra ``mcp``) is imported only when a server is first connected.
"""

from __future__ import annotations

import json
import re
import secrets
import tempfile
from collections import OrderedDict
from collections.abc import Callable, Coroutine, Mapping
from datetime import datetime
from typing import IO, TYPE_CHECKING, Any, Final, final

import anyio

from modular_sdk import Mod, ModularError, SessionId, TurnId
from modular_sdk._frozen import freeze_object, thaw_object
from modular_sdk._mcp import McpServer

from ..models._protocol import ToolCall, ToolResult, ToolSpec
from ..stores._approvals import ApprovalStore, confirmed_by, rule_for
from ..stores._errors import StoreError
from ..stores._protocol import Store
from ..stores._trace_records import ProposedActionRecord
from ..stores._traces import TraceStore
from ..traces._types import PendingAction
from ._extra import McpUnavailableError, require_mcp
from ._process import ServerMark

if TYPE_CHECKING:
    from mcp import Client, StdioServerParameters
    from mcp.types import CallToolResult, Tool

__all__ = ["MCP_CALL", "McpTools"]

MCP_CALL: Final = "mcp.call"
"""The type of the pending action a writing MCP tool call becomes."""
_MAX_TOOLS: Final = 1000  # per server: a listing that never ends cannot hang a turn
_MAX_PAGES: Final = 100
_KEEP: Final = 1024
_MAX_TEXT: Final = 1_000_000  # characters of one tool result the model is given
_MAX_DESCRIPTION: Final = 2_000
_TOOL_NAME: Final = re.compile(r"[A-Za-z0-9_-][A-Za-z0-9_.-]{0,63}")
RETRY_AFTER: Final = 30.0
"""Seconds before a model call offers tools again tries a server that failed (a direct call always tries)."""


@final
class _Connection:
    """One declared server: its live client and tools while connected, else why not."""

    def __init__(self, mod: Mod, server: McpServer) -> None:
        self.mod = mod
        self.server = server
        self.client: Client | None = None
        self.tools: dict[str, Tool] = {}
        self.error: str | None = None
        self.ready = anyio.Event()
        self.scope: anyio.CancelScope | None = None
        self.attempt = 0  # which connection attempt the fields above describe
        self.failed_at: float | None = None  # anyio.current_time() of the last failed attempt
        self.said = ""  # how the last attempt's stdio server ended: its exit status and last stderr lines
        self.ended = anyio.Event()  # set when the current attempt's task has ended (its server reaped)


@final
class McpTools:
    """The MCP servers of the loaded mods (by server id: `ModTables` refuses one id declared
    twice), for one host (see the module docstring)."""

    def __init__(
        self,
        servers: Mapping[str, tuple[Mod, McpServer]],
        *,
        store: Store,
        clock: Callable[[], datetime],
        timeout: float | None,
        start: Callable[[Callable[[], Coroutine[object, object, None]]], None],
        scrub: Callable[[str], str] | None = None,
    ) -> None:
        self._connections = {server_id: _Connection(mod, server) for server_id, (mod, server) in servers.items()}
        self._store = store
        self._clock = clock
        self._timeout = timeout
        self._start = start  # runs a connection in the host's task group (its close stops it)
        self._scrub = scrub  # the model's secret filter: a server's answers and errors pass it
        self._lock = anyio.Lock()
        # What each recent turn proposed, until its Submission takes it (a turn that fails
        # never does: only the latest _KEEP turns are kept).
        self._proposed: OrderedDict[str, list[PendingAction]] = OrderedDict()

    @property
    def declared(self) -> bool:
        """Whether any loaded mod declares an MCP server."""
        return bool(self._connections)

    def failures(self) -> dict[str, str]:
        """Why each declared server that is not connected is not (after `specs` tried them)."""
        return {
            server_id: connection.error or f"MCP server {server_id!r} is not connected"
            for server_id, connection in self._connections.items()
            if connection.client is None
        }

    # -- connecting -------------------------------------------------------------------------
    async def specs(self) -> tuple[ToolSpec, ...]:
        """The tools of every declared server, as ``{server}.{tool}``; connects what is not connected."""
        if not self._connections:
            return ()
        async with self._lock:
            now = anyio.current_time()
            for connection in self._connections.values():
                failed_at = connection.failed_at
                if connection.client is None and (failed_at is None or now - failed_at >= RETRY_AFTER):
                    await self._connect(connection)
        out: list[ToolSpec] = []
        for server_id, connection in self._connections.items():
            for name, listed in connection.tools.items():
                description = (listed.description or listed.title or f"the tool {name!r} of the MCP server {server_id!r}")[:_MAX_DESCRIPTION]
                if not _trusted(connection.server, listed):
                    description += " (runs only after the user confirms it)"
                out.append(ToolSpec(name=f"{server_id}.{name}", description=description, input_schema=dict(listed.input_schema)))
        return tuple(out)

    async def _connect(self, connection: _Connection) -> None:
        connection.attempt += 1
        connection.ready, connection.error, connection.scope = anyio.Event(), None, None
        connection.ended, connection.said = anyio.Event(), ""
        attempt, ready, ended = connection.attempt, connection.ready, connection.ended
        try:
            self._start(lambda: self._keep(connection, attempt, ready, ended))
        except ModularError as closed:  # the host is closing
            connection.error = str(closed)
            return
        with anyio.move_on_after(self._timeout) as waited:
            await ready.wait()
        if waited.cancelled_caught:
            _stop(connection)
            connection.error = (
                f"MCP server {connection.server.id!r} of mod {connection.mod.id!r} did not answer within "
                f"{self._timeout:g} s; check that it starts and speaks MCP"
            )
        connection.failed_at = None if connection.client is not None else anyio.current_time()

    async def _keep(self, connection: _Connection, attempt: int, ready: anyio.Event, ended: anyio.Event) -> None:
        """Hold one server's connection open until the host closes or the server fails.

        Writes ``connection`` only while ``attempt`` is its current one: an attempt that ends
        after a newer one started (a server that died) leaves the newer one alone.
        """
        server = connection.server

        def current() -> bool:
            return connection.attempt == attempt

        mark: ServerMark | None = None  # what a stdio server starts, ended with it
        errlog: IO[str] | None = None  # a stdio server's standard error, read when it fails
        try:
            with anyio.CancelScope() as scope:
                if current():
                    connection.scope = scope
                require_mcp(f"the MCP server {server.id!r} of mod {connection.mod.id!r}")
                from mcp import Client
                from mcp.client._transport import Transport
                from mcp.client.stdio import stdio_client

                target: Transport | str
                if server.command is not None:
                    mark = ServerMark()  # what it starts is ended with it, however it ends (docs/embedding.md)
                    errlog = tempfile.TemporaryFile("w+", encoding="utf-8", errors="replace")
                    target = stdio_client(_reporting_exit(server, mark.env), errlog=errlog)
                else:
                    assert server.url is not None
                    target = server.url
                async with Client(target) as client:
                    if mark is not None:
                        await mark.started()
                    tools = await _list_tools(client)
                    if current():
                        connection.client, connection.tools = client, tools
                    ready.set()
                    await anyio.sleep_forever()
        except McpUnavailableError as missing:
            if current():
                connection.error = str(missing)
        except Exception as exc:  # a server that fails to start, list or stay up: only its calls fail
            if current():
                connection.error = f"MCP server {server.id!r} of mod {connection.mod.id!r} failed: {_describe(exc)}{_said(errlog)}"
        finally:
            if current():
                connection.client, connection.tools = None, {}
                connection.said = _said(errlog)  # the process has ended and been reaped by now
            if errlog is not None:
                errlog.close()
            ready.set()
            if mark is not None:
                with anyio.CancelScope(shield=True):
                    await mark.end()
            ended.set()

    # -- calling ----------------------------------------------------------------------------
    def serves(self, tool_name: str) -> bool:
        """Whether ``tool_name`` (``{server}.{tool}``) names a tool of a declared server."""
        server_id, dot, _ = tool_name.partition(".")
        return bool(dot) and server_id in self._connections

    async def call(self, session_id: SessionId, turn_id: TurnId, call: ToolCall, call_id: str) -> ToolResult:
        """The model called ``{server}.{tool}``: run it now when read-only, else propose it."""

        def result(output: str | None, error: str | None = None) -> ToolResult:
            return ToolResult(call_id=call_id, name=call.name, input=call.input, output=output, error=error)

        server_id, _, name = call.name.partition(".")
        connection = self._connections[server_id]
        if connection.client is None:
            async with self._lock:
                if connection.client is None:
                    await self._connect(connection)
        if connection.client is None:
            return result(None, connection.error or f"MCP server {server_id!r} is not connected")
        listed = connection.tools.get(name)
        if listed is None:
            known = ", ".join(repr(f"{server_id}.{t}") for t in connection.tools) or "none"
            return result(None, f"unknown tool {call.name!r}; the tools of MCP server {server_id!r} are: {known}")
        if _trusted(connection.server, listed) and name not in connection.server.read_only_tools:
            # Trusted on the server's word (trust_annotations=True): its word as it is now, not
            # as it was listed; a tool re-listed as a writer is proposed like any writer.
            try:
                with anyio.fail_after(self._timeout):
                    connection.tools = await _list_tools(connection.client)
            except Exception as exc:
                return result(None, f"MCP server {server_id!r} could not list its tools again before {call.name!r} ran: {_describe(exc)}")
            listed = connection.tools.get(name)
            if listed is None:
                return result(None, f"MCP server {server_id!r} no longer lists {call.name!r}; it did not run")
        if _trusted(connection.server, listed):
            output, error = await self._run(connection, name, thaw_object(call.input))
            return result(output, error)
        store = self._store
        if not isinstance(store, TraceStore):
            return result(
                None,
                f"{call.name!r} writes, so it needs the user's confirmation, and this host's store keeps no "
                "pending actions; it did not run",
            )
        record = ProposedActionRecord(
            id=f"act_{secrets.token_hex(6)}",
            type=MCP_CALL,
            payload=freeze_object({"server": server_id, "tool": name, "input": thaw_object(call.input)}, type_name="the action payload"),
            mod_id=connection.mod.id,
            session_id=session_id,
            turn_id=turn_id,
            created_at=self._clock(),
        )
        try:
            await store.propose_actions([record])
            rule = await rule_for(store, record)  # a standing approval (docs/protocols.md) confirms it at once
            if rule is not None and isinstance(store, ApprovalStore):
                try:
                    await store.decide_by_rule(confirmed_by(record, rule, self._clock()), rule.id)
                except StoreError:  # revoked meanwhile: it waits for the user like any other
                    rule = None
        except StoreError as exc:
            return result(None, f"{call.name!r} needs the user's confirmation, and it could not be recorded: {exc}")
        if rule is not None:  # allowed for good: it runs now, in this turn, its answer to the model
            output, error = await self._run(connection, name, thaw_object(call.input))
            return result(output, error)
        while len(self._proposed) >= _KEEP and turn_id not in self._proposed:
            self._proposed.popitem(last=False)
        self._proposed.setdefault(turn_id, []).append(
            PendingAction(
                id=record.id,
                type=record.type,
                payload=record.payload,
                mod_id=record.mod_id,
                session_id=record.session_id,
                turn_id=record.turn_id,
                created_at=record.created_at,
            )
        )
        return result(
            f"awaiting confirmation: {call.name!r} changes things, so it runs only when the user confirms "
            f"action {record.id!r}; its result will arrive in this session as a notification"
        )

    def proposed(self, turn_id: str) -> tuple[PendingAction, ...]:
        """The ``mcp.call`` actions turn ``turn_id`` proposed (for its `Submission`), once."""
        return tuple(self._proposed.pop(turn_id, ()))

    async def confirmed(self, record: ProposedActionRecord) -> tuple[str, str | None]:
        """Run a confirmed ``mcp.call`` action's tool: (text, error), every secret replaced."""
        text, error = await self._confirmed(record)
        scrub = self._scrub
        if scrub is None:
            return text, error
        return scrub(text), None if error is None else scrub(error)

    async def _confirmed(self, record: ProposedActionRecord) -> tuple[str, str | None]:
        payload = thaw_object(record.payload)
        assert isinstance(payload, dict)
        server_id, name, arguments = payload.get("server"), payload.get("tool"), payload.get("input")
        connection = self._connections.get(server_id) if isinstance(server_id, str) else None
        if connection is None or not isinstance(name, str) or not isinstance(arguments, dict):
            message = f"action {record.id!r} names MCP server {server_id!r}, which no loaded mod declares; it did not run"
            return message, message
        if connection.client is None:
            async with self._lock:
                if connection.client is None:
                    await self._connect(connection)
        if connection.client is None:
            message = connection.error or f"MCP server {server_id!r} is not connected"
            return message, message
        output, error = await self._run(connection, name, arguments)
        return (error if error is not None else output or ""), error

    async def _run(self, connection: _Connection, name: str, arguments: dict[str, Any]) -> tuple[str | None, str | None]:
        """Call one tool: (output, None), or (None, what went wrong); every secret in either
        replaced (the one place a server's answer comes in, called now or once confirmed)."""
        output, error = await self._call(connection, name, arguments)
        scrub = self._scrub
        if scrub is None:
            return output, error
        return None if output is None else scrub(output), None if error is None else scrub(error)

    async def _call(self, connection: _Connection, name: str, arguments: dict[str, Any]) -> tuple[str | None, str | None]:
        client = connection.client
        server_id = connection.server.id
        if client is None:
            return None, connection.error or f"MCP server {server_id!r} is not connected"
        try:
            with anyio.fail_after(self._timeout):
                answer = await client.call_tool(name, arguments)
        except TimeoutError:
            return None, f"MCP tool {server_id}.{name} did not answer within {self._timeout:g} s"
        except Exception as exc:  # the server died or refused: this call fails, the turn goes on
            said = ""
            if _broken(exc):  # reconnect at the next need
                connection.client = None
                _stop(connection)
                with anyio.move_on_after(_REAPED_WITHIN):  # how it ended, once its process is reaped
                    await connection.ended.wait()
                said = connection.said
            return None, f"MCP tool {server_id}.{name} failed: {_describe(exc)}{said}"
        text = _text_of(answer)
        if answer.is_error:
            return None, f"MCP tool {server_id}.{name} failed: {text}"
        return text, None


_EXIT_MARK: Final = "host-sim: the MCP server exited with status "
_STDERR_LINES: Final = 5
_STDERR_CHARS: Final = 2_000
_REAPED_WITHIN: Final = 5.0  # seconds a failed call waits for a dead server's last words


def _reporting_exit(server: McpServer, marked: Mapping[str, str]) -> StdioServerParameters:
    """``server``'s command, run by ``/bin/sh`` so its exit status lands on its standard error.

    The stdio transport keeps the process to itself; a line ``_EXIT_MARK<status>`` after the
    server's own output is how a failure can say why the server stopped.
    """
    from mcp import StdioServerParameters

    assert server.command is not None
    script = f'"$0" "$@"; s=$?; printf "\\n{_EXIT_MARK}%d\\n" "$s" >&2; exit "$s"'
    return StdioServerParameters(
        command="/bin/sh",
        args=["-c", script, server.command, *server.args],
        env={**(server.env or {}), **marked},  # the mark: what it starts is found and ended with it
    )


def _said(errlog: IO[str] | None) -> str:
    """`` (exit status 1; its standard error ended: ...)``: how a stdio server ended, when known."""
    if errlog is None or errlog.closed:
        return ""
    try:
        errlog.flush()
        errlog.seek(0, 2)
        errlog.seek(max(0, errlog.tell() - 64_000))
        text = errlog.read()
    except (OSError, ValueError):
        return ""
    status = None
    lines: list[str] = []
    for line in text.splitlines():
        if line.startswith(_EXIT_MARK):
            status = line.removeprefix(_EXIT_MARK).strip()
        elif line.strip():
            lines.append(line.strip())
    tail = " | ".join(lines[-_STDERR_LINES:])[-_STDERR_CHARS:]
    parts = ([] if status is None else [f"exit status {status}"]) + ([f"its standard error ended: {tail}"] if tail else [])
    return f" ({'; '.join(parts)})" if parts else ""


def _stop(connection: _Connection) -> None:
    """End the current attempt's connection (its task ends the server on the way out)."""
    if connection.scope is not None:
        connection.scope.cancel()


async def _list_tools(client: Client) -> dict[str, Tool]:
    tools: dict[str, Tool] = {}
    cursor: str | None = None
    for _ in range(_MAX_PAGES):
        page = await client.list_tools(cursor=cursor)
        for listed in page.tools:  # a server's listing is outside input: odd names are not offered
            if len(tools) < _MAX_TOOLS and _TOOL_NAME.fullmatch(listed.name):
                tools.setdefault(listed.name, listed)
        cursor = page.next_cursor
        if cursor is None:
            break
    return tools


def _trusted(server: McpServer, listed: Tool) -> bool:
    """Whether ``listed`` runs without the user's confirmation: the mod's declaration says it
    only reads (``read_only_tools``), or the mod trusts the server's annotations
    (``trust_annotations=True``) and the server annotates it ``readOnlyHint`` (docs/embedding.md)."""
    if listed.name in server.read_only_tools:
        return True
    return server.trust_annotations and listed.annotations is not None and listed.annotations.read_only_hint is True


def _text_of(answer: CallToolResult) -> str:
    from mcp.types import TextContent

    parts: list[str] = []
    for block in answer.content:
        if isinstance(block, TextContent):
            parts.append(block.text)
        else:
            parts.append(json.dumps(block.model_dump(mode="json", by_alias=True, exclude_none=True), sort_keys=True))
    if not parts and answer.structured_content is not None:
        parts.append(json.dumps(answer.structured_content, sort_keys=True))
    text = "\n".join(parts).encode("utf-8", "backslashreplace").decode("utf-8")  # lone surrogates: quoted, storable
    if len(text) > _MAX_TEXT:
        return text[:_MAX_TEXT] + f"\n[truncated: the tool answered {len(text):,} characters; the first {_MAX_TEXT:,} are shown]"
    return text


def _broken(exc: BaseException) -> bool:
    """Whether ``exc`` means the connection is gone (not only this call refused)."""
    from mcp import MCPError
    from mcp_types.jsonrpc import CONNECTION_CLOSED

    return not isinstance(exc, MCPError) or exc.code == CONNECTION_CLOSED


def _describe(exc: BaseException) -> str:
    """One line for an error: the innermost messages of a group, the type when there is none."""
    if isinstance(exc, BaseExceptionGroup):
        return "; ".join(_describe(inner) for inner in exc.exceptions)
    text = str(exc).strip()
    return f"{type(exc).__name__}: {text}" if text else type(exc).__name__



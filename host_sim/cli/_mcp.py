"""``host-sim mcp [--store PATH|URL] [--http HOST:PORT]``: serve a store's lineage over MCP, read-only.

Serves `lineage_mcp_server`'s five read-only tools (``lineage_lookup``,
``lineage_forward``, ``lineage_backward``, ``session_transcript``, ``memory_search``) over stdio, or over
streamable HTTP at ``http://HOST:PORT/mcp`` with ``--http``. The store is opened read-only
for each call and closed after it: nothing is written, no ``-wal``/``-shm`` file is created
beside a closed SQLite store, and a host may keep writing the store meanwhile (each call
sees what it has committed). Needs the extra ``mcp``.
"""

from __future__ import annotations

import argparse
import os
import signal
import sys
from functools import partial
from types import FrameType
from typing import TYPE_CHECKING

import anyio

from ..lineage_mcp._server import StoreReader, lineage_server
from ..mcp._extra import McpUnavailableError, require_mcp
from ..stores._errors import StoreError
from ..stores._postgres import PostgresStore
from ..stores._protocol import Store
from ..stores._sqlite import SqliteStore
from ._options import DEFAULT_STORE, default_store_path, is_store_url, shown_store

if TYPE_CHECKING:
    from starlette.applications import Starlette

__all__ = ["register", "run_mcp"]

_PROG = "host-sim mcp"


def register(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Add the ``mcp`` subcommand."""
    parser = subparsers.add_parser(
        "mcp",
        help="serve a store's lineage over MCP (read-only)",
        description=(
            "Serve the lineage of a store as a read-only MCP server: lineage_lookup (why does "
            "this commit, output, session or task exist), lineage_forward, lineage_backward and "
            "session_transcript, each annotated read-only. Speaks MCP over stdio (for an agent "
            "that starts it), or streamable HTTP with --http. Writes nothing to the store."
        ),
    )
    parser.add_argument(
        "--store",
        metavar="PATH|URL",
        default=None,
        help="the SQLite store to read, or a postgresql://... URL of a PostgresStore "
        f"(default: $HOST_SIM_STORE or {DEFAULT_STORE})",
    )
    parser.add_argument(
        "--http",
        metavar="HOST:PORT",
        type=_address,
        default=None,
        help="serve streamable HTTP at http://HOST:PORT/mcp instead of stdio",
    )
    parser.set_defaults(handler=run_mcp)


def _interrupt(signum: int, frame: FrameType | None) -> None:
    raise KeyboardInterrupt


async def _serve_http(app: Starlette, host: str, port: int) -> None:
    """Serve ``app`` with uvicorn (the ``mcp`` package's own server for streamable HTTP)."""
    import uvicorn

    await uvicorn.Server(uvicorn.Config(app, host=host, port=port, log_level="warning")).serve()


def _address(text: str) -> tuple[str, int]:
    host, sep, port = text.rpartition(":")
    if not sep or not host or not port.isdigit() or not 0 < int(port) < 65536:
        raise argparse.ArgumentTypeError(
            f"{text!r} is not HOST:PORT; write e.g. --http 127.0.0.1:8765"
        )
    return host.strip("[]"), int(port)



def _opener(spec: str) -> Store:
    """The store ``--store`` names, to read only: a PostgreSQL URL, else an existing SQLite file."""
    return PostgresStore(spec, create=False) if is_store_url(spec) else SqliteStore(spec, create=False, read_only=True)


async def _check(spec: str) -> None:
    store = _opener(spec)
    await store.open()
    await store.close()


def run_mcp(args: argparse.Namespace) -> int:
    """Run ``host-sim mcp`` until its client disconnects (stdio) or Ctrl-C; returns the exit code.

    Ctrl-C surfaces as `KeyboardInterrupt`, which ``host_sim._cli.main`` turns into one line
    and status 130.
    """
    spec: str = args.store if args.store is not None else default_store_path()
    shown = shown_store(spec)
    if not is_store_url(spec) and not os.path.exists(spec):
        print(
            f"{_PROG}: error: no store at {shown!r}; pass --store PATH of a store a host wrote "
            "(host-sim run, chat and demo write one)",
            file=sys.stderr,
        )
        return 1
    try:
        require_mcp(_PROG)
        anyio.run(_check, spec)  # an unusable store fails now, not at the first call
    except (McpUnavailableError, StoreError) as exc:
        print(f"{_PROG}: error: {exc}", file=sys.stderr)
        return 1
    server = lineage_server(StoreReader(partial(_opener, spec)))
    if args.http is None:
        anyio.run(server.run_stdio_async)  # until the client closes the connection
        return 0
    host, port = args.http
    print(f"serving the lineage of {shown} at http://{host}:{port}/mcp (read-only); Ctrl-C stops", file=sys.stderr)
    # uvicorn takes Ctrl-C, shuts down, then raises the signal again: this handler makes that a
    # KeyboardInterrupt, which host_sim._cli.main reports as every command's Ctrl-C (status 130).
    previous = signal.signal(signal.SIGINT, _interrupt)
    try:
        anyio.run(partial(_serve_http, server.streamable_http_app(host=host), host, port))
    finally:
        signal.signal(signal.SIGINT, previous)
    return 0

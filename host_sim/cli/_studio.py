"""``host-sim studio [MOD ...]``: the host in a browser, for mod authors (docs/studio.md).

Serves `host_sim.studio._app.StudioApp` with uvicorn on loopback (the extra ``studio``) and
prints its URL, with a fresh random access token, as the first line of standard output.
The server runs on asyncio, in this process, on the host it opened: one source of truth.
"""

from __future__ import annotations

import argparse
import importlib.util
import secrets
import socket
import sys

import anyio

from modular_sdk import ModularError

from ._model_option import add_model_options, chosen_model
from ._options import SERVED_STORE_HELP, add_store, add_timeout, open_store
from ._session_io import make_host, report_error

__all__ = ["StudioUnavailableError", "register"]

_PROG = "host-sim studio"

_DESCRIPTION = """\
Serve a local web app to see and drive the host: its sessions as a lineage tree, each turn
with its id, author and time, replies as they stream, a message box with typeahead for
slash commands and their arguments, Fork here / Provenance / Forget... / Retract... on
each turn, pending actions and standing approvals, and the mods' views.

The first line printed is the URL to open (it holds a random access token; without it
every request is refused). It listens on 127.0.0.1 unless told otherwise. Needs the
extra 'studio'. Ctrl-C stops it.
"""


class StudioUnavailableError(ModularError, ImportError):
    """A package of the extra ``studio`` (``uvicorn``, ``ag-ui-protocol``) is not installed."""


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    parser = sub.add_parser(
        "studio",
        help="serve the host to a browser on loopback: chat, forks, provenance, erasure, views",
        description=_DESCRIPTION,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument(
        "specs", nargs="*", metavar="MOD", help="mod spec: path/to/file.py or package.module, optionally :attr"
    )
    add_model_options(parser)
    add_store(parser, store_help=SERVED_STORE_HELP, no_store_help="keep sessions in memory only (gone when it stops)")
    parser.add_argument("--host", default="127.0.0.1", help="address to listen on (default: 127.0.0.1, loopback)")
    parser.add_argument("--port", type=int, default=0, help="port to listen on (default: 0, a free one)")
    add_timeout(parser, default=30.0, what="each mod handler")
    parser.set_defaults(handler=_main)


def _require() -> None:
    for module, package in (("uvicorn", "uvicorn"), ("ag_ui", "ag-ui-protocol")):
        if importlib.util.find_spec(module) is None:
            raise StudioUnavailableError(
                f"{_PROG} needs the '{package}' package, which is not installed; install the extra: "
                "pip install 'modular-chat-sdk[studio]'"
            )


async def serve(args: argparse.Namespace) -> None:
    """Open the host, bind, print the URL, serve until cancelled."""
    import uvicorn

    from ..studio._app import StudioApp

    listener = socket.socket(socket.AF_INET6 if ":" in args.host else socket.AF_INET, socket.SOCK_STREAM)
    listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
        listener.bind((args.host, args.port))
    except OSError as error:
        listener.close()
        raise StudioUnavailableError(f"cannot listen on {args.host}:{args.port} ({error.strerror}); pick another --port") from None
    listener.listen(128)  # connections wait in the backlog from the moment the URL is printed
    port = listener.getsockname()[1]
    shown = f"[{args.host}]" if ":" in args.host else args.host
    names = {f"{shown}:{port}"}
    if args.host in ("127.0.0.1", "::1", "localhost"):
        names |= {f"127.0.0.1:{port}", f"localhost:{port}", f"[::1]:{port}"}
    token = secrets.token_urlsafe(24)
    with open_store(args) as (store, _path):
        async with make_host(args.specs, store=store, timeout=args.timeout, model=chosen_model(args)) as host:
            app = StudioApp(host, token=token, hosts=frozenset(names))
            # An open event stream never ends by itself: Ctrl-C waits at most 2 s for it.
            config = uvicorn.Config(app, log_level="warning", lifespan="off", access_log=False, timeout_graceful_shutdown=2)
            server = uvicorn.Server(config)
            print(f"http://{shown}:{port}/?token={token}", flush=True)
            print("host-sim studio: open the URL above in a browser; Ctrl-C stops it", file=sys.stderr, flush=True)
            await server.serve(sockets=[listener])


def _main(args: argparse.Namespace) -> int:
    try:
        _require()
        anyio.run(serve, args, backend="asyncio")
    except BaseException as exc:  # noqa: BLE001 - report_error re-raises what it does not own
        return report_error("studio", exc)
    return 0

"""``host-sim acp [MOD ...]``: the host as an ACP agent over stdio, for editors (docs/protocols.md).

An editor (Zed and others) starts this command and speaks the Agent Client Protocol with
it on standard input and output (JSON-RPC, newline-delimited); everything else the command
says goes to standard error. The protocol's SDK (the extra ``acp``) is imported only when
the command runs; it is built on asyncio, so the command runs on asyncio.
"""

from __future__ import annotations

import argparse
import contextlib
import importlib.util
import os
import stat
import sys
from collections.abc import Iterator
from typing import TextIO

import anyio

from modular_sdk import ModularError

from ._model_option import add_model_options, chosen_model
from ._options import SERVED_STORE_HELP, add_store, add_timeout, open_store
from ._session_io import make_host, report_error

__all__ = ["AcpUnavailableError", "NotAPipeError", "register"]

_PROG = "host-sim acp"

MODEL_TIMEOUT = 120.0
"""`Host`'s default ``model_timeout``, which this command keeps."""

_DESCRIPTION = """\
Speak the Agent Client Protocol (ACP) on standard input and output, so an editor such as
Zed drives the host: its sessions are the host's sessions (kept in the store), its prompts
are turns (or /name args, a slash command of a loaded mod), and it asks you before an
action a model proposed runs. Logs go to standard error. Needs the extra 'acp'.

An editor starts it; in Zed's settings.json:

  "agent_servers": {"host-sim": {"command": "host-sim", "args": ["acp", "mods/review.py"]}}
"""


class AcpUnavailableError(ModularError, ImportError):
    """The ``agent-client-protocol`` package is not installed (the extra ``acp``)."""


class NotAPipeError(ModularError, ValueError):
    """Standard input or output of ``host-sim acp`` is a file: the protocol needs pipes."""


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    parser = sub.add_parser(
        "acp",
        help="serve the host to an editor over the Agent Client Protocol (stdio)",
        description=_DESCRIPTION,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument(
        "specs", nargs="*", metavar="MOD", help="mod spec: path/to/file.py or package.module, optionally :attr"
    )
    add_model_options(parser)
    add_store(
        parser,
        store_help=SERVED_STORE_HELP,
        no_store_help="keep sessions in memory only (gone when the editor stops the agent)",
    )
    add_timeout(parser, default=30.0, what="each mod handler")
    parser.set_defaults(handler=_main)


def require_acp() -> None:
    """Raise `AcpUnavailableError`, naming the extra, when the ``acp`` package is missing."""
    if importlib.util.find_spec("acp") is None:
        raise AcpUnavailableError(
            f"{_PROG} needs the 'agent-client-protocol' package, which is not installed; install "
            "the extra: pip install 'modular-chat-sdk[acp]'"
        )


def check_pipes() -> None:
    """Refuse, before the protocol starts, a standard input or output that is a regular file.

    An editor connects pipes (or a socket, or a terminal to try it by hand); asyncio cannot
    read or write a regular file as a stream.
    """
    for name, stream in (("standard input", sys.stdin), ("standard output", sys.stdout)):
        try:
            mode = os.fstat(stream.fileno()).st_mode
        except (OSError, ValueError):
            mode = 0
        if not (stat.S_ISFIFO(mode) or stat.S_ISSOCK(mode) or stat.S_ISCHR(mode)):
            raise NotAPipeError(
                f"the Agent Client Protocol runs on standard input and output, and {name} "
                "is not a pipe; let an editor start it (Zed: agent_servers in settings.json), "
                "or connect it with pipes: some-acp-client -- host-sim acp MOD"
            )


@contextlib.contextmanager
def _stdout_kept_for_the_protocol() -> Iterator[TextIO]:
    """Standard output, for the protocol alone; file descriptor 1 writes to standard error meanwhile.

    A mod that prints, or a program it starts, then writes to standard error instead of
    corrupting the JSON-RPC stream the editor reads.
    """
    sys.stdout.flush()
    protocol = os.dup(1)
    os.dup2(2, 1)
    try:
        with open(protocol, "w", closefd=False) as stream:
            yield stream
    finally:
        sys.stdout.flush()
        os.dup2(protocol, 1)
        os.close(protocol)


async def serve(args: argparse.Namespace) -> None:
    """Run the agent until the editor closes standard input."""
    from acp import run_agent, stdio_streams
    from acp.core import DEFAULT_STDIO_BUFFER_LIMIT_BYTES

    from ..acp._agent import HostAgent
    from ._version import version

    with _stdout_kept_for_the_protocol() as protocol_out:
        with contextlib.redirect_stdout(protocol_out):  # what the SDK connects its writer to
            reader, writer = await stdio_streams(limit=DEFAULT_STDIO_BUFFER_LIMIT_BYTES)
        with open_store(args) as (store, _path):
            async with make_host(args.specs, store=store, timeout=args.timeout, model=chosen_model(args)) as host:
                async with anyio.create_task_group() as tasks:
                    # An action a standing approval ran tells its result within a handler's
                    # time and a model call's: the prompt waits that long for it at most.
                    settle = args.timeout + MODEL_TIMEOUT
                    agent = HostAgent(host, tasks=tasks, version=version(), settle=settle)
                    await run_agent(agent, writer, reader, use_unstable_protocol=True)
                    tasks.cancel_scope.cancel()


def _main(args: argparse.Namespace) -> int:
    try:
        require_acp()
        check_pipes()
        anyio.run(serve, args, backend="asyncio")
    except BaseException as exc:  # noqa: BLE001 - report_error re-raises what it does not own
        return report_error("acp", exc)
    return 0

"""``host-sim`` (also ``python -m host_sim``): the host simulator's command line.

Each subcommand lives in ``host_sim/cli/_<name>.py`` with ``register(subparsers)``, which
adds its parser and sets ``handler`` to a function ``(args) -> int`` (the exit code).
"""

from __future__ import annotations

import argparse
import importlib
import signal
import sys
from collections.abc import Callable, Sequence
from typing import NoReturn, cast

from . import _interrupted_while_starting
from .cli._endings import early_ending, path_failure, quiet_stdout, say_interrupted, say_path_failure
from .cli._version import DISTRIBUTION as DISTRIBUTION  # where the tests read it
from .cli._version import version

__all__ = ["main"]

SUBCOMMANDS = ("demo", "run", "chat", "manifest", "check", "lineage", "fsck", "forget", "emit", "trace", "memory", "mcp", "acp", "studio")


class _Parser(argparse.ArgumentParser):
    """argparse, with a usage error's message first and a pointer to ``--help`` after it.

    argparse prints the whole usage (six lines for ``run``) before the message; the
    message is what the user needs, so it comes first and alone.
    """

    def error(self, message: str) -> NoReturn:
        self.exit(2, f"{self.prog}: error: {message}\n(all options: {self.prog} --help)\n")


def build_parser() -> argparse.ArgumentParser:
    parser = _Parser(
        prog="host-sim",
        description="Run modular_sdk mods in the host simulator.",
    )
    parser.add_argument("--version", action="version", version=f"%(prog)s {version()}")
    # Every subparser is a _Parser too (argparse makes them of the parent's class).
    sub = cast(
        "argparse._SubParsersAction[argparse.ArgumentParser]",
        parser.add_subparsers(dest="command", required=True, metavar="COMMAND"),
    )
    for name in SUBCOMMANDS:
        module = importlib.import_module(f"host_sim.cli._{name}")
        register: Callable[[argparse._SubParsersAction[argparse.ArgumentParser]], None] = (
            module.register
        )
        register(sub)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Parse ``argv`` (default: ``sys.argv[1:]``), run the subcommand, return its exit code.

    Never a traceback for the two ways a user ends a command early: a closed standard
    output (``host-sim lineage --json | head -1``) ends quietly with status 0, as ``cat``
    does; Ctrl-C ends with one line on standard error and status 130 (128 + SIGINT).
    """
    command = "host-sim"
    if signal.getsignal(signal.SIGINT) is _interrupted_while_starting:  # from here on, main reports it
        signal.signal(signal.SIGINT, signal.default_int_handler)
    try:
        parser = build_parser()
        args = parser.parse_args(argv)
        command = f"host-sim {args.command}"
        handler: Callable[[argparse.Namespace], int] = args.handler
        code = handler(args)
        sys.stdout.flush()  # a closed pipe shows here, not at exit
        return code
    except BaseException as exc:  # noqa: BLE001 - only the two endings below are handled
        ending = early_ending(exc)
        if ending == "pipe closed":
            quiet_stdout()
            return 0
        if ending == "interrupted":
            say_interrupted(command)
            return 130
        failure = path_failure(exc)  # every command's OSError about a path: one line, never a traceback
        if failure is not None:
            say_path_failure(command, failure)
            return 1
        raise


if __name__ == "__main__":
    sys.exit(main())

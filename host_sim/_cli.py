"""``host-sim`` (also ``python -m host_sim``): the host simulator's command line.

Each subcommand lives in ``host_sim/cli/_<name>.py`` with ``register(subparsers)``, which
adds its parser and sets ``handler`` to a function ``(args) -> int`` (the exit code).
"""

from __future__ import annotations

import argparse
import importlib
import importlib.metadata
import sys
from collections.abc import Callable, Sequence

__all__ = ["main"]

DISTRIBUTION = "modular-chat-sdk"
"""The name this project has on the package index (``pip install modular-chat-sdk``); the
import packages are ``modular_sdk`` and ``host_sim``. ``modular-sdk`` there is another project."""

SUBCOMMANDS = ("demo", "run", "chat", "manifest", "check", "lineage", "fsck", "forget", "emit", "trace")


def _version() -> str:
    try:
        return importlib.metadata.version(DISTRIBUTION)
    except importlib.metadata.PackageNotFoundError:  # run from a checkout without installing
        return "(not installed)"


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="host-sim",
        description="Run modular-sdk mods in the host simulator.",
    )
    parser.add_argument("--version", action="version", version=f"%(prog)s {_version()}")
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    for name in SUBCOMMANDS:
        module = importlib.import_module(f"host_sim.cli._{name}")
        register: Callable[[argparse._SubParsersAction[argparse.ArgumentParser]], None] = (
            module.register
        )
        register(sub)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Parse ``argv`` (default: ``sys.argv[1:]``), run the subcommand, return its exit code."""
    parser = build_parser()
    args = parser.parse_args(argv)
    handler: Callable[[argparse.Namespace], int] = args.handler
    return handler(args)


if __name__ == "__main__":
    sys.exit(main())

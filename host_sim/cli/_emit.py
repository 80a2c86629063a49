"""``host-sim emit --spool DIR TYPE JSON``: write one event to a host's spool.

What a git hook or another process runs to tell a host what really happened. ``TYPE`` is
``output`` or ``commit``; ``JSON`` holds the other fields (``{"session_id": ..., "output_id":
..., "kind": ...}`` or ``{"output_id": ..., "commit": ...}``). The event is written whole
or not at all (`host_sim.write_event`); the host (``Host(spool=DIR)``) applies it at most
once. Prints the event id. Exit status 0 when written, 2 for a bad event or a spool
folder that does not exist (emit never creates one).
"""

from __future__ import annotations

import argparse
import json
import os
import sys

from modular_sdk import InvalidArgumentError

from ..traces._spool import EVENT_TYPES, write_event

__all__ = ["register", "run_emit"]

DEFAULT_SPOOL = os.path.join(".host-sim", "spool")


def register(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Add the ``emit`` subcommand."""
    parser = subparsers.add_parser(
        "emit",
        help="write an event (an output, a commit) to a host's spool",
        description=(
            "Write one event to the spool directory a host consumes (Host(spool=DIR)). TYPE is "
            "'output' (JSON: session_id, output_id, kind) or 'commit' (JSON: output_id, commit). "
            "The file appears whole or not at all; the host applies it at most once. Prints the "
            "event id. The spool folder must exist (a host makes it when it starts): emit never "
            "creates it, so a mistyped path is an error rather than events no host reads."
        ),
    )
    parser.add_argument(
        "--spool",
        metavar="DIR",
        default=os.environ.get("HOST_SIM_SPOOL", DEFAULT_SPOOL),
        help=f"the spool directory (default: $HOST_SIM_SPOOL or {DEFAULT_SPOOL})",
    )
    parser.add_argument("type", metavar="TYPE", choices=EVENT_TYPES, help="output or commit")
    parser.add_argument("json", metavar="JSON", help='the event\'s fields, like \'{"output_id": "chg-1", "commit": "3f2a9c1"}\'')
    parser.add_argument("--id", metavar="ID", help="the event id (default: a new one); the same id is applied once")
    parser.set_defaults(handler=run_emit)


def run_emit(args: argparse.Namespace) -> int:
    try:
        fields = json.loads(args.json)
    except json.JSONDecodeError as exc:
        print(f"host-sim emit: JSON is not valid JSON ({exc.msg} at position {exc.pos}): {args.json!r}", file=sys.stderr)
        return 2
    if not isinstance(fields, dict):
        print(f"host-sim emit: JSON must be an object of the event's fields, got {args.json!r}", file=sys.stderr)
        return 2
    if "type" in fields and fields["type"] != args.type:
        print(f"host-sim emit: TYPE is {args.type!r} but JSON says 'type': {fields['type']!r}; drop it from JSON", file=sys.stderr)
        return 2
    if not os.path.isdir(args.spool):
        what = "is not a folder" if os.path.exists(args.spool) else "does not exist"
        print(
            f"host-sim emit: the spool {args.spool!r} {what}; a host makes its spool folder when it "
            "starts (Host(spool=DIR)), so check the path: an event written elsewhere is one no host "
            "reads (create the folder yourself, mkdir -p DIR, if no host has started yet)",
            file=sys.stderr,
        )
        return 2
    event = {**fields, "type": args.type}
    if args.id is not None:
        event["id"] = args.id
    try:
        ident = write_event(args.spool, event)
    except InvalidArgumentError as exc:
        print(f"host-sim emit: {exc}", file=sys.stderr)
        return 2
    except OSError as exc:
        print(f"host-sim emit: cannot write to the spool {args.spool!r} ({exc}); check the path", file=sys.stderr)
        return 2
    print(ident)
    return 0

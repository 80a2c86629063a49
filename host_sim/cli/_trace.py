"""``host-sim trace ID [--store PATH] [--json]``: print the trace an id leads to.

``ID`` is anything the trace index knows: a trace id, a task ref (``github:42``), a session
id, an output id or a commit hash. Reads the store read-only (it works while a host writes
it) and writes nothing: missing commits are shown as missing (no resolver runs).
Exit status 0 when found, 1 when no trace is found or the store cannot be read.
"""

from __future__ import annotations

import argparse
import json
import sys

import anyio

from ..stores._errors import StoreError
from ..stores._sqlite import SqliteStore
from ..traces._lineage_tool import lookup
from ._options import DEFAULT_STORE, default_store_path

__all__ = ["register", "run_trace"]


def register(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Add the ``trace`` subcommand."""
    parser = subparsers.add_parser(
        "trace",
        help="print the trace of a commit, output, session, task or trace id",
        description=(
            "Print why something exists: the trace ID leads to (a trace id, a task ref like "
            "github:42, a session id, an output id or a commit hash), with its origin, task, "
            "sessions and outputs with their commits. Reads the store without changing it."
        ),
    )
    parser.add_argument("id", metavar="ID", help="a trace id, task ref, session id, output id or commit")
    parser.add_argument(
        "--store",
        metavar="PATH",
        default=default_store_path(),
        help=f"the SQLite store (default: $HOST_SIM_STORE or {DEFAULT_STORE})",
    )
    parser.add_argument("--json", action="store_true", help="print the trace as JSON")
    parser.set_defaults(handler=run_trace)


async def _lookup(path: str, key: str) -> dict[str, object]:
    store = SqliteStore(path, read_only=True)
    await store.open()
    try:
        return await lookup(store, key)
    finally:
        await store.close()


def render(data: dict[str, object]) -> str:
    """The trace as text, one line per session and output."""
    lines = [f"trace {data['trace']}  origin {data['origin']}"]
    task = data.get("task")
    if isinstance(task, dict):
        title = task.get("snapshot", {}).get("title") if isinstance(task.get("snapshot"), dict) else None
        lines.append(f"  task {task['ref']}" + (f"  {title!r}" if title else ""))
    else:
        lines.append("  task (none)")
    sessions = data.get("sessions")
    for session in sessions if isinstance(sessions, list) else []:
        label = f"  {session['label']!r}" if session.get("label") else ""
        lines.append(f"  session {session['session_id']}{label}  joined {session['joined_at']}")
        for output in session.get("outputs", []):
            commit = output["commit"] or "(no commit yet)"
            lines.append(f"    {output['kind']} {output['output_id']}  commit {commit}")
    return "\n".join(lines)


def run_trace(args: argparse.Namespace) -> int:
    try:
        data = anyio.run(_lookup, args.store, args.id)
    except StoreError as exc:
        print(f"host-sim trace: {exc}", file=sys.stderr)
        return 1
    if "error" in data:
        print(f"host-sim trace: {data['error']}", file=sys.stderr)
        return 1
    print(json.dumps(data, indent=2, sort_keys=True) if args.json else render(data))
    return 0

"""``host-sim lineage [--store PATH|URL] [--json | --html FILE] [SESSION]``: how stored sessions relate.

Reads a `SqliteStore` a host wrote, or a `PostgresStore` when ``--store`` is a
``postgresql://`` URL (never creates one), and prints its sessions as a tree:
roots, their forks (``fork@<anchor ordinal>``) and spawns (with what triggered them),
labels and turn counts, then any other lineage edges. With SESSION, only that session's
chain: where it came from and what came from it.
"""

from __future__ import annotations

import argparse
import difflib
import json
import os
import sys
from collections.abc import Sequence
from pathlib import Path

import anyio

from modular_sdk import SessionId, UnknownSessionError
from modular_sdk._json import unstructure

from ..lineage._graph import LineageGraph
from ..lineage._render import conversation_lengths, render_lineage_tree, select_lineage_chain
from ..stores._errors import StoreError
from ..stores._postgres import PostgresStore, redact
from ..stores._protocol import Store
from ..stores._records import SessionRecord, StoredState
from ..stores._sqlite import SqliteStore
from ._forget import print_provenance
from ._options import DEFAULT_STORE, default_store_path, is_store_url

__all__ = ["DEFAULT_STORE", "register", "run_lineage", "turn_counts"]


_PROG = "host-sim lineage"


def register(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Add the ``lineage`` subcommand."""
    parser = subparsers.add_parser(
        "lineage",
        help="show the lineage tree of the sessions in a store",
        description=(
            "Print the sessions of a SQLite store as a lineage tree: root sessions, their "
            "forks (fork@ORDINAL: the anchor turn) and spawns (with the command or tool that "
            "made them), each with its label and turn count. With SESSION, print only its "
            "chain: its ancestors and its descendants."
        ),
    )
    parser.add_argument(
        "--store",
        metavar="PATH|URL",
        default=None,
        help="the SQLite store to read, or a postgresql://... URL of a PostgresStore "
        f"(default: $HOST_SIM_STORE or {DEFAULT_STORE})",
    )
    shape = parser.add_mutually_exclusive_group()
    shape.add_argument("--json", action="store_true", help="print JSON instead of a tree")
    shape.add_argument(
        "--html",
        metavar="FILE",
        help="write the tree as one self-contained HTML page to FILE (no network needed): "
        "forks at their anchor turns, spawns dashed, failed turns red; click a session to "
        "read its conversation",
    )
    parser.add_argument("session", nargs="?", metavar="SESSION", help="show only this session's chain")
    turn = parser.add_mutually_exclusive_group()
    turn.add_argument(
        "--forward",
        metavar="ID",
        help="what the host made of a turn (id or message id): the sessions holding it, the "
        "later turns whose model saw it, the spawns of its tool calls, the edges citing it, the "
        "memory records resting on it; or of a memory record (mem_...): the records derived from it",
    )
    turn.add_argument(
        "--backward",
        metavar="ID",
        help="what a turn's reply was read from: the turns its model saw, and their fork chain; "
        "or, for a memory record (mem_...), the turns and records it was read from",
    )
    parser.set_defaults(handler=run_lineage)


def run_lineage(args: argparse.Namespace) -> int:
    """Run ``host-sim lineage``; returns the exit code (1 for an unusable store or session)."""
    store_path: str = args.store if args.store is not None else default_store_path()
    url = is_store_url(store_path)
    shown = redact(store_path) if url else store_path
    if not url and not os.path.exists(store_path):
        print(
            f"{_PROG}: error: no store at {store_path!r}; host-sim run, chat and demo write "
            f"their sessions to $HOST_SIM_STORE, else {DEFAULT_STORE} (or --store PATH): "
            "run one of them first, or pass --store PATH of a store they wrote",
            file=sys.stderr,
        )
        return 1
    if args.forward is not None or args.backward is not None:
        return print_provenance(store_path, forward_id=args.forward, backward_id=args.backward, as_json=args.json)
    try:
        state = anyio.run(_read, store_path)
    except StoreError as exc:
        print(f"{_PROG}: error: {exc}", file=sys.stderr)
        return 1
    sessions: Sequence[SessionRecord] = state.sessions
    counts = turn_counts(state)
    focus: SessionId | None = None
    if args.session is not None:
        focus = SessionId(args.session)
        try:
            sessions = select_lineage_chain(state.sessions, focus)
        except UnknownSessionError:
            ids = [record.id for record in state.sessions]
            close = difflib.get_close_matches(focus, ids, n=3)
            hint = f"; did you mean {', '.join(repr(c) for c in close)}?" if close else ""
            print(
                f"{_PROG}: error: no session {focus!r} in {shown!r} "
                f"({len(ids)} stored){hint}",
                file=sys.stderr,
            )
            return 1
    members = {record.id for record in sessions}
    if args.html is not None:
        try:
            page = anyio.run(_page, store_path, focus)
        except StoreError as exc:
            print(f"{_PROG}: error: {exc}", file=sys.stderr)
            return 1
        return _write_html(args.html, page, len(sessions))
    edges = [e for e in state.edges if e.from_session_id in members and e.to_session_id in members]
    if args.json:
        own_turns: dict[SessionId, list[dict[str, object]]] = {}  # a fork's inherited turns are its parent's
        for t in sorted(state.turns, key=lambda t: t.ordinal):
            if t.session_id in members:
                own_turns.setdefault(t.session_id, []).append({"id": t.id, "ordinal": t.ordinal, "status": t.status})
        document = {
            "store": shown,
            "sessions": [
                {**unstructure(record), "turn_count": counts.get(record.id, 0), "turns": own_turns.get(record.id, [])}
                for record in sessions
            ],
            "nodes": [unstructure(n) for n in state.nodes if n.session_id in members],
            "edges": [unstructure(e) for e in edges],
        }
        print(json.dumps(document, indent=2, ensure_ascii=False))
        return 0
    if not sessions:
        print(f"no sessions in {shown!r}")
        return 0
    print(render_lineage_tree(sessions, counts))
    others = [e for e in edges if e.relation not in ("branched_from", "spawned_by")]
    if others:
        print()
        print("other lineage edges:")
        for edge in others:
            line = f"  {edge.from_session_id} -> {edge.to_session_id}  {edge.relation}"
            if edge.artifact is not None:
                a = edge.artifact
                line += f"  [{a.type} {a.source_id}: {a.label}]"
            print(line)
    return 0


def _write_html(target: str, page: str, sessions: int) -> int:
    try:
        Path(target).write_text(page, encoding="utf-8")
    except OSError as exc:
        print(f"{_PROG}: error: cannot write {target!r}: {exc.strerror or exc}; pass a path in a folder you may write", file=sys.stderr)
        return 1
    print(f"wrote {target} ({sessions} session{'s' if sessions != 1 else ''}); open it in a browser")
    return 0


def turn_counts(state: StoredState) -> dict[SessionId, int]:
    """Turns in each session's conversation: a fork's copied turns (through its anchor) included."""
    return conversation_lengths(state.sessions, state.turns)



def _store(spec: str) -> Store:
    """The store ``--store`` names, opened to read: a PostgreSQL URL, else a SQLite file."""
    return PostgresStore(spec, create=False) if is_store_url(spec) else SqliteStore(spec, read_only=True)


async def _read(spec: str) -> StoredState:
    store = _store(spec)
    try:
        await store.open()
        return await store.read_all()
    finally:
        await store.close()


async def _page(spec: str, focus: SessionId | None) -> str:
    """The page `LineageGraph.html` makes (the one ``host.lineage.html`` returns)."""
    store = _store(spec)
    try:
        await store.open()
        return await LineageGraph(store).html(focus)
    finally:
        await store.close()

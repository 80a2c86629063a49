"""``host-sim forget [--store PATH] ID [--yes] [--json]``: preview, then erase, a turn and what rests on it.

Also the provenance views of ``host-sim lineage --forward ID | --backward ID`` (the same
walk: what ``forget`` shows is exactly what it erases). Without ``--yes`` nothing is
written and the store is opened read-only, so the plan can be shown while a host runs.

Exit status: 0 when the plan was shown (or carried out), 1 for an unknown id or an
unusable store.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from collections.abc import Awaitable, Callable
from datetime import UTC, datetime
from typing import TypeVar

import anyio

from modular_sdk import UnknownRecordError, UnknownTurnError

from ..lineage._as_json import origin_data, plan_data, provenance_data, record_origin_data
from ..lineage._facts import NoHost
from ..lineage._provenance import (
    ErasurePlan,
    Provenance,
    RecordOrigin,
    RecordRef,
    TurnOrigin,
    TurnRef,
    backward,
    backward_record,
    forget,
    forward,
    is_record_id,
)
from ..lineage._types import LineageEdge
from ..stores._errors import StoreError, StoreLockedError
from ..stores._postgres import PostgresStore, redact
from ..stores._protocol import Store
from ..stores._sqlite import SqliteStore
from ._options import DEFAULT_STORE, check_writable, default_store_path, held_store_advice, is_store_url

__all__ = ["print_provenance", "register"]

_T = TypeVar("_T")


def register(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    parser = subparsers.add_parser(
        "forget",
        help="show what forgetting a turn erases; erase it with --yes",
        description=(
            "Show the erasure plan of a turn: the turn, every later turn whose model saw it "
            "(in its session and in forks that inherit it), the sessions holding it, the "
            "sessions its tool calls spawned, and the lineage edges citing it. With --yes, "
            "erase the text of those turns (ids, order, authors, times and lineage stay)."
        ),
    )
    parser.add_argument(
        "--store",
        metavar="PATH",
        default=None,
        help=f"the SQLite store (default: $HOST_SIM_STORE or {DEFAULT_STORE})",
    )
    parser.add_argument("id", metavar="ID", help="a turn id or a message id")
    parser.add_argument("--yes", action="store_true", help="erase: without it, only show the plan")
    parser.add_argument("--json", action="store_true", help="print the plan as JSON")
    parser.set_defaults(handler=run_forget)


def _utc_now() -> datetime:
    return datetime.now(UTC)


def _open(path: str, *, write: bool, use: Callable[[Store], Awaitable[_T]]) -> _T:
    """Run ``use`` over the store at ``path`` (a SQLite file; for reading, also a
    ``postgresql://`` URL, as ``host-sim lineage --store`` takes), then close it."""

    async def go() -> _T:
        store: Store = (
            PostgresStore(path, create=False) if not write and is_store_url(path)
            else SqliteStore(path, create=False, read_only=not write)
        )
        await store.open()
        try:
            return await use(store)
        finally:
            await store.close()

    return anyio.run(go)


def _fail(prog: str, message: str) -> int:
    print(f"{prog}: error: {message}", file=sys.stderr)
    return 1


def _store_path(args: argparse.Namespace, prog: str) -> str | None:
    path: str = args.store if args.store is not None else default_store_path()
    if not os.path.exists(path):
        _fail(prog, f"no store at {path!r}; pass --store PATH of a store a host wrote")
        return None
    return path


def run_forget(args: argparse.Namespace) -> int:
    prog = "host-sim forget"
    path = _store_path(args, prog)
    if path is None:
        return 1

    async def plan(store: Store) -> ErasurePlan:
        return await forget(store, args.id, dry_run=not args.yes, now=_utc_now, facts=NoHost())

    try:
        if args.yes:
            check_writable(path)
        result = _open(path, write=args.yes, use=plan)
    except (UnknownTurnError, UnknownRecordError) as exc:
        return _fail(prog, f"{exc} (in {path!r})")
    except StoreLockedError as exc:
        return _fail(prog, held_store_advice(exc))
    except (StoreError, ValueError) as exc:
        return _fail(prog, str(exc))
    if args.json:
        print(json.dumps(plan_data(result), indent=2))
        return 0
    verb = "erased" if result.erased else "would erase"
    print(f"forgetting {_ref(result.of)} {verb} the text of {len(result.turns)} turn(s) and {len(result.records)} record(s):")
    for ref in result.turns:
        print(f"  {_ref(ref)}")
    _sessions("sessions holding it", result.sessions)
    _sessions("spawned by its tool calls (not erased: decide about them yourself)", result.spawns)
    _edges(result.edges)
    _records(result.records)
    if not result.erased:
        print("dry run: nothing was erased; run again with --yes to erase")
    return 0


def print_provenance(path: str, *, forward_id: str | None, backward_id: str | None, as_json: bool) -> int:
    """``host-sim lineage --forward ID`` / ``--backward ID``; returns the exit code."""
    prog = "host-sim lineage"

    async def ask(store: Store) -> Provenance | TurnOrigin | RecordOrigin:
        if forward_id is not None:
            return await forward(store, forward_id)
        assert backward_id is not None
        if is_record_id(backward_id):  # a memory record: the words it was read from
            return await backward_record(store, backward_id)
        return await backward(store, backward_id)

    try:
        result = _open(path, write=False, use=ask)
    except (UnknownTurnError, UnknownRecordError) as exc:
        return _fail(prog, f"{exc} (in {redact(path) if is_store_url(path) else path!r})")
    except StoreError as exc:
        return _fail(prog, str(exc))
    if isinstance(result, Provenance):
        if as_json:
            print(json.dumps(provenance_data(result), indent=2))
            return 0
        print(f"{'record' if isinstance(result.of, RecordRef) else 'turn'} {_ref(result.of)}, forward:")
        _sessions("sessions holding it", result.sessions)
        print(f"  turns resting on it ({len(result.turns)}):")
        for ref in result.turns:
            print(f"    {_ref(ref)}")
        _sessions("spawned by its tool calls", result.spawns)
        _edges(result.edges)
        _records(result.records)
        return 0
    if isinstance(result, RecordOrigin):
        if as_json:
            print(json.dumps(record_origin_data(result), indent=2))
            return 0
        print(f"record {_ref(result.of)}, backward: read from {len(result.read_from)} turn(s)")
        for ref in result.read_from:
            print(f"    {_ref(ref)}")
        windows = ", ".join(f"{w.first}..{w.last}" for w in result.passages)
        print(f"  passages ({len(result.passages)}): {windows or '-'}")
        print(f"  derived from records ({len(result.records)}):")
        for parent in result.records:
            print(f"    {_ref(parent)}")
        return 0
    if as_json:
        print(json.dumps(origin_data(result), indent=2))
        return 0
    print(f"turn {_ref(result.of)}, backward: its model read {len(result.read_from)} turn(s)")
    for ref in result.read_from:
        print(f"    {_ref(ref)}")
    _sessions("through the fork chain", result.sessions)
    return 0


def _ref(ref: TurnRef | RecordRef) -> str:
    if isinstance(ref, RecordRef):
        return f"{ref.record_id} ({ref.kind}, made in {ref.session_id})"
    return f"{ref.turn_id} ({ref.session_id} #{ref.ordinal})"


def _records(records: tuple[RecordRef, ...]) -> None:
    print(f"  memory records resting on it ({len(records)}):")
    for ref in records:
        print(f"    {_ref(ref)}")


def _sessions(title: str, ids: tuple[str, ...]) -> None:
    print(f"  {title} ({len(ids)}): {', '.join(ids) if ids else '-'}")


def _edges(edges: tuple[LineageEdge, ...]) -> None:
    print(f"  lineage edges citing it ({len(edges)}):")
    for edge in edges:
        print(f"    {edge.from_session_id} -> {edge.to_session_id} ({edge.relation})")

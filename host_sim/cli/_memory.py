"""``host-sim memory list|search|show [--store PATH|URL] [--json]``: what conversations were read into.

Reads a `SqliteStore` a host wrote (read-only: it works while a host writes it), or a
`PostgresStore` when ``--store`` is a ``postgresql://`` URL (never creates one), and writes
nothing. ``list`` pages through the records (of one session, of one kind), ``search``
asks the store's full-text index, ``show`` prints one record with the words it rests on.
Exit status 0, or 1 when the store cannot be read or the id is unknown.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from collections.abc import Awaitable, Callable
from typing import TypeVar

import anyio

from modular_sdk import MemoryRecord, ModularError
from modular_sdk._json import unstructure

from ..lineage._as_json import record_origin_data
from ..lineage._provenance import backward_record, find_record
from ..stores._errors import StoreError
from ..stores._memory_records import RecordStore
from ..stores._postgres import PostgresStore, redact
from ..stores._protocol import Store
from ..stores._sqlite import SqliteStore
from ._options import DEFAULT_STORE, default_store_path

__all__ = ["register", "run_memory"]

_PROG = "host-sim memory"
_T = TypeVar("_T")


def register(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Add the ``memory`` subcommand."""
    parser = subparsers.add_parser(
        "memory",
        help="list, search or show the memory records of a store",
        description=(
            "Read what conversations were read into (memory records, compaction summaries): "
            "list them, search them with the store's full-text index, or show one with the "
            "turns it rests on. Reads the store without changing it."
        ),
    )
    parser.add_argument(
        "--store",
        metavar="PATH|URL",
        default=None,
        help=f"the SQLite store, or a postgresql://... URL (default: $HOST_SIM_STORE or {DEFAULT_STORE})",
    )
    parser.add_argument("--json", action="store_true", help="print JSON")
    actions = parser.add_subparsers(dest="action", required=True, metavar="ACTION")
    listing = actions.add_parser("list", help="records in writing order", description="Records in writing order.")
    listing.add_argument("--session", metavar="ID", help="only this session's records")
    listing.add_argument("--kind", metavar="KIND", help="only records of this kind (fact, summary, ...)")
    listing.add_argument("--retracted", action="store_true", help="include retracted records")
    listing.add_argument("--limit", type=int, default=50, metavar="N", help="at most N records (default 50)")
    search = actions.add_parser("search", help="records matching words", description="Records holding every word, best first.")
    search.add_argument("query", metavar="QUERY", help="the words to find")
    search.add_argument("--limit", type=int, default=10, metavar="N", help="at most N records (default 10)")
    show = actions.add_parser("show", help="one record and the words it rests on", description="One record, with its origin.")
    show.add_argument("id", metavar="ID", help="a record id (mem_...)")
    parser.set_defaults(handler=run_memory)


def _store(spec: str) -> Store:
    if spec.startswith(("postgresql://", "postgres://")):
        return PostgresStore(spec, create=False)
    return SqliteStore(spec, create=False, read_only=True)


def _read(spec: str, use: Callable[[RecordStore, Store], Awaitable[_T]]) -> _T:
    async def go() -> _T:
        store = _store(spec)
        await store.open()
        try:
            assert isinstance(store, RecordStore)  # every store host_sim ships keeps records
            return await use(store, store)
        finally:
            await store.close()

    return anyio.run(go)


def _line(record: MemoryRecord) -> str:
    marks = " (retracted)" if record.retracted_at is not None else ""
    marks += " (erased)" if record.erased_at is not None else ""
    text = record.text if len(record.text) <= 100 else record.text[:97] + "..."
    return f"{record.id}  {record.kind}{marks}  {record.session_id}  {text!r}"


def run_memory(args: argparse.Namespace) -> int:
    spec: str = args.store if args.store is not None else default_store_path()
    if not spec.startswith(("postgresql://", "postgres://")) and not os.path.exists(spec):
        print(f"{_PROG}: error: no store at {spec!r}; pass --store PATH of a store a host wrote", file=sys.stderr)
        return 1
    try:
        if args.action == "list":
            if args.limit < 1:
                print(f"{_PROG}: error: --limit must be 1 or more, got {args.limit}", file=sys.stderr)
                return 1

            async def listed(records: RecordStore, store: Store) -> list[MemoryRecord]:
                page, _ = await records.page_records(args.session, args.kind, {}, args.retracted, args.limit, None)
                return list(page)

            found = _read(spec, listed)
        elif args.action == "search":

            async def searched(records: RecordStore, store: Store) -> list[MemoryRecord]:
                return list(await records.search_records(args.query, {}, max(1, args.limit)))

            found = _read(spec, searched)
        else:

            async def shown(records: RecordStore, store: Store) -> tuple[MemoryRecord, dict[str, object]]:
                record = await find_record(store, args.id)
                return record, record_origin_data(await backward_record(store, args.id))

            record, origin = _read(spec, shown)
            if args.json:
                print(json.dumps({"record": unstructure(record), "origin": origin}, indent=2, ensure_ascii=False))
                return 0
            print(_line(record))
            print(f"  made by {json.dumps(unstructure(record.made_by))} at {record.created_at.isoformat()}")
            if record.data is not None:
                print(f"  data {json.dumps(unstructure(record.data), ensure_ascii=False)}")
            if record.retraction_reason is not None:
                print(f"  retracted: {record.retraction_reason!r}")
            read_from = origin["read_from"]
            print(f"  rests on {len(read_from) if isinstance(read_from, list) else 0} turn(s):")
            for ref in read_from if isinstance(read_from, list) else []:
                print(f"    {ref['turn_id']} ({ref['session_id']} #{ref['ordinal']})")
            for ref in record.derived_from:
                print(f"  derived from {ref}")
            return 0
    except (StoreError, ModularError) as exc:
        message = redact(str(exc)) if spec.startswith(("postgresql://", "postgres://")) else str(exc)
        print(f"{_PROG}: error: {message}", file=sys.stderr)
        return 1
    if args.json:
        print(json.dumps([unstructure(r) for r in found], indent=2, ensure_ascii=False))
    else:
        for record in found:
            print(_line(record))
        if not found:
            print("(no records)")
    return 0

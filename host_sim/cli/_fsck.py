"""``host-sim fsck --store PATH [--repair] [--json]``: check (and repair) a store's invariants.

Runs the one invariant checker (``host_sim.stores._invariants.check``, the same the host
runs when it opens a store and the tests run after every step) over a `SqliteStore`, or a
`PostgresStore` when ``--store`` is a ``postgresql://`` (or ``postgres://``) URL.
Without ``--repair`` it opens a SQLite file read-only, so it works while a host writes it.
``--repair`` takes the store's writer lock, marks turns a crash left running failed and
rebuilds the derived lineage index and trace index; damage to the records themselves is only reported.
On PostgreSQL, where hosts may be live, a turn a live host is running is neither a
violation nor repaired: only turns whose host is gone are.

Exit status: 0 when the store is sound (after repair, with ``--repair``), 1 when a
violation remains or the store cannot be opened.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from collections.abc import Callable
from datetime import UTC, datetime

import anyio
import attrs

from ..sessions._across_hosts import announce_claimed, dead_hosts
from ..stores._errors import StoreError, StoreLockedError
from ..stores._invariants import check
from ..stores._invariants import repair as repair_store
from ..stores._postgres import PostgresStore
from ..stores._protocol import Store
from ..stores._records import StoredState, Violation
from ..stores._sqlite import SqliteStore
from ..stores._traces import TraceStore, check_traces, derive_trace_index
from ._lineage import DEFAULT_STORE
from ._options import check_writable, held_store_advice, is_store_url, shown_store

__all__ = ["register", "run_fsck"]


def register(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Add the ``fsck`` subcommand."""
    parser = subparsers.add_parser(
        "fsck",
        help="check a store's invariants (and repair its derived data)",
        description=(
            "Check every invariant of a store (a SQLite file, or a PostgreSQL database given as a "
            "postgresql:// URL): fork anchors exist and are completed, "
            "ordinals are unique and contiguous, depth = parent depth + 1, no turn is left "
            "running, and the lineage index is what the session and turn records imply. "
            "Exits 1 listing each violation. With --repair, mark interrupted turns failed and "
            "rebuild the lineage index (damaged records cannot be repaired, only reported)."
        ),
    )
    parser.add_argument(
        "--store",
        metavar="PATH|URL",
        default=os.environ.get("HOST_SIM_STORE", DEFAULT_STORE),
        help=(
            "the SQLite store to check, or a postgresql://... URL of a PostgresStore "
            f"(default: $HOST_SIM_STORE or {DEFAULT_STORE})"
        ),
    )
    parser.add_argument("--repair", action="store_true", help="rebuild derived data (takes the writer lock)")
    parser.add_argument("--json", action="store_true", help="print the result as JSON")
    parser.set_defaults(handler=run_fsck)


def _utc_now() -> datetime:
    return datetime.now(UTC)



def _store(spec: str, repair: bool) -> Store:
    """The store ``--store`` names: a PostgreSQL URL, else a SQLite file."""
    if is_store_url(spec):
        return PostgresStore(spec, create=False)
    return SqliteStore(spec, create=False, read_only=not repair)


async def _checked(store: Store, dead: list[str]) -> tuple[StoredState, list[Violation]]:
    """The store's records and their violations; on a shared store, only the running turns
    of the ``dead`` hosts count (those of live hosts, or of hosts only reconnecting, are theirs)."""
    state = await store.read_all()
    if isinstance(store, PostgresStore):
        gone = {t.id for t in await store.dead_turns(dead)}
        state = attrs.evolve(state, turns=tuple(t for t in state.turns if t.status != "running" or t.id in gone))
    found = check(state)
    if isinstance(store, TraceStore):  # traces: their records and their derived index
        found += check_traces(await store.read_traces(), state.sessions)
    return state, found


async def _fsck(path: str, repair: bool, clock: Callable[[], datetime]) -> tuple[list[Violation], list[Violation]]:
    """(violations found, violations left); the second is empty when sound or repaired."""
    store = _store(path, repair)
    try:
        await store.open()
        # Dead by the hosts' own rule (`Absences`: claim seen gone for DEAD_HOST_GRACE seconds)
        dead = await dead_hosts(store) if isinstance(store, PostgresStore) else []
        state, found = await _checked(store, dead)
        if not repair or not found or any(not v.repairable for v in found):
            return found, found
        if isinstance(store, PostgresStore):  # failed as a live host's link would: once, with their events
            await store.claim_dead(dead, clock, announce_claimed(clock))
            state = (await _checked(store, dead))[0]
        await repair_store(store, state, clock)
        if isinstance(store, TraceStore):
            await store.rebuild_trace_index(derive_trace_index(await store.read_traces()))
        return found, (await _checked(store, dead))[1]
    finally:
        await store.close()


def run_fsck(args: argparse.Namespace) -> int:
    path: str = args.store
    shown = shown_store(path)
    try:
        if args.repair and not is_store_url(path):
            check_writable(path)
        found, left = anyio.run(_fsck, path, args.repair, _utc_now)
    except StoreLockedError as exc:
        print(f"host-sim fsck: {held_store_advice(exc)}", file=sys.stderr)
        return 1
    except StoreError as exc:
        print(f"host-sim fsck: {exc}", file=sys.stderr)
        return 1
    repaired = [v for v in found if v not in left]
    if args.json:
        print(
            json.dumps(
                {
                    "store": shown,
                    "ok": not left,
                    "violations": [v.to_data() for v in left],
                    "repaired": [v.to_data() for v in repaired],
                },
                indent=2,
            )
        )
        return 0 if not left else 1
    for violation in repaired:
        print(f"repaired  {violation.code}  {violation.message}")
    for violation in left:
        hint = "repairable with --repair" if violation.repairable and not args.repair else "damaged record"
        print(f"{violation.code}  {violation.message}  ({hint})")
    if left:
        print(f"{shown}: {len(left)} violation{'s' if len(left) != 1 else ''}", file=sys.stderr)
        return 1
    print(f"{shown}: ok" + (f" (repaired {len(repaired)})" if repaired else ""))
    return 0

"""The event spool: how other processes (a git hook, a tool's server) tell the host what happened.

A producer writes one JSON file per event with `write_event` (or ``host-sim emit``): to a
temporary name first (``.<id>.<pid>.tmp``, which readers skip), fsync'd, then renamed to
``<id>.json`` and the directory fsync'd, so a reader sees a whole event or none; a writer
killed before the rename leaves only a temporary file, never an event.

A host with ``Host(spool=DIR)`` consumes it in a task of its own task group: it scans the
directory when it starts (leftovers of a crash first) and then again on every wake-up,
applies events in name order (ids start with the time they were made), and deletes a file
only after its event is applied. Applying records the event id in the same store
transaction as its effect, so an event applied before a crash (its file not yet deleted)
is recognised on the next scan and only deleted: each event is applied at most once. An
event that can never apply (bad JSON, an unknown type, an unknown session or output) is
moved to ``DIR/failed/`` with a ``.reason`` file saying why.

The wake-up is a timer (``anyio.sleep``): the standard library has no portable file
watch, and a watch is only ever a hint here (the scan is what finds events), so polling a
directory listing a few times a second costs little and misses nothing. No dependency
earns its place for that.
"""

from __future__ import annotations

import json
import os
import secrets
import time
from collections.abc import Callable, Mapping
from datetime import datetime
from pathlib import Path
from typing import Final, final

import anyio
import anyio.to_thread

from modular_sdk import InvalidArgumentError, ModularError, SerializationError, SessionId
from modular_sdk._rules import check_json_data

from ..stores._errors import StoreError
from ..stores._protocol import Store
from ..stores._traces import TraceStore
from ._errors import TraceError, UnknownTraceError
from ._service import TraceLinker, record_commit

__all__ = ["EVENT_TYPES", "SpoolConsumer", "write_event"]

EVENT_TYPES: Final = ("output", "commit")
_FIELDS: Final = {"output": ("session_id", "output_id", "kind"), "commit": ("output_id", "commit")}
_ID_CHARS: Final = frozenset("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_.-")
POLL_SECONDS: Final = 0.2


def new_event_id() -> str:
    """Unique, and in the order made: ``evt_<ns since epoch>_<random>``."""
    return f"evt_{time.time_ns():020d}_{secrets.token_hex(4)}"


def check_event(event: object) -> dict[str, object]:
    """``event`` as a plain dict, or `InvalidArgumentError` naming what is wrong."""
    if not isinstance(event, Mapping):
        raise InvalidArgumentError(
            f"an event is a JSON object with a 'type', got {event!r}; write "
            "{'type': 'commit', 'output_id': 'chg-1', 'commit': '<hash>'}",
            argument="event",
            value=event,
        )
    data = dict(event)
    kind = data.get("type")
    if kind not in _FIELDS:
        raise InvalidArgumentError(
            f"event type {kind!r} is not one the host applies; use one of {', '.join(map(repr, EVENT_TYPES))}",
            argument="event",
            value=event,
        )
    for field in _FIELDS[str(kind)]:
        value = data.get(field)
        if not isinstance(value, str) or not value.strip():
            raise InvalidArgumentError(
                f"a {kind!r} event needs {field!r} (non-empty text), got {value!r}; it has "
                f"{', '.join(map(repr, _FIELDS[str(kind)]))}",
                argument="event",
                value=event,
            )
    ident = data.get("id")
    if ident is not None and (not isinstance(ident, str) or not ident or len(ident) > 128 or not set(ident) <= _ID_CHARS or ident[0] == "."):
        raise InvalidArgumentError(
            f"an event id is 1-128 letters, digits and _.- (not starting with '.'), got {ident!r}; "
            "leave 'id' out to have one made",
            argument="event",
            value=event,
        )
    try:
        check_json_data(data, "the event")
    except SerializationError as exc:
        raise InvalidArgumentError(str(exc), argument="event", value=event) from None
    return data


def write_event(directory: str | os.PathLike[str], event: Mapping[str, object]) -> str:
    """Write one event to the spool ``directory`` (created if missing) for a host to apply; returns its id.

    ``event`` is a JSON object with a ``type``: ``{"type": "output", "session_id", "output_id",
    "kind"}`` links an output to the trace of that session; ``{"type": "commit",
    "output_id", "commit"}`` records the commit that landed an output (as
    ``host.traces.record_commit``). An ``"id"`` is added when absent; the id is what makes
    applying at most once. The file appears whole or not at all (temporary name, fsync,
    rename). Raises `InvalidArgumentError` for an event the host would not apply.

    >>> write_event(".host-sim/spool", {"type": "commit", "output_id": "chg-1", "commit": "3f2a9c1"})  # doctest: +SKIP
    """
    data = check_event(event)
    ident = data.get("id")
    if ident is None:
        ident = data["id"] = new_event_id()
    assert isinstance(ident, str)
    folder = Path(directory)
    folder.mkdir(parents=True, exist_ok=True)
    temporary = folder / f".{ident}.{os.getpid()}.tmp"
    payload = json.dumps(data, ensure_ascii=False, sort_keys=True).encode("utf-8")
    fd = os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
    try:
        os.write(fd, payload)
        os.fsync(fd)
    finally:
        os.close(fd)
    os.replace(temporary, folder / f"{ident}.json")
    _fsync_dir(folder)
    return ident


def _fsync_dir(folder: Path) -> None:
    fd = os.open(folder, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


@final
class SpoolConsumer:
    """Applies a spool directory's events to the host's store (see the module docstring)."""

    def __init__(self, directory: Path, store: Store, linker: TraceLinker, clock: Callable[[], datetime]) -> None:
        self.directory = directory
        self._store = store
        self._linker = linker
        self._clock = clock
        self.applied = 0
        self.failed = 0

    async def run(self) -> None:
        """Scan now (leftovers first), then on every wake-up, until cancelled."""
        await anyio.to_thread.run_sync(lambda: self.directory.mkdir(parents=True, exist_ok=True))
        while True:
            await self.scan()
            await anyio.sleep(POLL_SECONDS)

    async def scan(self) -> int:
        """Apply every event file now in the directory, in name order; returns how many were applied."""
        names = await anyio.to_thread.run_sync(self._names)
        count = 0
        for name in names:
            try:
                if await self._consume(self.directory / name):
                    count += 1
            except OSError:
                continue  # unreadable or not removable now (permissions, a full disk): the next scan retries
        return count

    def _names(self) -> list[str]:
        try:
            return sorted(n for n in os.listdir(self.directory) if n.endswith(".json") and not n.startswith("."))
        except OSError:  # missing or unreadable now: the next scan looks again
            return []

    async def _consume(self, path: Path) -> bool:
        try:
            raw = await anyio.to_thread.run_sync(path.read_bytes)
        except FileNotFoundError:
            return False  # applied and deleted meanwhile
        try:
            data = check_event(json.loads(raw.decode("utf-8")))
        except (ValueError, UnicodeDecodeError, RecursionError, InvalidArgumentError) as exc:
            await self._fail(path, f"not an event the host applies: {exc}")
            return False
        event_id = data.get("id")
        if not isinstance(event_id, str):
            event_id = path.name.removesuffix(".json")
        store = self._store
        if not isinstance(store, TraceStore):
            return False  # the host refused the spool at open; never reached
        if await store.event_applied(event_id):
            await self._delete(path)  # applied before a crash: only the deletion was left
            return False
        try:
            if data["type"] == "output":
                session_id = SessionId(str(data["session_id"]))
                if await store.get_session(session_id) is None:
                    raise TraceError(f"no session {session_id!r} in this host's store")
                await self._linker.report_output(session_id, str(data["kind"]), str(data["output_id"]), event_id=event_id)
            else:
                await record_commit(store, self._clock, str(data["output_id"]), str(data["commit"]), event_id=event_id)
        except StoreError:
            if await store.event_applied(event_id):  # applied concurrently: only delete
                await self._delete(path)
                return False
            return False  # the store failed: the file stays for the next scan
        except (UnknownTraceError, TraceError, InvalidArgumentError, ModularError) as exc:
            await self._fail(path, str(exc))
            return False
        await self._delete(path)
        self.applied += 1
        return True

    async def _delete(self, path: Path) -> None:
        def delete() -> None:
            try:
                path.unlink()
            except FileNotFoundError:
                return
            _fsync_dir(path.parent)

        await anyio.to_thread.run_sync(delete)

    async def _fail(self, path: Path, reason: str) -> None:
        def move() -> None:
            failed = path.parent / "failed"
            failed.mkdir(exist_ok=True)
            (failed / (path.name + ".reason")).write_text(reason + "\n", encoding="utf-8")
            try:
                os.replace(path, failed / path.name)
            except FileNotFoundError:
                return
            _fsync_dir(path.parent)

        self.failed += 1
        await anyio.to_thread.run_sync(move)

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

Every entry is hostile input (anyone who may write the folder may put anything there):
only regular files with event names are read, never through a link, never a FIFO or a
device, at most ``max_event_bytes`` of each, and their JSON strictly; everything else is
set aside the same way, through directory descriptors and renames that follow no link
(`_read_entry`, `_set_aside`). An entry that cannot be set aside safely (``failed`` is not
a real folder) stays where it is and is not looked at again. No entry stops the consumer.

The wake-up is a timer (``anyio.sleep``): the standard library has no portable file
watch, and a watch is only ever a hint here (the scan is what finds events), so polling a
directory listing a few times a second costs little and misses nothing. No dependency
earns its place for that.
"""

from __future__ import annotations

import errno
import json
import os
import re
import secrets
import stat
import time
from collections.abc import Callable, Mapping
from datetime import datetime
from pathlib import Path
from typing import Final, final

import anyio
import anyio.to_thread
import attrs

from modular_sdk import InvalidArgumentError, ModularError, SerializationError, SessionId
from modular_sdk._json import parse_json_text
from modular_sdk._rules import check_json_data

from ..stores._errors import StoreError
from ..stores._protocol import Store
from ..stores._traces import TraceStore
from ._errors import TraceError, UnknownTraceError
from ._service import TraceLinker, record_commit

__all__ = ["EVENT_TYPES", "SpoolConsumer", "prepare_spool", "write_event"]

EVENT_TYPES: Final = ("output", "commit")
_FIELDS: Final = {"output": ("session_id", "output_id", "kind"), "commit": ("output_id", "commit")}
_ID_CHARS: Final = frozenset("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_.-")
POLL_SECONDS: Final = 0.2
_EVENT_NAME: Final = re.compile(r"[A-Za-z0-9_-][A-Za-z0-9_.-]{0,127}\.json", re.ASCII)
_FAILED: Final = "failed"
_REASON_CHARS: Final = 2000  # a reason may quote the event; never a megabyte of it


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
        if "\x00" in value:
            raise InvalidArgumentError(
                f"{field!r} of a {kind!r} event holds a NUL character, got {value!r}; no store keeps one "
                "in text (PostgreSQL refuses it): remove it",
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
    try:
        payload = json.dumps(data, ensure_ascii=False, sort_keys=True, allow_nan=False).encode("utf-8")
        parse_event(payload)  # what the host reads back: the same strict rules
    except ValueError as exc:
        raise InvalidArgumentError(
            f"event {data!r} is not strict JSON ({exc}); use finite numbers of at most 64 bits",
            argument="event",
            value=event,
        ) from None
    folder = Path(directory)
    folder.mkdir(parents=True, exist_ok=True)
    temporary = folder / f".{ident}.{os.getpid()}.tmp"
    fd = os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_NOFOLLOW, 0o644)
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

    def __init__(
        self,
        directory: Path,
        store: Store,
        linker: TraceLinker,
        clock: Callable[[], datetime],
        *,
        max_event_bytes: int,
    ) -> None:
        self.directory = directory
        self._store = store
        self._linker = linker
        self._clock = clock
        self._max_event_bytes = max_event_bytes
        self._unmovable: set[str] = set()  # bad entries that could not be set aside safely
        self.applied = 0
        self.failed = 0

    async def run(self) -> None:
        """Scan now (leftovers first), then on every wake-up, until cancelled."""
        while True:
            await self.scan()
            await anyio.sleep(POLL_SECONDS)

    async def scan(self) -> int:
        """Apply every event file now in the directory, in name order; returns how many were applied."""
        folder = await anyio.to_thread.run_sync(_open_folder, self.directory)
        if folder is None:  # gone or replaced by a non-folder meanwhile: the next scan looks again
            return 0
        try:
            names = await anyio.to_thread.run_sync(_event_names, folder)
            self._unmovable &= set(names)  # forget entries that are gone
            count = 0
            for name in names:
                if name in self._unmovable:
                    continue
                try:
                    if await self._consume(folder, name):
                        count += 1
                except (OSError, StoreError):
                    continue  # unreadable, not removable or the store down now (permissions, a full disk): the next scan retries
            return count
        finally:
            os.close(folder)

    async def _consume(self, folder: int, name: str) -> bool:
        taken = await anyio.to_thread.run_sync(_read_entry, folder, name, self._max_event_bytes)
        if taken is None:
            return False  # applied and deleted meanwhile
        if isinstance(taken, _Refused):
            await self._fail(folder, name, taken.reason)
            return False
        try:
            data = check_event(parse_event(taken))
        except (ValueError, UnicodeDecodeError, RecursionError, InvalidArgumentError) as exc:
            await self._fail(folder, name, f"not an event the host applies: {exc}")
            return False
        event_id = data.get("id")
        if not isinstance(event_id, str):
            event_id = name.removesuffix(".json")
        store = self._store
        if not isinstance(store, TraceStore):
            return False  # the host refused the spool at open; never reached
        if await store.event_applied(event_id):
            await self._delete(folder, name)  # applied before a crash: only the deletion was left
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
                await self._delete(folder, name)
                return False
            return False  # the store failed: the file stays for the next scan
        except (UnknownTraceError, TraceError, InvalidArgumentError, ModularError) as exc:
            await self._fail(folder, name, str(exc))
            return False
        await self._delete(folder, name)
        self.applied += 1
        return True

    async def _delete(self, folder: int, name: str) -> None:
        def delete() -> None:
            try:
                os.unlink(name, dir_fd=folder)
            except FileNotFoundError:
                return
            os.fsync(folder)

        await anyio.to_thread.run_sync(delete)

    async def _fail(self, folder: int, name: str, reason: str) -> None:
        self.failed += 1
        if not await anyio.to_thread.run_sync(_set_aside, folder, name, reason):
            self._unmovable.add(name)  # left where it is, never read again while it stays



@attrs.frozen
class _Refused:
    """A spool entry that is not an event file the host may read, and why."""

    reason: str


def prepare_spool(directory: str | os.PathLike[str]) -> Path:
    """The spool folder, created when missing; `InvalidArgumentError` when the path is not a folder.

    Run when the host starts, so a wrong path fails there and then, not in the consumer.
    """
    path = Path(directory)
    try:
        path.mkdir(parents=True, exist_ok=True)
        os.close(os.open(path, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC))
    except OSError as exc:
        raise InvalidArgumentError(
            f"spool {os.fspath(directory)!r} is not a folder the host can read ({exc.strerror or exc}); "
            "pass the path of a folder (it is created when missing), the one producers write to "
            "with host_sim.write_event or host-sim emit --spool",
            argument="spool",
            value=directory,
        ) from None
    return path


def parse_event(raw: bytes) -> object:
    """The JSON value of an event file; `ValueError` for what JSON (RFC 8259) cannot hold.

    Strict where `json.loads` is lenient, by the one rule for numbers from outside
    (`modular_sdk._json.parse_json_text`): ``NaN`` and ``Infinity`` are refused, and so are
    floats that overflow to infinity and integers beyond 64 bits (refused by their length
    before any conversion, so a 100,000-digit number costs nothing).
    """
    return parse_json_text(raw.decode("utf-8"))


def _open_folder(path: Path) -> int | None:
    """A descriptor of the spool folder (the configured path may be a link the user made), or ``None``."""
    try:
        return os.open(path, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
    except OSError:
        return None


def _event_names(folder: int) -> list[str]:
    """Entries that claim to be events (``*.json``, not hidden), in name order; temporary files are skipped."""
    try:
        names = os.listdir(folder)
    except OSError:  # unreadable now: the next scan looks again
        return []
    return sorted(n for n in names if n.endswith(".json") and not n.startswith("."))


def _read_entry(folder: int, name: str, limit: int) -> bytes | _Refused | None:
    """The bytes of one event file, or why the entry is refused; ``None`` when it is gone.

    Every entry is hostile: its name must be ASCII and match the event pattern; it must be
    a regular file (checked without following a link before opening, and again on the open
    descriptor, which is opened non-blocking and never through a link, so a FIFO or a
    device is never read and a swap between the two checks is caught); and at most
    ``limit`` bytes are read.
    """
    if not _EVENT_NAME.fullmatch(name):
        return _Refused(
            f"the name {name!r} is not an event file's: the spool reads only ASCII names of "
            "letters, digits and _.- ending in .json (as write_event makes them)"
        )
    try:
        seen = os.stat(name, dir_fd=folder, follow_symlinks=False)
    except FileNotFoundError:
        return None
    if not stat.S_ISREG(seen.st_mode):
        return _Refused(f"{name!r} is {_kind(seen.st_mode)}, not a regular file; the spool reads only regular files, never through links")
    try:
        fd = os.open(name, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC, dir_fd=folder)
    except FileNotFoundError:
        return None
    except OSError as exc:
        if exc.errno == errno.ELOOP:  # became a link after the check
            return _Refused(f"{name!r} is a symbolic link; the spool reads only regular files, never through links")
        raise
    try:
        opened = os.fstat(fd)
        if not stat.S_ISREG(opened.st_mode) or (opened.st_dev, opened.st_ino) != (seen.st_dev, seen.st_ino):
            return _Refused(f"{name!r} changed into {_kind(opened.st_mode)} while being read; the spool reads only regular files")
        if opened.st_size > limit:
            return _Refused(_too_large(name, opened.st_size, limit))
        chunks: list[bytes] = []
        size = 0
        while size <= limit:  # the size may grow after fstat: read one byte past the cap at most
            chunk = os.read(fd, min(1 << 16, limit + 1 - size))
            if not chunk:
                break
            chunks.append(chunk)
            size += len(chunk)
        if size > limit:
            return _Refused(_too_large(name, size, limit))
        return b"".join(chunks)
    finally:
        os.close(fd)


def _too_large(name: str, size: int, limit: int) -> str:
    return (
        f"{name!r} holds {size} bytes or more, over the host's max_event_bytes={limit}; an event is a "
        "small JSON object (raise Host(max_event_bytes=...) if yours are really larger)"
    )


def _kind(mode: int) -> str:
    if stat.S_ISLNK(mode):
        return "a symbolic link"
    if stat.S_ISFIFO(mode):
        return "a FIFO"
    if stat.S_ISDIR(mode):
        return "a folder"
    if stat.S_ISCHR(mode) or stat.S_ISBLK(mode):
        return "a device"
    if stat.S_ISSOCK(mode):
        return "a socket"
    return "not a regular file"


def _set_aside(folder: int, name: str, reason: str) -> bool:
    """Move the entry ``name`` into ``failed/`` next to ``<name>.reason``; whether it could be.

    Nothing here follows a link: ``failed`` must be a real folder of the spool (a link in
    its place means the entry stays where it is, never read again), the reason is written
    to a new file (created exclusively, then renamed over whatever held its name, a planted
    link included) and the entry itself is renamed, never opened, so a link or a FIFO moves
    as what it is.
    """
    try:
        os.mkdir(_FAILED, 0o755, dir_fd=folder)
    except FileExistsError:
        pass
    except OSError:
        return False
    try:
        failed = os.open(_FAILED, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC, dir_fd=folder)
    except OSError:  # a link, a file or a FIFO named failed: nowhere safe to put it
        return False
    temporary = f".{secrets.token_hex(8)}.reason.tmp"
    try:
        fd = os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC, 0o644, dir_fd=failed)
        try:
            text = reason if len(reason) <= _REASON_CHARS else reason[:_REASON_CHARS] + " [...]"
            os.write(fd, (text + "\n").encode("utf-8", "backslashreplace"))
        finally:
            os.close(fd)
        try:
            os.replace(temporary, name + ".reason", src_dir_fd=failed, dst_dir_fd=failed)
        except OSError:
            os.unlink(temporary, dir_fd=failed)
            raise
        try:
            os.replace(name, name, src_dir_fd=folder, dst_dir_fd=failed)
        except FileNotFoundError:
            return True  # gone meanwhile: nothing left to move
        os.fsync(failed)
        os.fsync(folder)
        return True
    except OSError:
        return False
    finally:
        os.close(failed)

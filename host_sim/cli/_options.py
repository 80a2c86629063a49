"""Options several subcommands share: ``--backend``, ``--timeout``, ``--store``/``--no-store``.

``--store`` names a SQLite file or a PostgreSQL URL in every command that takes it:
`is_store_url` tells them apart, `shown_store` is what a message may print of it (a URL's
password redacted), and `open_store` opens either for ``run``, ``chat`` and ``demo``.

Each check runs while argparse parses, so a bad value is a usage error (exit 2) that names
the value and says what to pass instead, never a traceback from deep inside a run.
"""

from __future__ import annotations

import argparse
import contextlib
import importlib.util
import math
import os
import shlex
from collections.abc import Iterator
from pathlib import Path

from ..stores._errors import StoreError, StoreLockedError
from ..stores._memory import MemoryStore
from ..stores._postgres import PostgresStore, redact
from ..stores._protocol import Store
from ..stores._sqlite import SqliteStore

__all__ = [
    "DEFAULT_STORE",
    "SERVED_STORE_HELP",
    "STORE_HELP",
    "add_backend",
    "add_store",
    "add_timeout",
    "check_writable",
    "default_store_path",
    "held_store_advice",
    "is_store_url",
    "open_store",
    "seconds",
    "shown_store",
]

DEFAULT_STORE = ".host-sim/store.sqlite"
"""Where ``run``, ``chat`` and ``demo`` keep sessions and ``lineage`` and ``fsck`` read them,
unless ``--store PATH`` or ``$HOST_SIM_STORE`` says otherwise."""


def default_store_path() -> str:
    """``$HOST_SIM_STORE`` when set (and not empty), else `DEFAULT_STORE`."""
    return os.environ.get("HOST_SIM_STORE") or DEFAULT_STORE


def _backend(text: str) -> str:
    if text not in ("asyncio", "trio"):
        raise argparse.ArgumentTypeError(f"{text!r} is not a backend; pass asyncio or trio")
    if text == "trio" and importlib.util.find_spec("trio") is None:
        raise argparse.ArgumentTypeError(
            "'trio' needs the trio package, which is not installed here; install it "
            "(pip install trio, or the dev extras: pip install 'modular-chat-sdk[dev]') "
            "or use --backend asyncio"
        )
    return text


def add_backend(parser: argparse.ArgumentParser) -> None:
    """``--backend {asyncio,trio}`` (default asyncio); trio is refused when not installed."""
    parser.add_argument(
        "--backend",
        type=_backend,
        default="asyncio",
        metavar="{asyncio,trio}",
        help="the event loop (default asyncio; trio needs the trio package)",
    )


def seconds(text: str) -> float:
    """A positive, finite number of seconds; argparse reports anything else as a usage error."""
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a number of seconds; pass one like 30 or 2.5") from None
    if not math.isfinite(value) or value <= 0:
        raise argparse.ArgumentTypeError(
            f"{text!r} is not a positive number of seconds; pass one greater than 0, like 30 or 2.5"
        )
    return value


def add_timeout(parser: argparse.ArgumentParser, *, default: float, what: str) -> None:
    """``--timeout SECONDS``: a positive, finite time limit for ``what``."""
    parser.add_argument(
        "--timeout",
        type=seconds,
        default=default,
        metavar="SECONDS",
        help=f"time limit of {what} (default {default:g})",
    )


def is_store_url(spec: str) -> bool:
    """Whether ``--store`` names a PostgreSQL database (``postgresql://`` or ``postgres://``), not a file."""
    return spec.startswith(("postgresql://", "postgres://"))


def shown_store(spec: str) -> str:
    """``spec`` as a message may show it: a URL with its password redacted, a path as it is."""
    return redact(spec) if is_store_url(spec) else spec


STORE_HELP = (
    "keep sessions in this SQLite file, or the PostgreSQL database of a postgresql://... URL "
    f"(default: $HOST_SIM_STORE, else {DEFAULT_STORE}; a file's folder must exist, except the "
    "default .host-sim/)"
)
"""``--store``'s help in the commands that run and end (``run``, ``chat``, ``demo``)."""

SERVED_STORE_HELP = (
    "keep sessions in this SQLite file, or a postgresql://... URL of a PostgresStore "
    f"(default: $HOST_SIM_STORE, else {DEFAULT_STORE})"
)
"""``--store``'s help in the commands that serve the host to a client (``acp``, ``studio``)."""


def add_store(
    parser: argparse.ArgumentParser,
    *,
    store_help: str = STORE_HELP,
    no_store_help: str = "keep sessions in memory only (host-sim lineage will not see them)",
) -> None:
    """``--store PATH|URL`` and ``--no-store``: where the run keeps its sessions.

    ``store_help`` and ``no_store_help`` say it the way the command needs (a served host's
    memory is gone when its client stops it).
    """
    where = parser.add_mutually_exclusive_group()
    where.add_argument("--store", metavar="PATH|URL", default=None, help=store_help)
    where.add_argument("--no-store", action="store_true", help=no_store_help)


@contextlib.contextmanager
def open_store(args: argparse.Namespace) -> Iterator[tuple[Store, str | None]]:
    """The store ``--store``/``--no-store`` ask for, and its path or URL (``None`` in memory).

    A ``postgresql://`` URL opens a `PostgresStore` (its tables made when missing, as a
    host's are), shared with any other host on that database.

    Only the default store's folder is created (``.host-sim/``), and only for a run that
    keeps something in it: when the run fails before its store was opened (a mod that
    does not load, Ctrl-C), the folder it made is removed again, empty as it was made. An
    explicit path whose folder is missing is refused by `SqliteStore`, as sqlite3 and git
    refuse one.
    """
    if getattr(args, "no_store", False):
        yield MemoryStore(), None
        return
    explicit: str | None = args.store
    path = explicit if explicit is not None else default_store_path()
    if is_store_url(path):
        yield PostgresStore(path), path
        return
    check_writable(path, session=getattr(args, "session", None))
    folder = Path(path).parent
    made = explicit is None and path == DEFAULT_STORE and not folder.exists()
    if made:
        folder.mkdir()
    try:
        yield SqliteStore(Path(path)), path
    finally:
        if made:
            with contextlib.suppress(OSError):  # not empty: the run kept its sessions there
                folder.rmdir()


def check_writable(path: str, *, session: str | None = None) -> None:
    """Refuse, with advice a shell user can follow, a store this command cannot write."""
    shown = shlex.quote(path)
    if session is not None and not Path(path).exists():
        raise StoreError(
            f"no session {session!r}: there is no store at {path!r} yet (nothing has run with it); "
            f"drop --session to start a session, or pass --store PATH of the store that holds it",
            path=path,
        )
    if Path(path).is_file() and not os.access(path, os.W_OK):
        raise StoreError(
            f"the store {path!r} is read-only (this process may not write it); give it write "
            f"permission (chmod u+w {shown}), or pass another --store PATH or --no-store; "
            f"host-sim lineage --store {shown} reads it as it is",
            path=path,
        )


def held_store_advice(exc: StoreLockedError) -> str:
    """What a shell user can do about a store another host holds (the error's own advice is Python's)."""
    who = f"process {exc.pid}" if exc.pid is not None else "another process"
    shown = shlex.quote(exc.path or "")
    return (
        f"the store {exc.path!r} is in use by another host ({who}): one host writes a SQLite store "
        f"at a time; wait for that one to end, or pass another --store PATH or --no-store; "
        f"host-sim lineage --store {shown} reads it meanwhile"
    )

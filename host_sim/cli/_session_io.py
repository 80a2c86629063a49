"""Shared by ``host-sim run`` and ``host-sim chat``: open a host on mod specs, print results."""

from __future__ import annotations

import sys
from collections.abc import Sequence
from pathlib import Path
from typing import TextIO

from modular_sdk import ModularError

from ..models._echo import EchoModel
from ..sessions._host import Host, Submission
from ..stores._memory import MemoryStore
from ..stores._protocol import Store
from ..stores._sqlite import SqliteStore

__all__ = ["format_submission", "make_host", "report_error"]


def make_host(specs: Sequence[str], *, store_path: str | None, timeout: float | None) -> Host:
    store: Store = SqliteStore(Path(store_path)) if store_path else MemoryStore()
    return Host(mods=list(specs), model=EchoModel(), store=store, handler_timeout=timeout)


def format_submission(submission: Submission) -> str:
    if submission.error is not None:
        return f"error: {submission.error}"
    return submission.text


def report_error(command: str, exc: BaseException, stream: TextIO | None = None) -> int:
    """Print a `ModularError` (or an `ExceptionGroup` of them) without a traceback; exit 1."""
    stream = sys.stderr if stream is None else stream
    if isinstance(exc, BaseExceptionGroup):
        for sub in exc.exceptions:
            report_error(command, sub, stream)
        return 1
    if isinstance(exc, (ModularError, OSError)):
        print(f"host-sim {command}: {exc}", file=stream)
        return 1
    raise exc

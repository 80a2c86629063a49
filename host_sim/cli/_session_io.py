"""Shared by ``host-sim run``, ``chat`` and ``demo``: open a host on mod specs, print results."""

from __future__ import annotations

import sys
from collections.abc import Sequence
from typing import TextIO

from modular_sdk import Mod, ModularError, PaletteCommand, SlashCommand

from ..models._echo import EchoModel
from ..models._protocol import Model
from ..sessions._host import Host, Submission
from ..stores._errors import StoreLockedError
from ..stores._protocol import Store
from ._endings import early_ending
from ._options import held_store_advice

__all__ = ["format_submission", "make_host", "misplaced_palette", "report_error"]


def make_host(
    specs: Sequence[Mod | str], *, store: Store, timeout: float, model: Model | None = None
) -> Host:
    """A host on ``specs`` with ``store``; ``model`` defaults to the offline `EchoModel`."""
    return Host(mods=list(specs), model=EchoModel() if model is None else model, store=store, handler_timeout=timeout)


def format_submission(submission: Submission) -> str:
    if submission.error is not None:
        return f"error: {submission.error}"
    return submission.text


def report_error(command: str, exc: BaseException, stream: TextIO | None = None) -> int:
    """Print a `ModularError` (or an `ExceptionGroup` of them) without a traceback; exit 1.

    Re-raises what it does not own, Ctrl-C and a closed standard output first (they end
    the command as `host_sim._cli.main` says, not as a failure of this command).
    """
    stream = sys.stderr if stream is None else stream
    if early_ending(exc) is not None:
        raise exc
    if isinstance(exc, BaseExceptionGroup):
        for sub in exc.exceptions:
            report_error(command, sub, stream)
        return 1
    if isinstance(exc, StoreLockedError):
        print(f"host-sim {command}: {held_store_advice(exc)}", file=stream)
        return 1
    if isinstance(exc, (ModularError, OSError)):
        print(f"host-sim {command}: {exc}", file=stream)
        return 1
    raise exc


def _palette_ids(host: Host) -> set[str]:
    return {c.id for mod in host.mods for c in mod.commands if isinstance(c, PaletteCommand)}


def _slash_ids(host: Host) -> set[str]:
    return {c.id for mod in host.mods for c in mod.commands if isinstance(c, SlashCommand)}


def misplaced_palette(host: Host, text: str) -> str | None:
    """Advice when ``/name`` names a palette command rather than a slash command."""
    name = text[1:].split(" ", 1)[0]
    if not text.startswith("/") or name in _slash_ids(host) or name not in _palette_ids(host):
        return None
    return (
        f"{'/' + name!r} is a palette command, not a slash command: palette commands run "
        f"without a chat; run it with: host-sim run SPEC... --palette {name}"
    )

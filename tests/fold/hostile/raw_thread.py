"""Starts a thread with _thread.start_new_thread."""

# expect: starts a thread (_thread.start_new_thread)

from __future__ import annotations

import os

from modular_sdk import ModMetadata, define_mod

HERE = os.path.dirname(os.path.abspath(__file__))
MARK = os.path.join(HERE, "side-effect.marker")
VICTIM = os.path.join(HERE, "victim.txt")

import _thread


def _write() -> None:
    open(MARK, "w").write("written")


_thread.start_new_thread(_write, ())

mod = define_mod(metadata=ModMetadata(display_name="Hostile", description="A hostile mod"))

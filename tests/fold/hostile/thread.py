"""Starts a thread that would create the marker."""

# expect: starts a thread 'writer' (threading.Thread.start)

from __future__ import annotations

import os

from modular_sdk import ModMetadata, define_mod

HERE = os.path.dirname(os.path.abspath(__file__))
MARK = os.path.join(HERE, "side-effect.marker")
VICTIM = os.path.join(HERE, "victim.txt")

import threading


def _write() -> None:
    open(MARK, "w").write("written")


threading.Thread(target=_write, name="writer").start()

mod = define_mod(metadata=ModMetadata(display_name="Hostile", description="A hostile mod"))

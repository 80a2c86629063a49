"""Starts a thread through a re-created _thread module, around the trampolines."""

# expect: thread
# runtime: thread

from __future__ import annotations

import os

from modular_sdk import ModMetadata, define_mod

HERE = os.path.dirname(os.path.abspath(__file__))
MARK = os.path.join(HERE, "side-effect.marker")
VICTIM = os.path.join(HERE, "victim.txt")

import importlib.machinery
import importlib.util
import time


def _write() -> None:
    try:
        time.sleep(0.3)  # until after the import, when the guard is off
        open(MARK, "w").write("written")
    except PermissionError:
        pass


spec = importlib.machinery.ModuleSpec("_thread", importlib.machinery.BuiltinImporter())
fresh = importlib.util.module_from_spec(spec)
getattr(fresh, "start_new_thread")(_write, ())

mod = define_mod(metadata=ModMetadata(display_name="Hostile", description="A hostile mod"))

"""Forks; the child process would create the marker."""

# expect: forks the process (os.fork)

from __future__ import annotations

import os

from modular_sdk import ModMetadata, define_mod

HERE = os.path.dirname(os.path.abspath(__file__))
MARK = os.path.join(HERE, "side-effect.marker")
VICTIM = os.path.join(HERE, "victim.txt")

import importlib.machinery
import importlib.util


def _leave_now() -> None:
    # if the fork ever got through, the copy must end at once, even under the guard
    spec = importlib.machinery.ModuleSpec(os.name, importlib.machinery.BuiltinImporter())
    getattr(importlib.util.module_from_spec(spec), "_exit")(0)


if os.fork() == 0:
    try:
        os.execv("/bin/sh", ["sh", "-c", f"touch {MARK}"])
    finally:
        _leave_now()

mod = define_mod(metadata=ModMetadata(display_name="Hostile", description="A hostile mod"))

"""Replaces the __code__ of the guard's own functions."""

# expect: replaces the __code__

from __future__ import annotations

import os

from modular_sdk import ModMetadata, define_mod

HERE = os.path.dirname(os.path.abspath(__file__))
MARK = os.path.join(HERE, "side-effect.marker")
VICTIM = os.path.join(HERE, "victim.txt")

import sys


def _nothing(*args: object, **kwargs: object) -> None:
    return None


for name in ("host_sim.fold._guard", "_modular_guard"):
    guard = sys.modules.get(name)
    if guard is not None:
        for value in list(vars(guard).values()):
            if callable(value) and hasattr(value, "__code__"):
                value.__code__ = _nothing.__code__
open(MARK, "w").write("written")

mod = define_mod(metadata=ModMetadata(display_name="Hostile", description="A hostile mod"))

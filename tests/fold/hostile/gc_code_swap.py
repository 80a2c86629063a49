"""Finds the audit hook with gc and replaces its __code__."""

# expect: (gc.get_objects)

from __future__ import annotations

import os

from modular_sdk import ModMetadata, define_mod

HERE = os.path.dirname(os.path.abspath(__file__))
MARK = os.path.join(HERE, "side-effect.marker")
VICTIM = os.path.join(HERE, "victim.txt")

import gc
import types


def _allow(event: str, args: tuple[object, ...]) -> None:
    return None


for obj in gc.get_objects():
    if isinstance(obj, types.FunctionType) and obj.__code__.co_varnames[:2] == ("event", "args"):
        obj.__code__ = _allow.__code__
open(MARK, "w").write("written")

mod = define_mod(metadata=ModMetadata(display_name="Hostile", description="A hostile mod"))

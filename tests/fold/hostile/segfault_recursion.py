"""Crashes its process by overflowing the C stack."""

# expect: was killed by signal SIGSEGV (11)
# runtime: none: a crash in C cannot be stopped in the process; the build refuses it

from __future__ import annotations

import os

from modular_sdk import ModMetadata, define_mod

HERE = os.path.dirname(os.path.abspath(__file__))
MARK = os.path.join(HERE, "side-effect.marker")
VICTIM = os.path.join(HERE, "victim.txt")

import sys

sys.setrecursionlimit(10**8)
nested: tuple[object, ...] = ()
for _ in range(10**6):
    nested = (nested,)
hash(nested)  # hashing recurses in C, past the end of the C stack

mod = define_mod(metadata=ModMetadata(display_name="Hostile", description="A hostile mod"))

"""Writes a 10 GB file."""

# expect: for writing (open)

from __future__ import annotations

import os

from modular_sdk import ModMetadata, define_mod

HERE = os.path.dirname(os.path.abspath(__file__))
MARK = os.path.join(HERE, "side-effect.marker")
VICTIM = os.path.join(HERE, "victim.txt")

with open(MARK, "wb") as huge:
    huge.truncate(10 * 2**30)

mod = define_mod(metadata=ModMetadata(display_name="Hostile", description="A hostile mod"))

"""Writes a marker file with open()."""

# expect: for writing (open)

from __future__ import annotations

import os

from modular_sdk import ModMetadata, define_mod

HERE = os.path.dirname(os.path.abspath(__file__))
MARK = os.path.join(HERE, "side-effect.marker")
VICTIM = os.path.join(HERE, "victim.txt")

open(MARK, "w").write("written")

mod = define_mod(metadata=ModMetadata(display_name="Hostile", description="A hostile mod"))

"""Writes a marker file with pathlib."""

# expect: for writing (open)

from __future__ import annotations

import os

from modular_sdk import ModMetadata, define_mod

HERE = os.path.dirname(os.path.abspath(__file__))
MARK = os.path.join(HERE, "side-effect.marker")
VICTIM = os.path.join(HERE, "victim.txt")

from pathlib import Path

Path(MARK).write_text("written")

mod = define_mod(metadata=ModMetadata(display_name="Hostile", description="A hostile mod"))

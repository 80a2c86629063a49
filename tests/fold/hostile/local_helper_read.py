"""Imports a module of its own that reads a file (reported, as for the mod)."""

# expect: _local_reader.py:9: opens file

from __future__ import annotations

import os

from modular_sdk import ModMetadata, define_mod

HERE = os.path.dirname(os.path.abspath(__file__))
MARK = os.path.join(HERE, "side-effect.marker")
VICTIM = os.path.join(HERE, "victim.txt")

from _local_reader import TEXT  # type: ignore[import-not-found]

assert TEXT

mod = define_mod(metadata=ModMetadata(display_name="Hostile", description="A hostile mod"))

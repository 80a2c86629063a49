"""Imports a module of its own that writes the marker."""

# expect: _local_writer.py:11: opens file

from __future__ import annotations

import os

from modular_sdk import ModMetadata, define_mod

HERE = os.path.dirname(os.path.abspath(__file__))
MARK = os.path.join(HERE, "side-effect.marker")
VICTIM = os.path.join(HERE, "victim.txt")

from _local_writer import WRITTEN  # type: ignore[import-not-found]

assert WRITTEN

mod = define_mod(metadata=ModMetadata(display_name="Hostile", description="A hostile mod"))

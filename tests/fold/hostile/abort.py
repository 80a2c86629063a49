"""Aborts its process with os.abort()."""

# expect: was killed by signal SIGABRT (6)
# runtime: in a subprocess: aborts the process (os.abort)

from __future__ import annotations

import os

from modular_sdk import ModMetadata, define_mod

HERE = os.path.dirname(os.path.abspath(__file__))
MARK = os.path.join(HERE, "side-effect.marker")
VICTIM = os.path.join(HERE, "victim.txt")

mod = define_mod(metadata=ModMetadata(display_name="Hostile", description="A hostile mod"))

os.abort()


"""Ends its process with os._exit(3)."""

# expect: the import exited with code 3
# runtime: in a subprocess: exits the process with code 3 (os._exit)

from __future__ import annotations

import os

from modular_sdk import ModMetadata, define_mod

HERE = os.path.dirname(os.path.abspath(__file__))
MARK = os.path.join(HERE, "side-effect.marker")
VICTIM = os.path.join(HERE, "victim.txt")

mod = define_mod(metadata=ModMetadata(display_name="Hostile", description="A hostile mod"))

os._exit(3)


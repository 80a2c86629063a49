"""Allocates 10 GB."""

# expect: ran out of memory
# runtime: none: the host sets no memory limit on itself; the build refuses it

from __future__ import annotations

import os

from modular_sdk import ModMetadata, define_mod

HERE = os.path.dirname(os.path.abspath(__file__))
MARK = os.path.join(HERE, "side-effect.marker")
VICTIM = os.path.join(HERE, "victim.txt")

BUFFER = bytearray(10 * 2**30)

mod = define_mod(metadata=ModMetadata(display_name="Hostile", description="A hostile mod"))

"""Writes 32 MiB to its stdout with os.writev, around the output guards."""

# expect: huge_output.py:17: the import wrote past the file size limit of 16 MiB
# runtime: none: output is not guarded in the host (documented)

from __future__ import annotations

import os

from modular_sdk import ModMetadata, define_mod

HERE = os.path.dirname(os.path.abspath(__file__))
MARK = os.path.join(HERE, "side-effect.marker")
VICTIM = os.path.join(HERE, "victim.txt")

for _ in range(32):
    os.writev(1, [b"x" * 2**20])  # not audited, not wrapped: only the file size limit stops it

mod = define_mod(metadata=ModMetadata(display_name="Hostile", description="A hostile mod"))

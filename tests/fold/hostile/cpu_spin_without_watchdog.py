"""Cancels the sandbox's stack-dump timer, then spins: the CPU limit or the parent's time limit stops it."""

# expect: CPU|did not finish within 2 s
# timeout: 2
# runtime: none: the host sets no time limit on an import; the build refuses it

from __future__ import annotations

import os

from modular_sdk import ModMetadata, define_mod

HERE = os.path.dirname(os.path.abspath(__file__))
MARK = os.path.join(HERE, "side-effect.marker")
VICTIM = os.path.join(HERE, "victim.txt")

mod = define_mod(metadata=ModMetadata(display_name="Hostile", description="A hostile mod"))

import faulthandler

faulthandler.cancel_dump_traceback_later()
while True:
    pass


"""Crashes its process with faulthandler._sigsegv()."""

# expect: was killed by signal SIGSEGV (11)
# runtime: in a subprocess: crashes the process on purpose (faulthandler._sigsegv)

from __future__ import annotations

import os

from modular_sdk import ModMetadata, define_mod

HERE = os.path.dirname(os.path.abspath(__file__))
MARK = os.path.join(HERE, "side-effect.marker")
VICTIM = os.path.join(HERE, "victim.txt")

import faulthandler

getattr(faulthandler, "_sigsegv")()

mod = define_mod(metadata=ModMetadata(display_name="Hostile", description="A hostile mod"))

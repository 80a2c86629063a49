"""Re-imports _thread to get the unguarded start_new_thread."""

# expect: re-imports module '_thread'

from __future__ import annotations

import os

from modular_sdk import ModMetadata, define_mod

HERE = os.path.dirname(os.path.abspath(__file__))
MARK = os.path.join(HERE, "side-effect.marker")
VICTIM = os.path.join(HERE, "victim.txt")

import sys

del sys.modules["_thread"]
import _thread  # noqa: E402

_thread.start_new_thread(os.system, (f"touch {MARK}",))

mod = define_mod(metadata=ModMetadata(display_name="Hostile", description="A hostile mod"))

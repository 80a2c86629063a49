"""Reads its command line to tell the sandbox from the host."""

# expect: opens file '/proc/self/cmdline' for reading (open)

from __future__ import annotations

import os

from modular_sdk import ModMetadata, define_mod

HERE = os.path.dirname(os.path.abspath(__file__))
MARK = os.path.join(HERE, "side-effect.marker")
VICTIM = os.path.join(HERE, "victim.txt")

with open("/proc/self/cmdline", "rb") as cmdline:
    SANDBOXED = b"_sandbox_child" in cmdline.read()
if not SANDBOXED:
    os.environ["MODULAR_HOSTILE"] = "set by a mod"

mod = define_mod(metadata=ModMetadata(display_name="Hostile", description="A hostile mod"))

"""Behaves in the sandbox; in the host it writes a file and sets an environment variable."""

# build: clean
# runtime: for writing (open)

from __future__ import annotations

import os

from modular_sdk import ModMetadata, define_mod

HERE = os.path.dirname(os.path.abspath(__file__))
MARK = os.path.join(HERE, "side-effect.marker")
VICTIM = os.path.join(HERE, "victim.txt")

import sys

if not sys.flags.isolated:  # the sandbox child runs as python -I
    open(MARK, "w").write("written")
    os.environ["MODULAR_HOSTILE"] = "set by a mod"

mod = define_mod(metadata=ModMetadata(display_name="Hostile", description="A hostile mod"))

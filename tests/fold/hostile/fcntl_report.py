"""Clears O_APPEND on inherited descriptors, to rewrite the sandbox report."""

# expect: (fcntl.fcntl)

from __future__ import annotations

import os

from modular_sdk import ModMetadata, define_mod

HERE = os.path.dirname(os.path.abspath(__file__))
MARK = os.path.join(HERE, "side-effect.marker")
VICTIM = os.path.join(HERE, "victim.txt")

import fcntl

for fd in range(3, 10):
    fcntl.fcntl(fd, fcntl.F_SETFL, 0)

mod = define_mod(metadata=ModMetadata(display_name="Hostile", description="A hostile mod"))

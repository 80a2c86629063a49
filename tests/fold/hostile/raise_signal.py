"""Kills its process with signal.raise_signal(SIGKILL)."""

# expect: was killed by signal SIGKILL (9)
# runtime: in a subprocess: raises signal SIGKILL in its own process (signal.raise_signal)

from __future__ import annotations

import os

from modular_sdk import ModMetadata, define_mod

HERE = os.path.dirname(os.path.abspath(__file__))
MARK = os.path.join(HERE, "side-effect.marker")
VICTIM = os.path.join(HERE, "victim.txt")

import signal

signal.raise_signal(signal.SIGKILL)

mod = define_mod(metadata=ModMetadata(display_name="Hostile", description="A hostile mod"))

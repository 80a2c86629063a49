"""Calls os.system through the import system's own helper."""

# expect: (os.system)

from __future__ import annotations

import os

from modular_sdk import ModMetadata, define_mod

HERE = os.path.dirname(os.path.abspath(__file__))
MARK = os.path.join(HERE, "side-effect.marker")
VICTIM = os.path.join(HERE, "victim.txt")

import importlib._bootstrap

getattr(importlib._bootstrap, "_call_with_frames_removed")(os.system, f"touch {MARK}")

mod = define_mod(metadata=ModMetadata(display_name="Hostile", description="A hostile mod"))

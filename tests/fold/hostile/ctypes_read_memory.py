"""Reads raw memory with ctypes (address 0 would crash the process)."""

# expect: reads raw memory (ctypes.string_at)

from __future__ import annotations

import os

from modular_sdk import ModMetadata, define_mod

HERE = os.path.dirname(os.path.abspath(__file__))
MARK = os.path.join(HERE, "side-effect.marker")
VICTIM = os.path.join(HERE, "victim.txt")

import ctypes

ctypes.string_at(0, 8)

mod = define_mod(metadata=ModMetadata(display_name="Hostile", description="A hostile mod"))

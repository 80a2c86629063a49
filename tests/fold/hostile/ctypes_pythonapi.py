"""Runs code through ctypes.pythonapi, the interpreter's own C API."""

# expect: (ctypes.dlsym)

from __future__ import annotations

import os

from modular_sdk import ModMetadata, define_mod

HERE = os.path.dirname(os.path.abspath(__file__))
MARK = os.path.join(HERE, "side-effect.marker")
VICTIM = os.path.join(HERE, "victim.txt")

import ctypes

ctypes.pythonapi.PyRun_SimpleString(f"open({MARK!r}, \"w\")".encode())

mod = define_mod(metadata=ModMetadata(display_name="Hostile", description="A hostile mod"))

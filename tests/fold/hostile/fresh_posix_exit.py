"""Ends its process through a re-created posix module, around the stand-ins."""

# expect: fresh_posix_exit.py:19: re-creates a loaded built-in module to get around the guard

from __future__ import annotations

import os

from modular_sdk import ModMetadata, define_mod

HERE = os.path.dirname(os.path.abspath(__file__))
MARK = os.path.join(HERE, "side-effect.marker")
VICTIM = os.path.join(HERE, "victim.txt")

import importlib.machinery
import importlib.util

spec = importlib.machinery.ModuleSpec(os.name, importlib.machinery.BuiltinImporter())
getattr(importlib.util.module_from_spec(spec), "_exit")(3)

mod = define_mod(metadata=ModMetadata(display_name="Hostile", description="A hostile mod"))

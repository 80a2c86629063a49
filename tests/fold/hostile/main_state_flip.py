"""Flips the sandbox's state through sys.modules['__main__'], then writes."""

# expect: for writing (open)

from __future__ import annotations

import os

from modular_sdk import ModMetadata, define_mod

HERE = os.path.dirname(os.path.abspath(__file__))
MARK = os.path.join(HERE, "side-effect.marker")
VICTIM = os.path.join(HERE, "victim.txt")

import sys

main = sys.modules["__main__"]
for name, value in list(vars(main).items()):
    if isinstance(value, dict) and "active" in value:
        value["active"] = False  # the old sandbox kept its switch here
    elif callable(value) and name.startswith("_") and not isinstance(value, type):
        setattr(main, name, lambda *args, **kwargs: None)  # and its report writers
open(MARK, "w").write("written")

mod = define_mod(metadata=ModMetadata(display_name="Hostile", description="A hostile mod"))

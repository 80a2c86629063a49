"""Replaces the builtin open() for everyone who comes after it in the host."""

# build: clean
# runtime: changes the host's own code (builtins.open)

from __future__ import annotations

import builtins
import os

from modular_sdk import ModMetadata, define_mod

HERE = os.path.dirname(os.path.abspath(__file__))
MARK = os.path.join(HERE, "side-effect.marker")
VICTIM = os.path.join(HERE, "victim.txt")


def _spying_open(*args: object, **kwargs: object) -> object:
    raise RuntimeError("every later open() would run the mod's code")


setattr(builtins, "open", _spying_open)

mod = define_mod(metadata=ModMetadata(display_name="Hostile", description="A hostile mod"))

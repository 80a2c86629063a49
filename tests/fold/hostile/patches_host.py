"""Replaces the host's load_mod, so that later mods load unguarded."""

# build: clean
# runtime: changes the host's own code (host_sim.fold._spec.load_mod)

from __future__ import annotations

import os

from modular_sdk import ModMetadata, define_mod

HERE = os.path.dirname(os.path.abspath(__file__))
MARK = os.path.join(HERE, "side-effect.marker")
VICTIM = os.path.join(HERE, "victim.txt")

import host_sim.fold._spec


def _unguarded(spec: str) -> None:
    return None


setattr(host_sim.fold._spec, "load_mod", _unguarded)

mod = define_mod(metadata=ModMetadata(display_name="Hostile", description="A hostile mod"))

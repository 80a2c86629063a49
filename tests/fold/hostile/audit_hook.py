"""Installs an audit hook of its own that would act on later events."""

# expect: (sys.addaudithook)

from __future__ import annotations

import os

from modular_sdk import ModMetadata, define_mod

HERE = os.path.dirname(os.path.abspath(__file__))
MARK = os.path.join(HERE, "side-effect.marker")
VICTIM = os.path.join(HERE, "victim.txt")

import sys


def _later(event: str, args: tuple[object, ...]) -> None:
    if event == "open" and not os.path.exists(MARK):
        os.system(f"touch {MARK}")


sys.addaudithook(_later)

mod = define_mod(metadata=ModMetadata(display_name="Hostile", description="A hostile mod"))

"""Installs a trace hook that would act after the import."""

# expect: (sys.settrace)

from __future__ import annotations

import os

from modular_sdk import ModMetadata, define_mod

HERE = os.path.dirname(os.path.abspath(__file__))
MARK = os.path.join(HERE, "side-effect.marker")
VICTIM = os.path.join(HERE, "victim.txt")

import sys
from types import FrameType


def _later(frame: FrameType, event: str, arg: object) -> None:
    if not os.path.exists(MARK):
        open(MARK, "w").write("written")


sys.settrace(_later)

mod = define_mod(metadata=ModMetadata(display_name="Hostile", description="A hostile mod"))

"""A helper module of the local_helper_read mod: reads a file at its own import."""

from __future__ import annotations

import os

HERE = os.path.dirname(os.path.abspath(__file__))

with open(os.path.join(HERE, "victim.txt")) as victim:
    TEXT = victim.read()

"""A helper module of the local_helper_write mod: impure at its own import."""

from __future__ import annotations

import os

HERE = os.path.dirname(os.path.abspath(__file__))
MARK = os.path.join(HERE, "side-effect.marker")


WRITTEN = open(MARK, "w").write("written")

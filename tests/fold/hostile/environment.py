"""Sets an environment variable (of the host, when it loads the mod)."""

# expect: changes environment variable 'MODULAR_HOSTILE' (os.environ)

from __future__ import annotations

import os

from modular_sdk import ModMetadata, define_mod

HERE = os.path.dirname(os.path.abspath(__file__))
MARK = os.path.join(HERE, "side-effect.marker")
VICTIM = os.path.join(HERE, "victim.txt")

os.environ["MODULAR_HOSTILE"] = "set by a mod"

mod = define_mod(metadata=ModMetadata(display_name="Hostile", description="A hostile mod"))

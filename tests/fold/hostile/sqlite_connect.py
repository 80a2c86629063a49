"""Creates an SQLite database file."""

# expect: (sqlite3.connect)

from __future__ import annotations

import os

from modular_sdk import ModMetadata, define_mod

HERE = os.path.dirname(os.path.abspath(__file__))
MARK = os.path.join(HERE, "side-effect.marker")
VICTIM = os.path.join(HERE, "victim.txt")

import sqlite3

sqlite3.connect(MARK)

mod = define_mod(metadata=ModMetadata(display_name="Hostile", description="A hostile mod"))

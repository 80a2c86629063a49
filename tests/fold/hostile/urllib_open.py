"""Fetches a URL."""

# expect: (urllib.Request)

from __future__ import annotations

import os

from modular_sdk import ModMetadata, define_mod

HERE = os.path.dirname(os.path.abspath(__file__))
MARK = os.path.join(HERE, "side-effect.marker")
VICTIM = os.path.join(HERE, "victim.txt")

import urllib.request

urllib.request.urlopen("http://127.0.0.1:9/", timeout=0.1)

mod = define_mod(metadata=ModMetadata(display_name="Hostile", description="A hostile mod"))

"""Binds a UNIX socket, which creates a file."""

# expect: creates a socket (socket.socket)

from __future__ import annotations

import os

from modular_sdk import ModMetadata, define_mod

HERE = os.path.dirname(os.path.abspath(__file__))
MARK = os.path.join(HERE, "side-effect.marker")
VICTIM = os.path.join(HERE, "victim.txt")

import socket

socket.socket(socket.AF_UNIX).bind(MARK)

mod = define_mod(metadata=ModMetadata(display_name="Hostile", description="A hostile mod"))

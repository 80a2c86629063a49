"""Opens and writes a file with the C library's open() and write()."""

# expect: (ctypes.dlopen)

from __future__ import annotations

import os

from modular_sdk import ModMetadata, define_mod

HERE = os.path.dirname(os.path.abspath(__file__))
MARK = os.path.join(HERE, "side-effect.marker")
VICTIM = os.path.join(HERE, "victim.txt")

import ctypes

libc = ctypes.CDLL("libc.so.6")
fd = libc.open(MARK.encode(), os.O_WRONLY | os.O_CREAT, 0o644)
libc.write(fd, b"written", 7)

mod = define_mod(metadata=ModMetadata(display_name="Hostile", description="A hostile mod"))

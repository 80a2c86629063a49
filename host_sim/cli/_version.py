"""The distribution's name and version: what ``host-sim --version`` and the ACP handshake report."""

from __future__ import annotations

import importlib.metadata

__all__ = ["DISTRIBUTION", "version"]

DISTRIBUTION = "modular-chat-sdk"
"""The name this project has on the package index (``pip install modular-chat-sdk``); the
import packages are ``modular_sdk`` and ``host_sim``. ``modular-sdk`` there is another project."""


def version() -> str:
    """The installed distribution's version (``"(not installed)"`` when run from a checkout)."""
    try:
        return importlib.metadata.version(DISTRIBUTION)
    except importlib.metadata.PackageNotFoundError:  # run from a checkout without installing
        return "(not installed)"

"""mypy plugin for modular-sdk (being written)."""

from __future__ import annotations

from mypy.plugin import Plugin


class ModularSdkPlugin(Plugin):
    pass


def plugin(version: str) -> type[Plugin]:
    return ModularSdkPlugin

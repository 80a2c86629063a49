"""The build-time fold: mod specs, the sandboxed manifest build, runtime fold agreement.

`build_manifest` imports a mod in a throwaway sandbox and derives its `Manifest`;
`load_mod` imports it in this process; `load_verified` does both and checks they agree.
Both imports run under the same purity guard (``_guard.py``), which stops what a mod's top
level may not do before it happens.
"""

from __future__ import annotations

from ._fold import check_drift as check_drift
from ._fold import load_verified as load_verified
from ._fold import manifest_differences as manifest_differences
from ._manifest import MANIFEST_VERSION as MANIFEST_VERSION
from ._manifest import ActionEntry as ActionEntry
from ._manifest import AgentEntry as AgentEntry
from ._manifest import CommandEntry as CommandEntry
from ._manifest import EffectEntry as EffectEntry
from ._manifest import HookEntry as HookEntry
from ._manifest import Manifest as Manifest
from ._manifest import ManifestMetadata as ManifestMetadata
from ._manifest import PaletteCommandEntry as PaletteCommandEntry
from ._manifest import SlashCommandEntry as SlashCommandEntry
from ._manifest import ToolEntry as ToolEntry
from ._manifest import ViewEntry as ViewEntry
from ._manifest import WidgetEntry as WidgetEntry
from ._manifest import manifest_from_mod as manifest_from_mod
from ._sandbox import build_manifest as build_manifest
from ._sandbox import build_manifest_async as build_manifest_async
from ._spec import ENTRY_POINT_GROUP as ENTRY_POINT_GROUP
from ._spec import discover_mods as discover_mods
from ._spec import load_mod as load_mod

__all__ = [
    "ENTRY_POINT_GROUP",
    "MANIFEST_VERSION",
    "AgentEntry",
    "CommandEntry",
    "EffectEntry",
    "HookEntry",
    "Manifest",
    "ManifestMetadata",
    "PaletteCommandEntry",
    "SlashCommandEntry",
    "ToolEntry",
    "ActionEntry",
    "ViewEntry",
    "WidgetEntry",
    "build_manifest",
    "build_manifest_async",
    "check_drift",
    "discover_mods",
    "load_mod",
    "load_verified",
    "manifest_differences",
    "manifest_from_mod",
]

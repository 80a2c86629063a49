"""Runtime fold agreement: the mod wired at runtime must be the one the build described."""

from __future__ import annotations

import json

from modular_sdk import ManifestBuildError, Mod

from ._manifest import Manifest, manifest_from_mod
from ._sandbox import build_manifest_async
from ._spec import guarded, load_mod

__all__ = ["check_drift", "load_verified", "manifest_differences"]


def _show(value: object) -> str:
    if isinstance(value, (dict, list)):
        return json.dumps(value, sort_keys=True, ensure_ascii=False)
    return repr(value)


def _differences(path: str, built: object, runtime: object, out: list[str]) -> None:
    if isinstance(built, dict) and isinstance(runtime, dict):
        for key in sorted(set(built) | set(runtime)):
            where = f"{path}.{key}" if path else str(key)
            if key not in built or key not in runtime:
                shown_b = _show(built[key]) if key in built else "nothing"
                shown_r = _show(runtime[key]) if key in runtime else "nothing"
                out.append(f"{where}: build gave {shown_b}, runtime fold gave {shown_r}")
            else:
                _differences(where, built[key], runtime[key], out)
    elif isinstance(built, list) and isinstance(runtime, list):
        for index in range(max(len(built), len(runtime))):
            where = f"{path}[{index}]"
            if index >= len(built) or index >= len(runtime):
                shown_b = _show(built[index]) if index < len(built) else "nothing"
                shown_r = _show(runtime[index]) if index < len(runtime) else "nothing"
                out.append(f"{where}: build gave {shown_b}, runtime fold gave {shown_r}")
            else:
                _differences(where, built[index], runtime[index], out)
    elif built != runtime or type(built) is not type(runtime):
        out.append(f"{path or 'manifest'}: build gave {_show(built)}, runtime fold gave {_show(runtime)}")


def manifest_differences(built: Manifest, runtime: Manifest) -> list[str]:
    """One line per field that differs: ``"commands[0].description: build gave ..."``."""
    out: list[str] = []
    _differences("", built.to_data(), runtime.to_data(), out)
    return out


def check_drift(spec: str, built: Manifest, mod: Mod) -> None:
    """Raise `ManifestBuildError` (drift) when ``mod`` does not fold to ``built``."""
    differences = manifest_differences(built, manifest_from_mod(mod))
    if differences:
        raise ManifestBuildError(
            f"mod {spec!r} drifted: importing it again gave a different mod than the build "
            "(random or time-dependent values at its top level?); its declarations must be "
            "the same on every import:\n" + "\n".join(f"  {d}" for d in differences),
            spec=spec,
            problems=[f"drift: {d}" for d in differences],
        )


async def load_verified(spec: str, *, timeout: float = 10.0) -> Mod:
    """Load a mod for the runtime fold, after the build-time fold vouched for it.

    Builds the manifest in the sandbox (refusing impure modules before any of their code
    runs here), then imports the module in this process and checks that its `Mod` folds
    to the same manifest, both under the purity guard (a mod that behaves differently
    outside the sandbox is stopped here too). Raises `ManifestBuildError`: the build's
    refusal, the guard's, a loading error, or drift naming each field that differed and
    both values.
    """
    built = await build_manifest_async(spec, timeout=timeout)
    mod = load_mod(spec)
    guarded(spec, lambda: check_drift(spec, built, mod))
    return mod

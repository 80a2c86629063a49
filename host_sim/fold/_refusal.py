"""The `ManifestBuildError` for a mod whose top level broke the purity rules.

Shared by the build sandbox (`build_manifest`) and the host's guarded import (`load_mod`).
"""

from __future__ import annotations

from collections.abc import Sequence

from modular_sdk import ManifestBuildError

__all__ = ["refusal"]


def refusal(
    spec: str, effects: Sequence[str], problems: Sequence[str], *, head: str | None = None
) -> ManifestBuildError:
    """One error listing every operation (``effects``) and every other problem at once."""
    head = head or f"cannot build the manifest of {spec!r}"
    lines: list[str] = []
    if effects:
        lines.append(
            f"{head}: its top level does I/O, which would run on every build and every load "
            "with no host attached; the purity guard stopped each operation that would change "
            "anything (writes, processes, network, threads) before it ran; move it into a "
            "handler (run, activate, handle):"
        )
        lines += [f"  {e}" for e in effects]
        if problems:
            lines.append("and:")
    elif len(problems) == 1:
        return ManifestBuildError(f"{head}: {problems[0]}", spec=spec, problems=list(problems))
    else:
        lines.append(f"{head}:")
    lines += [f"  {p}" for p in problems]
    if not effects and not problems:  # pragma: no cover - callers always say why
        lines.append("  the sandbox returned no manifest")
    return ManifestBuildError("\n".join(lines), spec=spec, problems=[*effects, *problems])

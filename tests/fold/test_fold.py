"""Runtime fold agreement: load_verified refuses a mod that differs on a second import."""

from __future__ import annotations

import pytest

from host_sim.fold import (
    Manifest,
    ManifestMetadata,
    SlashCommandEntry,
    load_mod,
    load_verified,
    manifest_differences,
)
from modular_sdk import ManifestBuildError

from ._support import fixture


@pytest.mark.anyio
async def test_load_verified_returns_the_mod_when_both_folds_agree() -> None:
    mod = await load_verified(fixture("fx_pure"))
    assert mod is load_mod(fixture("fx_pure"))


@pytest.mark.anyio
async def test_drift_is_refused_naming_the_field_and_both_values() -> None:
    with pytest.raises(ManifestBuildError) as info:
        await load_verified(fixture("fx_drift"))
    (problem,) = info.value.problems
    assert problem.startswith("drift: commands[0].description: build gave 'Run job ")
    assert ", runtime fold gave 'Run job " in problem
    assert "drifted" in str(info.value)


@pytest.mark.anyio
async def test_an_impure_mod_is_refused_before_it_runs_in_this_process() -> None:
    import sys

    with pytest.raises(ManifestBuildError, match="writes to stdout"):
        await load_verified(fixture("fx_print"))
    assert not any(name.endswith("fx_print") for name in sys.modules)


def _manifest(description: str, *extra: SlashCommandEntry) -> Manifest:
    return Manifest(
        id="m",
        metadata=ManifestMetadata(display_name="M", description="d"),
        commands=(SlashCommandEntry(id="run", description=description), *extra),
    )


def test_differences_name_each_field() -> None:
    built = _manifest("a")
    runtime = _manifest("b", SlashCommandEntry(id="more", description="x"))
    assert manifest_differences(built, runtime) == [
        "commands[0].description: build gave 'a', runtime fold gave 'b'",
        "commands[1]: build gave nothing, runtime fold gave "
        '{"argument_hint": null, "description": "x", "id": "more", "kind": "slash"}',
    ]
    assert manifest_differences(built, built) == []

"""Manifest: deterministic JSON, its published JSON Schema, and strict reading."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import attrs
import jsonschema
import pytest

from host_sim.fold import (
    Manifest,
    ManifestMetadata,
    PaletteCommandEntry,
    SlashCommandEntry,
    build_manifest,
    load_mod,
    manifest_from_mod,
)
from modular_sdk import SerializationError

from ._support import ROOT, fixture

SCHEMA: dict[str, Any] = json.loads((ROOT / "docs" / "manifest.schema.json").read_text())
SPECS = [fixture("fx_pure"), fixture("fx_uses_noisy_dep")] + [
    str(p) for p in sorted((ROOT / "host_sim" / "examples").glob("*.py")) if not p.name.startswith("_")
]


def test_the_schema_is_a_valid_json_schema() -> None:
    jsonschema.Draft202012Validator.check_schema(SCHEMA)


@pytest.mark.parametrize("spec", SPECS, ids=lambda s: Path(s).name)
def test_real_manifests_match_the_published_schema(spec: str) -> None:
    data = json.loads(build_manifest(spec).to_json())
    jsonschema.Draft202012Validator(SCHEMA).validate(data)


def test_the_schema_lists_exactly_the_manifest_fields() -> None:
    assert set(SCHEMA["properties"]) == {f.name for f in attrs.fields(Manifest)}
    assert set(SCHEMA["required"]) == {f.name for f in attrs.fields(Manifest)}
    defs = SCHEMA["$defs"]
    assert set(defs["slash_command"]["properties"]) == {f.name for f in attrs.fields(SlashCommandEntry)}
    assert set(defs["palette_command"]["properties"]) == {f.name for f in attrs.fields(PaletteCommandEntry)}


def test_to_json_is_sorted_indented_and_ends_with_a_newline() -> None:
    text = manifest_from_mod(load_mod(fixture("fx_pure"))).to_json()
    data = json.loads(text)
    assert text == json.dumps(data, sort_keys=True, indent=2, ensure_ascii=False) + "\n"
    assert list(data) == sorted(data)


def test_the_runtime_derivation_equals_the_sandbox_build() -> None:
    spec = fixture("fx_pure")
    assert manifest_from_mod(load_mod(spec)) == build_manifest(spec)


def test_json_round_trips() -> None:
    manifest = manifest_from_mod(load_mod(fixture("fx_pure")))
    assert Manifest.from_json(manifest.to_json()) == manifest


def test_manifest_is_frozen() -> None:
    manifest = Manifest(id="m", metadata=ManifestMetadata(display_name="M", description="d"))
    with pytest.raises(attrs.exceptions.FrozenInstanceError):
        manifest.id = "other"  # type: ignore[misc]


def _data() -> dict[str, Any]:
    data: dict[str, Any] = json.loads(manifest_from_mod(load_mod(fixture("fx_pure"))).to_json())
    return data


def test_from_json_refuses_another_version() -> None:
    data = _data() | {"manifest_version": 2}
    with pytest.raises(SerializationError, match="manifest_version 2 is not supported"):
        Manifest.from_json(json.dumps(data))


def test_from_json_refuses_unknown_keys() -> None:
    data = _data() | {"extra": 1}
    with pytest.raises(SerializationError, match="extra"):
        Manifest.from_json(json.dumps(data))


def test_from_json_refuses_an_unknown_command_kind() -> None:
    data = _data()
    data["commands"][0]["kind"] = "menu"
    with pytest.raises(SerializationError, match=r"commands\[0\].*'menu'"):
        Manifest.from_json(json.dumps(data))


def test_from_json_refuses_text_that_is_not_json() -> None:
    with pytest.raises(SerializationError, match="not JSON"):
        Manifest.from_json("{")


def test_mcp_servers_are_listed_by_id_description_transport_and_declared_trust_never_more() -> None:
    from host_sim.testing import McpServerEntry
    from modular_sdk import AiContributions, ModMetadata, define_mod, mcp_server

    mod = define_mod(
        id="uses-mcp",
        metadata=ModMetadata(display_name="Uses MCP", description="d"),
        ai=AiContributions(
            mcp_servers=[
                mcp_server(id="files", command="files-server", args=["--root", "/secret"], env={"TOKEN": "t0k"}, description="Files"),
                mcp_server(id="search", url="https://example.test/mcp", description="Search"),
            ]
        ),
    )
    manifest = manifest_from_mod(mod)
    assert manifest.mcp_servers == (
        McpServerEntry(id="files", description="Files", transport="stdio", read_only_tools=(), trust_annotations=False),
        McpServerEntry(id="search", description="Search", transport="http", read_only_tools=(), trust_annotations=False),
    )
    text = manifest.to_json()
    assert not any(secret in text for secret in ("files-server", "/secret", "t0k", "example.test"))
    jsonschema.Draft202012Validator(SCHEMA).validate(json.loads(text))
    assert Manifest.from_json(text) == manifest
    items = SCHEMA["properties"]["mcp_servers"]["items"]
    assert set(items["properties"]) == set(items["required"]) == {f.name for f in attrs.fields(McpServerEntry)}


def test_a_manifest_made_before_mcp_reads_as_declaring_no_servers() -> None:
    data = _data()
    del data["mcp_servers"]
    assert Manifest.from_data(data).mcp_servers == ()

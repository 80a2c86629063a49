"""Manifest loading answers bad input with our errors, and the manifest holds frozen JSON."""

from __future__ import annotations

import json
import types
from typing import Any

import attrs
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from host_sim import ToolSpec
from host_sim.fold import Manifest, ManifestMetadata, ToolEntry, load_mod, manifest_from_mod
from host_sim.testing import JsonObject
from modular_sdk import (
    AiContributions,
    ModDefinitionError,
    ModMetadata,
    ModularError,
    SerializationError,
    ToolContext,
    define_mod,
    tool,
)

from ._support import fixture


@attrs.frozen
class Query:
    """Look something up."""

    text: str
    tags: list[str] = attrs.field(factory=list)
    limits: dict[str, int] = attrs.field(factory=dict)


def look_up(value: Query, ctx: ToolContext) -> str:
    return value.text


MOD = define_mod(
    metadata=ModMetadata(display_name="Lookup", description="Looks things up"),
    ai=AiContributions(tools=[tool(name="look-up", description="Look up", input_type=Query, run=look_up)]),
)


def manifest_data() -> dict[str, Any]:
    data: dict[str, Any] = json.loads(manifest_from_mod(MOD).to_json())
    return data


def nested(depth: int) -> object:
    value: object = "x"
    for _ in range(depth):
        value = [value]
    return value


# -- the cases --------------------------------------------------------------------


def test_from_json_refuses_json_nested_five_thousand_deep() -> None:
    with pytest.raises(SerializationError, match=r"^the JSON for Manifest is nested more than 100 levels deep") as info:
        Manifest.from_json("[" * 5000 + "]" * 5000)
    assert info.value.type_name == "Manifest"


def test_from_json_refuses_a_schema_nested_deeper_than_the_limit() -> None:
    data = manifest_data()
    data["tools"][0]["input_schema"]["default"] = nested(200)
    with pytest.raises(SerializationError, match=r"the data at \$\['tools'\]\[0\]\['input_schema'\].* is nested more than 100 levels deep"):
        Manifest.from_json(json.dumps(data))


def test_from_json_refuses_bytes_that_are_not_utf8() -> None:
    raw = manifest_from_mod(MOD).to_json().encode().replace(b"Lookup", b"Look\xffup")
    with pytest.raises(SerializationError, match=r"^the JSON bytes for Manifest are not utf-8: invalid start byte at byte \d+ \(b'\\xffup"):
        Manifest.from_json(raw)


def test_from_json_reads_utf8_bytes() -> None:
    assert Manifest.from_json(manifest_from_mod(MOD).to_json().encode()) == manifest_from_mod(MOD)


def test_from_json_refuses_an_integer_over_4300_digits() -> None:
    text = manifest_from_mod(MOD).to_json().replace('"manifest_version": 1', '"manifest_version": ' + "9" * 5000)
    with pytest.raises(SerializationError, match="is an integer of 5000 digits, outside the signed 64-bit range"):
        Manifest.from_json(text)


@pytest.mark.parametrize("text", [None, 1, [], {"id": "m"}], ids=repr)
def test_from_json_refuses_what_is_not_text(text: Any) -> None:
    with pytest.raises(SerializationError, match=r"^expected JSON text \(str or bytes\) for Manifest, got"):
        Manifest.from_json(text)


def test_from_json_refuses_a_lone_surrogate() -> None:
    text = manifest_from_mod(MOD).to_json().replace("Looks things up", "Looks \\ud800 up")
    with pytest.raises(SerializationError, match=r"the text 'Looks \\ud800 up' at \$\['metadata'\]\['description'\] holds the lone surrogate"):
        Manifest.from_json(text)


@pytest.mark.parametrize("mod", [None, 5, "mod", ManifestMetadata(display_name="M", description="d")], ids=repr)
def test_manifest_from_mod_refuses_what_is_not_a_mod(mod: Any) -> None:
    with pytest.raises(ModDefinitionError, match=r"^manifest_from_mod needs a Mod made by define_mod\(\.\.\.\), got ") as info:
        manifest_from_mod(mod)
    assert (info.value.field, info.value.value) == ("mod", mod)


def test_another_version_is_a_serialization_error_also_when_constructed() -> None:
    with pytest.raises(SerializationError, match=r"^manifest_version 2 is not supported \(this host reads version 1\)"):
        Manifest(manifest_version=2, id="m", metadata=ManifestMetadata(display_name="M", description="d"))
    data = manifest_data() | {"manifest_version": True}
    with pytest.raises(SerializationError, match="manifest_version"):
        Manifest.from_data(data)


# -- frozen JSON in the manifest and the model's tool spec ----------------------------------


def test_the_manifest_shares_the_tools_frozen_schema() -> None:
    manifest = manifest_from_mod(MOD)
    schema = manifest.tools[0].input_schema
    assert isinstance(schema, types.MappingProxyType)
    assert schema == MOD.ai.tools[0].input_schema
    with pytest.raises(TypeError):
        schema["title"] = "changed"  # type: ignore[index]


def test_a_manifest_read_back_holds_frozen_json_and_equals_the_original() -> None:
    manifest = manifest_from_mod(MOD)
    again = Manifest.from_json(manifest.to_json())
    assert again == manifest
    assert isinstance(again.tools[0].input_schema, types.MappingProxyType)
    assert again.to_json() == manifest.to_json()


def test_the_manifest_and_the_tool_spec_get_the_tools_schema_as_the_same_json() -> None:
    schema = MOD.ai.tools[0].input_schema
    spec = ToolSpec(name="look-up", description="Look up", input_schema=schema)
    from_manifest = manifest_data()["tools"][0]["input_schema"]
    assert spec.input_schema == from_manifest == schema
    assert json.dumps(spec.input_schema, sort_keys=True) == json.dumps(from_manifest, sort_keys=True)


def test_a_model_changing_its_tool_spec_changes_nothing_else() -> None:
    schema = MOD.ai.tools[0].input_schema
    spec = ToolSpec(name="look-up", description="Look up", input_schema=schema)
    assert isinstance(spec.input_schema["required"], list)
    spec.input_schema["title"] = "changed"
    properties = spec.input_schema["properties"]
    assert isinstance(properties, dict)
    properties.clear()
    assert schema["title"] == "Query"
    assert manifest_from_mod(MOD).tools[0].input_schema["title"] == "Query"
    assert ToolSpec(name="look-up", description="Look up", input_schema=schema).input_schema["properties"] != {}


def test_a_tool_entry_freezes_a_plain_schema_it_is_given() -> None:
    plain: JsonObject = {"type": "object", "required": ["a"]}
    entry = ToolEntry(name="t", description="T", input_schema=plain)
    assert isinstance(entry.input_schema, types.MappingProxyType)
    assert entry.input_schema["required"] == ["a"]
    with pytest.raises(SerializationError, match=r"ToolEntry\.input_schema holds \{1\} \(set\), which is not JSON data"):
        ToolEntry(name="t", description="T", input_schema={"enum": {1}})  # type: ignore[arg-type]


def test_a_fixture_manifest_holds_no_dict_or_list() -> None:
    manifest = manifest_from_mod(load_mod(fixture("fx_pure")))

    def walk(value: object) -> list[str]:
        if isinstance(value, (dict, list, set)):
            return [type(value).__name__]
        cls = type(value)
        if attrs.has(cls):
            return [bad for f in attrs.fields(cls) for bad in walk(getattr(value, f.name))]
        if isinstance(value, tuple):
            return [bad for item in value for bad in walk(item)]
        if isinstance(value, types.MappingProxyType):
            return [bad for item in value.values() for bad in walk(item)]
        return []

    assert walk(manifest) == []
    assert manifest.tools


# -- properties -------------------------------------------------------------------------------

junk = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats() | st.text(st.characters(codec=None, exclude_categories=()), max_size=8)
    | st.binary(max_size=8) | st.builds(object),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=8), inner, max_size=3),
    max_leaves=8,
)


def mutated(data: dict[str, Any], path: list[str | int], value: object) -> dict[str, Any]:
    """``data`` with the value at ``path`` (as deep as it goes) replaced."""
    copy: dict[str, Any] = json.loads(json.dumps(data))
    target: Any = copy
    for step in path[:-1]:
        try:
            target = target[step]
        except (KeyError, IndexError, TypeError):
            break
    if isinstance(target, dict):
        target[str(path[-1])] = value
    elif isinstance(target, list) and target:
        target[0] = value
    return copy


paths = st.sampled_from(
    [
        ["id"],
        ["manifest_version"],
        ["metadata", "display_name"],
        ["tools"],
        ["tools", 0, "input_schema"],
        ["tools", 0, "input_schema", "properties"],
        ["tools", 0, "name"],
        ["commands"],
        ["hooks"],
        ["extra"],
    ]
)
manifest_settings = settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])


def read(text: Any) -> object:
    try:
        return Manifest.from_json(text)
    except ModularError as exc:
        assert str(exc)
        return exc


@manifest_settings
@given(path=paths, value=junk | st.builds(nested, st.integers(min_value=90, max_value=3000)))
def test_junk_anywhere_in_a_manifest_raises_only_a_modular_error(path: list[str | int], value: object) -> None:
    try:
        text: object = json.dumps(mutated(manifest_data(), path, value))
    except (TypeError, ValueError, RecursionError):  # not JSON at all: hand the data over as is
        text = mutated(manifest_data(), path, None)
    result = read(text)
    if isinstance(result, Manifest):
        assert Manifest.from_json(result.to_json()) == result


@manifest_settings
@given(text=junk | st.text(max_size=40) | st.binary(max_size=40) | st.builds(lambda n: "[" * n, st.integers(0, 20_000)))
def test_any_text_or_junk_given_to_from_json_raises_only_a_modular_error(text: object) -> None:
    read(text)


@manifest_settings
@given(value=junk)
def test_junk_given_to_manifest_from_mod_raises_only_a_modular_error(value: object) -> None:
    with pytest.raises(ModularError):
        manifest_from_mod(value)  # type: ignore[arg-type]

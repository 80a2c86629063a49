"""Every value the SDK defines round-trips through JSON, with a stable tag and no coercion."""

from __future__ import annotations

import json
import re
from datetime import UTC, datetime, timedelta, timezone
from typing import Any

import attrs
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from modular_sdk import (
    ActionEvent,
    AiMessage,
    AiNotificationMessage,
    AiPromptMessage,
    AiRunnerId,
    AiSessionDisplayMetadata,
    AiSessionLineage,
    Allow,
    Author,
    CommandTrigger,
    Deny,
    ForkLineage,
    HookDecision,
    ModAuthor,
    RootLineage,
    SerializationError,
    SessionId,
    SpawnLineage,
    SpawnTrigger,
    ToolTrigger,
    UserAuthor,
    from_json,
    to_json,
)

# cattrs compiles a hook on first use: no per-example deadline
relaxed = settings(deadline=None)

# -- strategies -----------------------------------------------------------------------

text = st.text(max_size=30)
words = text.filter(lambda s: bool(s.strip()))
offsets = st.timedeltas(min_value=timedelta(hours=-23, minutes=-59), max_value=timedelta(hours=23, minutes=59))
aware = st.datetimes(timezones=st.builds(timezone, offsets))
session_ids = text.map(SessionId)

prompts = st.builds(AiPromptMessage, text=text)
notifications = st.builds(AiNotificationMessage, title=words, body=text)
messages: st.SearchStrategy[AiMessage] = st.one_of(prompts, notifications)

users = st.builds(UserAuthor)
mod_authors = st.builds(ModAuthor, mod_id=text, command_id=st.none() | text, tool_name=st.none() | text)
authors: st.SearchStrategy[Author] = st.one_of(users, mod_authors)

command_triggers = st.builds(CommandTrigger, mod_id=text, command_id=text)
tool_triggers = st.builds(ToolTrigger, mod_id=text, tool_name=text, call_id=text)
triggers: st.SearchStrategy[SpawnTrigger] = st.one_of(command_triggers, tool_triggers)

roots = st.builds(RootLineage)
spawns = st.builds(
    SpawnLineage,
    parent_session_id=session_ids,
    parent_chat_uri=text,
    depth=st.integers(min_value=1, max_value=2**40),
    spawned_at=aware,
    trigger=triggers,
)
forks = st.builds(
    ForkLineage,
    parent_session_id=session_ids,
    parent_turn_ordinal=st.integers(min_value=0, max_value=2**40),
    parent_runner_id=text.map(AiRunnerId),
    depth=st.integers(min_value=1, max_value=2**40),
    forked_at=aware,
    parent_user_message_id=st.none() | text,
)
lineages: st.SearchStrategy[AiSessionLineage] = st.one_of(roots, spawns, forks)

decisions: st.SearchStrategy[HookDecision] = st.one_of(st.builds(Allow), st.builds(Deny, reason=words))
events = st.builds(ActionEvent, action=text, session_id=st.none() | session_ids, author=authors)
display = st.builds(AiSessionDisplayMetadata, label=words, icon=st.none() | text)

json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False, allow_infinity=False) | text,
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(text, inner, max_size=4),
    max_leaves=12,
)

TAGGED: list[tuple[st.SearchStrategy[Any], object, str]] = [
    (prompts, AiMessage, "type"),
    (notifications, AiMessage, "type"),
    (users, Author, "kind"),
    (mod_authors, Author, "kind"),
    (command_triggers, SpawnTrigger, "kind"),
    (tool_triggers, SpawnTrigger, "kind"),
    (roots, AiSessionLineage, "kind"),
    (spawns, AiSessionLineage, "kind"),
    (forks, AiSessionLineage, "kind"),
    (st.builds(Allow), HookDecision, "kind"),
    (st.builds(Deny, reason=words), HookDecision, "kind"),
]
TAG_VALUES = {
    AiPromptMessage: "prompt",
    AiNotificationMessage: "notification",
    UserAuthor: "user",
    ModAuthor: "mod",
    CommandTrigger: "command",
    ToolTrigger: "tool",
    RootLineage: "root",
    SpawnLineage: "spawn",
    ForkLineage: "fork",
    Allow: "allow",
    Deny: "deny",
}
ALIASES = {
    "AiMessage": AiMessage,
    "Author": Author,
    "SpawnTrigger": SpawnTrigger,
    "AiSessionLineage": AiSessionLineage,
    "HookDecision": HookDecision,
}
ALL_TYPES: list[object] = [*TAG_VALUES, *ALIASES.values(), ActionEvent, AiSessionDisplayMetadata]


# -- round trips ----------------------------------------------------------------------


@pytest.mark.parametrize(("values", "alias", "tag"), TAGGED, ids=lambda v: getattr(v, "__name__", None))
@relaxed
@given(data=st.data())
def test_tagged_values_round_trip_through_their_class_and_their_union(
    values: st.SearchStrategy[Any], alias: object, tag: str, data: st.DataObject
) -> None:
    value = data.draw(values)
    text = to_json(value)
    assert from_json(text, type(value)) == value
    assert from_json(text, alias) == value
    assert type(from_json(text, alias)) is type(value)
    assert json.loads(text)[tag] == TAG_VALUES[type(value)]


@relaxed
@given(lineages)
def test_lineage_round_trips_and_keeps_its_structure(lineage: AiSessionLineage) -> None:
    again = from_json(to_json(lineage), AiSessionLineage)
    assert again == lineage
    assert to_json(again) == to_json(lineage)
    if isinstance(lineage, SpawnLineage):
        assert isinstance(again, SpawnLineage)
        assert again.spawned_at.utcoffset() == lineage.spawned_at.utcoffset()
        assert type(again.trigger) is type(lineage.trigger)


@relaxed
@given(events)
def test_action_events_round_trip_with_their_author(event: ActionEvent) -> None:
    assert from_json(to_json(event), ActionEvent) == event


@relaxed
@given(display)
def test_display_metadata_round_trips(metadata: AiSessionDisplayMetadata) -> None:
    assert from_json(to_json(metadata), AiSessionDisplayMetadata) == metadata


@relaxed
@given(st.one_of(messages, authors, lineages, decisions))
def test_to_json_is_deterministic_with_sorted_keys(value: object) -> None:
    text = to_json(value)
    assert text == to_json(value)
    data = json.loads(text)
    assert list(data) == sorted(data)


def test_the_json_of_a_fork_lineage_is_flat_and_tagged() -> None:
    lineage = ForkLineage(
        parent_session_id=SessionId("s-1"),
        parent_turn_ordinal=2,
        parent_runner_id=AiRunnerId("echo"),
        depth=1,
        forked_at=datetime(2025, 1, 2, 3, 4, 5, tzinfo=UTC),
    )
    assert json.loads(to_json(lineage)) == {
        "kind": "fork",
        "parent_session_id": "s-1",
        "parent_turn_ordinal": 2,
        "parent_runner_id": "echo",
        "depth": 1,
        "forked_at": "2025-01-02T03:04:05+00:00",
        "parent_user_message_id": None,
    }


def test_from_json_accepts_bytes() -> None:
    assert from_json(b'{"kind": "root"}', AiSessionLineage) == RootLineage()


# -- no silent coercion ---------------------------------------------------------------


def spawn_json(**changes: object) -> str:
    data: dict[str, object] = {
        "kind": "spawn",
        "parent_session_id": "s-1",
        "parent_chat_uri": "chat://s-1",
        "depth": 1,
        "spawned_at": "2025-01-02T03:04:05+00:00",
        "trigger": {"kind": "command", "mod_id": "tasks", "command_id": "task"},
    }
    data.update(changes)
    return json.dumps(data)


def test_a_number_is_not_a_session_id() -> None:
    with pytest.raises(SerializationError) as info:
        from_json(spawn_json(parent_session_id=123), SpawnLineage)
    assert "field 'parent_session_id': expected a JSON string for SessionId, got 123 (int)" in str(info.value)
    assert info.value.type_name == "SpawnLineage"


def test_a_string_is_not_an_int() -> None:
    with pytest.raises(SerializationError, match=re.escape("field 'depth': expected a JSON integer, got '1' (str)")):
        from_json(spawn_json(depth="1"), AiSessionLineage)


def test_a_bool_is_not_an_int() -> None:
    with pytest.raises(SerializationError, match=re.escape("field 'depth': expected a JSON integer, got True (bool)")):
        from_json(spawn_json(depth=True), SpawnLineage)


def test_a_float_is_not_an_int() -> None:
    with pytest.raises(SerializationError, match=re.escape("expected a JSON integer, got 1.0 (float)")):
        from_json(spawn_json(depth=1.0), SpawnLineage)


@pytest.mark.parametrize("not_bool", ['"yes"', "1", "0", '"true"', "null"])
def test_yes_is_not_a_bool(not_bool: str) -> None:
    with pytest.raises(SerializationError, match=r"expected a JSON boolean \(true or false\)") as info:
        from_json(not_bool, bool)
    assert info.value.type_name == "bool"
    assert info.value.value == json.loads(not_bool)


def test_a_naive_datetime_is_refused() -> None:
    with pytest.raises(SerializationError) as info:
        from_json(spawn_json(spawned_at="2025-01-02T03:04:05"), SpawnLineage)
    assert str(info.value).endswith(
        "field 'spawned_at': expected a timezone-aware date-time (with an offset such as +00:00), "
        "got '2025-01-02T03:04:05'"
    )


def test_a_datetime_that_is_not_iso_8601_is_refused() -> None:
    with pytest.raises(SerializationError, match=re.escape("expected an ISO 8601 date-time, got 'yesterday'")):
        from_json(spawn_json(spawned_at="yesterday"), SpawnLineage)


def test_unknown_keys_are_refused() -> None:
    with pytest.raises(SerializationError, match=re.escape("unknown keys ['parent_id']; remove them")):
        from_json(spawn_json(parent_id="s-0"), SpawnLineage)


def test_a_missing_field_is_named() -> None:
    with pytest.raises(SerializationError, match=re.escape("field 'mod_id' is required but missing")):
        from_json('{"kind": "mod"}', Author)


def test_a_bad_nested_trigger_is_named_by_its_path() -> None:
    with pytest.raises(SerializationError, match=re.escape("field 'trigger.command_id': expected a JSON string")):
        from_json(spawn_json(trigger={"kind": "command", "mod_id": "tasks", "command_id": 7}), SpawnLineage)


# -- tags -------------------------------------------------------------------------------


def test_an_unknown_tag_names_the_value_and_the_known_tags() -> None:
    with pytest.raises(SerializationError) as info:
        from_json('{"kind": "branch"}', AiSessionLineage)
    assert str(info.value) == (
        "unknown AiSessionLineage kind 'branch' in {'kind': 'branch'}; "
        "expected one of 'root', 'spawn', 'fork'"
    )
    assert info.value.value == {"kind": "branch"}
    assert info.value.type_name == "AiSessionLineage"


def test_a_missing_tag_names_the_value() -> None:
    with pytest.raises(SerializationError) as info:
        from_json('{"text": "hi"}', AiMessage)
    assert str(info.value) == (
        "AiMessage needs a 'type' key (one of 'prompt', 'notification'), got {'text': 'hi'}"
    )
    assert not isinstance(info.value, KeyError)


def test_a_class_refuses_another_members_tag() -> None:
    with pytest.raises(SerializationError) as info:
        from_json('{"kind": "user"}', ModAuthor)
    assert str(info.value) == "expected 'kind' = 'mod' for ModAuthor, got 'user' in {'kind': 'user'}"
    assert info.value.type_name == "ModAuthor"


def test_a_class_refuses_a_missing_tag() -> None:
    with pytest.raises(SerializationError, match=re.escape("expected 'kind' = 'root' for RootLineage, got None in {}")):
        from_json("{}", RootLineage)


@pytest.mark.parametrize("tag", ["1", "null", "true", '["root"]', '{"k": "root"}'])
def test_a_tag_that_is_not_a_string_is_an_unknown_tag(tag: str) -> None:
    with pytest.raises(SerializationError, match="unknown AiSessionLineage kind"):
        from_json(f'{{"kind": {tag}}}', AiSessionLineage)


@pytest.mark.parametrize("name", list(ALIASES))
def test_a_non_object_is_refused_for_every_union(name: str) -> None:
    with pytest.raises(SerializationError, match=re.escape(f"expected a JSON object for {name}, got [1]")):
        from_json("[1]", ALIASES[name])


def test_text_that_is_not_json_is_refused() -> None:
    with pytest.raises(SerializationError, match=r"^not JSON: ") as info:
        from_json("{kind: root}", AiSessionLineage)
    assert info.value.value == "{kind: root}"


@pytest.mark.parametrize("tp", ALL_TYPES, ids=lambda t: getattr(t, "__name__", str(t)))
@relaxed
@given(value=json_values)
def test_any_json_either_reads_or_raises_serialization_error(tp: object, value: object) -> None:
    try:
        result = from_json(json.dumps(value), tp)
    except SerializationError as exc:
        assert str(exc)
        assert not isinstance(exc, KeyError)
    else:
        assert attrs.has(type(result))


@relaxed
@given(lineages, st.sampled_from(["kind", "depth", "parent_session_id", "trigger", "forked_at"]))
def test_dropping_any_key_raises_serialization_error(lineage: AiSessionLineage, key: str) -> None:
    data = json.loads(to_json(lineage))
    if key not in data:
        return
    del data[key]
    with pytest.raises(SerializationError):
        from_json(json.dumps(data), AiSessionLineage)

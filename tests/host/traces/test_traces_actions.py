"""Agents propose, users confirm: <mod-action> tags, PendingAction, confirm and dismiss."""

from __future__ import annotations

import json
from collections.abc import Callable

import attrs
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from host_sim import Host, ModelRequest, ScriptedModel, Store
from modular_sdk import (
    ActionContext,
    ActionStateError,
    ModDefinitionError,
    ModMetadata,
    action,
    define_mod,
)

pytestmark = pytest.mark.anyio


@attrs.frozen
class NewTask:
    title: str
    description: str = ""


ran: list[tuple[str, str, str]] = []


async def create_task(payload: NewTask, ctx: ActionContext) -> str:
    ran.append((payload.title, ctx.action_type, ctx.session.id))
    assert ctx.mod_id == "tasks"
    return f"created task {payload.title!r}"


MOD = define_mod(
    metadata=ModMetadata(display_name="Tasks", description="Tasks the user confirms"),
    actions=[action(type="task.create", description="Create a local task", payload_type=NewTask, run=create_task)],
)


def tag(kind: str, body: str) -> str:
    return f'<mod-action type="{kind}">{body}</mod-action>'


def replying(text: str) -> ScriptedModel:
    def respond(request: ModelRequest) -> str:
        return text if request.text == "go" else "fine"

    return ScriptedModel(respond)


StoreFactory = Callable[[], Store]


@pytest.fixture(autouse=True)
def clear_runs() -> None:
    ran.clear()


async def test_a_declared_well_formed_proposal_waits_until_confirmed_once(any_store: StoreFactory) -> None:
    reply = "Shall I? " + tag("task.create", '{"title": "Add error handling", "description": "branches"}')
    async with Host(mods=[MOD], model=replying(reply), store=any_store()) as h:
        chat = await h.sessions.create()
        out = await h.submit(chat, "go")
        assert out.text == reply and out.action_errors == ()
        (proposed,) = out.actions
        assert (proposed.type, proposed.mod_id, proposed.session_id) == ("task.create", "tasks", chat.id)
        assert proposed.payload == {"title": "Add error handling", "description": "branches"}
        assert out.turn is not None and proposed.turn_id == out.turn.id
        assert ran == []  # nothing runs before the user confirms
        assert await h.pending_actions(chat) == [proposed]
        done = await h.confirm(proposed.id)
        assert done.text == "created task 'Add error handling'" and done.error is None
        assert ran == [("Add error handling", "task.create", chat.id)]
        assert await h.pending_actions(chat) == []
        with pytest.raises(ActionStateError, match="already confirmed") as caught:
            await h.confirm(proposed.id)
        assert (caught.value.action_id, caught.value.state) == (proposed.id, "confirmed")
        with pytest.raises(ActionStateError, match="already confirmed"):
            await h.dismiss(proposed.id)
    assert len(ran) == 1


async def test_a_dismissed_action_never_runs_and_cannot_be_confirmed(any_store: StoreFactory) -> None:
    async with Host(mods=[MOD], model=replying(tag("task.create", '{"title": "x"}')), store=any_store()) as h:
        chat = await h.sessions.create()
        (proposed,) = (await h.submit(chat, "go")).actions
        await h.dismiss(proposed.id)
        assert await h.pending_actions(chat.id) == []
        with pytest.raises(ActionStateError, match="already dismissed") as caught:
            await h.confirm(proposed.id)
        assert caught.value.state == "dismissed"
        with pytest.raises(ActionStateError, match="no action 'act_nope'") as unknown:
            await h.confirm("act_nope")
        assert unknown.value.state == "unknown"
    assert ran == []


async def test_undeclared_types_and_bad_payloads_create_no_action_and_say_why(any_store: StoreFactory) -> None:
    reply = " ".join(
        [
            tag("task.delete", '{"title": "x"}'),  # undeclared
            tag("task.create", "{not json"),  # not JSON
            tag("task.create", '["a list"]'),  # not an object
            tag("task.create", '{"title": 3}'),  # never coerced
            tag("task.create", '{"title": "x", "extra": 1}'),  # unknown field
            tag("task.create", '{"description": "no title"}'),  # missing field
            '<mod-action type="task.create">{"title": "unclosed"}',
        ]
    )
    async with Host(mods=[MOD], model=replying(reply), store=any_store()) as h:
        chat = await h.sessions.create()
        out = await h.submit(chat, "go")
        assert out.actions == () and out.ok
        errors = out.action_errors
        assert len(errors) == 7
        assert "type='task.delete'> names no declared action (declared: 'task.create')" in errors[0]
        assert "holds no JSON" in errors[1]
        assert "its payload is a JSON object" in errors[2]
        assert "does not match NewTask of mod 'tasks'" in errors[3] and "3" in errors[3]
        assert "extra" in errors[4]
        assert "title" in errors[5]
        assert "1 <mod-action> tag is malformed" in errors[6]
        assert await h.pending_actions(chat) == []


async def test_pending_actions_survive_a_reopen_and_are_confirmed_once(any_store: StoreFactory) -> None:
    async with Host(mods=[MOD], model=replying(tag("task.create", '{"title": "later"}')), store=any_store()) as h:
        chat = await h.sessions.create()
        (proposed,) = (await h.submit(chat, "go")).actions
    async with Host(mods=[MOD], store=any_store()) as h:
        assert [a.id for a in await h.pending_actions(chat.id)] == [proposed.id]
        assert (await h.confirm(proposed.id)).text == "created task 'later'"
    async with Host(mods=[MOD], store=any_store()) as h:
        assert await h.pending_actions(chat.id) == []
        with pytest.raises(ActionStateError, match="already confirmed"):
            await h.confirm(proposed.id)
    assert [r[0] for r in ran] == ["later"]


async def test_an_action_whose_mod_is_not_loaded_cannot_be_confirmed(any_store: StoreFactory) -> None:
    async with Host(mods=[MOD], model=replying(tag("task.create", '{"title": "x"}')), store=any_store()) as h:
        chat = await h.sessions.create()
        (proposed,) = (await h.submit(chat, "go")).actions
    async with Host(store=any_store()) as h:
        with pytest.raises(ActionStateError, match="mod 'tasks', which this host has not loaded"):
            await h.confirm(proposed.id)
        await h.dismiss(proposed.id)  # it can still be dropped


async def test_an_action_that_fails_reports_it_and_stays_confirmed() -> None:
    def boom(payload: NewTask, ctx: ActionContext) -> None:
        raise ValueError("tracker is down")

    mod = define_mod(
        metadata=ModMetadata(display_name="Boom", description="Fails"),
        actions=[action(type="task.create", description="Create", payload_type=NewTask, run=boom)],
    )
    async with Host(mods=[mod], model=replying(tag("task.create", '{"title": "x"}'))) as h:
        chat = await h.sessions.create()
        (proposed,) = (await h.submit(chat, "go")).actions
        out = await h.confirm(proposed.id)
        assert out.error is not None and "tracker is down" in out.error
        with pytest.raises(ActionStateError):
            await h.confirm(proposed.id)


def test_action_declarations_are_checked() -> None:
    class Plain:
        title: str

    with pytest.raises(ModDefinitionError, match="payload_type must be an attrs class"):
        action(type="task.create", description="d", payload_type=Plain, run=create_task)  # type: ignore[type-var, arg-type]
    with pytest.raises(ModDefinitionError, match="action type"):
        action(type="Task Create", description="d", payload_type=NewTask, run=create_task)
    with pytest.raises(ModDefinitionError, match="run"):
        action(type="task.create", description="d", payload_type=NewTask, run=lambda: None)  # type: ignore[arg-type, misc]
    with pytest.raises(ModDefinitionError, match="action type 'task.create' is declared twice"):
        define_mod(
            metadata=ModMetadata(display_name="Two", description="d"),
            actions=[
                action(type="task.create", description="d", payload_type=NewTask, run=create_task),
                action(type="task.create", description="e", payload_type=NewTask, run=create_task),
            ],
        )
    with pytest.raises(ModDefinitionError, match="actions must be a list"):
        define_mod(metadata=ModMetadata(display_name="Bad", description="d"), actions=5)  # type: ignore[arg-type]
    declared = MOD.actions[0]
    assert declared.payload_schema["required"] == ["title"]


def test_the_manifest_lists_declared_actions_with_their_payload_schema() -> None:
    from host_sim.fold import manifest_from_mod

    manifest = manifest_from_mod(MOD)
    (entry,) = manifest.actions
    assert (entry.type, entry.description) == ("task.create", "Create a local task")
    assert entry.payload_schema == MOD.actions[0].payload_schema
    assert type(manifest).from_json(manifest.to_json()) == manifest


@settings(max_examples=200, deadline=None)
@given(
    chunks=st.lists(
        st.one_of(
            st.text(max_size=20),
            st.builds(tag, st.sampled_from(["task.create", "task.delete", "", "x y"]), st.text(max_size=30)),
            st.builds(
                lambda t, d: tag("task.create", json.dumps({"title": t, "description": d})),
                st.text(max_size=10),
                st.text(max_size=10),
            ),
            st.just("<mod-action"),
            st.just("</mod-action>"),
        ),
        max_size=8,
    )
)
def test_parsing_any_reply_never_raises_and_keeps_only_declared_exact_payloads(chunks: list[str]) -> None:
    from host_sim.testing import parse_actions

    reply = " ".join(chunks)
    found, errors = parse_actions(reply, {"task.create": (MOD, MOD.actions[0])})
    for mod, declared, payload in found:
        assert mod is MOD and declared.type == "task.create"
        assert set(payload) == {"title", "description"} and all(isinstance(v, str) for v in payload.values())
    assert all(isinstance(e, str) and "ignored" in e for e in errors)
    assert len(found) <= reply.count("</mod-action>")

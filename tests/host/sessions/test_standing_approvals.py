"""Standing approvals (API.md section 21): "allow always" is a durable, scoped, revocable record,
and a decision a rule made names it. Every store; both anyio backends."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import anyio
import attrs
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from host_sim import (
    ApprovalRule,
    Host,
    MemoryStore,
    ModelRequest,
    ScriptedModel,
    SqliteStore,
    Store,
    TurnHandle,
    UnknownApprovalRuleError,
)
from modular_sdk import ActionContext, InvalidArgumentError, ModMetadata, UnknownSessionError, action, define_mod

from ..mcp.test_mcp_servers import SERVER, calls, notes_mod

pytestmark = pytest.mark.anyio

StoreFactory = Callable[[], Store]


@attrs.frozen
class NewTask:
    title: str


ran: list[tuple[str, str]] = []


async def create_task(payload: NewTask, ctx: ActionContext) -> str:
    ran.append((payload.title, ctx.session.id))
    return f"created task {payload.title!r}"


MOD = define_mod(
    id="tasks",
    metadata=ModMetadata(display_name="Tasks", description="Tasks the user confirms"),
    actions=[
        action(type="task.create", description="Create a local task", payload_type=NewTask, run=create_task),
        action(type="task.close", description="Close a task", payload_type=NewTask, run=create_task),
    ],
)


def proposing(kind: str = "task.create", title: str = "Add tests") -> ScriptedModel:
    """A model that proposes one action for the prompt 'go' and answers 'fine' otherwise."""

    def respond(request: ModelRequest) -> str:
        if request.text == "go":
            return f'Shall I? <mod-action type="{kind}">{{"title": "{title}"}}</mod-action>'
        return "fine"

    return ScriptedModel(respond)


@pytest.fixture(autouse=True)
def clear_runs() -> None:
    ran.clear()


async def notified(host: Host, session_id: str) -> TurnHandle:
    """The notification turn a rule-confirmed action delivers to its session (waits for it)."""
    with anyio.fail_after(10):
        while True:
            found = await host.notifications(session=session_id)
            if found:
                return found[-1]
            await anyio.sleep(0.01)


async def test_an_action_a_rule_allows_is_confirmed_at_once_naming_the_rule_and_runs(any_store: StoreFactory) -> None:
    async with Host(mods=[MOD], model=proposing(), store=any_store()) as host:
        rule = await host.approvals.allow(action_type="task.create", by="alice", reason="routine tasks")
        assert isinstance(rule, ApprovalRule)
        assert (rule.action_type, rule.tool, rule.session_id, dict(rule.tags)) == ("task.create", None, None, {})
        assert (rule.by, rule.reason, rule.revoked_at) == ("alice", "routine tasks", None)
        chat = await host.sessions.create()
        out = await host.submit(chat, "go")
        assert out.actions == () and out.action_errors == ()  # nothing waits for the user
        assert await host.pending_actions(chat) == []
        (record,) = await host.actions(chat)
        assert (record.status, record.decided_by, record.reason) == ("confirmed", rule.id, "routine tasks")
        note = await notified(host, chat.id)
        assert note.message.type == "notification"
        assert note.message.title == f"task.create ran (action {record.id}, allowed by approval rule {rule.id})"
        assert note.message.body == "created task 'Add tests'"
        assert ran == [("Add tests", chat.id)]


async def test_a_rule_of_another_type_or_session_leaves_the_action_to_the_user(any_store: StoreFactory) -> None:
    async with Host(mods=[MOD], model=proposing(), store=any_store()) as host:
        other = await host.sessions.create()
        await host.approvals.allow(action_type="task.close", by="alice")
        await host.approvals.allow(action_type="task.create", session=other, by="alice")
        await host.approvals.allow(action_type="task.create", tags={"team": "red"}, by="alice")
        chat = await host.sessions.create(tags={"team": "blue"})
        out = await host.submit(chat, "go")
        (waiting,) = out.actions
        assert [a.id for a in await host.pending_actions(chat)] == [waiting.id]
        red = await host.sessions.create(tags={"team": "red", "user": "bob"})
        assert (await host.submit(red, "go")).actions == ()  # the tags rule covers it
        assert (await host.submit(other, "go")).actions == ()  # the session rule covers it


async def test_rules_are_durable_listed_and_revoked_once_with_who_revoked(any_store: StoreFactory) -> None:
    async with Host(mods=[MOD], model=proposing(), store=any_store()) as host:
        rule = await host.approvals.allow(action_type="task.create", by="alice", reason="ok")
    async with Host(mods=[MOD], model=proposing(), store=any_store()) as host:
        assert [r.id for r in await host.approvals.list()] == [rule.id]
        assert await host.approvals.get(rule.id) == rule
        revoked = await host.approvals.revoke(rule.id, by="carol")
        assert revoked.revoked_at is not None and revoked.revoked_by == "carol" and revoked.id == rule.id
        with pytest.raises(UnknownApprovalRuleError, match=f"{rule.id}.*was revoked at .* by 'carol'") as caught:
            await host.approvals.revoke(rule.id, by="carol")
        assert caught.value.id == rule.id
        chat = await host.sessions.create()
        (waiting,) = (await host.submit(chat, "go")).actions  # a revoked rule matches nothing
        assert waiting.type == "task.create"
    async with Host(mods=[MOD], store=any_store()) as host:
        (listed,) = await host.approvals.list()
        assert listed.revoked_at == revoked.revoked_at and listed.revoked_by == "carol"


async def test_a_scopes_rule_matches_only_its_sessions_and_other_scopes_cannot_see_it(any_store: StoreFactory) -> None:
    async with Host(mods=[MOD], model=proposing(), store=any_store()) as host:
        alice, bob = host.scoped({"user": "alice"}), host.scoped({"user": "bob"})
        rule = await alice.approvals.allow(action_type="task.create", by="alice")
        assert dict(rule.tags) == {"user": "alice"}
        mine, theirs = await alice.sessions.create(), await bob.sessions.create()
        assert (await alice.submit(mine, "go")).actions == ()
        assert len((await bob.submit(theirs, "go")).actions) == 1  # alice's rule does not reach bob
        assert [r.id for r in await alice.approvals.list()] == [rule.id]
        assert await bob.approvals.list() == []
        with pytest.raises(UnknownApprovalRuleError) as outside:
            await bob.approvals.revoke(rule.id, by="bob")
        with pytest.raises(UnknownApprovalRuleError) as missing:
            await bob.approvals.revoke("rule_000000000000", by="bob")
        assert str(outside.value) == str(missing.value).replace("rule_000000000000", rule.id)
        with pytest.raises(UnknownSessionError):
            await bob.approvals.allow(action_type="task.create", session=mine.id, by="bob")
        assert [r.id for r in await host.approvals.list()] == [rule.id]  # the integrator sees every rule


async def test_a_rule_of_a_deleted_session_loses_its_reason(any_store: StoreFactory) -> None:
    async with Host(mods=[MOD], model=proposing(), store=any_store()) as host:
        chat = await host.sessions.create()
        kept = await host.approvals.allow(action_type="task.create", by="alice", reason="MARKER-kept")
        rule = await host.approvals.allow(action_type="task.create", session=chat, by="alice", reason="MARKER-secret")
        await host.sessions.delete(chat.id)
        erased = await host.approvals.get(rule.id)
        assert erased.reason == "(erased)" and erased.by == "alice" and erased.session_id == chat.id
        assert (await host.approvals.get(kept.id)).reason == "MARKER-kept"
    async with Host(mods=[MOD], store=any_store()) as host:  # durable
        assert (await host.approvals.get(rule.id)).reason == "(erased)"


async def test_no_copy_of_an_erased_rule_reason_is_left_in_the_sqlite_file(tmp_path: Path) -> None:
    path = tmp_path / "store.sqlite"
    async with Host(mods=[MOD], store=SqliteStore(path)) as host:
        chat = await host.sessions.create()
        await host.approvals.allow(action_type="task.create", session=chat, by="alice", reason="MARKER-secret-reason")
        await host.sessions.delete(chat.id)
    for file in tmp_path.iterdir():
        assert b"MARKER-secret-reason" not in file.read_bytes(), file.name


async def test_bad_arguments_are_refused_naming_what_to_pass() -> None:
    async with Host(mods=[MOD]) as host:
        with pytest.raises(InvalidArgumentError, match="'task.nope'.*known: 'mcp.call', 'task.close', 'task.create'") as bad:
            await host.approvals.allow(action_type="task.nope", by="alice")
        assert bad.value.argument == "action_type"
        with pytest.raises(InvalidArgumentError, match="only with action_type='mcp.call'") as bad:
            await host.approvals.allow(action_type="task.create", tool="notes.write_note", by="alice")
        assert bad.value.argument == "tool"
        with pytest.raises(InvalidArgumentError, match="by= must be a non-empty str") as bad:
            await host.approvals.allow(action_type="task.create", by="  ")
        with pytest.raises(InvalidArgumentError, match="tags must map"):
            await host.approvals.allow(action_type="task.create", tags={"user": 3}, by="a")  # type: ignore[dict-item]
        with pytest.raises(UnknownSessionError):
            await host.approvals.allow(action_type="task.create", session="sess_nope", by="a")
        with pytest.raises(UnknownApprovalRuleError, match="no approval rule 'nope'; use an id from host.approvals.list"):
            await host.approvals.get("nope")
        assert await host.approvals.list() == []


@pytest.fixture
def notes(tmp_path: Path) -> Path:
    folder = tmp_path / "notes"
    folder.mkdir()
    (tmp_path / "notes_server.py").write_text(SERVER)
    return folder


async def test_an_allowed_mcp_write_runs_in_the_turn_and_its_answer_reaches_the_model(notes: Path, tmp_path: Path) -> None:
    model = calls("notes.write_note", {"name": "b", "text": "second note"})
    async with Host(mods=[notes_mod(notes)], model=model, store=SqliteStore(tmp_path / "s.sqlite")) as host:
        read_only = await host.approvals.allow(action_type="mcp.call", tool="notes.read_note", by="alice")
        chat = await host.sessions.create()
        first = await host.submit(chat, "call")
        assert "awaiting confirmation" in first.text and len(first.actions) == 1  # another tool's rule
        rule = await host.approvals.allow(action_type="mcp.call", tool="notes.write_note", by="alice", reason="notes")
        second = await host.submit(chat, "call")
        assert second.actions == () and second.text == "output='wrote b' error=None"
        assert (notes / "b.txt").read_text() == "second note"
        decided = [a for a in await host.actions(chat) if a.status == "confirmed"]
        assert [(a.decided_by, a.reason) for a in decided] == [(rule.id, "notes")]
        assert read_only.id != rule.id


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    rules=st.lists(
        st.tuples(
            st.sampled_from(["task.create", "task.close"]),
            st.sampled_from([None, "a", "b"]),  # session
            st.sampled_from([None, "red", "blue"]),  # team tag
            st.booleans(),  # revoked
        ),
        max_size=5,
    ),
    proposed=st.tuples(st.sampled_from(["task.create", "task.close"]), st.sampled_from(["a", "b"])),
)
async def test_an_action_is_confirmed_by_a_rule_exactly_when_a_live_rule_matches_it(
    rules: list[tuple[str, str | None, str | None, bool]], proposed: tuple[str, str]
) -> None:
    kind, where = proposed
    async with Host(mods=[MOD], model=proposing(kind), store=MemoryStore()) as host:
        sessions = {
            "a": await host.sessions.create(tags={"team": "red"}),
            "b": await host.sessions.create(tags={"team": "blue"}),
        }
        made: list[tuple[ApprovalRule, bool]] = []
        for action_type, session, team, revoked in rules:
            rule = await host.approvals.allow(
                action_type=action_type,
                session=None if session is None else sessions[session],
                tags=None if team is None else {"team": team},
                by="alice",
            )
            if revoked:
                await host.approvals.revoke(rule.id, by="alice")
            made.append((rule, revoked))
        team_of = {"a": "red", "b": "blue"}
        live = [
            rule
            for (rule, revoked), (action_type, session, team, _) in zip(made, rules, strict=True)
            if not revoked and action_type == kind and session in (None, where) and team in (None, team_of[where])
        ]
        out = await host.submit(sessions[where], "go")
        (record,) = await host.actions(sessions[where])
        if live:
            assert out.actions == () and record.status == "confirmed" and record.decided_by == live[0].id
        else:
            assert len(out.actions) == 1 and record.status == "pending" and record.decided_by is None


async def test_a_revoke_that_returned_is_never_followed_by_a_decision_of_its_rule(any_store: StoreFactory) -> None:
    async with Host(mods=[MOD], model=proposing(), store=any_store()) as host:
        rule = await host.approvals.allow(action_type="task.create", by="alice")
        chats = [await host.sessions.create() for _ in range(12)]

        async def decided_by_rule() -> set[str]:
            return {a.id for chat in chats for a in await host.actions(chat) if a.decided_by == rule.id}

        async with anyio.create_task_group() as group:
            for chat in chats:
                group.start_soon(host.submit, chat, "go")
            await anyio.sleep(0.01)  # proposals under way
            await host.approvals.revoke(rule.id, by="carol")
            at_revoke = await decided_by_rule()
        assert await decided_by_rule() == at_revoke  # nothing the rule decided landed after the revoke
        pending = {a.id for chat in chats for a in await host.pending_actions(chat)}
        assert len(pending) + len(at_revoke) == len(chats)  # every other proposal waits for the user

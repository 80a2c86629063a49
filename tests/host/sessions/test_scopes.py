"""Scopes (API.md §14): several tenants' views of one host, on every store and both backends.

The property test runs random operations through several scoped views (create, send, fork,
spawn and delegate from handlers, jobs, actions proposed and confirmed, traces, notifications,
forget, delete) and then checks every read of every view: it returns only the view's own
scope, and an id outside the scope answers exactly like an id that does not exist (same
type, same message and attributes once the id is substituted).
"""

from __future__ import annotations

import uuid
from collections.abc import AsyncIterator, Awaitable, Callable, Mapping
from contextlib import AsyncExitStack

import anyio
import attrs
import pytest
from hypothesis import HealthCheck, Phase, given, settings
from hypothesis import strategies as st

from host_sim import (
    Host,
    HostEvent,
    JobFinished,
    ModelRequest,
    ScopedEventStream,
    ScopedHost,
    ScriptedModel,
    TaskRef,
    ToolCall,
    UnknownJobError,
    UnknownTraceError,
)
from modular_sdk import (
    ActionContext,
    AiContributions,
    CommandContext,
    InvalidArgumentError,
    ModMetadata,
    ModularError,
    SlashCommandContext,
    ToolContext,
    UnknownSessionError,
    UnknownTurnError,
    action,
    agent,
    command,
    define_mod,
    slash_command,
    tool,
)

from ..conftest import StoreFactory


@attrs.frozen
class NewTask:
    """A task the model proposes."""

    title: str


async def spawn_child(argument: str | None, ctx: SlashCommandContext) -> str:
    child = await ctx.session.spawn()
    await child.run("child work")
    return child.id


async def delegate(argument: str | None, ctx: SlashCommandContext) -> str:
    return (await ctx.ai.agents.get("helper").spawn()).id


async def make_session(argument: str | None, ctx: SlashCommandContext) -> str:
    return (await ctx.ai.sessions.create()).id


async def probe(argument: str | None, ctx: SlashCommandContext) -> str:
    try:
        found = await ctx.ai.sessions.get(argument or "")
    except UnknownSessionError as missing:
        return f"unknown: {missing}"
    return f"found {found.id}"


async def palette_make(ctx: CommandContext) -> str:
    return (await ctx.ai.sessions.create()).id


async def create_task(task: NewTask, ctx: ActionContext) -> str:
    return (await ctx.ai.sessions.create()).id


MOD = define_mod(
    metadata=ModMetadata(display_name="Scopes", description="Handlers that create and look up sessions"),
    commands=[
        slash_command(id="spawn", description="Spawn a child", run=spawn_child),
        slash_command(id="delegate", description="Start the helper agent", run=delegate),
        slash_command(id="mk", description="Create a session", run=make_session),
        slash_command(id="probe", description="Look a session up", run=probe),
        command(id="scopes.mk", title="Create a session from the palette", run=palette_make),
    ],
    ai=AiContributions(agents=[agent(id="helper", description="Helps")]),
    actions=[action(type="task.create", description="Create a task", payload_type=NewTask, run=create_task)],
)


def respond(request: ModelRequest) -> str:
    if request.text.startswith("propose"):
        return 'sure <mod-action type="task.create">{"title": "t"}</mod-action>'
    return f"ok {len(request.history)}"


OPS = ("create", "send", "fork", "spawn", "delegate", "mk", "palette", "job", "propose", "confirm", "notify", "trace", "forget", "delete")
Op = tuple[str, int, int]
programs = st.lists(st.tuples(st.sampled_from(OPS), st.integers(0, 3), st.integers(0, 50)), min_size=4, max_size=18)


def shape(error: BaseException, value: str) -> tuple[type[BaseException], str, dict[str, object]]:
    """An error with ``value`` replaced by a placeholder: what a caller can observe of it."""
    attributes = {k: v for k, v in vars(error).items() if not k.startswith("_")}
    return (
        type(error),
        str(error).replace(value, "<id>"),
        {k: (v.replace(value, "<id>") if isinstance(v, str) else v) for k, v in attributes.items()},
    )


async def answer(call: Callable[[str], Awaitable[object]], value: str) -> tuple[type[BaseException], str, dict[str, object]]:
    try:
        await call(value)
    except ModularError as error:
        return shape(error, value)
    raise AssertionError(f"{call!r} answered {value!r} without an error")


async def same_as_missing(call: Callable[[str], Awaitable[object]], outside: str, missing: str) -> None:
    assert await answer(call, outside) == await answer(call, missing), (call, outside)


async def drain(stream: AsyncIterator[HostEvent], until: Callable[[HostEvent], bool] | None = None) -> list[HostEvent]:
    """The events ``stream`` yields until it is quiet for 50 ms; with ``until``, first every
    event up to the one ``until`` accepts, however long that takes (a shared store delivers a
    host's own events from its rows: on a loaded machine, later than 50 ms after the turn)."""
    events: list[HostEvent] = []
    if until is not None:
        with anyio.fail_after(30):
            while not (events and until(events[-1])):
                events.append(await stream.__anext__())
    while True:
        with anyio.move_on_after(0.05) as waited:
            events.append(await stream.__anext__())
        if waited.cancelled_caught:
            return events


async def scenario(make_store: StoreFactory, program: list[Op]) -> None:
    run = uuid.uuid4().hex[:8]
    scopes: list[dict[str, str]] = [
        {"run": run, "org": "acme", "user": "u0"},
        {"run": run, "org": "acme", "user": "u1"},
        {"run": run, "org": "other", "user": "u0"},
        {"run": run, "org": "acme"},  # sees both acme users
    ]
    async with Host([MOD], store=make_store(), model=ScriptedModel(respond)) as host, AsyncExitStack() as stack:
        views = [host.scoped(scope) for scope in scopes]
        assert views[3].scoped({"user": "u1"}).tags == scopes[1]
        streams = [await stack.enter_async_context(view.subscribe(buffer=100_000)) for view in views]
        every = await stack.enter_async_context(host.subscribe(buffer=100_000))
        stranger = await host.sessions.create(tags={"run": run, "org": "nobody"})  # the integrator's own
        await host.submit(stranger, "hello")
        await stranger.notify(title="n", body="b")
        actions: list[tuple[int, str]] = []
        for op, which, k in program:
            view = views[which]
            page = (await view.sessions.list(limit=1000)).sessions
            session = page[k % len(page)] if page else None
            try:
                if op == "create" or session is None:
                    await view.sessions.create(tags={"n": str(k)})
                elif op == "send":
                    await view.submit(session, f"hello {k}")
                elif op == "fork":
                    await view.submit(session, "before fork")
                    await session.fork()
                elif op in ("spawn", "delegate", "mk"):
                    made = await view.submit(session, f"/{op}")
                    assert made.error is None, made.error
                    assert scopes[which].items() <= (await view.sessions.get(made.text)).tags.items()
                elif op == "palette":
                    made = await view.run_command("scopes.mk")
                    assert scopes[which].items() <= (await view.sessions.get(made.text)).tags.items()
                elif op == "job":
                    await (await view.start(session, f"job {k}")).wait()
                elif op == "propose":
                    proposed = await view.submit(session, "propose a task")
                    actions += [(which, a.id) for a in proposed.actions]
                elif op == "confirm" and actions:
                    owner, action_id = actions.pop(k % len(actions))
                    done = await views[owner].confirm(action_id)
                    if done.error is None:
                        assert scopes[owner].items() <= (await views[owner].sessions.get(done.text)).tags.items()
                elif op == "notify":
                    await session.notify(title=f"n{k}", body="b")
                elif op == "trace":
                    trace = await view.traces.for_task(TaskRef(source="t", id=f"{run}-{k}"))
                    try:
                        await view.sessions.create(trace=trace.id)
                    except UnknownTraceError:  # another tenant works on that task
                        assert not any(link.session_id in {s.id for s in page} for link in trace.links)
                elif op == "forget":
                    turns = [t for t in await view.log(session) if not isinstance(t, str) and hasattr(t, "ordinal")]
                    if turns:
                        await view.lineage.forget(turns[k % len(turns)].id, dry_run=False)
                elif op == "delete":
                    await view.sessions.delete(session.id)
            except (ModularError, ExceptionGroup) as refused:  # a fork of a deleted session...
                assert not isinstance(refused, (UnknownSessionError, UnknownTurnError)), refused
        created: dict[str, dict[str, str]] = {e.session_id: dict(e.tags) for e in await drain(every) if e.kind == "session_created"}
        await check(host, created, scopes, views, streams, [a for _, a in actions])


async def check(
    host: Host,
    tags: dict[str, dict[str, str]],
    scopes: list[dict[str, str]],
    views: list[ScopedHost],
    streams: list[ScopedEventStream],
    actions: list[str],
) -> None:
    """Every read of every view against the truth: ``tags``, every session made (deleted ones too)."""
    everything = [await host.sessions.get(s) for s in tags]
    deleted = {s.id for s in everything if s.deleted_at is not None}
    turns = {t.id: t.session_id for s in everything for t in await s.turns()}
    jobs = (await host.jobs(tags={"run": scopes[0]["run"]}, limit=10_000)).jobs

    def inside(scope: Mapping[str, str], session_id: str) -> bool:
        return scope.items() <= tags.get(session_id, {"?": "?"}).items()

    for scope, view, stream in zip(scopes, views, streams):
        listed = {s.id for s in (await view.sessions.list(limit=10_000)).sessions}
        assert listed == {s for s in tags if inside(scope, s) and s not in deleted}
        inbox = await view.notifications(unread_only=False)
        assert [t.id for t in inbox] == [t.id for t in await host.notifications(unread_only=False, tags=scope)]
        assert all(inside(scope, t.session_id) for t in inbox)
        assert {j.id for j in (await view.jobs(limit=10_000)).jobs} == {j.id for j in jobs if inside(scope, j.session_id)}
        for event in await drain(stream):
            session_id = getattr(event, "session_id", None)
            assert event.kind == "lagged" or (isinstance(session_id, str) and session_id in tags and inside(scope, session_id)) or event.kind == "job_finished", event
        outsiders = [s for s in tags if not inside(scope, s)]
        pages = [await view.lineage.html()] + [await view.lineage.html(s) for s in list(listed)[:1]]
        assert not [s for s in outsiders for page in pages if s in page]
        assert all(s in pages[0] for s in listed)
        missing_session = f"ses_{uuid.uuid4().hex[:12]}"
        for session_id in tags:
            if inside(scope, session_id):
                await view.sessions.get(session_id)
                tree = await view.lineage.tree(session_id)
                chain = await view.lineage.chain(session_id)
                assert all(inside(scope, n.session_id) for n in chain.nodes)
                assert all(inside(scope, str(s)) for s in _tree_ids(tree))
                continue
            for call in (
                view.sessions.get,
                view.sessions.delete,
                view.log,
                view.transcript,
                view.pending_actions,
                lambda s: view.submit(s, "hi"),
                lambda s: view.start(s, "hi"),
                lambda s: view.jobs(session=s),
                lambda s: view.notifications(session=s),
                view.lineage.node,
                view.lineage.ancestors,
                view.lineage.descendants,
                view.lineage.chain,
                view.lineage.tree,
                lambda s: view.lineage.add_edge(next(iter(listed), "ses_x"), s, "continued_from"),
            ):
                await same_as_missing(call, session_id, missing_session)
        missing_turn = f"turn_{uuid.uuid4().hex[:12]}"
        for turn_id, session_id in turns.items():
            if inside(scope, session_id):
                back = await view.lineage.backward(turn_id)
                fwd = await view.lineage.forward(turn_id)
                assert all(inside(scope, s) for s in (*back.sessions, *fwd.sessions, *fwd.spawns))
                continue
            for ask in (view.sessions.turn, view.mark_read, view.lineage.forward, view.lineage.backward, view.lineage.forget):
                await same_as_missing(ask, turn_id, missing_turn)
        for job in jobs:
            if not inside(scope, job.session_id):
                await same_as_missing(view.job, job.id, "job_000000000000")
                await same_as_missing(view.cancel_job, job.id, "job_000000000000")
        for action_id in actions:
            owner = (await host.traces._store.get_action(action_id))
            assert owner is not None
            if not inside(scope, owner[0].session_id):
                await same_as_missing(view.confirm, action_id, "act_000000000000")
                await same_as_missing(view.dismiss, action_id, "act_000000000000")
        for session_id in tags:
            try:
                trace = await view.traces.find(session_id)
            except UnknownTraceError:
                continue
            assert inside(scope, session_id) and all(inside(scope, link.session_id) for link in trace.links)
        # a handler in one of the scope's sessions finds what the scope finds, and nothing else
        live = [s for s in listed if (await host.sessions.get(s)).deleted_at is None]
        mine = live[0] if live else None
        outside = next((s for s in tags if not inside(scope, s)), None)
        if mine is not None and outside is not None:
            seen = await view.submit(mine, f"/probe {outside}")
            unseen = await view.submit(mine, f"/probe {missing_session}")
            assert seen.text.replace(outside, "<id>") == unseen.text.replace(missing_session, "<id>")
            assert seen.text.startswith("unknown: ")


def _tree_ids(tree: object) -> list[str]:
    out, stack = [], [tree]
    while stack:
        node = stack.pop()
        out.append(node.session_id)  # type: ignore[attr-defined]
        stack += list(node.children)  # type: ignore[attr-defined]
    return out


# No shrink phase: a failing program is reported as drawn (shrinking host programs on
# PostgreSQL took over five minutes and found nothing shorter to read).
@settings(
    max_examples=12, deadline=None, phases=[Phase.explicit, Phase.generate], suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture]
)
@given(program=programs, backend=st.sampled_from(["asyncio", "trio"]))
def test_every_read_of_a_scoped_view_holds_only_its_scope_and_outside_ids_answer_as_missing(
    any_store: StoreFactory, program: list[Op], backend: str
) -> None:
    anyio.run(scenario, any_store, program, backend=backend)





@pytest.mark.anyio
async def test_a_scoped_view_creates_sessions_with_its_tags_and_refuses_to_change_them(any_store: StoreFactory) -> None:
    async with Host(store=any_store()) as host:
        alice = host.scoped({"user": "alice"})
        chat = await alice.sessions.create(tags={"project": "p1"})
        assert dict(chat.tags) == {"user": "alice", "project": "p1"}
        with pytest.raises(InvalidArgumentError, match=r"sets 'user' to 'bob', but this view is scoped to 'user'='alice'") as info:
            await alice.sessions.create(tags={"user": "bob"})
        assert info.value.argument == "tags"
        with pytest.raises(InvalidArgumentError, match=r"this view is scoped to 'user'='alice'"):
            alice.scoped({"user": "bob"})
        narrow = alice.scoped({"project": "p1"})
        assert dict(narrow.tags) == {"user": "alice", "project": "p1"}
        await alice.sessions.create()  # not in p1
        assert [s.id for s in (await narrow.sessions.list()).sessions] == [chat.id]
        with pytest.raises(InvalidArgumentError, match=r"non-empty mapping of str to str"):
            host.scoped({})


@pytest.mark.anyio
async def test_an_id_of_another_scope_answers_exactly_like_a_missing_one(any_store: StoreFactory) -> None:
    async with Host(store=any_store()) as host:
        alice, bob = host.scoped({"user": "alice"}), host.scoped({"user": "bob"})
        hers = await alice.sessions.create()
        turn = (await alice.submit(hers, "hello")).turn
        assert turn is not None
        job = await alice.start(hers, "later")
        await job.wait()
        for ask, outside, missing in (
            (bob.sessions.get, hers.id, "ses_000000000000"),
            (bob.transcript, hers.id, "ses_000000000000"),
            (bob.lineage.ancestors, hers.id, "ses_000000000000"),
            (bob.sessions.turn, turn.id, "turn_000000000000"),
            (bob.lineage.forget, turn.id, "turn_000000000000"),
            (bob.job, job.id, "job_000000000000"),
        ):
            seen, unseen = await answer(ask, outside), await answer(ask, missing)
            assert seen == unseen
        with pytest.raises(UnknownSessionError, match=rf"no session {hers.id!r} in this host or its store") as info:
            await bob.log(hers)
        assert info.value.session_id == hers.id
        with pytest.raises(UnknownJobError, match=rf"no job {job.id!r} is in this host's store"):
            await bob.job(job.id)


@pytest.mark.anyio
async def test_lineage_edges_and_walks_stop_at_the_scope(any_store: StoreFactory) -> None:
    async with Host(store=any_store()) as host:
        alice, bob = host.scoped({"org": "acme"}), host.scoped({"org": "other"})
        a1, a2 = await alice.sessions.create(), await alice.sessions.create()
        b1 = await bob.sessions.create()
        await host.lineage.add_edge(a1.id, b1.id, "continued_from")  # the integrator relates anything
        await host.lineage.add_edge(b1.id, a2.id, "continued_from")
        assert [n.session_id for n in await alice.lineage.descendants(a1.id)] == []
        assert [n.session_id for n in await host.lineage.descendants(a1.id)] == [b1.id, a2.id]
        with pytest.raises(UnknownSessionError, match=rf"to_id {b1.id!r} names no session of this host"):
            await alice.lineage.add_edge(a1.id, b1.id, "used_result_of")
        await alice.lineage.add_edge(a1.id, a2.id, "used_result_of")
        chain = await alice.lineage.chain(a1.id)
        assert [n.session_id for n in chain.nodes] == [a1.id, a2.id]
        assert [(e.from_session_id, e.to_session_id) for e in chain.edges] == [(a1.id, a2.id)]


@pytest.mark.anyio
async def test_handlers_act_within_the_scope_of_their_session(any_store: StoreFactory) -> None:
    async with Host([MOD], store=any_store(), model=ScriptedModel(respond)) as host:
        alice, bob = host.scoped({"user": "alice"}), host.scoped({"user": "bob"})
        hers, his = await alice.sessions.create(), await bob.sessions.create()
        for command in ("/mk", "/delegate", "/spawn"):
            made = await alice.submit(hers, command)
            assert (await host.sessions.get(made.text)).tags["user"] == "alice", command
        assert (await bob.run_command("scopes.mk")).text in {s.id for s in (await bob.sessions.list()).sessions}
        probed = await alice.submit(hers, f"/probe {his.id}")
        assert probed.text.startswith(f"unknown: no session {his.id!r} in this host or its store")
        proposed = await alice.submit(hers, "propose it")
        [pending] = proposed.actions
        assert await answer(bob.confirm, pending.id) == await answer(bob.confirm, "act_000000000000")
        done = await alice.confirm(pending.id)
        assert (await host.sessions.get(done.text)).tags["user"] == "alice"


@pytest.mark.anyio
async def test_a_scoped_subscriber_reads_only_its_scopes_events(any_store: StoreFactory) -> None:
    async with Host([MOD], store=any_store(), model=ScriptedModel(respond)) as host:
        alice, bob = host.scoped({"user": "alice"}), host.scoped({"user": "bob"})
        async with alice.subscribe() as events:
            hers, his = await alice.sessions.create(), await bob.sessions.create()
            await bob.submit(his, "hello")
            await (await bob.start(his, "job")).wait()
            await alice.run_command("scopes.mk")  # a palette command: an event of no session
            mine = await alice.start(hers, "job")
            await mine.wait()
            seen = await drain(events, until=lambda e: isinstance(e, JobFinished) and e.job_id == mine.id)
        kinds = [e.kind for e in seen]
        assert "command_finished" not in kinds and kinds.count("job_finished") == 1
        assert {getattr(e, "session_id", hers.id) for e in seen} - {hers.id} <= {
            s.id for s in (await alice.sessions.list()).sessions
        }
        assert his.id not in {getattr(e, "session_id", None) for e in seen}


@pytest.mark.anyio
async def test_a_scoped_client_resumes_after_the_last_seq_it_saw_with_its_scopes_events_only(
    any_store: StoreFactory,
) -> None:
    async with Host([MOD], store=any_store(), model=ScriptedModel(respond)) as host:
        alice, bob = host.scoped({"user": "alice"}), host.scoped({"user": "bob"})
        hers, his = await alice.sessions.create(), await bob.sessions.create()
        async with alice.subscribe() as events:
            await alice.submit(hers, "one")
            seen = await drain(events, until=lambda e: e.kind == "turn_finished")
        last = max(e.seq for e in seen if e.seq is not None)
        await bob.submit(his, "his, meanwhile")  # nobody listens: the host keeps the events
        await alice.submit(hers, "two")
        async with alice.subscribe(after=last) as events:
            rest = await drain(events, until=lambda e: e.kind == "turn_finished")
        assert [e.kind for e in rest] == ["turn_started", "turn_finished"]
        assert {getattr(e, "session_id", None) for e in rest} == {hers.id}
        assert all(e.seq is not None and e.seq > last for e in rest)


@pytest.mark.anyio
async def test_a_decision_through_a_users_view_records_that_user_unless_told_otherwise(any_store: StoreFactory) -> None:
    async with Host([MOD], store=any_store(), model=ScriptedModel(respond)) as host:
        alice = host.scoped({"org": "acme", "user": "alice"})
        chat = await alice.sessions.create()
        first, second = [(await alice.submit(chat, "propose a task")).actions[0] for _ in range(2)]
        await alice.confirm(first.id, reason="looks right")
        await alice.dismiss(second.id, by="alice's assistant")

        records = await alice.actions(chat)
        assert [(r.id, r.status, r.decided_by, r.reason) for r in records] == [
            (first.id, "confirmed", "alice", "looks right"),
            (second.id, "dismissed", "alice's assistant", None),
        ]
        with pytest.raises(UnknownSessionError):
            await host.scoped({"user": "bob"}).actions(chat)


@attrs.frozen
class NoInput:
    """A tool that takes nothing."""


made_by_tool: list[str] = []


async def make_from_tool(_: NoInput, ctx: ToolContext) -> str:
    made_by_tool.append((await ctx.ai.sessions.create()).id)
    return "made"


@pytest.mark.anyio
async def test_a_tool_handler_acts_within_the_tags_of_its_session(any_store: StoreFactory) -> None:
    def call_then_answer(request: ModelRequest) -> str | ToolCall:
        return "done" if request.tool_results else ToolCall(name="make_session", input={})

    tools = define_mod(
        metadata=ModMetadata(display_name="Tools", description="A tool that creates a session"),
        ai=AiContributions(tools=[tool(name="make_session", description="Create one", input_type=NoInput, run=make_from_tool)]),
    )
    async with Host([tools], store=any_store(), model=ScriptedModel(call_then_answer)) as host:
        carol = host.scoped({"org": "acme", "user": "carol"})
        chat = await carol.sessions.create()
        assert (await carol.submit(chat, "make one")).error is None
        made = await carol.sessions.get(made_by_tool[-1])
        assert made.tags == {"org": "acme", "user": "carol"}


@pytest.mark.anyio
async def test_a_shared_trace_shows_each_scope_its_own_part_only(any_store: StoreFactory) -> None:
    async with Host(store=any_store()) as host:
        trace = await host.traces.for_task(TaskRef(source="github", id="42"), snapshot={"title": "parser"})
        hers = await host.sessions.create(trace=trace.id, tags={"user": "alice"})
        his = await host.sessions.create(trace=trace.id, tags={"user": "bob"})  # the integrator may share a task
        alice = host.scoped({"user": "alice"})
        seen = await alice.traces.find("github:42")
        assert [link.session_id for link in seen.links] == [hers.id]
        assert (await alice.traces.find(hers.id)).id == trace.id
        assert await answer(alice.traces.find, his.id) == await answer(alice.traces.find, "ses_000000000000")
        with pytest.raises(UnknownTraceError, match=rf"no trace is found by {his.id!r}") as info:
            await alice.traces.find(his.id)
        assert info.value.id == his.id
        carol = host.scoped({"user": "carol"})
        assert await answer(carol.traces.find, trace.id) == await answer(carol.traces.find, "trc_000000000000")
        assert await answer(lambda t: carol.sessions.create(trace=t), trace.id) == await answer(
            lambda t: carol.sessions.create(trace=t), "trc_000000000000"
        )


@pytest.mark.anyio
async def test_an_id_no_store_could_hold_is_an_unknown_id_through_a_view(any_store: StoreFactory) -> None:
    async with Host([MOD], store=any_store(), model=ScriptedModel(respond)) as host:
        view = host.scoped({"user": "alice"})
        junk = "ses_\ud800"
        for ask in (
            view.sessions.get,
            view.sessions.turn,
            view.job,
            view.confirm,
            view.dismiss,
            view.mark_read,
            view.lineage.node,
            view.lineage.forward,
            view.traces.find,
            lambda i: view.traces.record_commit(i, "a" * 40),
            lambda i: view.sessions.create(trace=i),
            lambda i: view.lineage.add_edge(i, "ses_other", "continued_from"),
        ):
            with pytest.raises(ModularError):  # never a UnicodeEncodeError from the store
                await ask(junk)

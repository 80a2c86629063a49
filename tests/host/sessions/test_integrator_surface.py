"""What a host integrator builds a live multi-user UI on: events, jobs, the log, listing, deletion, the inbox."""

from __future__ import annotations

import json
import sqlite3
from collections.abc import AsyncIterator
from pathlib import Path

import anyio
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from host_sim import (
    Host,
    HostEvent,
    Invocation,
    Lagged,
    ModelRequest,
    PostgresStore,
    ScriptedModel,
    SqliteStore,
    ToolCall,
    TurnHandle,
)
from host_sim.examples import background_tasks
from modular_sdk import (
    ActionEvent,
    AiPromptMessage,
    Deny,
    ModMetadata,
    SlashCommandContext,
    before_action,
    define_mod,
    slash_command,
    to_json,
)

from ..conftest import StoreFactory

# -- events -----------------------------------------------------------------------------------


async def collect(host: Host, into: list[HostEvent], ready: anyio.Event) -> None:
    async with host.subscribe(buffer=100_000) as events:
        ready.set()
        async for event in events:
            into.append(event)


async def concurrent_story(plan: list[list[str]]) -> None:
    seen: list[HostEvent] = []
    async with anyio.create_task_group() as outer:
        ready = anyio.Event()
        async with Host() as host:
            outer.start_soon(collect, host, seen, ready)
            await ready.wait()
            sessions = [await host.sessions.create() for _ in plan]

            async def drive(index: int) -> None:
                for text in plan[index]:
                    await sessions[index].send(AiPromptMessage(text=text))
                    await anyio.lowlevel.checkpoint()

            async with anyio.create_task_group() as tg:
                for index in range(len(plan)):
                    tg.start_soon(drive, index)
            ids = [s.id for s in sessions]
            turns = {s.id: await s.turns() for s in sessions}
    seqs = [e.seq for e in seen]
    assert seqs == list(range(seqs[0] or 0, (seqs[0] or 0) + len(seen)))  # no gap, increasing
    for session_id in ids:
        mine = [e for e in seen if getattr(e, "session_id", None) == session_id]
        expected: list[tuple[str, object]] = [("session_created", None)]
        for turn in turns[session_id]:
            expected += [("turn_started", turn.id), ("turn_finished", turn.id)]
        assert [(e.kind, getattr(e, "turn_id", None)) for e in mine] == expected
        finished = [e for e in mine if e.kind == "turn_finished"]
        assert [getattr(e, "reply", None) for e in finished] == [t.reply for t in turns[session_id]]


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    plan=st.lists(st.lists(st.text(min_size=1, max_size=5).filter(str.strip), max_size=6), min_size=1, max_size=5),
    backend=st.sampled_from(["asyncio", "trio"]),
)
def test_events_of_each_session_arrive_in_the_order_things_happened(plan: list[list[str]], backend: str) -> None:
    anyio.run(concurrent_story, plan, backend=backend)


@pytest.mark.anyio
async def test_a_subscriber_that_falls_behind_reads_lagged_with_exactly_what_it_missed() -> None:
    async with Host() as host:
        chat = await host.sessions.create()
        async with host.subscribe(buffer=5) as events:
            for i in range(10):  # 20 events: turn_started and turn_finished each
                await chat.send(AiPromptMessage(text=f"m{i}"))
            first = await events.__anext__()
            assert isinstance(first, Lagged) and first.missed == 15
            rest = [await events.__anext__() for _ in range(5)]
            assert [e.kind for e in rest] == ["turn_finished", "turn_started", "turn_finished", "turn_started", "turn_finished"]
            assert [e.seq for e in rest] == list(range(first.seq + 1, first.seq + 6))
            assert rest[0].seq == first.seq + 1


@pytest.mark.anyio
async def test_commands_tools_notifications_and_stream_deltas_are_events() -> None:
    class Streaming:
        name = "streaming"

        async def respond(self, request: ModelRequest) -> str | ToolCall:
            raise AssertionError("a streaming model is streamed")

        async def stream(self, request: ModelRequest) -> AsyncIterator[str | ToolCall]:
            for word in ("one ", "two ", "three"):
                yield word

    seen: list[HostEvent] = []
    async with anyio.create_task_group() as outer:
        ready = anyio.Event()
        async with Host(mods=[background_tasks.mod], model=Streaming()) as host:
            outer.start_soon(collect, host, seen, ready)
            await ready.wait()
            chat = await host.sessions.create()
            out = await host.submit(chat, "hello")
            assert out.text == "one two three"
            await host.submit(chat, "/task write the tests")
    deltas = [e for e in seen if e.kind == "reply_delta"]
    assert [d.text for d in deltas[:3]] == ["one ", "two ", "three"]
    (finished,) = [e for e in seen if e.kind == "command_finished"]
    assert finished.command_id == "task" and finished.error is None and finished.session_id == chat.id
    notes = [e for e in seen if e.kind == "notification"]
    assert len(notes) == 1 and notes[0].session_id == chat.id


@pytest.mark.anyio
async def test_every_event_serialises_with_its_kind_so_an_sse_stream_needs_no_discriminator_of_its_own() -> None:
    seen: list[HostEvent] = []
    async with anyio.create_task_group() as outer:
        ready = anyio.Event()
        async with Host(mods=[background_tasks.mod]) as host:
            outer.start_soon(collect, host, seen, ready)
            await ready.wait()
            chat = await host.sessions.create()
            await host.submit(chat, "hello")
            await host.submit(chat, "/task write the tests")
    kinds = {event.kind for event in seen}
    assert {"session_created", "turn_started", "turn_finished", "command_finished", "notification"} <= kinds
    for event in seen:
        data = json.loads(to_json(event))
        assert data["kind"] == event.kind and data["seq"] == event.seq


# -- error kinds -----------------------------------------------------------------------------


@pytest.mark.anyio
async def test_every_failure_of_submit_has_a_kind_a_program_can_branch_on() -> None:
    def fail(argument: str | None, ctx: SlashCommandContext) -> str:
        raise RuntimeError("boom")

    async def slow(argument: str | None, ctx: SlashCommandContext) -> str:
        await anyio.sleep(10)
        return "late"

    def deny(event: ActionEvent) -> Deny:
        return Deny(reason="read only")

    mod = define_mod(
        metadata=ModMetadata(display_name="Kinds", description="Fails in every way"),
        commands=[
            slash_command(id="fail", description="Raises", run=fail),
            slash_command(id="slow", description="Sleeps", run=slow),
            slash_command(id="guarded", description="Denied", run=fail),
        ],
        hooks=[before_action("command:guarded", deny)],
    )

    def model(request: ModelRequest) -> str:
        raise RuntimeError("the model is down")

    async with Host(mods=[mod], model=ScriptedModel(model), handler_timeout=0.2) as host:
        chat = await host.sessions.create()
        kinds = {text: (await host.submit(chat, text)).error_kind for text in ("/nope", "/fail", "/slow", "/guarded", "hi", "", "/")}
    assert kinds == {
        "/nope": "unknown_command",
        "/fail": "handler_failed",
        "/slow": "timeout",
        "/guarded": "denied",
        "hi": "model_failed",
        "": "invalid_input",
        "/": "invalid_input",
    }


# -- jobs -------------------------------------------------------------------------------------


@pytest.mark.anyio
async def test_a_job_outlives_its_callers_cancellation_and_is_listed() -> None:
    async with Host(mods=[background_tasks.mod]) as host:
        chat = await host.sessions.create()
        await host.submit(chat, "Refactor the parser")
        with anyio.CancelScope() as caller:
            job = await host.start(chat, "/task write the tests")
            caller.cancel()  # the request that started it goes away
        submission = await job.wait()
        assert job.status == "finished" and submission.text.startswith("Started task")
        assert [j.id for j in (await host.jobs()).jobs] == [job.id]


@pytest.mark.anyio
async def test_closing_the_host_interrupts_a_running_job_and_a_reopened_host_lists_it(tmp_path: Path) -> None:
    path = tmp_path / "s.sqlite"
    started = anyio.Event()

    async def respond(request: ModelRequest) -> str:
        started.set()
        await anyio.sleep_forever()
        raise AssertionError

    async with Host(model=ScriptedModel(respond), store=SqliteStore(path)) as host:
        chat = await host.sessions.create()
        job = await host.start(chat, "think forever")
        await started.wait()
    assert job.status == "interrupted"
    submission = await job.wait()
    assert submission.error is not None
    async with Host(store=SqliteStore(path)) as again:
        (listed,) = (await again.jobs()).jobs
        assert (listed.id, listed.status) == (job.id, "interrupted")


@pytest.mark.anyio
async def test_a_job_a_crash_left_running_is_interrupted_when_the_store_is_next_opened(tmp_path: Path) -> None:
    path = tmp_path / "s.sqlite"
    async with Host(store=SqliteStore(path)) as host:
        chat = await host.sessions.create()
        job = await host.start(chat, "hello")
        await job.wait()
    conn = sqlite3.connect(path)  # what a kill -9 mid-job leaves: a job record still running
    conn.execute("UPDATE jobs SET status = 'running', finished_at = NULL")
    conn.commit()
    conn.close()
    async with Host(store=SqliteStore(path)) as again:
        (listed,) = (await again.jobs()).jobs
        assert listed.status == "interrupted" and listed.finished_at is not None


# -- the log ------------------------------------------------------------------------------------


@pytest.mark.anyio
async def test_commands_are_durable_and_the_log_interleaves_them_with_turns(any_store: StoreFactory) -> None:
    store = any_store

    async with Host(mods=[background_tasks.mod], store=store()) as host:
        chat = await host.sessions.create()
        await host.submit(chat, "Refactor the parser")
        await host.submit(chat, "/task write the tests")
        await host.submit(chat, "/nope")
        await host.submit(chat, "thanks")
    async with Host(mods=[background_tasks.mod], store=store()) as again:
        log = await again.log(chat.id)
    shown = [
        (e.command_id, e.argument, e.error_kind) if isinstance(e, Invocation) else (e.message.type, e.ordinal)
        for e in log
    ]
    assert shown == [
        ("prompt", 0),
        ("task", "write the tests", None),
        ("notification", 1),
        ("prompt", 2),
    ]  # an unknown command never ran: no invocation; /task's notification came during it
    task = next(e for e in log if isinstance(e, Invocation))
    assert task.text is not None and task.text.startswith("Started task") and task.finished_at is not None
    assert all(isinstance(e, TurnHandle) and e.finished_at is not None for e in log if not isinstance(e, Invocation))


@pytest.mark.anyio
async def test_a_transcript_read_after_a_restart_shows_the_commands_typed_with_their_output(
    any_store: StoreFactory,
) -> None:
    def broken(argument: str | None, ctx: SlashCommandContext) -> str:
        raise RuntimeError(f"cannot {argument}")

    failing = define_mod(
        metadata=ModMetadata(display_name="Failing", description="A command that fails"),
        commands=[slash_command(id="break", description="Fails", run=broken)],
    )
    store = any_store
    async with Host(mods=[background_tasks.mod, failing], store=store()) as host:
        chat = await host.sessions.create()
        await host.submit(chat, "Refactor the parser")
        await host.submit(chat, "/task write the tests")
        await host.submit(chat, "/break the build")
    async with Host(mods=[background_tasks.mod, failing], store=store()) as again:
        text = await again.transcript(chat.id)

    typed = text.index("#0 [user] Refactor the parser")
    task = text.index("> [user, command of mod background-tasks] /task write the tests\n    output:\n      Started task")
    note = text.index("#1 [notification")
    broke = text.index("> [user, command of mod failing] /break the build\n    FAILED: command /break of mod 'failing' failed: RuntimeError: cannot the build")
    assert typed < task < note < broke  # log order


# -- ownership, listing, deletion -------------------------------------------------------------------


@pytest.mark.anyio
async def test_sessions_are_listed_by_owner_newest_first_a_page_at_a_time(any_store: StoreFactory) -> None:
    async with Host(store=any_store()) as host:
        alice = [await host.sessions.create(tags={"user": "alice"}) for _ in range(5)]
        bob = await host.sessions.create(tags={"user": "bob", "team": "x"})
        await host.submit(alice[0], "hi")
        fork = await alice[0].fork()  # inherits the owner
        assert dict(fork.tags) == {"user": "alice"}
        first = await host.sessions.list(tags={"user": "alice"}, limit=4)
        assert [s.id for s in first.sessions] == [fork.id, *[s.id for s in alice[::-1][:3]]]
        assert first.next is not None
        second = await host.sessions.list(tags={"user": "alice"}, limit=4, after=first.next)
        assert [s.id for s in second.sessions] == [alice[1].id, alice[0].id] and second.next is None
        roots = await host.sessions.list(tags={"user": "alice"}, roots_only=True, limit=50)
        assert [s.id for s in roots.sessions] == [s.id for s in alice[::-1]]
        both = await host.sessions.list(tags={"user": "bob", "team": "x"})
        assert [s.id for s in both.sessions] == [bob.id]
        assert (await host.sessions.list(tags={"user": "bob", "team": "y"})).sessions == ()

        await host.sessions.delete(alice[2].id)
        listed = await host.sessions.list(tags={"user": "alice"}, limit=50)
        assert alice[2].id not in [s.id for s in listed.sessions]
        assert (await host.sessions.get(alice[2].id)).deleted_at is not None


@pytest.mark.anyio
async def test_deleting_a_session_leaves_no_byte_of_its_content_and_its_forks_keep_working(tmp_path: Path) -> None:
    path = tmp_path / "s.sqlite"
    async with Host(mods=[background_tasks.mod], store=SqliteStore(path)) as host:
        chat = await host.sessions.create(tags={"user": "carol"})
        await host.submit(chat, "my secret plan SECRETPLAN")
        await host.submit(chat, "/task SECRETTASK")
        fork = await chat.fork()
        await host.sessions.delete(chat.id)
        assert [t.erased_at is not None for t in await fork.turns()] == [True, True]
        await fork.send(AiPromptMessage(text="still works"))
    for file in tmp_path.iterdir():
        data = file.read_bytes()
        assert b"SECRETPLAN" not in data and b"SECRETTASK" not in data, file.name
    async with Host(store=SqliteStore(path)) as again:
        gone = await again.sessions.get(chat.id)
        assert gone.deleted_at is not None and gone.lineage.kind == "root"
        assert [t.reply for t in await (await again.sessions.get(fork.id)).turns()][-1] == "echo: still works"


# -- the tree ---------------------------------------------------------------------------------------


@pytest.mark.anyio
async def test_the_lineage_tree_nests_forks_and_spawns_with_what_a_ui_draws() -> None:
    async with Host(mods=[background_tasks.mod]) as host:
        chat = await host.sessions.create(tags={"user": "dan"})
        await host.submit(chat, "Refactor the parser")
        await host.submit(chat, "/task write the tests")
        early = await (await chat.turns())[0].fork()
        tree = await host.lineage.tree(chat.id)
    assert (tree.session_id, tree.kind, tree.anchor_ordinal, dict(tree.tags)) == (chat.id, "root", None, {"user": "dan"})
    work, again = tree.children
    assert (work.kind, work.label, work.anchor_ordinal) == ("fork", "Task", 0)
    assert (again.session_id, again.anchor_ordinal) == (early.id, 0)
    (report,) = work.children
    assert (report.label, report.anchor_ordinal, report.children) == ("Task report", 1, ())


def test_a_deep_fork_chain_tree_is_built_without_recursion() -> None:
    async def main() -> None:
        async with Host() as host:
            session = await host.sessions.create()
            await session.send(AiPromptMessage(text="x"))
            root = session.id
            for _ in range(3000):
                session = await session.fork()
            tree = await host.lineage.tree(root)
        depth = 0
        while tree.children:
            (tree,) = tree.children
            depth += 1
        assert depth == 3000

    anyio.run(main)


@pytest.mark.anyio
async def test_bad_listing_arguments_name_the_value() -> None:
    async with Host() as host:
        with pytest.raises(ValueError, match=r"'garbage' is not a page cursor"):
            await host.sessions.list(after="garbage")
        with pytest.raises(ValueError, match=r"limit must be an int from 1 to 10000, got 0"):
            await host.sessions.list(limit=0)
        with pytest.raises(ValueError, match=r"tags map non-empty str keys"):
            await host.sessions.create(tags={"": "x"})
        with pytest.raises(ValueError, match=r"buffer must be an int >= 1"):
            async with host.subscribe(buffer=0):
                pass



@pytest.mark.anyio
async def test_a_store_made_before_the_log_gets_its_tables_when_a_host_opens_it(tmp_path: Path) -> None:
    path = tmp_path / "s.sqlite"
    async with Host(store=SqliteStore(path)) as host:
        chat = await host.sessions.create()
        await host.submit(chat, "hello")
    conn = sqlite3.connect(path)  # what a version-3 store written before section 12 looks like
    for table in ("jobs", "invocations", "reads", "deletions", "session_tags"):
        conn.execute(f"DROP TABLE {table}")
    conn.execute("ALTER TABLE sessions DROP COLUMN tags")
    conn.commit()
    conn.close()
    reader = SqliteStore(path, read_only=True)  # a reader reads it as it is
    await reader.open()
    assert [dict(r.tags) for r in await reader.list_sessions()] == [{}]
    await reader.close()
    async with Host(store=SqliteStore(path)) as again:
        assert (await again.jobs()).jobs == ()
        assert [s.id for s in (await again.sessions.list()).sessions] == [chat.id]
        tagged = await again.sessions.create(tags={"user": "erin"})
        assert [s.id for s in (await again.sessions.list(tags={"user": "erin"})).sessions] == [tagged.id]


@pytest.mark.anyio
async def test_a_streamed_reply_is_every_delta_of_the_turn_text_before_a_tool_call_included() -> None:
    class ToolStreaming:
        name = "tool-streaming"

        async def respond(self, request: ModelRequest) -> str | ToolCall:
            raise AssertionError("a streaming model is streamed")

        async def stream(self, request: ModelRequest) -> AsyncIterator[str | ToolCall]:
            if not request.tool_results:
                yield "Let me look. "
                yield ToolCall(name="nothing", input={})  # an unknown tool: the model is told so
                return
            yield "Done."

    seen: list[HostEvent] = []
    async with anyio.create_task_group() as outer:
        ready = anyio.Event()
        async with Host(model=ToolStreaming()) as host:
            outer.start_soon(collect, host, seen, ready)
            await ready.wait()
            chat = await host.sessions.create()
            out = await host.submit(chat, "look")
    deltas = "".join(e.text for e in seen if e.kind == "reply_delta")
    assert deltas == out.text == "Let me look. Done."
    (finished,) = [e for e in seen if e.kind == "turn_finished"]
    assert finished.reply == deltas


@pytest.mark.anyio
async def test_on_postgresql_live_hosts_interrupt_only_jobs_whose_host_is_gone_once_its_claim_stayed_gone(
    postgres_dsn: str,
) -> None:
    """A job whose host holds no claim is interrupted by a live host after the grace period
    (API.md section 23: the host may only be reconnecting), never at once; a live host's job never."""
    import psycopg

    from host_sim.testing import DEAD_HOST_GRACE

    started = anyio.Event()

    async def respond(request: ModelRequest) -> str:
        started.set()
        await anyio.sleep_forever()
        raise AssertionError

    async with Host(model=ScriptedModel(respond), store=PostgresStore(postgres_dsn)) as live:
        chat = await live.sessions.create()
        running = await live.start(chat, "think")
        await started.wait()
        with psycopg.connect(postgres_dsn, autocommit=True) as conn:  # a job a killed host left running
            conn.execute(
                "INSERT INTO host_sim.jobs (id, session_id, text, status, created_at, owner) "
                "VALUES ('job_dead', %s, 'x', 'running', '2026-01-01T00:00:00+00:00', 987654321)",
                (chat.id,),
            )
        async with Host(store=PostgresStore(postgres_dsn)) as other:  # a second host opens the same database
            statuses = {j.id: j.status for j in (await other.jobs()).jobs}
            assert statuses == {running.id: "running", "job_dead": "running"}  # not at once: a grace first
            with anyio.fail_after(DEAD_HOST_GRACE + 10):
                while statuses["job_dead"] == "running":
                    await anyio.sleep(0.2)
                    statuses = {j.id: j.status for j in (await other.jobs()).jobs}
        assert statuses == {running.id: "running", "job_dead": "interrupted"}
    assert running.status == "interrupted"  # its own host closed

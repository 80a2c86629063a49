"""Traces (API.md section 9): task -> session -> output -> commit, linked by the host."""

from __future__ import annotations

import sqlite3
import subprocess
import sys
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from pathlib import Path

import attrs
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from host_sim import (
    Host,
    MemoryStore,
    ModelRequest,
    ScriptedModel,
    SqliteStore,
    Store,
    TaskRef,
    ToolCall,
    Trace,
    TraceError,
    TraceStore,
    UnknownTraceError,
)
from modular_sdk import (
    AiContributions,
    InvalidArgumentError,
    ModMetadata,
    SlashCommandContext,
    ToolContext,
    define_mod,
    from_json,
    slash_command,
    to_json,
    tool,
)

pytestmark = pytest.mark.anyio


@attrs.frozen
class Proposal:
    title: str


async def create_proposal(value: Proposal, ctx: ToolContext) -> str:
    await ctx.report_output(kind="proposal", output_id=value.title)
    return f"proposal {value.title} created"


async def report(argument: str | None, ctx: SlashCommandContext) -> str:
    await ctx.report_output(kind="note", output_id=argument or "note-1")
    child = await ctx.session.spawn()
    return child.id


MOD = define_mod(
    metadata=ModMetadata(display_name="Proposals", description="Proposals that land as commits"),
    commands=[slash_command(id="report", description="Report a note and spawn a helper", run=report)],
    ai=AiContributions(
        tools=[tool(name="create_proposal", description="Create a proposal", input_type=Proposal, run=create_proposal)]
    ),
)


def respond(request: ModelRequest) -> str | ToolCall:
    """'propose X' calls create_proposal(X) once; anything else is echoed."""
    if request.text.startswith("propose ") and not request.tool_results:
        return ToolCall(name="create_proposal", input={"title": request.text.split()[1]})
    return f"ok: {request.text}"


class Clock:
    def __init__(self) -> None:
        self.now = datetime(2026, 1, 1, tzinfo=UTC)

    def __call__(self) -> datetime:
        self.now += timedelta(seconds=1)
        return self.now


StoreFactory = Callable[[], Store]


def host(store: Store, **options: object) -> Host:
    return Host(mods=[MOD], model=ScriptedModel(respond), store=store, clock=Clock(), **options)  # type: ignore[arg-type]


async def test_a_task_trace_links_its_sessions_outputs_and_commit_across_reopen(any_store: StoreFactory) -> None:
    async with host(any_store()) as h:
        trace = await h.traces.for_task(TaskRef(source="github", id="42"), snapshot={"title": "Parser errors"})
        assert trace.origin == "task" and trace.task is not None and trace.task.ref == "github:42"
        assert await h.traces.for_task(TaskRef(source="github", id="42")) == trace  # the existing one
        chat = await h.sessions.create(trace=trace.id)
        await h.submit(chat, "propose chg-1")
        fork = await chat.fork()
        assert await h.traces.record_commit("chg-1", "3f2a9c1") == "3f2a9c1"
        assert await h.traces.record_commit("chg-1", "deadbee") == "3f2a9c1"  # never overwritten
    async with host(any_store()) as h:
        for key in (trace.id, "github:42", chat.id, fork.id, "chg-1", "3f2a9c1"):
            found = await h.traces.find(key)
            assert found.id == trace.id, key
        assert found.origin == "task"
        assert [link.session_id for link in found.links] == [chat.id, fork.id]
        assert [(o.output_id, o.kind, o.commit) for o in found.links[0].outputs] == [("chg-1", "proposal", "3f2a9c1")]
        assert found.task is not None and found.task.snapshot == {"title": "Parser errors"}
        assert found.updated_at >= found.created_at
        with pytest.raises(UnknownTraceError, match="'deadbee'") as caught:
            await h.traces.find("deadbee")
        assert caught.value.id == "deadbee"


async def test_a_chat_gets_a_chat_trace_at_its_first_output_and_keeps_that_origin(any_store: StoreFactory) -> None:
    async with host(any_store()) as h:
        chat = await h.sessions.create()
        with pytest.raises(UnknownTraceError):
            await h.traces.find(chat.id)  # no output yet: no trace
        await h.submit(chat, "propose chg-7")
        trace = await h.traces.find(chat.id)
        assert trace.origin == "chat" and trace.task is None
        attached = await h.traces.attach_task(trace.id, TaskRef(source="local", id="7"), {"title": "From the chat"})
        assert attached.origin == "chat" and attached.task is not None and attached.task.ref == "local:7"
        with pytest.raises(TraceError, match="already has task 'local:7'") as caught:
            await h.traces.attach_task(trace.id, TaskRef(source="local", id="8"))
        assert caught.value.trace_id == trace.id
        other = await h.traces.for_task(TaskRef(source="github", id="1"))
        with pytest.raises(TraceError, match="task 'github:1' already has trace"):
            chat2 = await h.sessions.create()
            await h.submit(chat2, "propose chg-8")
            await h.traces.attach_task((await h.traces.find("chg-8")).id, TaskRef(source="github", id="1"))
        assert (await h.traces.find("github:1")).id == other.id
    async with host(any_store()) as h:
        again = await h.traces.find("local:7")
        assert again.id == trace.id and again.origin == "chat"


async def test_sqlite_refuses_to_rewrite_a_trace_origin_or_any_trace_record(tmp_path: Path) -> None:
    path = tmp_path / "s.sqlite"
    async with host(SqliteStore(path)) as h:
        trace = await h.traces.for_task(TaskRef(source="github", id="1"))
        chat = await h.sessions.create(trace=trace.id)
        await h.submit(chat, "propose chg-1")
        await h.traces.record_commit("chg-1", "abcdef1")
    conn = sqlite3.connect(path)
    for statement in (
        "UPDATE traces SET origin = 'chat'",
        "DELETE FROM traces",
        "UPDATE trace_tasks SET ref = 'x:y'",
        "UPDATE trace_links SET trace_id = 'other'",
        "DELETE FROM trace_outputs",
        "UPDATE trace_commits SET commit_hash = 'ffffff1'",
    ):
        with pytest.raises(sqlite3.IntegrityError, match="never"):
            conn.execute(statement)
    conn.close()


async def test_forks_and_spawns_join_the_trace_of_their_parent(any_store: StoreFactory) -> None:
    async with host(any_store()) as h:
        trace = await h.traces.for_task(TaskRef(source="jira", id="OPS-1"))
        chat = await h.sessions.create(trace=trace.id)
        submitted = await h.submit(chat, "/report note-1")
        spawned = submitted.text
        await h.submit(chat, "hello")
        fork = await chat.fork()
        grandchild = await fork.fork()
        loose = await h.sessions.create()
        found = await h.traces.find(trace.id)
        assert [link.session_id for link in found.links] == [chat.id, spawned, fork.id, grandchild.id]
        assert found.links[0].outputs[0].output_id == "note-1"
        with pytest.raises(UnknownTraceError):
            await h.traces.find(loose.id)


async def test_an_output_id_reported_by_another_session_is_refused(any_store: StoreFactory) -> None:
    async with host(any_store()) as h:
        first, second = await h.sessions.create(), await h.sessions.create()
        await h.submit(first, "/report shared-1")
        await h.submit(first, "/report shared-1")  # the same session again: nothing changes
        out = await h.submit(second, "/report shared-1")
        assert out.error is not None and "output 'shared-1' was reported by session" in out.error
        assert len((await h.traces.find("shared-1")).outputs) == 1


async def test_trace_arguments_are_checked(any_store: StoreFactory) -> None:
    async with host(any_store()) as h:
        with pytest.raises(UnknownTraceError, match="no trace 'trc_nope'"):
            await h.sessions.create(trace="trc_nope")
        with pytest.raises(InvalidArgumentError, match="trace must be a trace id"):
            await h.sessions.create(trace=42)  # type: ignore[arg-type]
        with pytest.raises(InvalidArgumentError, match="snapshot must be a JSON object"):
            await h.traces.for_task(TaskRef(source="a", id="1"), snapshot={"x": object()})
        with pytest.raises(InvalidArgumentError, match="ref must be a TaskRef"):
            await h.traces.for_task(42)  # type: ignore[arg-type]
        with pytest.raises(InvalidArgumentError, match="commit must be a commit hash"):
            await h.traces.record_commit("chg-1", "no spaces allowed")
        with pytest.raises(UnknownTraceError, match="no output 'chg-404'"):
            await h.traces.record_commit("chg-404", "abcdef1")
        with pytest.raises(UnknownTraceError):
            await h.traces.attach_task("trc_nope", TaskRef(source="a", id="1"))


async def test_a_mod_handle_may_not_name_a_trace() -> None:
    async def sneaky(argument: str | None, ctx: SlashCommandContext) -> str:
        sessions = ctx.ai.sessions
        created = await sessions.create(trace=argument)  # type: ignore[call-arg]
        return str(created.id)

    mod = define_mod(
        metadata=ModMetadata(display_name="Sneaky", description="Names a trace"),
        commands=[slash_command(id="sneak", description="Try to join a trace", run=sneaky)],
    )
    async with Host(mods=[mod]) as h:
        trace = await h.traces.for_task(TaskRef(source="a", id="1"))
        chat = await h.sessions.create()
        out = await h.submit(chat, f"/sneak {trace.id}")
        assert out.error is not None and "a mod never names a trace" in out.error


async def test_a_store_without_traces_gets_a_trace_error_naming_it() -> None:
    class Plain:
        """A Store of your own that is not a TraceStore."""

        def __init__(self) -> None:
            self._inner = MemoryStore()

        def __getattr__(self, name: str) -> object:
            if name in {"create_trace", "get_trace", "find_trace", "add_output", "create_linked_session"}:
                raise AttributeError(name)
            return getattr(self._inner, name)

        def __repr__(self) -> str:
            return "<PlainStore>"

    plain: Store = Plain()  # type: ignore[assignment]
    assert not isinstance(plain, TraceStore)
    with pytest.raises(TraceError, match="<PlainStore> keeps no traces.*MemoryStore\\(\\), SqliteStore\\(path\\) or PostgresStore"):
        Host(store=plain, spool="spool")
    async with Host(mods=[MOD], store=plain) as h:
        with pytest.raises(TraceError, match="keeps no traces"):
            h.traces
        chat = await h.sessions.create()  # sessions work as before
        out = await h.submit(chat, "/report chg-1")
        assert out.error is not None and "keeps no traces" in out.error
        with pytest.raises(TraceError):
            await h.sessions.create(trace="trc_x")


async def test_the_commit_resolver_fills_missing_commits_lazily_and_first_found_wins(any_store: StoreFactory) -> None:
    asked: list[str] = []

    async def resolver(output: object) -> str | None:
        output_id = getattr(output, "output_id")
        asked.append(output_id)
        return {"chg-1": "1111111"}.get(output_id)

    async with host(any_store(), commit_resolver=resolver, builtin_tools=("lineage",)) as h:
        chat = await h.sessions.create()
        await h.submit(chat, "propose chg-1")
        await h.submit(chat, "propose chg-2")
        trace = await h.traces.find(chat.id)
        assert {o.output_id: o.commit for o in trace.outputs} == {"chg-1": "1111111", "chg-2": None}
        assert asked == ["chg-1", "chg-2"]
        asked.clear()
        await h.traces.find("chg-1")
        assert asked == ["chg-2"]  # chg-1 was persisted; only the missing one is asked again
        assert await h.traces.record_commit("chg-1", "2222222") == "1111111"


async def test_a_resolver_that_raises_is_named(any_store: StoreFactory) -> None:
    def broken(output: object) -> str | None:
        raise RuntimeError("git is not installed")

    async with host(any_store(), commit_resolver=broken) as h:
        chat = await h.sessions.create()
        await h.submit(chat, "propose chg-1")
        with pytest.raises(TraceError, match="commit_resolver raised RuntimeError\\('git is not installed'\\) for output 'chg-1'"):
            await h.traces.find("chg-1")


async def test_lineage_lookup_answers_from_the_store_writes_nothing_and_never_resolves(any_store: StoreFactory) -> None:
    called: list[object] = []

    def resolver(output: object) -> str | None:
        called.append(output)
        return "9999999"

    def model(request: ModelRequest) -> str | ToolCall:
        if request.text.startswith("why ") and not request.tool_results:
            return ToolCall(name="lineage_lookup", input={"id": request.text.split()[1]})
        if request.tool_results:
            return request.tool_results[-1].output or ""
        return respond(request)

    store = any_store()
    async with Host(mods=[MOD], model=ScriptedModel(model), store=store, builtin_tools=("lineage",), commit_resolver=resolver) as h:
        trace = await h.traces.for_task(TaskRef(source="github", id="9"), {"title": "Why"})
        chat = await h.sessions.create(trace=trace.id)
        await h.submit(chat, "propose chg-9")
        called.clear()
        assert isinstance(store, TraceStore)
        before = await store.read_traces()
        answer = (await h.submit(chat, "why chg-9")).text
        unknown = (await h.submit(chat, "why nothing-here")).text
        assert await store.read_traces() == before and called == []
    import json

    data = json.loads(answer)
    assert data["trace"] == trace.id and data["origin"] == "task"
    assert data["task"]["ref"] == "github:9" and data["task"]["snapshot"] == {"title": "Why"}
    assert data["sessions"][0]["outputs"] == [
        {"output_id": "chg-9", "kind": "proposal", "commit": None, "created_at": data["sessions"][0]["outputs"][0]["created_at"]}
    ]
    assert json.loads(unknown)["of"] == "nothing-here" and "no trace" in json.loads(unknown)["error"]


def test_builtin_tools_are_checked() -> None:
    with pytest.raises(InvalidArgumentError, match="builtin_tools must be a sequence of 'lineage'"):
        Host(builtin_tools=("lineage", "shell"))
    with pytest.raises(InvalidArgumentError, match="builtin_tools"):
        Host(builtin_tools="lineage")


async def test_the_trace_index_deleted_is_reported_and_rebuilt_by_fsck_and_on_open(tmp_path: Path) -> None:
    path = tmp_path / "s.sqlite"
    async with host(SqliteStore(path)) as h:
        trace = await h.traces.for_task(TaskRef(source="github", id="5"))
        chat = await h.sessions.create(trace=trace.id)
        await h.submit(chat, "propose chg-5")
        await h.traces.record_commit("chg-5", "5555555")
    conn = sqlite3.connect(path)
    conn.execute("DELETE FROM trace_index")
    conn.commit()
    conn.close()
    fsck = [sys.executable, "-m", "host_sim", "fsck", "--store", str(path)]
    checked = subprocess.run(fsck, capture_output=True, text=True, cwd=tmp_path, timeout=120)
    assert checked.returncode == 1 and "the trace index lacks commit '5555555'" in checked.stdout
    repaired = subprocess.run([*fsck, "--repair"], capture_output=True, text=True, cwd=tmp_path, timeout=120)
    assert repaired.returncode == 0, repaired.stdout + repaired.stderr
    async with host(SqliteStore(path)) as h:
        assert (await h.traces.find("5555555")).id == trace.id
    conn = sqlite3.connect(path)  # the whole table gone: the next writer re-creates and rebuilds it
    conn.execute("DROP TABLE trace_index")
    conn.commit()
    conn.close()
    async with host(SqliteStore(path)) as h:
        assert (await h.traces.find("github:5")).id == trace.id
        assert (await h.traces.find(chat.id)).id == trace.id


async def test_a_version_3_store_made_before_traces_gets_their_tables(tmp_path: Path) -> None:
    path = tmp_path / "old.sqlite"
    async with Host(store=SqliteStore(path)) as h:
        chat = await h.sessions.create()
        await h.submit(chat, "hello")
    conn = sqlite3.connect(path)
    tables = [n for (n,) in conn.execute("SELECT name FROM sqlite_master WHERE type = 'trigger' AND tbl_name IN ('traces','trace_tasks','trace_links','trace_outputs','trace_commits','actions','action_outcomes','spool_applied')")]
    for trigger in tables:
        conn.execute(f"DROP TRIGGER {trigger}")
    for table in ("traces", "trace_tasks", "trace_links", "trace_outputs", "trace_commits", "trace_index", "actions", "action_outcomes", "spool_applied"):
        conn.execute(f"DROP TABLE {table}")
    conn.execute("DELETE FROM meta WHERE key = 'trace_index_version'")
    conn.commit()
    conn.close()
    reader = SqliteStore(path, read_only=True)  # a reader does without the tables
    await reader.open()
    assert await reader.find_trace(chat.id) is None and await reader.pending_actions(chat.id) == ()
    await reader.close()
    async with host(SqliteStore(path)) as h:
        await h.submit(await h.sessions.get(chat.id), "propose chg-1")
        assert (await h.traces.find("chg-1")).origin == "chat"


@settings(max_examples=30, deadline=None)
@given(
    origin=st.sampled_from(["task", "chat"]),
    task=st.none() | st.builds(lambda s, i: f"{s}:{i}", st.text("abc", min_size=1, max_size=3), st.text(min_size=1, max_size=5)),
    snapshot=st.dictionaries(st.text(max_size=5), st.none() | st.integers(-(2**63), 2**63 - 1) | st.text(max_size=5), max_size=3),  # JSON from outside holds 64-bit ints (API §19)
    outputs=st.lists(st.tuples(st.text(min_size=1, max_size=6), st.none() | st.text("0123456789abcdef", min_size=7, max_size=7)), max_size=4),
)
def test_a_trace_round_trips_through_the_one_converter(
    origin: str, task: str | None, snapshot: dict[str, object], outputs: list[tuple[str, str | None]]
) -> None:
    from host_sim import TraceLink, TraceOutput, TraceTask

    at = datetime(2026, 1, 1, tzinfo=UTC)
    trace = Trace(
        id="trc_1",
        origin="task" if origin == "task" else "chat",
        task=None if task is None else TraceTask(ref=task, snapshot=snapshot, captured_at=at),
        links=(
            TraceLink(
                session_id="ses_1",  # type: ignore[arg-type]
                created_at=at,
                outputs=tuple(TraceOutput(output_id=o, kind="proposal", created_at=at, commit=c) for o, c in outputs),
            ),
        ),
        created_at=at,
        updated_at=at,
    )
    assert from_json(to_json(trace), Trace) == trace


def test_task_refs_parse_and_refuse_bad_parts() -> None:
    from modular_sdk import ModDefinitionError

    assert TaskRef.parse("github:42") == TaskRef(source="github", id="42") and str(TaskRef(source="a", id="b:c")) == "a:b:c"
    with pytest.raises(ModDefinitionError, match="TaskRef.source must be non-empty text without ':'"):
        TaskRef(source="a:b", id="1")
    with pytest.raises(ModDefinitionError, match="a task ref is 'source:id'"):
        TaskRef.parse("nocolon")

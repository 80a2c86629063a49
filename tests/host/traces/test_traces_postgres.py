"""Traces on PostgreSQL beyond the shared suite (test_traces.py runs that on every store):
several hosts, the spool, records that never change, and a database made before traces."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import anyio
import attrs
import psycopg
import pytest

from host_sim import Host, ModelRequest, PostgresStore, ScriptedModel, TaskRef, ToolCall, write_event
from modular_sdk import AiContributions, ModMetadata, ToolContext, define_mod, tool

pytestmark = pytest.mark.anyio


@attrs.frozen
class Proposal:
    title: str


async def create_proposal(value: Proposal, ctx: ToolContext) -> str:
    await ctx.report_output(kind="proposal", output_id=value.title)
    return "created"


MOD = define_mod(
    metadata=ModMetadata(display_name="Proposals", description="Proposals that land as commits"),
    ai=AiContributions(tools=[tool(name="create_proposal", description="Create one", input_type=Proposal, run=create_proposal)]),
)


def respond(request: ModelRequest) -> str | ToolCall:
    if request.text.startswith("propose ") and not request.tool_results:
        return ToolCall(name="create_proposal", input={"title": request.text.split()[1]})
    return "ok"


def sql(dsn: str, statement: str) -> None:
    with psycopg.connect(dsn, autocommit=True) as conn:
        conn.execute(statement.encode())


async def test_a_trace_one_host_links_is_found_by_another_with_its_commit(postgres_dsn: str) -> None:
    async with (
        Host(mods=[MOD], model=ScriptedModel(respond), store=PostgresStore(postgres_dsn)) as a,
        Host(store=PostgresStore(postgres_dsn)) as b,
    ):
        trace = await a.traces.for_task(TaskRef(source="github", id="42"), snapshot={"title": "Parser"})
        chat = await a.sessions.create(trace=trace.id)
        await a.submit(chat, "propose chg-1")
        assert await b.traces.record_commit("chg-1", "3f2a9c1") == "3f2a9c1"
        assert await a.traces.record_commit("chg-1", "deadbee") == "3f2a9c1"  # the first stays, on every host
        for key in ("github:42", chat.id, "chg-1", "3f2a9c1"):
            assert (await b.traces.find(key)).id == trace.id
        assert await b.traces.for_task(TaskRef(source="github", id="42")) == await a.traces.find(trace.id)


async def test_spool_events_are_applied_once_on_postgresql(postgres_dsn: str, tmp_path: Path) -> None:
    spool = tmp_path / "spool"
    async with Host(mods=[MOD], model=ScriptedModel(respond), store=PostgresStore(postgres_dsn), spool=spool) as h:
        chat = await h.sessions.create()
        write_event(spool, {"type": "output", "session_id": chat.id, "output_id": "chg-7", "kind": "proposal", "id": "evt_1"})
        write_event(spool, {"type": "commit", "output_id": "chg-7", "commit": "7777777", "id": "evt_2"})
        with anyio.fail_after(30):
            while any(n.endswith(".json") for n in os.listdir(spool)):
                await anyio.sleep(0.05)
        found = await h.traces.find("7777777")
        assert found.origin == "chat" and found.links[0].session_id == chat.id
    write_event(spool, {"type": "commit", "output_id": "chg-7", "commit": "8888888", "id": "evt_2"})  # again
    async with Host(store=PostgresStore(postgres_dsn), spool=spool) as h:
        with anyio.fail_after(30):
            while any(n.endswith(".json") for n in os.listdir(spool)):
                await anyio.sleep(0.05)
        assert (await h.traces.find("chg-7")).links[0].outputs[0].commit == "7777777"


async def test_trace_records_never_change_in_the_database(postgres_dsn: str) -> None:
    async with Host(store=PostgresStore(postgres_dsn)) as h:
        await h.traces.for_task(TaskRef(source="github", id="1"))
    for statement, refusal in (
        ("UPDATE host_sim.traces SET origin = 'chat'", "a trace record"),
        ("DELETE FROM host_sim.trace_tasks", "task of a trace is never deleted"),
        ("TRUNCATE host_sim.traces", "records are never deleted"),
    ):
        with pytest.raises(psycopg.errors.IntegrityConstraintViolation, match=refusal):
            sql(postgres_dsn, statement)


async def test_a_database_made_before_traces_gets_their_tables_and_its_index(postgres_dsn: str, tmp_path: Path) -> None:
    async with Host(mods=[MOD], model=ScriptedModel(respond), store=PostgresStore(postgres_dsn)) as h:
        chat = await h.sessions.create()
        await h.submit(chat, "hello")
    tables = "traces, trace_tasks, trace_links, trace_outputs, trace_commits, trace_index, actions, action_outcomes, spool_applied"
    sql(postgres_dsn, "DROP TABLE " + ", ".join(f"host_sim.{t}" for t in tables.split(", ")))
    async with Host(mods=[MOD], model=ScriptedModel(respond), store=PostgresStore(postgres_dsn)) as h:
        await h.submit(await h.sessions.get(chat.id), "propose chg-1")
        assert (await h.traces.find("chg-1")).origin == "chat"
    sql(postgres_dsn, "DELETE FROM host_sim.trace_index")  # the derived index lost: fsck says so and repairs it
    parts = dict(pair.split("=", 1) for pair in postgres_dsn.split())
    url = f"postgresql://{parts['user']}@/{parts['dbname']}?host={parts['host']}&port={parts['port']}"
    fsck = [sys.executable, "-m", "host_sim", "fsck", "--store", url]
    checked = subprocess.run(fsck, capture_output=True, text=True, cwd=tmp_path, timeout=120)
    assert checked.returncode == 1 and "the trace index lacks output 'chg-1'" in checked.stdout, checked.stdout + checked.stderr
    repaired = subprocess.run([*fsck, "--repair"], capture_output=True, text=True, cwd=tmp_path, timeout=120)
    assert repaired.returncode == 0, repaired.stdout + repaired.stderr
    async with Host(store=PostgresStore(postgres_dsn)) as h:
        assert (await h.traces.find("chg-1")).links[0].session_id == chat.id

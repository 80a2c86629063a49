"""The lineage served over MCP (API.md section 16, Expose): `lineage_mcp_server(host)` and
``host-sim mcp``, driven by the official ``mcp`` client (in process, over stdio in a real
subprocess, and once over streamable HTTP)."""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
from pathlib import Path

import anyio
import attrs
import pytest
from mcp import Client, StdioServerParameters
from mcp.types import CallToolResult, TextContent

from host_sim import Host, ModelRequest, ScriptedModel, SqliteStore, TaskRef, ToolCall, lineage_mcp_server
from host_sim.testing import lineage_lookup as lookup
from modular_sdk import AiContributions, HostClosedError, ModMetadata, ToolContext, define_mod, tool

pytestmark = pytest.mark.anyio

SECRET = "MARKER-forgotten-7f3e"
TOOLS = ["lineage_backward", "lineage_forward", "lineage_lookup", "memory_search", "session_transcript"]


@attrs.frozen
class Proposal:
    title: str


async def create_proposal(value: Proposal, ctx: ToolContext) -> str:
    await ctx.report_output(kind="proposal", output_id=value.title)
    return f"proposal {value.title} created"


MOD = define_mod(
    id="proposals",
    metadata=ModMetadata(display_name="Proposals", description="Proposes changes"),
    ai=AiContributions(tools=[tool(name="create_proposal", description="Propose a change", input_type=Proposal, run=create_proposal)]),
)


def respond(request: ModelRequest) -> str | ToolCall:
    if request.text.startswith("propose ") and not request.tool_results:
        return ToolCall(name="create_proposal", input={"title": request.text.removeprefix("propose ")})
    return f"done: {request.text}"


@attrs.frozen
class Written:
    path: Path
    session_id: str
    fork_id: str
    proposed_turn_id: str
    later_turn_id: str
    erased_turn_id: str
    record_id: str


async def write_store(path: Path) -> Written:
    """A task trace with a proposal landed as a commit, a fork, and a turn forgotten."""
    async with Host(mods=[MOD], model=ScriptedModel(respond), store=SqliteStore(path)) as host:
        trace = await host.traces.for_task(TaskRef(source="github", id="42"), snapshot={"title": "Parser errors"})
        chat = await host.sessions.create(trace=trace.id)
        proposed = await host.submit(chat, "propose chg-1")
        later = await host.submit(chat, "write the tests")
        assert proposed.turn is not None
        record = await host.memory.record(chat, "the parser proposal chg-1", kind="fact", cites=(proposed.turn.id,))
        fork = await chat.fork()
        await host.traces.record_commit("chg-1", "3f2a9c1")
        secret = await host.submit(fork, f"remember {SECRET}")
        assert proposed.turn is not None and later.turn is not None and secret.turn is not None
        await host.lineage.forget(secret.turn.id, dry_run=False)
        return Written(
            path=path,
            session_id=chat.id,
            fork_id=fork.id,
            proposed_turn_id=proposed.turn.id,
            later_turn_id=later.turn.id,
            erased_turn_id=secret.turn.id,
            record_id=record.id,
        )


@pytest.fixture
async def written(tmp_path: Path) -> Written:
    return await write_store(tmp_path / "store.sqlite")


def text_of(result: CallToolResult) -> str:
    assert len(result.content) == 1 and isinstance(result.content[0], TextContent)
    return result.content[0].text


async def test_the_five_tools_are_listed_and_annotated_read_only(written: Written) -> None:
    async with Host(mods=[MOD], store=SqliteStore(written.path)) as host:
        async with Client(lineage_mcp_server(host)) as client:
            tools = (await client.list_tools()).tools
    assert sorted(t.name for t in tools) == TOOLS
    for listed in tools:
        assert listed.annotations is not None and listed.annotations.read_only_hint is True
        assert listed.annotations.destructive_hint is False
        assert listed.description and "Read-only" in listed.description
        assert list(listed.input_schema["properties"]) == (["id"] if listed.name == "lineage_lookup" else [listed.input_schema["required"][0]])


async def test_lineage_lookup_answers_the_traces_json_of_the_builtin_tool(written: Written) -> None:
    async with Host(mods=[MOD], store=SqliteStore(written.path)) as host:
        expected = await lookup(host._store, "3f2a9c1")
        async with Client(lineage_mcp_server(host)) as client:
            result = await client.call_tool("lineage_lookup", {"id": "3f2a9c1"})
            unknown = await client.call_tool("lineage_lookup", {"id": "nothing-here"})
    data = json.loads(text_of(result))
    assert not result.is_error and data == json.loads(json.dumps(expected))
    assert data["origin"] == "task" and data["task"]["ref"] == "github:42"
    assert [o["commit"] for s in data["sessions"] for o in s["outputs"]] == ["3f2a9c1"]
    missing = json.loads(text_of(unknown))
    assert missing["of"] == "nothing-here" and "no trace is found by 'nothing-here'" in missing["error"]


async def test_lineage_lookup_of_a_session_with_no_trace_says_the_session_has_none(written: Written) -> None:
    async with Host(mods=[MOD], store=SqliteStore(written.path)) as host:
        plain = await host.sessions.create()  # no task, no output: the store knows it, no trace links it
        async with Client(lineage_mcp_server(host)) as client:
            result = await client.call_tool("lineage_lookup", {"id": plain.id})
    answer = json.loads(text_of(result))
    assert answer["error"].startswith(f"session {plain.id!r} has no trace: no task started it")
    assert "no commit, output, session" not in answer["error"]  # it is a session the host knows


async def test_forward_and_backward_answer_the_hosts_provenance_as_json(written: Written) -> None:
    async with Host(mods=[MOD], store=SqliteStore(written.path)) as host:
        forward = await host.lineage.forward(written.proposed_turn_id)
        backward = await host.lineage.backward(written.later_turn_id)
        async with Client(lineage_mcp_server(host)) as client:
            fwd = json.loads(text_of(await client.call_tool("lineage_forward", {"turn_id": written.proposed_turn_id})))
            back = json.loads(text_of(await client.call_tool("lineage_backward", {"turn_id": written.later_turn_id})))
    assert fwd["of"]["turn_id"] == written.proposed_turn_id
    assert fwd["sessions"] == list(forward.sessions) == [written.session_id, written.fork_id]
    assert [t["turn_id"] for t in fwd["turns"]] == [t.turn_id for t in forward.turns]
    assert written.later_turn_id in [t["turn_id"] for t in fwd["turns"]]
    assert [t["turn_id"] for t in back["read_from"]] == [t.turn_id for t in backward.read_from] == [written.proposed_turn_id]
    assert back["sessions"] == list(backward.sessions)
    assert [r["record_id"] for r in fwd["records"]] == [r.record_id for r in forward.records] == [written.record_id]


async def test_memory_search_answers_the_records_the_stores_full_text_index_finds(written: Written) -> None:
    async with Host(mods=[MOD], store=SqliteStore(written.path)) as host:
        async with Client(lineage_mcp_server(host)) as client:
            found = json.loads(text_of(await client.call_tool("memory_search", {"query": "parser proposal"})))
            none = json.loads(text_of(await client.call_tool("memory_search", {"query": "nothing here"})))
    assert [r["id"] for r in found] == [written.record_id] and found[0]["cites"] == [written.proposed_turn_id]
    assert none == []


async def test_session_transcript_shows_an_erased_turn_as_erased_with_its_id(written: Written) -> None:
    async with Host(mods=[MOD], store=SqliteStore(written.path)) as host:
        expected = await host.transcript(written.fork_id)
        async with Client(lineage_mcp_server(host)) as client:
            result = await client.call_tool("session_transcript", {"session_id": written.fork_id})
    text = text_of(result)
    assert text == expected
    assert "propose chg-1" in text and "(erased)" in text and SECRET not in text
    assert f"    id {written.erased_turn_id}" in text  # the ids lineage_forward/backward take, erased ones too


async def test_an_unknown_id_fails_only_that_call_naming_the_id(written: Written) -> None:
    async with Host(mods=[MOD], store=SqliteStore(written.path)) as host:
        async with Client(lineage_mcp_server(host)) as client:
            result = await client.call_tool("lineage_forward", {"turn_id": "turn_nope"})
            session = await client.call_tool("session_transcript", {"session_id": "ses_nope"})
            still = await client.call_tool("lineage_backward", {"turn_id": written.later_turn_id})
    assert result.is_error and "'turn_nope'" in text_of(result)
    assert session.is_error and "'ses_nope'" in text_of(session)
    assert not still.is_error


async def test_lineage_mcp_server_refuses_a_host_that_is_not_open() -> None:
    host = Host()
    with pytest.raises(HostClosedError, match="not entered yet"):
        lineage_mcp_server(host)


def snapshot(path: Path) -> tuple[bytes, int, list[str]]:
    return path.read_bytes(), path.stat().st_mtime_ns, sorted(p.name for p in path.parent.iterdir())


async def test_host_sim_mcp_over_stdio_answers_and_writes_nothing(written: Written) -> None:
    before = snapshot(written.path)
    params = StdioServerParameters(
        command=sys.executable, args=["-m", "host_sim", "mcp", "--store", str(written.path)], env=dict(os.environ)
    )
    async with Client(params) as client:
        tools = (await client.list_tools()).tools
        trace = json.loads(text_of(await client.call_tool("lineage_lookup", {"id": "chg-1"})))
        transcript = text_of(await client.call_tool("session_transcript", {"session_id": written.fork_id}))
        forward = json.loads(text_of(await client.call_tool("lineage_forward", {"turn_id": written.proposed_turn_id})))
        origin = json.loads(text_of(await client.call_tool("lineage_backward", {"turn_id": written.record_id})))
    assert sorted(t.name for t in tools) == TOOLS
    assert [t["turn_id"] for t in origin["read_from"]] == [written.proposed_turn_id]  # a record, read from the store alone
    assert all(t.annotations is not None and t.annotations.read_only_hint for t in tools)
    assert trace["task"]["ref"] == "github:42"
    assert "(erased)" in transcript and SECRET not in transcript
    assert forward["sessions"] == [written.session_id, written.fork_id]
    after = snapshot(written.path)
    assert after == before  # same bytes, same mtime, no -wal or -shm beside it
    assert not any(name.endswith(("-wal", "-shm")) for name in after[2])


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


async def test_host_sim_mcp_over_streamable_http_answers_and_ends_with_130_on_ctrl_c(written: Written) -> None:
    port = free_port()
    before = snapshot(written.path)
    process = await anyio.open_process(
        [sys.executable, "-m", "host_sim", "mcp", "--store", str(written.path), "--http", f"127.0.0.1:{port}"],
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
    )
    stderr = b""
    try:
        with anyio.fail_after(30):
            while True:  # until the server listens
                try:
                    stream = await anyio.connect_tcp("127.0.0.1", port)
                except OSError:
                    await anyio.sleep(0.1)
                    continue
                await stream.aclose()
                break
        async with Client(f"http://127.0.0.1:{port}/mcp") as client:
            tools = (await client.list_tools()).tools
            back = json.loads(text_of(await client.call_tool("lineage_backward", {"turn_id": written.later_turn_id})))
        assert sorted(t.name for t in tools) == TOOLS
        assert [t["turn_id"] for t in back["read_from"]] == [written.proposed_turn_id]
        process.send_signal(signal.SIGINT)  # Ctrl-C
        assert process.stderr is not None
        with anyio.fail_after(30):
            async for chunk in process.stderr:
                stderr += chunk
            assert await process.wait() == 130
    finally:
        if process.returncode is None:
            process.kill()
        with anyio.CancelScope(shield=True):
            await process.wait()
            await process.aclose()
    text = stderr.decode()
    assert text.rstrip().endswith("host-sim mcp: interrupted") and "Traceback" not in text
    assert snapshot(written.path) == before


def test_host_sim_mcp_refuses_a_missing_store_and_creates_nothing(tmp_path: Path) -> None:
    missing = tmp_path / "nowhere.sqlite"
    result = subprocess.run(
        [sys.executable, "-m", "host_sim", "mcp", "--store", str(missing)], capture_output=True, text=True, timeout=60
    )
    assert result.returncode == 1
    assert f"host-sim mcp: error: no store at {str(missing)!r}" in result.stderr and "Traceback" not in result.stderr
    assert list(tmp_path.iterdir()) == []


def test_importing_host_sim_and_modular_sdk_imports_nothing_of_mcp() -> None:
    code = (
        "import sys, host_sim, modular_sdk, host_sim.lineage_mcp._server, host_sim.cli._mcp\n"
        "print(sorted(m for m in sys.modules if m.split('.')[0] in ('mcp', 'mcp_types')))"
    )
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60, check=True)
    assert result.stdout.strip() == "[]"


def test_lineage_mcp_server_refuses_what_is_not_a_host() -> None:
    from modular_sdk import InvalidArgumentError

    with pytest.raises(InvalidArgumentError, match="takes an open host_sim.Host, got 'host'") as raised:
        lineage_mcp_server("host")  # type: ignore[arg-type]
    assert raised.value.argument == "host" and raised.value.value == "host"


def test_without_the_mcp_package_serving_and_host_sim_mcp_name_the_extra(written_path: Path) -> None:
    code = (
        "import sys\n"
        "sys.modules['mcp'] = None  # as if the extra were not installed\n"
        "import anyio\n"
        "from host_sim import Host, lineage_mcp_server\n"
        "from host_sim._cli import main\n"
        "async def serve() -> None:\n"
        "    async with Host() as host:\n"
        "        try:\n"
        "            lineage_mcp_server(host)\n"
        "        except ImportError as exc:\n"
        "            print(type(exc).__mro__[1].__name__, exc)\n"
        "anyio.run(serve)\n"
        f"sys.exit(main(['mcp', '--store', {str(written_path)!r}]))\n"
    )
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert result.returncode == 1, result.stderr
    assert result.stdout.startswith("ModularError the lineage MCP server needs the 'mcp' package")
    assert "pip install 'modular-chat-sdk[mcp]'" in result.stdout
    assert "host-sim mcp: error: host-sim mcp needs the 'mcp' package" in result.stderr and "Traceback" not in result.stderr


@pytest.fixture
def written_path(tmp_path: Path) -> Path:
    path = tmp_path / "store.sqlite"
    anyio.run(write_store, path)
    return path


async def test_host_sim_mcp_serves_a_postgres_store_by_its_url(postgres_dsn: str) -> None:
    from host_sim import PostgresStore

    async with Host(store=PostgresStore(postgres_dsn)) as host:
        trace = await host.traces.for_task(TaskRef(source="github", id="7"), snapshot={"title": "Parser"})
        chat = await host.sessions.create(trace=trace.id)
        first = await host.submit(chat, "Plan the parser rewrite")
        await host.submit(chat, "Now write the tests")
        expected = await host.transcript(chat)
    assert first.turn is not None
    parts = dict(pair.split("=", 1) for pair in postgres_dsn.split())
    url = f"postgresql://{parts['user']}@/{parts['dbname']}?host={parts['host']}&port={parts['port']}"
    params = StdioServerParameters(command=sys.executable, args=["-m", "host_sim", "mcp", "--store", url], env=dict(os.environ))
    async with Client(params) as client:
        transcript = text_of(await client.call_tool("session_transcript", {"session_id": chat.id}))
        forward = json.loads(text_of(await client.call_tool("lineage_forward", {"turn_id": first.turn.id})))
        lookup = json.loads(text_of(await client.call_tool("lineage_lookup", {"id": chat.id})))
    assert transcript == expected and "Plan the parser rewrite" in transcript
    assert [t["ordinal"] for t in forward["turns"]] == [1]
    assert lookup["of"] == chat.id and lookup["task"]["ref"] == "github:7"
    assert [s["session_id"] for s in lookup["sessions"]] == [chat.id]


async def test_lineage_backward_walks_a_memory_record_back_to_the_turns_it_was_read_from(written: Written) -> None:
    async with Host(mods=[MOD], store=SqliteStore(written.path)) as host:
        async with Client(lineage_mcp_server(host)) as client:
            back = json.loads(text_of(await client.call_tool("lineage_backward", {"turn_id": written.record_id})))
            missing = await client.call_tool("lineage_backward", {"turn_id": "mem_0000000000000000"})
    assert back["of"]["record_id"] == written.record_id
    assert [t["turn_id"] for t in back["read_from"]] == [written.proposed_turn_id]
    assert back["passages"] == [] and back["records"] == []
    assert missing.is_error and "no memory record by this id" in text_of(missing)

"""Mods use MCP servers' tools (API.md section 16, Consume): a real MCP stdio server,
written by the test (one read-only tool, one writing tool), used by a mod through a Host."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import textwrap
from pathlib import Path

import anyio
import attrs
import pytest

from host_sim import (
    Host,
    HostEvent,
    ModelRequest,
    ScriptedModel,
    SqliteStore,
    ToolCall,
    ToolCalled,
    ToolFinished,
    build_manifest,
)
from host_sim.pytest_plugin import ModHost
from host_sim.testing import JsonValue
from modular_sdk import ActionStateError, AiContributions, Mod, ModMetadata, ToolContext, define_mod, mcp_server, tool

pytestmark = pytest.mark.anyio

SERVER = textwrap.dedent(
    '''
    """A small MCP server over stdio: notes in a folder (one read-only tool, one writing tool)."""
    import os
    import sys
    from pathlib import Path

    from mcp.server.mcpserver import MCPServer
    from mcp.server.mcpserver.exceptions import ToolError
    from mcp.types import ToolAnnotations

    folder = Path(sys.argv[1])
    (folder / f"server-{os.getpid()}.pid").write_text(str(os.getpid()))
    server = MCPServer(name="notes")


    @server.tool(description="Read a note", annotations=ToolAnnotations(read_only_hint=True))
    def read_note(name: str) -> str:
        path = folder / f"{name}.txt"
        if not path.exists():
            raise ToolError(f"no note {name!r}")
        return path.read_text()


    @server.tool(description="Write a note", annotations=ToolAnnotations(read_only_hint=False, destructive_hint=True))
    def write_note(name: str, text: str) -> str:
        (folder / f"{name}.txt").write_text(text)
        return f"wrote {name}"


    @server.tool(description="A long answer", annotations=ToolAnnotations(read_only_hint=True))
    def big() -> str:
        return "x" * 1_500_000


    @server.tool(description="Stop the server", annotations=ToolAnnotations(read_only_hint=True))
    def crash() -> str:
        os._exit(7)


    if len(sys.argv) > 2:  # notes_server.py FOLDER PORT: streamable HTTP at /mcp
        server.run("streamable-http", host="127.0.0.1", port=int(sys.argv[2]))
    else:
        server.run()
    '''
)


@attrs.frozen
class Word:
    word: str


async def shout(value: Word, ctx: ToolContext) -> str:
    return value.word.upper()


@pytest.fixture
def notes(tmp_path: Path) -> Path:
    folder = tmp_path / "notes"
    folder.mkdir()
    (folder / "a.txt").write_text("first note")
    (tmp_path / "notes_server.py").write_text(SERVER)
    return folder


def notes_mod(notes: Path, **server: object) -> Mod:
    declared = server or {"command": sys.executable, "args": [str(notes.parent / "notes_server.py"), str(notes)]}
    declared.setdefault("read_only_tools", ["read_note", "big", "crash"])  # the mod's word, not the server's
    return define_mod(
        id="notes-mod",
        metadata=ModMetadata(display_name="Notes", description="Notes through an MCP server"),
        ai=AiContributions(
            tools=[tool(name="shout", description="Shout a word", input_type=Word, run=shout)],
            mcp_servers=[mcp_server(id="notes", description="Notes in a folder", **declared)],  # type: ignore[arg-type]
        ),
    )


def calls(name: str, arguments: dict[str, JsonValue]) -> ScriptedModel:
    """A model that calls one tool for a prompt 'call', then answers with what it got."""

    def respond(request: ModelRequest) -> str | ToolCall:
        if request.text == "call" and not request.tool_results:
            return ToolCall(name=name, input=arguments)
        if request.tool_results:
            result = request.tool_results[-1]
            return f"output={result.output!r} error={result.error!r}"
        return f"tools: {', '.join(sorted(t.name for t in request.tools))}"

    return ScriptedModel(respond)


def pids(notes: Path) -> list[int]:
    return [int(p.read_text()) for p in notes.glob("server-*.pid")]


def gone(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return True
    return not Path(f"/proc/{pid}").exists() or "zombie" in Path(f"/proc/{pid}/status").read_text().lower()


async def test_the_servers_tools_are_offered_as_server_dot_tool_beside_the_mods_own(notes: Path) -> None:
    async with Host(mods=[notes_mod(notes)], model=calls("unused", {})) as host:
        assert pids(notes) == []  # nothing starts when the host opens
        chat = await host.sessions.create()
        answer = await host.submit(chat, "which tools?")
    assert answer.text == "tools: notes.big, notes.crash, notes.read_note, notes.write_note, shout"


async def test_a_read_only_tool_runs_at_once_as_a_tool_call_with_its_events(notes: Path) -> None:
    events: list[HostEvent] = []
    async with Host(mods=[notes_mod(notes)], model=calls("notes.read_note", {"name": "a"})) as host:
        chat = await host.sessions.create()
        async with host.subscribe() as stream:
            answer = await host.submit(chat, "call")
            async for event in stream:
                events.append(event)
                if event.kind == "turn_finished":
                    break
        assert await host.pending_actions(chat) == []
    assert answer.error is None and answer.text == "output='first note' error=None"
    called = [e for e in events if isinstance(e, ToolCalled)]
    finished = [e for e in events if isinstance(e, ToolFinished)]
    assert [(e.tool_name, e.input) for e in called] == [("notes.read_note", {"name": "a"})]
    assert [(e.call_id, e.output, e.error) for e in finished] == [(called[0].call_id, "first note", None)]


async def test_a_writing_tool_waits_for_the_user_and_its_result_arrives_as_a_notification(notes: Path, tmp_path: Path) -> None:
    model = calls("notes.write_note", {"name": "b", "text": "second note"})
    async with Host(mods=[notes_mod(notes)], model=model, store=SqliteStore(tmp_path / "store.sqlite")) as host:
        chat = await host.sessions.create()
        answer = await host.submit(chat, "call")
        assert not (notes / "b.txt").exists()  # proposed, not run
        assert answer.error is None and "awaiting confirmation" in answer.text
        [pending] = answer.actions
        assert pending.type == "mcp.call" and pending.mod_id == "notes-mod" and pending.session_id == chat.id
        assert json.loads(json.dumps(pending.payload, default=dict)) == {
            "server": "notes",
            "tool": "write_note",
            "input": {"name": "b", "text": "second note"},
        }
        assert [a.id for a in await host.pending_actions(chat)] == [pending.id]
        async with host.subscribe() as stream:
            done = await host.confirm(pending.id)
            seen: list[HostEvent] = []
            async for event in stream:
                seen.append(event)
                if event.kind == "turn_finished":
                    break
        assert done.error is None and done.text == "wrote b"
        assert (notes / "b.txt").read_text() == "second note"
        assert await host.pending_actions(chat) == []
        last = (await chat.turns())[-1]
        assert last.message.type == "notification"
        assert last.message.title.startswith("notes.write_note ran") and last.message.body == "wrote b"
        assert [(e.kind, getattr(e, "tool_name", None)) for e in seen if e.kind.startswith("tool_")] == [
            ("tool_called", "notes.write_note"),
            ("tool_finished", None),
        ]


async def test_a_failing_tool_fails_only_its_call_with_the_servers_message(notes: Path) -> None:
    async with Host(mods=[notes_mod(notes)], model=calls("notes.read_note", {"name": "missing"})) as host:
        chat = await host.sessions.create()
        answer = await host.submit(chat, "call")
        again = await host.submit(chat, "which tools?")
    assert answer.error is None and "error=" in answer.text and "no note 'missing'" in answer.text
    assert again.text.startswith("tools: notes.big, notes.crash, notes.read_note")


async def test_a_server_that_fails_to_start_fails_only_the_call_with_its_message(notes: Path) -> None:
    said = "import sys; print('starting', file=sys.stderr); print('NOTES_TOKEN is not set', file=sys.stderr); sys.exit(3)"
    broken = notes_mod(notes, command=sys.executable, args=["-c", said])
    async with Host(mods=[broken], model=calls("notes.read_note", {"name": "a"}), handler_timeout=20) as host:
        chat = await host.sessions.create()
        answer = await host.submit(chat, "call")
        listed = await host.submit(chat, "which tools?")
    assert answer.error is None
    assert "MCP server 'notes' of mod 'notes-mod' failed" in answer.text
    # why: its exit status and its last words, not only 'Connection closed'
    assert "(exit status 3; its standard error ended: starting | NOTES_TOKEN is not set)" in answer.text
    assert listed.text == "tools: shout"  # the mod's own tool still works


async def test_no_server_process_is_left_after_the_host_closes(notes: Path) -> None:
    async with Host(mods=[notes_mod(notes)], model=calls("notes.read_note", {"name": "a"})) as host:
        chat = await host.sessions.create()
        await host.submit(chat, "call")
        [pid] = pids(notes)
        assert not gone(pid)
    assert gone(pid)


async def test_nothing_starts_at_build_and_the_manifest_lists_servers_not_tools(notes: Path, tmp_path: Path) -> None:
    spec = tmp_path / "notes_mod.py"
    spec.write_text(
        textwrap.dedent(
            f"""
            from modular_sdk import AiContributions, ModMetadata, define_mod, mcp_server

            mod = define_mod(
                id="notes-mod",
                metadata=ModMetadata(display_name="Notes", description="Notes through an MCP server"),
                ai=AiContributions(
                    mcp_servers=[
                        mcp_server(id="notes", command={sys.executable!r}, args=[{str(tmp_path / 'notes_server.py')!r}, {str(notes)!r}], description="Notes in a folder"),
                        mcp_server(id="search", url="http://127.0.0.1:9/mcp", description="Search"),
                    ]
                ),
            )
            """
        )
    )
    manifest = await anyio_build(str(spec))
    data = json.loads(manifest)
    assert data["mcp_servers"] == [
        {"id": "notes", "description": "Notes in a folder", "transport": "stdio", "read_only_tools": [], "trust_annotations": False},
        {"id": "search", "description": "Search", "transport": "http", "read_only_tools": [], "trust_annotations": False},
    ]
    assert "notes_server.py" not in manifest and "read_note" not in manifest
    assert pids(notes) == []


async def anyio_build(spec: str) -> str:
    import anyio.to_thread

    return (await anyio.to_thread.run_sync(build_manifest, spec)).to_json()


async def test_a_proposed_call_survives_a_reopen_and_is_confirmed_by_the_next_host(notes: Path, tmp_path: Path) -> None:
    store = tmp_path / "store.sqlite"
    model = calls("notes.write_note", {"name": "c", "text": "third"})
    async with Host(mods=[notes_mod(notes)], model=model, store=SqliteStore(store)) as host:
        chat = await host.sessions.create()
        [pending] = (await host.submit(chat, "call")).actions
    assert not (notes / "c.txt").exists()
    async with Host(mods=[notes_mod(notes)], model=model, store=SqliteStore(store)) as host:
        assert [a.id for a in await host.pending_actions(chat.id)] == [pending.id]
        done = await host.confirm(pending.id)  # connects the server for this call
        assert done.error is None and (notes / "c.txt").read_text() == "third"
        with pytest.raises(ActionStateError, match="already confirmed") as raised:
            await host.confirm(pending.id)
        assert raised.value.action_id == pending.id and raised.value.state == "confirmed"


async def test_a_dismissed_call_never_runs(notes: Path) -> None:
    async with Host(mods=[notes_mod(notes)], model=calls("notes.write_note", {"name": "d", "text": "x"})) as host:
        chat = await host.sessions.create()
        [pending] = (await host.submit(chat, "call")).actions
        await host.dismiss(pending.id)
        assert await host.pending_actions(chat) == []
        with pytest.raises(ActionStateError, match="already dismissed"):
            await host.confirm(pending.id)
    assert not (notes / "d.txt").exists()


async def test_a_server_that_dies_fails_its_call_and_is_started_again_at_the_next_need(notes: Path) -> None:
    def respond(request: ModelRequest) -> str | ToolCall:
        if request.tool_results:
            result = request.tool_results[-1]
            return f"output={result.output!r} error={result.error!r}"
        if request.text == "crash":
            return ToolCall(name="notes.crash", input={})
        return ToolCall(name="notes.read_note", input={"name": "a"})

    async with Host(mods=[notes_mod(notes)], model=ScriptedModel(respond)) as host:
        chat = await host.sessions.create()
        crashed = await host.submit(chat, "crash")
        [first] = pids(notes)
        read = await host.submit(chat, "read")
        assert crashed.error is None and "MCP tool notes.crash failed" in crashed.text
        assert "(exit status 7" in crashed.text  # how the server ended
        assert read.text == "output='first note' error=None"
        assert len(pids(notes)) == 2 and gone(first)


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


async def test_a_streamable_http_server_is_used_by_its_url(notes: Path) -> None:
    port = free_port()
    process = await anyio.open_process(
        [sys.executable, str(notes.parent / "notes_server.py"), str(notes), str(port)],
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        with anyio.fail_after(30):
            while True:
                try:
                    stream = await anyio.connect_tcp("127.0.0.1", port)
                except OSError:
                    await anyio.sleep(0.1)
                    continue
                await stream.aclose()
                break
        mod = notes_mod(notes, url=f"http://127.0.0.1:{port}/mcp")
        async with Host(mods=[mod], model=calls("notes.read_note", {"name": "a"})) as host:
            chat = await host.sessions.create()
            answer = await host.submit(chat, "call")
        assert answer.text == "output='first note' error=None"
    finally:
        process.terminate()
        with anyio.CancelScope(shield=True):
            await process.wait()
            await process.aclose()


async def test_the_mod_host_fixture_runs_a_mods_mcp_servers(notes: Path, mod_host: ModHost) -> None:
    host = await mod_host(notes_mod(notes), model=calls("notes.read_note", {"name": "a"}))
    chat = await host.sessions.create()
    assert (await host.submit(chat, "call")).text == "output='first note' error=None"
    [pid] = pids(notes)
    await mod_host._close()
    assert gone(pid)


async def test_a_server_that_never_answers_fails_the_call_after_the_handler_timeout(notes: Path) -> None:
    silent = notes_mod(notes, command=sys.executable, args=["-c", "import time; time.sleep(120)"])
    async with Host(mods=[silent], model=calls("notes.read_note", {"name": "a"}), handler_timeout=1) as host:
        chat = await host.sessions.create()
        answer = await host.submit(chat, "call")
    assert answer.error is None
    assert "MCP server 'notes' of mod 'notes-mod' did not answer within 1 s" in answer.text


def test_without_the_mcp_package_a_call_fails_naming_the_extra(notes: Path) -> None:
    code = textwrap.dedent(
        f"""
        import sys
        sys.modules['mcp'] = None  # as if the extra were not installed
        import anyio
        from host_sim import Host, ScriptedModel, ToolCall
        from modular_sdk import AiContributions, ModMetadata, define_mod, mcp_server

        mod = define_mod(
            id="notes-mod",
            metadata=ModMetadata(display_name="Notes", description="Notes"),
            ai=AiContributions(mcp_servers=[mcp_server(id="notes", command={sys.executable!r}, description="Notes")]),
        )

        def respond(request):
            if request.tool_results:
                return str(request.tool_results[-1].error)
            return ToolCall(name="notes.read_note", input={{"name": "a"}})

        async def main():
            async with Host(mods=[mod], model=ScriptedModel(respond)) as host:
                chat = await host.sessions.create()
                print((await host.submit(chat, "call")).text)

        anyio.run(main)
        """
    )
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == (
        "the MCP server 'notes' of mod 'notes-mod' needs the 'mcp' package, which is not installed; "
        "install the extra: pip install 'modular-chat-sdk[mcp]'"
    )


TRUNCATED = "\n[truncated: the tool answered 1,500,000 characters; the first 1,000,000 are shown]"


async def test_a_huge_answer_reaches_the_model_cut_at_a_million_characters(notes: Path) -> None:
    def respond(request: ModelRequest) -> str | ToolCall:
        if request.tool_results:
            output = request.tool_results[-1].output or ""
            return f"{len(output)} {output[-90:]}"
        return ToolCall(name="notes.big", input={})

    async with Host(mods=[notes_mod(notes)], model=ScriptedModel(respond)) as host:
        chat = await host.sessions.create()
        answer = await host.submit(chat, "big")
    assert answer.text.startswith(f"{1_000_000 + len(TRUNCATED)} ")
    assert answer.text.endswith("x" + TRUNCATED)


async def test_two_mods_declaring_one_server_id_are_refused_or_the_second_skipped(notes: Path) -> None:
    from modular_sdk import ModDefinitionError

    other = define_mod(
        id="other-notes",
        metadata=ModMetadata(display_name="Other", description="Also declares 'notes'"),
        ai=AiContributions(mcp_servers=[mcp_server(id="notes", url="http://127.0.0.1:9/mcp", description="Other notes")]),
    )
    with pytest.raises(ModDefinitionError, match="MCP server 'notes' is declared by both mod 'notes-mod' and mod 'other-notes'"):
        async with Host(mods=[notes_mod(notes), other]):
            pass
    async with Host(mods=[notes_mod(notes), other], on_bad_mod="skip", model=calls("notes.read_note", {"name": "a"})) as host:
        assert [m.id for m in host.mods] == ["notes-mod"] and len(host.mod_errors) == 1
        chat = await host.sessions.create()
        assert (await host.submit(chat, "call")).text == "output='first note' error=None"


async def test_a_servers_tool_call_is_an_execute_tool_span_in_its_turn(notes: Path) -> None:
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import SimpleSpanProcessor
    from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    async with Host(mods=[notes_mod(notes)], model=calls("notes.read_note", {"name": "a"}), tracer_provider=provider) as host:
        chat = await host.sessions.create()
        assert (await host.submit(chat, "call")).error is None
    spans = {s.name: s for s in exporter.get_finished_spans()}
    run, turn = spans["execute_tool notes.read_note"], spans["invoke_agent session"]
    assert run.parent is not None and turn.context is not None and run.parent.span_id == turn.context.span_id
    assert dict(run.attributes or {})["gen_ai.tool.name"] == "notes.read_note"
    assert dict(run.attributes or {})["gen_ai.tool.type"] == "function"

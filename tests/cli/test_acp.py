"""``host-sim acp`` as an editor meets it: the published ACP client drives the agent process.

Each test starts ``python -m host_sim acp`` as a subprocess with the
``agent-client-protocol`` package's own client connection (`spawn_agent_process`), the
way Zed's Python counterpart would, and a loopback fake of an OpenAI-compatible server
answers the model calls, streamed. The SDK is built on asyncio (its streams, tasks and
futures), so these tests run on asyncio only; the agent process runs on asyncio too.
"""

from __future__ import annotations

import json
import os
import sys
import threading
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import anyio
import pytest
from acp import PROTOCOL_VERSION, RequestError, text_block
from acp.client.connection import ClientSideConnection
from acp.interfaces import Agent
from acp.schema import (
    AgentMessageChunk,
    AllowedOutcome,
    AvailableCommandsUpdate,
    CreateTerminalResponse,
    DeniedOutcome,
    ImageContentBlock,
    KillTerminalResponse,
    PermissionOption,
    ReadTextFileResponse,
    ReleaseTerminalResponse,
    RequestPermissionResponse,
    TerminalOutputResponse,
    ToolCallProgress,
    ToolCallStart,
    ToolCallUpdate,
    UserMessageChunk,
    WaitForTerminalExitResponse,
    WriteTextFileResponse,
)
from acp.stdio import spawn_agent_process

from host_sim import Host, SqliteStore
from models._fake_openai import Answer, FakeOpenAI, streamed_reply, streamed_tool_call

pytestmark = [pytest.mark.anyio, pytest.mark.parametrize("anyio_backend", ["asyncio"])]

ROOT = Path(__file__).resolve().parents[2]
MOD = str(Path(__file__).resolve().parent / "fixtures" / "editor_mod.py")
TURN = "host_sim/turnId"


class Editor:
    """The editor's side of the connection: keeps every update, answers permission requests
    with the choices a test scripts (an option id, or ``"cancelled"``)."""

    def __init__(self) -> None:
        self.updates: list[tuple[str, Any]] = []
        self.asked: list[tuple[str, ToolCallUpdate, list[PermissionOption]]] = []
        self.choices: list[str] = []
        self.first_chunk = anyio.Event()

    def of(self, session_id: str, kind: type[Any]) -> list[Any]:
        return [u for s, u in self.updates if s == session_id and isinstance(u, kind)]

    def said(self, session_id: str) -> list[str]:
        return [u.content.text for u in self.of(session_id, AgentMessageChunk)]

    def told(self, session_id: str) -> str:
        """Everything the agent said in a session, as the editor shows it: chunks joined (how a
        reply is cut into chunks is the stream's, and the key filter's, business)."""
        return "".join(self.said(session_id))

    async def request_permission(
        self, session_id: str, tool_call: ToolCallUpdate, options: list[PermissionOption], **kwargs: Any
    ) -> RequestPermissionResponse:
        self.asked.append((session_id, tool_call, options))
        choice = self.choices.pop(0)
        if choice == "cancelled":
            return RequestPermissionResponse(outcome=DeniedOutcome(outcome="cancelled"))
        return RequestPermissionResponse(outcome=AllowedOutcome(option_id=choice, outcome="selected"))

    async def session_update(self, session_id: str, update: Any, **kwargs: Any) -> None:
        self.updates.append((session_id, update))
        if isinstance(update, AgentMessageChunk):
            self.first_chunk.set()

    # What an editor offers besides; these tests' agent never asks for them.
    async def write_text_file(self, session_id: str, path: str, content: str, **kwargs: Any) -> WriteTextFileResponse | None:
        raise RequestError.method_not_found("fs/write_text_file")

    async def read_text_file(
        self, session_id: str, path: str, line: int | None = None, limit: int | None = None, **kwargs: Any
    ) -> ReadTextFileResponse:
        raise RequestError.method_not_found("fs/read_text_file")

    async def create_terminal(
        self,
        session_id: str,
        command: str,
        args: list[str] | None = None,
        env: list[Any] | None = None,
        cwd: str | None = None,
        output_byte_limit: int | None = None,
        **kwargs: Any,
    ) -> CreateTerminalResponse:
        raise RequestError.method_not_found("terminal/create")

    async def terminal_output(self, session_id: str, terminal_id: str, **kwargs: Any) -> TerminalOutputResponse:
        raise RequestError.method_not_found("terminal/output")

    async def release_terminal(self, session_id: str, terminal_id: str, **kwargs: Any) -> ReleaseTerminalResponse | None:
        raise RequestError.method_not_found("terminal/release")

    async def wait_for_terminal_exit(self, session_id: str, terminal_id: str, **kwargs: Any) -> WaitForTerminalExitResponse:
        raise RequestError.method_not_found("terminal/wait_for_exit")

    async def kill_terminal(self, session_id: str, terminal_id: str, **kwargs: Any) -> KillTerminalResponse | None:
        raise RequestError.method_not_found("terminal/kill")

    async def create_elicitation(self, message: str, mode: Any, **kwargs: Any) -> Any:
        raise RequestError.method_not_found("elicitation/create")

    async def complete_elicitation(self, elicitation_id: str, **kwargs: Any) -> None:
        return None

    async def ext_method(self, method: str, params: dict[str, Any]) -> dict[str, Any]:
        raise RequestError.method_not_found(method)

    async def ext_notification(self, method: str, params: dict[str, Any]) -> None:
        return None

    def on_connect(self, conn: Agent) -> None:
        return None


@pytest.fixture
def fake() -> Iterator[FakeOpenAI]:
    server = FakeOpenAI()
    server.start()
    yield server
    server.stop()


@asynccontextmanager
async def agent(
    editor: Editor, fake: FakeOpenAI, store: Path, *more_mods: str
) -> AsyncIterator[ClientSideConnection]:
    """``host-sim acp`` on the test mod, ``store`` and the fake model, initialized; on leaving,
    its standard input is closed and the process must end by itself with status 0 (the SDK
    terminates it after ``shutdown_timeout``, which fails the test)."""
    log = store.with_suffix(".stderr")
    env = {**os.environ, "OPENAI_API_KEY": "sk-test-acp", "PYTHONPATH": str(ROOT)}
    env.pop("HOST_SIM_STORE", None)
    command = ["-m", "host_sim", "acp", MOD, *more_mods, "--store", str(store), "--model", f"openai:fake-model@{fake.base_url}"]
    with log.open("ab") as stderr:
        async with spawn_agent_process(
            editor, sys.executable, *command, env=env, cwd=store.parent, transport_kwargs={"stderr": stderr.fileno(), "shutdown_timeout": 30.0},
            use_unstable_protocol=True,
        ) as (conn, process):  # fmt: skip
            init = await conn.initialize(protocol_version=PROTOCOL_VERSION)
            assert init.protocol_version == PROTOCOL_VERSION
            yield conn
        assert process.returncode == 0, log.read_text()


def action_reply(text: str) -> Answer:
    return streamed_reply(f'I can save that. <mod-action type="note.save">{json.dumps({"text": text})}</mod-action>')


async def test_an_editor_starts_a_session_in_its_folder_and_learns_the_mods_slash_commands(
    fake: FakeOpenAI, tmp_path: Path
) -> None:
    editor = Editor()
    store = tmp_path / "store.sqlite"
    async with agent(editor, fake, store) as conn:
        init = await conn.initialize(protocol_version=PROTOCOL_VERSION)
        caps = init.agent_capabilities
        assert caps is not None and caps.load_session
        assert caps.session_capabilities is not None
        assert caps.session_capabilities.list is not None
        assert caps.session_capabilities.fork is not None
        assert caps.session_capabilities.resume is not None
        new = await conn.new_session(cwd=str(tmp_path))
        with anyio.fail_after(10):
            while not editor.of(new.session_id, AvailableCommandsUpdate):
                await anyio.sleep(0.01)
    [update] = editor.of(new.session_id, AvailableCommandsUpdate)
    commands = {c.name: c for c in update.available_commands}
    assert sorted(commands) == ["count", "noisy", "shout"]
    assert commands["shout"].description == "Say it louder"
    assert commands["shout"].input is not None and commands["shout"].input.root.hint == "<words>"
    assert commands["count"].input is None
    async with Host(store=SqliteStore(store)) as host:  # the ACP session id is the host's
        session = await host.sessions.get(new.session_id)
        assert session.cwd == str(tmp_path) and session.lineage.kind == "root"


async def test_a_prompt_streams_the_models_deltas_as_chunks_and_ends_the_turn(fake: FakeOpenAI, tmp_path: Path) -> None:
    editor = Editor()
    fake.answer(streamed_reply("The parser ", "reads tokens", " one by one."))
    async with agent(editor, fake, tmp_path / "store.sqlite") as conn:
        session = (await conn.new_session(cwd=str(tmp_path))).session_id
        answer = await conn.prompt(session_id=session, prompt=[text_block("How does the parser work?")])
    assert answer.stop_reason == "end_turn"
    chunks = editor.said(session)
    assert "".join(chunks) == "The parser reads tokens one by one." and len(chunks) >= 3  # as it streamed
    assert answer.field_meta is not None and answer.field_meta[TURN].startswith("turn_")
    asked = fake.bodies[0]
    assert isinstance(asked, dict) and "How does the parser work?" in json.dumps(asked["messages"])


async def test_a_tool_call_is_shown_when_it_starts_and_when_it_returns(fake: FakeOpenAI, tmp_path: Path) -> None:
    editor = Editor()
    fake.answer(streamed_tool_call("lookup", '{"query": ', '"parser"}'), streamed_reply("Found them."))
    async with agent(editor, fake, tmp_path / "store.sqlite") as conn:
        session = (await conn.new_session(cwd=str(tmp_path))).session_id
        answer = await conn.prompt(session_id=session, prompt=[text_block("Find the parser")])
    assert answer.stop_reason == "end_turn"
    [started] = editor.of(session, ToolCallStart)
    [finished] = editor.of(session, ToolCallProgress)
    assert started.title == "lookup" and started.status == "in_progress" and started.raw_input == {"query": "parser"}
    assert finished.tool_call_id == started.tool_call_id and finished.status == "completed"
    assert finished.raw_output == "found 3 results for 'parser'"
    assert editor.told(session) == "".join(["Found them."])
    kinds = [type(u).__name__ for s, u in editor.updates if s == session and not isinstance(u, AvailableCommandsUpdate)]
    chunks = len(editor.said(session))  # "Found " and "them.": the key filter lets words through whole
    assert kinds == ["ToolCallStart", "ToolCallProgress", *["AgentMessageChunk"] * chunks] and chunks >= 1


async def test_a_slash_command_runs_in_the_session_and_a_doubled_slash_is_a_literal_prompt(
    fake: FakeOpenAI, tmp_path: Path
) -> None:
    editor = Editor()
    fake.answer(streamed_reply("That is the hosts file."))
    async with agent(editor, fake, tmp_path / "store.sqlite") as conn:
        session = (await conn.new_session(cwd=str(tmp_path))).session_id
        shouted = await conn.prompt(session_id=session, prompt=[text_block("/shout make it loud")])
        literal = await conn.prompt(session_id=session, prompt=[text_block("//etc/hosts")])
        noisy = await conn.prompt(session_id=session, prompt=[text_block("/noisy")])
    assert shouted.stop_reason == literal.stop_reason == noisy.stop_reason == "end_turn"
    assert editor.told(session) == "".join(["MAKE IT LOUD!", "That is the hosts file.", "quiet answer"])
    # What the mod printed went to standard error: the protocol on standard output stayed whole.
    assert "debugging output a mod author left in" in (tmp_path / "store.stderr").read_text()
    [asked] = fake.bodies
    assert isinstance(asked, dict) and '"/etc/hosts"' in json.dumps(asked["messages"])


async def test_allow_always_is_a_standing_approval_so_the_next_action_of_its_kind_is_not_asked(
    fake: FakeOpenAI, tmp_path: Path
) -> None:
    editor = Editor()
    editor.choices = ["allow_always"]
    # What the rule confirms runs after its turn and tells the session in a notification turn,
    # which the model answers too.
    noted = streamed_reply("Noted.")
    fake.answer(action_reply("first"), action_reply("second"), noted, action_reply("third"), noted)
    store = tmp_path / "store.sqlite"
    async with agent(editor, fake, store) as conn:
        session = (await conn.new_session(cwd=str(tmp_path))).session_id
        first = await conn.prompt(session_id=session, prompt=[text_block("Save 'first'")])
        assert first.stop_reason == "end_turn"
        [(asked_in, tool_call, options)] = editor.asked
        assert asked_in == session and tool_call.status == "pending" and tool_call.raw_input == {"text": "first"}
        assert [(o.option_id, o.kind) for o in options] == [
            ("allow_once", "allow_once"),
            ("allow_always", "allow_always"),
            ("reject_once", "reject_once"),
            ("reject_always", "reject_always"),
        ]
        second = await conn.prompt(session_id=session, prompt=[text_block("Save 'second'")])
        assert second.stop_reason == "end_turn"
        assert len(editor.asked) == 1  # the standing approval answered the second
    later = Editor()  # the rule is durable: another agent process on the store asks nothing either
    async with agent(later, fake, store) as conn:
        await conn.load_session(cwd=str(tmp_path), session_id=session)
        third = await conn.prompt(session_id=session, prompt=[text_block("Save 'third'")])
    assert third.stop_reason == "end_turn" and later.asked == []
    async with Host(store=SqliteStore(store)) as host:
        actions = await host.actions(session)
        [rule] = await host.approvals.list()
    assert (rule.action_type, rule.tool, rule.by, rule.revoked_at) == ("note.save", None, "acp", None)
    assert [a.payload["text"] for a in actions] == ["first", "second", "third"]
    assert [(a.status, a.decided_by) for a in actions] == [("confirmed", "acp"), ("confirmed", rule.id), ("confirmed", rule.id)]
    assert actions[0].reason == "allow_always"
    [result] = editor.of(session, ToolCallProgress)
    assert (result.tool_call_id, result.status, result.content[0].content.text) == (actions[0].id, "completed", "saved: first")
    shown = {u.tool_call_id: u for u in editor.of(session, ToolCallStart) + later.of(session, ToolCallStart)}
    for action in actions[1:]:  # the editor still sees what the rule allowed, and which rule
        assert shown[action.id].status == "completed" and rule.id in shown[action.id].content[0].content.text
    # ... and what it gave, before the prompt's response: the notification and the model's answer to it
    told = "".join(editor.said(session))
    assert f"note.save ran (action {actions[1].id}" in told and "saved: second" in told and told.endswith("Noted.")
    assert "saved: third" in "".join(later.said(session))


async def test_an_mcp_write_waits_for_the_editors_permission_and_allow_always_covers_that_tool(
    fake: FakeOpenAI, tmp_path: Path
) -> None:
    editor = Editor()
    editor.choices = ["allow_always"]
    fake.answer(
        streamed_tool_call("notes.write_note", '{"name": "todo", ', '"text": "ship it"}'),
        streamed_reply("I asked you first."),
        streamed_reply("Written."),  # the model reads the tool's result, delivered as a notification
        streamed_tool_call("notes.write_note", '{"name": "done", "text": "shipped"}', call_id="call_fake0002"),
        streamed_reply("Written at once."),  # the rule ran it inside the turn
    )
    store = tmp_path / "store.sqlite"
    async with agent(editor, fake, store, "host_sim.examples.notes") as conn:
        session = (await conn.new_session(cwd=str(tmp_path))).session_id
        answer = await conn.prompt(session_id=session, prompt=[text_block("Note that we ship it")])
        assert answer.stop_reason == "end_turn"
        with anyio.fail_after(60):  # not the wait for a notification an MCP write never sends
            again = await conn.prompt(session_id=session, prompt=[text_block("Note that it shipped")])
        assert again.stop_reason == "end_turn"
    [(_, asked, _)] = editor.asked
    assert asked.title == "notes.write_note (MCP write)"
    assert asked.raw_input == {"server": "notes", "tool": "write_note", "input": {"name": "todo", "text": "ship it"}}
    assert (tmp_path / "notes" / "todo.txt").read_text() == "ship it"
    assert (tmp_path / "notes" / "done.txt").read_text() == "shipped"
    async with Host(store=SqliteStore(store)) as host:
        first, second = await host.actions(session)
        [rule] = await host.approvals.list()
    assert (rule.action_type, rule.tool, rule.by) == ("mcp.call", "notes.write_note", "acp")
    assert (first.type, first.status, first.decided_by, first.reason) == ("mcp.call", "confirmed", "acp", "allow_always")
    assert (second.status, second.decided_by) == ("confirmed", rule.id)
    [done] = [u for u in editor.of(session, ToolCallProgress) if u.tool_call_id == first.id]
    assert done.status == "completed" and done.content[0].content.text == "wrote note 'todo' (7 characters)"
    assert "Written at once." in "".join(editor.said(session))


async def test_reject_once_asks_again_next_time_and_reject_always_does_not(fake: FakeOpenAI, tmp_path: Path) -> None:
    editor = Editor()
    editor.choices = ["reject_once", "reject_always"]
    fake.answer(action_reply("draft"), action_reply("final"), action_reply("again"))
    store = tmp_path / "store.sqlite"
    async with agent(editor, fake, store) as conn:
        session = (await conn.new_session(cwd=str(tmp_path))).session_id
        for text in ("Save the draft", "Save the final one", "Save it again"):
            answer = await conn.prompt(session_id=session, prompt=[text_block(text)])
            assert answer.stop_reason == "end_turn"
    assert len(editor.asked) == 2  # the third was rejected by the editor's standing choice
    async with Host(store=SqliteStore(store)) as host:
        actions = await host.actions(session)
        assert await host.approvals.list() == []  # a rejection makes no approval rule
    assert [(a.status, a.decided_by, a.reason) for a in actions] == [
        ("dismissed", "acp", "reject_once"),
        ("dismissed", "acp", "reject_always"),
        ("dismissed", "acp", "reject_always"),
    ]
    assert {u.status for u in editor.of(session, ToolCallProgress)} == {"failed"}


async def test_cancel_stops_the_running_turn_and_the_session_takes_the_next_prompt(
    fake: FakeOpenAI, tmp_path: Path
) -> None:
    editor = Editor()
    release = threading.Event()
    # "Thinking " ends in a space: the key filter lets a streamed word through once it has ended
    hold = streamed_reply("Thinking ", "about it", hold_after=2, release=release)
    fake.answer(hold, streamed_reply("Short answer."))
    try:
        async with agent(editor, fake, tmp_path / "store.sqlite") as conn:
            session = (await conn.new_session(cwd=str(tmp_path))).session_id
            async with anyio.create_task_group() as tg:
                answers: list[str] = []

                async def long_prompt() -> None:
                    answers.append((await conn.prompt(session_id=session, prompt=[text_block("Think hard")])).stop_reason)

                tg.start_soon(long_prompt)
                with anyio.fail_after(10):
                    await editor.first_chunk.wait()
                await conn.cancel(session_id=session)
            assert answers == ["cancelled"]
            assert editor.told(session) == "Thinking "  # nothing after the cancel
            after = await conn.prompt(session_id=session, prompt=[text_block("Quickly then")])
            assert after.stop_reason == "end_turn"
            assert editor.told(session) == "Thinking Short answer."
    finally:
        release.set()


async def test_fork_at_the_end_or_at_a_named_turn_and_load_replays_each_history(
    fake: FakeOpenAI, tmp_path: Path
) -> None:
    editor = Editor()
    fake.answer(streamed_reply("one"), streamed_reply("two"))
    async with agent(editor, fake, tmp_path / "store.sqlite") as conn:
        session = (await conn.new_session(cwd=str(tmp_path))).session_id
        first = await conn.prompt(session_id=session, prompt=[text_block("first question")])
        await conn.prompt(session_id=session, prompt=[text_block("second question")])
        assert first.field_meta is not None
        at_end = (await conn.fork_session(session_id=session, cwd=str(tmp_path))).session_id
        at_turn: dict[str, Any] = {TURN: first.field_meta[TURN]}  # sent as the request's _meta
        at_first = (await conn.fork_session(session_id=session, cwd=str(tmp_path), **at_turn)).session_id
        assert len({session, at_end, at_first}) == 3
        await conn.load_session(cwd=str(tmp_path), session_id=at_end)
        await conn.load_session(cwd=str(tmp_path), session_id=at_first)
    asked = [u.content.text for u in editor.of(at_end, UserMessageChunk)]
    assert asked == ["first question", "second question"]
    assert editor.told(at_end) == "".join(["one", "two"])
    assert [u.content.text for u in editor.of(at_first, UserMessageChunk)] == ["first question"]
    assert editor.told(at_first) == "".join(["one"])
    assert editor.of(at_first, UserMessageChunk)[0].field_meta == {TURN: first.field_meta[TURN]}
    # Each fork announces the commands, as every session start does.
    assert editor.of(at_end, AvailableCommandsUpdate) and editor.of(at_first, AvailableCommandsUpdate)


async def test_another_agent_process_loads_and_lists_the_sessions_the_store_keeps(fake: FakeOpenAI, tmp_path: Path) -> None:
    store = tmp_path / "store.sqlite"
    project, elsewhere = tmp_path / "project", tmp_path / "elsewhere"
    project.mkdir()
    elsewhere.mkdir()
    fake.answer(streamed_tool_call("lookup", '{"query": "tests"}'), streamed_reply("All green."))
    first = Editor()
    async with agent(first, fake, store) as conn:
        session = (await conn.new_session(cwd=str(project))).session_id
        other = (await conn.new_session(cwd=str(elsewhere))).session_id
        await conn.prompt(session_id=session, prompt=[text_block("Are the tests green?")])
        await conn.prompt(session_id=session, prompt=[text_block("/shout done")])
    second = Editor()
    async with agent(second, fake, store) as conn:
        listed = await conn.list_sessions(cwd=str(project))
        everything = await conn.list_sessions()
        loaded = await conn.load_session(cwd=str(project), session_id=session)
    assert loaded is not None
    assert [s.session_id for s in listed.sessions] == [session]
    assert listed.sessions[0].cwd == str(project) and listed.sessions[0].updated_at is not None
    assert {s.session_id for s in everything.sessions} == {session, other}
    replayed = [type(u).__name__ for s, u in second.updates if s == session]
    assert replayed == [
        "UserMessageChunk",
        "ToolCallStart",
        "AgentMessageChunk",
        "UserMessageChunk",
        "AgentMessageChunk",
        "AvailableCommandsUpdate",
    ]
    [tool] = second.of(session, ToolCallStart)
    assert tool.title == "lookup" and tool.status == "completed" and tool.raw_input == {"query": "tests"}
    assert second.told(session) == "".join(["All green.", "DONE!"])
    assert [u.content.text for u in second.of(session, UserMessageChunk)] == ["Are the tests green?", "/shout done"]


async def test_bad_requests_are_answered_with_the_hosts_reason_and_the_agent_keeps_serving(
    fake: FakeOpenAI, tmp_path: Path
) -> None:
    editor = Editor()
    fake.answer(streamed_reply("still here"))
    async with agent(editor, fake, tmp_path / "store.sqlite") as conn:
        with pytest.raises(RequestError, match="ses_nosuchsession") as unknown:
            await conn.prompt(session_id="ses_nosuchsession", prompt=[text_block("hello")])
        assert unknown.value.code == -32602
        with pytest.raises(RequestError, match="not an absolute path"):
            await conn.new_session(cwd="relative/folder")
        session = (await conn.new_session(cwd=str(tmp_path))).session_id
        with pytest.raises(RequestError, match="has no turn 'turn_000000000000'"):
            nowhere: dict[str, Any] = {TURN: "turn_000000000000"}
            await conn.fork_session(session_id=session, cwd=str(tmp_path), **nowhere)
        with pytest.raises(RequestError, match="'image' is not supported"):
            await conn.prompt(session_id=session, prompt=[ImageContentBlock(type="image", data="AAAA", mime_type="image/png")])
        with pytest.raises(RequestError, match="unknown command '/shuot'; did you mean '/shout'"):
            await conn.prompt(session_id=session, prompt=[text_block("/shuot hi")])
        answer = await conn.prompt(session_id=session, prompt=[text_block("are you still there?")])
    assert answer.stop_reason == "end_turn" and editor.told(session) == "".join(["still here"])

"""What `OpenAIModel` sends and how it reads the answer, against a real HTTP server on loopback."""

from __future__ import annotations

import json
import subprocess
import sys
from typing import Any

import attrs
import pytest

from host_sim import (
    HistoryEntry,
    Host,
    ModelRequest,
    OpenAIModel,
    ToolCall,
    ToolResult,
    ToolSpec,
)
from host_sim.testing import JsonObject, json_schema, thaw_object, wire_names
from modular_sdk import (
    AiContributions,
    AiPromptMessage,
    ModMetadata,
    SlashCommandContext,
    ToolContext,
    agent,
    define_mod,
    slash_command,
    tool,
)

from ._fake_openai import FakeOpenAI, reply, streamed_reply, streamed_tool_call, tool_call

SEARCH_SCHEMA: JsonObject = {
    "type": "object",
    "properties": {"pattern": {"type": "string", "description": "Text to find"}},
    "required": ["pattern"],
    "additionalProperties": False,
}


def full_request() -> ModelRequest:
    """A request with every part: instructions, history with a notification, tools, results, schema."""
    return ModelRequest(
        session_id="ses_0123456789ab",
        model="gpt-test",
        kind="prompt",
        text="Fix the failing test",
        message=AiPromptMessage(text="Fix the failing test"),
        history=[
            HistoryEntry(kind="prompt", text="Refactor the parser", reply="Done: parser.py split in two."),
            HistoryEntry(kind="notification", text="Build failed\n\ntest_parse broke", reply="Noted."),
        ],
        output_schema={"title": "Fix", "type": "object", "properties": {"file": {"type": "string"}}},
        instructions="You are a careful engineer.",
        tools=(ToolSpec(name="search", description="Find lines containing a pattern", input_schema=SEARCH_SCHEMA),),
        tool_results=(
            ToolResult(call_id="call_abc", name="search", input={"pattern": "parse"}, output='["parser.py: def parse"]'),
            ToolResult(call_id="call_def", name="search", input={"pattern": "x"}, output=None, error="boom"),
        ),
    )


@pytest.mark.anyio
async def test_a_request_with_every_part_is_sent_as_this_exact_chat_completions_body(fake: FakeOpenAI) -> None:
    fake.answer(reply('{"file": "parser.py"}'))
    model = OpenAIModel("gpt-test", base_url=fake.base_url, api_key="sk-test-123")

    assert await model.respond(full_request()) == '{"file": "parser.py"}'

    (received,) = fake.received
    assert received.path == "/v1/chat/completions"
    assert received.headers["authorization"] == "Bearer sk-test-123"
    assert received.headers["content-type"] == "application/json"
    assert received.body == {
        "model": "gpt-test",
        "messages": [
            {"role": "system", "content": "You are a careful engineer."},
            {"role": "user", "content": "Refactor the parser"},
            {"role": "assistant", "content": "Done: parser.py split in two."},
            {
                "role": "system",
                "content": "Notification (a system event, not a message from the user):\nBuild failed\n\ntest_parse broke",
            },
            {"role": "assistant", "content": "Noted."},
            {"role": "user", "content": "Fix the failing test"},
            {
                "role": "assistant",
                "content": None,
                "tool_calls": [
                    {"id": "call_abc", "type": "function", "function": {"name": "search", "arguments": '{"pattern": "parse"}'}}
                ],
            },
            {"role": "tool", "tool_call_id": "call_abc", "content": '["parser.py: def parse"]'},
            {
                "role": "assistant",
                "content": None,
                "tool_calls": [
                    {"id": "call_def", "type": "function", "function": {"name": "search", "arguments": '{"pattern": "x"}'}}
                ],
            },
            {"role": "tool", "tool_call_id": "call_def", "content": "error: boom"},
        ],
        "tools": [
            {
                "type": "function",
                "function": {"name": "search", "description": "Find lines containing a pattern", "parameters": SEARCH_SCHEMA},
            }
        ],
        "response_format": {
            "type": "json_schema",
            "json_schema": {
                "name": "Fix",
                "schema": {"title": "Fix", "type": "object", "properties": {"file": {"type": "string"}}},
                "strict": True,
            },
        },
    }


@pytest.mark.anyio
async def test_a_plain_prompt_sends_only_model_and_messages_and_no_key_header_without_a_key(
    fake: FakeOpenAI, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    fake.answer(reply("hello"))
    model = OpenAIModel("llama3.2", base_url=fake.base_url + "/")
    request = attrs.evolve(full_request(), history=[], instructions=None, tools=(), tool_results=(), output_schema=None)

    assert await model.respond(request) == "hello"
    (received,) = fake.received
    assert received.body == {"model": "gpt-test", "messages": [{"role": "user", "content": "Fix the failing test"}]}
    assert "authorization" not in received.headers


@pytest.mark.anyio
async def test_the_key_comes_from_openai_api_key_when_not_given(fake: FakeOpenAI, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-from-env")
    fake.answer(reply("ok"))
    await OpenAIModel("m", base_url=fake.base_url).respond(full_request())
    assert fake.received[0].headers["authorization"] == "Bearer sk-from-env"


@pytest.mark.anyio
async def test_a_tool_call_answer_becomes_a_tool_call_with_the_servers_id(fake: FakeOpenAI) -> None:
    fake.answer(tool_call("search", '{"pattern": "TODO"}', call_id="call_Zx9"))
    model = OpenAIModel("m", base_url=fake.base_url)
    assert await model.respond(full_request()) == ToolCall(name="search", input={"pattern": "TODO"}, call_id="call_Zx9")


@pytest.mark.anyio
async def test_empty_tool_arguments_are_an_empty_input(fake: FakeOpenAI) -> None:
    fake.answer(tool_call("list", ""))
    got = await OpenAIModel("m", base_url=fake.base_url).respond(full_request())
    assert got == ToolCall(name="list", input={}, call_id="call_fake0001")


# -- a whole host: a tool round trip, an agent's instructions, a notification, output_type ----


@attrs.frozen
class SearchInput:
    """What to look for."""

    pattern: str


def search(query: SearchInput, ctx: ToolContext) -> list[str]:
    return [line for line in ["parser.py: def parse(text)", "lexer.py: def tokens(text)"] if query.pattern in line]


async def review(argument: str | None, ctx: SlashCommandContext) -> str:
    reviewer = await ctx.ai.agents.get("reviewer").spawn()
    return (await reviewer.run(f"Review: {argument}")).text


MOD = define_mod(
    metadata=ModMetadata(display_name="Search", description="Search and review"),
    commands=[slash_command(id="review", description="Ask the reviewer", run=review)],
    ai=AiContributions(
        tools=[tool(name="search", description="Find lines", input_type=SearchInput, run=search)],
        agents=[agent(id="reviewer", description="Reviews", instructions="You are a strict reviewer.")],
    ),
)


@attrs.frozen
class Verdict:
    """A structured answer."""

    ok: bool


@pytest.mark.anyio
async def test_a_host_turn_with_a_tool_round_trip_a_notification_an_agent_and_an_output_type(fake: FakeOpenAI) -> None:
    fake.answer(  # the host streams: each answer as server-sent events
        streamed_tool_call("search", '{"pat', 'tern": "parse"}', call_id="call_srv1"),
        streamed_reply("parse is ", "in parser.py"),
        streamed_reply("Noted."),
        streamed_reply('{"ok": ', "true}"),
        streamed_reply("Looks fine."),
    )
    model = OpenAIModel("gpt-test", base_url=fake.base_url, api_key="sk-x")
    async with Host(mods=[MOD], model=model) as host:
        chat = await host.sessions.create()
        assert (await host.submit(chat, "Where is parse?")).text == "parse is in parser.py"
        await chat.notify(title="CI failed", body="test_parse broke")
        assert await chat.run("Is it ok?", output_type=Verdict) == Verdict(ok=True)
        assert (await host.submit(chat, "/review the parser")).text == "Looks fine."

    tools = [
        {
            "type": "function",
            "function": {
                "name": "search",
                "description": "Find lines",
                "parameters": thaw_object(MOD.ai.tools[0].input_schema),
            },
        }
    ]
    first_turn = [{"role": "user", "content": "Where is parse?"}]
    round_trip = [
        {
            "role": "assistant",
            "content": None,
            "tool_calls": [
                {"id": "call_srv1", "type": "function", "function": {"name": "search", "arguments": '{"pattern": "parse"}'}}
            ],
        },
        {"role": "tool", "tool_call_id": "call_srv1", "content": json.dumps(["parser.py: def parse(text)"])},
    ]
    history = [
        *first_turn,
        {"role": "assistant", "content": "parse is in parser.py"},
        {"role": "system", "content": "Notification (a system event, not a message from the user):\nCI failed\n\ntest_parse broke"},
        {"role": "assistant", "content": "Noted."},
    ]
    bodies = fake.bodies
    assert bodies[0] == {"model": "gpt-test", "messages": first_turn, "tools": tools, "stream": True, "stream_options": {"include_usage": True}}
    assert bodies[1] == {"model": "gpt-test", "messages": [*first_turn, *round_trip], "tools": tools, "stream": True, "stream_options": {"include_usage": True}}
    assert bodies[2] == {"model": "gpt-test", "messages": history[:3], "tools": tools, "stream": True, "stream_options": {"include_usage": True}}
    assert isinstance(bodies[3], dict)
    assert bodies[3]["messages"] == [*history, {"role": "user", "content": "Is it ok?"}]
    assert bodies[3]["response_format"] == {
        "type": "json_schema",
        "json_schema": {"name": "Verdict", "schema": json_schema(Verdict), "strict": True},
    }
    assert bodies[4] == {
        "model": "gpt-test",
        "messages": [
            {"role": "system", "content": "You are a strict reviewer."},
            {"role": "user", "content": "Review: the parser"},
        ],
        "tools": tools,
        "stream": True,
        "stream_options": {"include_usage": True},
    }


def test_import_host_sim_imports_no_http_client() -> None:
    code = "import sys, host_sim; print(sorted(m for m in sys.modules if m.split('.')[0] in {'httpx', 'httpcore', 'openai', 'h11'}))"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"
    made = "import sys, host_sim; host_sim.OpenAIModel('m'); print('httpx' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", made], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "True"


@pytest.mark.anyio
async def test_tool_names_chat_completions_refuses_are_sent_encoded_and_read_back_as_the_hosts(fake: FakeOpenAI) -> None:
    """An MCP tool is 'server.tool'; Chat Completions takes only [A-Za-z0-9_-]{1,64} names."""
    schema: JsonObject = {"type": "object", "properties": {}}
    request = attrs.evolve(
        full_request(),
        tools=(
            ToolSpec(name="notes.read_note", description="Read a note", input_schema=schema),
            ToolSpec(name="notes_read_note", description="A mod tool with the plain name", input_schema=schema),
        ),
        tool_results=(ToolResult(call_id="call_1", name="notes.read_note", input={"name": "a"}, output="first"),),
    )
    wire = wire_names(["notes.read_note", "notes_read_note"])["notes.read_note"]  # the plain name is taken
    fake.answer(tool_call(wire, "{}"))
    fake.answer(streamed_tool_call(wire, "{}"))
    model = OpenAIModel("m", base_url=fake.base_url)
    assert await model.respond(request) == ToolCall(name="notes.read_note", input={}, call_id="call_fake0001")
    streamed = [chunk async for chunk in model.stream(request)]
    assert streamed == [ToolCall(name="notes.read_note", input={}, call_id="call_fake0001")]
    sent: Any = fake.received[0].body  # JSON as the server read it
    names = [t["function"]["name"] for t in sent["tools"]]
    assert names == [wire, "notes_read_note"] and wire.startswith("notes_read_note_")
    assert all(len(n) <= 64 and n.replace("_", "").replace("-", "").isalnum() for n in names)
    assert sent["messages"][-2]["tool_calls"][0]["function"]["name"] == names[0]


def test_wire_names_keep_plain_names_and_are_stable() -> None:
    assert wire_names(["search", "notes.read_note"]) == {"search": "search", "notes.read_note": "notes_read_note"}
    long = "a." + "b" * 80
    assert len(wire_names([long])[long]) == 64 and wire_names([long]) == wire_names([long])


@pytest.mark.anyio
async def test_a_retracted_turn_in_the_history_is_followed_by_a_system_message_saying_not_to_rely_on_it(
    fake: FakeOpenAI,
) -> None:
    fake.answer(reply("Revenue: 4.2M"))
    fake.answer(reply("Checking again."))
    async with Host(model=OpenAIModel("gpt-test", base_url=fake.base_url, api_key="sk-test-123")) as host:
        chat = await host.sessions.create()
        wrong = (await chat.run("Revenue 2023?")).turn
        await host.lineage.retract(wrong.id, reason="the figures were from 2019")
        await chat.run("Again, please")

    body = fake.received[1].body
    assert isinstance(body, dict)
    messages = body["messages"]
    assert messages == [
        {"role": "user", "content": "Revenue 2023?"},
        {"role": "assistant", "content": "Revenue: 4.2M"},
        {
            "role": "system",
            "content": "The turn above was retracted as wrong; do not rely on it. Why: the figures were from 2019",
        },
        {"role": "user", "content": "Again, please"},
    ]

"""`OpenAIModel` reports the server's token counts (API.md section 15): from a completion's
``usage``, and from the last chunk of a stream it asked for them with
``stream_options.include_usage``; a turn run on it keeps them. Against a real HTTP server on loopback."""

from __future__ import annotations

import attrs
import pytest

from host_sim import Host, ModelRequest, OpenAIModel, Reply, ToolCall, Usage
from host_sim.testing import JsonObject
from modular_sdk import AiContributions, AiPromptMessage, ModMetadata, ToolContext, define_mod, tool

from ._fake_openai import FakeOpenAI, events, reply, streamed_reply, streamed_tool_call, tool_call, usage_chunk

pytestmark = pytest.mark.anyio


def request(text: str = "hello") -> ModelRequest:
    return ModelRequest(
        session_id="ses_0123456789ab", model="m", kind="prompt", text=text, message=AiPromptMessage(text=text), history=[]
    )


def model_at(fake: FakeOpenAI) -> OpenAIModel:
    return OpenAIModel("m", base_url=fake.base_url, max_retries=0)


async def test_a_completion_with_usage_becomes_a_reply_carrying_its_token_counts(fake: FakeOpenAI) -> None:
    fake.answer(reply("Hi there.", usage={"prompt_tokens": 812, "completion_tokens": 64, "total_tokens": 876}))
    assert await model_at(fake).respond(request()) == Reply(text="Hi there.", usage=Usage(input_tokens=812, output_tokens=64))


async def test_a_completion_without_usage_is_plain_text_as_before(fake: FakeOpenAI) -> None:
    fake.answer(reply("Hi there."))
    assert await model_at(fake).respond(request()) == "Hi there."


async def test_a_tool_call_completion_carries_its_usage(fake: FakeOpenAI) -> None:
    fake.answer(tool_call("search", '{"pattern": "x"}', usage={"prompt_tokens": 50, "completion_tokens": 9}))
    call = await model_at(fake).respond(request())
    assert call == ToolCall(
        name="search", input={"pattern": "x"}, call_id="call_fake0001", usage=Usage(input_tokens=50, output_tokens=9)
    )


@pytest.mark.parametrize(
    "usage",
    [{"prompt_tokens": -1, "completion_tokens": 2}, {"prompt_tokens": "12", "completion_tokens": 2}, {"prompt_tokens": 3}, "lots", True],
)
async def test_counts_a_server_gets_wrong_are_not_reported_and_never_fail_the_reply(fake: FakeOpenAI, usage: object) -> None:
    fake.answer(reply("Hi.", usage=usage))  # type: ignore[arg-type]
    assert await model_at(fake).respond(request()) == "Hi."


async def test_a_stream_asks_for_usage_and_ends_with_it_after_the_text(fake: FakeOpenAI) -> None:
    fake.answer(streamed_reply("Hello", " there", usage=(21, 2)))
    chunks = [c async for c in model_at(fake).stream(request())]
    assert chunks == ["Hello", " there", Usage(input_tokens=21, output_tokens=2)]
    (body,) = fake.bodies
    assert isinstance(body, dict) and body["stream_options"] == {"include_usage": True}


async def test_a_streamed_tool_call_carries_the_streams_usage(fake: FakeOpenAI) -> None:
    fake.answer(streamed_tool_call("search", '{"pat', 'tern": "x"}', usage=(30, 7)))
    (call,) = [c async for c in model_at(fake).stream(request())]
    assert isinstance(call, ToolCall) and call.usage == Usage(input_tokens=30, output_tokens=7)


async def test_a_stream_without_a_usage_chunk_yields_only_its_text(fake: FakeOpenAI) -> None:
    fake.answer(streamed_reply("Hello"))
    assert [c async for c in model_at(fake).stream(request())] == ["Hello"]


async def test_a_stream_whose_usage_chunk_holds_bad_counts_yields_only_its_text(fake: FakeOpenAI) -> None:
    stop: JsonObject = {"choices": [{"index": 0, "delta": {"content": "Hi"}, "finish_reason": "stop"}]}
    fake.answer(events(stop, usage_chunk(-5, "1"), b"data: [DONE]\n\n"))
    assert [c async for c in model_at(fake).stream(request())] == ["Hi"]


@attrs.frozen
class Pattern:
    """What to search for."""

    pattern: str


async def search(query: Pattern, ctx: ToolContext) -> str:
    return "found it"


SEARCH = define_mod(
    metadata=ModMetadata(display_name="Search", description="Finds things"),
    ai=AiContributions(tools=[tool(name="search", description="Find", input_type=Pattern, run=search)]),
)


async def test_a_host_turn_on_a_streaming_server_keeps_the_usage_of_every_call_added_up(fake: FakeOpenAI) -> None:
    fake.answer(streamed_tool_call("search", '{"pattern": "x"}', usage=(30, 7)), streamed_reply("Found", " it.", usage=(45, 3)))
    async with Host(mods=[SEARCH], model=model_at(fake)) as host:
        chat = await host.sessions.create()
        result = await chat.run("find x")
        assert result.text == "Found it."
        assert result.turn.usage == Usage(input_tokens=75, output_tokens=10)

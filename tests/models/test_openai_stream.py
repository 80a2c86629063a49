"""`OpenAIModel.stream`: text as the server writes it, tool calls assembled from their pieces,
retries only while nothing was shown, the key never shown, against a real HTTP server on loopback."""

from __future__ import annotations

import threading
from pathlib import Path

import anyio
import pytest

from host_sim import Host, HostEvent, ModelRequest, OpenAIModel, RecordingModel, ReplayModel, ToolCall, Usage
from host_sim.models import ModelError
from host_sim.testing import JsonObject, JsonValue
from modular_sdk import AiPromptMessage, TurnFailedError

from ._fake_openai import FakeOpenAI, error, events, reply, streamed_reply, streamed_tool_call

KEY = "sk-proj-SECRET0123456789abcdefXYZ"


def request(text: str = "hello") -> ModelRequest:
    return ModelRequest(
        session_id="ses_0123456789ab", model="m", kind="prompt", text=text, message=AiPromptMessage(text=text), history=[]
    )


def model_at(fake: FakeOpenAI, **options: float) -> OpenAIModel:
    return OpenAIModel("m", base_url=fake.base_url, api_key=KEY, **options)  # type: ignore[arg-type]


async def chunks_of(model: OpenAIModel, req: ModelRequest | None = None) -> list[str | ToolCall | Usage]:
    return [chunk async for chunk in model.stream(req or request())]


def delta(content: str) -> JsonObject:
    return {"choices": [{"index": 0, "delta": {"content": content}, "finish_reason": None}]}


STOP: JsonObject = {"choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}]}


# -- what arrives ------------------------------------------------------------------------------


@pytest.mark.anyio
async def test_the_first_words_arrive_before_the_server_has_written_the_rest(fake: FakeOpenAI) -> None:
    """Text goes out up to its last space as it comes (no encoded key holds a space, see
    `host_sim.models._secrets.KeyFilter`); the word being written waits for its end."""
    release = threading.Event()
    fake.answer(streamed_reply("Hel", "lo, ", "wor", "ld", hold_after=3, release=release))
    stream = model_at(fake).stream(request())
    try:
        with anyio.fail_after(5):
            first = await stream.__anext__()  # the server is still holding the rest back
        assert first == "Hello, "
        release.set()
        rest = [chunk async for chunk in stream]
    finally:
        release.set()
    assert rest == ["world"]
    (received,) = fake.received
    assert isinstance(received.body, dict) and received.body["stream"] is True
    assert received.headers["accept"] == "text/event-stream"
    assert received.headers["authorization"] == f"Bearer {KEY}"


@pytest.mark.anyio
async def test_a_streamed_tool_call_is_one_final_tool_call_with_the_servers_id(fake: FakeOpenAI) -> None:
    fake.answer(streamed_tool_call("search", '{"pat', 'tern": "pa', 'rse"}', call_id="call_srv9"))
    assert await chunks_of(model_at(fake)) == [ToolCall(name="search", input={"pattern": "parse"}, call_id="call_srv9")]


@pytest.mark.anyio
async def test_of_parallel_tool_calls_the_first_is_taken_as_respond_does(fake: FakeOpenAI) -> None:
    calls: list[JsonValue] = [
        {"index": 0, "id": "call_a", "type": "function", "function": {"name": "first", "arguments": '{"n": 1}'}},
        {"index": 1, "id": "call_b", "type": "function", "function": {"name": "second", "arguments": "{}"}},
    ]
    fake.answer(events({"choices": [{"index": 0, "delta": {"tool_calls": calls}, "finish_reason": "tool_calls"}]}))
    assert await chunks_of(model_at(fake)) == [ToolCall(name="first", input={"n": 1}, call_id="call_a")]


@pytest.mark.anyio
async def test_comments_other_fields_multi_line_data_and_usage_chunks_are_read_as_server_sent_events(
    fake: FakeOpenAI,
) -> None:
    fake.answer(
        events(
            b": keep-alive\n\n",
            b"event: message\nid: 1\ndata: {\"choices\": [{\"index\": 0,\ndata:  \"delta\": {\"content\": \"a\"}}]}\n\n",
            delta("b"),
            {"choices": [], "usage": {"total_tokens": 3}},
            STOP,
            b"data: [DONE]\n\n",
        )
    )
    assert await chunks_of(model_at(fake)) == ["ab"]  # one word: let through when it ends (the key filter)


@pytest.mark.anyio
async def test_a_server_that_answers_one_json_completion_to_a_stream_request_is_read_whole(fake: FakeOpenAI) -> None:
    fake.answer(reply("all at once"))
    assert await chunks_of(model_at(fake)) == ["all at once"]


@pytest.mark.anyio
async def test_respond_still_asks_for_the_whole_answer(fake: FakeOpenAI) -> None:
    fake.answer(reply("whole"))
    assert await model_at(fake).respond(request()) == "whole"
    assert isinstance(fake.bodies[0], dict) and "stream" not in fake.bodies[0]


# -- in a host ---------------------------------------------------------------------------------


@pytest.mark.anyio
async def test_a_host_turn_publishes_each_chunk_as_a_reply_delta_and_stores_their_concatenation(fake: FakeOpenAI) -> None:
    fake.answer(streamed_reply("The parser ", "lives in ", "parser.py"))
    seen: list[HostEvent] = []
    async with Host(model=model_at(fake)) as host:
        chat = await host.sessions.create()
        async with host.subscribe() as stream:
            out = await host.submit(chat, "where is the parser?")
            with anyio.fail_after(5):
                async for event in stream:
                    seen.append(event)
                    if event.kind == "turn_finished":
                        break
    assert out.text == "The parser lives in parser.py"
    assert [e.text for e in seen if e.kind == "reply_delta"] == ["The parser ", "lives in ", "parser.py"]
    assert [e.kind for e in seen] == ["turn_started", "reply_delta", "reply_delta", "reply_delta", "turn_finished"]


# -- failures ----------------------------------------------------------------------------------


@pytest.mark.anyio
async def test_a_retryable_status_before_the_stream_is_retried_with_the_same_request(fake: FakeOpenAI) -> None:
    fake.answer(error(503, "busy", headers={"Retry-After": "0"}), streamed_reply("ok"))
    assert await chunks_of(model_at(fake)) == ["ok"]
    assert len(fake.received) == 2 and fake.received[0].raw == fake.received[1].raw


@pytest.mark.anyio
async def test_a_client_error_is_not_retried_and_quotes_the_server(fake: FakeOpenAI) -> None:
    fake.answer(error(400, "Invalid schema for response_format"))
    with pytest.raises(ModelError, match="the server answered 400 Bad Request: 'Invalid schema for response_format'") as info:
        await chunks_of(model_at(fake))
    assert info.value.status == 400 and len(fake.received) == 1


@pytest.mark.anyio
async def test_a_stream_that_breaks_before_any_text_is_retried(fake: FakeOpenAI) -> None:
    fake.answer(streamed_reply("lost", break_after=1), streamed_reply("second ", "try"))
    assert await chunks_of(model_at(fake)) == ["second ", "try"]
    assert len(fake.received) == 2


@pytest.mark.anyio
async def test_a_tool_call_cut_short_is_retried_since_nothing_was_shown(fake: FakeOpenAI) -> None:
    fake.answer(streamed_tool_call("search", '{"pat', 'tern": "x"}', break_after=2), streamed_tool_call("search", "{}"))
    assert await chunks_of(model_at(fake)) == [ToolCall(name="search", input={}, call_id="call_fake0001")]


@pytest.mark.anyio
async def test_a_stream_that_breaks_after_text_was_shown_fails_saying_how_much_arrived(fake: FakeOpenAI) -> None:
    fake.answer(streamed_reply("Hello ", "there", break_after=2), streamed_reply("never asked"))
    got: list[str | ToolCall | Usage] = []
    with pytest.raises(ModelError, match=r"the streamed reply broke off after 6 characters: the connection broke .*send the message again"):
        async for chunk in model_at(fake).stream(request()):
            got.append(chunk)
    assert got == ["Hello "]
    assert len(fake.received) == 1  # not retried: "Hello" cannot be taken back
    fake.script.clear()


@pytest.mark.anyio
async def test_a_stream_that_ends_without_done_or_finish_reason_is_retried_then_fails_saying_so(fake: FakeOpenAI) -> None:
    cut = events(b"data: " + b'{"choices": [{"index": 0, "delta": {"role": "assistant"}}]}' + b"\n\n")
    fake.answer(cut, cut)
    with pytest.raises(ModelError, match=r"failed after 2 attempts; the last: the stream ended before the server said it was done"):
        await chunks_of(model_at(fake, max_retries=1))
    assert len(fake.received) == 2


@pytest.mark.anyio
async def test_an_error_event_before_any_text_is_retried_and_quoted_when_it_persists(fake: FakeOpenAI) -> None:
    failing = events({"error": {"message": f"overloaded for {KEY}", "type": "server_error"}})
    fake.answer(failing, failing)
    with pytest.raises(ModelError, match=r"the server reported an error mid-stream: 'overloaded for <api key>'") as info:
        await chunks_of(model_at(fake, max_retries=1))
    assert KEY not in str(info.value)


@pytest.mark.anyio
async def test_a_pause_longer_than_timeout_before_any_text_is_retried(fake: FakeOpenAI) -> None:
    stalled = threading.Event()
    fake.answer(streamed_reply("late", hold_after=1, release=stalled), streamed_reply("on time"))
    try:
        assert await chunks_of(model_at(fake, timeout=0.3)) == ["on ", "time"]  # let through up to each space
    finally:
        stalled.set()


@pytest.mark.anyio
async def test_a_pause_longer_than_timeout_after_text_fails_the_step_naming_the_timeout(fake: FakeOpenAI) -> None:
    stalled = threading.Event()
    fake.answer(streamed_reply("a ", "b", hold_after=2, release=stalled))
    try:
        with pytest.raises(ModelError, match=r"broke off after 2 characters: no chunk within 0.3s"):
            await chunks_of(model_at(fake, timeout=0.3))
    finally:
        stalled.set()


@pytest.mark.anyio
async def test_an_event_that_is_not_json_is_a_model_error_naming_it(fake: FakeOpenAI) -> None:
    fake.answer(events(b"data: {not json\n\n"))
    with pytest.raises(ModelError, match=r"sent a stream that is not a Chat Completions stream \(an event is not JSON\): '\{not json'"):
        await chunks_of(model_at(fake))


@pytest.mark.anyio
async def test_a_streamed_refusal_is_a_model_error_with_the_models_words(fake: FakeOpenAI) -> None:
    refusal: JsonObject = {"choices": [{"index": 0, "delta": {"refusal": "I can't help with that."}, "finish_reason": None}]}
    fake.answer(events(refusal, STOP, b"data: [DONE]\n\n"))
    with pytest.raises(ModelError, match=r"refused to answer: \"I can't help with that.\"; rephrase the request"):
        await chunks_of(model_at(fake))


@pytest.mark.anyio
async def test_a_failed_stream_fails_only_its_turn(fake: FakeOpenAI) -> None:
    fake.answer(error(401, "bad key"), streamed_reply("fine"))
    async with Host(model=model_at(fake)) as host:
        chat = await host.sessions.create()
        with pytest.raises(TurnFailedError, match="the server answered 401 Unauthorized: 'bad key'"):
            await chat.run("first")
        out = await host.submit(chat, "second")
    assert out.text == "fine" and out.error_kind is None


# -- the key -----------------------------------------------------------------------------------


@pytest.mark.anyio
async def test_a_key_split_across_chunks_is_never_shown(fake: FakeOpenAI) -> None:
    fake.answer(streamed_reply("your key is sk-pr", "oj-SECRET01234", "56789abcdefXYZ", "!", " and sk- is a prefix"))
    got = await chunks_of(model_at(fake))
    text = "".join(str(c) for c in got)
    assert text == "your key is <api key>! and sk- is a prefix"
    assert all("SECRET" not in str(c) and "sk-proj" not in str(c) for c in got)


@pytest.mark.anyio
async def test_a_key_in_streamed_tool_arguments_is_scrubbed(fake: FakeOpenAI) -> None:
    fake.answer(streamed_tool_call("echo", '{"text": "sk-proj-SECRET', '0123456789abcdefXYZ"}'))
    assert await chunks_of(model_at(fake)) == [ToolCall(name="echo", input={"text": "<api key>"}, call_id="call_fake0001")]


# -- cassettes ---------------------------------------------------------------------------------


@pytest.mark.anyio
async def test_recording_a_streaming_model_records_whole_replies_and_replays_them(fake: FakeOpenAI, tmp_path: Path) -> None:
    fake.answer(reply("recorded reply"))
    cassette = tmp_path / "c.jsonl"
    async with Host(model=RecordingModel(model_at(fake), cassette)) as host:
        chat = await host.sessions.create()
        assert (await host.submit(chat, "hi")).text == "recorded reply"
    assert isinstance(fake.bodies[0], dict) and "stream" not in fake.bodies[0]  # RecordingModel calls respond
    assert '"response":{"text":"recorded reply"}' in cassette.read_text()
    async with Host(model=ReplayModel(cassette)) as host:
        chat = await host.sessions.create()
        assert (await host.submit(chat, "hi")).text == "recorded reply"

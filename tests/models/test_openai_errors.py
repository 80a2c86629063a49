"""`OpenAIModel` retries what is worth retrying, fails the turn with the server's words, and never shows the key."""

from __future__ import annotations

import email.utils
import time
from pathlib import Path

import anyio
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from host_sim import Host, ModelRequest, OpenAIModel, RecordingModel
from host_sim.models import ModelError
from host_sim.testing import retry_after as _retry_after
from modular_sdk import AiPromptMessage, InvalidArgumentError, TurnFailedError

from ._fake_openai import Answer, FakeOpenAI, error, reply

KEY = "sk-proj-SECRET0123456789abcdefXYZ"


def request(text: str = "hello") -> ModelRequest:
    return ModelRequest(
        session_id="ses_0123456789ab", model="m", kind="prompt", text=text, message=AiPromptMessage(text=text), history=[]
    )


def model_at(fake: FakeOpenAI, **options: float) -> OpenAIModel:
    return OpenAIModel("m", base_url=fake.base_url, api_key=KEY, **options)  # type: ignore[arg-type]


# -- retries -------------------------------------------------------------------------------


@pytest.mark.anyio
@pytest.mark.parametrize("status", [429, 500, 502, 503, 504, 408])
async def test_a_retryable_status_is_retried_and_the_next_answer_used(fake: FakeOpenAI, status: int) -> None:
    fake.answer(error(status, "busy", headers={"Retry-After": "0"}), reply("ok"))
    assert await model_at(fake).respond(request()) == "ok"
    assert len(fake.received) == 2
    assert fake.received[0].raw == fake.received[1].raw  # the same request again


@pytest.mark.anyio
async def test_retries_stop_after_one_plus_max_retries_attempts_with_the_last_servers_message(fake: FakeOpenAI) -> None:
    fake.answer(*[error(503, f"overloaded {n}", headers={"Retry-After": "0"}) for n in range(3)])
    with pytest.raises(ModelError, match=r"failed after 3 attempts; the last: the server answered 503 Service Unavailable: 'overloaded 2'") as info:
        await model_at(fake, max_retries=2).respond(request())
    assert len(fake.received) == 3
    assert info.value.status == 503 and info.value.model == "m"
    assert fake.base_url + "/chat/completions" in str(info.value)


@pytest.mark.anyio
async def test_max_retries_0_makes_one_attempt(fake: FakeOpenAI) -> None:
    fake.answer(error(500, "oops"))
    with pytest.raises(ModelError, match="failed after 1 attempt;"):
        await model_at(fake, max_retries=0).respond(request())
    assert len(fake.received) == 1


@pytest.mark.anyio
async def test_retry_after_seconds_is_waited_for(fake: FakeOpenAI) -> None:
    fake.answer(error(429, "slow down", headers={"Retry-After": "1"}), reply("ok"))
    start = time.monotonic()
    assert await model_at(fake).respond(request()) == "ok"
    assert time.monotonic() - start >= 0.95


@pytest.mark.anyio
async def test_retry_after_ms_is_waited_for(fake: FakeOpenAI) -> None:
    fake.answer(error(429, "slow down", headers={"retry-after-ms": "400"}), reply("ok"))
    start = time.monotonic()
    assert await model_at(fake).respond(request()) == "ok"
    assert 0.38 <= time.monotonic() - start < 5


def test_retry_after_accepts_seconds_dates_and_ignores_nonsense() -> None:
    soon = email.utils.format_datetime(email.utils.localtime(), usegmt=False)
    assert _retry_after({"retry-after": "2"}) == 2.0
    assert _retry_after({"retry-after-ms": "250"}) == 0.25
    date = _retry_after({"retry-after": soon})
    assert date is not None and 0 <= date <= 1
    assert _retry_after({"retry-after": "soon"}) is None
    assert _retry_after({"retry-after": "3600"}) == 3600.0  # what it asks: max_retry_wait decides
    assert _retry_after({"retry-after": "-5"}) is None
    assert _retry_after({}) is None


@pytest.mark.anyio
@pytest.mark.parametrize("asked", ["100000", "in an hour"])
async def test_a_retry_after_beyond_max_retry_wait_fails_the_turn_saying_so(fake: FakeOpenAI, asked: str) -> None:
    """Retry-After: 100000 used to be ignored silently (the client backed off and retried)."""
    header = asked if asked.isdigit() else email.utils.formatdate(time.time() + 3600, usegmt=True)
    fake.answer(error(429, "slow down", headers={"Retry-After": header}))
    start = time.monotonic()
    with pytest.raises(ModelError, match=r"the server answered 429 Too Many Requests and asked to retry after (100000|3\d\d\d) s \(Retry-After\), more than OpenAIModel\(max_retry_wait=60\) waits; the turn fails instead of waiting: try again later, or raise max_retry_wait") as info:
        await model_at(fake).respond(request())
    assert time.monotonic() - start < 5 and len(fake.received) == 1
    assert info.value.status == 429


@pytest.mark.anyio
async def test_a_retry_after_within_max_retry_wait_is_honoured(fake: FakeOpenAI) -> None:
    fake.answer(error(503, "busy", headers={"Retry-After": "1"}))
    with pytest.raises(ModelError, match=r"asked to retry after 1 s \(Retry-After\), more than OpenAIModel\(max_retry_wait=0.5\) waits"):
        await model_at(fake, max_retry_wait=0.5).respond(request())
    fake.answer(error(503, "busy", headers={"Retry-After": "1"}), reply("ok"))
    start = time.monotonic()
    assert await model_at(fake, max_retry_wait=1).respond(request()) == "ok"
    assert time.monotonic() - start >= 0.95


@pytest.mark.anyio
async def test_without_retry_after_the_backoff_waits_a_little(fake: FakeOpenAI) -> None:
    fake.answer(error(502, "bad gateway"), reply("ok"))
    start = time.monotonic()
    assert await model_at(fake, max_retries=1).respond(request()) == "ok"
    assert 0.2 <= time.monotonic() - start < 3


@pytest.mark.anyio
async def test_a_dropped_connection_is_retried(fake: FakeOpenAI) -> None:
    fake.answer(Answer(hang_up=True), reply("ok"))
    assert await model_at(fake).respond(request()) == "ok"
    assert len(fake.received) == 2


@pytest.mark.anyio
async def test_a_timeout_is_retried_then_fails_naming_it(fake: FakeOpenAI) -> None:
    fake.answer(Answer(delay=5, body=b"{}"), reply("ok"))
    assert await model_at(fake, timeout=0.3).respond(request()) == "ok"
    fake.answer(Answer(delay=5, body=b"{}"), Answer(delay=5, body=b"{}"))
    with pytest.raises(ModelError, match=r"failed after 2 attempts; the last: no answer within 0.3s") as info:
        await model_at(fake, timeout=0.3, max_retries=1).respond(request())
    assert info.value.status is None


@pytest.mark.anyio
async def test_an_unreachable_server_fails_after_its_retries_saying_so() -> None:
    with anyio.fail_after(10):
        model = OpenAIModel("m", base_url="http://127.0.0.1:9/v1", max_retries=1)
        with pytest.raises(ModelError, match=r"failed after 2 attempts; the last: could not reach the server \(ConnectError"):
            await model.respond(request())


# -- other errors fail the turn at once, with the server's message ---------------------------


@pytest.mark.anyio
@pytest.mark.parametrize(
    ("status", "hint"),
    [
        (400, "the request was refused; fix what the server names"),
        (401, r"check the API key \(api_key= or \$OPENAI_API_KEY\)"),
        (403, "check the API key and that it may use this model"),
        (404, r"check the model name 'm' and base_url \(it usually ends in /v1\)"),
        (422, "the request was refused"),
    ],
)
async def test_a_client_error_is_not_retried_and_quotes_the_server(fake: FakeOpenAI, status: int, hint: str) -> None:
    fake.answer(error(status, "The model `m` does not exist or you do not have access to it."))
    with pytest.raises(ModelError, match=rf"the server answered {status} .*: 'The model `m` does not exist.*'; {hint}") as info:
        await model_at(fake).respond(request())
    assert info.value.status == status
    assert len(fake.received) == 1


@pytest.mark.anyio
async def test_a_non_json_error_body_is_quoted_as_text(fake: FakeOpenAI) -> None:
    fake.answer(Answer(status=400, body=b"<html>bad request</html>"))
    with pytest.raises(ModelError, match=r"400 Bad Request: '<html>bad request</html>'"):
        await model_at(fake).respond(request())


@pytest.mark.anyio
@pytest.mark.parametrize(
    ("body", "match"),
    [
        (b"not json", "with a body that is not JSON: 'not json'; check that base_url points at a Chat Completions API"),
        (b'{"choices": []}', r"not a Chat Completions response \(it has no choices\[0\].message\)"),
        (b'{"choices": [{"message": {"content": null}}]}', "has neither text content nor tool calls"),
        (
            b'{"choices": [{"message": {"tool_calls": [{"id": "c", "function": {"name": "t", "arguments": "{oops"}}]}}]}',
            r"called tool 't' with arguments that are not JSON: '\{oops'",
        ),
        (
            b'{"choices": [{"message": {"tool_calls": [{"id": "c", "function": {"name": "t", "arguments": "[1]"}}]}}]}',
            "called tool 't' with arguments that are not a JSON object",
        ),
        (b'{"choices": [{"message": {"content": null, "refusal": "I cannot help"}}]}', "refused to answer: 'I cannot help'"),
    ],
)
async def test_an_unusable_answer_is_a_model_error(fake: FakeOpenAI, body: bytes, match: str) -> None:
    fake.answer(Answer(body=body))
    with pytest.raises(ModelError, match=match):
        await model_at(fake).respond(request())


@pytest.mark.anyio
async def test_content_parts_are_joined(fake: FakeOpenAI) -> None:
    fake.answer(Answer(body=b'{"choices": [{"message": {"content": [{"type": "text", "text": "a"}, {"type": "text", "text": "b"}]}}]}'))
    assert await model_at(fake).respond(request()) == "ab"


@pytest.mark.anyio
async def test_a_refused_request_fails_only_its_turn_with_the_servers_message(fake: FakeOpenAI) -> None:
    fake.answer(error(400, "Invalid schema for response_format"), reply("fine"))
    async with Host(model=model_at(fake)) as host:
        chat = await host.sessions.create()
        with pytest.raises(TurnFailedError, match="Invalid schema for response_format") as info:
            await chat.run("first")
        assert "model 'm' failed: model 'm' at http" in info.value.reason
        assert (await host.submit(chat, "second")).text == "fine"


# -- the key never leaks ---------------------------------------------------------------------


@pytest.mark.anyio
async def test_a_key_the_server_quotes_is_scrubbed_from_errors(fake: FakeOpenAI) -> None:
    fake.answer(error(401, f"Incorrect API key provided: {KEY}."))
    with pytest.raises(ModelError) as info:
        await model_at(fake).respond(request())
    assert KEY not in str(info.value)
    assert "Incorrect API key provided: <api key>." in str(info.value)
    assert KEY not in repr(info.value.args) and KEY not in repr(vars(info.value))


@pytest.mark.anyio
async def test_a_key_quoted_in_a_retried_error_or_a_reply_is_scrubbed(fake: FakeOpenAI) -> None:
    fake.answer(error(503, f"key {KEY} is rate limited", headers={"Retry-After": "0"}))
    with pytest.raises(ModelError) as info:
        await model_at(fake, max_retries=0).respond(request())
    assert KEY not in str(info.value) and "<api key>" in str(info.value)
    fake.answer(reply(f"your key is {KEY}"))
    assert await model_at(fake).respond(request()) == "your key is <api key>"


def test_the_key_is_not_in_the_repr_or_the_attributes() -> None:
    model = OpenAIModel("gpt-4o-mini", api_key=KEY, base_url="https://user:pw@example.test/v1")
    assert repr(model) == "OpenAIModel('gpt-4o-mini', base_url='https://example.test/v1', timeout=60.0, max_retries=2, max_retry_wait=60.0)"
    assert KEY not in repr(vars(model))


@pytest.mark.anyio
async def test_the_key_is_in_no_transcript_and_no_cassette(fake: FakeOpenAI, tmp_path: Path) -> None:
    fake.answer(reply(f"echoing {KEY}"), error(400, f"bad key {KEY}"))
    cassette = tmp_path / "c.jsonl"
    async with Host(model=RecordingModel(model_at(fake), cassette)) as host:
        chat = await host.sessions.create()
        await host.submit(chat, "hi")
        await host.submit(chat, "again")
        transcript = await host.transcript(chat)
    assert "<api key>" in transcript and KEY not in transcript
    assert KEY not in cassette.read_text()
    assert KEY not in repr(host.model)


# -- bad arguments ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("kwargs", "argument", "match"),
    [
        ({"model": ""}, "model", "OpenAIModel needs the model name as a non-empty str, got ''"),
        ({"model": 3}, "model", "got 3"),
        ({"base_url": "localhost:8000"}, "base_url", "must be an http\\(s\\) URL without query, got 'localhost:8000'"),
        ({"base_url": "ftp://x/v1"}, "base_url", "got 'ftp://x/v1'"),
        ({"base_url": "http://x/v1?a=1"}, "base_url", "without query"),
        ({"timeout": 0}, "timeout", "must be a positive number of seconds, got 0"),
        ({"timeout": float("nan")}, "timeout", "got nan"),
        ({"timeout": True}, "timeout", "got True"),
        ({"max_retries": -1}, "max_retries", "must be an int >= 0, got -1"),
        ({"max_retries": 1.5}, "max_retries", "got 1.5"),
        ({"api_key": ""}, "api_key", "an empty or padded str"),
        ({"api_key": " sk-x "}, "api_key", "an empty or padded str"),
        ({"api_key": 42}, "api_key", "got 42"),
        ({"max_retry_wait": -1}, "max_retry_wait", r"must be a number of seconds >= 0, got -1; pass e.g. max_retry_wait=60.0"),
        ({"max_retry_wait": float("inf")}, "max_retry_wait", "got inf"),
        ({"max_retry_wait": float("nan")}, "max_retry_wait", "got nan"),
        ({"max_retry_wait": "60"}, "max_retry_wait", "got '60'"),
        ({"max_retry_wait": None}, "max_retry_wait", "got None"),
        ({"max_retry_wait": False}, "max_retry_wait", "got False"),
    ],
)
def test_bad_arguments_raise_invalid_argument_error_naming_them(kwargs: dict[str, object], argument: str, match: str) -> None:
    given: dict[str, object] = {"model": "m", **kwargs}
    with pytest.raises(InvalidArgumentError, match=match) as info:
        OpenAIModel(**given)  # type: ignore[arg-type]
    assert info.value.argument == argument
    assert " sk-x " not in str(info.value)


junk = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(),
    st.integers(min_value=5000, max_value=5001).map(lambda n: 10**n),
    st.floats(),
    st.text(max_size=8),
    st.lists(st.integers(), max_size=2),
    st.sampled_from([object(), int, b"sk"]),
)


@pytest.mark.parametrize("argument", ["model", "base_url", "api_key", "timeout", "max_retries", "max_retry_wait"])
@settings(max_examples=40, deadline=None)
@given(value=junk)
def test_junk_in_any_argument_raises_only_invalid_argument_error(argument: str, value: object) -> None:
    given_arguments: dict[str, object] = {"model": "m", argument: value}
    try:
        OpenAIModel(**given_arguments)  # type: ignore[arg-type]
    except InvalidArgumentError as exc:
        assert exc.argument == argument and str(exc)


@pytest.mark.anyio
async def test_a_streamed_request_also_fails_when_retry_after_passes_max_retry_wait(fake: FakeOpenAI) -> None:
    fake.answer(error(503, "busy", headers={"Retry-After": "100000"}))
    with pytest.raises(ModelError, match=r"answered 503 Service Unavailable and asked to retry after 100000 s \(Retry-After\), more than OpenAIModel\(max_retry_wait=60\) waits"):
        async for _ in model_at(fake).stream(request()):
            pass
    assert len(fake.received) == 1

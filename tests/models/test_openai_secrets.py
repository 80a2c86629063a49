"""The API key never reaches a stored, published, recorded or raised text, however the server
encodes it when it echoes it: JSON escapes (``\\/``, ``\\uXXXX`` for any or every character),
percent-encoding (also inside JSON escapes), and split across stream chunks anywhere."""

from __future__ import annotations

import json
import re
import tempfile
import urllib.parse
from pathlib import Path

import anyio
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from host_sim import Host, ModelRequest, OpenAIModel, RecordingModel, SqliteStore
from host_sim.models import ModelError
from modular_sdk import AiPromptMessage

from ._fake_openai import FakeOpenAI, error_raw, reply_raw, streamed_raw, streamed_tool_call

KEY = "sk-proj/SECRET_0123-abcXYZ"


def decoded_views(text: str) -> list[str]:
    """``text`` and what a reader gets by decoding it, again and again (JSON escapes, %XX)."""
    views = [text]
    for _ in range(3):
        text = re.sub(r"\\u([0-9a-fA-F]{4})", lambda m: chr(int(m.group(1), 16)), text).replace("\\/", "/")
        text = urllib.parse.unquote(text)
        views.append(text)
    return views


def assert_no_key(where: str, text: str) -> None:
    for view in decoded_views(text):
        assert KEY not in view, f"the key is in {where}: {text[:300]!r}"


# -- how a server may write one character inside a JSON string ----------------------------------
# A unit is one character of the decoded text and the JSON literal that writes it; a stream may
# split the text between any two units (a server splits decoded text, then encodes each chunk).

Unit = tuple[str, str]


def _units(char: str, how: str) -> list[Unit]:
    code = ord(char)
    if how == "literal":
        return [(char, char)]
    if how == "unicode":
        return [(char, f"\\u{code:04x}")]
    if how == "UNICODE":
        return [(char, f"\\u{code:04X}")]
    if how == "slash" and char == "/":
        return [(char, "\\/")]
    hexa = f"{code:02x}" if how == "percent" else f"{code:02X}"
    percent = "\\u0025" if how == "escaped percent" else "%"
    return [("%", percent), (hexa[0], hexa[0]), (hexa[1], hexa[1])]


HOWS = ["literal", "unicode", "UNICODE", "slash", "percent", "PERCENT", "escaped percent"]
encodings = st.lists(st.sampled_from(HOWS), min_size=len(KEY), max_size=len(KEY))


def encoded(hows: list[str]) -> list[Unit]:
    units: list[Unit] = []
    for char, how in zip(KEY, hows):
        units += _units(char, "literal" if how == "slash" and char != "/" else how)
    return units


def literal(units: list[Unit]) -> str:
    return '"' + "".join(u[1] for u in units) + '"'


def split(units: list[Unit], cuts: list[int]) -> list[str]:
    points = sorted({0, len(units), *(c % (len(units) + 1) for c in cuts)})
    return [literal(units[a:b]) for a, b in zip(points, points[1:]) if b > a]


def model_at(fake: FakeOpenAI) -> OpenAIModel:
    return OpenAIModel("m", base_url=fake.base_url, api_key=KEY, max_retries=0)


async def story(fake: FakeOpenAI, folder: Path, units: list[Unit], cuts: list[int], path: str) -> None:
    """A session whose replies and errors echo the key; then every read-out and the store's bytes."""
    before = [("before: ", "before: ")]
    after = [(" after", " after")]
    reply_units = before + units + after
    if path == "stream":
        fake.answer(streamed_raw(*split(reply_units, cuts)), streamed_raw(*split(units, cuts[::-1])))
    else:
        fake.answer(reply_raw(literal(reply_units)), reply_raw(literal(units)))
    fake.answer(error_raw(400, literal([("bad key ", "bad key "), *units])))
    model = model_at(fake) if path == "stream" else RecordingModel(model_at(fake), folder / "cassette.jsonl")
    texts: list[tuple[str, str]] = []
    async with anyio.create_task_group() as group:
        async with Host(model=model, store=SqliteStore(folder / "store.sqlite")) as host:
            subscribed = anyio.Event()

            async def collect() -> None:
                async with host.subscribe() as events:
                    subscribed.set()
                    async for event in events:  # until the host closes
                        texts.append((f"a {event.kind} event", repr(event)))

            group.start_soon(collect)
            await subscribed.wait()
            chat = await host.sessions.create()
            first = await host.submit(chat, "hi")
            assert first.error is None and first.text == "before: <api key> after"
            job = await host.start(chat, "again")
            second = await job.wait()
            assert second.text == "<api key>"
            failed = await host.submit(chat, "fail")
            assert failed.error is not None and "bad key <api key>" in failed.error
            texts += [("a submission", repr(s)) for s in (first, second, failed)]
            texts += [("a job", repr((j.text, j.status, j.submission))) for j in (await host.jobs()).jobs]
            texts += [("the transcript", await host.transcript(chat))]
            texts += [("a turn", repr((t.reply, t.error))) for t in await chat.turns()]
    assert any("reply_delta" in where for where, _ in texts) or path != "stream"
    for where, text in texts:
        assert_no_key(where, text)
    for file in folder.iterdir():  # the store's files (and the cassette): every byte
        assert_no_key(file.name, file.read_bytes().decode("utf-8", "replace"))


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])
@given(
    hows=encodings,
    cuts=st.lists(st.integers(min_value=0, max_value=200), max_size=12),
    backend=st.sampled_from(["asyncio", "trio"]),
    path=st.sampled_from(["stream", "recorded"]),
)
def test_the_key_echoed_in_any_encoding_and_any_chunks_reaches_no_sink(
    fake: FakeOpenAI, hows: list[str], cuts: list[int], backend: str, path: str
) -> None:
    with tempfile.TemporaryDirectory() as folder:
        anyio.run(story, fake, Path(folder), encoded(hows), cuts, path, backend=backend)


@pytest.mark.parametrize("how", HOWS)
@pytest.mark.anyio
async def test_an_error_that_quotes_the_encoded_key_never_shows_it(fake: FakeOpenAI, how: str) -> None:
    units = encoded([how] * len(KEY))
    fake.answer(error_raw(401, literal([("Incorrect API key provided: ", "Incorrect API key provided: "), *units])))
    with pytest.raises(ModelError, match=r"Incorrect API key provided: <api key>") as info:
        await model_at(fake).respond(_request())
    for text in (str(info.value), repr(info.value.args), repr(vars(info.value))):
        assert_no_key("the error", text)


@pytest.mark.anyio
async def test_a_tool_call_whose_arguments_quote_the_escaped_key_never_shows_it(fake: FakeOpenAI) -> None:
    escaped = "".join(f"\\\\u{ord(c):04x}" for c in KEY)  # \uXXXX inside the arguments' JSON text
    fake.answer(streamed_tool_call("echo", '{"text": "' + escaped[:40], escaped[40:] + '"}'))
    chunks = [c async for c in model_at(fake).stream(_request())]
    assert repr(chunks) == "[ToolCall(name='echo', input={'text': '<api key>'}, call_id='call_fake0001', usage=None)]"


@pytest.mark.anyio
async def test_text_that_only_looks_like_the_key_is_left_alone(fake: FakeOpenAI) -> None:
    near = KEY[:-1] + "%" + " sk-proj/ %73%6b and \\u0073k"
    fake.answer(streamed_raw(*(json.dumps(c) for c in near)))
    chunks = [c async for c in model_at(fake).stream(_request())]
    assert "".join(map(str, chunks)) == near


def _request() -> ModelRequest:
    return ModelRequest(session_id="ses_0123456789ab", model="m", kind="prompt", text="hi", message=AiPromptMessage(text="hi"), history=[])


# -- the scrubber alone, over any key ------------------------------------------------------------


def encode_as_text(key: str, hows: list[str]) -> str:
    """``key`` written in decoded text (after JSON decoding): literal, %XX or \\uXXXX per char."""
    out = []
    for char, how in zip(key, hows):
        data = char.encode("utf-8", "surrogatepass")
        if how == "percent":
            out.append("".join(f"%{b:02X}" for b in data))
        elif how == "unicode":
            units = char.encode("utf-16-be")
            out.append("".join(f"\\u{int.from_bytes(units[i : i + 2], 'big'):04x}" for i in range(0, len(units), 2)))
        else:
            out.append(char)
    return "".join(out)


keys = st.text(st.characters(min_codepoint=33, max_codepoint=0x1F600, exclude_categories=["Cs"]), min_size=8, max_size=24)


@settings(max_examples=200, deadline=None)
@given(
    key=keys,
    data=st.data(),
    before=st.text(max_size=10),
    after=st.text(max_size=10),
    cuts=st.lists(st.integers(min_value=0, max_value=400), max_size=8),
)
def test_any_key_in_any_encoding_and_any_split_is_scrubbed(key: str, data: st.DataObject, before: str, after: str, cuts: list[int]) -> None:
    from host_sim.testing import KeyFilter, KeyScrubber

    scrubber = KeyScrubber(key)
    hows = data.draw(st.lists(st.sampled_from(["literal", "percent", "unicode"]), min_size=len(key), max_size=len(key)))
    text = before + encode_as_text(key, hows) + after
    whole = scrubber.text(text)
    assert "<api key>" in whole
    streamed = KeyFilter(scrubber)
    points = sorted({0, len(text), *(c % (len(text) + 1) for c in cuts)})
    shown = "".join(streamed.feed(text[a:b]) for a, b in zip(points, points[1:])) + streamed.flush()
    for out in (whole, shown):
        for view in decoded_views(out):
            assert key not in view

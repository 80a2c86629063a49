"""The API key never reaches a sink, from any source, in any encoding (API.md section 24).

A server echoes the key (HTML references named and numeric, with or without ``;``,
invisible characters between its characters, percent-encoded five times, base64 at every
offset, JSON escapes) in replies, tool-call arguments and errors; a mod's tool returns it
and raises it. Then every sink is read: the SQLite file's bytes, every PostgreSQL row, the
cassette, every event, every OpenTelemetry span (content capture on), the lineage page,
transcripts and the errors handed to the caller. The oracle (`secret_forms.holds_key`)
decodes with the standard library, independently of the host's filter.
"""

from __future__ import annotations

import json
import unicodedata
from collections.abc import Callable, Iterator
from pathlib import Path

import anyio
import attrs
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from host_sim import Host, OpenAIModel, PostgresStore, RecordingModel, SqliteStore
from host_sim.observability import CAPTURE_CONTENT_ENV
from host_sim.testing import KeyFilter, KeyScrubber
from models._fake_openai import FakeOpenAI, error_raw, reply_raw, tool_call
from modular_sdk import AiContributions, Mod, ModMetadata, ToolContext, define_mod, tool

from ..secret_forms import FORMS, KEY, assert_no_key, b64, holds_key, html_named, interleaved, percent

pytestmark = pytest.mark.anyio


@pytest.fixture
def fake() -> Iterator[FakeOpenAI]:
    server = FakeOpenAI()
    server.start()
    try:
        yield server
    finally:
        server.stop()
    assert server.unexpected == 0, f"the fake server got {server.unexpected} request(s) past its script"


@attrs.frozen
class Text:
    text: str


@attrs.frozen
class How:
    how: str


async def echo(value: Text, ctx: ToolContext) -> str:
    return f"echo: {value.text}"


async def leak(value: How, ctx: ToolContext) -> str:
    return f"the tool read {FORMS[value.how](KEY)} from its config"


async def fail(value: How, ctx: ToolContext) -> str:
    raise RuntimeError(f"cannot log in with {FORMS[value.how](KEY)}")


def leaky_mod() -> Mod:
    return define_mod(
        id="leaky",
        metadata=ModMetadata(display_name="Leaky", description="Tools that quote the API key"),
        ai=AiContributions(
            tools=[
                tool(name="echo", description="Echo text", input_type=Text, run=echo),
                tool(name="leak", description="Read the config", input_type=How, run=leak),
                tool(name="fail", description="Log in", input_type=How, run=fail),
            ]
        ),
    )


def script(fake: FakeOpenAI, how: str) -> None:
    """What the server answers to the four prompts of `story` for one encoding."""
    written = FORMS[how](KEY)
    fake.answer(reply_raw(json.dumps(f"before {written} after")))  # "reply"
    fake.answer(
        tool_call("echo", json.dumps({"text": written})),  # "tools": arguments, then an output
        tool_call("leak", json.dumps({"how": how})),
        reply_raw('"done"'),
    )
    fake.answer(tool_call("fail", json.dumps({"how": how})))  # "fail": a tool's error
    fake.answer(error_raw(400, json.dumps(f"bad key {written}")))  # "error": the server's error


async def story(host: Host, fake: FakeOpenAI, texts: list[tuple[str, str]]) -> None:
    for how in FORMS:
        script(fake, how)
        chat = await host.sessions.create(tags={"leaks": how})
        reply = await host.submit(chat, "reply")
        assert reply.error is None and reply.text is not None and "<api key>" in reply.text, (how, reply)
        tools = await host.submit(chat, "tools")
        assert tools.error is None and tools.text == "done", (how, tools)
        failed = await host.submit(chat, "fail")
        assert failed.error is not None and "<api key>" in failed.error, (how, failed)
        refused = await host.submit(chat, "error")
        assert refused.error is not None and "bad key " in refused.error and "<api key>" in refused.error, (how, refused)
        texts += [(f"the submissions of {how}", repr((reply, tools, failed, refused)))]
        texts += [(f"the transcript of {how}", await host.transcript(chat))]
        texts += [(f"the turns of {how}", repr(await chat.turns()))]
    texts += [("the lineage page", await host.lineage.html())]
    texts += [("the jobs", repr(await host.jobs()))]


async def run_story(fake: FakeOpenAI, store: SqliteStore | PostgresStore, cassette: Path, monkeypatch: pytest.MonkeyPatch) -> list[tuple[str, str]]:
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import SimpleSpanProcessor
    from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

    monkeypatch.setenv(CAPTURE_CONTENT_ENV, "true")  # message content in spans: the sink at its widest
    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    model = RecordingModel(OpenAIModel("m", base_url=fake.base_url, api_key=KEY, max_retries=0), cassette)
    texts: list[tuple[str, str]] = []
    async with anyio.create_task_group() as group:
        async with Host(mods=[leaky_mod()], model=model, store=store, tracer_provider=provider) as host:
            subscribed = anyio.Event()

            async def collect() -> None:
                async with host.subscribe() as events:
                    subscribed.set()
                    async for event in events:  # until the host closes
                        texts.append((f"a {event.kind} event", repr(event)))

            group.start_soon(collect)
            await subscribed.wait()
            await story(host, fake, texts)
    spans = exporter.get_finished_spans()
    assert spans
    texts += [(f"the span {s.name}", repr((s.attributes, s.events, s.status))) for s in spans]
    texts += [("the cassette", cassette.read_text())]
    assert any("tool_finished" in where for where, _ in texts)
    return texts


async def test_the_key_from_every_source_in_every_form_reaches_no_sink_of_a_sqlite_host(
    fake: FakeOpenAI, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    texts = await run_story(fake, SqliteStore(tmp_path / "store.sqlite"), tmp_path / "cassette.jsonl", monkeypatch)
    for where, text in texts:
        assert_no_key(where, text)
    files = list(tmp_path.iterdir())
    assert any(f.name.startswith("store.sqlite") for f in files)
    for file in files:  # the store's files (WAL included) and the cassette: every byte
        assert_no_key(file.name, file.read_bytes().decode("utf-8", "replace"))


async def test_the_key_from_every_source_in_every_form_reaches_no_postgresql_row(
    fake: FakeOpenAI, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, postgres_dsn: str
) -> None:
    import psycopg

    texts = await run_story(fake, PostgresStore(postgres_dsn), tmp_path / "cassette.jsonl", monkeypatch)
    for where, text in texts:
        assert_no_key(where, text)
    rows = 0
    with psycopg.connect(postgres_dsn, autocommit=True) as db:  # the host is closed: nothing else runs
        tables = db.execute("SELECT table_name FROM information_schema.tables WHERE table_schema = 'host_sim'").fetchall()
        assert tables
        for (table,) in tables:
            for (row,) in db.execute(f'SELECT row_to_json(t)::text FROM host_sim."{table}" AS t').fetchall():
                rows += 1
                assert_no_key(f"a row of {table}", row)
    assert rows > len(FORMS) * 4


# -- the filter alone, over any mix of the forms ----------------------------------------------------

LAYERS: dict[str, Callable[[str], str]] = {
    "percent": lambda t: percent(t),
    "html named": html_named,
    "html decimal": lambda t: "".join(f"&#{ord(c)};" if c.isalnum() else c for c in t),
    "json": lambda t: "".join(f"\\u{ord(c):04x}" if i % 2 or c in '\\"' else c for i, c in enumerate(t)),  # a backslash always escaped
    "soft hyphens": interleaved("\u00ad"),
    "zero width": interleaved("\u200b\ufeff"),
    "amp": lambda t: t.replace("&", "&amp;"),
}

keys = st.text(st.sampled_from("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-_/.~+="), min_size=16, max_size=64)


@settings(max_examples=150, deadline=None)
@given(
    key=keys,
    layers=st.lists(st.sampled_from(sorted(LAYERS)), max_size=4),
    base64_prefix=st.one_of(st.none(), st.binary(max_size=5)),
    url_safe=st.booleans(),
    before=st.text(max_size=12),
    after=st.text(max_size=12),
    cuts=st.lists(st.integers(min_value=0, max_value=10_000), max_size=8),
)
def test_any_key_under_any_layers_of_encoding_is_scrubbed_whole_and_streamed(
    key: str, layers: list[str], base64_prefix: bytes | None, url_safe: bool, before: str, after: str, cuts: list[int]
) -> None:
    written = key
    if base64_prefix is not None:
        written = b64(base64_prefix, url=url_safe)(written)
    for layer in layers:
        written = LAYERS[layer](written)
    text = f"{before} {written} {after}"
    assert holds_key(text, key)
    scrubber = KeyScrubber(key)
    whole = scrubber.text(text)
    streamed = KeyFilter(scrubber)
    points = sorted({0, len(text), *(c % (len(text) + 1) for c in cuts)})
    shown = "".join(streamed.feed(text[a:b]) for a, b in zip(points, points[1:])) + streamed.flush()
    for out in (whole, shown):
        assert "<api key>" in out
        assert not holds_key(out, key), (layers, out)


def test_text_without_the_key_is_left_exactly_as_it_was() -> None:
    scrubber = KeyScrubber(KEY)
    for text in ["&sol; %2F \\u0041 &#47 \u00ad\u200b", FORMS["base64"](KEY[:-3]), percent(KEY[:-1], 3), "caf\u00e9 &amp;amp; %%% \\"]:
        assert scrubber.text(text) == text


def test_a_hostile_text_is_read_in_a_bounded_number_of_passes() -> None:
    """Deep chains (``%2525...``, ``&amp;amp;...``), many ampersands, a megabyte of
    backslashes: each layer is no longer than the one before and there are at most 16, so
    these end (figures: benchmarks/secret_filter.py)."""
    scrubber = KeyScrubber(KEY)
    hostile = ["%" + "25" * 400_000 + "41", "&" + "amp;" * 250_000 + "sol;", "&#" * 500_000, "\\" * 1_000_000, "&ampamp" * 150_000]
    for text in hostile:
        assert scrubber.text(text) == text  # no key: left as it was
    assert scrubber.text("%" + "25" * 100_000 + percent(KEY)[1:]) == "<api key>"


INVISIBLE = [chr(c) for c in range(0x110000) if unicodedata.category(chr(c)) == "Cf"] + ["\u034f", "\u115f", "\u3164", "\ufe0f", "\U000e0100"]


@settings(max_examples=100, deadline=None)
@given(marks=st.lists(st.sampled_from(INVISIBLE), min_size=1, max_size=5))
def test_any_invisible_characters_between_the_keys_characters_are_seen_through(marks: list[str]) -> None:
    written = interleaved("".join(marks))(KEY)[: -len(marks[len(KEY) % len(marks) - 1])]  # between, not after the last
    assert KeyScrubber(KEY).text(f"key={written};") == "key=<api key>;"

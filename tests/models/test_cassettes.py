"""`RecordingModel` and `ReplayModel`: record a run once, replay it byte for byte, explain a mismatch."""

from __future__ import annotations

import re
from pathlib import Path

import anyio
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from host_sim import (
    EchoModel,
    Host,
    ModelRequest,
    OpenAIModel,
    RecordingModel,
    ReplayModel,
    ScriptedModel,
    SessionHandle,
    ToolCall,
)
from host_sim.examples import background_tasks
from host_sim.models import CassetteMismatchError, ModelError, ModelReply
from host_sim.testing import ids as _ids
from modular_sdk import AiPromptMessage, InvalidArgumentError, SerializationError, TurnFailedError

from ._fake_openai import FakeOpenAI, reply
from .conftest import CountingSecrets

HOST_ID = re.compile(r"(ses|turn|msg|call)_[0-9a-f]{12}")


async def task_run(host: Host) -> list[str]:
    """The /task story; every session's transcript, the chat's first."""
    chat = await host.sessions.create()
    await host.submit(chat, "Refactor the parser")
    started = await host.submit(chat, "/task write the tests")
    assert started.error is None, started.text
    (work,) = await chat.children()
    (report,) = await work.children()
    return [await host.transcript(s.id) for s in (chat, work, report)]


def script_task(fake: FakeOpenAI) -> None:
    fake.answer(
        reply("I split parser.py into lexer and parser."),
        reply("Wrote tests/test_parser.py; 12 tests pass."),
        reply("Added tests/test_parser.py with 12 passing tests."),
        reply("Noted: the task finished."),
    )


@pytest.mark.anyio
async def test_a_recorded_task_run_replays_to_the_same_transcripts_byte_for_byte_without_network(
    fake: FakeOpenAI, fixed_ids: CountingSecrets, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    cassette = tmp_path / "task.jsonl"
    script_task(fake)
    recorder = RecordingModel(OpenAIModel("gpt-test", base_url=fake.base_url), cassette)
    async with Host(mods=[background_tasks.mod], model=recorder) as host:
        recorded = await task_run(host)
    assert len(fake.received) == 4
    assert "Noted: the task finished." in recorded[0]
    assert len(cassette.read_text().splitlines()) == 4

    monkeypatch.setattr(_ids, "secrets", CountingSecrets(1))  # the same ids as the recording
    replay = ReplayModel(cassette)
    async with Host(mods=[background_tasks.mod], model=replay) as host:
        replayed = await task_run(host)
    assert replayed == recorded
    assert "\n".join(replayed).encode() == "\n".join(recorded).encode()
    assert len(fake.received) == 4  # not one request more
    assert replay.remaining == 0 and replay.name == "gpt-test"


def canonical_ids(text: str) -> str:
    seen: dict[str, str] = {}
    return HOST_ID.sub(lambda m: seen.setdefault(m.group(0), f"<{m.group(1)} {len(seen) + 1}>"), text)


@pytest.mark.anyio
async def test_a_replay_with_other_ids_answers_the_same_and_shows_this_runs_ids(tmp_path: Path) -> None:
    cassette = tmp_path / "task.jsonl"
    async with Host(mods=[background_tasks.mod], model=RecordingModel(EchoModel(), cassette)) as host:
        recorded = await task_run(host)
    async with Host(mods=[background_tasks.mod], model=ReplayModel(cassette)) as host:
        replayed = await task_run(host)
    # the notification body names the work session: recorded with one id, replayed with another
    assert HOST_ID.findall(recorded[0]) and recorded[0] != replayed[0]
    assert [canonical_ids(t) for t in replayed] == [canonical_ids(t) for t in recorded]


@pytest.mark.anyio
async def test_the_same_run_records_the_same_bytes_whatever_the_ids(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    files = []
    for start in (1, 5000):
        monkeypatch.setattr(_ids, "secrets", CountingSecrets(start))
        cassette = tmp_path / f"task{start}.jsonl"
        async with Host(mods=[background_tasks.mod], model=RecordingModel(EchoModel(), cassette)) as host:
            await task_run(host)
        files.append(cassette.read_bytes())
    assert files[0] == files[1]
    assert b"ses_000000000001" in files[0]  # stand-ins for the session ids a notification names


@pytest.mark.anyio
async def test_a_cassette_line_is_sorted_compact_json(tmp_path: Path) -> None:
    cassette = tmp_path / "c.jsonl"
    async with Host(model=RecordingModel(EchoModel(), cassette)) as host:
        await host.submit(await host.sessions.create(), "hi ✓")
    assert cassette.read_bytes() == (
        '{"call":1,"request":{"history":[],"instructions":null,"kind":"prompt","model":"echo",'
        '"output_schema":null,"text":"hi ✓","tool_results":[],"tools":[]},"response":{"text":"echo: hi ✓"}}\n'
    ).encode()


# -- a request that differs ------------------------------------------------------------------


@pytest.mark.anyio
async def test_a_changed_prompt_fails_the_turn_with_a_diff_of_what_changed(tmp_path: Path) -> None:
    cassette = tmp_path / "c.jsonl"
    async with Host(model=RecordingModel(EchoModel(), cassette)) as host:
        chat = await host.sessions.create()
        await host.submit(chat, "Refactor the parser")
        await host.submit(chat, "Now the lexer")
    async with Host(model=ReplayModel(cassette)) as host:
        chat = await host.sessions.create()
        assert (await host.submit(chat, "Refactor the parser")).text == "echo: Refactor the parser"
        with pytest.raises(TurnFailedError) as info:
            await chat.run("Now the tokenizer")
    reason = info.value.reason
    assert f"call 2 of the cassette {str(cassette)!r} does not match: the request's 'text' changed" in reason
    assert "record the cassette again if the change is intended" in reason
    assert '-  "text": "Now the lexer",' in reason
    assert '+  "text": "Now the tokenizer",' in reason
    assert "--- recorded call 2\n+++ this run" in reason


@pytest.mark.anyio
async def test_the_mismatch_error_carries_the_path_the_call_and_the_diff(tmp_path: Path) -> None:
    cassette = tmp_path / "c.jsonl"
    recorder = RecordingModel(EchoModel(), cassette)
    await recorder.respond(prompt("one"))
    replay = ReplayModel(cassette)
    changed = ModelRequest(
        session_id="ses_aaaaaaaaaaaa", model="echo", kind="notification", text="two",
        message=AiPromptMessage(text="two"), history=[], instructions="Be brief.",
    )  # fmt: skip
    with pytest.raises(CassetteMismatchError, match=r"the request's 'instructions', 'kind', 'text' changed") as info:
        await replay.respond(changed)
    assert info.value.path == str(cassette) and info.value.call == 1 and info.value.model == "echo"
    diff = info.value.diff.splitlines()
    assert diff[:2] == ["--- recorded call 1", "+++ this run"]
    assert {'-  "instructions": null,', '+  "instructions": "Be brief.",', '-  "kind": "prompt",',
            '+  "kind": "notification",', '-  "text": "one",', '+  "text": "two",'} <= set(diff)  # fmt: skip
    assert '   "model": "echo",' in diff  # context around the change
    assert info.value.diff in str(info.value)
    assert replay.remaining == 1  # a mismatch consumes nothing: the right request still replays
    assert await replay.respond(prompt("one")) == "echo: one"


@pytest.mark.anyio
async def test_a_request_past_the_end_of_the_cassette_says_how_many_it_holds(tmp_path: Path) -> None:
    cassette = tmp_path / "c.jsonl"
    await RecordingModel(EchoModel(), cassette).respond(prompt("one"))
    replay = ReplayModel(cassette)
    await replay.respond(prompt("one"))
    with pytest.raises(CassetteMismatchError, match=r"holds 1 model call and this is call 2, a prompt 'more'; .*record the cassette again") as info:
        await replay.respond(prompt("more"))
    assert info.value.diff == "" and info.value.call == 2


def prompt(text: str) -> ModelRequest:
    return ModelRequest(
        session_id="ses_0123456789ab", model="echo", kind="prompt", text=text, message=AiPromptMessage(text=text), history=[]
    )


# -- tool calls and errors replay too --------------------------------------------------------


@pytest.mark.anyio
async def test_tool_calls_with_host_made_call_ids_and_model_errors_replay(tmp_path: Path) -> None:
    from .test_openai_requests import MOD

    def respond(request: ModelRequest) -> str | ToolCall:
        if request.text == "explode":
            raise RuntimeError("the model broke")
        if not request.tool_results:
            return ToolCall(name="search", input={"pattern": "parse"})  # no call_id: the host makes one
        result = request.tool_results[-1]
        return f"{result.call_id} gave {result.output}"

    cassette = tmp_path / "c.jsonl"

    async def run(host: Host) -> str:
        chat: SessionHandle = await host.sessions.create()
        await host.submit(chat, "find parse")
        await host.submit(chat, "explode")
        return await host.transcript(chat)

    async with Host(mods=[MOD], model=RecordingModel(ScriptedModel(respond), cassette)) as host:
        recorded = await run(host)
    async with Host(mods=[MOD], model=ReplayModel(cassette)) as host:
        replayed = await run(host)
    assert "FAILED: model 'scripted' failed: RuntimeError: the model broke" in recorded
    assert canonical_ids(replayed) == canonical_ids(recorded)
    lines = cassette.read_text().splitlines()
    assert len(lines) == 3
    assert '"tool_results":[{"call_id":"call_000000000001"' in lines[1]
    assert lines[2].endswith('"response":{"error":"RuntimeError: the model broke"}}')


@pytest.mark.anyio
async def test_a_reply_over_max_reply_bytes_fails_the_turn_and_is_recorded_as_an_error_never_as_its_text(
    tmp_path: Path,
) -> None:
    oversized = "leak" + "x" * 200

    def respond(request: ModelRequest) -> str:
        return oversized if request.text == "big" else f"ok {request.text}"

    cassette = tmp_path / "c.jsonl"
    model = RecordingModel(ScriptedModel(respond), cassette, max_reply_bytes=100)
    async with Host(model=model, max_reply_bytes=100) as host:
        chat = await host.sessions.create()
        big = await host.submit(chat, "big")
        small = await host.submit(chat, "small")
    assert big.turn is not None and big.turn.status == "failed" and big.error is not None
    assert "over the limit of 100 bytes (Host(max_reply_bytes=100))" in big.error  # the host's own error
    assert small.error is None
    text = cassette.read_text()
    assert "leak" not in text and "xxxxxxxx" not in text
    lines = text.splitlines()
    assert len(lines) == 2 and '"response":{"text":"ok small"}' in lines[1]
    assert '"response":{"error":"the model\'s reply was 204 bytes, over the limit of 100 bytes' in lines[0]
    async with Host(model=ReplayModel(cassette), max_reply_bytes=100) as host:  # the replay fails that turn too
        chat = await host.sessions.create()
        replayed = await host.submit(chat, "big")
        assert replayed.error is not None and "not recorded" in replayed.error
        assert (await host.submit(chat, "small")).text == "ok small"
    with pytest.raises(InvalidArgumentError, match="max_reply_bytes must be an int >= 1") as info:
        RecordingModel(EchoModel(), cassette, max_reply_bytes=0)
    assert info.value.argument == "max_reply_bytes"


# -- bad cassettes and arguments -------------------------------------------------------------


def test_a_missing_cassette_says_how_to_record_one(tmp_path: Path) -> None:
    path = tmp_path / "none.jsonl"
    with pytest.raises(InvalidArgumentError, match=rf"there is no cassette at {re.escape(repr(str(path)))}; record one first") as info:
        ReplayModel(path)
    assert info.value.argument == "path" and info.value.value == path


GOOD = '{"call":1,"request":{},"response":{"text":"hi"}}'


@pytest.mark.parametrize(
    ("text", "match"),
    [
        ("{oops\n", r"line 1 of the cassette .* is not a recorded model call \(not JSON: .* at column 2\)"),
        ("[1]\n", "a line is an object with exactly 'call', 'request' and 'response'"),
        (GOOD + "\n" + GOOD + "\n", r"line 2 .*'call' is 1, expected 2"),
        (GOOD + "\n\n", r"line 2 .*not JSON"),
        ('{"call":true,"request":{},"response":{"text":"hi"}}', "'call' is True, expected 1"),
        ('{"call":1,"request":[],"response":{"text":"hi"}}', "'request' is not an object"),
        ('{"call":1,"request":{},"response":{"text":1}}', "'response.text' is not a string"),
        ('{"call":1,"request":{},"response":{"error":null}}', "'response.error' is not a string"),
        ('{"call":1,"request":{},"response":{"text":"a","error":"b"}}', "exactly one of 'text', 'tool_call', 'error'"),
        ('{"call":1,"request":{},"response":{"tool_call":{"name":"t"}}}', r"'response.tool_call' is not \{'name'"),
        ('{"call":1,"request":{},"response":{"other":1}}', "exactly one of"),
        ("[" * 100_000 + "\n", "nested too deeply"),
    ],
)
def test_a_bad_line_is_a_serialization_error_naming_the_line(tmp_path: Path, text: str, match: str) -> None:
    path = tmp_path / "bad.jsonl"
    path.write_text(text)
    with pytest.raises(SerializationError, match=match) as info:
        ReplayModel(path)
    assert info.value.type_name == "cassette line"
    assert "record the cassette again" in str(info.value)


def test_a_cassette_that_is_not_utf8_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "bin.jsonl"
    path.write_bytes(b"\xff\xfe\x00")
    with pytest.raises(SerializationError, match=r"is not UTF-8 text \(byte 0\)"):
        ReplayModel(path)


def test_an_empty_cassette_replays_nothing_and_is_named_replay(tmp_path: Path) -> None:
    path = tmp_path / "empty.jsonl"
    path.write_text("")
    model = ReplayModel(path)
    assert model.name == "replay" and model.remaining == 0
    assert repr(model) == f"ReplayModel({str(path)!r})"


def test_recording_needs_a_model_and_an_existing_folder(tmp_path: Path) -> None:
    with pytest.raises(InvalidArgumentError, match="RecordingModel records a model .* got 'echo'") as info:
        RecordingModel("echo", tmp_path / "c.jsonl")  # type: ignore[arg-type]
    assert info.value.argument == "inner"
    with pytest.raises(InvalidArgumentError, match="its folder .* does not exist; create it first") as info:
        RecordingModel(EchoModel(), tmp_path / "no" / "c.jsonl")
    assert info.value.argument == "path"
    with pytest.raises(InvalidArgumentError, match="cassette's path as a str or os.PathLike, got 3"):
        RecordingModel(EchoModel(), 3)  # type: ignore[arg-type]
    with pytest.raises(InvalidArgumentError, match="cassette's path as a str or os.PathLike, got ''"):
        ReplayModel("")


def test_a_new_recording_replaces_the_old_cassette(tmp_path: Path) -> None:
    path = tmp_path / "c.jsonl"
    path.write_text("old\n")
    model = RecordingModel(EchoModel(), path)
    assert path.read_text() == ""
    assert model.name == "echo" and model.path == str(path)
    assert repr(model) == f"RecordingModel(EchoModel(), {str(path)!r})"


# -- property: any session's cassette is deterministic and replays its own answers -----------

texts = st.text(st.characters(exclude_categories=["Cs"]), max_size=30) | st.sampled_from(
    # host ids inside text, a stand-in's own spelling, and line breaks JSON does not escape
    ["ses_0123456789ab", "see turn_abcdefabcdef.", "call_000000000001", "x\nses_ffffffffffff", "a\u2028b", "\x85\x1c"]
)
replies = texts | st.builds(
    lambda name, value, call_id: ToolCall(name=name, input={"v": value}, call_id=call_id),
    st.text(min_size=1, max_size=8),
    st.none() | st.integers(-(2**63), 2**63 - 1) | texts,  # JSON from outside holds 64-bit ints (API §19)
    st.none() | st.sampled_from(["call_srv", "call_0123456789ab"]),
)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(calls=st.lists(st.tuples(texts, replies), max_size=6), session=st.sampled_from(["ses_111111111111", "ses_222222222222"]))
def test_recording_is_deterministic_and_replay_returns_each_answer(
    tmp_path: Path, calls: list[tuple[str, str | ToolCall]], session: str
) -> None:
    async def record(path: Path, session_id: str) -> list[ModelReply]:
        answers = iter([answer for _, answer in calls])
        recorder = RecordingModel(ScriptedModel(lambda request: next(answers)), path)
        got = []
        for text, _ in calls:
            request = ModelRequest(
                session_id=session_id, model="scripted", kind="prompt", text=f"{text} (in {session_id})",
                message=AiPromptMessage(text=text), history=[],
            )  # fmt: skip
            got.append(await recorder.respond(request))
        return got

    async def replay(path: Path) -> list[ModelReply]:
        model = ReplayModel(path)
        got = []
        for text, _ in calls:
            request = ModelRequest(
                session_id="ses_999999999999", model="scripted", kind="prompt", text=f"{text} (in ses_999999999999)",
                message=AiPromptMessage(text=text), history=[],
            )  # fmt: skip
            got.append(await model.respond(request))
        assert model.remaining == 0
        return got

    first, second = tmp_path / "a.jsonl", tmp_path / "b.jsonl"
    answered = anyio.run(record, first, session)
    anyio.run(record, second, "ses_333333333333")
    assert first.read_bytes() == second.read_bytes()
    assert anyio.run(replay, first) == answered
    assert len(first.read_bytes().splitlines()) == len(calls)


def test_a_recorded_error_is_a_model_error_on_replay(tmp_path: Path) -> None:
    path = tmp_path / "c.jsonl"
    path.write_text('{"call":1,"request":' + _request_json("x") + ',"response":{"error":"RuntimeError: boom"}}\n')

    async def main() -> None:
        with pytest.raises(ModelError, match="^RuntimeError: boom$"):
            await ReplayModel(path).respond(prompt("x"))

    anyio.run(main)


def _request_json(text: str) -> str:
    return (
        '{"history":[],"instructions":null,"kind":"prompt","model":"echo","output_schema":null,'
        f'"text":"{text}","tool_results":[],"tools":[]}}'
    )

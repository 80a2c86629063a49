"""``--model`` and ``--record`` on ``host-sim demo``, ``run`` and ``chat``."""

from __future__ import annotations

import argparse
import re
from collections.abc import Iterator
from pathlib import Path

import pytest

from host_sim import EchoModel, OpenAIModel, ReplayModel
from host_sim._cli import build_parser, main
from host_sim.cli.testing import model_spec, run_chat

from ._fake_openai import FakeOpenAI, error, reply, streamed_reply

ROOT = Path(__file__).resolve().parents[2]
TASK = str(ROOT / "host_sim" / "examples" / "background_tasks.py")
HOST_ID = re.compile(r"(ses|turn|msg|call)_[0-9a-f]{12}")


@pytest.fixture(autouse=True)
def _in_a_fresh_folder(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("HOST_SIM_STORE", raising=False)
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)


def canonical_ids(text: str) -> str:
    seen: dict[str, str] = {}
    return HOST_ID.sub(lambda m: seen.setdefault(m.group(0), f"<{m.group(1)} {len(seen) + 1}>"), text)


# -- the spec --------------------------------------------------------------------------------


def test_echo_is_the_offline_model() -> None:
    assert isinstance(model_spec("echo"), EchoModel)


@pytest.mark.parametrize(
    ("spec", "name", "base_url"),
    [
        ("openai:gpt-4o-mini", "gpt-4o-mini", "https://api.openai.com/v1"),
        ("openai:llama3.2:3b@http://localhost:11434/v1", "llama3.2:3b", "http://localhost:11434/v1"),
        ("openai:org@model@https://example.test/v1/", "org@model", "https://example.test/v1"),
    ],
)
def test_openai_specs_name_the_model_and_the_server(spec: str, name: str, base_url: str) -> None:
    model = model_spec(spec)
    assert isinstance(model, OpenAIModel) and model.name == name and model.base_url == base_url


def test_replay_reads_the_cassette(tmp_path: Path) -> None:
    (tmp_path / "c.jsonl").write_text("")
    model = model_spec(f"replay:{tmp_path / 'c.jsonl'}")
    assert isinstance(model, ReplayModel) and model.remaining == 0


@pytest.mark.parametrize(
    ("spec", "message"),
    [
        ("gpt-4o", "'gpt-4o' is not a model; pass echo, openai:MODEL, openai:MODEL@BASE_URL or replay:CASSETTE"),
        ("Echo", "'Echo' is not a model"),
        ("openai", "'openai' is not a model"),
        ("openai:", "'openai:' names no model; pass openai:MODEL"),
        ("openai:@http://localhost:8000/v1", "names no model"),
        ("openai:m@http://", "OpenAIModel's base_url must be an http(s) URL without query, got 'http://'"),
        ("replay:", "'replay:' names no cassette"),
        ("replay:missing.jsonl", "there is no cassette at 'missing.jsonl'; record one first"),
    ],
)
def test_a_bad_spec_says_what_to_pass(spec: str, message: str) -> None:
    with pytest.raises(argparse.ArgumentTypeError, match=re.escape(message)):
        model_spec(spec)


@pytest.mark.parametrize("command", [["demo"], ["run", TASK, "-m", "hi"], ["chat", TASK]])
@pytest.mark.parametrize(
    ("options", "message"),
    [
        (["--model", "gpt-4o"], "argument --model: 'gpt-4o' is not a model"),
        (["--model", "replay:missing.jsonl"], "argument --model: there is no cassette at 'missing.jsonl'"),
        (["--record", "no/such/folder/c.jsonl"], "argument --record: cannot record to 'no/such/folder/c.jsonl'"),
        (["--model", "replay:c.jsonl", "--record", "d.jsonl"], "--record records the model that answers"),
        (["--record", "d.jsonl", "--model", "replay:c.jsonl"], "--record records the model that answers"),
    ],
)
def test_bad_model_options_are_usage_errors_without_a_traceback(
    command: list[str], options: list[str], message: str, capsys: pytest.CaptureFixture[str]
) -> None:
    Path("c.jsonl").write_text("")
    with pytest.raises(SystemExit) as exit_:
        main([*command, *options])
    err = capsys.readouterr().err
    assert exit_.value.code == 2
    assert message in err and "Traceback" not in err
    assert not Path("d.jsonl").exists()  # nothing recorded on a usage error


# -- record then replay from the command line ------------------------------------------------


def test_demo_records_then_replays_the_same_output(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["demo", "--no-store", "--record", "demo.jsonl"]) == 0
    recorded = capsys.readouterr().out
    assert len(Path("demo.jsonl").read_text().splitlines()) == 4
    assert main(["demo", "--no-store", "--model", "replay:demo.jsonl", "--backend", "trio"]) == 0
    replayed = capsys.readouterr().out
    assert canonical_ids(replayed) == canonical_ids(recorded)


def test_run_against_a_server_records_and_the_replay_needs_no_server(
    fake: FakeOpenAI, capsys: pytest.CaptureFixture[str]
) -> None:
    fake.answer(reply("I split parser.py in two."), reply("Wrote 12 tests."), reply("12 tests added."), reply("Noted."))
    spec = f"openai:local-model@{fake.base_url}"
    steps = ["-m", "Refactor the parser", "-m", "/task write the tests", "--transcript"]
    assert main(["run", TASK, "--no-store", "--model", spec, "--record", "run.jsonl", *steps]) == 0
    recorded = capsys.readouterr().out
    assert "I split parser.py in two." in recorded and "Noted." in recorded
    assert len(fake.received) == 4

    assert main(["run", TASK, "--no-store", "--model", "replay:run.jsonl", *steps]) == 0
    assert canonical_ids(capsys.readouterr().out) == canonical_ids(recorded)
    assert len(fake.received) == 4

    assert main(["run", TASK, "--no-store", "--model", "replay:run.jsonl", "-m", "Refactor the lexer"]) == 1
    out = capsys.readouterr().out
    assert "call 1 of the cassette 'run.jsonl' does not match" in out
    assert '+  "text": "Refactor the lexer",' in out


def test_run_reports_a_refusing_server_as_a_failed_turn(fake: FakeOpenAI, capsys: pytest.CaptureFixture[str]) -> None:
    fake.answer(error(400, "context length exceeded"))
    code = main(["run", "--no-store", "--model", f"openai:m@{fake.base_url}", "-m", "hi"])
    out = capsys.readouterr().out
    assert code == 1
    assert "error: turn 0 failed: model 'm' failed: model 'm' at " in out
    assert "400 Bad Request: 'context length exceeded'" in out


def test_chat_talks_to_the_model_it_is_given(fake: FakeOpenAI, capsys: pytest.CaptureFixture[str]) -> None:
    fake.answer(reply("Hello from the server."))
    lines: Iterator[str] = iter(["hello", "/quit"])
    args = build_parser().parse_args(["chat", TASK, "--no-store", "--model", f"openai:m@{fake.base_url}"])
    assert run_chat(args, lambda prompt: next(lines)) == 0
    assert "Hello from the server." in capsys.readouterr().out
    # chat streams: the reply prints line by line as it arrives (a server may answer whole)
    assert fake.bodies == [{"model": "m", "messages": [{"role": "user", "content": "hello"}], "stream": True, "stream_options": {"include_usage": True}}]


def test_chat_prints_a_streamed_reply_line_by_line_as_it_arrives_and_only_once(
    fake: FakeOpenAI, capsys: pytest.CaptureFixture[str]
) -> None:
    fake.answer(streamed_reply("The parser ", "lives in\nparser", ".py"))
    lines: Iterator[str] = iter(["where is the parser?", "/quit"])
    args = build_parser().parse_args(["chat", TASK, "--no-store", "--model", f"openai:m@{fake.base_url}"])
    assert run_chat(args, lambda prompt: next(lines)) == 0
    out = capsys.readouterr().out
    assert "The parser lives in\nparser.py\n" in out  # from the host's reply_delta events
    assert out.count("parser.py") == 1  # not printed again when the turn returns

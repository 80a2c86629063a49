"""``mod_host(mod, cassette=..., model=...)``: record once against a real model, replay from then on."""

from __future__ import annotations

import contextlib
from pathlib import Path

import pytest

from host_sim import EchoModel, RecordingModel, ReplayModel
from host_sim.examples import background_tasks
from host_sim.pytest_plugin import ModHost
from modular_sdk import InvalidArgumentError

from ._fake_openai import FakeOpenAI, reply

pytest_plugins = ["pytester"]


@pytest.mark.anyio
async def test_a_missing_cassette_is_recorded_with_the_model_then_replayed(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("CI", raising=False)
    async with contextlib.AsyncExitStack() as stack:
        mod_host = ModHost(stack, folder=tmp_path)
        host = await mod_host(background_tasks.mod, cassette="cassettes/task.jsonl", model=EchoModel())
        assert isinstance(host.model, RecordingModel)
        assert host.model.path == str(tmp_path / "cassettes" / "task.jsonl")  # next to the test, folder made
        await host.submit(await host.sessions.create(), "hello")

        again = await mod_host(background_tasks.mod, cassette="cassettes/task.jsonl", model=EchoModel())
        assert isinstance(again.model, ReplayModel)
        assert (await again.submit(await again.sessions.create(), "hello")).text == "echo: hello"


@pytest.mark.anyio
async def test_record_cassettes_records_an_existing_cassette_again(tmp_path: Path) -> None:
    (tmp_path / "c.jsonl").write_text("")
    async with contextlib.AsyncExitStack() as stack:
        host = await ModHost(stack, folder=tmp_path, record=True)(cassette="c.jsonl", model=EchoModel())
        assert isinstance(host.model, RecordingModel)


@pytest.mark.anyio
async def test_a_missing_cassette_without_a_model_says_to_pass_one(tmp_path: Path) -> None:
    async with contextlib.AsyncExitStack() as stack:
        with pytest.raises(InvalidArgumentError, match="there is no cassette at .* and no model to record it with") as info:
            await ModHost(stack, folder=tmp_path)(cassette="c.jsonl")
    assert info.value.argument == "cassette" and info.value.value == "c.jsonl"


@pytest.mark.anyio
@pytest.mark.parametrize("ci", ["true", "1"])
async def test_in_ci_a_missing_cassette_fails_instead_of_recording(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, ci: str
) -> None:
    monkeypatch.setenv("CI", ci)
    async with contextlib.AsyncExitStack() as stack:
        with pytest.raises(InvalidArgumentError, match="CI replays cassettes but never records them"):
            await ModHost(stack, folder=tmp_path)(cassette="c.jsonl", model=EchoModel())
    assert not (tmp_path / "c.jsonl").exists()


@pytest.mark.anyio
async def test_a_cassette_that_is_not_a_path_is_refused(tmp_path: Path) -> None:
    async with contextlib.AsyncExitStack() as stack:
        with pytest.raises(InvalidArgumentError, match="mod_host's cassette is a path .* got 3"):
            await ModHost(stack, folder=tmp_path)(cassette=3)  # type: ignore[arg-type]


USER_TEST = '''
import pytest

from host_sim import OpenAIModel
from host_sim.pytest_plugin import ModHost

from host_sim.examples import background_tasks

BASE_URL = {base_url!r}


@pytest.mark.anyio
async def test_task(mod_host: ModHost) -> None:
    host = await mod_host(background_tasks.mod, cassette="cassettes/task.jsonl", model=OpenAIModel("local", base_url=BASE_URL))
    chat = await host.sessions.create()
    assert (await host.submit(chat, "Refactor the parser")).text == "Split it in two."
    assert (await host.submit(chat, "/task write the tests")).error is None
    note = await mod_host.last_notification(chat)
    assert note.title == "Task finished: write the tests"
'''


def test_a_mod_author_records_once_and_replays_from_then_on(
    pytester: pytest.Pytester, fake: FakeOpenAI, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("CI", raising=False)
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    pytester.makepyfile(test_user=USER_TEST.format(base_url=fake.base_url))
    fake.answer(reply("Split it in two."), reply("Wrote the tests."), reply("Tests written."), reply("Noted."))

    first = pytester.runpytest_subprocess("-p", "no:cacheprovider", "-W", "error")
    first.assert_outcomes(passed=2)  # asyncio records, trio replays what asyncio recorded
    cassette = pytester.path / "cassettes" / "task.jsonl"
    recorded = cassette.read_bytes()
    assert len(recorded.splitlines()) == 4 and len(fake.received) == 4

    second = pytester.runpytest_subprocess("-p", "no:cacheprovider", "-W", "error")
    second.assert_outcomes(passed=2)
    assert len(fake.received) == 4 and cassette.read_bytes() == recorded  # no network, nothing rewritten

    cassette.unlink()
    monkeypatch.setenv("CI", "true")
    in_ci = pytester.runpytest_subprocess("-p", "no:cacheprovider")
    in_ci.assert_outcomes(failed=2)
    in_ci.stdout.fnmatch_lines(["*CI replays cassettes but never records them*"])
    assert len(fake.received) == 4

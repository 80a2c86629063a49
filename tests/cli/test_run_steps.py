"""``host-sim run``: palette commands, views, tool calls in the output and the transcript,
progress on a terminal and none elsewhere."""

from __future__ import annotations

from pathlib import Path

import anyio

from host_sim import Host, ModelRequest, RecordingModel, ScriptedModel, ToolCall

from ._support import FIXTURES, Installed, host_sim, no_traceback
from ._terminal import Terminal

WORKBENCH = str(FIXTURES / "workbench.py")


def test_palette_and_views_run_in_command_line_order(installed: Installed, user_dir: Path) -> None:
    result = host_sim(
        installed, user_dir, "run", WORKBENCH, "--no-store",
        "--palette", "notes.scratch", "--view", "meter", "--data", '{"done": 3}', "-m", "/fast",
    )  # fmt: skip
    assert result.code == 0, result.err
    assert result.out.splitlines()[1:] == ["> palette notes.scratch", "scratch ready", "> view meter", "###", "> /fast", "fast done"]


def test_a_failing_view_or_unknown_palette_command_fails_the_run(installed: Installed, user_dir: Path) -> None:
    result = host_sim(
        installed, user_dir, "run", WORKBENCH, "--no-store", "--view", "meter", "--data", "1", "--palette", "notes.scrach"
    )
    no_traceback(result)
    assert result.code == 1
    assert "error: view 'meter' of mod 'workbench' failed: ValueError: meter needs {'done': int}, got 1" in result.out
    assert "error: unknown palette command 'notes.scrach'; did you mean 'notes.scratch'?" in result.out


def test_view_without_data_and_data_without_view_are_usage_errors(installed: Installed, user_dir: Path) -> None:
    alone = host_sim(installed, user_dir, "run", WORKBENCH, "--view", "meter")
    assert alone.code == 2 and "--view meter needs its data: add --data JSON after it" in alone.err
    stray = host_sim(installed, user_dir, "run", WORKBENCH, "--data", "{}")
    assert stray.code == 2 and "--data '{}' must follow a --view ID" in stray.err
    bad = host_sim(installed, user_dir, "run", WORKBENCH, "--view", "meter", "--data", "{nope")
    assert bad.code == 2 and "--data '{nope' is not JSON" in bad.err
    nothing = host_sim(installed, user_dir, "run", WORKBENCH)
    assert nothing.code == 2 and "nothing to do: pass -m TEXT, --palette ID, --view ID --data JSON, --tool NAME --input JSON" in nothing.err


def test_a_palette_command_sent_with_m_says_how_to_run_it(installed: Installed, user_dir: Path) -> None:
    result = host_sim(installed, user_dir, "run", WORKBENCH, "--no-store", "-m", "/notes.scratch")
    assert result.code == 1
    assert (
        "error: '/notes.scratch' is a palette command, not a slash command: palette commands run "
        "without a chat; run it with: host-sim run SPEC... --palette notes.scratch"
    ) in result.out


def _record_a_tool_call(cassette: Path) -> None:
    """A cassette of a model that calls the workbench's ``count`` tool, then answers."""

    def respond(request: ModelRequest) -> str | ToolCall:
        if request.tool_results:
            return f"the text has {request.tool_results[-1].output}"
        return ToolCall(name="count", input={"text": "hello"})

    async def record() -> None:
        async with Host(mods=[WORKBENCH], model=RecordingModel(ScriptedModel(respond), cassette)) as host:
            chat = await host.sessions.create()
            await host.submit(chat, "How long is hello?")

    anyio.run(record)


def test_tool_calls_show_as_they_happen_and_in_the_transcript(installed: Installed, user_dir: Path) -> None:
    cassette = user_dir / "tools.jsonl"
    _record_a_tool_call(cassette)
    result = host_sim(
        installed, user_dir, "run", WORKBENCH, "--no-store", "--model", f"replay:{cassette}",
        "-m", "How long is hello?", "--transcript",
    )  # fmt: skip
    assert result.code == 0, result.out + result.err
    lines = result.out.splitlines()
    assert lines[1:4] == [
        "> How long is hello?",
        """  (tool 'count' {"text": "hello"} -> 5 characters)""",
        "the text has 5 characters",
    ]
    transcript = result.out.split("== transcript of ", 1)[1].splitlines()[1:]
    assert transcript[1].startswith("    id turn_")  # the id forget and lineage --forward take
    del transcript[1]
    assert transcript == [
        "#0 [user] How long is hello?",
        """    tool 'count' {"text": "hello"} -> 5 characters""",
        "    model:",
        "      the text has 5 characters",
    ]


def test_a_later_run_on_the_store_shows_the_tool_calls_an_earlier_run_made(installed: Installed, user_dir: Path) -> None:
    cassette, store = user_dir / "tools.jsonl", user_dir / "chats.sqlite"
    _record_a_tool_call(cassette)
    first = host_sim(
        installed, user_dir, "run", WORKBENCH, "--store", str(store), "--model", f"replay:{cassette}",
        "-m", "How long is hello?",
    )  # fmt: skip
    assert first.code == 0, first.out + first.err
    session = first.out.splitlines()[0].removeprefix("session ")
    later = host_sim(
        installed, user_dir, "run", WORKBENCH, "--store", str(store), "--session", session, "-m", "/fast", "--transcript",
    )  # fmt: skip  # another process: only the store remembers the tool call
    assert later.code == 0, later.out + later.err
    transcript = later.out.split("== transcript of ", 1)[1].splitlines()[1:]
    del transcript[1]  # the turn's id
    assert transcript[:4] == [
        "#0 [user] How long is hello?",
        """    tool 'count' {"text": "hello"} -> 5 characters""",
        "    model:",
        "      the text has 5 characters",
    ]


def test_a_terminal_shows_the_elapsed_time_of_a_running_step(installed: Installed, user_dir: Path) -> None:
    terminal = Terminal(installed, user_dir, "run", WORKBENCH, "--no-store", "-m", "/slow 1.5")
    try:
        terminal.expect("/slow 1.5  0.")
        terminal.expect("/slow 1.5  1.")
        terminal.expect("slow done")
        assert terminal.wait() == 0
    finally:
        terminal.close()


def test_no_progress_line_when_not_on_a_terminal(installed: Installed, user_dir: Path) -> None:
    result = host_sim(installed, user_dir, "run", WORKBENCH, "--no-store", "-m", "/slow 0.5")
    assert result.code == 0
    assert result.err == ""
    assert "\r" not in result.out

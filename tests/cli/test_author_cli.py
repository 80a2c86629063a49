"""A new mod author's first hour with the CLI (issue 36): typeahead of argument values,
turn ids, tools and widgets tried offline, a failing handler's line, stores by URL."""

from __future__ import annotations

import json
import re
from pathlib import Path

from ._support import FIXTURES, Installed, host_sim, no_traceback
from ._terminal import Terminal

AUTHOR = str(FIXTURES / "author.py")


def test_tab_in_chat_completes_a_commands_argument_from_its_completer(installed: Installed, user_dir: Path) -> None:
    terminal = Terminal(installed, user_dir, "chat", "--no-store", AUTHOR)
    try:
        terminal.expect("type /? for commands")
        terminal.expect("> ")
        terminal.type("/explain pi\t")  # one value starts with 'pi': Tab types the rest
        terminal.expect("zza")
        terminal.type("\r")
        terminal.expect("pizza is food")
        terminal.type("/explain pasta al f\t")  # a value of several words: the word under the cursor
        terminal.expect("forno")
        terminal.type("\r")
        terminal.expect("pasta al forno is food")
    finally:
        terminal.close()


def _stored_chat(installed: Installed, user_dir: Path) -> tuple[str, str]:
    """A stored session of one prompt and one command; its id and ``run --transcript``'s output."""
    result = host_sim(
        installed, user_dir, "run", AUTHOR, "--store", "chats.sqlite", "-m", "hello", "-m", "/explain paella", "--transcript"
    )
    assert result.code == 0, result.out + result.err
    return result.out.splitlines()[0].removeprefix("session "), result.out


def test_every_turn_shows_the_id_that_forget_and_lineage_take(installed: Installed, user_dir: Path) -> None:
    session, out = _stored_chat(installed, user_dir)
    transcript = out.split("== transcript of ", 1)[1]
    turn_ids = re.findall(r"^    id (turn_[0-9a-f]{12})$", transcript, re.MULTILINE)
    assert len(turn_ids) == 1, transcript  # the prompt's turn (a command is an invocation, not a turn)

    listed = json.loads(host_sim(installed, user_dir, "lineage", "--store", "chats.sqlite", "--json").out)
    (stored,) = listed["sessions"]
    assert stored["id"] == session
    assert stored["turns"] == [{"id": turn_ids[0], "ordinal": 0, "status": "completed"}]

    forward = host_sim(installed, user_dir, "lineage", "--store", "chats.sqlite", "--forward", turn_ids[0])
    assert forward.code == 0, forward.err  # the id shown is one the commands take

    page = host_sim(installed, user_dir, "lineage", "--store", "chats.sqlite", "--html", "page.html")
    assert page.code == 0, page.err
    data = re.search(r'<script type="application/json" id="lineage-data">(.*?)</script>', (user_dir / "page.html").read_text())
    assert data is not None
    (row,) = json.loads(data[1])["sessions"]
    assert [t["id"] for t in row["turns"]] == turn_ids


def test_trace_of_a_session_without_a_trace_says_the_session_has_none(installed: Installed, user_dir: Path) -> None:
    session, _ = _stored_chat(installed, user_dir)
    result = host_sim(installed, user_dir, "trace", "--store", "chats.sqlite", session)
    assert result.code == 1
    assert result.err.startswith(f"host-sim trace: session {session!r} has no trace: no task started it"), result.err
    unknown = host_sim(installed, user_dir, "trace", "--store", "chats.sqlite", "ses_000000000000")
    assert "no trace is found by 'ses_000000000000'" in unknown.err  # an id the store does not know, as before


def test_a_command_that_raises_names_the_mods_file_and_line(installed: Installed, user_dir: Path) -> None:
    result = host_sim(installed, user_dir, "run", AUTHOR, "--no-store", "-m", "/boom")
    assert result.code == 1
    line = next(n for n, text in enumerate(Path(AUTHOR).read_text().splitlines(), 1) if 'table[argument or "b"]' in text)
    assert f"error: command /boom of mod 'author' failed: KeyError: 'b' (raised at {AUTHOR}:{line})" in result.out
    no_traceback(result)


def test_run_calls_a_tool_as_the_host_would_and_prints_its_output(installed: Installed, user_dir: Path) -> None:
    result = host_sim(installed, user_dir, "run", AUTHOR, "--no-store", "--tool", "note", "--input", '{"text": "hello"}')
    assert result.code == 0, result.out + result.err
    assert result.out.splitlines()[1:] == [
        """> tool note {"text": "hello"}""",
        """  (tool 'note' {"text": "hello"} -> noted 5 characters)""",
        "noted 5 characters",
    ]


def test_run_tool_goes_through_the_hosts_hooks_and_input_checks(installed: Installed, user_dir: Path) -> None:
    result = host_sim(
        installed, user_dir, "run", AUTHOR, "--no-store",
        "--tool", "delegate", "--input", '{"text": "x"}',
        "--tool", "note", "--input", '{"txt": 1}',
        "--tool", "nope", "--input", "{}",
    )  # fmt: skip
    assert result.code == 1
    errors = [line for line in result.out.splitlines() if line.startswith("error: ")]
    assert len(errors) == 3, result.out
    assert "was denied by mod 'author': mods may not spawn sessions in this workspace" in errors[0]  # the hook ran
    assert errors[1].startswith("error: invalid input for tool 'note': ")
    assert errors[2] == "error: unknown tool 'nope'; the tools are: 'note', 'delegate'"
    no_traceback(result)


def test_run_renders_a_widget_from_data_structured_strictly(installed: Installed, user_dir: Path) -> None:
    result = host_sim(
        installed, user_dir, "run", AUTHOR, "--no-store",
        "--widget", "score", "--data", '{"home": 2, "away": 1}',
        "--widget", "score", "--data", '{"home": "2", "away": 1}',
    )  # fmt: skip
    assert result.code == 1
    assert result.out.splitlines()[1:3] == ["> widget score", "2 : 1"]
    assert "error: the data for widget 'score' of mod 'author' does not fit Score: " in result.out
    assert "field 'home': expected a JSON integer, got '2' (str)" in result.out  # strict: no "2" -> 2


def test_run_tool_and_widget_options_say_what_they_need(installed: Installed, user_dir: Path) -> None:
    alone = host_sim(installed, user_dir, "run", AUTHOR, "--no-store", "--tool", "note")
    assert alone.code == 2 and "--tool note needs its input: add --input JSON after it" in alone.err
    stray = host_sim(installed, user_dir, "run", AUTHOR, "--no-store", "--view", "v", "--input", "{}")
    assert stray.code == 2 and "--input '{}' must follow a --tool NAME" in stray.err
    bare = host_sim(installed, user_dir, "run", AUTHOR, "--no-store", "--widget", "score")
    assert bare.code == 2 and "--widget score needs its data: add --data JSON after it" in bare.err


def test_a_run_of_views_alone_creates_no_session_and_leaves_no_store(installed: Installed, user_dir: Path) -> None:
    failed = host_sim(installed, user_dir, "run", AUTHOR, "--view", "nope", "--data", "{}")
    assert failed.code == 1 and "error: unknown view 'nope'" in failed.out
    assert not failed.out.startswith("session ")
    explicit = host_sim(installed, user_dir, "run", AUTHOR, "--store", "s.sqlite", "--view", "nope", "--data", "{}")
    assert explicit.code == 1
    assert sorted(p.name for p in user_dir.iterdir()) == []  # no .host-sim/, no s.sqlite, no -lock


def test_a_checkout_ignores_the_page_the_quick_start_writes() -> None:
    ignored = (Path(__file__).resolve().parents[2] / ".gitignore").read_text().splitlines()
    assert "/lineage.html" in ignored  # README: host-sim lineage --html lineage.html in the checkout


def test_check_without_the_mcp_extra_says_the_servers_were_not_started(installed: Installed, user_dir: Path) -> None:
    """The wheel without extras: no host could start the servers, which is no fault of the mod."""
    result = host_sim(installed, user_dir, "check", str(FIXTURES / "servers.py"))
    assert result.code == 0, result.out + result.err
    assert "(not checked: starting the MCP servers of mod 'servers' needs the 'mcp' package" in result.out
    assert "pip install 'modular-chat-sdk[mcp]'" in result.out

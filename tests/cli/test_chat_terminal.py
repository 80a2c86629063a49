"""``host-sim chat`` at a terminal: Tab, commands in the background, Ctrl-C and Ctrl-D."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from ._support import FIXTURES, Installed
from ._terminal import Terminal

WORKBENCH = str(FIXTURES / "workbench.py")


@pytest.fixture
def chat(installed: Installed, user_dir: Path) -> Iterator[Terminal]:
    terminal = Terminal(installed, user_dir, "chat", "--no-store", WORKBENCH)
    terminal.expect("type /? for commands")
    terminal.expect("> ")
    yield terminal
    terminal.close()


def test_tab_after_slash_s_completes_the_prefix_match_not_a_fuzzy_one(chat: Terminal) -> None:
    chat.type("/sl\t")
    chat.expect("/slow ")
    chat.type("0\r")
    chat.expect("slow done")


def test_tab_after_slash_t_keeps_what_was_typed(installed: Installed, user_dir: Path) -> None:
    terminal = Terminal(installed, user_dir, "chat", "--no-store", "host_sim.examples.background_tasks", WORKBENCH)
    try:
        terminal.expect("> ")
        terminal.type("/t\t")
        terminal.expect("/task ")
        terminal.type("\x15/?\r")  # Ctrl-U clears the line
        terminal.expect("(background-tasks)")
    finally:
        terminal.close()


def test_a_running_command_does_not_block_the_prompt(chat: Terminal) -> None:
    chat.type("/slow 2\r")
    chat.type("/fast\r")
    before = chat.expect("fast done", timeout=10)
    assert "slow done" not in before
    chat.expect("slow done", timeout=10)


def test_ctrl_c_cancels_the_running_command_then_two_leave(chat: Terminal) -> None:
    chat.type("/slow 30\r")
    chat.expect("/slow 30")
    chat.expect("> ")
    chat.interrupt()
    chat.expect("^C cancelling 1 running command")
    chat.expect("cancelled: /slow 30")
    chat.type("half-typed")
    chat.interrupt()
    chat.expect("(Ctrl-C again or Ctrl-D to leave)")
    chat.type("/fast\r")  # the next line is kept, not thrown away
    chat.expect("fast done")
    chat.interrupt()
    chat.expect("(Ctrl-C again or Ctrl-D to leave)")
    chat.interrupt()
    assert chat.wait() == 130  # left by Ctrl-C: the conventional status
    chat.expect("host-sim chat: interrupted")
    assert "Traceback" not in chat.seen


def test_ctrl_d_leaves_cleanly(chat: Terminal) -> None:
    chat.type("\x04")
    assert chat.wait() == 0
    assert "Traceback" not in chat.seen


def test_a_palette_command_typed_as_slash_says_how_to_run_it(chat: Terminal) -> None:
    chat.type("/notes.scratch\r")
    chat.expect("'/notes.scratch' is a palette command, not a slash command")
    chat.expect("host-sim run SPEC... --palette notes.scratch")

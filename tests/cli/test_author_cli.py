"""A new mod author's first hour with the CLI (issue 36): typeahead of argument values,
turn ids, tools and widgets tried offline, a failing handler's line, stores by URL."""

from __future__ import annotations

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

"""docs/cli.md lists every command and every option that ``host-sim COMMAND --help`` shows."""

from __future__ import annotations

import argparse
import re

from host_sim._cli import SUBCOMMANDS, build_parser

from ._support import ROOT

CLI_MD = (ROOT / "docs" / "cli.md").read_text(encoding="utf-8")


def _subparsers() -> dict[str, argparse.ArgumentParser]:
    parser = build_parser()
    (group,) = [a for a in parser._actions if isinstance(a, argparse._SubParsersAction)]
    choices: dict[str, argparse.ArgumentParser] = group.choices
    return choices


def _section(command: str) -> str:
    """The text of ``## `COMMAND` `` up to the next ``## `` heading."""
    match = re.search(rf"^## `{command}`\n(.*?)(?=^## )", CLI_MD + "\n## ", re.S | re.M)
    assert match is not None, f"docs/cli.md has no section '## `{command}`'"
    return match.group(1)


def _row(command: str) -> str:
    rows = [line for line in CLI_MD.splitlines() if line.startswith(f"| `host-sim {command} ") or line.startswith(f"| `host-sim {command}`")]
    assert len(rows) == 1, f"docs/cli.md's table has {len(rows)} rows for {command!r}"
    return rows[0]


def test_every_command_has_a_row_and_a_section_and_nothing_else_does() -> None:
    assert set(_subparsers()) == set(SUBCOMMANDS)
    for command in SUBCOMMANDS:
        _row(command)
        _section(command)
    documented = set(re.findall(r"^## `([a-z]+)`", CLI_MD, re.M))
    assert documented == set(SUBCOMMANDS), documented ^ set(SUBCOMMANDS)


def test_every_option_of_every_help_is_in_its_row_and_documented() -> None:
    missing: list[str] = []
    for command, parser in _subparsers().items():
        row = _row(command)
        text = _section(command) + CLI_MD[CLI_MD.index("## Models") : CLI_MD.index("## `manifest`")] * (
            command in ("demo", "run", "chat")
        )
        for action in parser._actions:
            if isinstance(action, argparse._HelpAction) or action.help == argparse.SUPPRESS:
                continue
            if action.option_strings:
                flag = max(action.option_strings, key=len)
                if not any(f"{option} " in row or f"{option}]" in row for option in action.option_strings):
                    missing.append(f"{command}: {flag} is not in its table row")
                if f"`{flag}" not in text and f"`{min(action.option_strings, key=len)}" not in text:
                    missing.append(f"{command}: {flag} is not explained in its section")
                if f"{flag} " not in text and f"{flag}`" not in text and f"{flag}]" not in row:
                    missing.append(f"{command}: its long name {flag} is given nowhere (only {min(action.option_strings, key=len)})")
                if isinstance(action.metavar, str) and "|" in action.metavar and f"{flag} {action.metavar}".replace("|", "\\|") not in row:
                    missing.append(f"{command}: {flag} {action.metavar} is not in its table row as --help says")
            else:
                name = action.metavar if isinstance(action.metavar, str) else action.dest
                if name not in row:
                    missing.append(f"{command}: argument {name} is not in its table row")
                several = action.nargs in ("+", "*")
                if several != (f"{name}..." in row):
                    shown = f"{name}..." if several else name
                    missing.append(f"{command}: the row must show {shown}, as --help's usage does")
    assert not missing, "\n".join(missing)


def test_the_help_texts_agree_with_the_docs_on_what_fsck_reads() -> None:
    fsck = _subparsers()["fsck"].format_help()
    assert "PostgreSQL" in fsck and "PostgreSQL" in _section("fsck") and "SQLite or PostgreSQL" in _row("fsck")

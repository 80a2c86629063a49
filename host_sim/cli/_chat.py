"""``host-sim chat SPEC...``: an interactive session with slash-command typeahead.

Type a prompt, or ``/command argument``. Tab completes slash commands (where the
terminal supports readline); ``/`` alone or ``/?`` lists them; ``/quit`` or end of input
leaves.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable

import anyio

from ..sessions._host import Host
from ._session_io import format_submission, make_host, report_error

__all__ = ["register"]


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    parser = sub.add_parser(
        "chat",
        help="chat in one session with the mods loaded (slash typeahead)",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("specs", nargs="*", metavar="SPEC")
    parser.add_argument("--store", metavar="PATH", help="keep sessions in this SQLite file")
    parser.add_argument("--timeout", type=float, default=30.0, help="handler timeout in seconds")
    parser.add_argument("--backend", choices=("asyncio", "trio"), default="asyncio")
    parser.set_defaults(handler=_main)


def _install_completer(host: Host) -> None:
    try:
        import readline
    except ImportError:  # pragma: no cover - not every platform has it
        return
    matches: list[str] = []

    def complete(text: str, state: int) -> str | None:
        nonlocal matches
        if state == 0:
            line = readline.get_line_buffer()
            matches = [f"/{c.name} " for c in host.completions(line)] if line.startswith("/") else []
        return matches[state] if state < len(matches) else None

    readline.set_completer_delims(" ")
    readline.set_completer(complete)
    readline.parse_and_bind("tab: complete")


def listing(host: Host, typed: str) -> str:
    entries = host.completions(typed)
    if not entries:
        return "no matching commands"
    lines = []
    for entry in entries:
        hint = f" {entry.argument_hint}" if entry.argument_hint else ""
        lines.append(f"  /{entry.name}{hint}  {entry.description}  ({entry.mod_id})")
    return "\n".join(lines)


async def chat(args: argparse.Namespace, read: Callable[[str], str] = input) -> int:
    async with make_host(args.specs, store_path=args.store, timeout=args.timeout) as host:
        session = await host.sessions.create()
        if sys.stdin.isatty():
            _install_completer(host)
        print(f"session {session.id}; type /? for commands, /quit to leave")
        while True:
            try:
                line = await anyio.to_thread.run_sync(read, "> ")
            except EOFError:
                print()
                break
            text = line.rstrip("\n")
            if not text.strip():
                continue
            if text.strip() in ("/quit", "/exit"):
                break
            if text.strip() in ("/", "/?"):
                print(listing(host, "/"))
                continue
            if text.endswith("?") and text.startswith("/") and " " not in text:
                print(listing(host, text[:-1]))
                continue
            print(format_submission(await host.submit(session, text)))
    return 0


def _main(args: argparse.Namespace) -> int:
    try:
        code: int = anyio.run(chat, args, backend=args.backend)
    except KeyboardInterrupt:
        return 130
    except BaseException as exc:  # noqa: BLE001 - report_error re-raises what it does not own
        return report_error("chat", exc)
    return code

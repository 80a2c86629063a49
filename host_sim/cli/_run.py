"""``host-sim run SPEC... -m TEXT...``: send messages to one session and print the answers."""

from __future__ import annotations

import argparse

import anyio

from ._session_io import format_submission, make_host, report_error

__all__ = ["register"]


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    parser = sub.add_parser(
        "run",
        help="load mods and submit messages to one session",
        description="Load the mods, create one session, submit each -m TEXT in order (a "
        "prompt, or a slash command when it starts with '/') and print what the user sees. "
        "Exit code 1 if any message failed.",
    )
    parser.add_argument("specs", nargs="*", metavar="SPEC", help="mod spec: path/to/file.py or package.module, optionally :attr")
    parser.add_argument("-m", "--message", action="append", required=True, dest="messages", metavar="TEXT")
    parser.add_argument("--store", metavar="PATH", help="keep sessions in this SQLite file")
    parser.add_argument(
        "--session", metavar="ID", help="continue this session of the --store instead of creating one"
    )
    parser.add_argument("--timeout", type=float, default=30.0, help="handler timeout in seconds")
    parser.add_argument("--transcript", action="store_true", help="print the session's transcript at the end")
    parser.add_argument("--backend", choices=("asyncio", "trio"), default="asyncio")
    parser.set_defaults(handler=_main)


async def run(args: argparse.Namespace) -> int:
    failed = False
    async with make_host(args.specs, store_path=args.store, timeout=args.timeout) as host:
        chat = await host.sessions.get(args.session) if args.session else await host.sessions.create()
        print(f"session {chat.id}")
        for text in args.messages:
            submission = await host.submit(chat, text)
            print(f"> {text}")
            print(format_submission(submission))
            failed = failed or submission.error is not None
        if args.transcript:
            print(f"\n== transcript of {chat.id} ==")
            print(await host.transcript(chat))
    return 1 if failed else 0


def _main(args: argparse.Namespace) -> int:
    try:
        code: int = anyio.run(run, args, backend=args.backend)
    except BaseException as exc:  # noqa: BLE001 - report_error re-raises what it does not own
        return report_error("run", exc)
    return code

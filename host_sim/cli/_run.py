"""``host-sim run SPEC... -m TEXT...``: send messages, run palette commands and tools, render views and widgets.

Steps run in the order given on the command line: ``-m TEXT`` (a prompt, or a slash
command when it starts with ``/``), ``--palette ID`` (a palette command), ``--view ID
--data JSON`` (a view rendered from JSON data), ``--tool NAME --input JSON`` (a tool called
as a model would, in a turn of the chat) and ``--widget ID --data JSON`` (a widget rendered
for the chat).
"""

from __future__ import annotations

import argparse
import json
import shlex
import sys
import time
from collections.abc import Awaitable, Callable, Sequence
from pathlib import Path
from typing import Literal, TextIO, TypeVar

import anyio
import attrs

from modular_sdk import SerializationError, UnknownSessionError

from ..models._protocol import Model, ModelReply, ModelRequest, ToolCall, ToolResult
from ..sessions._host import Host, Submission
from ..sessions._view_data import view_data
from ._endings import stops_on_ctrl_c
from ._model_option import add_model_options, chosen_model
from ._observe import Notified, Observation, ObservedModel, ToolReturned, describe
from ._options import add_backend, add_store, add_timeout, is_store_url, open_store, shown_store
from ._session_io import format_submission, make_host, misplaced_palette, report_error

__all__ = ["Step", "ToolTrial", "register", "run", "view_data"]

T = TypeVar("T")


StepKind = Literal["message", "palette", "view", "tool", "widget"]

_DATA_OPTION: dict[StepKind, str] = {"view": "--data", "widget": "--data", "tool": "--input"}
"""The steps that take JSON, and the option that gives it."""


@attrs.frozen(kw_only=True)
class Step:
    """One thing ``run`` does: a message, a palette command, a tool call with its input, or a
    view or widget with its data."""

    kind: StepKind
    value: str
    data: str | None = None


class _AddStep(argparse.Action):
    def __call__(
        self,
        parser: argparse.ArgumentParser,
        namespace: argparse.Namespace,
        values: str | Sequence[object] | None,
        option_string: str | None = None,
    ) -> None:
        steps: list[Step] = list(getattr(namespace, "steps", None) or [])
        kind: StepKind = self.const
        steps.append(Step(kind=kind, value=str(values)))
        namespace.steps = steps


class _AddData(argparse.Action):
    """``--data JSON`` after a ``--view``/``--widget``, ``--input JSON`` after a ``--tool``."""

    def __call__(
        self,
        parser: argparse.ArgumentParser,
        namespace: argparse.Namespace,
        values: str | Sequence[object] | None,
        option_string: str | None = None,
    ) -> None:
        steps: list[Step] = list(getattr(namespace, "steps", None) or [])
        option = option_string or self.option_strings[0]
        last = steps[-1] if steps else None
        if last is None or _DATA_OPTION.get(last.kind) != option or last.data is not None:
            if option == "--input":
                parser.error(f"--input {values!r} must follow a --tool NAME (it is the JSON input that tool gets)")
            parser.error(f"--data {values!r} must follow a --view ID or --widget ID (it is the data that one renders)")
        try:
            json.loads(str(values))
        except json.JSONDecodeError as exc:
            parser.error(f"{option} {values!r} is not JSON ({exc.msg} at position {exc.pos}); pass JSON like '{{\"n\": 1}}'")
        steps[-1] = attrs.evolve(last, data=str(values))
        namespace.steps = steps


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    parser = sub.add_parser(
        "run",
        help="load mods; send messages, run palette commands, render views",
        description="Load the mods and create one session (or continue one with --session). "
        "Then, in the order given: send each -m TEXT (a prompt, or a slash command when it "
        "starts with '/'), run each --palette ID, render each --view ID or --widget ID with "
        "its --data JSON, call each --tool NAME with its --input JSON as the model would "
        "(hooks and validation included); print what the user sees, tool calls included. On a terminal, a line on "
        "standard error shows how long the current step has been running. Exit code 1 if "
        "any step failed.",
    )
    parser.add_argument(
        "specs", nargs="*", metavar="SPEC", help="mod spec: path/to/file.py or package.module, optionally :attr"
    )
    parser.add_argument(
        "-m", "--message", action=_AddStep, const="message", metavar="TEXT", help="a prompt or /command to send"
    )
    parser.add_argument("--palette", action=_AddStep, const="palette", metavar="ID", help="run this palette command")
    parser.add_argument("--view", action=_AddStep, const="view", metavar="ID", help="render this view (with --data)")
    parser.add_argument(
        "--widget", action=_AddStep, const="widget", metavar="ID", help="render this widget for the chat (with --data)"
    )
    parser.add_argument(
        "--data", action=_AddData, metavar="JSON", help="the JSON data of the --view or --widget before it"
    )
    parser.add_argument(
        "--tool",
        action=_AddStep,
        const="tool",
        metavar="NAME",
        help="call this tool as the model would, in a turn of the chat (with --input)",
    )
    parser.add_argument("--input", action=_AddData, metavar="JSON", help="the JSON input of the --tool before it")
    add_model_options(parser)
    add_store(parser)
    parser.add_argument(
        "--session", metavar="ID", help="continue this session of the store instead of creating one"
    )
    add_timeout(parser, default=30.0, what="each mod handler")
    parser.add_argument("--transcript", action="store_true", help="print the session's transcript at the end")
    add_backend(parser)
    parser.set_defaults(handler=_main, steps=[], parser=parser)


async def _with_progress(label: str, work: Callable[[], Awaitable[T]], stream: TextIO) -> T:
    """Await ``work``; on a terminal, show ``label`` and the elapsed seconds meanwhile."""
    if not stream.isatty():
        return await work()
    result: list[T] = []
    start = time.monotonic()
    frames = "|/-\\"
    async with anyio.create_task_group() as tg:

        async def do() -> None:
            result.append(await work())
            tg.cancel_scope.cancel()

        tg.start_soon(do)
        tick = 0
        try:
            while True:
                await anyio.sleep(0.1)
                tick += 1
                text = f"{frames[tick % 4]} {label}  {time.monotonic() - start:.1f}s"
                stream.write("\r" + text[:78] + "\x1b[K")
                stream.flush()
        finally:
            stream.write("\r\x1b[K")
            stream.flush()
    return result[0]


async def run(args: argparse.Namespace) -> int:
    """Open the host, run every step in order, print what each shows; exit 1 if one failed."""
    steps: list[Step] = args.steps
    failed = False

    def report(seen: Observation) -> None:
        if isinstance(seen, ToolReturned):
            print(f"  ({describe(seen.result)})", flush=True)
        elif isinstance(seen, Notified) and seen.session_id == chat_id:
            first = seen.text.splitlines()[0] if seen.text else ""
            print(f"  (notification: {first})", flush=True)

    chat_id = ""
    needs_chat = bool(args.session or args.transcript) or any(s.kind in ("message", "tool", "widget") for s in steps)
    with open_store(args) as (store, store_path):
        made = store_path is not None and not is_store_url(store_path) and not Path(store_path).exists()
        trial = ToolTrial(chosen_model(args))
        model = ObservedModel(trial, report)
        async with make_host(args.specs, store=store, timeout=args.timeout, model=model) as host:
            if args.session:
                try:
                    chat = await host.sessions.get(args.session)
                except UnknownSessionError:
                    print(
                        f"host-sim run: no session {args.session!r} in the store {shown_store(store_path or '')!r}; "
                        f"list its sessions with: host-sim lineage --store {shlex.quote(shown_store(store_path or ''))}",
                        file=sys.stderr,
                    )
                    return 1
            elif needs_chat:
                chat = await host.sessions.create()
            else:  # palette commands and views only: no session to show for them
                chat = None
            if chat is not None:
                chat_id = chat.id
                print(f"session {chat.id}")
            for step in steps:
                if step.kind == "message":
                    print(f"> {step.value}", flush=True)
                    advice = misplaced_palette(host, step.value)
                    if advice is not None:
                        print(f"error: {advice}")
                        failed = True
                        continue
                    text = step.value
                    submission: Submission = await _with_progress(text, lambda: host.submit(chat_id, text), sys.stderr)
                    print(format_submission(submission))
                    failed = failed or submission.error is not None
                elif step.kind == "palette":
                    print(f"> palette {step.value}", flush=True)
                    command = step.value
                    submission = await _with_progress(command, lambda: host.run_command(command), sys.stderr)
                    print(format_submission(submission))
                    failed = failed or submission.error is not None
                elif step.kind == "tool":
                    print(f"> tool {step.value} {step.data}", flush=True)
                    result = await _with_progress(
                        step.value, lambda: trial.call(host, chat_id, step.value, json.loads(step.data or "{}")), sys.stderr
                    )
                    print(f"error: {result.error}" if result.error is not None else result.output)
                    failed = failed or result.error is not None
                elif step.kind == "widget":
                    print(f"> widget {step.value}", flush=True)
                    widget = step.value
                    given = json.loads(step.data or "null")
                    shown = await _with_progress(widget, lambda: host.render_widget(widget, chat_id, given), sys.stderr)
                    print(f"error: {shown.error}" if shown.error is not None else shown.text)
                    failed = failed or shown.error is not None
                else:
                    print(f"> view {step.value}", flush=True)
                    view = step.value
                    try:
                        data = view_data(host.mods, view, json.loads(step.data or "null"))
                    except SerializationError as exc:
                        print(f"error: --data {step.data} does not fit view {view!r}: {exc}")
                        failed = True
                        continue
                    shown = await _with_progress(view, lambda: host.render_view(view, data), sys.stderr)
                    print(f"error: {shown.error}" if shown.error is not None else shown.text)
                    failed = failed or shown.error is not None
            if args.transcript and chat is not None:
                print(f"\n== transcript of {chat.id} ==")
                print(await host.transcript(chat))  # tool calls included: they are part of the record
        if made and chat is None and store_path is not None:  # a store this run made and kept nothing in
            for leftover in (store_path, f"{store_path}-wal", f"{store_path}-shm"):
                Path(leftover).unlink(missing_ok=True)
    return 1 if failed else 0


class ToolTrial:
    """``inner``, except in the turns `call` starts: there it calls one tool, as a model would.

    ``host-sim run --tool NAME --input JSON`` tries a tool offline: `call` sends a prompt
    saying so to the chat, and this model answers it with a `ToolCall` of ``NAME`` with
    that input, so the host does what it does for any model's call (validates the input
    against the tool's schema, runs the handler with its timeout and hooks, records the
    call, publishes its events); the turn's reply is the tool's output.
    """

    def __init__(self, inner: Model) -> None:
        self._inner = inner
        self._asked: dict[str, ToolCall] = {}  # the prompt text of a trial turn -> its call
        self._results: dict[str, ToolResult] = {}

    @property
    def name(self) -> str:
        return self._inner.name

    async def respond(self, request: ModelRequest) -> ModelReply:
        asked = self._asked.get(request.text) if request.kind == "prompt" else None
        if asked is None:
            return await self._inner.respond(request)
        if not request.tool_results:
            return asked
        result = request.tool_results[-1]
        self._results[request.text] = result
        return f"error: {result.error}" if result.error is not None else (result.output or "")

    async def call(self, host: Host, session_id: str, name: str, given: object) -> ToolResult:
        """Call tool ``name`` with ``given`` in a turn of ``session_id``; what it gave back."""
        if not isinstance(given, dict):
            return ToolResult(call_id="", name=name, input={}, output=None, error=f"--input must be a JSON object, got {json.dumps(given)}")
        text = f"(host-sim run --tool {name} --input {json.dumps(given, ensure_ascii=False, sort_keys=True)})"
        self._asked[text] = ToolCall(name=name, input=given)
        try:
            submission = await host.submit(session_id, text)
        finally:
            del self._asked[text]
        result = self._results.pop(text, None)
        if result is None:  # the turn failed before the tool answered (a hook, the model's limit ...)
            return ToolResult(call_id="", name=name, input=given, output=None, error=submission.error or "the tool was not called")
        return result

    def __repr__(self) -> str:
        return f"ToolTrial({self._inner!r})"


def _main(args: argparse.Namespace) -> int:
    parser: argparse.ArgumentParser = args.parser
    steps: list[Step] = args.steps
    if not steps:
        parser.error(
            "nothing to do: pass -m TEXT, --palette ID, --view ID --data JSON, --tool NAME --input JSON "
            "or --widget ID --data JSON"
        )
    missing = [s for s in steps if s.kind in _DATA_OPTION and s.data is None]
    if missing:
        option = _DATA_OPTION[missing[0].kind]
        parser.error(f"--{missing[0].kind} {missing[0].value} needs its {option.removeprefix('--')}: add {option} JSON after it")
    if args.session and args.no_store:
        parser.error(f"--session {args.session} continues a stored session: drop --no-store")
    try:
        code: int = anyio.run(stops_on_ctrl_c, lambda: run(args), backend=args.backend)
    except BaseException as exc:  # noqa: BLE001 - report_error re-raises what it does not own
        return report_error("run", exc)
    return code

"""``host-sim chat SPEC...``: an interactive session; commands run in the background.

The prompt stays usable while a command or prompt runs: each line you enter starts in a
task group this command owns, and its output prints when it arrives. What happens
meanwhile comes from the host's event stream (``host.subscribe()``), the same one an
integrator's UI reads: tool calls, notifications, and a streaming model's reply line by
line as it arrives. The event loop and the host run in a thread of their own (an anyio
blocking portal); the terminal, readline and Ctrl-C stay on the main thread.
"""

from __future__ import annotations

import argparse
import codecs
import contextlib
import functools
import os
import select
import signal
import sys
import threading
from collections import deque
from collections.abc import Awaitable, Callable, Iterator
from concurrent.futures import Future
from typing import Final, TextIO, TypeVar, cast, overload

import anyio
import anyio.abc
from anyio.from_thread import start_blocking_portal
from anyio.streams.memory import MemoryObjectReceiveStream, MemoryObjectSendStream

from modular_sdk._schema import JsonObject

from ..models._protocol import ToolResult
from ..sessions._events import Lagged, NotificationEvent, ReplyDelta, ToolCalled, ToolFinished, TurnFinished
from ..sessions._host import Completion, Host
from ._model_option import add_model_options, chosen_model
from ._observe import describe
from ._options import add_backend, add_store, add_timeout, open_store
from ._session_io import format_submission, make_host, misplaced_palette, report_error

__all__ = ["Chat", "complete_argument", "complete_slash", "listing", "register"]

_DESCRIPTION = """\
Chat in one session with the mods loaded, on the offline model.

Type a prompt, or /command argument. A command runs in the background: the prompt comes
back at once, and its output, and any notification or tool call, prints when it arrives.
When standard input is not a terminal, its lines run one after another.

  Tab         completes a slash command (after /t: /task), and then the values the
              command offers for its argument (after /task wri: /task write the tests)
  / or /?     lists the commands; /ta? lists those matching 'ta'
  Ctrl-C      cancels the running commands, or clears the line; twice in a row leaves
  Ctrl-D      leaves (after the running commands finish), as does /quit
"""

_PROMPT = "> "

_T = TypeVar("_T")

WAKE_EVERY: Final = 0.1
"""The longest the main thread sleeps in one wait (seconds), so that a Ctrl-C is never lost.

Python runs its SIGINT handler, which raises `KeyboardInterrupt`, in the main thread between
two steps of Python code. A blocking system call (a read of standard input, a wait on a lock)
ends early when the signal arrives during it, but a signal that arrives just before it starts
is only noted, and the call then sleeps on until its own ending: a piped chat, whose writer
stays open, slept forever on the second Ctrl-C. Every wait of the main thread is therefore cut
into slices this long, between which the noted signal is raised."""


def _result(future: Future[_T]) -> _T:
    """``future.result()`` in slices of `WAKE_EVERY` (a Ctrl-C raises in between)."""
    while True:
        try:
            return future.result(timeout=WAKE_EVERY)
        except TimeoutError:
            if future.done():  # the call itself raised TimeoutError
                raise


@overload
def _call(portal: anyio.from_thread.BlockingPortal, func: Callable[[], Awaitable[_T]]) -> _T: ...
@overload
def _call(portal: anyio.from_thread.BlockingPortal, func: Callable[[], _T]) -> _T: ...
def _call(portal: anyio.from_thread.BlockingPortal, func: Callable[[], Awaitable[_T]] | Callable[[], _T]) -> _T:
    """``portal.call(func)``, waited for in slices (`WAKE_EVERY`)."""
    return cast(_T, _result(portal.start_task_soon(func)))  # (as portal.call does: its overloads name _T)


def _wait(event: threading.Event) -> None:
    while not event.wait(WAKE_EVERY):
        pass


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    parser = sub.add_parser(
        "chat",
        help="chat in one session with the mods loaded (slash typeahead, background commands)",
        description=_DESCRIPTION,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument(
        "specs", nargs="*", metavar="SPEC", help="mod spec: path/to/file.py or package.module, optionally :attr"
    )
    add_model_options(parser)
    add_store(parser)
    add_timeout(parser, default=30.0, what="each mod handler")
    add_backend(parser)
    parser.set_defaults(handler=_main)


def complete_slash(commands: list[Completion], line: str) -> list[str]:
    """Tab completions of ``line``: ``/name `` for each command whose name starts with it.

    Only prefix matches: readline replaces the word with the matches' common prefix, so a
    fuzzy match (``/t`` -> ``/shout``) would cut the word back to ``/``.
    """
    if not line.startswith("/") or " " in line:
        return []
    typed = line[1:].lower()
    return [f"/{c.name} " for c in commands if c.name.lower().startswith(typed)]


def complete_argument(offered: list[Completion], line: str) -> list[str]:
    """Tab completions of the argument being typed in ``line`` (``/task write th``).

    ``offered`` is what ``await host.completions(line)`` gave; its argument values that
    extend what was typed become matches for the word under the cursor (readline replaces
    only the text after the last space): ``/task write th`` + Tab gives ``the tests``.
    """
    name, space, typed = line.partition(" ")
    if not line.startswith("/") or not space:
        return []
    word_start = len(typed) - len(typed.rpartition(" ")[2])
    return [
        c.argument[word_start:]
        for c in offered
        if c.argument is not None and f"/{c.name}".lower() == name.lower() and c.argument.startswith(typed)
    ]


def listing(host: Host, typed: str) -> str:
    entries = host.completions(typed)
    if not entries:
        return "no matching commands"
    lines = []
    for entry in entries:
        hint = f" {entry.argument_hint}" if entry.argument_hint else ""
        lines.append(f"  /{entry.name}{hint}  {entry.description}  ({entry.mod_id})")
    return "\n".join(lines)


class Chat:
    """One chat: the host, the task group that runs each line, and the terminal output.

    `serve` runs in the event loop; `submit`, `cancel_running` and `finish` are called
    from the main thread through the portal.
    """

    def __init__(self, args: argparse.Namespace, out: TextIO, interactive: bool) -> None:
        self._args = args
        self._out = out
        self._interactive = interactive
        self._lock = threading.Lock()
        self._at_prompt = False
        self._running: dict[int, tuple[str, anyio.CancelScope]] = {}
        self._next = 0
        self._session_id = ""
        self._streaming = False
        self.commands: list[Completion] = []
        self.ready = threading.Event()
        self.host: Host | None = None
        send, receive = anyio.create_memory_object_stream[str](64)
        self._send: MemoryObjectSendStream[str] = send
        self._receive: MemoryObjectReceiveStream[str] = receive

    # -- output, from any thread --------------------------------------------------------

    def show(self, text: str) -> None:
        """Print ``text``; at a waiting prompt, above it, with the typed line redrawn."""
        with self._lock:
            if self._interactive and self._at_prompt:
                typed = _line_buffer()
                self._out.write(f"\r\x1b[K{text}\n{_PROMPT}{typed}")
            else:
                self._out.write(text + "\n")
            self._out.flush()

    def prompt_state(self, waiting: bool) -> None:
        with self._lock:
            self._at_prompt = waiting

    async def _watch(self, host: Host, *, task_status: anyio.abc.TaskStatus[None] = anyio.TASK_STATUS_IGNORED) -> None:
        """Show what happens in this chat's session as the host's events arrive."""
        calls: dict[str, tuple[str, JsonObject]] = {}
        partial: dict[str, str] = {}  # a streaming reply's unfinished last line, per turn
        async with host.subscribe(buffer=10_000) as events:
            task_status.started()
            async for event in events:
                if isinstance(event, Lagged):
                    self.show(f"(missed {event.missed} events: the terminal fell behind)")
                    continue
                if getattr(event, "session_id", None) != self._session_id:
                    continue
                if isinstance(event, ToolCalled):
                    calls[event.call_id] = (event.tool_name, event.input)
                elif isinstance(event, ToolFinished):
                    name, given = calls.pop(event.call_id, ("?", {}))
                    result = ToolResult(call_id=event.call_id, name=name, input=given, output=event.output, error=event.error)
                    self.show(f"  ({describe(result)})")
                elif isinstance(event, NotificationEvent):
                    self.show(f"[notification] {event.title}")
                elif isinstance(event, ReplyDelta):
                    *lines, rest = (partial.pop(event.turn_id, "") + event.text).split("\n")
                    for line in lines:
                        self.show(line)
                    partial[event.turn_id] = rest
                elif isinstance(event, TurnFinished) and partial.get(event.turn_id):
                    self.show(partial.pop(event.turn_id))

    # -- the event loop side ------------------------------------------------------------

    async def serve(self) -> None:
        """Open the host, run each submitted line in the task group until `finish`."""
        model = chosen_model(self._args)
        self._streaming = callable(getattr(model, "stream", None))  # its replies print as deltas
        try:
            with open_store(self._args) as (store, _):
                async with make_host(self._args.specs, store=store, timeout=self._args.timeout, model=model) as host:
                    session = await host.sessions.create()
                    self._session_id = session.id
                    self.host = host
                    self.commands = sorted(host.completions("/"), key=lambda c: c.name)
                    async with anyio.create_task_group() as watching:
                        await watching.start(self._watch, host)
                        self.show(f"session {session.id}; type /? for commands, /quit to leave")
                        self.ready.set()
                        async with anyio.create_task_group() as tg:
                            async with self._receive:
                                async for text in self._receive:
                                    scope = anyio.CancelScope()
                                    self._next += 1
                                    self._running[self._next] = (text, scope)
                                    tg.start_soon(self._one, host, session.id, text, self._next, scope)
                        await anyio.sleep(0.05)  # the watcher shows what the last lines published
                        watching.cancel_scope.cancel()
        finally:
            self.ready.set()

    async def _one(self, host: Host, session_id: str, text: str, key: int, scope: anyio.CancelScope) -> None:
        try:
            with scope:
                submission = await host.submit(session_id, text)
                if not (self._streaming and submission.kind == "prompt" and submission.error is None):
                    self.show(format_submission(submission))  # (a streamed reply has printed already)
            if scope.cancelled_caught:
                self.show(f"cancelled: {text}")
        finally:
            del self._running[key]

    def running(self) -> int:
        return len(self._running)

    def cancel_running(self) -> int:
        """Cancel every running line; how many there were."""
        for _, scope in self._running.values():
            scope.cancel()
        return len(self._running)

    async def submit(self, text: str) -> None:
        """Start ``text`` in the task group; returns at once."""
        await self._send.send(text)

    async def submit_and_wait(self, text: str) -> None:
        """Run ``text`` and print what it shows before returning (Ctrl-C cancels it too)."""
        host = self.host
        assert host is not None
        scope = anyio.CancelScope()
        self._next += 1
        self._running[self._next] = (text, scope)
        await self._one(host, self._session_id, text, self._next, scope)

    async def argument_values(self, line: str) -> list[Completion]:
        """What the command typed in ``line`` offers for its argument (runs its completer)."""
        host = self.host
        assert host is not None
        return await host.completions(line)

    async def finish(self) -> None:
        """No more lines: `serve` returns once the running ones are done."""
        await self._send.aclose()


def _line_buffer() -> str:
    try:
        import readline
    except ImportError:  # pragma: no cover - not every platform has it
        return ""
    return readline.get_line_buffer()


def _install_completer(chat: Chat, portal: anyio.from_thread.BlockingPortal) -> None:
    try:
        import readline
    except ImportError:  # pragma: no cover - not every platform has it
        return
    matches: list[str] = []

    def complete(text: str, state: int) -> str | None:
        nonlocal matches
        if state == 0:
            line = readline.get_line_buffer()[: readline.get_endidx()]
            if " " in line:  # past the command's name: its argument values (mod code, on the loop)
                matches = complete_argument(portal.call(chat.argument_values, line), line)
            else:
                matches = complete_slash(chat.commands, line)
        return matches[state] if state < len(matches) else None

    readline.set_completer_delims(" ")
    readline.set_completer(complete)
    readline.parse_and_bind("tab: complete")


def _one_line(chat: Chat, portal: anyio.from_thread.BlockingPortal, read: Callable[[str], str], interactive: bool) -> bool:
    """Read and handle one line; ``False`` when the chat should end."""
    host = chat.host
    assert host is not None
    chat.prompt_state(True)
    try:
        line = read(_PROMPT if interactive else "")
    except EOFError:
        if interactive:
            print()
        return False
    finally:
        chat.prompt_state(False)
    text = line.rstrip("\n")
    stripped = text.strip()
    if stripped in ("/quit", "/exit"):
        return False
    if not stripped:
        pass
    elif stripped in ("/", "/?"):
        chat.show(listing(host, "/"))
    elif text.endswith("?") and text.startswith("/") and " " not in text:
        chat.show(listing(host, text[:-1]))
    elif (advice := misplaced_palette(host, stripped)) is not None:
        chat.show(f"error: {advice}")
    elif interactive:
        _call(portal, functools.partial(chat.submit, text))
    else:  # a script's lines run one after another, as it was written
        _call(portal, functools.partial(chat.submit_and_wait, text))
    return True


def converse(chat: Chat, portal: anyio.from_thread.BlockingPortal, read: Callable[[str], str], interactive: bool) -> bool:
    """The main thread's loop: read lines, hand them to the chat, handle Ctrl-C and the end.

    Ctrl-C cancels the running commands; with none running it clears the line, and a
    second one in a row leaves. When standard input is not a terminal (a script), every
    Ctrl-C counts, whatever ran between: the first cancels the running line, the second
    leaves. True when
    Ctrl-C ended the chat.
    """
    interrupts = 0
    while True:
        try:
            if not _one_line(chat, portal, read, interactive):
                break
            if interactive:  # a script's lines do not take back a Ctrl-C
                interrupts = 0
        except KeyboardInterrupt:
            running = _call(portal, chat.running)
            interrupts = 1 if running and interactive else interrupts + 1
            if interrupts >= 2:
                _call(portal, chat.cancel_running)
                return True
            if running:
                # Said before cancelling, so it comes before what the cancelled commands print.
                print(f"^C cancelling {running} running command{'s' if running != 1 else ''}", flush=True)
                _call(portal, chat.cancel_running)
                interrupts = 0 if interactive else interrupts
                continue
            print("^C (Ctrl-C again or Ctrl-D to leave)", flush=True)
    waiting = _call(portal, chat.running)
    if waiting and interactive:
        chat.show(f"waiting for {waiting} running command{'s' if waiting != 1 else ''} (Ctrl-C cancels)")
    return False


class _ScriptLines:
    """Standard input's lines when it is not a terminal, read so that a Ctrl-C is never lost.

    ``sys.stdin.readline()`` blocks in one read; a Ctrl-C that arrives just before it starts
    is noted and left waiting until the script's next line, which may never come (see
    `WAKE_EVERY`). This waits for input in slices with ``select`` and reads what is there.
    """

    def __init__(self, fd: int, encoding: str, errors: str) -> None:
        self._fd = fd
        self._decoder = codecs.getincrementaldecoder(encoding)(errors)
        self._lines: deque[str] = deque()  # whole lines read and not yet returned
        self._partial = ""  # the text after the last newline read
        self._ended = False

    def __call__(self, prompt: str) -> str:
        """The next line, with its newline (the last one may have none); EOFError at the end."""
        while not self._lines and not self._ended:
            ready, _, _ = select.select([self._fd], [], [], WAKE_EVERY)
            if ready:
                chunk = os.read(self._fd, 65536)
                self._ended = not chunk
                *whole, self._partial = (self._partial + self._decoder.decode(chunk, final=self._ended)).split("\n")
                self._lines.extend(line + "\n" for line in whole)
                if self._ended and self._partial:
                    self._lines.append(self._partial)
        if not self._lines:
            raise EOFError
        return self._lines.popleft()


def _script_lines() -> Callable[[str], str]:
    """Standard input's reader for a script: `_ScriptLines` where ``select`` takes its file."""
    stdin = sys.stdin
    try:
        fd = stdin.fileno()
        select.select([fd], [], [], 0)
    except (AttributeError, OSError, ValueError):  # no file behind it, or not selectable (Windows)
        return _read_line
    return _ScriptLines(fd, stdin.encoding or "utf-8", stdin.errors or "strict")


def _read_line(prompt: str) -> str:
    line = sys.stdin.readline()
    if not line:
        raise EOFError
    return line


@contextlib.contextmanager
def _loop_thread(backend: str) -> Iterator[anyio.from_thread.BlockingPortal]:
    """A blocking portal whose threads never take SIGINT.

    The kernel hands a process's SIGINT to any thread that does not block it; when the
    loop thread (or a worker it starts, which inherits its mask) takes it, the main thread
    stays asleep in readline and Ctrl-C seems to do nothing until Enter.
    """
    with contextlib.ExitStack() as stack:
        blocked = signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGINT})
        try:
            portal = stack.enter_context(start_blocking_portal(backend=backend))
        finally:
            signal.pthread_sigmask(signal.SIG_SETMASK, blocked)
        yield portal


def run_chat(args: argparse.Namespace, read: Callable[[str], str] | None = None) -> int:
    """Run the chat until /quit or end of input (exit 0; 1 if the host failed), or two Ctrl-C.

    Ctrl-C that ends the chat raises `KeyboardInterrupt` once the host has closed, for
    ``host-sim``'s one line and status 130.
    """
    interactive = sys.stdin.isatty() and sys.stdout.isatty()
    reader: Callable[[str], str] = read if read is not None else (input if interactive else _script_lines())
    chat = Chat(args, sys.stdout, interactive and read is None)
    with _loop_thread(args.backend) as portal:
        served = portal.start_task_soon(chat.serve)
        _wait(chat.ready)
        if chat.host is None:  # the host did not open: serve's error follows
            return report_error("chat", served.exception() or RuntimeError("the host did not open"))
        if interactive and read is None:
            _install_completer(chat, portal)
        try:
            try:
                left_by_ctrl_c = converse(chat, portal, reader, interactive and read is None)
            finally:
                _call(portal, chat.finish)
            _result(served)
        except KeyboardInterrupt:  # while the running commands finished: cancel them, close
            left_by_ctrl_c = True
            _call(portal, chat.cancel_running)
            try:
                _result(served)
            except BaseException as exc:  # noqa: BLE001 - report_error re-raises what it does not own
                return report_error("chat", exc)
        except BaseException as exc:  # noqa: BLE001 - report_error re-raises what it does not own
            return report_error("chat", exc)
    if left_by_ctrl_c:
        raise KeyboardInterrupt
    return 0


def _main(args: argparse.Namespace) -> int:
    return run_chat(args)

"""One AG-UI run (docs/protocols.md): a ``RunAgentInput`` in, the host's work out as AG-UI events.

Imported by `AguiApp` at its first request, so ``import host_sim`` never imports
``ag_ui`` (the extra ``agui``). The mapping, in the order a run goes:

- **The thread.** ``threadId`` names a session the view sees (its id), or else the sessions
  tagged ``agui_thread=threadId`` (a root and the forks made from it, which inherit the tag);
  an unknown thread gets a new root with that tag (and the scope's tags). A thread whose
  sessions were all deleted, or a deleted session named by id, answers ``RUN_ERROR``.
- **The branch.** The user messages before the last are compared with the prompts the user
  sent in each candidate session (an erased prompt agrees with anything; slash commands are
  not compared). A candidate that agrees with all of them continues; otherwise the one that
  agrees longest is forked at the turn just before the first prompt that differs (an edited
  earlier message), and ``RUN_STARTED`` names the fork as the thread and, as
  ``parentRunId``, the run that made that turn. A client that sends only its newest message
  continues the newest branch; a run with ``resume`` runs in the session holding the
  interrupts it answers.
- **The input.** With ``resume``, each entry answers the interrupt of a pending action:
  ``{"approved": bool, "reason": str | None, "always": bool}`` confirms or dismisses it (``by``
  the scope's ``user`` tag, else ``"agui"``); ``always`` also allows that kind of action for
  good (`host_sim.Approvals`); a ``cancelled`` entry dismisses; such a run runs no input.
  Otherwise the last user message, when the session has not seen it, runs as a host-owned job (``view.start``): ``/name args``
  a slash command, ``//text`` a literal slash.
- **The stream.** ``RUN_STARTED`` (metadata ``host_sim``: session and job ids), the reply as
  ``TEXT_MESSAGE_START/CONTENT/END`` as the model streams it (message id: the turn id),
  tool calls as ``TOOL_CALL_START/ARGS/END`` and ``TOOL_CALL_RESULT``, widgets the reply
  placed and sessions spawned as ``CUSTOM`` (``host_sim.widget``, ``host_sim.spawn``),
  a command's output as a text message; then ``RUN_FINISHED`` whose ``result`` names the
  session, turn and job, with an ``interrupt`` outcome naming each action the run proposed
  that waits for the user; or ``RUN_ERROR`` with the host's message. Nothing already erased
  is ever sent (the stream carries only what the host produces during the run).
"""

from __future__ import annotations

import json
import weakref
from collections import OrderedDict
from collections.abc import AsyncGenerator, Mapping, Sequence
from typing import Final, TypeAlias

from ag_ui.core import (
    CustomEvent,
    Interrupt,
    ResumeEntry,
    RunAgentInput,
    RunFinishedEvent,
    RunFinishedInterruptOutcome,
    UserMessage,
)
from pydantic import ValidationError

from modular_sdk import (
    AiPromptMessage,
    AiTurnHandle,
    ForkLineage,
    ModularError,
    RootLineage,
    SpawnLineage,
    UnknownSessionError,
    UserAuthor,
)
from modular_sdk._frozen import thaw_object

from ..sessions._events import (
    CommandFinished,
    HostEvent,
    JobFinished,
    ReplyDelta,
    SessionCreated,
    ToolCalled,
    ToolFinished,
    TurnErased,
    TurnFinished,
    TurnStarted,
)
from ..sessions._handles import SessionHandle
from ..sessions._host import Host, host_of
from ..sessions._jobs import Job
from ..sessions._scoped import ScopedHost
from ..traces._types import ActionRecord, PendingAction
from . import _wire as wire
from ._router import Router

__all__ = ["BadRunInput", "RunIds", "THREAD_TAG", "parse", "run_events"]

View: TypeAlias = Host | ScopedHost

THREAD_TAG: Final = "agui_thread"
"""The tag that ties a session to the AG-UI thread it was made for (forks inherit it)."""

RESPONSE_SCHEMA: Final[dict[str, object]] = {
    "type": "object",
    "properties": {
        "approved": {"type": "boolean"},
        "reason": {"type": ["string", "null"]},
        "always": {"type": "boolean"},
    },
    "required": ["approved"],
}

_KEEP: Final = 10_000  # turn -> run id pairs remembered per host


class BadRunInput(Exception):
    """The request body is not a ``RunAgentInput`` (answered 422, not as a stream)."""


class RunIds:
    """Which client run made which host turn (``parentRunId`` of a fork), remembered per host.

    The client's run ids are not part of the host's record: after a restart, a fork at a turn
    this process did not run names the turn's id as its parent run.
    """

    _of_host: weakref.WeakKeyDictionary[Host, RunIds] = weakref.WeakKeyDictionary()

    def __init__(self) -> None:
        self._runs: OrderedDict[str, str] = OrderedDict()

    @classmethod
    def of(cls, host: Host) -> RunIds:
        found = cls._of_host.get(host)
        if found is None:
            found = cls._of_host[host] = RunIds()
        return found

    def made(self, turn_id: str, run_id: str) -> None:
        self._runs[turn_id] = run_id
        while len(self._runs) > _KEEP:
            self._runs.popitem(last=False)

    def run_of(self, turn_id: str) -> str:
        return self._runs.get(turn_id, turn_id)


def parse(body: bytes) -> RunAgentInput:
    """The request, validated by the protocol's own model; `BadRunInput` naming what is wrong."""
    try:
        return RunAgentInput.model_validate_json(body)
    except ValidationError as exc:
        problems = "; ".join(f"{'.'.join(str(p) for p in e['loc'])}: {e['msg']}" for e in exc.errors()[:5])
        raise BadRunInput(f"the body is not an AG-UI RunAgentInput ({problems})") from None


def _text_of(message: UserMessage) -> str:
    content = message.content
    if isinstance(content, str):
        return content
    return "".join(getattr(part, "text", "") for part in content)


def _prompt_of(typed: str) -> str | None:
    """What a typed user message sends as a prompt, or ``None`` for a slash command."""
    if typed.startswith("//"):
        return typed[1:]
    if typed.startswith("/") and len(typed.strip()) > 1:
        return None
    return typed


class _Prompt:
    """A prompt the user sent in a session: the turn, and its text (``None``: erased)."""

    def __init__(self, turn: AiTurnHandle, text: str | None) -> None:
        self.turn = turn
        self.text = text


async def _prompts(session: SessionHandle) -> list[_Prompt]:
    """The prompts the user sent in the session (inherited ones included), oldest first."""
    found: list[_Prompt] = []
    for turn in await session.turns():
        if isinstance(turn.author, UserAuthor) and isinstance(turn.message, AiPromptMessage):
            found.append(_Prompt(turn, None if turn.erased_at is not None else turn.message.text))
    return found


def _agreeing(host_side: Sequence[_Prompt], client_side: Sequence[str]) -> int:
    n = 0
    for mine, theirs in zip(host_side, client_side):
        if mine.text is not None and mine.text != theirs:
            break
        n += 1
    return n


class _Branch:
    """Where a run happens: the session, the fork made for it (if any), and whether its input is new."""

    def __init__(self, session: SessionHandle, parent_run: str | None, fresh: bool) -> None:
        self.session = session
        self.parent_run = parent_run
        self.fresh = fresh


class RunError(Exception):
    """A run that ends in ``RUN_ERROR`` with this message (and ``code``)."""

    def __init__(self, message: str, code: str | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.code = code


async def _candidates(view: View, thread_id: str) -> list[SessionHandle]:
    try:
        named = await view.sessions.get(thread_id)
    except (UnknownSessionError, ModularError):
        named = None
    if named is not None:
        if named.deleted_at is not None:
            raise RunError(
                f"session {named.id!r} (thread {thread_id!r}) was deleted at {named.deleted_at.isoformat()}; "
                "start a new thread",
                "session_deleted",
            )
        return [named]
    page = await view.sessions.list(tags={THREAD_TAG: thread_id}, limit=200)
    found = [s for s in page.sessions if isinstance(s.lineage, (RootLineage, ForkLineage))]
    if not found:
        jobs = await view.jobs(tags={THREAD_TAG: thread_id}, limit=1)
        if jobs.jobs:
            raise RunError(
                f"the sessions of thread {thread_id!r} were deleted; start a new thread", "session_deleted"
            )
    return found


async def _branch(view: View, run: RunAgentInput, runs: RunIds, typed: str | None) -> _Branch:
    """The session this run happens in (see the module docstring), made or forked when needed."""
    thread_id = run.thread_id
    candidates = await _candidates(view, thread_id)
    users = [_text_of(m) for m in run.messages if isinstance(m, UserMessage)]
    client = [p for p in (_prompt_of(t) for t in users) if p is not None]  # every prompt the client holds
    last_is_prompt = typed is not None and _prompt_of(typed) is not None
    earlier = client[:-1] if last_is_prompt else client
    if not candidates:
        return _Branch(await view.sessions.create(tags={THREAD_TAG: thread_id}), None, True)
    if run.resume:  # it answers interrupts and runs nothing: in the session that holds them
        asked = {entry.interrupt_id for entry in run.resume}
        for session in candidates:
            if asked & {a.id for a in await view.pending_actions(session)}:
                return _Branch(session, None, False)
        return _Branch(candidates[0], None, False)
    if not earlier:  # a client that sends only its newest message: it continues the newest branch
        return _Branch(candidates[0], None, True)
    best: tuple[int, SessionHandle, list[_Prompt]] | None = None
    for session in candidates:
        prompts = await _prompts(session)
        if last_is_prompt and len(client) == len(prompts) and _agreeing(prompts, client) == len(prompts):
            return _Branch(session, None, False)  # it ran the last prompt already (a reconnect)
        agree = _agreeing(prompts, earlier)
        if agree >= len(prompts):  # it holds every earlier prompt: the input continues here
            return _Branch(session, None, True)
        if best is None or agree > best[0]:
            best = (agree, session, prompts)
    assert best is not None
    agree, session, prompts = best
    differs = prompts[agree].turn  # the first prompt the client changed
    before = [t for t in await session.turns() if t.ordinal < differs.ordinal and t.status == "completed"]
    if not before:  # the very first prompt changed: nothing to keep
        return _Branch(await view.sessions.create(tags={THREAD_TAG: thread_id}), None, True)
    anchor = before[-1]
    fork = await anchor.fork()
    return _Branch(await view.sessions.get(fork.id), runs.run_of(anchor.id), True)


def _by(view: View) -> str:
    return view.tags.get("user", "agui") if isinstance(view, ScopedHost) else "agui"


async def _answer(view: View, session: SessionHandle, entries: Sequence[ResumeEntry]) -> list[tuple[str, str]]:
    """Confirm or dismiss each answered action; (action id, what its run gave) of each confirmed one."""
    by = _by(view)
    pending = {a.id: a for a in await view.actions(session, status="pending")}
    out: list[tuple[str, str]] = []
    for entry in entries:
        action = pending.get(entry.interrupt_id)
        if action is None:
            raise RunError(
                f"resume answers interrupt {entry.interrupt_id!r}, which names no action waiting in session "
                f"{session.id!r}; answer the interrupts of the run that ended with them",
                "unknown_interrupt",
            )
        payload = entry.payload if isinstance(entry.payload, Mapping) else {}
        approved = payload.get("approved") is True and entry.status == "resolved"
        reason = payload.get("reason")
        reason = reason if isinstance(reason, str) and reason.strip() else None
        if not approved:
            await view.dismiss(action.id, by=by, reason=reason)
            continue
        if payload.get("always") is True:
            await view.approvals.allow(action_type=action.type, tool=_tool_of(action), by=by, reason=reason)
        done = await view.confirm(action.id, by=by, reason=reason)
        if done.error is not None:
            raise RunError(done.error, "action_failed")
        out.append((action.id, done.text))
    return out


def _tool_of(action: ActionRecord) -> str | None:
    if action.type != "mcp.call":
        return None
    server, tool = action.payload.get("server"), action.payload.get("tool")
    return f"{server}.{tool}" if isinstance(server, str) and isinstance(tool, str) else None


class _Stream:
    """Turns the host's events of one job into AG-UI events (see the module docstring)."""

    def __init__(self, session_id: str, job: Job) -> None:
        self.session_id = session_id
        self.job = job
        self.turns: dict[str, str] = {}  # turn id -> text sent so far
        self.open: dict[str, str] = {}  # turn id -> id of its open text message
        self.parts: dict[str, int] = {}
        self.erased: set[str] = set()
        self.calls: set[str] = set()
        self.sent_text = False
        self.finished: list[str] = []

    def _start(self, turn_id: str) -> list[str]:
        if turn_id in self.open:
            return []
        n = self.parts.get(turn_id, 0)
        self.parts[turn_id] = n + 1
        message_id = turn_id if n == 0 else f"{turn_id}.{n}"
        self.open[turn_id] = message_id
        return [wire.text_start(message_id)]

    def _end(self, turn_id: str) -> list[str]:
        message_id = self.open.pop(turn_id, None)
        return [] if message_id is None else [wire.text_end(message_id)]

    def _text(self, turn_id: str, text: str) -> list[str]:
        if not text or turn_id in self.erased:
            return []
        out = self._start(turn_id)
        self.turns[turn_id] = self.turns.get(turn_id, "") + text
        self.sent_text = True
        out.append(wire.text_content(self.open[turn_id], text))
        return out

    def events(self, event: HostEvent) -> tuple[list[str], bool]:
        """The AG-UI events ``event`` gives (their SSE text), and whether the job ended."""
        if isinstance(event, TurnStarted):
            if event.job_id == self.job.id:
                self.turns[event.turn_id] = ""
            return [], False
        if isinstance(event, ReplyDelta):
            return (self._text(event.turn_id, event.text) if event.turn_id in self.turns else []), False
        if isinstance(event, ToolCalled) and event.turn_id in self.turns:
            self.calls.add(event.call_id)
            return [
                *self._end(event.turn_id),
                wire.tool_start(event.call_id, event.tool_name),
                wire.tool_args(event.call_id, json.dumps(thaw_object(event.input), ensure_ascii=False)),
                wire.tool_end(event.call_id),
            ], False
        if isinstance(event, ToolFinished) and event.call_id in self.calls:
            content = event.output if event.error is None else event.error
            return [wire.tool_result(f"{event.call_id}.result", event.call_id, content or "")], False
        if isinstance(event, TurnErased) and event.turn_id in self.turns:
            self.erased.add(event.turn_id)
            return self._end(event.turn_id), False
        if isinstance(event, TurnFinished) and event.turn_id in self.turns:
            out: list[str] = []
            sent = self.turns[event.turn_id]
            reply = event.reply or ""
            if event.status == "completed" and reply.startswith(sent):  # a model that does not stream
                out += self._text(event.turn_id, reply[len(sent) :])
            out += self._end(event.turn_id)
            if event.status == "completed" and "<mod-widget" in reply:
                self.finished.append(event.turn_id)  # its widgets are read once it is over
            return out, False
        if isinstance(event, CommandFinished) and event.job_id == self.job.id:
            if event.error is None and event.text:
                self.sent_text = True
                return _message(event.invocation_id, event.text), False
            return [], False
        if isinstance(event, SessionCreated) and isinstance(event.lineage, SpawnLineage):
            if event.lineage.parent_session_id == self.session_id:
                value = {"sessionId": event.session_id, "parentSessionId": self.session_id}
                return [wire.of_model(CustomEvent(name="host_sim.spawn", value=value))], False
            return [], False
        if isinstance(event, JobFinished) and event.job_id == self.job.id:
            closing: list[str] = []
            for turn_id in list(self.open):
                closing += self._end(turn_id)
            return closing, True
        return [], False


async def run_events(view: View, run: RunAgentInput, runs: RunIds) -> AsyncGenerator[list[str]]:
    """The AG-UI events of one run, ``RUN_STARTED`` to ``RUN_FINISHED`` or ``RUN_ERROR``, as SSE text in
    batches: each batch is what the host's events so far gave (the app sends a batch at once)."""
    users = [m for m in run.messages if isinstance(m, UserMessage)]
    typed = _text_of(users[-1]) if users else None
    try:
        branch = await _branch(view, run, runs, typed)
        session = branch.session
        thread = run.thread_id if branch.parent_run is None else session.id
        answered: list[tuple[str, str]] = []
        if run.resume:
            answered = await _answer(view, session, run.resume)
        if not branch.fresh or typed is None:
            yield [
                wire.run_started(thread, run.run_id, branch.parent_run, {"host_sim": {"sessionId": session.id}}),
                *_results(answered),
                wire.run_finished(thread, run.run_id, {"sessionId": session.id, "turnId": None}),
            ]
            return
        host = host_of(view)
        async with Router.of(host).watch(session.id) as host_events:
            job = await view.start(session, typed)
            metadata = {"host_sim": {"sessionId": session.id, "jobId": job.id}}
            yield [wire.run_started(thread, run.run_id, branch.parent_run, metadata), *_results(answered)]
            stream = _Stream(session.id, job)
            ended = False
            while not ended:
                batch = await host_events.batch()
                if not batch:  # the host closed
                    break
                stream.erased.update(e.turn_id for e in batch if isinstance(e, TurnErased))
                out: list[str] = []  # (a turn erased later in the batch sends none of its text)
                for event in batch:
                    given, ended = stream.events(event)
                    out += given
                    if ended:
                        break
                    for finished in stream.finished:
                        out += await _widgets(view, finished)
                    stream.finished.clear()
                if out:
                    yield out
        submission = await job.wait()
        turn_id = None if submission.turn is None else submission.turn.id
        for turn in stream.turns:
            runs.made(turn, run.run_id)
        if submission.error is not None:
            yield [wire.run_error(submission.error, submission.error_kind)]
            return
        last: list[str] = []
        if not stream.sent_text and submission.text and turn_id not in stream.erased:
            last += _message(turn_id or job.id, submission.text)
        result = {"sessionId": session.id, "turnId": turn_id, "jobId": job.id, "kind": submission.kind}
        waiting = submission.actions  # what the turn proposed that waits (a standing approval's are not)
        if waiting:
            outcome = RunFinishedInterruptOutcome(interrupts=[_interrupt(a) for a in waiting])
            last.append(wire.of_model(RunFinishedEvent(thread_id=thread, run_id=run.run_id, result=result, outcome=outcome)))
        else:
            last.append(wire.run_finished(thread, run.run_id, result))
        yield last
    except RunError as failed:
        yield [wire.run_error(failed.message, failed.code)]
    except ModularError as failed:
        yield [wire.run_error(str(failed), type(failed).__name__)]


def _message(message_id: str, text: str) -> list[str]:
    """A whole text message: start, its one delta, end."""
    return [wire.text_start(message_id), wire.text_content(message_id, text), wire.text_end(message_id)]


def _results(answered: Sequence[tuple[str, str]]) -> list[str]:
    """What the actions a resume confirmed gave, each as a text message."""
    out: list[str] = []
    for action_id, text in answered:
        if text:
            out += _message(f"{action_id}.result", text)
    return out


async def _widgets(view: View, turn_id: str) -> list[str]:
    turn = await view.sessions.turn(turn_id)
    out: list[str] = []
    for placed in turn.widgets:
        value: dict[str, object] = {
            "sessionId": turn.session_id,
            "turnId": turn.id,
            "widgetId": placed.widget_id,
            "index": placed.index,
            "data": thaw_object(placed.data),
        }
        if isinstance(view, Host):
            shown = await view.render_widget(placed.widget_id, turn.session_id, placed.data)
            value["text"] = shown.text if shown.error is None else None
        out.append(wire.of_model(CustomEvent(name="host_sim.widget", value=value)))
    return out


def _interrupt(action: PendingAction) -> Interrupt:
    return Interrupt(
        id=action.id,
        reason="confirmation",
        message=f"{action.type} (mod {action.mod_id}) waits for your confirmation",
        response_schema=RESPONSE_SCHEMA,
        metadata={
            "host_sim": {
                "actionType": action.type,
                "modId": action.mod_id,
                "payload": thaw_object(action.payload),
                "sessionId": action.session_id,
                "turnId": action.turn_id,
            }
        },
    )


def encode(batch: Sequence[str]) -> bytes:
    """The bytes of a batch of events' SSE text (`_wire`)."""
    return "".join(batch).encode("utf-8")

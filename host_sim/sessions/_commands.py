"""What the user types, and the palette: commands, their invocations, and typeahead.

`Commands` is the host's command path. ``submit`` reads typed text: ``/name argument`` runs
a slash command, a doubled leading slash is a literal one (``//etc/hosts`` sends the prompt
``/etc/hosts``), anything else is a prompt sent as the user. ``palette`` runs a palette
command (no session). Each command is an `Invocation`, written before its handler runs and
finished once, whatever happens (``command_finished``). ``completions`` is the slash-command
typeahead.
"""

from __future__ import annotations

import difflib
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Literal

import anyio
import attrs

from modular_sdk import ActionDeniedError, AiPromptMessage, InvalidArgumentError, Mod, ModularError
from modular_sdk._rules import show

from ..lanes._calling import USER, HandlerFrame
from ..lanes._ext_host import HandlerFailed, call_handler
from ..observability import Telemetry
from ..stores._records import ErrorKind, Invocation
from ._actions import ActionBook
from ._completions import Completion, Completions, argument_values
from ._events import CommandFinished
from ._explain import close_names
from ._handles import CommandContextImpl, SlashCommandContextImpl, TurnHandle
from ._ids import new_invocation_id
from ._scope import Scope
from ._state import SessionState
from ._submission import Submission
from ._turns import JobCall

if TYPE_CHECKING:
    from ..stores._protocol import IntegratorStore
    from ._engine import Engine
    from ._events import EventHub
    from ._tables import ModTables

__all__ = ["Commands"]


class Commands:
    """The host's command path, made once the host opens: over its ``engine``, its
    ``actions`` (what a prompt's reply proposed goes into its `Submission`), its
    ``telemetry`` (a span per command) and ``handler_timeout`` (``Host(handler_timeout=...)``)."""

    def __init__(
        self,
        *,
        engine: Engine,
        tables: ModTables,
        integrator_store: IntegratorStore,
        events: EventHub,
        actions: ActionBook,
        telemetry: Telemetry,
        handler_timeout: float | None,
    ) -> None:
        self._engine = engine
        self._tables = tables  # the mods' slash and palette commands
        self._integrator_store = integrator_store  # the command invocations' records
        self._events = events
        self._actions = actions
        self._telemetry = telemetry
        self._handler_timeout = handler_timeout

    async def submit(self, state: SessionState, text: str, job: JobCall | None, request_id: str | None = None) -> Submission:
        """`Host.submit`, in ``job`` (or none): the events of its turn or command carry its id;
        ``request_id`` keys a prompt's turn (a retry returns it; a command is not keyed)."""
        engine = self._engine
        if not isinstance(text, str):
            raise InvalidArgumentError(
                f"submit() takes the typed text as a str, got {show(text)}", argument="text", value=text
            )
        await engine.refuse_deleted(state, "submit to")
        if text == "/" or not text.strip():
            message = (
                "type a command name after '/', like '/help'"
                if text == "/"
                else f"there is nothing to send in {text!r}; type a prompt or a /command"
            )
            kind: Literal["prompt", "command"] = "command" if text == "/" else "prompt"
            return Submission(kind=kind, text=message, error=message, error_kind="invalid_input")
        if text.startswith("//"):
            text = text[1:]  # a literal slash, not a command
        elif text.startswith("/"):
            return await self._slash(state, text, None if job is None else job.id)
        try:
            turn = await engine.send(state, AiPromptMessage(text=text), None, job=job, request_id=request_id)
        except ActionDeniedError as denied:
            return Submission(kind="prompt", text=str(denied), error=str(denied), error_kind="denied")
        except InvalidArgumentError as bad:  # text that cannot be stored
            return Submission(kind="prompt", text=str(bad), error=str(bad), error_kind="invalid_input")
        except ModularError as exc:  # a store that failed the write, a closed host...
            return Submission(kind="prompt", text=str(exc), error=str(exc), error_kind="model_failed")
        handle = TurnHandle._create(engine, state, turn, None)
        if turn.status != "completed":
            message = f"turn {turn.ordinal} failed: {turn.error}"
            return Submission(kind="prompt", text=message, turn=handle, error=message, error_kind=turn.failure)
        submitted = Submission(kind="prompt", text=turn.reply or "", turn=handle, widget_errors=turn.widget_errors)
        return self._proposed(submitted, turn.id)

    async def _slash(self, state: SessionState, text: str, job_id: str | None) -> Submission:
        body = text[1:]
        name, sep, rest = body.partition(" ")
        argument = rest if sep else None
        entry = self._tables.slash.get(name)
        if entry is None:
            known = sorted(self._tables.slash)
            if not name:
                message = "type a command name after '/'"
            else:
                message = f"unknown command '/{name}'"
            close = close_names(name, known) if name else []
            if close:
                message += "; did you mean " + " or ".join(f"'/{c}'" for c in close) + "?"
            message += f" (commands: {', '.join('/' + c for c in known) or 'none loaded'})"
            if name in self._tables.palette:
                message += f"; {name!r} is a palette command: run it with host.run_command({name!r})"
            return Submission(kind="command", text=message, error=message, error_kind="unknown_command")
        mod, declared = entry
        return await self._command(
            mod,
            declared.id,
            f"/{declared.id}",
            declared.run,
            state,
            argument,
            job_id,
        )
    async def palette(self, command_id: str, scope: Scope | None) -> Submission:
        """`Host.run_command`; its handler's ``ctx.ai`` acts within ``scope`` (``None``: every session)."""
        if not isinstance(command_id, str):
            raise InvalidArgumentError(
                f"run_command() takes a palette command id (a str, like 'open'), got {show(command_id)} "
                f"({type(command_id).__name__})",
                argument="command_id",
                value=command_id,
            )
        entry = self._tables.palette.get(command_id)
        if entry is None:
            known = sorted(self._tables.palette)
            close = close_names(command_id, known)
            hint = f"; did you mean {close[0]!r}?" if close else ""
            message = f"unknown palette command {command_id!r}{hint} (commands: {', '.join(map(repr, known)) or 'none loaded'})"
            return Submission(kind="command", text=message, error=message, error_kind="unknown_command")
        mod, declared = entry
        return await self._command(mod, declared.id, repr(declared.id), declared.run, None, None, None, scope)

    async def _command(
        self,
        mod: Mod,
        command_id: str,
        label: str,
        run: Callable[..., object],
        state: SessionState | None,
        argument: str | None,
        job_id: str | None,
        scope: Scope | None = None,
    ) -> Submission:
        """Run a command as an `Invocation`: written before its handler runs, finished once."""
        engine = self._engine
        invocation = Invocation(
            id=new_invocation_id(),
            session_id=None if state is None else state.id,
            mod_id=mod.id,
            command_id=command_id,
            argument=argument,
            author=USER,
            started_at=engine.now(),
            position=0 if state is None else state.next_ordinal,
        )
        with engine.tracked():  # the host waits for this command's record before closing its store
            with anyio.CancelScope(shield=True):  # a started write always finishes
                await self._integrator_store.begin_invocation(invocation)
            if state is not None:
                state.last_invocation_at = invocation.started_at
            submission = Submission(kind="command", text="", error="cancelled before it finished", error_kind="handler_failed")
            try:
                with self._telemetry.command(
                    invocation_id=invocation.id, session_id=invocation.session_id, mod_id=mod.id, command_id=command_id, argument=argument
                ) as running:
                    submission = await self._run_command(
                        mod, command_id, label, run, state, argument, scope, position=invocation.position
                    )
                    running.finished(submission)
            finally:
                done = attrs.evolve(
                    invocation,
                    finished_at=engine.now(),
                    text=submission.text,
                    error=submission.error,
                    error_kind=submission.error_kind,
                )
                with anyio.CancelScope(shield=True):
                    await self._integrator_store.finish_invocation(done)
                self._events.publish(
                    lambda seq, at: CommandFinished(
                        seq=seq,
                        at=at,
                        invocation_id=done.id,
                        session_id=done.session_id,
                        command_id=command_id,
                        text=done.text or "",
                        error=done.error,
                        job_id=job_id,
                    )
                )
                await self._events.written()  # numbered before the caller (or another host) goes on
            return submission

    async def _run_command(
        self,
        mod: Mod,
        command_id: str,
        label: str,
        run: Callable[..., object],
        state: SessionState | None,
        argument: str | None,
        scope: Scope | None = None,
        *,
        position: int | None = None,
    ) -> Submission:
        """Run a command's handler; ``position`` is where in its session it was typed (the
        frame carries it, so what the handler reports is erased with a turn asked there)."""
        engine = self._engine
        try:
            await engine.before(f"command:{command_id}", None if state is None else state.id, USER, owner=mod)
        except ModularError as denied:
            return Submission(kind="command", text=str(denied), error=str(denied), error_kind="denied")
        if state is not None:
            frame = HandlerFrame(
                mod_id=mod.id, kind="command", command_id=command_id, session_id=state.id, position=position
            )
            ctx: object = SlashCommandContextImpl._create(engine=engine, session=state, frame=frame)
            args: tuple[object, ...] = (argument, ctx)
        else:
            frame = HandlerFrame(mod_id=mod.id, kind="palette", command_id=command_id)
            ctx = CommandContextImpl._create(engine=engine, frame=frame, scope=scope)
            args = (ctx,)
        try:
            value = await call_handler(f"command {label} of mod {mod.id!r}", run, args, timeout=self._handler_timeout)
        except HandlerFailed as failed:
            # a hook that denied what the handler attempted is a policy's answer, not a bug
            refused = isinstance(failed.cause, ActionDeniedError)
            kind: ErrorKind = "timeout" if failed.timed_out else "denied" if refused else "handler_failed"
            return Submission(kind="command", text=failed.reason, error=failed.reason, error_kind=kind)
        return Submission(kind="command", text="" if value is None else str(value))

    def completions(self, text: str) -> Completions:
        """`Host.completions`: the slash commands matching ``text``, best first."""
        if not isinstance(text, str):
            raise InvalidArgumentError(
                f"completions() takes the typed text as a str (like '/ta'), got {show(text)}",
                argument="text",
                value=text,
            )
        query = text[1:] if text.startswith("/") else text
        query = query.split(" ", 1)[0].lower()
        ranked: list[tuple[tuple[int, float, str], Completion]] = []
        for name, (mod, declared) in self._tables.slash.items():
            rank = _rank(query, name)
            if rank is None:
                continue
            ranked.append(
                (
                    (rank[0], rank[1], name),
                    Completion(
                        name=name,
                        description=declared.description,
                        argument_hint=declared.argument_hint,
                        mod_id=mod.id,
                    ),
                )
            )
        ranked.sort(key=lambda pair: pair[0])
        return Completions((c for _, c in ranked), self._argument_values(text))

    def _argument_values(self, text: str) -> Callable[[], Awaitable[list[Completion]]] | None:
        """What awaiting the completions of ``text`` adds: ``/name prefix`` of a command with a completer."""
        name, space, prefix = text[1:].partition(" ") if text.startswith("/") else ("", "", "")
        entry = self._tables.slash.get(name) if space else None
        if entry is None or entry[1].complete is None:
            return None
        mod, declared = entry
        return lambda: argument_values(mod, declared, prefix, timeout=self._handler_timeout)

    def _proposed(self, submission: Submission, turn_id: str) -> Submission:
        """``submission`` with what its turn's reply proposed (`Submission.actions`)."""
        actions, errors = self._actions.results(turn_id)
        if not actions and not errors:
            return submission
        return attrs.evolve(submission, actions=actions, action_errors=errors)


def _rank(query: str, name: str) -> tuple[int, float] | None:
    if not query:
        return (1, 0.0)
    if name == query:
        return (0, 0.0)
    if name.startswith(query):
        return (1, float(len(name)))
    if query in name:
        return (2, float(name.index(query)))
    ratio = difflib.SequenceMatcher(None, query, name).ratio()
    if ratio >= 0.5:
        return (3, -ratio)
    return None

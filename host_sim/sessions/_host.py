"""`Host`: the simulator's front door, an async context manager on anyio."""

from __future__ import annotations

import os
from collections.abc import Callable, Coroutine, Mapping, Sequence
from contextlib import AbstractAsyncContextManager, AsyncExitStack
from datetime import UTC, datetime
from pathlib import Path
from types import TracebackType
from typing import TYPE_CHECKING, Literal, final

import anyio
import anyio.abc
import anyio.to_thread
import attrs

from modular_sdk import (
    HostAuthor,
    HostClosedError,
    InvalidArgumentError,
    Mod,
    ModularError,
    SessionDeletedError,
    SessionId,
)
from modular_sdk._rules import show

from ..lanes._calling import HandlerFrame
from ..lanes._ext_host import HandlerFailed, call_handler
from ..lanes._renderer import ViewResult, render, render_widget
from ..lineage._graph import LineageGraph
from ..mcp._client import McpTools
from ..memory._book import Memory
from ..memory._compaction import Compactor
from ..memory._policy import ContextPolicy
from ..models._echo import EchoModel
from ..models._protocol import Model
from ..models._secrets import scrubber_of
from ..observability import Telemetry, telemetry_for
from ..stores._invariants import recover
from ..stores._memory import MemoryStore
from ..stores._protocol import Store
from ..stores._records import Invocation, JobStatus
from ..stores._shared import SharedStore
from ..stores._traces import TraceStore, recover_traces
from ..traces._lineage_tool import BUILTIN_TOOLS, builtin_mod
from ..traces._service import CommitResolver, TraceLinker, Traces, require_traces
from ..traces._spool import SpoolConsumer, prepare_spool
from ..traces._types import ActionRecord, ActionStatus, PendingAction
from ._across_hosts import HostsLink, Outbox, replay_of
from ._actions import ActionBook
from ._approvals import Approvals
from ._cache import SessionCache
from ._commands import Commands
from ._completions import Completion, Completions
from ._core import HostCore
from ._engine import Engine, Limits, checked_now
from ._events import EventHub, EventStream
from ._handles import (
    AiSessionsImpl,
    EffectContextImpl,
    SessionHandle,
    TurnHandle,
    tool_context,
)
from ._host_arguments import check_host_arguments
from ._ids import new_host_id
from ._integrator import integrator_store_of
from ._jobs import Job, JobBook, JobPage
from ._memory_events import MemoryEvents
from ._scope import Scope
from ._scope_seq import ScopeNumbers
from ._scoped import ScopedHost
from ._state import SessionState
from ._submission import Submission
from ._tables import ModTables
from ._turns import JobCall

if TYPE_CHECKING:
    from opentelemetry.metrics import MeterProvider
    from opentelemetry.trace import TracerProvider

__all__ = ["Completion", "EffectStatus", "Host", "Submission", "ViewResult", "host_of"]


@attrs.frozen(kw_only=True)
class EffectStatus:
    """Where an effect is: ``running``, ``finished``, ``failed`` or ``cancelled``."""

    mod_id: str
    effect_id: str
    state: Literal["running", "finished", "failed", "cancelled"]
    error: str | None = None


def _utc_now() -> datetime:
    return datetime.now(UTC)


@final
class Host:
    """The host simulator: folds mods into lanes and runs their AI sessions.

    Use it as an async context manager (asyncio or trio, through anyio)::

        async with Host(mods=[background_tasks.mod]) as host:
            chat = await host.sessions.create()
            await host.submit(chat, "Refactor the parser")
            out = await host.submit(chat, "/task write the tests")

    ``mods`` are `Mod` values or mod specs (``"path/to/file.py"``, ``"package.module"``,
    either with ``":attr"``); a spec is built in the sandbox first and refused when its
    manifest and runtime fold disagree. ``model`` defaults to `EchoModel`, ``store`` to
    `MemoryStore`, ``clock`` to UTC now. ``handler_timeout`` bounds every mod handler
    (commands, tools, hooks, views; not effects) and ``model_timeout`` every model call,
    in seconds (``None``: no limit). ``on_bad_mod="skip"`` loads every good mod and leaves
    out each one that cannot load (a spec whose build fails, a value that is not a `Mod`, a
    repeated id, a command or tool another mod already declared), listed in
    `mod_errors`; the default ``"raise"`` refuses them all at once.
    ``spool`` is a folder other processes write events to (`write_event`); the host reads
    each event file of at most ``max_event_bytes`` and sets aside anything else (links,
    FIFOs, odd names, larger files) into ``spool/failed/``.
    A model reply longer than ``max_reply_bytes`` (UTF-8) fails its turn and nothing of it
    is kept; a streamed one is read no further.
    ``event_history`` is how many events the host keeps for ``subscribe(after=seq)`` whether
    or not anyone subscribes (a shared store keeps its event rows instead, see `PostgresStore`).
    ``tracer_provider`` and ``meter_provider`` (the ``otel`` extra) receive the host's
    OpenTelemetry spans and metrics; left out, the global providers do (when
    opentelemetry-api is installed). See docs/observability.md.
    ``context`` (a `ContextPolicy`) bounds what a model call carries: a history over its
    ``max_tokens`` is compacted into a summary record (API.md section 20, docs/memory.md);
    without it every call carries the whole history.
    """

    def __init__(
        self,
        mods: Sequence[Mod | str] = (),
        *,
        model: Model | None = None,
        store: Store | None = None,
        clock: Callable[[], datetime] | None = None,
        handler_timeout: float | None = 30.0,
        model_timeout: float | None = 120.0,
        max_tool_rounds: int = 8,
        cwd: str | None = None,
        spool: str | os.PathLike[str] | None = None,
        max_event_bytes: int = 1_048_576,
        commit_resolver: CommitResolver | None = None,
        builtin_tools: Sequence[str] = (),
        on_bad_mod: Literal["raise", "skip"] = "raise",
        max_reply_bytes: int = 1_000_000,
        event_history: int = 10_000,
        tracer_provider: TracerProvider | None = None,
        meter_provider: MeterProvider | None = None,
        context: ContextPolicy | None = None,
    ) -> None:
        specs, builtin_names = check_host_arguments(
            mods=mods,
            model=model,
            store=store,
            clock=clock,
            handler_timeout=handler_timeout,
            model_timeout=model_timeout,
            max_tool_rounds=max_tool_rounds,
            cwd=cwd,
            spool=spool,
            builtin_tools=builtin_tools,
            known_builtin_tools=BUILTIN_TOOLS,
            max_reply_bytes=max_reply_bytes,
            max_event_bytes=max_event_bytes,
            commit_resolver=commit_resolver,
            on_bad_mod=on_bad_mod,
            event_history=event_history,
            tracer_provider=tracer_provider,
            meter_provider=meter_provider,
        )
        if context is not None and not isinstance(context, ContextPolicy):
            raise InvalidArgumentError(
                f"Host(context=...) takes a ContextPolicy(max_tokens=...) or None, got {show(context)}",
                argument="context",
                value=context,
            )
        self._context = context
        self._tracer_provider, self._meter_provider = tracer_provider, meter_provider
        self._telemetry = Telemetry()  # what it reports through, chosen when it opens
        self._event_history = event_history
        self._on_bad_mod = on_bad_mod
        self._mod_errors: tuple[ModularError, ...] = ()
        self._specs = specs
        self._model: Model = model if model is not None else EchoModel()
        self._store: Store = store if store is not None else MemoryStore()
        self._clock = clock if clock is not None else _utc_now
        self._handler_timeout = handler_timeout
        self._model_timeout = model_timeout
        self._max_tool_rounds = max_tool_rounds
        self._max_reply_bytes = max_reply_bytes
        self._cwd = cwd if cwd is not None else os.getcwd()
        # Traces (API.md section 9): the spool, the commit resolver and the built-in tools.
        if spool is not None:
            require_traces(self._store)  # TraceError naming the store: the spool applies to traces
        self._spool = None if spool is None else Path(spool)
        self._max_event_bytes = max_event_bytes
        self._commit_resolver = commit_resolver
        self._builtin_tools = builtin_names
        self._spool_consumer: SpoolConsumer | None = None
        self._engine: Engine | None = None
        self._tables: ModTables | None = None  # the loaded mods' declarations, built when the host opens
        self._events: EventHub | None = None  # the host's event hub, closed last
        self._core: HostCore | None = None  # what opening builds: the surface Host and ScopedHost share
        self._task_group: anyio.abc.TaskGroup | None = None
        self._exits = AsyncExitStack()  # what __aenter__ entered (the task group), closed by __aexit__
        self._effects: dict[tuple[str, str], EffectStatus] = {}
        self._commands: Commands | None = None
        self._link: HostsLink | None = None
        self._state: Literal["new", "open", "closed"] = "new"

    # -- lifecycle ----------------------------------------------------------------------
    async def __aenter__(self) -> Host:
        if self._state != "new":
            raise HostClosedError("a Host can be entered once; make a new Host(...) to open again", state=self._state)
        # Before anything opens: a provider without opentelemetry-api fails here.
        self._telemetry = telemetry_for(self._tracer_provider, self._meter_provider, self._model)
        skip = self._on_bad_mod == "skip"
        mods: list[object] = []
        positions: list[int] = []  # where each of mods was in the caller's list
        unbuilt: dict[int, ModularError] = {}
        for index, spec in enumerate(self._specs):
            if isinstance(spec, str):
                from ..fold import load_verified

                try:
                    mods.append(await load_verified(spec))
                except ModularError as failed:  # the build refused it (ManifestBuildError...)
                    if not skip:
                        raise
                    unbuilt[index] = failed
                    continue
            else:
                mods.append(spec)
            positions.append(index)
        if self._builtin_tools:  # the host's own tools, as the mod 'host-sim'
            mods.append(builtin_mod(self._builtin_tools, self._store))
            positions.append(len(self._specs))
        tables, skipped = ModTables.build(mods, skip_bad=skip, positions=positions)
        bad = {**unbuilt, **dict(skipped)}
        self._mod_errors = tuple(bad[index] for index in sorted(bad))
        if self._spool is not None:  # a path that is not a folder fails here, not in the consumer
            await anyio.to_thread.run_sync(prepare_spool, self._spool)
        await self._store.open()
        integrator_store = integrator_store_of(self._store)
        try:
            await recover(self._store, self._now)
            if isinstance(self._store, TraceStore):
                await recover_traces(self._store)  # the trace index, when missing or stale
            if not isinstance(self._store, SharedStore):  # several hosts: the link does it, after a grace
                await integrator_store.interrupt_jobs(self._now)  # jobs a crash left running
            # What this host loads from now on is at least this fresh (several hosts).
            generation = await self._store.erasure_generation() if isinstance(self._store, SharedStore) else 0
        except BaseException:
            with anyio.CancelScope(shield=True):
                await self._store.close()
            raise
        shared = self._store if isinstance(self._store, SharedStore) else None
        outbox = None if shared is None else Outbox(shared)  # several hosts: writes the events' rows
        numbers = ScopeNumbers(self._event_history, store=self._store, integrator_store=integrator_store)
        events = EventHub(
            self._now,
            observe=numbers.saw,
            history=self._event_history,
            host_id=new_host_id() if shared is None else shared.host_id,
            replay=None if shared is None else replay_of(shared),
            writer=outbox,
        )
        # What this host keeps of the store: the engine acts through it, the graph reports its
        # erasures and retractions to it, the event link feeds it other hosts' facts.
        cache = SessionCache(store=self._store, integrator_store=integrator_store, events=events, now=self._now, generation=generation)
        graph = LineageGraph(self._store, clock=self._clock, integrator_store=integrator_store, facts=cache)
        linker = TraceLinker(self._store, self._now)
        mcp = McpTools(
            tables.mcp_servers,
            store=self._store,
            clock=self._now,
            timeout=self._handler_timeout,
            start=self._start_owned,  # servers start on first need, in the host's task group
            scrub=scrubber_of(self._model),  # what a server answers passes the model's secret filter
        )
        # What replies propose: the engine records each completed turn's proposals in it.
        actions = ActionBook(
            events=events, mods=tables.mods, store=self._store, clock=self._now, handler_timeout=self._handler_timeout,
            mcp=mcp if mcp.declared else None, start=self._start_owned,
        )
        engine = Engine(
            tables=tables,
            model=self._model,
            store=self._store,
            graph=graph,
            clock=self._clock,
            limits=Limits(
                handler_timeout=self._handler_timeout,
                model_timeout=self._model_timeout,
                max_tool_rounds=self._max_tool_rounds,
                max_reply_bytes=self._max_reply_bytes,
            ),
            cwd=self._cwd,
            tool_context=tool_context,
            integrator_store=integrator_store,
            mcp=mcp if mcp.declared else None,
            events=events,
            cache=cache,
            linker=linker,
            actions=actions,
            telemetry=self._telemetry,
            context=None
            if self._context is None
            else Compactor(
                self._context,
                store=self._store,
                model=self._model,
                clock=self._now,
                notices=MemoryEvents(events, self._telemetry),
            ),
        )
        self._link = (
            None
            if shared is None or outbox is None
            else HostsLink(shared, events=events, outbox=outbox, cache=cache, now=self._now)
        )
        if self._link is not None:
            try:
                await self._link.start()
            except BaseException:
                with anyio.CancelScope(shield=True):
                    await self._store.close()
                raise
        self._engine, self._tables, self._events = engine, tables, events
        self._commands = commands = Commands(
            engine=engine, tables=tables, integrator_store=integrator_store, events=events, actions=actions, telemetry=self._telemetry, handler_timeout=self._handler_timeout
        )
        traces = (
            Traces._create(self._store, self._now, self._commit_resolver, self._store)
            if isinstance(self._store, TraceStore)
            else None
        )
        if self._spool is not None:
            self._spool_consumer = SpoolConsumer(
                self._spool, self._store, linker, self._now, max_event_bytes=self._max_event_bytes
            )
        task_group = await self._exits.enter_async_context(anyio.create_task_group())
        self._task_group = task_group
        jobs = JobBook(integrator_store=integrator_store, events=events, now=engine.now, task_group=task_group, submit=self._submit_in_job)
        self._core = HostCore(
            engine=engine,
            graph=graph,
            actions=actions,
            commands=commands,
            jobs=jobs,
            integrator_store=integrator_store,
            traces=traces,
            numbers=numbers,
            now=self._now,
            completions=self.completions,
            owner=self,
        )
        if self._spool_consumer is not None:  # the host owns the spool's consumer task
            task_group.start_soon(self._spool_consumer.run)
        if self._link is not None:  # several hosts: events, caches and dead hosts
            task_group.start_soon(self._link.run)
        self._state = "open"
        for mod in tables.mods:
            for declared in mod.effects:
                self._effects[(mod.id, declared.id)] = EffectStatus(mod_id=mod.id, effect_id=declared.id, state="running")
                task_group.start_soon(self._run_effect, mod, declared.id, declared.activate)
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> bool | None:
        self._state = "closed"
        if self._core is not None:
            self._core.close()
        try:
            if self._task_group is not None:
                # The body's exception is not the effects' business: close the task group
                # as if the body ended cleanly, so the caller's exception propagates as it
                # is (`except NoConversationError` works) instead of in an ExceptionGroup.
                self._task_group.cancel_scope.cancel()
                await self._exits.aclose()
        finally:
            with anyio.CancelScope(shield=True):
                if self._engine is not None:
                    await self._engine.close()
                    if self._link is not None:
                        await self._link.flush()  # the turns close() failed: other hosts learn of it
                    if self._events is not None:
                        self._events.close()  # subscribers read what is left, then stop
                await self._store.close()
        return None

    def _now(self) -> datetime:
        """The host clock's time, checked (timezone-aware): what every part of the host is given as ``now``."""
        return checked_now(self._clock)

    def _start_owned(self, run: Callable[[], Coroutine[object, object, None]]) -> None:
        """Run ``run()`` in the host's task group (cancelled when the host closes)."""
        if self._state != "open" or self._task_group is None:
            raise HostClosedError("the host is closed; nothing new starts in it", state=self._state)
        self._task_group.start_soon(run)

    async def _run_effect(self, mod: Mod, effect_id: str, activate: Callable[..., object]) -> None:
        assert self._engine is not None
        ctx = EffectContextImpl._create(
            engine=self._engine, frame=HandlerFrame(mod_id=mod.id, kind="effect"), effect_id=effect_id
        )
        key = (mod.id, effect_id)
        try:
            await call_handler(f"effect {effect_id!r} of mod {mod.id!r}", activate, (ctx,), timeout=None)
        except HandlerFailed as failed:
            self._effects[key] = attrs.evolve(self._effects[key], state="failed", error=failed.reason)
        except anyio.get_cancelled_exc_class():
            self._effects[key] = attrs.evolve(self._effects[key], state="cancelled")
            raise
        else:
            self._effects[key] = attrs.evolve(self._effects[key], state="finished")

    def _open(self) -> Engine:
        if self._state != "open" or self._engine is None:
            raise HostClosedError(
                f"this Host is {'not entered yet' if self._state == 'new' else 'closed'}; use it "
                "inside 'async with Host(...) as host:'",
                state=self._state,
            )
        return self._engine

    def _tables_open(self) -> ModTables:
        """The loaded mods' declarations of the open host; `HostClosedError` otherwise."""
        self._open()
        assert self._tables is not None
        return self._tables

    def _commands_open(self) -> Commands:
        """The command path (`Commands`) of the open host; `HostClosedError` otherwise."""
        self._open()
        assert self._commands is not None
        return self._commands

    def _opened(self) -> HostCore:
        """The open host's surface (`HostCore`); `HostClosedError` otherwise."""
        self._open()
        assert self._core is not None
        return self._core

    # -- public surface -----------------------------------------------------------------
    @property
    def sessions(self) -> AiSessionsImpl:
        """The session catalogue: ``await host.sessions.create()`` / ``get(id)``."""
        return self._opened().sessions(None)

    @property
    def memory(self) -> Memory:
        """What conversations were read into (API.md section 20): records resting on turns,
        written by the host (``made_by`` the host); see `Memory`. A `ScopedHost`'s is limited
        to its scope, a handler's ``ctx.ai.memory`` is stamped with its mod."""
        return self._opened().memory(HostAuthor(), None)

    @property
    def lineage(self) -> LineageGraph:
        """The lineage graph of every session this host (and its store) has seen."""
        return self._opened().graph

    @property
    def mods(self) -> tuple[Mod, ...]:
        """The mods loaded, in the order given."""
        return self._tables_open().mods

    @property
    def model(self) -> Model:
        return self._model

    @property
    def mod_errors(self) -> tuple[ModularError, ...]:
        """The mods ``Host(on_bad_mod="skip")`` left out, one error each, in ``mods`` order.

        A spec whose build failed gives its `ManifestBuildError` (``.spec``, ``.problems``);
        a mod that could not load with the others a `ModDefinitionError` naming it and why
        (``.value`` is the mod). Empty when every mod loaded, and always with the default
        ``on_bad_mod="raise"``.
        """
        return self._mod_errors

    @property
    def effects(self) -> list[EffectStatus]:
        """Every effect's status, in declaration order."""
        return list(self._effects.values())

    async def _session(self, session: SessionHandle | SessionId | str) -> SessionState:
        return await self._opened().state(session, None)

    async def submit(
        self, session: SessionHandle | SessionId | str, text: str, *, request_id: str | None = None
    ) -> Submission:
        """What the user types: ``/name argument`` runs a slash command, anything else is a prompt.

        A doubled leading slash is a literal one, as in chat apps: ``//etc/hosts`` sends the
        prompt ``/etc/hosts``. Never raises for a failed command or turn: see `Submission.error`.
        ``request_id``: the caller's key; a retry of a prompt with the same key returns the
        turn the first attempt stored instead of storing it twice (API.md section 23).
        """
        return await self._opened().submit(session, text, request_id, None)

    async def run_command(self, command_id: str) -> Submission:
        """Run a palette command (no session) and report like `submit`.

        Raises `InvalidArgumentError` when ``command_id`` is not a str.
        """
        return await self._opened().run_command(command_id, None)

    def scoped(self, tags: Mapping[str, str]) -> ScopedHost:
        """The host as one tenant or owner sees it (API.md §14): ``host.scoped({"user": "alice"})``.

        A `ScopedHost` has this host's surface, limited to the sessions whose tags include
        every one of ``tags``; sessions it creates get them. An id outside the scope raises
        what an id that does not exist raises. Make one per request of a multi-user server.
        Raises `InvalidArgumentError` unless ``tags`` is a non-empty mapping of str to str.
        """
        return ScopedHost._create(self._opened(), Scope.of(tags))

    def completions(self, text: str) -> Completions:
        """Slash-command typeahead for what the user typed so far (``"/ta"``), best first.

        A plain call returns the matching commands at once (a `Completions` list). Awaited,
        ``await host.completions("/task wri")`` also runs the command's ``complete(prefix,
        ctx)`` (``slash_command(..., complete=fn)``) with the handler timeout and puts the
        argument values it offers first (`Completion.argument`).
        """
        return self._commands_open().completions(text)

    async def render_view(self, view_id: str, data: object) -> ViewResult:
        """Render a view in the renderer lane (pure data in, text out, no session access)."""
        tables = self._tables_open()
        entry = tables.views.get(view_id) if isinstance(view_id, str) else None
        if entry is None:
            known = sorted(tables.views)
            message = f"unknown view {show(view_id)} (views: {', '.join(map(repr, known)) or 'none loaded'})"
            return ViewResult(text=message, error=message)
        mod, declared = entry
        return await render(mod.id, declared, data, timeout=self._handler_timeout)

    async def render_widget(self, widget_id: str, session: SessionHandle | SessionId | str, data: object) -> ViewResult:
        """Render a widget for one session in the renderer lane: ``data`` (JSON data, or an
        instance of the widget's data type) is structured strictly into its data type, then
        ``render(data)`` runs with no session access.

        Raises `modular_sdk.UnknownSessionError` for an unknown session; an unknown widget,
        data that does not fit, or a failing ``render`` give a `ViewResult` with ``error``.
        """
        tables = self._tables_open()
        await self._session(session)  # the chat it is shown in must exist
        entry = tables.widgets.get(widget_id) if isinstance(widget_id, str) else None
        if entry is None:
            known = sorted(tables.widgets)
            message = f"unknown widget {widget_id!r} (widgets: {', '.join(map(repr, known)) or 'none loaded'})"
            return ViewResult(text=message, error=message)
        mod, declared = entry
        return await render_widget(mod.id, declared, data, timeout=self._handler_timeout)

    async def transcript(self, session: SessionHandle | SessionId | str) -> str:
        """The session's history as text: its turns (authors and notifications marked) and the
        commands typed in it with their output, in `log` order."""
        return await self._opened().transcript(session, None)


    # -- the integrator's surface (API.md section 12) --------------------------------------

    def subscribe(self, *, buffer: int = 1000, after: int | None = None) -> AbstractAsyncContextManager[EventStream]:
        """Watch the host live: ``async with host.subscribe() as events: async for event in events``.

        Yields every `HostEvent` published after subscribing, each with a ``seq`` (but
        ``reply_delta``), ``at`` and ``host_id``; events of one session come in the order
        they happened. Each event is a snapshot of what was true when it was published (an
        erasure later is a ``turn_erased`` event, never a rewrite). A subscriber never slows
        the host: it keeps at most ``buffer`` unread events, and when it falls further
        behind the oldest are dropped and it reads one ``lagged`` event saying how many.
        Iteration ends when the host closes.

        ``after=seq`` resumes after an event read before (an SSE ``Last-Event-ID``): the
        host keeps its last ``Host(event_history=...)`` events whether or not anyone
        subscribes; when the events after ``seq`` are gone the stream starts with
        ``lagged``. A seq this host never published (it restarted) replays all it kept.
        """
        return self._open().events.subscribe(buffer, after)

    async def start(self, session: SessionHandle | SessionId | str, text: str, *, request_id: str | None = None) -> Job:
        """Accept what `submit` accepts and return at once a running `Job` the host owns.

        The job runs in the host's task group: cancelling the caller does not cancel it;
        closing the host does, and records it ``interrupted``; ``job.cancel()`` records it
        ``cancelled``. Publishes ``job_started`` and, when it ends, ``job_finished``; the
        events of its turn and command carry its ``job_id``. Jobs are durable records: any
        host sharing the store finds it (`job`, `jobs`).
        Its OpenTelemetry spans are children of the span current here (docs/observability.md).
        ``request_id``: the caller's key; a retry with the same key returns the job the first
        attempt stored (its id derives from the key) instead of starting another (API.md section 23).
        """
        return await self._opened().start(session, text, request_id, None)

    async def _submit_in_job(self, session_id: SessionId, text: str, job: JobCall) -> Submission:
        engine = self._open()
        try:
            return await self._commands_open().submit(await engine.load(session_id), text, job)
        except SessionDeletedError as gone:  # deleted (on any host) after the job was started
            return Submission(kind="prompt", text=str(gone), error=str(gone), error_kind="invalid_input")

    async def job(self, job_id: str) -> Job:
        """The job with this id, on whichever host sharing the store started it (one read by key).

        Raises `UnknownJobError` naming the id when the store holds no such job.
        """
        return await self._opened().job(job_id, None)

    async def cancel_job(self, job_id: str) -> None:
        """Cancel a job on whichever host runs it (`Job.cancel`); `UnknownJobError` for an unknown id."""
        await self._opened().cancel_job(job_id, None)

    async def jobs(
        self,
        *,
        session: SessionHandle | SessionId | str | None = None,
        status: JobStatus | None = None,
        tags: Mapping[str, str] | None = None,
        limit: int = 50,
        after: str | None = None,
    ) -> JobPage:
        """A page of the jobs of every host sharing the store, newest first: of one session,
        with one status, of sessions whose tags include every one of ``tags``, at most
        ``limit``, continuing after the cursor ``after`` (a page's ``next``). Served by an
        index: a page costs what it returns. Raises `InvalidArgumentError` naming a bad
        argument (`UnknownSessionError` for an unknown session)."""
        return await self._opened().jobs(session, status, tags, limit, after, None)

    async def log(self, session: SessionHandle | SessionId | str) -> list[TurnHandle | Invocation]:
        """The session's turns (inherited ones included) and command invocations, in the order they started."""
        return await self._opened().log(session, None)

    async def notifications(
        self,
        *,
        session: SessionHandle | SessionId | str | None = None,
        unread_only: bool = True,
        tags: Mapping[str, str] | None = None,
    ) -> list[TurnHandle]:
        """The notification turns (of one session, or of every session), oldest first; read ones
        are left out unless ``unread_only=False``; with ``tags``, only those of sessions whose
        tags include every one of them (``tags={"user": "alice"}``: Alice's inbox). Read state
        is durable (`mark_read`). Raises `InvalidArgumentError` naming a bad argument."""
        return await self._opened().notifications(session, unread_only, tags, None)

    async def mark_read(self, turn_id: str) -> None:
        """Remember that the user read this notification (a turn id or message id)."""
        await self._opened().mark_read(turn_id, None)


    # -- traces and actions (API.md section 9) ------------------------------------------
    @property
    def traces(self) -> Traces:
        """Traces: task -> session -> output -> commit (``for_task``, ``find``, ``attach_task``,
        ``record_commit``). Every store of host_sim keeps traces; raises `TraceError` for a
        store of your own that does not implement `TraceStore`."""
        return self._opened().traces()

    @property
    def approvals(self) -> Approvals:
        """Standing approvals ("allow always", API.md section 21): ``allow``, ``list``, ``get``, ``revoke``.

        An action a live rule matches is confirmed the moment it is proposed, ``decided_by``
        the rule's id (see `Approvals`). Durable on every store; erased with their sessions.
        """
        return self._opened().approvals(None)

    async def pending_actions(self, session: SessionHandle | SessionId | str) -> list[PendingAction]:
        """The actions models proposed in ``session`` that wait for the user, in the order proposed."""
        return await self._opened().pending_actions(session, None)

    async def confirm(self, action_id: str, *, by: str | None = None, reason: str | None = None) -> Submission:
        """Run a pending action once, as the user: its ``run(payload, ctx)``.

        ``by`` (who decided: your name for the user) and ``reason`` (why) are kept with the
        decision, durable (`actions`). Returns a `Submission` (``kind`` ``"command"``) whose
        ``text`` is ``str()`` of what ``run`` returned (``""`` for ``None``), or whose
        ``error`` says how it failed. An ``mcp.call`` action (a tool of a mod's MCP server that
        is not read-only, which the model called) runs that tool: ``text`` is its answer, also
        delivered to the session as a notification turn. Raises
        `modular_sdk.ActionStateError` for an unknown action, one confirmed or dismissed
        before, or one whose mod is not loaded, and `modular_sdk.InvalidArgumentError` for a
        ``by`` or ``reason`` that is not text.
        """
        return await self._opened().confirm(action_id, by, reason, None)

    async def dismiss(self, action_id: str, *, by: str | None = None, reason: str | None = None) -> None:
        """Drop a pending action: it never runs. ``by`` and ``reason`` are kept as for `confirm`.
        Raises `modular_sdk.ActionStateError` for an unknown action or one confirmed or
        dismissed before."""
        await self._opened().dismiss(action_id, by, reason, None)

    async def actions(
        self, session: SessionHandle | SessionId | str, *, status: ActionStatus | None = None
    ) -> list[ActionRecord]:
        """Every action proposed in ``session`` and what became of it, in the order proposed.

        Each `ActionRecord` says its ``status`` and, once decided, who decided, when and why
        (an approval audit); ``status=`` keeps only those (``"pending"``, ``"confirmed"``,
        ``"dismissed"``). Durable on every store; erased with the turn that proposed an
        action, or its session (payload and reason go, who and when stay).
        """
        return await self._opened().actions(session, status, None)


def host_of(view: Host | ScopedHost) -> Host:
    """The `Host` a view was made from (``view`` itself for a host)."""
    if isinstance(view, Host):
        return view
    owner = view._core.owner
    assert isinstance(owner, Host)
    return owner

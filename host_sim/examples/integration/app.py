"""A small multi-user chat backend: host_sim behind HTTP (Starlette, ASGI).

It uses only the public names of ``host_sim`` and ``modular_sdk``. Every request names its
user in the ``X-User`` header (a stand-in for real authentication: put your session
cookie or token check in `user_of`). Each request acts through ``host.scoped({"user": ...})``,
the user's view of the host: what it creates is tagged with the user's id, and it sees
nothing else; another user's id answers as an id that does not exist (404). The app itself
checks no ownership.

==========================================  ===============================================
``POST /sessions``                          create a session owned by the user
                                            (``{"label": "..."}`` optional); 201
``GET /sessions?limit=&after=&roots_only=`` the user's sessions, newest first, a page at a
                                            time (``next`` is the cursor for ``after``)
``GET /sessions/{id}``                      one session and its log (turns and commands)
``DELETE /sessions/{id}``                   delete it: its content is erased; 204
``POST /agui``                              the chat, spoken in AG-UI: a ``RunAgentInput``
                                            (``threadId``: a session id, or a new thread) answers
                                            the run as AG-UI events (`host_sim.agui_app` over
                                            the user's view): what a CopilotKit or
                                            ``@ag-ui/client`` front end sends. An edited
                                            earlier message runs in a fork at the turn before
                                            it (``RUN_STARTED.threadId``: the fork), so the
                                            app has no fork route of its own
``POST /sessions/{id}/messages``            ``{"text": "..."}``, a prompt or a ``/command``,
                                            run as a host-owned job nobody watches; 202 with
                                            the job (AG-UI has no run without a stream)
``GET /jobs/{id}?wait=SECONDS``             a job, once it ended with what it gave
``DELETE /jobs/{id}``                       cancel a job, on whichever process runs it; 202
``GET /sessions/{id}/tree``                 the session, its forks and spawns, nested
``GET /inbox?unread_only=false``            the user's notifications, oldest first
``POST /inbox/{turn_id}/read``              mark one read; 204
``GET /events?session=&limit=``             server-sent events of the user's sessions
==========================================  ===============================================

Run it (``pip install 'modular-chat-sdk[examples]' uvicorn``)::

    CHAT_STORE=chat.sqlite uvicorn --factory host_sim.examples.integration.app:from_environment

With ``OPENAI_MODEL`` set (and ``OPENAI_BASE_URL`` for a local server) replies come from a
real model and stream as ``reply_delta`` events; otherwise `EchoModel` answers.
Every event and record goes out in the SDK's own JSON form (``modular_sdk.to_json``: the
fields of the typed value, with its ``kind``), so the app writes no serializer of its own.
With ``OTEL_EXPORTER_OTLP_ENDPOINT`` set (``pip install opentelemetry-sdk
opentelemetry-exporter-otlp-proto-http``) the host's spans go to that OTLP/HTTP collector
(docs/observability.md); otherwise nothing is traced.
"""

from __future__ import annotations

import json
import os
from collections.abc import AsyncGenerator, AsyncIterator, Callable, Coroutine, Mapping, Sequence
from contextlib import asynccontextmanager
from datetime import datetime
from typing import TYPE_CHECKING, TypeAlias, cast

import anyio
import anyio.to_thread
from starlette.applications import Starlette
from starlette.exceptions import HTTPException
from starlette.requests import Request
from starlette.responses import JSONResponse, Response, StreamingResponse
from starlette.routing import Route
from starlette.types import Receive, Scope, Send

from host_sim import (
    Host,
    HostEvent,
    Invocation,
    Job,
    JobFinished,
    JobStarted,
    Lagged,
    Model,
    OpenAIModel,
    PostgresStore,
    ScopedHost,
    SessionHandle,
    SqliteStore,
    Store,
    TurnHandle,
    UnknownJobError,
    agui_app,
)
from host_sim.examples import background_tasks
from modular_sdk import (
    AiSessionDisplayMetadata,
    HostClosedError,
    InvalidArgumentError,
    Mod,
    SessionDeletedError,
    UnknownSessionError,
    UnknownTurnError,
    to_json,
)

if TYPE_CHECKING:
    from opentelemetry.sdk.trace import TracerProvider

__all__ = ["ChatBackend", "create_app", "from_environment"]

JSON: TypeAlias = "str | int | float | bool | None | list[JSON] | dict[str, JSON]"

OWNER = "user"  # the tag that says whose a session is
KEEP_ALIVE = 15.0  # seconds of silence before an SSE comment keeps proxies from closing
MAX_WAIT = 60.0  # the longest GET /jobs/{id}?wait= may hold a request


class ChatBackend:
    """The routes, over one `Host` that the app's lifespan opens and closes."""

    def __init__(
        self,
        store: Callable[[], Store],
        *,
        model: Model | None = None,
        mods: Sequence[Mod] = (),
        tracer_provider: TracerProvider | None = None,
    ) -> None:
        self._store = store
        self._model = model
        self._mods = tuple(mods)
        self._tracer_provider = tracer_provider
        self._host: Host | None = None

    @property
    def host(self) -> Host:
        if self._host is None:
            raise HTTPException(503, "the chat host is not running (the app's lifespan has not started it)")
        return self._host

    @asynccontextmanager
    async def lifespan(self, app: Starlette) -> AsyncGenerator[None]:
        """Open the host (a fresh store each time: a restart reopens the same file) and close it at
        shutdown; then send the spans still batched, if it traces."""
        try:
            async with Host(mods=self._mods, model=self._model, store=self._store(), tracer_provider=self._tracer_provider) as host:
                self._host = host
                try:
                    yield
                finally:
                    self._host = None
        finally:
            if self._tracer_provider is not None:
                await anyio.to_thread.run_sync(self._tracer_provider.force_flush)

    def view(self, request: Request) -> ScopedHost:
        """The host as the requesting user sees it: their sessions, jobs, inbox and events."""
        return self.host.scoped({OWNER: user_of(request)})

    # -- sessions -------------------------------------------------------------------------

    async def create_session(self, request: Request) -> Response:
        label = (await body_of(request)).get("label")
        if label is not None and (not isinstance(label, str) or not label.strip()):
            raise HTTPException(422, f"label must be a non-empty string or absent, got {label!r}")
        metadata = AiSessionDisplayMetadata(label=label) if isinstance(label, str) else None
        session = await self.view(request).sessions.create(metadata=metadata)
        return JSONResponse(session_json(session), status_code=201)

    async def list_sessions(self, request: Request) -> Response:
        limit = int(number_param(request, "limit", default=20, low=1, high=200))
        roots_only = bool_param(request, "roots_only")
        after = request.query_params.get("after")
        page = await self.view(request).sessions.list(roots_only=roots_only, limit=limit, after=after)
        return JSONResponse({"sessions": [session_json(s) for s in page.sessions], "next": page.next})

    async def get_session(self, request: Request) -> Response:
        session = await self.owned(request, request.path_params["session_id"])
        log = await self.view(request).log(session)
        return JSONResponse({**session_json(session), "log": [log_json(entry) for entry in log]})

    async def delete_session(self, request: Request) -> Response:
        session = await self.owned(request, request.path_params["session_id"])
        await self.view(request).sessions.delete(session.id)
        return Response(status_code=204)

    async def tree(self, request: Request) -> Response:
        session = await self.owned(request, request.path_params["session_id"])
        return JSONResponse(data(await self.view(request).lineage.tree(session.id)))

    # -- messages and jobs ----------------------------------------------------------------

    async def post_message(self, request: Request) -> Response:
        session = await self.owned(request, request.path_params["session_id"])
        text = (await body_of(request)).get("text")
        if not isinstance(text, str):
            raise HTTPException(422, f'send {{"text": "..."}} with the message as a string, got text={text!r}')
        job = await self.view(request).start(session, text)  # runs in the host's task group, not this request's
        return JSONResponse(job_json(job), status_code=202)

    async def owned_job(self, request: Request) -> Job:
        """The job of the path, if it is the user's (started by any process, before a restart too)."""
        job_id = request.path_params["job_id"]
        try:
            return await self.view(request).job(job_id)  # another user's job: as if it did not exist
        except UnknownJobError:
            raise HTTPException(404, f"no job {job_id!r} for user {user_of(request)!r}") from None

    async def get_job(self, request: Request) -> Response:
        job = await self.owned_job(request)
        wait = number_param(request, "wait", default=0.0, low=0.0, high=MAX_WAIT)
        if wait and job.status == "running":
            with anyio.move_on_after(wait):
                await job.wait()
        return JSONResponse(job_json(job))

    async def cancel_job(self, request: Request) -> Response:
        job = await self.owned_job(request)
        await job.cancel()  # at once here, or within about a second on the process that runs it
        return JSONResponse(job_json(job), status_code=202)

    # -- inbox ----------------------------------------------------------------------------

    async def inbox(self, request: Request) -> Response:
        unread_only = bool_param(request, "unread_only", default=True)
        mine = await self.view(request).notifications(unread_only=unread_only)
        return JSONResponse({"notifications": [turn_json(n) for n in mine]})

    async def mark_read(self, request: Request) -> Response:
        view = self.view(request)
        turn_id = request.path_params["turn_id"]
        try:
            turn: TurnHandle | None = await view.sessions.turn(turn_id)
        except UnknownTurnError:
            turn = None
        if turn is None or turn.message.type != "notification":
            raise HTTPException(404, f"no notification {turn_id!r} for user {user_of(request)!r}")
        await view.mark_read(turn.id)
        return Response(status_code=204)

    # -- events ---------------------------------------------------------------------------

    async def events(self, request: Request) -> Response:
        view = self.view(request)  # the host filters the events: only the user's sessions'
        only = request.query_params.get("session")
        if only is not None:
            await self.owned(request, only)
        limit = int(number_param(request, "limit", default=0, low=1, high=1_000_000)) or None
        last_id = request.headers.get("last-event-id", "")  # a reconnecting EventSource resumes after it
        after = int(last_id) if last_id.isdigit() and len(last_id) <= 18 else None
        job_sessions: dict[str, str] = {}  # a job_finished names its job; job_started, its session

        def visible(event: HostEvent) -> bool:
            """With ``?session=``, only that session's events (the user's own, already)."""
            if only is None or isinstance(event, Lagged):
                return True  # lagged: the client missed events and should reload what it shows
            if isinstance(event, JobStarted):
                job_sessions[event.job_id] = event.session_id
            session_id = job_sessions.pop(event.job_id, None) if isinstance(event, JobFinished) else event.session_id
            return session_id == only

        async def stream() -> AsyncIterator[str]:
            sent = 0
            async with view.subscribe(after=after) as events:
                while limit is None or sent < limit:
                    event: HostEvent | None = None
                    with anyio.move_on_after(KEEP_ALIVE):  # never yield inside a cancel scope
                        try:
                            event = await events.__anext__()
                        except StopAsyncIteration:  # the host closed
                            return
                    if event is None:
                        yield ": keep-alive\n\n"
                    elif visible(event):
                        sent += 1
                        seen = "" if event.seq is None else f"id: {event.seq}\n"  # a delta is live only
                        yield f"{seen}event: {event.kind}\ndata: {to_json(event)}\n\n"

        headers = {"Cache-Control": "no-cache", "X-Accel-Buffering": "no"}
        return StreamingResponse(stream(), media_type="text/event-stream", headers=headers)

    # -- the path's session -----------------------------------------------------------------

    async def owned(self, request: Request, session_id: str) -> SessionHandle:
        """The user's session; 404 for another user's (the scoped view never says it exists), 410 once deleted."""
        try:
            session = await self.view(request).sessions.get(session_id)
        except UnknownSessionError:
            raise HTTPException(404, f"no session {session_id!r} for user {user_of(request)!r}") from None
        if session.deleted_at is not None:
            raise HTTPException(410, f"session {session_id!r} was deleted at {session.deleted_at.isoformat()}")
        return session


class AguiPerUser:
    """``POST /agui``: `host_sim.agui_app` over the requesting user's view (plain ASGI: the run is
    a stream). A thread is one of their sessions (its id), or a new one tagged with their id."""

    def __init__(self, backend: ChatBackend) -> None:
        self._backend = backend

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        try:
            view = self._backend.view(Request(scope))
        except HTTPException as refused:
            await JSONResponse({"error": refused.detail}, status_code=refused.status_code)(scope, receive, send)
            return
        await agui_app(view, path="/agui")(scope, receive, send)


def create_app(
    store: Callable[[], Store],
    *,
    model: Model | None = None,
    mods: Sequence[Mod] = (background_tasks.mod,),
    tracer_provider: TracerProvider | None = None,
) -> Starlette:
    """The ASGI app. ``store`` makes the store each time the app starts, e.g.
    ``lambda: SqliteStore("chat.sqlite")``; ``tracer_provider`` receives the host's spans."""
    backend = ChatBackend(store, model=model, mods=mods, tracer_provider=tracer_provider)
    routes = [
        Route("/agui", AguiPerUser(backend), methods=["POST"]),
        Route("/sessions", backend.create_session, methods=["POST"]),
        Route("/sessions", backend.list_sessions, methods=["GET"]),
        Route("/sessions/{session_id}", backend.get_session, methods=["GET"]),
        Route("/sessions/{session_id}", backend.delete_session, methods=["DELETE"]),
        Route("/sessions/{session_id}/messages", backend.post_message, methods=["POST"]),
        Route("/sessions/{session_id}/tree", backend.tree, methods=["GET"]),
        Route("/jobs/{job_id}", backend.get_job, methods=["GET"]),
        Route("/jobs/{job_id}", backend.cancel_job, methods=["DELETE"]),
        Route("/inbox", backend.inbox, methods=["GET"]),
        Route("/inbox/{turn_id}/read", backend.mark_read, methods=["POST"]),
        Route("/events", backend.events, methods=["GET"]),
    ]
    handlers: Mapping[type[Exception], Callable[[Request, Exception], Coroutine[object, object, Response]]] = {
        error: refused for error in (HTTPException, InvalidArgumentError, HostClosedError, SessionDeletedError)
    }
    return Starlette(routes=routes, lifespan=backend.lifespan, exception_handlers=handlers)


def from_environment() -> Starlette:
    """The app as ``uvicorn --factory`` starts it: ``$CHAT_STORE`` (default ``chat.sqlite``; a
    ``postgresql://`` URL for PostgreSQL),
    ``$OPENAI_MODEL`` and ``$OPENAI_BASE_URL`` (EchoModel when no model is named), and
    ``$OTEL_EXPORTER_OTLP_ENDPOINT`` (spans to that collector; none when it is unset)."""
    path = os.environ.get("CHAT_STORE", "chat.sqlite")
    name = os.environ.get("OPENAI_MODEL")
    model: Model | None = None
    if name:
        model = OpenAIModel(name, base_url=os.environ.get("OPENAI_BASE_URL", "https://api.openai.com/v1"))
    return create_app(lambda: store_named(path), model=model, tracer_provider=otlp_tracer_provider())


def store_named(spec: str) -> Store:
    """``$CHAT_STORE`` as a store: a ``postgresql://`` URL is a `PostgresStore` (several app
    processes may share it), anything else a SQLite file."""
    return PostgresStore(spec) if spec.startswith(("postgresql://", "postgres://")) else SqliteStore(spec)


def otlp_tracer_provider() -> TracerProvider | None:
    """An SDK tracer provider batching spans over OTLP/HTTP to ``$OTEL_EXPORTER_OTLP_ENDPOINT``
    (the exporter reads it, and ``$OTEL_EXPORTER_OTLP_HEADERS``...), or ``None`` when it is unset."""
    if not os.environ.get("OTEL_EXPORTER_OTLP_ENDPOINT"):
        return None
    try:
        from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
        from opentelemetry.sdk.resources import Resource
        from opentelemetry.sdk.trace import TracerProvider
        from opentelemetry.sdk.trace.export import BatchSpanProcessor
    except ImportError as missing:
        raise RuntimeError(
            f"OTEL_EXPORTER_OTLP_ENDPOINT is set, and the OpenTelemetry SDK or its OTLP exporter cannot be imported "
            f"({missing}); pip install opentelemetry-sdk opentelemetry-exporter-otlp-proto-http, or unset it"
        ) from None
    service = os.environ.get("OTEL_SERVICE_NAME", "chat-backend")
    provider = TracerProvider(resource=Resource.create({"service.name": service}))
    provider.add_span_processor(BatchSpanProcessor(OTLPSpanExporter()))
    return provider


# -- requests -------------------------------------------------------------------------------


def user_of(request: Request) -> str:
    """Who is asking. Replace with your authentication; here, the ``X-User`` header."""
    user = request.headers.get("x-user", "").strip()
    if not user or len(user) > 128 or not user.isprintable():
        raise HTTPException(401, "send your user id in the X-User header (1 to 128 printable characters)")
    return user


async def body_of(request: Request) -> dict[str, object]:
    raw = await request.body()
    if not raw.strip():
        return {}
    try:
        data: object = json.loads(raw)
    except ValueError:
        raise HTTPException(400, f"the body must be a JSON object, got {raw[:80]!r}") from None
    if not isinstance(data, dict):
        raise HTTPException(400, f"the body must be a JSON object, got {data!r}")
    return {str(k): v for k, v in cast("dict[object, object]", data).items()}


def number_param(request: Request, name: str, *, default: float, low: float, high: float) -> float:
    """A query parameter from ``low`` to ``high``: an integer when ``default`` is one, else seconds."""
    raw = request.query_params.get(name)
    if raw is None:
        return default
    whole = isinstance(default, int)
    try:
        value: float = int(raw) if whole else float(raw)
    except ValueError:
        value = low - 1
    if not low <= value <= high:
        what = f"an integer from {low:g} to {high:g}" if whole else f"a number of seconds from {low:g} to {high:g}"
        raise HTTPException(422, f"{name} must be {what}, got {raw!r}")
    return value


def bool_param(request: Request, name: str, *, default: bool = False) -> bool:
    raw = request.query_params.get(name)
    if raw is None:
        return default
    if raw.lower() in ("1", "true", "yes"):
        return True
    if raw.lower() in ("0", "false", "no"):
        return False
    raise HTTPException(422, f"{name} must be true or false, got {raw!r}")


async def refused(request: Request, exc: Exception) -> Response:
    """A refused request: the status its error calls for, and the message naming the value."""
    if isinstance(exc, HTTPException):
        return JSONResponse({"error": exc.detail}, status_code=exc.status_code)
    if isinstance(exc, InvalidArgumentError):
        return JSONResponse({"error": str(exc), "argument": exc.argument}, status_code=422)
    if isinstance(exc, SessionDeletedError):  # deleted by another instance after this one looked
        return JSONResponse({"error": str(exc), "session_id": exc.session_id}, status_code=410)
    return JSONResponse({"error": str(exc)}, status_code=503)  # HostClosedError: the app is shutting down


# -- JSON: the SDK's own form of each typed value, and the few fields of the host's handles ---


def data(value: object) -> JSON:
    """A message, author, lineage, tree, command or event as JSON data (``to_json``'s form)."""
    return cast("JSON", json.loads(to_json(value)))


def when(moment: datetime | None) -> str | None:
    return None if moment is None else moment.isoformat()


def session_json(session: SessionHandle) -> dict[str, JSON]:
    return {
        "id": session.id,
        "label": None if session.metadata is None else session.metadata.label,
        "lineage": data(session.lineage),
        "tags": dict(session.tags),
        "deleted_at": when(session.deleted_at),
    }


def turn_json(turn: TurnHandle) -> dict[str, JSON]:
    return {
        "type": "turn",
        "id": turn.id,
        "session_id": turn.session_id,
        "ordinal": turn.ordinal,
        "author": data(turn.author),
        "message": data(turn.message),
        "status": turn.status,
        "reply": turn.reply,
        "error": turn.error,
        "started_at": when(turn.started_at),
        "finished_at": when(turn.finished_at),
    }


def log_json(entry: TurnHandle | Invocation) -> JSON:
    return turn_json(entry) if isinstance(entry, TurnHandle) else {"type": "command", **cast("dict[str, JSON]", data(entry))}


def job_json(job: Job) -> dict[str, JSON]:
    done = job.submission
    return {
        "id": job.id,
        "session_id": job.session_id,
        "text": job.text,
        "status": job.status,
        "created_at": when(job.created_at),
        "finished_at": when(job.finished_at),
        "submission": None
        if done is None
        else {
            "kind": done.kind,
            "text": done.text,
            "turn_id": None if done.turn is None else done.turn.id,
            "error": done.error,
            "error_kind": done.error_kind,  # branch on this, never on the message
        },
    }

"""`agui_app`: the host as an AG-UI agent, an ASGI app any ASGI server runs (docs/protocols.md).

Plain ASGI (no framework): ``POST {path}`` with a ``RunAgentInput`` answers an SSE stream of
AG-UI events (``text/event-stream``, the protocol's own encoder); a body that is not one
answers 422 with a JSON error; another method 405, another path 404. The lifespan protocol
is answered (the host's own lifetime is the caller's). A client that goes away ends its
stream, noticed from the first batch of events that came ``WATCH_AFTER`` or more after the
one before it (the host was waiting: for a model, a tool), or ``WATCH_LONG`` into the run; a
run whose events keep coming just finishes. The run itself is a host-owned job and finishes.
The mapping is `_run`'s, imported with ``ag_ui`` at the first request: ``import host_sim``
imports neither.
"""

from __future__ import annotations

import json
from collections.abc import Awaitable, Callable, Mapping
from typing import TYPE_CHECKING, Final, TypeAlias, final

import anyio

from modular_sdk import InvalidArgumentError, ModularError
from modular_sdk._rules import show

from .._host_made import NoPublicConstructor
from ..sessions._host import Host, host_of
from ..sessions._scoped import ScopedHost

if TYPE_CHECKING:
    from ._run import RunIds

__all__ = ["AguiApp", "AguiUnavailableError", "agui_app"]

Receive: TypeAlias = Callable[[], Awaitable[Mapping[str, object]]]
Send: TypeAlias = Callable[[dict[str, object]], Awaitable[None]]

MAX_BODY: Final = 16 * 1024 * 1024  # a RunAgentInput carries the conversation: generous, not unbounded
WATCH_AFTER: Final = 0.5  # seconds a run waits for the host's next event before the app watches its client
WATCH_LONG: Final = 5.0  # seconds a run streams before the app watches its client (its events never paused)


class AguiUnavailableError(ModularError, ImportError):
    """The ``ag-ui-protocol`` package is not installed (the extra ``agui``)."""


def agui_app(host_or_scoped: Host | ScopedHost, *, path: str = "/") -> AguiApp:
    """The host as an AG-UI agent: an ASGI app answering ``POST path`` with a run's event stream.

    ``host_or_scoped`` is an open `Host`, or a `ScopedHost` (one user's view: the threads it
    creates get the scope's tags, decisions are recorded ``by`` its ``user`` tag, and it sees
    nothing else). Serve it with any ASGI server (``uvicorn``), or mount it in your own app.
    Needs the extra ``agui`` (``ag-ui-protocol``), imported at the first request.
    Raises `InvalidArgumentError` for a ``path`` that does not start with ``/``, and a
    `ModularError` (an `ImportError` too) naming the extra when ``ag-ui-protocol`` is missing.
    """
    try:
        import ag_ui  # noqa: F401  (the package's top level is empty: the protocol loads at the first request)
    except ImportError:
        raise AguiUnavailableError(
            "agui_app needs the 'ag-ui-protocol' package, which is not installed; install the extra: "
            "pip install 'modular-chat-sdk[agui]'"
        ) from None
    if not isinstance(host_or_scoped, (Host, ScopedHost)):
        raise InvalidArgumentError(
            f"agui_app() takes an open Host or a ScopedHost (host.scoped(tags)), got {show(host_or_scoped)}",
            argument="host_or_scoped",
            value=host_or_scoped,
        )
    if not isinstance(path, str) or not path.startswith("/"):
        raise InvalidArgumentError(f"path must start with '/', like '/agui', got {show(path)}", argument="path", value=path)
    return AguiApp._create(host_or_scoped, path)


@final
class AguiApp(metaclass=NoPublicConstructor):
    """An ASGI app speaking AG-UI for one host or view; obtain it from ``host_sim.agui_app(...)``."""

    __slots__ = ("_path", "_view")

    def __init__(self, view: Host | ScopedHost, path: str) -> None:
        self._view = view
        self._path = path.rstrip("/") or "/"

    async def __call__(self, scope: Mapping[str, object], receive: Receive, send: Send) -> None:
        kind = scope.get("type")
        if kind == "lifespan":
            await _lifespan(receive, send)
            return
        if kind != "http":
            return
        path = str(scope.get("path", "/"))
        root = str(scope.get("root_path", ""))
        if root and path.startswith(root):
            path = path[len(root) :]
        if (path.rstrip("/") or "/") != self._path:
            await _answer(send, 404, {"error": f"no AG-UI agent at {path!r}; POST a RunAgentInput to {self._path!r}"})
            return
        if scope.get("method") != "POST":
            await _answer(send, 405, {"error": "POST a RunAgentInput (JSON) to run the agent"}, allow="POST")
            return
        body = await _body(receive)
        if body is None:
            await _answer(send, 413, {"error": f"the body is larger than {MAX_BODY} bytes"})
            return
        from ._run import BadRunInput, RunIds, parse

        try:
            run = parse(body)
        except BadRunInput as bad:
            await _answer(send, 422, {"error": str(bad)})
            return
        view = self._view
        runs = RunIds.of(host_of(view))
        await self._stream(run, runs, receive, send)

    async def _stream(self, run: object, runs: RunIds, receive: Receive, send: Send) -> None:
        from ag_ui.core import RunAgentInput

        from ._run import encode, run_events

        assert isinstance(run, RunAgentInput)
        headers = [
            (b"content-type", b"text/event-stream"),
            (b"cache-control", b"no-cache"),
            (b"x-accel-buffering", b"no"),
        ]
        await send({"type": "http.response.start", "status": 200, "headers": headers})
        events = run_events(self._view, run, runs)
        try:
            # A run whose events keep coming streams without a watcher: a task per run costs
            # a quarter of the host's own turn, and its job is host-owned and ends by itself.
            # One that waited WATCH_AFTER for the host (a model thinking, a tool working), or
            # has streamed for WATCH_LONG, is watched from its next batch on.
            since = last = anyio.current_time()
            async for batch in events:
                await send({"type": "http.response.body", "body": encode(batch), "more_body": True})
                now = anyio.current_time()
                if now - last >= WATCH_AFTER or now - since >= WATCH_LONG:
                    break
                last = now
            else:
                await send({"type": "http.response.body", "body": b"", "more_body": False})
                return
            async with anyio.create_task_group() as group:  # a long run: stop when the client goes away

                async def watch() -> None:  # (the job goes on)
                    while (await receive()).get("type") != "http.disconnect":
                        pass
                    group.cancel_scope.cancel()

                group.start_soon(watch)
                async for batch in events:
                    await send({"type": "http.response.body", "body": encode(batch), "more_body": True})
                await send({"type": "http.response.body", "body": b"", "more_body": False})
                group.cancel_scope.cancel()
        finally:
            with anyio.CancelScope(shield=True):
                await events.aclose()

    def __repr__(self) -> str:
        return f"<AguiApp {self._path!r} over {self._view!r}>"


async def _body(receive: Receive) -> bytes | None:
    chunks: list[bytes] = []
    size = 0
    while True:
        message = await receive()
        if message.get("type") == "http.disconnect":
            return b""
        chunk = message.get("body", b"")
        if isinstance(chunk, bytes):
            size += len(chunk)
            if size > MAX_BODY:
                return None
            chunks.append(chunk)
        if not message.get("more_body", False):
            return b"".join(chunks)


async def _answer(send: Send, status: int, data: dict[str, str], *, allow: str | None = None) -> None:
    body = json.dumps(data).encode("utf-8")
    headers = [(b"content-type", b"application/json"), (b"content-length", str(len(body)).encode())]
    if allow is not None:
        headers.append((b"allow", allow.encode()))
    await send({"type": "http.response.start", "status": status, "headers": headers})
    await send({"type": "http.response.body", "body": body, "more_body": False})


async def _lifespan(receive: Receive, send: Send) -> None:
    while True:
        message = await receive()
        kind = message.get("type")
        if kind == "lifespan.startup":
            await send({"type": "lifespan.startup.complete"})
        elif kind == "lifespan.shutdown":
            await send({"type": "lifespan.shutdown.complete"})
            return

"""`StudioApp`: the studio's ASGI app (docs/studio.md): the page, a small JSON API, the host's events.

Every request passes the gate first: its ``Host`` header must name the address the studio
serves (a DNS-rebinding page's ``Host`` is its own name), an ``Origin`` header, when sent,
must be that address too (another site's script is refused), and it must carry the access
token, as ``?token=`` (the URL the command prints) or as the cookie the page gets with it.
Anything else answers 403, before any route runs.

Runs go through `agui_app` (``POST /agui``, AG-UI over SSE): the studio sends the message a
person types as an AG-UI client would. Live updates come from ``host.subscribe()`` as
server-sent events (``GET /api/events``): the page re-reads what changed, so it shows what
the host publishes and nothing it guesses. Every answer is JSON data; the page renders each
text with ``textContent``.
"""

from __future__ import annotations

import hmac
import json
from collections.abc import Awaitable, Callable, Mapping
from importlib import resources
from typing import Final, TypeAlias, final
from urllib.parse import parse_qs

import anyio

from modular_sdk import ForkLineage, MemoryRecord, ModularError, SpawnLineage, UserAuthor

from ..agui._app import AguiApp, agui_app
from ..lineage._as_json import origin_data, plan_data, provenance_data, record_origin_data
from ..sessions._handles import SessionHandle, TurnHandle
from ..sessions._host import Host
from ..sessions._view_data import view_data
from ..traces._types import PendingAction

__all__ = ["StudioApp"]

Receive: TypeAlias = Callable[[], Awaitable[Mapping[str, object]]]
Send: TypeAlias = Callable[[dict[str, object]], Awaitable[None]]

COOKIE: Final = "host_sim_studio"
_STATIC: Final = {
    "/": ("index.html", "text/html; charset=utf-8"),
    "/app.js": ("app.js", "text/javascript; charset=utf-8"),
    "/style.css": ("style.css", "text/css; charset=utf-8"),
}
_SECURITY_HEADERS: Final = [
    (b"content-security-policy", b"default-src 'self'; script-src 'self'; style-src 'self'; object-src 'none'; base-uri 'none'; frame-ancestors 'none'"),
    (b"x-content-type-options", b"nosniff"),
    (b"referrer-policy", b"no-referrer"),
    (b"cache-control", b"no-store"),
]
MAX_BODY: Final = 1024 * 1024
TURN_PAGE: Final = 200
"""A session's newest turns shown at first; the page asks for more ("Show earlier turns")."""
MAX_SESSIONS: Final = 10_000
"""The tree shows the newest this many sessions (and says when there are more)."""


class _Refused(Exception):
    def __init__(self, status: int, message: str) -> None:
        super().__init__(message)
        self.status = status


@final
class StudioApp:
    """The studio for one open host, reachable as ``hosts`` (``"127.0.0.1:8123"``, ...) with ``token``."""

    def __init__(self, host: Host, *, token: str, hosts: frozenset[str]) -> None:
        self._host = host
        self._token = token
        self._hosts = hosts
        self._agui: AguiApp = agui_app(host, path="/agui")

    # -- the gate ---------------------------------------------------------------------------
    def _check(self, scope: Mapping[str, object]) -> bool:
        """Whether the request passes the gate; ``True`` when it came with ``?token=`` (set the cookie)."""
        headers = _headers(scope)
        if headers.get("host", "") not in self._hosts:
            raise _Refused(403, "this studio answers only at its own address (Host header refused)")
        origin = headers.get("origin")
        if origin is not None and origin not in {f"http://{h}" for h in self._hosts}:
            raise _Refused(403, "requests from another site are refused (Origin header)")
        query = parse_qs(_bytes_text(scope.get("query_string", b"")))
        given = query.get("token", [""])[0]
        if given and hmac.compare_digest(given.encode(), self._token.encode()):
            return True
        for part in headers.get("cookie", "").split(";"):
            name, _, value = part.strip().partition("=")
            if name == COOKIE and hmac.compare_digest(value.encode(), self._token.encode()):
                return False
        raise _Refused(403, "the access token is missing or wrong: open the URL host-sim studio printed")

    async def __call__(self, scope: Mapping[str, object], receive: Receive, send: Send) -> None:
        kind = scope.get("type")
        if kind == "lifespan":
            await self._agui(scope, receive, send)
            return
        if kind != "http":
            return
        try:
            fresh = self._check(scope)
        except _Refused as refused:
            await _json(send, refused.status, {"error": str(refused)})
            return
        path = str(scope.get("path", "/"))
        method = str(scope.get("method", "GET"))
        if path == "/agui":
            await self._agui(scope, receive, send)
            return
        if path in _STATIC and method == "GET":
            name, content_type = _STATIC[path]
            body = resources.files("host_sim.studio").joinpath("static", name).read_bytes()
            extra = [(b"set-cookie", f"{COOKIE}={self._token}; Path=/; HttpOnly; SameSite=Strict".encode())] if fresh else []
            await _respond(send, 200, body, content_type, extra)
            return
        if path == "/api/events" and method == "GET":
            await self._events(receive, send)
            return
        try:
            body = await _body(receive) if method == "POST" else b""
            data = json.loads(body) if body else {}
            if not isinstance(data, dict):
                raise _Refused(400, "the body must be a JSON object")
            answer = await self._api(method, path.split("/")[1:], data, scope)
        except _Refused as refused:
            await _json(send, refused.status, {"error": str(refused)})
            return
        except ModularError as error:
            await _json(send, 400, {"error": str(error)})
            return
        except json.JSONDecodeError as error:
            await _json(send, 400, {"error": f"the body is not JSON: {error}"})
            return
        await _json(send, 200, answer)

    # -- the API ----------------------------------------------------------------------------
    async def _api(self, method: str, parts: list[str], data: dict[str, object], scope: Mapping[str, object]) -> object:
        host = self._host
        match method, parts:
            case "GET", ["api", "sessions"]:
                listed: list[dict[str, object]] = []
                cursor: str | None = None
                while len(listed) < MAX_SESSIONS:  # page by page, newest first
                    page = await host.sessions.list(limit=1000, after=cursor)
                    listed.extend(_session_data(s) for s in page.sessions)
                    cursor = page.next
                    if cursor is None:
                        break
                return {"sessions": listed[:MAX_SESSIONS], "truncated": cursor is not None}
            case "POST", ["api", "sessions"]:
                return _session_data(await host.sessions.create())
            case "GET", ["api", "sessions", session_id, "turns"]:
                session = await host.sessions.get(session_id)
                turns = await session.turns()
                query = parse_qs(_bytes_text(scope.get("query_string", b"")))
                limit = _count(query.get("limit", [str(TURN_PAGE)])[0], "limit")
                newest = [t for t in turns if isinstance(t, TurnHandle)][-limit:]  # paged: the newest first
                shown = [await self._turn_data(session, t) for t in newest]
                return {"session": _session_data(session), "turns": shown, "total": len(turns)}
            case "GET", ["api", "sessions", session_id, "pending"]:
                session = await host.sessions.get(session_id)
                return {"actions": [_action_data(session, a) for a in await host.pending_actions(session)]}
            case "GET", ["api", "pending"]:
                waiting: list[dict[str, object]] = []
                cursor = None
                while True:  # every session of the store, a page at a time (there is no store-wide query)
                    page = await host.sessions.list(limit=1000, after=cursor)
                    for session in page.sessions:
                        waiting.extend(_action_data(session, a) for a in await host.pending_actions(session))
                    cursor = page.next
                    if cursor is None:
                        return {"actions": waiting}
            case "GET", ["api", "sessions", session_id, "records"]:
                book = await host.memory.list(session=session_id, include_retracted=True, limit=200)
                return {"records": [_record_data(r) for r in book.records], "more": book.next is not None}
            case "GET", ["api", "records", record_id, "provenance"]:
                remembered = await host.memory.get(record_id)
                ahead = await host.lineage.forward(remembered.id)
                origin = await host.lineage.backward(remembered.id)
                return {"record": _record_data(remembered), "forward": provenance_data(ahead), "backward": record_origin_data(origin)}
            case "GET", ["api", "completions"]:
                text = parse_qs(_bytes_text(scope.get("query_string", b""))).get("text", [""])[0]
                found = await host.completions(text)
                return {"completions": [{"name": c.name, "description": c.description, "argument": c.argument, "argument_hint": c.argument_hint, "mod_id": c.mod_id} for c in found]}
            case "POST", ["api", "turns", turn_id, "fork"]:
                turn = await host.sessions.turn(turn_id)
                return _session_data(await turn.fork())
            case "GET", ["api", "turns", turn_id, "provenance"]:
                forward = await host.lineage.forward(turn_id)
                backward = await host.lineage.backward(turn_id)
                return {"forward": provenance_data(forward), "backward": origin_data(backward)}
            case "POST", ["api", "turns", turn_id, "forget"]:
                erase = data.get("erase") is True
                return plan_data(await host.lineage.forget(turn_id, dry_run=not erase))
            case "POST", ["api", "turns", turn_id, "retract"]:
                reason = data.get("reason")
                record = await host.lineage.retract(turn_id, reason=reason if isinstance(reason, str) else "")
                return {"turn_id": record.id, "retraction_reason": record.retraction_reason}
            case "POST", ["api", "actions", action_id, ("confirm" | "dismiss") as verb]:
                reason = data.get("reason")
                why = reason if isinstance(reason, str) and reason.strip() else None
                if verb == "confirm":
                    submission = await host.confirm(action_id, by="studio", reason=why)
                    return {"text": submission.text, "error": submission.error}
                await host.dismiss(action_id, by="studio", reason=why)
                return {"dismissed": action_id}
            case "GET", ["api", "approvals"]:
                rules = await host.approvals.list()
                standing = [r for r in rules if r.revoked_at is None]  # a revoked rule matches nothing
                return {"rules": [{"id": r.id, "action_type": r.action_type, "tool": r.tool, "session_id": r.session_id, "by": r.by, "reason": r.reason} for r in standing]}
            case "POST", ["api", "approvals", rule_id, "revoke"]:
                rule = await host.approvals.revoke(rule_id, by="studio")
                return {"revoked": rule.id}
            case "GET", ["api", "views"]:
                return {"views": sorted(host._open().tables.views)}
            case "POST", ["api", "views", view_id, "render"]:
                try:
                    typed = view_data(host.mods, view_id, data.get("data"))
                except ModularError as error:  # the JSON does not fit the view's data type
                    return {"text": None, "error": f"the data does not fit view {view_id!r}: {error}"}
                result = await host.render_view(view_id, typed)
                return {"text": result.text, "error": result.error}
        raise _Refused(404, f"no such studio route: {method} /{'/'.join(parts)}")

    async def _turn_data(self, session: SessionHandle, turn: TurnHandle) -> dict[str, object]:
        """A turn as the page shows it, its widgets rendered by their mods' renderers."""
        data = _turn_data(turn)
        widgets: list[dict[str, object]] = []
        for placed in turn.widgets if turn.erased_at is None else ():
            shown = await self._host.render_widget(placed.widget_id, session, placed.data)
            widgets.append({"widget_id": placed.widget_id, "text": shown.text, "error": shown.error})
        data["widgets"] = widgets
        return data

    async def _events(self, receive: Receive, send: Send) -> None:
        """The host's events as SSE: each one's kind and session (the page re-reads what changed)."""
        headers = [(b"content-type", b"text/event-stream"), (b"cache-control", b"no-store")]
        # Subscribed before the answer starts: once the page sees the stream open, it misses nothing.
        async with self._host.subscribe(buffer=10_000) as events, anyio.create_task_group() as group:
            await send({"type": "http.response.start", "status": 200, "headers": headers})
            await send({"type": "http.response.body", "body": b": studio\n\n", "more_body": True})

            async def watch() -> None:
                while (await receive()).get("type") != "http.disconnect":
                    pass
                group.cancel_scope.cancel()

            group.start_soon(watch)
            async for event in events:
                item: dict[str, object] = {"kind": event.kind, "session_id": getattr(event, "session_id", None)}
                delta = getattr(event, "delta", None)
                if event.kind == "reply_delta" and isinstance(delta, str):
                    item["delta"] = delta
                    item["turn_id"] = getattr(event, "turn_id", None)
                if event.kind == "notification":
                    item["title"] = getattr(event, "title", None)
                line = f"data: {json.dumps(item)}\n\n".encode()
                await send({"type": "http.response.body", "body": line, "more_body": True})
            group.cancel_scope.cancel()


def _session_data(session: SessionHandle) -> dict[str, object]:
    lineage = session.lineage
    data: dict[str, object] = {
        "id": session.id,
        "kind": lineage.kind,
        "title": session.metadata.label if session.metadata is not None else None,
        "created_at": session.created_at.isoformat(),
        "parent": None,
    }
    if isinstance(lineage, ForkLineage):
        data["parent"] = lineage.parent_session_id
        data["anchor"] = lineage.parent_turn_ordinal
    elif isinstance(lineage, SpawnLineage):
        data["parent"] = lineage.parent_session_id
    return data


def _action_data(session: SessionHandle, action: PendingAction) -> dict[str, object]:
    label = session.metadata.label if session.metadata is not None else None
    return {
        "id": action.id, "type": action.type, "mod_id": action.mod_id, "turn_id": action.turn_id,
        "payload": dict(action.payload), "session_id": session.id, "session": label or session.id,
    }  # fmt: skip


def _record_data(record: MemoryRecord) -> dict[str, object]:
    return {
        "id": record.id, "session_id": record.session_id, "kind": record.kind, "text": record.text,
        "created_at": record.created_at.isoformat(), "retracted": record.retraction_reason,
        "erased": record.erased_at is not None,
    }  # fmt: skip


def _turn_data(turn: TurnHandle) -> dict[str, object]:
    author = turn.author
    message = turn.message
    text = getattr(message, "text", None)
    if message.type == "notification":
        text = f"{getattr(message, 'title', '')}: {getattr(message, 'body', '')}"
    return {
        "id": turn.id,
        "ordinal": turn.ordinal,
        "status": turn.status,
        "author": "user" if isinstance(author, UserAuthor) else f"mod {author.mod_id}",
        "kind": message.type,
        "text": text,
        "reply": turn.reply,
        "error": turn.error,
        "started_at": turn.started_at.isoformat(),
        "erased": turn.erased_at is not None,
        "retracted": turn.retraction_reason,
        "tool_calls": [{"tool": c.name, "id": c.call_id, "output": c.output, "error": c.error} for c in turn.tool_calls],
    }


def _count(text: str, name: str) -> int:
    if not text.isdigit() or not 1 <= int(text) <= 1_000_000:
        raise _Refused(400, f"{name} must be a whole number from 1 to 1000000, got {text!r}")
    return int(text)


def _headers(scope: Mapping[str, object]) -> dict[str, str]:
    raw = scope.get("headers", [])
    found: dict[str, str] = {}
    if isinstance(raw, (list, tuple)):
        for pair in raw:
            name, value = pair
            found[_bytes_text(name).lower()] = _bytes_text(value)
    return found


def _bytes_text(value: object) -> str:
    return value.decode("latin-1") if isinstance(value, bytes) else str(value)


async def _body(receive: Receive) -> bytes:
    chunks: list[bytes] = []
    size = 0
    while True:
        message = await receive()
        chunk = message.get("body", b"")
        if isinstance(chunk, bytes):
            size += len(chunk)
            if size > MAX_BODY:
                raise _Refused(413, f"the body is larger than {MAX_BODY} bytes")
            chunks.append(chunk)
        if not message.get("more_body", False):
            return b"".join(chunks)


async def _respond(send: Send, status: int, body: bytes, content_type: str, extra: list[tuple[bytes, bytes]] | None = None) -> None:
    headers = [(b"content-type", content_type.encode()), (b"content-length", str(len(body)).encode()), *_SECURITY_HEADERS, *(extra or [])]
    await send({"type": "http.response.start", "status": status, "headers": headers})
    await send({"type": "http.response.body", "body": body, "more_body": False})


async def _json(send: Send, status: int, data: object) -> None:
    await _respond(send, status, json.dumps(data, default=str).encode(), "application/json")


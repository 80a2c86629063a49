"""A small OpenAI-compatible Chat Completions server on loopback, for tests.

It runs `http.server` in a thread, records every request it receives (path, headers, JSON
body) and answers from a script of `Answer` values, one per request, in order. A request
past the end of the script gets a 599 and is counted in ``unexpected``.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Mapping
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import attrs

from modular_sdk._schema import JsonObject, JsonValue

__all__ = ["Answer", "FakeOpenAI", "Received", "error", "reply", "tool_call"]


@attrs.frozen(kw_only=True)
class Answer:
    """One scripted answer: a status, headers and a body, after ``delay`` seconds.

    ``hang_up`` closes the connection without answering (a connection error).
    """

    status: int = 200
    body: bytes = b""
    headers: Mapping[str, str] = attrs.field(factory=dict)
    delay: float = 0.0
    hang_up: bool = False


@attrs.frozen(kw_only=True)
class Received:
    """One request as the server saw it."""

    method: str
    path: str
    headers: Mapping[str, str]
    body: JsonValue
    raw: bytes


def _json(value: JsonValue) -> bytes:
    return json.dumps(value).encode()


def reply(text: str | None, *, model: str = "fake-model", refusal: str | None = None) -> Answer:
    """A successful completion whose message content is ``text``."""
    message: JsonObject = {"role": "assistant", "content": text}
    if refusal is not None:
        message["refusal"] = refusal
    return Answer(
        body=_json(
            {
                "id": "chatcmpl-1",
                "object": "chat.completion",
                "model": model,
                "choices": [{"index": 0, "message": message, "finish_reason": "stop"}],
            }
        ),
        headers={"Content-Type": "application/json"},
    )


def tool_call(name: str, arguments: str, *, call_id: str = "call_fake0001") -> Answer:
    """A completion that calls one tool with ``arguments`` (a JSON text, as OpenAI sends)."""
    message: JsonObject = {
        "role": "assistant",
        "content": None,
        "tool_calls": [{"id": call_id, "type": "function", "function": {"name": name, "arguments": arguments}}],
    }
    return Answer(
        body=_json({"choices": [{"index": 0, "message": message, "finish_reason": "tool_calls"}]}),
        headers={"Content-Type": "application/json"},
    )


def error(status: int, message: str, *, headers: Mapping[str, str] | None = None) -> Answer:
    """An OpenAI-style error body."""
    body = _json({"error": {"message": message, "type": "invalid_request_error", "code": None}})
    return Answer(status=status, body=body, headers={"Content-Type": "application/json", **(headers or {})})


class FakeOpenAI:
    """The server: ``base_url`` to point a model at, ``received`` to assert on."""

    def __init__(self) -> None:
        self.script: list[Answer] = []
        self.received: list[Received] = []
        self.unexpected = 0
        self._lock = threading.Lock()
        self._stopping = threading.Event()
        fake = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def do_POST(self) -> None:  # noqa: N802 - the http.server name
                length = int(self.headers.get("Content-Length") or 0)
                raw = self.rfile.read(length)
                try:
                    body: JsonValue = json.loads(raw)
                except ValueError:
                    body = None
                with fake._lock:
                    fake.received.append(
                        Received(
                            method="POST",
                            path=self.path,
                            headers={k.lower(): v for k, v in self.headers.items()},
                            body=body,
                            raw=raw,
                        )
                    )
                    answer = fake.script.pop(0) if fake.script else None
                    if answer is None:
                        fake.unexpected += 1
                if answer is None:
                    answer = error(599, "the fake server has no scripted answer left")
                if answer.delay and fake._stopping.wait(answer.delay):
                    return
                try:
                    if answer.hang_up:
                        self.close_connection = True
                        self.connection.shutdown(2)
                        return
                    self.send_response(answer.status)
                    for key, value in answer.headers.items():
                        self.send_header(key, value)
                    self.send_header("Content-Length", str(len(answer.body)))
                    self.end_headers()
                    self.wfile.write(answer.body)
                except OSError:  # the client gave up (a timeout test): nothing to answer
                    self.close_connection = True

            def log_message(self, format: str, *args: object) -> None:  # noqa: A002 - the base's name
                pass

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._server.daemon_threads = True
        self._thread = threading.Thread(
            target=self._server.serve_forever, kwargs={"poll_interval": 0.02}, name="fake-openai", daemon=True
        )

    @property
    def base_url(self) -> str:
        host, port = self._server.server_address[:2]
        return f"http://{host!s}:{port}/v1"

    @property
    def bodies(self) -> list[JsonValue]:
        """The JSON bodies received, oldest first."""
        with self._lock:
            return [r.body for r in self.received]

    def answer(self, *answers: Answer) -> None:
        """Append answers to the script."""
        with self._lock:
            self.script.extend(answers)

    def start(self) -> None:
        self._thread.start()

    def stop(self) -> None:
        self._stopping.set()
        self._server.shutdown()
        self._server.server_close()
        self._thread.join()

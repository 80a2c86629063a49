"""A small OpenAI-compatible Chat Completions server on loopback, for tests.

It runs `http.server` in a thread, records every request it receives (path, headers, JSON
body) and answers from a script of `Answer` values, one per request, in order. A request
past the end of the script gets a 599 and is counted in ``unexpected``.

A streamed answer (``events``) is sent with chunked transfer encoding, one HTTP chunk per
server-sent event, flushed as it is written: a test can hold the rest back (``hold_after``
and ``release``) to see the first chunk arrive alone, or break the connection mid-stream
(``break_after``).
"""

from __future__ import annotations

import json
import threading
from collections.abc import Mapping
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import attrs

from host_sim.testing import JsonObject, JsonValue

__all__ = [
    "Answer",
    "FakeOpenAI",
    "Received",
    "error",
    "error_raw",
    "events",
    "reply",
    "reply_raw",
    "streamed_raw",
    "streamed_reply",
    "streamed_tool_call",
    "tool_call",
]


@attrs.frozen(kw_only=True)
class Answer:
    """One scripted answer: a status, headers and a body, after ``delay`` seconds.

    ``hang_up`` closes the connection without answering (a connection error). ``events``,
    when set, are sent instead of ``body``, one chunk each; after ``hold_after`` of them the
    server waits for ``release``; after ``break_after`` of them it drops the connection.
    """

    status: int = 200
    body: bytes = b""
    headers: Mapping[str, str] = attrs.field(factory=dict)
    delay: float = 0.0
    hang_up: bool = False
    events: tuple[bytes, ...] | None = None
    hold_after: int | None = None
    release: threading.Event | None = attrs.field(default=None, eq=False)
    break_after: int | None = None


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


def reply(
    text: str | None, *, model: str = "fake-model", refusal: str | None = None, usage: JsonValue = None
) -> Answer:
    """A successful completion whose message content is ``text`` (with ``usage`` when given)."""
    message: JsonObject = {"role": "assistant", "content": text}
    if refusal is not None:
        message["refusal"] = refusal
    body: JsonObject = {
        "id": "chatcmpl-1",
        "object": "chat.completion",
        "model": model,
        "choices": [{"index": 0, "message": message, "finish_reason": "stop"}],
    }
    if usage is not None:
        body["usage"] = usage
    return Answer(body=_json(body), headers={"Content-Type": "application/json"})


def tool_call(name: str, arguments: str, *, call_id: str = "call_fake0001", usage: JsonValue = None) -> Answer:
    """A completion that calls one tool with ``arguments`` (a JSON text, as OpenAI sends)."""
    message: JsonObject = {
        "role": "assistant",
        "content": None,
        "tool_calls": [{"id": call_id, "type": "function", "function": {"name": name, "arguments": arguments}}],
    }
    body: JsonObject = {"choices": [{"index": 0, "message": message, "finish_reason": "tool_calls"}]}
    if usage is not None:
        body["usage"] = usage
    return Answer(body=_json(body), headers={"Content-Type": "application/json"})


def usage_chunk(prompt_tokens: JsonValue, completion_tokens: JsonValue) -> JsonObject:
    """The last chunk of a stream asked with ``stream_options.include_usage``: no choices, the counts."""
    return {
        "id": "chatcmpl-1",
        "object": "chat.completion.chunk",
        "model": "fake-model",
        "choices": [],
        "usage": {"prompt_tokens": prompt_tokens, "completion_tokens": completion_tokens, "total_tokens": 0},
    }


def events(*payloads: JsonValue | bytes, **options: object) -> Answer:
    """A streamed answer: each payload as one ``data:`` event (bytes sent as they are)."""
    pieces = tuple(p if isinstance(p, bytes) else b"data: " + _json(p) + b"\n\n" for p in payloads)
    return Answer(events=pieces, headers={"Content-Type": "text/event-stream; charset=utf-8"}, **options)  # type: ignore[arg-type]


def _chunk(delta: JsonObject, finish: str | None = None) -> JsonObject:
    return {
        "id": "chatcmpl-1",
        "object": "chat.completion.chunk",
        "model": "fake-model",
        "choices": [{"index": 0, "delta": delta, "finish_reason": finish}],
    }


def streamed_reply(*texts: str, usage: tuple[int, int] | None = None, **options: object) -> Answer:
    """A streamed completion whose content arrives as ``texts``, then (given ``usage``, the
    prompt and completion tokens) a usage chunk, then ``[DONE]``."""
    first: JsonValue = _chunk({"role": "assistant", "content": ""})
    chunks: list[JsonValue | bytes] = [first, *(_chunk({"content": t}) for t in texts), _chunk({}, "stop")]
    chunks += [] if usage is None else [usage_chunk(*usage)]
    chunks.append(b"data: [DONE]\n\n")
    return events(*chunks, **options)


def streamed_tool_call(
    name: str, *arguments: str, call_id: str = "call_fake0001", usage: tuple[int, int] | None = None, **options: object
) -> Answer:
    """A streamed completion that calls one tool, its arguments in fragments, as OpenAI sends them."""
    head: JsonValue = _chunk(
        {
            "role": "assistant",
            "content": None,
            "tool_calls": [{"index": 0, "id": call_id, "type": "function", "function": {"name": name, "arguments": ""}}],
        }
    )
    pieces: list[JsonValue | bytes] = [head]
    pieces += [_chunk({"tool_calls": [{"index": 0, "function": {"arguments": a}}]}) for a in arguments]
    pieces += [_chunk({}, "tool_calls"), *([] if usage is None else [usage_chunk(*usage)]), b"data: [DONE]\n\n"]
    return events(*pieces, **options)


def error(status: int, message: str, *, headers: Mapping[str, str] | None = None) -> Answer:
    """An OpenAI-style error body."""
    body = _json({"error": {"message": message, "type": "invalid_request_error", "code": None}})
    return Answer(status=status, body=body, headers={"Content-Type": "application/json", **(headers or {})})


def reply_raw(content: str) -> Answer:
    """A completion whose message content is the JSON string literal ``content``, sent exactly
    as given (its escapes too: ``"\\u0073k-..."``), as a server that encodes what it echoes."""
    body = '{"choices": [{"index": 0, "message": {"role": "assistant", "content": %s}, "finish_reason": "stop"}]}'
    return Answer(body=(body % content).encode(), headers={"Content-Type": "application/json"})


def streamed_raw(*contents: str) -> Answer:
    """A streamed completion whose content arrives as the JSON string literals ``contents``."""
    pieces: list[JsonValue | bytes] = [_chunk({"role": "assistant", "content": ""})]
    pieces += [b'data: {"choices": [{"index": 0, "delta": {"content": %s}, "finish_reason": null}]}\n\n' % c.encode() for c in contents]
    pieces += [_chunk({}, "stop"), b"data: [DONE]\n\n"]
    return events(*pieces)


def error_raw(status: int, message: str, *, headers: Mapping[str, str] | None = None) -> Answer:
    """An OpenAI-style error body whose message is the JSON string literal ``message``."""
    body = f'{{"error": {{"message": {message}, "type": "invalid_request_error", "code": null}}}}'
    return Answer(status=status, body=body.encode(), headers={"Content-Type": "application/json", **(headers or {})})


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
                    if answer.events is not None:
                        self._stream(answer)
                        return
                    self.send_header("Content-Length", str(len(answer.body)))
                    self.end_headers()
                    self.wfile.write(answer.body)
                except OSError:  # the client gave up (a timeout test): nothing to answer
                    self.close_connection = True

            def _stream(self, answer: Answer) -> None:
                assert answer.events is not None
                self.send_header("Transfer-Encoding", "chunked")
                self.send_header("Cache-Control", "no-cache")
                self.end_headers()
                self.wfile.flush()
                for index, piece in enumerate(answer.events):
                    if index == answer.break_after:
                        self.close_connection = True
                        self.wfile.flush()
                        self.connection.shutdown(2)
                        return
                    if index == answer.hold_after and answer.release is not None:
                        answer.release.wait(10)
                    self.wfile.write(f"{len(piece):x}\r\n".encode() + piece + b"\r\n")
                    self.wfile.flush()
                self.wfile.write(b"0\r\n\r\n")
                self.wfile.flush()

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

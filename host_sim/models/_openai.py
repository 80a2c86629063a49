"""`OpenAIModel`: any OpenAI-compatible Chat Completions server, over httpx.

The client is httpx itself, not the official ``openai`` package: a turn needs one POST and
its JSON answer (or its server-sent events, when streamed), httpx runs on asyncio and on
trio (through anyio, like the host), and it is one small dependency where ``openai`` brings
pydantic, its own retry policy and a much larger import. httpx is imported when the first
`OpenAIModel` is made, never by ``import host_sim``.
"""

from __future__ import annotations

import email.utils
import hashlib
import json
import math
import os
import random
import re
import time
import urllib.parse
from collections.abc import AsyncIterator, Mapping, Sequence
from typing import TYPE_CHECKING, Final, final

import anyio
import attrs

from modular_sdk import InvalidArgumentError, SerializationError
from modular_sdk._json import parse_json_text
from modular_sdk._rules import show
from modular_sdk._schema import JsonObject, JsonValue

from ._errors import ModelError
from ._propagation import inject_trace_headers
from ._protocol import ModelRequest, Reply, ToolCall, Usage
from ._secrets import KeyFilter, KeyScrubber

if TYPE_CHECKING:
    import httpx

__all__ = ["OpenAIModel", "chat_completions_body"]

_RETRY_STATUSES = frozenset({408, 429})
_BACKOFF_BASE = 0.5
_BACKOFF_CAP = 8.0
_QUOTE_LIMIT = 500  # characters of a server's error text quoted in a message
_WIRE_NAME = re.compile(r"[A-Za-z0-9_-]{1,64}")  # the tool names Chat Completions accepts
_ERASED = "An earlier turn was here; it was erased at the user's request."
_RETRACTED = "The turn above was retracted as wrong; do not rely on it."
_NOTIFICATION_PREFIX = "Notification (a system event, not a message from the user):\n"


class _Secret:
    """The API key, held where neither ``repr`` nor ``vars()`` of the model shows it, with
    the scrubber that keeps it out of every text the model returns."""

    __slots__ = ("scrubber", "value")

    def __init__(self, value: str) -> None:
        self.value = value
        self.scrubber = KeyScrubber(value)

    def __repr__(self) -> str:
        return "<hidden>"


@final
class OpenAIModel:
    """A model served by any OpenAI-compatible Chat Completions server.

    OpenAI itself, or a local server: vLLM, llama.cpp's ``llama-server``, Ollama, LM Studio
    (their ``base_url`` ends in ``/v1``)::

        model = OpenAIModel("gpt-4o-mini")                       # key from $OPENAI_API_KEY
        local = OpenAIModel("llama3.2", base_url="http://localhost:11434/v1")

    Each step of a turn is one ``POST {base_url}/chat/completions`` for the session's
    model (``request.model``: this model's name unless the session or its agent names
    another), with the agent's instructions as the first system message, the history
    (prompts as user messages, notifications as system events, never the user), the input,
    the mod tools as function tools (their schemas as declared), the tool calls and results
    of this turn, and ``output_schema`` as a strict ``json_schema`` response format. The
    reply is the message's text, or its first tool call as a `ToolCall`.

    The host streams it: `stream` asks with ``"stream": true`` and yields the text as the
    server writes it (the host publishes each chunk as a ``reply_delta`` event); `respond`
    asks for the whole answer at once (what `RecordingModel` calls).

    429, 408, 5xx, refused connections and timeouts are retried with exponential backoff,
    waiting what ``Retry-After`` asks (seconds or an HTTP date) up to ``max_retry_wait``
    seconds; a server asking for longer fails the turn saying so. At most
    ``1 + max_retries`` attempts of ``timeout`` seconds each. Any other failure raises
    `ModelError` with the server's message, which fails the turn. ``api_key`` defaults to
    ``$OPENAI_API_KEY`` and may be absent for a local server; it never appears in a reply,
    a tool call, an error or a repr, however the server encodes it when it quotes it (JSON
    escapes, percent-encoding, split across stream chunks): it reads ``<api key>`` instead.

    Needs the extra ``modular-chat-sdk[openai]`` (httpx); raises `InvalidArgumentError` for a bad
    argument, naming it.
    """

    def __init__(
        self,
        model: str,
        *,
        base_url: str = "https://api.openai.com/v1",
        api_key: str | None = None,
        timeout: float = 60.0,
        max_retries: int = 2,
        max_retry_wait: float = 60.0,
    ) -> None:
        if not isinstance(model, str) or not model.strip():
            raise InvalidArgumentError(
                f"OpenAIModel needs the model name as a non-empty str, got {show(model)}; "
                "pass what the server calls it, e.g. OpenAIModel('gpt-4o-mini')",
                argument="model",
                value=model,
            )
        self._model = model
        self._base_url = _check_base_url(base_url)
        self._endpoint = f"{self._base_url}/chat/completions"
        self._shown_endpoint = _without_userinfo(self._endpoint)
        if api_key is None:
            api_key = os.environ.get("OPENAI_API_KEY") or None
        elif not isinstance(api_key, str) or not api_key.strip() or api_key != api_key.strip():
            shown = "an empty or padded str" if isinstance(api_key, str) else show(api_key)
            raise InvalidArgumentError(
                f"OpenAIModel's api_key must be a non-empty str without surrounding spaces or None, "
                f"got {shown}; pass None to use $OPENAI_API_KEY or to send no key to a local server",
                argument="api_key",
                value=None if isinstance(api_key, str) else api_key,  # never keep a key in an error
            )
        self._api_key = _Secret(api_key) if api_key else None
        if isinstance(timeout, bool) or not isinstance(timeout, (int, float)) or not _finite(timeout) or timeout <= 0:
            raise InvalidArgumentError(
                f"OpenAIModel's timeout must be a positive number of seconds, got {show(timeout)}; "
                "pass e.g. timeout=60.0",
                argument="timeout",
                value=timeout,
            )
        self._timeout = float(timeout)
        if isinstance(max_retries, bool) or not isinstance(max_retries, int) or max_retries < 0:
            raise InvalidArgumentError(
                f"OpenAIModel's max_retries must be an int >= 0, got {show(max_retries)}; "
                "pass 0 to never retry",
                argument="max_retries",
                value=max_retries,
            )
        self._max_retries = max_retries
        if (
            isinstance(max_retry_wait, bool)
            or not isinstance(max_retry_wait, (int, float))
            or not _finite(max_retry_wait)
            or max_retry_wait < 0
        ):
            raise InvalidArgumentError(
                f"OpenAIModel's max_retry_wait must be a number of seconds >= 0, got {show(max_retry_wait)}; "
                "pass e.g. max_retry_wait=60.0 (0: fail rather than wait when the server asks)",
                argument="max_retry_wait",
                value=max_retry_wait,
            )
        self._max_retry_wait = float(max_retry_wait)
        try:
            import httpx
        except ImportError:
            raise ModelError(
                "OpenAIModel needs httpx, which is not installed; "
                "install the extra: pip install 'modular-chat-sdk[openai]'",
                model=model,
            ) from None
        self._httpx = httpx

    @property
    def name(self) -> str:
        """The model name as the server knows it (``session.model``)."""
        return self._model

    @property
    def base_url(self) -> str:
        """The server's base URL, without a trailing slash."""
        return self._base_url

    def __repr__(self) -> str:
        return (
            f"OpenAIModel({self._model!r}, base_url={_without_userinfo(self._base_url)!r}, "
            f"timeout={self._timeout!r}, max_retries={self._max_retries!r}, "
            f"max_retry_wait={self._max_retry_wait!r})"
        )

    async def respond(self, request: ModelRequest) -> str | Reply | ToolCall:
        """Ask the server for the next step of the turn; raises `ModelError` when it cannot.

        The answer carries the server's token counts (``usage.prompt_tokens`` and
        ``completion_tokens``) as `Usage`: a `Reply` or a `ToolCall` with ``usage``; an
        answer without them is plain text or a `ToolCall` without usage."""
        model = request.model or self._model
        payload = await self._post(chat_completions_body(model, request), model)
        return _with_usage(_host_named(self._parse(payload, model), request), usage_of(payload))

    async def stream(self, request: ModelRequest) -> AsyncIterator[str | ToolCall | Usage]:
        """Ask for the next step of the turn as the server writes it (``"stream": true``).

        Yields the reply's text in chunks as they arrive (their concatenation is what
        `respond` would return), or, when the model calls a tool, one final `ToolCall`
        assembled from the streamed pieces. It asks for the token counts
        (``"stream_options": {"include_usage": true}``): a text reply ends with one `Usage`
        item, a `ToolCall` carries them in ``usage``, when the server sent them. A server
        that answers with one whole JSON completion instead is read like `respond` reads it.

        Failures before the first chunk is yielded (a retryable status, a refused or dropped
        connection, a timeout, a stream that ends or reports an error before any text) are
        retried like `respond`'s. Once text was yielded it cannot be taken back: a stream
        that breaks after that raises `ModelError` saying how much had arrived. ``timeout``
        bounds the wait for the answer to begin and each pause between chunks, not the whole
        reply (the host's ``model_timeout`` does that). A key the server quotes is replaced
        by ``<api key>`` even when it is split across chunks.
        """
        http = self._httpx
        model = request.model or self._model
        body = chat_completions_body(model, request)
        body["stream"] = True
        body["stream_options"] = {"include_usage": True}
        content = _encode_body(body)
        headers = self._headers("text/event-stream")
        attempts = 1 + self._max_retries
        last, last_status = "", None
        outcome: str | ToolCall | None = None
        usage: Usage | None = None
        async with http.AsyncClient(timeout=http.Timeout(self._timeout), follow_redirects=False) as client:
            for attempt in range(1, attempts + 1):
                wait: float | None = None
                response: httpx.Response | None = None
                with anyio.move_on_after(self._timeout) as deadline:
                    try:
                        sent = client.build_request("POST", self._endpoint, content=content, headers=headers)
                        response = await client.send(sent, stream=True)
                    except http.TimeoutException:
                        last, last_status = f"no answer within {self._timeout:g}s", None
                    except http.TransportError as exc:
                        last, last_status = self._unreachable(exc), None
                if deadline.cancelled_caught:
                    last, last_status = f"no answer within {self._timeout:g}s", None
                if response is not None:
                    reader = _StreamReader(self, model)
                    try:
                        if not response.is_success:
                            await response.aread()
                            last, wait = self._failed(response, model)
                            last_status = response.status_code
                        elif _is_json(response):  # the server ignored "stream": read it whole
                            await response.aread()
                            payload = self._decode(response, model)
                            outcome, usage = self._parse(payload, model), usage_of(payload)
                        else:
                            # read to the end even after a bad event: leaving httpx's nested
                            # generators half-read makes trio warn when they are collected
                            async for line in response.aiter_lines():
                                text = reader.feed(line)
                                if text:
                                    yield text
                            outcome, usage = reader.end(), reader.usage
                    except (http.TimeoutException, http.TransportError, _StreamBroke) as exc:
                        if isinstance(exc, http.TimeoutException):
                            why = f"no chunk within {self._timeout:g}s"
                        elif isinstance(exc, _StreamBroke):
                            why = exc.why
                        else:
                            why = f"the connection broke ({type(exc).__name__}: {self._scrub(str(exc)) or 'no detail'})"
                        if reader.shown:
                            raise ModelError(
                                f"model {model!r} at {self._shown_endpoint}: the streamed reply broke off after "
                                f"{reader.shown} characters: {why}; the turn fails because what was shown cannot "
                                "be taken back; send the message again",
                                model=model,
                                status=response.status_code,
                            ) from None
                        last, last_status = why, None
                    finally:
                        await response.aclose()
                if outcome is not None or attempt == attempts:
                    break
                await anyio.sleep(self._wait(wait, attempt, model, last_status))
        if outcome is None:
            raise self._gave_up(model, attempts, last, last_status)
        if isinstance(outcome, ToolCall):
            yield attrs.evolve(_host_call(outcome, request), usage=usage)
            return
        if outcome:
            yield outcome
        if usage is not None:
            yield usage

    # -- HTTP -------------------------------------------------------------------------------

    def _headers(self, accept: str) -> dict[str, str]:
        headers = {"Content-Type": "application/json", "Accept": accept, "User-Agent": "host-sim"}
        if self._api_key is not None:
            headers["Authorization"] = f"Bearer {self._api_key.value}"
        inject_trace_headers(headers)  # traceparent of the current span (docs/observability.md), when tracing is in use
        return headers

    def _unreachable(self, exc: Exception) -> str:
        detail = self._scrub(str(exc)) or "no detail"
        return f"could not reach the server ({type(exc).__name__}: {detail})"

    def _failed(self, response: httpx.Response, model: str) -> tuple[str, float | None]:
        """A failed answer: raises `ModelError` unless it is worth retrying; else what to
        report if it is the last, and how long the server asked us to wait."""
        message = self._server_message(response)
        if response.status_code not in _RETRY_STATUSES and response.status_code < 500:
            raise ModelError(self._refused(response.status_code, message, model), model=model, status=response.status_code)
        return f"the server answered {_status(response.status_code)}: {message}", _retry_after(response.headers)

    def _wait(self, asked: float | None, attempt: int, model: str, status: int | None) -> float:
        """Seconds to wait before the next attempt: what the server asked (``Retry-After``),
        else backoff; raises `ModelError` when the server asks for more than ``max_retry_wait``."""
        if asked is None:
            return _backoff(attempt)
        if asked > self._max_retry_wait:
            raise ModelError(
                f"model {model!r} at {self._shown_endpoint}: the server answered "
                f"{_status(status) if status is not None else 'a failure'} and asked to retry after {asked if asked < 10 else round(asked):g} s "
                f"(Retry-After), more than OpenAIModel(max_retry_wait={self._max_retry_wait:g}) waits; the turn "
                "fails instead of waiting: try again later, or raise max_retry_wait",
                model=model,
                status=status,
            )
        return asked

    def _gave_up(self, model: str, attempts: int, last: str, last_status: int | None) -> ModelError:
        return ModelError(
            f"model {model!r} at {self._shown_endpoint} failed after {attempts} "
            f"attempt{'s' if attempts != 1 else ''}; the last: {last}; check that the server is up "
            "and not overloaded, or raise OpenAIModel(max_retries=..., timeout=...)",
            model=model,
            status=last_status,
        )

    async def _post(self, body: JsonObject, model: str) -> JsonValue:
        httpx = self._httpx
        headers = self._headers("application/json")
        content = _encode_body(body)
        attempts = 1 + self._max_retries
        last, last_status = "", None
        async with httpx.AsyncClient(timeout=httpx.Timeout(self._timeout), follow_redirects=False) as client:
            for attempt in range(1, attempts + 1):
                wait: float | None = None
                with anyio.move_on_after(self._timeout) as deadline:
                    try:
                        response = await client.post(self._endpoint, content=content, headers=headers)
                    except httpx.TimeoutException:
                        last, last_status = f"no answer within {self._timeout:g}s", None
                    except httpx.TransportError as exc:
                        last, last_status = self._unreachable(exc), None
                    else:
                        if response.is_success:
                            return self._decode(response, model)
                        last, wait = self._failed(response, model)
                        last_status = response.status_code
                if deadline.cancelled_caught:
                    last, last_status = f"no answer within {self._timeout:g}s", None
                if attempt == attempts:
                    break
                await anyio.sleep(self._wait(wait, attempt, model, last_status))
        raise self._gave_up(model, attempts, last, last_status)

    def _decode(self, response: httpx.Response, model: str) -> JsonValue:
        try:
            payload: JsonValue = self._scrub_data(parse_json_text(response.text))  # decoded, then scrubbed
        except (ValueError, RecursionError):  # SerializationError (a number) is a ValueError
            raise ModelError(
                f"model {model!r} at {self._shown_endpoint} answered {_status(response.status_code)} "
                f"with a body that is not JSON: {self._quote(response.text)}; "
                "check that base_url points at a Chat Completions API (it usually ends in /v1)",
                model=model,
                status=response.status_code,
            ) from None
        return payload

    def _server_message(self, response: httpx.Response) -> str:
        """The server's own words: ``error.message`` of an OpenAI error body, else the body."""
        text = response.text
        try:
            data = parse_json_text(text)
        except (ValueError, RecursionError):
            data = None
        if isinstance(data, dict):
            error = data.get("error")
            if isinstance(error, dict) and isinstance(error.get("message"), str):
                return self._quote(error["message"])
            if isinstance(error, str):
                return self._quote(error)
            if isinstance(data.get("message"), str):
                return self._quote(data["message"])
        return self._quote(text) if text.strip() else "(no message)"

    def _refused(self, status: int, message: str, model: str) -> str:
        hint = {
            401: "check the API key (api_key= or $OPENAI_API_KEY)",
            403: "check the API key and that it may use this model",
            404: f"check the model name {model!r} and base_url (it usually ends in /v1)",
        }.get(status, "the request was refused; fix what the server names")
        return f"model {model!r} at {self._shown_endpoint}: the server answered {_status(status)}: {message}; {hint}"

    def scrub(self, text: str) -> str:
        """``text`` with every copy of the API key replaced by ``<api key>``, however it is
        encoded (JSON escapes, percent-encoding any number of times, HTML references,
        invisible characters between its characters, base64); ``text`` itself when it holds
        none. The host applies it to every text that reaches a sink (docs/embedding.md)."""
        return text if self._api_key is None else self._api_key.scrubber.text(text)

    def _scrub(self, text: str) -> str:
        """``text`` with the key replaced, in any encoding (see `host_sim.models._secrets`)."""
        return self.scrub(text)

    def _scrub_data(self, value: JsonValue) -> JsonValue:
        """Decoded JSON data with the key replaced in every string."""
        return value if self._api_key is None else self._api_key.scrubber.data(value)

    def _quote(self, text: str) -> str:
        text = self._scrub(text).strip()
        if len(text) > _QUOTE_LIMIT:
            text = text[:_QUOTE_LIMIT] + "..."
        return repr(text)

    # -- the answer -------------------------------------------------------------------------

    def _parse(self, payload: JsonValue, model: str) -> str | ToolCall:
        choices = payload.get("choices") if isinstance(payload, dict) else None
        message = choices[0].get("message") if isinstance(choices, list) and choices and isinstance(choices[0], dict) else None
        if not isinstance(message, dict):
            raise self._malformed(payload, "it has no choices[0].message", model)
        calls = message.get("tool_calls")
        if isinstance(calls, list) and calls:
            return self._tool_call(calls[0], payload, model)
        content = message.get("content")
        if isinstance(content, list):  # content parts, as some servers send
            parts = [p.get("text") for p in content if isinstance(p, dict)]
            content = "".join(p for p in parts if isinstance(p, str))
        if isinstance(content, str):
            return content
        refusal = message.get("refusal")
        if isinstance(refusal, str) and refusal:
            raise ModelError(
                f"model {model!r} refused to answer: {self._quote(refusal)}; rephrase the request",
                model=model,
            )
        raise self._malformed(payload, "choices[0].message has neither text content nor tool calls", model)

    def _tool_call(self, call: JsonValue, payload: JsonValue, model: str) -> ToolCall:
        function = call.get("function") if isinstance(call, dict) else None
        name = function.get("name") if isinstance(function, dict) else None
        if not isinstance(function, dict) or not isinstance(name, str) or not name:
            raise self._malformed(payload, "its tool call has no function name", model)
        arguments = function.get("arguments")
        if arguments is None or arguments == "":
            arguments = "{}"
        if isinstance(arguments, str):
            try:
                arguments = self._scrub_data(parse_json_text(self._scrub(arguments)))
            except (ValueError, RecursionError) as exc:  # SerializationError (a number) is a ValueError
                why = f" ({exc})" if isinstance(exc, SerializationError) else ""
                raise ModelError(
                    f"model {model!r} called tool {name!r} with arguments that are not JSON{why}: "
                    f"{self._quote(str(function.get('arguments')))}; a model with better tool use may be needed",
                    model=model,
                ) from None
        if not isinstance(arguments, dict):
            raise ModelError(
                f"model {model!r} called tool {name!r} with arguments that are not a JSON object: "
                f"{self._quote(json.dumps(arguments))}; a tool's input is an object",
                model=model,
            )
        call_id = call.get("id") if isinstance(call, dict) else None
        return ToolCall(name=name, input=arguments, call_id=call_id if isinstance(call_id, str) and call_id else None)

    def _malformed(self, payload: JsonValue, why: str, model: str) -> ModelError:
        return ModelError(
            f"model {model!r} at {self._shown_endpoint} sent an answer that is not a Chat "
            f"Completions response ({why}): {self._quote(json.dumps(payload, ensure_ascii=False))}; "
            "check that base_url points at an OpenAI-compatible server",
            model=model,
        )


class _StreamBroke(Exception):
    """A stream that ended or reported an error before the reply was whole (``why`` says how)."""

    def __init__(self, why: str) -> None:
        super().__init__(why)
        self.why = why


class _ToolCallPieces:
    """One streamed tool call as its deltas arrive (``arguments`` come in fragments)."""

    __slots__ = ("arguments", "call_id", "name")

    def __init__(self) -> None:
        self.call_id: str | None = None
        self.name = ""
        self.arguments: list[str] = []


class _StreamReader:
    """Reads a Chat Completions event stream line by line: the text to show now, and at the
    end the rest (held-back text or the first tool call).

    Server-sent events: ``data:`` lines (joined by newlines when an event has several) end
    at a blank line; comments (``:``) and other fields are ignored; ``data: [DONE]`` ends
    the stream. Each event is one ``chat.completion.chunk`` with ``choices[0].delta``.
    """

    def __init__(self, owner: OpenAIModel, model: str) -> None:
        self._owner = owner
        self._model = model
        self._data: list[str] = []
        self._text = KeyFilter(owner._api_key.scrubber if owner._api_key is not None else None)
        self._calls: dict[int, _ToolCallPieces] = {}
        self._refusal: list[str] = []
        self._done = False
        self._finish: str | None = None
        self._problem: Exception | None = None  # the first bad event; the rest is only read
        self.shown = 0  # characters of reply text handed out
        self.usage: Usage | None = None  # the token counts, once the server sent them

    def feed(self, line: str) -> str:
        """One line of the body; returns the text to show now (``""`` for none)."""
        if line == "":
            if not self._data or self._problem is not None:
                self._data = []
                return ""
            data, self._data = "\n".join(self._data), []
            try:
                return self._event(data)
            except (_StreamBroke, ModelError) as problem:
                self._problem = problem
                return ""
        field, _, value = line.partition(":")
        if field == "data":
            self._data.append(value[1:] if value.startswith(" ") else value)
        return ""

    def end(self) -> str | ToolCall:
        """The body ended: the first tool call, or the text held back; raises `_StreamBroke`
        for a stream cut short and `ModelError` for a refusal."""
        rest = self._event("\n".join(self._data)) if self._data and self._problem is None else ""
        self._data = []
        if self._problem is not None:
            raise self._problem
        if not self._done and self._finish is None:
            raise _StreamBroke("the stream ended before the server said it was done (no [DONE], no finish_reason)")
        if self._calls:
            return self._tool_call(self._calls[min(self._calls)])
        rest += self._text.flush()
        self.shown += len(rest)
        if not self.shown and self._refusal:
            raise ModelError(
                f"model {self._model!r} refused to answer: {self._owner._quote(''.join(self._refusal))}; rephrase the request",
                model=self._model,
            )
        return rest

    def _event(self, data: str) -> str:
        if data.strip() == "[DONE]":
            self._done = True
            return ""
        try:
            chunk: JsonValue = self._owner._scrub_data(parse_json_text(data))  # content: the filter too
        except (ValueError, RecursionError):
            raise self._malformed(data, "an event is not JSON") from None
        if not isinstance(chunk, dict):
            raise self._malformed(data, "an event is not a JSON object")
        error = chunk.get("error")
        if error is not None:
            message = error.get("message") if isinstance(error, dict) else error
            raise _StreamBroke(f"the server reported an error mid-stream: {self._owner._quote(str(message))}")
        self.usage = usage_of(chunk) or self.usage  # the last chunk's (include_usage), or any chunk's
        choices = chunk.get("choices")
        if not isinstance(choices, list):
            raise self._malformed(data, "an event has no choices")
        if not choices:  # a usage chunk
            return ""
        choice = choices[0]
        delta = choice.get("delta") if isinstance(choice, dict) else None
        if not isinstance(choice, dict) or not isinstance(delta, dict):
            raise self._malformed(data, "an event has no choices[0].delta")
        finish = choice.get("finish_reason")
        if isinstance(finish, str):
            self._finish = finish
        refusal = delta.get("refusal")
        if isinstance(refusal, str):
            self._refusal.append(refusal)
        calls = delta.get("tool_calls")
        if isinstance(calls, list):
            for position, call in enumerate(calls):
                self._tool_call_delta(position, call)
        content = delta.get("content")
        if isinstance(content, list):  # content parts, as some servers send
            parts = [p.get("text") for p in content if isinstance(p, dict)]
            content = "".join(p for p in parts if isinstance(p, str))
        if not isinstance(content, str) or not content:
            return ""
        shown = self._text.feed(content)
        self.shown += len(shown)
        return shown

    def _tool_call_delta(self, position: int, call: JsonValue) -> None:
        if not isinstance(call, dict):
            return
        index = call.get("index")
        pieces = self._calls.setdefault(index if isinstance(index, int) and not isinstance(index, bool) else position, _ToolCallPieces())
        call_id = call.get("id")
        if isinstance(call_id, str) and call_id and pieces.call_id is None:
            pieces.call_id = call_id
        function = call.get("function")
        if not isinstance(function, dict):
            return
        name = function.get("name")
        if isinstance(name, str) and name and not pieces.name:
            pieces.name = name
        arguments = function.get("arguments")
        if isinstance(arguments, str):
            pieces.arguments.append(arguments)
        elif isinstance(arguments, dict):  # sent whole, as an object, by some servers
            pieces.arguments.append(json.dumps(arguments, ensure_ascii=False))

    def _tool_call(self, pieces: _ToolCallPieces) -> ToolCall:
        call: JsonObject = {
            "id": pieces.call_id,
            "type": "function",
            "function": {"name": pieces.name, "arguments": self._owner._scrub("".join(pieces.arguments))},
        }
        return self._owner._tool_call(call, {"tool_calls": [call]}, self._model)

    def _malformed(self, data: str, why: str) -> ModelError:
        return ModelError(
            f"model {self._model!r} at {self._owner._shown_endpoint} sent a stream that is not a Chat "
            f"Completions stream ({why}): {self._owner._quote(data)}; "
            "check that base_url points at an OpenAI-compatible server",
            model=self._model,
        )


def _encode_body(body: JsonObject) -> bytes:
    return json.dumps(body, ensure_ascii=False).encode("utf-8", "surrogatepass")


def _is_json(response: httpx.Response) -> bool:
    content_type = str(response.headers.get("content-type", ""))
    return content_type.split(";")[0].strip().lower() == "application/json"


def wire_names(names: Sequence[str]) -> dict[str, str]:
    """Each tool name -> the name sent for it: Chat Completions takes ``[A-Za-z0-9_-]{1,64}``.

    A name that fits is sent as it is; any other (an MCP tool, ``notes.read_note``) has each
    other character replaced by ``_`` (``notes_read_note``), with a short hash of the name
    added when that is taken or too long. The same names always map the same way.
    """
    out: dict[str, str] = {name: name for name in names if _WIRE_NAME.fullmatch(name)}
    taken = set(out)
    for name in names:
        if name in out:
            continue
        wire = re.sub(r"[^A-Za-z0-9_-]", "_", name)
        if not wire or len(wire) > 64 or wire in taken:
            wire = f"{wire[:55]}_{hashlib.sha256(name.encode('utf-8', 'surrogatepass')).hexdigest()[:8]}"
        out[name] = wire
        taken.add(wire)
    return out


def _host_named(value: str | ToolCall, request: ModelRequest) -> str | ToolCall:
    """A tool call with the host's name for the tool the model named on the wire."""
    return _host_call(value, request) if isinstance(value, ToolCall) else value


def _host_call(value: ToolCall, request: ModelRequest) -> ToolCall:
    host = {wire: name for name, wire in wire_names([t.name for t in request.tools]).items()}
    name = host.get(value.name, value.name)
    return value if name == value.name else attrs.evolve(value, name=name)


_MAX_COUNT: Final = 2**63 - 1


def usage_of(payload: JsonValue) -> Usage | None:
    """The token counts of a Chat Completions response or chunk (``usage.prompt_tokens`` and
    ``usage.completion_tokens``); ``None`` when it has none, or counts that are not ints in
    0..2**63-1 (a server's bad count never fails a turn: it is only not reported)."""
    usage = payload.get("usage") if isinstance(payload, dict) else None
    if not isinstance(usage, dict):
        return None
    counts = usage.get("prompt_tokens"), usage.get("completion_tokens")
    if not all(type(c) is int and 0 <= c <= _MAX_COUNT for c in counts):
        return None
    prompt, completion = counts
    assert isinstance(prompt, int) and isinstance(completion, int)
    return Usage(input_tokens=prompt, output_tokens=completion)


def _with_usage(value: str | ToolCall, usage: Usage | None) -> str | Reply | ToolCall:
    if usage is None:
        return value
    if isinstance(value, ToolCall):
        return attrs.evolve(value, usage=usage)
    return Reply(text=value, usage=usage)


def chat_completions_body(model: str, request: ModelRequest) -> JsonObject:
    """The Chat Completions request body for one step of a turn (tool names as `wire_names` sends them)."""
    wire = wire_names([t.name for t in request.tools])
    messages: list[JsonValue] = []
    if request.instructions:
        messages.append({"role": "system", "content": request.instructions})
    for entry in request.history:
        if getattr(entry, "erased", False) is True:  # forgotten (docs/lineage.md): say so, no silent gap
            messages.append({"role": "system", "content": _ERASED})
            continue
        if entry.kind == "summary":  # a compacted window (docs/memory.md): one system message
            first, last = entry.covers if entry.covers is not None else (0, 0)
            messages.append({"role": "system", "content": f"{_SUMMARY} (turns {first} to {last}):\n{entry.text}"})
            continue
        messages.append(_input_message(entry.kind, entry.text))
        messages.append({"role": "assistant", "content": entry.reply})
        if getattr(entry, "retracted", False) is True:  # found wrong (docs/the-record.md): say so
            messages.append({"role": "system", "content": f"{_RETRACTED} Why: {entry.retraction_reason}"})
    messages.append(_input_message(request.kind, request.text))
    for result in request.tool_results:
        messages.append(
            {
                "role": "assistant",
                "content": None,
                "tool_calls": [
                    {
                        "id": result.call_id,
                        "type": "function",
                        "function": {"name": wire.get(result.name, result.name), "arguments": json.dumps(result.input, ensure_ascii=False)},
                    }
                ],
            }
        )
        content = result.output if result.error is None else f"error: {result.error}"
        messages.append({"role": "tool", "tool_call_id": result.call_id, "content": content or ""})
    body: JsonObject = {"model": model, "messages": messages}
    if request.tools:
        body["tools"] = [
            {
                "type": "function",
                "function": {"name": wire[t.name], "description": t.description, "parameters": t.input_schema},
            }
            for t in request.tools
        ]
    if request.output_schema is not None:
        body["response_format"] = {
            "type": "json_schema",
            "json_schema": {"name": _schema_name(request.output_schema), "schema": request.output_schema, "strict": True},
        }
    return body


_SUMMARY: Final = "Summary of the earlier conversation"


def _input_message(kind: str, text: str) -> JsonValue:
    if kind == "notification":
        return {"role": "system", "content": _NOTIFICATION_PREFIX + text}
    return {"role": "user", "content": text}


def _schema_name(schema: JsonValue) -> str:
    """``json_schema.name``: the schema's title when it is a valid name, else ``"output"``."""
    title = schema.get("title") if isinstance(schema, dict) else None
    if isinstance(title, str) and 0 < len(title) <= 64 and all(c.isascii() and (c.isalnum() or c in "_-") for c in title):
        return title
    return "output"


def _check_base_url(base_url: object) -> str:
    parsed = urllib.parse.urlsplit(base_url) if isinstance(base_url, str) else None
    if parsed is None or parsed.scheme not in ("http", "https") or not parsed.netloc or parsed.query or parsed.fragment:
        raise InvalidArgumentError(
            f"OpenAIModel's base_url must be an http(s) URL without query, got {show(base_url)}; "
            "pass the server's API root, e.g. 'http://localhost:8000/v1'",
            argument="base_url",
            value=base_url,
        )
    assert isinstance(base_url, str)
    return base_url.rstrip("/")


def _without_userinfo(url: str) -> str:
    parsed = urllib.parse.urlsplit(url)
    if "@" not in parsed.netloc:
        return url
    return urllib.parse.urlunsplit(parsed._replace(netloc=parsed.netloc.rpartition("@")[2]))


def _status(code: int) -> str:
    import http

    try:
        return f"{code} {http.HTTPStatus(code).phrase}"
    except ValueError:
        return str(code)


def _retry_after(headers: Mapping[str, str]) -> float | None:
    """Seconds the server asked us to wait (``retry-after-ms``, or ``Retry-After`` in seconds or
    as an HTTP date), or ``None`` when it asked nothing readable."""
    raw_ms = headers.get("retry-after-ms")
    if raw_ms is not None:
        try:
            seconds = float(raw_ms) / 1000
        except ValueError:
            seconds = math.nan
        if math.isfinite(seconds) and seconds >= 0:
            return seconds
    raw = headers.get("retry-after")
    if raw is None:
        return None
    try:
        seconds = float(raw)
    except ValueError:
        try:
            when = email.utils.parsedate_to_datetime(raw)
        except (TypeError, ValueError, IndexError):
            return None
        if when.tzinfo is None:
            return None
        seconds = max(0.0, when.timestamp() - time.time())  # a date just past: retry now
    if math.isfinite(seconds) and seconds >= 0:
        return seconds
    return None


def _finite(value: float) -> bool:
    """Whether ``value`` is a finite float, or an int a float can hold (10**5000 is not)."""
    try:
        return math.isfinite(value)
    except OverflowError:
        return False


def _backoff(attempt: int) -> float:
    """Exponential backoff with jitter: about 0.5 s, 1 s, 2 s ... up to 8 s."""
    ceiling: float = min(_BACKOFF_CAP, _BACKOFF_BASE * 2.0 ** (attempt - 1))
    return ceiling * (0.5 + random.random() / 2)  # noqa: S311

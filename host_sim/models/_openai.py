"""`OpenAIModel`: any OpenAI-compatible Chat Completions server, over httpx.

The client is httpx itself, not the official ``openai`` package: a turn needs one POST and
its JSON answer, httpx runs on asyncio and on trio (through anyio, like the host), and it is
one small dependency where ``openai`` brings pydantic, its own retry policy and a much
larger import. httpx is imported when the first `OpenAIModel` is made, never by
``import host_sim``.
"""

from __future__ import annotations

import email.utils
import json
import math
import os
import random
import time
import urllib.parse
from collections.abc import Mapping
from typing import TYPE_CHECKING, final

import anyio

from modular_sdk import InvalidArgumentError
from modular_sdk._schema import JsonObject, JsonValue

from ._errors import ModelError
from ._protocol import ModelRequest, ToolCall

if TYPE_CHECKING:
    import httpx

__all__ = ["OpenAIModel", "chat_completions_body"]

_RETRY_STATUSES = frozenset({408, 429})
_MAX_RETRY_AFTER = 60.0  # a longer Retry-After is not worth waiting for inside a turn
_BACKOFF_BASE = 0.5
_BACKOFF_CAP = 8.0
_QUOTE_LIMIT = 500  # characters of a server's error text quoted in a message
_ERASED = "An earlier turn was here; it was erased at the user's request."
_NOTIFICATION_PREFIX = "Notification (a system event, not a message from the user):\n"


class _Secret:
    """The API key, held where neither ``repr`` nor ``vars()`` of the model shows it."""

    __slots__ = ("value",)

    def __init__(self, value: str) -> None:
        self.value = value

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

    429, 408, 5xx, refused connections and timeouts are retried with exponential backoff,
    waiting what ``Retry-After`` asks (up to 60 s): at most ``1 + max_retries`` attempts of
    ``timeout`` seconds each. Any other failure raises `ModelError` with the server's message,
    which fails the turn. ``api_key`` defaults to ``$OPENAI_API_KEY`` and may be absent for
    a local server; it never appears in errors or reprs, even when the server quotes it.

    Needs the extra ``modular-sdk[openai]`` (httpx); raises `InvalidArgumentError` for a bad
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
    ) -> None:
        if not isinstance(model, str) or not model.strip():
            raise InvalidArgumentError(
                f"OpenAIModel needs the model name as a non-empty str, got {model!r}; "
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
            shown = "an empty or padded str" if isinstance(api_key, str) else repr(api_key)
            raise InvalidArgumentError(
                f"OpenAIModel's api_key must be a non-empty str without surrounding spaces or None, "
                f"got {shown}; pass None to use $OPENAI_API_KEY or to send no key to a local server",
                argument="api_key",
                value=None if isinstance(api_key, str) else api_key,  # never keep a key in an error
            )
        self._api_key = _Secret(api_key) if api_key else None
        if isinstance(timeout, bool) or not isinstance(timeout, (int, float)) or not math.isfinite(timeout) or timeout <= 0:
            raise InvalidArgumentError(
                f"OpenAIModel's timeout must be a positive number of seconds, got {timeout!r}; "
                "pass e.g. timeout=60.0",
                argument="timeout",
                value=timeout,
            )
        self._timeout = float(timeout)
        if isinstance(max_retries, bool) or not isinstance(max_retries, int) or max_retries < 0:
            raise InvalidArgumentError(
                f"OpenAIModel's max_retries must be an int >= 0, got {max_retries!r}; "
                "pass 0 to never retry",
                argument="max_retries",
                value=max_retries,
            )
        self._max_retries = max_retries
        try:
            import httpx
        except ImportError:
            raise ModelError(
                "OpenAIModel needs httpx, which is not installed; "
                "install the extra: pip install 'modular-sdk[openai]'",
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
            f"timeout={self._timeout!r}, max_retries={self._max_retries!r})"
        )

    async def respond(self, request: ModelRequest) -> str | ToolCall:
        """Ask the server for the next step of the turn; raises `ModelError` when it cannot."""
        model = request.model or self._model
        payload = await self._post(chat_completions_body(model, request), model)
        return self._parse(payload, model)

    # -- HTTP -------------------------------------------------------------------------------

    async def _post(self, body: JsonObject, model: str) -> JsonValue:
        httpx = self._httpx
        headers = {"Content-Type": "application/json", "Accept": "application/json", "User-Agent": "host-sim"}
        if self._api_key is not None:
            headers["Authorization"] = f"Bearer {self._api_key.value}"
        content = json.dumps(body, ensure_ascii=False).encode("utf-8", "surrogatepass")
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
                        detail = self._scrub(str(exc)) or "no detail"
                        last, last_status = f"could not reach the server ({type(exc).__name__}: {detail})", None
                    else:
                        if response.is_success:
                            return self._decode(response, model)
                        message = self._server_message(response)
                        if response.status_code not in _RETRY_STATUSES and response.status_code < 500:
                            raise ModelError(self._refused(response.status_code, message, model), model=model, status=response.status_code)
                        last = f"the server answered {_status(response.status_code)}: {message}"
                        last_status = response.status_code
                        wait = _retry_after(response.headers)
                if deadline.cancelled_caught:
                    last, last_status = f"no answer within {self._timeout:g}s", None
                if attempt == attempts:
                    break
                await anyio.sleep(wait if wait is not None else _backoff(attempt))
        raise ModelError(
            f"model {model!r} at {self._shown_endpoint} failed after {attempts} "
            f"attempt{'s' if attempts != 1 else ''}; the last: {last}; check that the server is up "
            "and not overloaded, or raise OpenAIModel(max_retries=..., timeout=...)",
            model=model,
            status=last_status,
        )

    def _decode(self, response: httpx.Response, model: str) -> JsonValue:
        try:
            payload: JsonValue = json.loads(self._scrub(response.text))  # a quoted key never reaches a reply
        except (ValueError, RecursionError):
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
            data = json.loads(text)
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

    def _scrub(self, text: str) -> str:
        if self._api_key is not None:
            text = text.replace(self._api_key.value, "<api key>")
        return text

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
                arguments = json.loads(arguments)
            except (ValueError, RecursionError):
                raise ModelError(
                    f"model {model!r} called tool {name!r} with arguments that are not JSON: "
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


def chat_completions_body(model: str, request: ModelRequest) -> JsonObject:
    """The Chat Completions request body for one step of a turn."""
    messages: list[JsonValue] = []
    if request.instructions:
        messages.append({"role": "system", "content": request.instructions})
    for entry in request.history:
        if getattr(entry, "erased", False) is True:  # forgotten (API.md section 8): say so, no silent gap
            messages.append({"role": "system", "content": _ERASED})
            continue
        messages.append(_input_message(entry.kind, entry.text))
        messages.append({"role": "assistant", "content": entry.reply})
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
                        "function": {"name": result.name, "arguments": json.dumps(result.input, ensure_ascii=False)},
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
                "function": {"name": t.name, "description": t.description, "parameters": t.input_schema},
            }
            for t in request.tools
        ]
    if request.output_schema is not None:
        body["response_format"] = {
            "type": "json_schema",
            "json_schema": {"name": _schema_name(request.output_schema), "schema": request.output_schema, "strict": True},
        }
    return body


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
            f"OpenAIModel's base_url must be an http(s) URL without query, got {base_url!r}; "
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
    """Seconds the server asked us to wait (``retry-after-ms`` or ``Retry-After``), if sane."""
    raw_ms = headers.get("retry-after-ms")
    if raw_ms is not None:
        try:
            seconds = float(raw_ms) / 1000
        except ValueError:
            seconds = math.nan
        if 0 <= seconds <= _MAX_RETRY_AFTER:
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
    if math.isfinite(seconds) and 0 <= seconds <= _MAX_RETRY_AFTER:
        return seconds
    return None


def _backoff(attempt: int) -> float:
    """Exponential backoff with jitter: about 0.5 s, 1 s, 2 s ... up to 8 s."""
    ceiling: float = min(_BACKOFF_CAP, _BACKOFF_BASE * 2.0 ** (attempt - 1))
    return ceiling * (0.5 + random.random() / 2)  # noqa: S311

"""Cassettes: `RecordingModel` writes the model calls of a run, `ReplayModel` answers them again.

A cassette is JSON Lines, one model call per line, in the order the calls were answered::

    {"call":1,"request":{...},"response":{"text":"..."}}
    {"call":2,"request":{...},"response":{"tool_call":{"call_id":null,"input":{...},"name":"grep"}}}

``request`` is what the model was asked, without what changes from run to run: no session
id or message, and every id the host made (``ses_…``, ``turn_…``, ``msg_…``, ``call_…``,
wherever it appears, in a notification's body as much as in a tool result) is replaced by a
stable stand-in numbered in order of appearance (``ses_000000000001``). ``response`` is the
reply text, the tool call, or the error the model raised; a reply or tool call the model
reported token counts for also holds ``"usage":{"input_tokens":...,"output_tokens":...}``,
replayed as the same `Usage`. Keys are sorted and the JSON is
compact, so the same session gives the same bytes, and a changed prompt shows in
``git diff`` as the one line that changed.
"""

from __future__ import annotations

import difflib
import json
import os
import re
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import final

import attrs

from modular_sdk import InvalidArgumentError, SerializationError
from modular_sdk._json import parse_json_text
from modular_sdk._schema import JsonObject, JsonValue

from ..lanes._ext_host import describe_exception
from ._errors import CassetteMismatchError, ModelError
from ._protocol import HistoryEntry, Model, ModelReply, ModelRequest, Reply, ToolCall, Usage
from ._secrets import scrubber_of

__all__ = ["RecordingModel", "ReplayModel", "request_data"]

_HOST_ID = re.compile(r"(?<![0-9A-Za-z_])(ses|turn|msg|call)_[0-9a-f]{12}(?![0-9A-Za-z_])")
_DIFF_LINES = 80


def request_data(request: ModelRequest) -> JsonObject:
    """What a cassette keeps of a request: everything the model reads but the session and message."""
    return {
        "model": request.model,
        "kind": request.kind,
        "text": request.text,
        "instructions": request.instructions,
        "history": [_entry(e) for e in request.history],
        "tools": [
            {"name": t.name, "description": t.description, "input_schema": t.input_schema} for t in request.tools
        ],
        "tool_results": [
            {"call_id": r.call_id, "name": r.name, "input": r.input, "output": r.output, "error": r.error}
            for r in request.tool_results
        ],
        "output_schema": request.output_schema,
    }


def _entry(entry: HistoryEntry) -> JsonObject:
    data: JsonObject = {"kind": entry.kind, "text": entry.text, "reply": entry.reply}
    if getattr(entry, "erased", False) is True:  # only then: older cassettes keep their bytes
        data["erased"] = True
    if getattr(entry, "retracted", False) is True:  # the model reads it: a retracted turn is another request
        data["retracted"] = True
        data["retraction_reason"] = entry.retraction_reason
    if entry.covers is not None:  # a summary (docs/memory.md): which turns it stands for
        data["covers"] = [entry.covers[0], entry.covers[1]]
    return data


class _Ids:
    """Host-made ids and their stand-ins, numbered per kind in order of first appearance."""

    def __init__(
        self,
        forward: Mapping[str, str] | None = None,
        back: Mapping[str, str] | None = None,
        counts: Mapping[str, int] | None = None,
    ) -> None:
        self.forward: dict[str, str] = dict(forward or {})
        self.back: dict[str, str] = dict(back or {})
        self.counts: dict[str, int] = dict(counts or {})

    def copy(self) -> _Ids:
        return _Ids(self.forward, self.back, self.counts)

    def hide(self, text: str) -> str:
        """Every host id in ``text`` as its stand-in, new ids getting the next number."""
        return _HOST_ID.sub(lambda m: self._stand_in(m.group(0), m.group(1)), text)

    def hide_known(self, text: str) -> str:
        """Ids already seen as their stand-ins; anything else (an id a model made up) kept."""
        return _HOST_ID.sub(lambda m: self.forward.get(m.group(0), m.group(0)), text)

    def show(self, text: str) -> str:
        """Stand-ins back as this run's ids."""
        return _HOST_ID.sub(lambda m: self.back.get(m.group(0), m.group(0)), text)

    def _stand_in(self, real: str, kind: str) -> str:
        found = self.forward.get(real)
        if found is None:
            self.counts[kind] = self.counts.get(kind, 0) + 1
            found = f"{kind}_{self.counts[kind]:012x}"
            self.forward[real], self.back[found] = found, real
        return found


def _map_strings(value: JsonValue, fn: Callable[[str], str]) -> JsonValue:
    """``value`` with ``fn`` applied to every string and key, keys visited in sorted order."""
    if isinstance(value, str):
        return fn(value)
    if isinstance(value, list):
        return [_map_strings(v, fn) for v in value]
    if isinstance(value, dict):
        return {fn(k): _map_strings(value[k], fn) for k in sorted(value)}
    return value


def _encode(value: JsonValue) -> str:
    """Canonical JSON: sorted keys, compact; non-ASCII kept readable unless it cannot be UTF-8."""
    text = json.dumps(value, sort_keys=True, ensure_ascii=False, separators=(",", ":"))
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:  # a lone surrogate: escape it so the file stays UTF-8
        text = json.dumps(value, sort_keys=True, ensure_ascii=True, separators=(",", ":"))
    return text


def _response_data(reply: ModelReply | BaseException) -> JsonObject:
    """A reply as a cassette line holds it; ``usage`` only when the model reported it (so a
    cassette of a model that reports none reads as before)."""
    if isinstance(reply, BaseException):
        return {"error": describe_exception(reply)}
    if isinstance(reply, ToolCall):
        data: JsonObject = {"tool_call": {"name": reply.name, "input": reply.input, "call_id": reply.call_id}}
    else:
        data = {"text": reply.text if isinstance(reply, Reply) else reply}
    if not isinstance(reply, str) and reply.usage is not None:
        data["usage"] = {"input_tokens": reply.usage.input_tokens, "output_tokens": reply.usage.output_tokens}
    return data


def _recorded_usage(response: JsonObject) -> Usage | None:
    """The ``usage`` of a recorded response; ``None`` when it has none or counts that are not ints >= 0."""
    usage = response.get("usage")
    if not isinstance(usage, dict):
        return None
    counts = usage.get("input_tokens"), usage.get("output_tokens")
    if not all(type(c) is int and c >= 0 for c in counts):
        return None
    tokens_in, tokens_out = counts
    assert isinstance(tokens_in, int) and isinstance(tokens_out, int)
    return Usage(input_tokens=tokens_in, output_tokens=tokens_out)


def _check_model(inner: object) -> Model:
    if not callable(getattr(inner, "respond", None)) or not isinstance(getattr(inner, "name", None), str):
        raise InvalidArgumentError(
            f"RecordingModel records a model (with .name and async .respond(request)), got {inner!r}; "
            "pass e.g. OpenAIModel('gpt-4o-mini')",
            argument="inner",
            value=inner,
        )
    return inner  # type: ignore[return-value]  # checked structurally above


def _check_path(owner: str, path: object) -> Path:
    if not isinstance(path, (str, os.PathLike)) or not os.fspath(path):
        raise InvalidArgumentError(
            f"{owner} needs the cassette's path as a str or os.PathLike, got {path!r}; "
            "pass e.g. 'tests/cassettes/task.jsonl'",
            argument="path",
            value=path,
        )
    fspath = os.fspath(path)
    if isinstance(fspath, bytes):
        raise InvalidArgumentError(
            f"{owner} needs the cassette's path as text, got bytes {fspath!r}; decode it first",
            argument="path",
            value=path,
        )
    if "\x00" in fspath:
        raise InvalidArgumentError(
            f"{owner} needs a cassette path without NUL characters, got {fspath[:200]!r}; no file is named so",
            argument="path",
            value=path,
        )
    return Path(fspath)


@final
class RecordingModel:
    """A model that answers with ``inner`` and writes every call to the cassette at ``path``.

    Making one starts a new cassette (an existing file is replaced); each answered call
    appends one line, so a run cut short leaves the calls made so far. Errors ``inner``
    raises are recorded too and replayed as such. A call cut off by the host's
    ``model_timeout`` is not recorded. A reply longer than ``max_reply_bytes`` (UTF-8; pass
    the host's ``Host(max_reply_bytes=...)``, whose default it shares) is handed to the
    host, which fails the turn, and recorded as an error saying so, never as its text, so no
    byte of a reply the host refused is written. Replay the cassette with `ReplayModel`::

        model = RecordingModel(OpenAIModel("llama3.2", base_url="http://localhost:11434/v1"),
                               "tests/cassettes/task.jsonl")

    Raises `InvalidArgumentError` when ``inner`` is not a model, the cassette's folder does
    not exist or ``max_reply_bytes`` is not an int >= 1.
    """

    def __init__(self, inner: Model, path: str | os.PathLike[str], *, max_reply_bytes: int = 1_000_000) -> None:
        self._inner = _check_model(inner)
        if isinstance(max_reply_bytes, bool) or not isinstance(max_reply_bytes, int) or max_reply_bytes < 1:
            raise InvalidArgumentError(
                f"max_reply_bytes must be an int >= 1 (bytes of UTF-8), got {max_reply_bytes!r}; pass the "
                "host's Host(max_reply_bytes=...), e.g. max_reply_bytes=1_000_000",
                argument="max_reply_bytes",
                value=max_reply_bytes,
            )
        self._max_reply_bytes = max_reply_bytes
        self._path = _check_path("RecordingModel", path)
        if not self._path.parent.is_dir():
            raise InvalidArgumentError(
                f"cannot record the cassette {str(self._path)!r}: its folder {str(self._path.parent)!r} "
                "does not exist; create it first",
                argument="path",
                value=path,
            )
        try:
            self._path.write_bytes(b"")
        except OSError as exc:
            raise InvalidArgumentError(
                f"cannot write the cassette {str(self._path)!r} ({exc.strerror or exc}); pass a path you may write",
                argument="path",
                value=path,
            ) from None
        self._ids = _Ids()
        self._calls = 0

    @property
    def name(self) -> str:
        """``inner``'s name: sessions report the model they would have without the recording."""
        return self._inner.name

    @property
    def path(self) -> str:
        """The cassette being written."""
        return str(self._path)

    def __repr__(self) -> str:
        limit = "" if self._max_reply_bytes == 1_000_000 else f", max_reply_bytes={self._max_reply_bytes}"
        return f"RecordingModel({self._inner!r}, {str(self._path)!r}{limit})"

    async def respond(self, request: ModelRequest) -> ModelReply:
        """``inner``'s answer (or error), after appending the call to the cassette (a reply
        over ``max_reply_bytes`` as an error: the host refuses it)."""
        try:
            reply: ModelReply = await self._inner.respond(request)
        except Exception as exc:
            self._append(request, exc)
            raise
        text = reply if isinstance(reply, str) else reply.text if isinstance(reply, Reply) else ""
        size = len(text.encode("utf-8", "surrogatepass"))
        if size > self._max_reply_bytes:
            limit = self._max_reply_bytes
            self._append(
                request,
                ModelError(
                    f"the model's reply was {size} bytes, over the limit of {limit} bytes "
                    f"(max_reply_bytes={limit}); the host refused it and it was not recorded",
                    model=self._inner.name,
                ),
            )
        else:
            self._append(request, reply)
        return reply

    def scrub(self, text: str) -> str:
        """``inner``'s ``scrub`` (the secret it holds replaced in ``text``), or ``text``
        itself for a model that holds none: the host and the cassette apply it."""
        scrub = scrubber_of(self._inner)
        return text if scrub is None else scrub(text)

    def _append(self, request: ModelRequest, reply: ModelReply | BaseException) -> None:
        hidden = _map_strings(request_data(request), lambda text: self._ids.hide(self.scrub(text)))
        response = _map_strings(_response_data(reply), lambda text: self._ids.hide_known(self.scrub(text)))
        self._calls += 1
        line = f'{{"call":{self._calls},"request":{_encode(hidden)},"response":{_encode(response)}}}\n'
        with self._path.open("a", encoding="utf-8", newline="\n") as out:
            out.write(line)


@attrs.frozen
class _Call:
    request: JsonValue
    response: JsonObject


@final
class ReplayModel:
    """A model that answers from a cassette `RecordingModel` wrote, with no network.

    The calls are answered in order: the n-th request must be the one recorded n-th (ids
    the host made may differ, see the cassette format). Any other request fails the turn
    with a `ModelError` holding a unified diff of what changed; so does a request past the
    end of the cassette. Errors recorded are raised again. ``name`` is the recorded model's.

    Raises `InvalidArgumentError` when the cassette does not exist and `SerializationError`
    (naming the line) when a line is not a recorded call.
    """

    def __init__(self, path: str | os.PathLike[str]) -> None:
        self._path = _check_path("ReplayModel", path)
        self._calls = _load(self._path, path)
        first = self._calls[0].request if self._calls else None
        model = first.get("model") if isinstance(first, dict) else None
        self._name = model if isinstance(model, str) else "replay"
        self._ids = _Ids()
        self._next = 0

    @property
    def name(self) -> str:
        """The model the cassette was recorded with (``"replay"`` for an empty cassette)."""
        return self._name

    @property
    def path(self) -> str:
        """The cassette being replayed."""
        return str(self._path)

    @property
    def remaining(self) -> int:
        """How many recorded calls have not been asked for yet (``0`` once all were replayed)."""
        return len(self._calls) - self._next

    def __repr__(self) -> str:
        return f"ReplayModel({str(self._path)!r})"

    async def respond(self, request: ModelRequest) -> ModelReply:
        """The recorded answer to this request (with the recorded `Usage`, if any); raises
        `ModelError` when it was not recorded."""
        number = self._next + 1
        ids = self._ids.copy()
        asked = _map_strings(request_data(request), ids.hide)
        if self._next >= len(self._calls):
            raise CassetteMismatchError(
                f"the cassette {str(self._path)!r} holds {len(self._calls)} model call"
                f"{'' if len(self._calls) == 1 else 's'} and this is call {number}, a {request.kind} "
                f"{_short(request.text)}; the session asks the model more than when it was recorded: "
                "record the cassette again",
                model=self._name,
                path=str(self._path),
                call=number,
                diff="",
            )
        recorded = self._calls[self._next]
        if _encode(asked) != _encode(recorded.request):
            diff = _diff(recorded.request, asked, number)
            fields = _changed_fields(recorded.request, asked)
            raise CassetteMismatchError(
                f"call {number} of the cassette {str(self._path)!r} does not match: the request's "
                f"{fields} changed since it was recorded; record the cassette again if the change "
                f"is intended\n{diff}",
                model=self._name,
                path=str(self._path),
                call=number,
                diff=diff,
            )
        self._ids = ids
        self._next += 1
        response = _map_strings(recorded.response, ids.show)
        assert isinstance(response, dict)
        if "error" in response:
            raise ModelError(str(response["error"]), model=self._name)
        usage = _recorded_usage(response)
        call = response.get("tool_call")
        if isinstance(call, dict):
            name, given, call_id = call.get("name"), call.get("input"), call.get("call_id")
            assert isinstance(name, str) and isinstance(given, dict)
            return ToolCall(name=name, input=given, call_id=call_id if isinstance(call_id, str) else None, usage=usage)
        text = response.get("text")
        assert isinstance(text, str)
        return text if usage is None else Reply(text=text, usage=usage)


def _short(text: str) -> str:
    return repr(text if len(text) <= 60 else text[:60] + "...")


def _changed_fields(recorded: JsonValue, asked: JsonValue) -> str:
    if not isinstance(recorded, dict) or not isinstance(asked, dict):
        return "shape"
    names = [k for k in sorted(set(recorded) | set(asked)) if _encode(recorded.get(k)) != _encode(asked.get(k))]
    return ", ".join(repr(n) for n in names) or "shape"


def _diff(recorded: JsonValue, asked: JsonValue, number: int) -> str:
    def lines(value: JsonValue) -> list[str]:
        return json.dumps(value, sort_keys=True, ensure_ascii=False, indent=2).splitlines()

    diff = list(
        difflib.unified_diff(
            lines(recorded), lines(asked), fromfile=f"recorded call {number}", tofile="this run", lineterm="", n=2
        )
    )
    if len(diff) > _DIFF_LINES:
        diff = [*diff[:_DIFF_LINES], f"... ({len(diff) - _DIFF_LINES} more diff lines)"]
    return "\n".join(diff)


def _load(path: Path, given: object) -> list[_Call]:
    try:
        raw = path.read_bytes()
    except FileNotFoundError:
        raise InvalidArgumentError(
            f"there is no cassette at {str(path)!r}; record one first with "
            f"RecordingModel(model, {str(path)!r}) (or host-sim ... --record {str(path)!r})",
            argument="path",
            value=given,
        ) from None
    except OSError as exc:
        raise InvalidArgumentError(
            f"cannot read the cassette {str(path)!r} ({exc.strerror or exc}); pass a readable file",
            argument="path",
            value=given,
        ) from None
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise SerializationError(
            f"the cassette {str(path)!r} is not UTF-8 text (byte {exc.start}); "
            "pass a cassette RecordingModel wrote, or record it again",
            value=raw[: exc.start + 20],
            type_name="cassette",
        ) from None
    lines = text.split("\n")  # not splitlines(): JSON leaves U+2028 and friends unescaped
    if lines[-1] == "":
        lines.pop()
    return [_parse_line(path, number, line) for number, line in enumerate(lines, start=1)]


def _parse_line(path: Path, number: int, line: str) -> _Call:
    def bad(why: str) -> SerializationError:
        return SerializationError(
            f"line {number} of the cassette {str(path)!r} is not a recorded model call ({why}): "
            f"{_short(line)}; record the cassette again (or fix that line)",
            value=line,
            type_name="cassette line",
        )

    try:
        data = parse_json_text(line)
    except json.JSONDecodeError as exc:
        raise bad(f"not JSON: {exc.msg} at column {exc.colno}") from None
    except RecursionError:
        raise bad("nested too deeply") from None
    except SerializationError as exc:  # a number JSON readers cannot all hold
        raise bad(str(exc)) from None
    if not isinstance(data, dict) or set(data) != {"call", "request", "response"}:
        raise bad("a line is an object with exactly 'call', 'request' and 'response'")
    if data["call"] != number or isinstance(data["call"], bool):
        raise bad(f"'call' is {data['call']!r}, expected {number}: lines are calls 1, 2, 3 ... in order")
    request, response = data["request"], data["response"]
    if not isinstance(request, dict):
        raise bad("'request' is not an object")
    if not isinstance(response, dict) or len(response) != 1 + ("usage" in response):
        raise bad("'response' is an object with exactly one of 'text', 'tool_call', 'error' (and 'usage' with a reply)")
    if "usage" in response:
        if "error" in response or _recorded_usage(response) is None or set(response["usage"]) != {"input_tokens", "output_tokens"}:
            raise bad("'response.usage' is {'input_tokens': int >= 0, 'output_tokens': int >= 0}, with a text or tool call")
    if "text" in response:
        if not isinstance(response["text"], str):
            raise bad("'response.text' is not a string")
    elif "error" in response:
        if not isinstance(response["error"], str):
            raise bad("'response.error' is not a string")
    elif "tool_call" in response:
        call = response["tool_call"]
        if (
            not isinstance(call, dict)
            or set(call) != {"name", "input", "call_id"}
            or not isinstance(call["name"], str)
            or not isinstance(call["input"], dict)
            or not (call["call_id"] is None or isinstance(call["call_id"], str))
        ):
            raise bad("'response.tool_call' is not {'name': str, 'input': object, 'call_id': str or null}")
    else:
        raise bad("'response' is an object with exactly one of 'text', 'tool_call', 'error'")
    return _Call(request=request, response=response)

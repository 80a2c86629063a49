"""A model reply is input from outside: whatever it holds, the host reads it in linear time,
acts on at most 100 tags, refuses numbers JSON readers cannot all hold, never raises out of
`submit`, `start` or a job, and refuses a reply over ``max_reply_bytes``."""

from __future__ import annotations

import json
import re
from collections.abc import AsyncIterator, Callable
from pathlib import Path
from typing import Any

import attrs
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from host_sim import Host, MemoryStore, ModelRequest, ReplayModel, ScriptedModel, ToolCall
from host_sim.testing import ReplyTag, parse_actions, scan_tags
from modular_sdk import (
    ActionContext,
    InvalidArgumentError,
    ModMetadata,
    ReplyValidationError,
    SerializationError,
    action,
    define_mod,
)

pytestmark = pytest.mark.anyio


@attrs.frozen
class NewTask:
    title: str
    count: int = 0
    weight: float = 0.0


async def create_task(payload: NewTask, ctx: ActionContext) -> str:
    return f"created {payload.title!r}"


MOD = define_mod(
    metadata=ModMetadata(display_name="Tasks", description="Tasks the user confirms"),
    actions=[action(type="task.create", description="Create a task", payload_type=NewTask, run=create_task)],
)
DECLARED = {"task.create": (MOD, MOD.actions[0])}


def tag(body: str, kind: str = "task.create") -> str:
    return f'<mod-action type="{kind}">{body}</mod-action>'


def replying(text: str) -> ScriptedModel:
    return ScriptedModel(lambda request: text if request.text == "go" else "fine")


# -- the scanner ----------------------------------------------------------------------


def reference_scan(reply: str, name: str) -> tuple[list[ReplyTag], int]:
    """The rule, written plainly (quadratic): each opening either starts a tag that closes
    before the next opening, or is malformed."""
    starts = [m.start() for m in re.finditer(rf"<{name}(?![\w-])", reply)]
    tags: list[ReplyTag] = []
    malformed = 0
    for index, start in enumerate(starts):
        head = re.compile(rf"<{name}\s+type\s*=\s*\"([^\"<>]*)\"\s*>").match(reply, start)
        close = re.compile(rf"</{name}\s*>").search(reply, head.end()) if head else None
        following = starts[index + 1] if index + 1 < len(starts) else len(reply)
        if head is None or close is None or following < close.start():
            malformed += 1
        else:
            tags.append(ReplyTag(type=head.group(1), body=reply[head.end() : close.start()].strip()))
    return tags, malformed


pieces = st.sampled_from(
    ["<mod-action", " type=", '"', "task.create", '">', "{}", "</mod-action>", "</mod-action", " >", "<", ">", "x", " ", "\n", "<mod-actions", "<mod-widget"]
)


@settings(max_examples=300, deadline=None)
@given(parts=st.lists(pieces, max_size=30), limit=st.integers(min_value=0, max_value=5))
def test_the_linear_scanner_finds_exactly_what_the_plain_rule_finds(parts: list[str], limit: int) -> None:
    reply = "".join(parts)
    tags, malformed = reference_scan(reply, "mod-action")
    scanned = scan_tags(reply, "mod-action", limit=limit)
    assert list(scanned.tags) == tags[:limit]
    assert scanned.beyond_limit == max(0, len(tags) - limit)
    assert scanned.malformed == malformed


def test_another_tag_kind_is_scanned_the_same_way() -> None:
    reply = '<mod-widget type="progress">{"done": 1}</mod-widget> <mod-action type="a">{}</mod-action> <mod-widget type="x">'
    scanned = scan_tags(reply, "mod-widget")
    assert scanned.tags == (ReplyTag(type="progress", body='{"done": 1}'),)
    assert scanned.malformed == 1
    assert scanned.problems() == ['1 <mod-widget> tag is malformed (write <mod-widget type="...">{json}</mod-widget>); ignored']


HOSTILE: dict[str, Callable[[int], str]] = {
    "unclosed openings": lambda n: "<mod-action " * n,
    "unclosed tags": lambda n: '<mod-action type="task.create">{' * n,
    "openings then one closing": lambda n: '<mod-action type="task.create">' * n + "</mod-action>",
    "closings only": lambda n: "</mod-action>" * n,
    "unterminated types": lambda n: '<mod-action type="aaaa' * n,
}


@pytest.mark.parametrize("shape", sorted(HOSTILE))
def test_sixteen_thousand_hostile_tags_are_reported_and_create_nothing(shape: str) -> None:
    """8,000 unclosed openings took 10.7 s with one regular expression (16,000: 44 s); the
    time is a benchmark's business (benchmarks/replies.py checks the ratios), this is what
    such a reply comes to."""
    found, errors = parse_actions(HOSTILE[shape](16_000), DECLARED)
    assert found == [] or shape == "openings then one closing"
    assert all("ignored" in e for e in errors)


def test_a_megabyte_reply_of_tags_proposes_at_most_a_hundred() -> None:
    reply = (tag('{"title": "t"}') * 40_000)[:1_000_000] + "<mod-action " * 10_000
    found, errors = parse_actions(reply, DECLARED)
    assert len(found) == 100
    assert any("after the first 100 of this reply were ignored: a reply holds at most 100" in e for e in errors)


# -- numbers JSON readers cannot all hold --------------------------------------------------


@pytest.mark.parametrize(
    ("number", "why"),
    [
        ("9" * 5000, "an integer of 5000 digits, outside the signed 64-bit range"),
        (str(2**63), r"an integer outside the signed 64-bit range \(-2\*\*63 to 2\*\*63-1\)"),
        ("1e999", r"a number too large for a float \(it overflows to infinity\)"),
        ("NaN", r"not a JSON number \(JSON has no NaN or infinities\)"),
        ("-Infinity", r"not a JSON number \(JSON has no NaN or infinities\)"),
    ],
)
async def test_a_payload_number_json_cannot_hold_is_a_bad_payload_reported_by_submit(number: str, why: str) -> None:
    field = "weight" if "e" in number or "N" in number or "I" in number else "count"
    reply = tag(f'{{"title": "t", "{field}": {number}}}') + tag('{"title": "ok"}')
    async with Host(mods=[MOD], model=replying(reply)) as host:
        chat = await host.sessions.create()
        out = await host.submit(chat, "go")
        assert out.error is None
        assert [a.payload["title"] for a in out.actions] == ["ok"]
        (error,) = out.action_errors
        assert re.search(rf"<mod-action type='task.create'> holds no JSON payload \(the number .* is {why}; numbers must fit a 64-bit integer or a finite float", error)
        assert error.endswith("; it was ignored") and len(error) < 1000
        assert [a.payload["title"] for a in await host.pending_actions(chat)] == ["ok"]


async def test_a_job_whose_reply_holds_a_huge_number_finishes_and_the_host_lives_on() -> None:
    """It used to raise ValueError in the host's task group: the job read "interrupted"."""
    async with Host(mods=[MOD], model=replying(tag('{"title": "t", "count": ' + "1" * 5000 + "}"))) as host:
        chat = await host.sessions.create()
        job = await host.start(chat, "go")
        submission = await job.wait()
        assert job.status == "finished"
        assert submission.actions == () and "5000 digits" in submission.action_errors[0]
        assert (await host.submit(chat, "again")).text == "fine"


async def test_a_reply_with_150_tags_proposes_the_first_100_and_reports_the_rest() -> None:
    reply = "".join(tag(json.dumps({"title": f"t{i}"})) for i in range(150))
    async with Host(mods=[MOD], model=replying(reply)) as host:
        chat = await host.sessions.create()
        out = await host.submit(chat, "go")
        assert [a.payload["title"] for a in out.actions] == [f"t{i}" for i in range(100)]
        assert out.action_errors == (
            "50 more <mod-action> tags after the first 100 of this reply were ignored: a reply holds at most 100; "
            "ask the model for fewer at a time",
        )
        assert len(await host.pending_actions(chat)) == 100


async def test_run_with_an_output_type_refuses_a_reply_holding_a_huge_number() -> None:
    async with Host(model=replying('{"title": "t", "count": ' + "7" * 5000 + "}")) as host:
        chat = await host.sessions.create()
        with pytest.raises(ReplyValidationError, match=r"is not JSON \(the number '7777.* is an integer of 5000 digits") as info:
            await chat.run("go", output_type=NewTask)
        assert info.value.raw.startswith('{"title"')


def test_a_cassette_holding_a_huge_number_is_a_documented_error(tmp_path: Path) -> None:
    path = tmp_path / "huge.jsonl"
    path.write_text(json.dumps({"call": 1, "request": {"text": "go"}, "response": {"text": "x"}}).replace('"go"', "1" * 5000) + "\n")
    with pytest.raises(SerializationError, match=r"line 1 of the cassette .* is not a recorded model call \(the number '1111.*\(5000 characters\) is an integer of 5000 digits"):
        ReplayModel(path)


# -- max_reply_bytes -----------------------------------------------------------------------


@attrs.define
class Streaming:
    """A streaming model that sends ``chunks`` and counts how many were read."""

    chunks: list[str]
    name: str = "streaming"
    read: int = 0

    async def respond(self, request: ModelRequest) -> str | ToolCall:
        return "".join(self.chunks)

    async def stream(self, request: ModelRequest) -> AsyncIterator[str | ToolCall]:
        for chunk in self.chunks:
            self.read += 1
            yield chunk


MARK = "hostile-reply-marker"


async def test_a_reply_over_max_reply_bytes_fails_the_turn_and_nothing_of_it_is_stored() -> None:
    store = MemoryStore()
    async with Host(model=replying(MARK * 100), store=store, max_reply_bytes=1000) as host:
        chat = await host.sessions.create()
        out = await host.submit(chat, "go")
        assert out.error_kind == "model_failed"
        assert out.error == (
            "turn 0 failed: the model's reply is 2000 bytes, over the limit of 1000 bytes "
            "(Host(max_reply_bytes=1000)); nothing of it was kept; raise Host(max_reply_bytes=...) "
            "if replies this long are expected"
        )
        (turn,) = await chat.turns()
        assert turn.reply is None and turn.status == "failed"
        assert MARK not in await host.transcript(chat)
        assert (await host.submit(chat, "small")).text == "fine"


async def test_a_streamed_reply_is_read_no_further_than_the_limit() -> None:
    model = Streaming(chunks=["x" * 400] * 1000)
    async with Host(model=model, max_reply_bytes=1000) as host:
        chat = await host.sessions.create()
        out = await host.submit(chat, "go")
        assert out.error is not None
        assert out.error == (
            "turn 0 failed: the model's streamed reply passed the limit of 1000 bytes (Host(max_reply_bytes=1000)) "
            "after 1200 bytes; the host stopped reading it and kept nothing of it; raise Host(max_reply_bytes=...) "
            "if replies this long are expected"
        )
        assert model.read == 3
        (turn,) = await chat.turns()
        assert turn.reply is None


async def test_a_reply_of_exactly_max_reply_bytes_is_kept_and_bytes_are_utf8_bytes() -> None:
    async with Host(model=replying("é" * 500), max_reply_bytes=1000) as host:  # 2 bytes each
        chat = await host.sessions.create()
        assert (await host.submit(chat, "go")).text == "é" * 500
    async with Host(model=replying("é" * 501), max_reply_bytes=1000) as host:
        chat = await host.sessions.create()
        out = await host.submit(chat, "go")
        assert out.error is not None and "the model's reply is 1002 bytes, over the limit of 1000 bytes" in out.error


@pytest.mark.parametrize("value", [0, -1, 1.5, "1000", None, True, float("nan")])
def test_max_reply_bytes_must_be_a_positive_int(value: object) -> None:
    with pytest.raises(InvalidArgumentError, match=rf"^max_reply_bytes must be an int >= 1 \(bytes of UTF-8\), got {re.escape(repr(value))}; pass e.g. max_reply_bytes=1_000_000") as info:
        Host(max_reply_bytes=value)  # type: ignore[arg-type]
    assert info.value.argument == "max_reply_bytes"


class FailingStore:
    """A MemoryStore whose turn writes fail with an error the host does not expect."""

    def __init__(self) -> None:
        self._inner = MemoryStore()

    def __getattr__(self, name: str) -> Any:
        return getattr(self._inner, name)

    async def begin_turn(self, record: object) -> None:
        raise RuntimeError("disk on fire")


async def test_a_job_that_fails_inside_the_host_is_failed_and_the_host_lives_on() -> None:
    async with Host(store=FailingStore()) as host:
        chat = await host.sessions.create()
        job = await host.start(chat, "go")
        submission = await job.wait()
        assert job.status == "failed"
        assert submission.error == "the job failed inside the host (RuntimeError('disk on fire')); please report it"
        assert (await host.sessions.create()).id != chat.id  # the host still answers

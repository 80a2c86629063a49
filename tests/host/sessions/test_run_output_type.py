"""`run(prompt, output_type=T)`: the reply is JSON structured into T, never coerced."""

from __future__ import annotations

import attrs
import pytest

from host_sim import Host, ModelRequest, ScriptedModel
from modular_sdk import InvalidArgumentError, ReplyValidationError, TurnFailedError


@attrs.frozen
class Verdict:
    """A reviewer's answer."""

    approved: bool
    findings: list[str]
    score: int


def replying(text: str) -> ScriptedModel:
    return ScriptedModel(lambda request: text)


@pytest.mark.anyio
async def test_a_valid_json_reply_is_structured_into_the_output_type() -> None:
    model = replying('{"approved": true, "findings": ["typo in README"], "score": 7}')
    async with Host(model=model) as host:
        chat = await host.sessions.create()

        verdict = await chat.run("Review the change", output_type=Verdict)

        assert verdict == Verdict(approved=True, findings=["typo in README"], score=7)


@pytest.mark.anyio
async def test_the_output_schema_rides_beside_the_prompt_text() -> None:
    seen: list[ModelRequest] = []

    def respond(request: ModelRequest) -> str:
        seen.append(request)
        return '{"approved": false, "findings": [], "score": 0}'

    async with Host(model=ScriptedModel(respond)) as host:
        chat = await host.sessions.create()
        await chat.run("Review the change", output_type=Verdict)
        await chat.run("Just talk")

    assert seen[0].text == "Review the change"
    schema = seen[0].output_schema
    assert isinstance(schema, dict)
    properties = schema["properties"]
    assert isinstance(properties, dict)
    assert set(properties) == {"approved", "findings", "score"}
    assert seen[1].output_schema is None


@pytest.mark.anyio
async def test_a_reply_that_is_not_json_raises_reply_validation_with_the_raw_text() -> None:
    async with Host(model=replying("Looks good to me!")) as host:
        chat = await host.sessions.create()

        with pytest.raises(ReplyValidationError, match=r"output_type=Verdict\) is not JSON") as info:
            await chat.run("Review the change", output_type=Verdict)

        assert info.value.raw == "Looks good to me!"
        assert info.value.output_type == "Verdict"
        assert isinstance(info.value, ValueError)


@pytest.mark.anyio
async def test_a_reply_of_the_wrong_shape_raises_reply_validation() -> None:
    raw = '{"approved": true, "findings": ["x"]}'
    async with Host(model=replying(raw)) as host:
        chat = await host.sessions.create()

        with pytest.raises(ReplyValidationError, match=r"does not match output_type=Verdict") as info:
            await chat.run("Review the change", output_type=Verdict)

        assert info.value.raw == raw
        assert "score" in str(info.value)


@pytest.mark.anyio
async def test_a_string_is_never_coerced_into_an_int() -> None:
    raw = '{"approved": true, "findings": [], "score": "1"}'
    async with Host(model=replying(raw)) as host:
        chat = await host.sessions.create()

        with pytest.raises(ReplyValidationError, match="does not match output_type=Verdict") as info:
            await chat.run("Review the change", output_type=Verdict)

        assert info.value.raw == raw


@pytest.mark.anyio
async def test_an_int_is_never_coerced_into_a_bool() -> None:
    raw = '{"approved": 1, "findings": [], "score": 1}'
    async with Host(model=replying(raw)) as host:
        chat = await host.sessions.create()

        with pytest.raises(ReplyValidationError) as info:
            await chat.run("Review the change", output_type=Verdict)

        assert info.value.raw == raw


@pytest.mark.anyio
async def test_a_bare_int_output_type_refuses_a_quoted_number() -> None:
    async with Host(model=replying('"1"')) as host:
        chat = await host.sessions.create()

        with pytest.raises(ReplyValidationError, match="output_type=int") as info:
            await chat.run("How many?", output_type=int)

        assert info.value.raw == '"1"'


@pytest.mark.anyio
async def test_a_bare_int_output_type_accepts_a_json_number() -> None:
    async with Host(model=replying("3")) as host:
        chat = await host.sessions.create()

        assert await chat.run("How many?", output_type=int) == 3


@pytest.mark.anyio
async def test_the_turn_of_an_invalid_reply_stays_completed_in_the_history() -> None:
    async with Host(model=replying("not json")) as host:
        chat = await host.sessions.create()
        with pytest.raises(ReplyValidationError):
            await chat.run("Review the change", output_type=Verdict)

        (turn,) = await chat.turns()

        assert turn.status == "completed"
        assert turn.reply == "not json"


@pytest.mark.anyio
async def test_a_failed_turn_raises_turn_failed_not_reply_validation() -> None:
    def respond(request: ModelRequest) -> str:
        raise ValueError("no capacity")

    async with Host(model=ScriptedModel(respond)) as host:
        chat = await host.sessions.create()

        with pytest.raises(TurnFailedError, match="no capacity"):
            await chat.run("Review the change", output_type=Verdict)


@pytest.mark.anyio
async def test_a_dataclass_output_type_is_refused_like_a_dataclass_tool_input() -> None:
    import dataclasses

    @dataclasses.dataclass
    class Plan:
        steps: list[str]

    async with Host() as host:
        chat = await host.sessions.create()
        with pytest.raises(InvalidArgumentError, match=r"output_type 'Plan' is a dataclass; .*@attrs.frozen") as info:
            await chat.run("plan it", output_type=Plan)
        assert info.value.argument == "output_type"
        assert await chat.turns() == []  # refused before anything was sent

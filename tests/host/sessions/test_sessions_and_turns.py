"""Sessions and turns as a host integrator drives them: send, run, notify, turns, lookups."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from host_sim import EchoModel, Host, ModelRequest, ScriptedModel, SessionHandle, TurnHandle
from modular_sdk import (
    AiNotificationMessage,
    AiPromptMessage,
    AiRunResult,
    AiSessionDisplayMetadata,
    HostClosedError,
    InvalidArgumentError,
    RootLineage,
    TurnFailedError,
    UnknownSessionError,
    UserAuthor,
)


def fail_on_boom(request: ModelRequest) -> str:
    if request.text == "boom":
        raise RuntimeError("the model broke")
    return f"ok: {request.text}"


@pytest.mark.anyio
async def test_a_created_session_is_an_empty_root_with_the_host_model_and_cwd() -> None:
    async with Host(cwd="/work/project") as host:
        chat = await host.sessions.create()

        assert chat.lineage == RootLineage()
        assert chat.lineage.kind == "root"
        assert chat.metadata is None
        assert chat.model == "echo"
        assert chat.cwd == "/work/project"
        assert await chat.turns() == []
        assert await chat.parent() is None
        assert await chat.children() == []


@pytest.mark.anyio
async def test_create_takes_metadata_model_and_cwd() -> None:
    async with Host() as host:
        chat = await host.sessions.create(
            metadata=AiSessionDisplayMetadata(label="Scratch"), model="big-model", cwd="/tmp/elsewhere"
        )

        assert chat.metadata == AiSessionDisplayMetadata(label="Scratch")
        assert chat.model == "big-model"
        assert chat.cwd == "/tmp/elsewhere"


@pytest.mark.anyio
async def test_send_resolves_with_the_completed_turn() -> None:
    async with Host() as host:
        chat = await host.sessions.create()

        turn = await chat.send(AiPromptMessage(text="Refactor the parser"))

        assert isinstance(turn, TurnHandle)
        assert turn.status == "completed"
        assert turn.ordinal == 0
        assert turn.session_id == chat.id
        assert turn.message == AiPromptMessage(text="Refactor the parser")
        assert turn.message.type == "prompt"
        assert turn.author == UserAuthor()
        assert turn.author.kind == "user"
        assert turn.reply is not None and "Refactor the parser" in turn.reply
        assert turn.runner_id
        assert turn.message_id


@pytest.mark.anyio
async def test_every_turn_has_its_own_id_and_message_id() -> None:
    async with Host() as host:
        chat = await host.sessions.create()
        first = await chat.send(AiPromptMessage(text="one"))
        second = await chat.send(AiPromptMessage(text="one"))

        assert first.id != second.id
        assert first.message_id != second.message_id
        assert (first.ordinal, second.ordinal) == (0, 1)


@pytest.mark.anyio
async def test_send_raises_turn_failed_when_the_model_fails() -> None:
    async with Host(model=ScriptedModel(fail_on_boom)) as host:
        chat = await host.sessions.create()

        with pytest.raises(TurnFailedError, match=r"turn 0 of session .* failed: .*RuntimeError: the model broke") as info:
            await chat.send(AiPromptMessage(text="boom"))

        (failed,) = await chat.turns()
        assert info.value.turn_id == failed.id
        assert "the model broke" in info.value.reason
        assert failed.status == "failed"
        assert failed.reply is None


@pytest.mark.anyio
async def test_a_failed_turn_keeps_its_ordinal_and_the_session_goes_on() -> None:
    async with Host(model=ScriptedModel(fail_on_boom)) as host:
        chat = await host.sessions.create()
        await chat.send(AiPromptMessage(text="first"))
        with pytest.raises(TurnFailedError):
            await chat.send(AiPromptMessage(text="boom"))

        after = await chat.send(AiPromptMessage(text="third"))

        assert after.ordinal == 2
        assert [(t.ordinal, t.status) for t in await chat.turns()] == [(0, "completed"), (1, "failed"), (2, "completed")]


@pytest.mark.anyio
async def test_the_model_sees_only_completed_turns_as_history() -> None:
    seen: list[ModelRequest] = []

    def respond(request: ModelRequest) -> str:
        seen.append(request)
        return fail_on_boom(request)

    async with Host(model=ScriptedModel(respond)) as host:
        chat = await host.sessions.create()
        await chat.send(AiPromptMessage(text="first"))
        with pytest.raises(TurnFailedError):
            await chat.send(AiPromptMessage(text="boom"))
        await chat.send(AiPromptMessage(text="third"))

        assert [h.text for h in seen[-1].history] == ["first"]
        assert seen[-1].history[0].reply == "ok: first"


@pytest.mark.anyio
async def test_run_returns_the_reply_text_and_its_turn() -> None:
    async with Host() as host:
        chat = await host.sessions.create()

        result = await chat.run("Explain the lexer")

        assert isinstance(result, AiRunResult)
        assert "Explain the lexer" in result.text
        assert result.turn.reply == result.text
        assert result.turn.message == AiPromptMessage(text="Explain the lexer")
        assert [t.id for t in await chat.turns()] == [result.turn.id]


@pytest.mark.anyio
async def test_run_raises_turn_failed_when_the_model_fails() -> None:
    async with Host(model=ScriptedModel(fail_on_boom)) as host:
        chat = await host.sessions.create()

        with pytest.raises(TurnFailedError, match="the model broke") as info:
            await chat.run("boom")

        assert info.value.reason.endswith("RuntimeError: the model broke")


@pytest.mark.anyio
async def test_notify_drives_a_turn_tagged_as_a_notification() -> None:
    async with Host() as host:
        chat = await host.sessions.create()

        turn = await chat.notify(title="Build finished", body="All 12 checks passed")

        assert turn.message == AiNotificationMessage(title="Build finished", body="All 12 checks passed")
        assert turn.message.type == "notification"
        assert turn.status == "completed"
        assert turn.reply is not None and "Build finished" in turn.reply


@pytest.mark.anyio
async def test_turns_lists_the_history_in_ordinal_order() -> None:
    async with Host() as host:
        chat = await host.sessions.create()
        sent = [await chat.send(AiPromptMessage(text=f"prompt {i}")) for i in range(4)]

        turns = await chat.turns()

        assert [t.id for t in turns] == [t.id for t in sent]
        assert [t.ordinal for t in turns] == [0, 1, 2, 3]
        assert turns == sent


@pytest.mark.anyio
async def test_sessions_get_returns_the_same_session_by_id_or_plain_str() -> None:
    async with Host() as host:
        chat = await host.sessions.create()
        await chat.send(AiPromptMessage(text="hello"))

        again = await host.sessions.get(chat.id)
        by_str = await host.sessions.get(str(chat.id))

        assert again == chat == by_str
        assert [t.id for t in await again.turns()] == [t.id for t in await chat.turns()]


@pytest.mark.anyio
async def test_sessions_get_with_an_unknown_id_raises_unknown_session() -> None:
    async with Host() as host:
        with pytest.raises(UnknownSessionError, match=r"no session 'ses_nope' in this host") as info:
            await host.sessions.get("ses_nope")

        assert info.value.session_id == "ses_nope"
        assert isinstance(info.value, LookupError)


@pytest.mark.anyio
async def test_submit_of_a_prompt_returns_the_reply_and_the_turn() -> None:
    async with Host(model=EchoModel()) as host:
        chat = await host.sessions.create()

        out = await host.submit(chat, "Refactor the parser")

        assert out.kind == "prompt"
        assert out.error is None
        assert out.turn is not None
        assert out.text == out.turn.reply
        assert "Refactor the parser" in out.text


@pytest.mark.anyio
async def test_submit_of_a_failing_prompt_reports_the_error_without_raising() -> None:
    async with Host(model=ScriptedModel(fail_on_boom)) as host:
        chat = await host.sessions.create()

        out = await host.submit(chat, "boom")

        assert out.kind == "prompt"
        assert out.error is not None
        assert "turn 0 failed" in out.error and "the model broke" in out.error
        assert out.text == out.error
        assert out.turn is not None and out.turn.status == "failed"


@pytest.mark.anyio
async def test_handles_have_no_public_constructor() -> None:
    async with Host():
        with pytest.raises(TypeError, match="has no public constructor"):
            SessionHandle()  # type: ignore[call-arg]
        with pytest.raises(TypeError, match="has no public constructor"):
            TurnHandle()  # type: ignore[call-arg]


@pytest.mark.anyio
async def test_a_host_refuses_use_outside_async_with() -> None:
    host = Host()
    with pytest.raises(HostClosedError, match="this Host is not entered yet; use it inside 'async with Host") as info:
        host.sessions
    assert info.value.state == "new"
    async with host:
        pass
    with pytest.raises(HostClosedError, match="this Host is closed") as info:
        await host.sessions.create()
    assert info.value.state == "closed"


@pytest.mark.anyio
async def test_a_naive_clock_is_refused_with_a_clear_message() -> None:
    async with Host(clock=lambda: datetime(2025, 1, 1)) as host:
        with pytest.raises(InvalidArgumentError, match="the host clock returned a naive datetime"):
            await host.sessions.create()


@pytest.mark.anyio
async def test_created_at_comes_from_the_injected_clock() -> None:
    now = datetime(2024, 12, 31, 23, 59, tzinfo=UTC)
    async with Host(clock=lambda: now) as host:
        chat = await host.sessions.create()

        node = await host.lineage.node(chat.id)

        assert node.created_at == now

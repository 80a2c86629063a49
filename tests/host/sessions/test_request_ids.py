"""Retrying is safe (API.md section 23): ``send``, ``submit`` and ``start`` take the caller's
``request_id=``; a retry with the same key returns what the first attempt stored instead of
storing the message twice, on every store, also when the first attempt raised a retryable
`StoreError` although its write was in fact committed."""

from __future__ import annotations

from collections.abc import Awaitable, Callable

import pytest

from host_sim import Host, ModelRequest, ScriptedModel, StoreError
from host_sim.stores import TurnRecord
from modular_sdk import AiPromptMessage, InvalidArgumentError, TurnFailedError

from ..conftest import StoreFactory

pytestmark = pytest.mark.anyio


class CountingModel:
    def __init__(self) -> None:
        self.prompts: list[str] = []

    async def respond(self, request: ModelRequest) -> str:
        self.prompts.append(request.text)
        return f"reply to {request.text}"

    def model(self) -> ScriptedModel:
        return ScriptedModel(self.respond)


async def test_a_send_retried_with_its_request_id_returns_the_first_turn_and_stores_the_message_once(
    any_store: StoreFactory,
) -> None:
    model = CountingModel()
    async with Host(model=model.model(), store=any_store()) as host:
        chat = await host.sessions.create()
        first = await chat.send(AiPromptMessage(text="book the flight"), request_id="req-1")
        again = await chat.send(AiPromptMessage(text="book the flight"), request_id="req-1")
        other = await chat.send(AiPromptMessage(text="book the flight"), request_id="req-2")
        assert again.id == first.id and other.id != first.id
        assert again.reply == first.reply == "reply to book the flight"
        assert model.prompts == ["book the flight", "book the flight"]  # once per key
        assert [t.id for t in await chat.turns()] == [first.id, other.id]
    async with Host(model=model.model(), store=any_store()) as reopened:  # the key is kept with the turn
        chat = await reopened.sessions.get(chat.id)
        assert (await chat.send(AiPromptMessage(text="book the flight"), request_id="req-1")).id == first.id
        assert len(model.prompts) == 2


async def test_submit_and_start_retried_with_their_request_id_return_the_first_turn_and_job(
    any_store: StoreFactory,
) -> None:
    model = CountingModel()
    async with Host(model=model.model(), store=any_store()) as host:
        chat = await host.sessions.create()
        first = await host.submit(chat, "summarise", request_id="s-1")
        again = await host.submit(chat.id, "summarise", request_id="s-1")
        assert first.turn is not None and again.turn is not None and again.turn.id == first.turn.id
        assert again.text == first.text == "reply to summarise"
        job = await host.start(chat, "a job", request_id="j-1")
        await job.wait()
        retried = await host.start(chat, "a job", request_id="j-1")
        assert retried.id == job.id and retried.status == "finished"
        assert model.prompts == ["summarise", "a job"]
        assert len(await chat.turns()) == 2


async def test_a_request_id_that_is_no_usable_key_is_refused_naming_it(any_store: StoreFactory) -> None:
    async with Host(store=any_store()) as host:
        chat = await host.sessions.create()
        for bad in ("", "x" * 257, "a\x00b"):
            with pytest.raises(InvalidArgumentError, match="request_id must be None or a non-empty str") as caught:
                await chat.send(AiPromptMessage(text="hi"), request_id=bad)
            assert caught.value.argument == "request_id" and caught.value.value == bad
        with pytest.raises(InvalidArgumentError, match="request_id"):
            await host.start(chat, "hi", request_id=42)  # type: ignore[arg-type]
        assert await chat.turns() == []


def _committed_then_raise(
    original: Callable[..., Awaitable[None]], failures: list[str]
) -> Callable[..., Awaitable[None]]:
    async def write(self: object, record: TurnRecord) -> None:
        await original(self, record)
        if not failures:  # the first attempt only: written, and yet the caller hears it was not
            failures.append(record.id)
            raise StoreError("the connection to the server failed (simulated); the call is retryable", retryable=True)

    return write


async def test_a_finish_that_was_committed_though_it_raised_is_returned_once_with_its_reply(
    any_store: StoreFactory, monkeypatch: pytest.MonkeyPatch
) -> None:
    model = CountingModel()
    store = any_store()
    failures: list[str] = []
    monkeypatch.setattr(type(store), "finish_turn", _committed_then_raise(type(store).finish_turn, failures))
    async with Host(model=model.model(), store=store) as host:
        chat = await host.sessions.create()
        first = await chat.send(AiPromptMessage(text="pay the invoice"), request_id="pay-7")
        assert failures == [first.id]  # the store raised; the key found what it had stored
        assert first.reply == "reply to pay the invoice"
        retried = await chat.send(AiPromptMessage(text="pay the invoice"), request_id="pay-7")
        assert retried.id == first.id and model.prompts == ["pay the invoice"]
        stored = await store.get_turns(chat.id)
        assert [(t.id, t.status, t.reply) for t in stored] == [(first.id, "completed", "reply to pay the invoice")]


async def test_a_begin_that_was_committed_though_it_raised_is_stored_once_and_finished_once(
    any_store: StoreFactory, monkeypatch: pytest.MonkeyPatch
) -> None:
    model = CountingModel()
    store = any_store()
    failures: list[str] = []
    monkeypatch.setattr(type(store), "begin_turn", _committed_then_raise(type(store).begin_turn, failures))
    async with Host(model=model.model(), store=store) as host, host.subscribe() as events:
        chat = await host.sessions.create()
        with pytest.raises(TurnFailedError) as first:  # stored, then failed as in doubt: never run twice
            await chat.send(AiPromptMessage(text="wire the money"), request_id="wire-1")
        with pytest.raises(TurnFailedError) as retried:
            await chat.send(AiPromptMessage(text="wire the money"), request_id="wire-1")
        assert retried.value.turn_id == first.value.turn_id == failures[0]
        assert model.prompts == []
        stored = await store.get_turns(chat.id)
        assert [(t.id, t.status) for t in stored] == [(failures[0], "failed")]
        assert "the store was away when it began" in (stored[0].error or "")
        later = await chat.send(AiPromptMessage(text="wire the money"), request_id="wire-2")
        assert later.reply == "reply to wire the money"
        finished = []
        async for event in events:
            if event.kind == "turn_finished":
                finished.append(event.turn_id)
            if event.kind == "turn_finished" and event.turn_id == later.id:
                break
        assert finished == [failures[0], later.id]  # one turn_finished per turn

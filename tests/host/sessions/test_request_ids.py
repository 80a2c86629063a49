"""Retrying is safe (API.md section 23): ``send``, ``submit`` and ``start`` take the caller's
``request_id=``; a retry with the same key returns what the first attempt stored instead of
storing the message twice, on every store, also when the first attempt raised a retryable
`StoreError` although its write was in fact committed."""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Awaitable, Callable
from pathlib import Path

import anyio
import anyio.to_thread
import pytest

from host_sim import Host, ModelRequest, PostgresStore, ScriptedModel, StoreError
from host_sim.stores import IntegratorStore, JobRecord, TurnRecord
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


def _start_committed_then_raise(original: Callable[..., Awaitable[None]], failures: list[str]) -> Callable[..., Awaitable[None]]:
    async def save_job(self: object, record: JobRecord) -> None:
        await original(self, record)
        if record.status == "running" and not failures:  # the first start: committed, reported lost
            failures.append(record.id)
            raise StoreError("the connection to the server failed (simulated); the call is retryable", retryable=True)

    return save_job


async def test_a_start_committed_though_it_raised_is_run_once_by_its_host_when_retried(
    any_store: StoreFactory, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The client heard the start fail (the store was away as it committed) and retries with its
    key: the retry returns the stored job, and that job runs, once; it used to be returned
    running and run by no host, so wait() never returned."""
    model = CountingModel()
    store = any_store()
    assert isinstance(store, IntegratorStore)
    failures: list[str] = []
    monkeypatch.setattr(type(store), "save_job", _start_committed_then_raise(type(store).save_job, failures))
    async with Host(model=model.model(), store=store) as host:
        chat = await host.sessions.create()
        with pytest.raises(StoreError, match="retryable"):
            await host.start(chat, "send the invoices", request_id="invoices-1")
        job = await host.start(chat, "send the invoices", request_id="invoices-1")
        assert job.id == failures[0]
        with anyio.fail_after(20):
            assert (await job.wait()).text == "reply to send the invoices"
        again = await host.start(chat, "send the invoices", request_id="invoices-1")
        assert again.id == job.id and again.status == "finished"
        assert model.prompts == ["send the invoices"]  # run once
        stored = await store.get_job(job.id)
        assert stored is not None and stored.status == "finished"


async def test_a_start_committed_though_it_raised_is_run_by_its_host_even_if_never_retried(
    any_store: StoreFactory, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Nobody retries (the client gave up, or its retry went to another host): the job the store
    holds is still run by the host that wrote it, once, so whoever waits for it sees it end."""
    model = CountingModel()
    store = any_store()
    assert isinstance(store, IntegratorStore)
    failures: list[str] = []
    monkeypatch.setattr(type(store), "save_job", _start_committed_then_raise(type(store).save_job, failures))
    async with Host(model=model.model(), store=store) as host:
        chat = await host.sessions.create()
        with pytest.raises(StoreError, match="retryable"):
            await host.start(chat, "close the books")
        (listed,) = (await host.jobs(session=chat.id)).jobs
        assert listed.id == failures[0]
        with anyio.fail_after(20):
            assert (await listed.wait()).text == "reply to close the books"
        assert model.prompts == ["close the books"]
        later = await host.start(chat, "close the books again")
        with anyio.fail_after(20):
            await later.wait()
        assert model.prompts == ["close the books", "close the books again"]  # the first ran once


# -- racing retries: the key is checked and written in one step ------------------------------------

RACERS = 8


async def test_concurrent_starts_with_one_request_id_run_one_job_and_return_it_to_every_caller(
    any_store: StoreFactory,
) -> None:
    """A client that times out and retries while its first request is still in flight sends
    the same key twice at once: the store decides, in one atomic write, which start is the
    job; the others return that job, and its text runs once."""
    model = CountingModel()
    async with Host(model=model.model(), store=any_store()) as host, host.subscribe() as events:
        chat = await host.sessions.create()
        for round_ in range(3):
            key, started = f"nightly-{round_}", list[str]()

            async def start(key: str = key, started: list[str] = started) -> None:
                started.append((await host.start(chat, f"report {key}", request_id=key)).id)

            async with anyio.create_task_group() as tg:
                for _ in range(RACERS):
                    tg.start_soon(start)
            assert len(started) == RACERS and len(set(started)) == 1, started
            assert (await (await host.job(started[0])).wait()).text == f"reply to report {key}"
        assert model.prompts == [f"report nightly-{r}" for r in range(3)]  # each job's text ran once
        assert [t.message.text for t in await chat.turns()] == model.prompts  # type: ignore[union-attr]
        assert len((await host.jobs(session=chat.id)).jobs) == 3
        kinds: list[str] = []
        async for event in events:
            if event.kind in ("job_started", "job_finished"):
                kinds.append(event.kind)
            if kinds.count("job_finished") == 3:
                break
        assert kinds.count("job_started") == 3  # one job_started per job, none for the losers


async def test_concurrent_sends_and_submits_with_one_request_id_store_the_message_once(
    any_store: StoreFactory,
) -> None:
    model = CountingModel()
    async with Host(model=model.model(), store=any_store()) as host:
        chat = await host.sessions.create()
        sent: list[str] = []
        submitted: list[str] = []

        async def send() -> None:
            sent.append((await chat.send(AiPromptMessage(text="pay rent"), request_id="rent")).id)

        async def submit() -> None:
            turn = (await host.submit(chat, "pay gas", request_id="gas")).turn
            assert turn is not None
            submitted.append(turn.id)

        async with anyio.create_task_group() as tg:
            for _ in range(RACERS):
                tg.start_soon(send)
                tg.start_soon(submit)
        assert len(set(sent)) == 1 and len(set(submitted)) == 1 and len(sent) == len(submitted) == RACERS
        assert sorted(model.prompts) == ["pay gas", "pay rent"]
        assert len(await chat.turns()) == 2


HOST_SCRIPT = Path(__file__).parents[1] / "postgres_host.py"


async def test_two_host_processes_starting_and_sending_with_one_request_id_store_it_once(
    postgres_dsn: str, anyio_backend: str
) -> None:
    """Two host processes on one PostgreSQL database each get the same request (a load balancer
    retried it on the other host) four times at once: one job, one turn, the same id everywhere."""
    async with Host(store=PostgresStore(postgres_dsn)) as host:
        chat = await host.sessions.create()
        hosts = [
            subprocess.Popen(
                [sys.executable, str(HOST_SCRIPT), postgres_dsn, "-", "serve", "--backend", anyio_backend],
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                text=True,
            )
            for _ in range(2)
        ]
        try:

            async def answer(process: subprocess.Popen[str]) -> dict[str, list[str]]:
                assert process.stdout is not None
                line = await anyio.to_thread.run_sync(process.stdout.readline, abandon_on_cancel=True)
                assert line, "a host process ended without answering"
                answered: dict[str, list[str]] = json.loads(line)
                return answered

            with anyio.fail_after(120):
                for process in hosts:
                    assert process.stdout is not None
                    assert (await anyio.to_thread.run_sync(process.stdout.readline, abandon_on_cancel=True)).strip() == "open"
                texts = []
                for round_ in range(4):
                    what = "start" if round_ % 2 == 0 else "send"
                    text = f"{what} invoice {round_}"
                    texts.append(text)
                    command = {"op": "keyed", "what": what, "session": chat.id, "text": text, "key": f"k{round_}", "count": 4}
                    for process in hosts:  # both at once
                        assert process.stdin is not None
                        process.stdin.write(json.dumps(command) + "\n")
                        process.stdin.flush()
                    ids = [i for process in hosts for i in (await answer(process))["ids"]]
                    assert len(ids) == 8 and len(set(ids)) == 1, ids
            turns = await (await host.sessions.get(chat.id)).turns()
            assert [t.message.text for t in turns] == texts  # type: ignore[union-attr]
            assert [j.text for j in reversed((await host.jobs(session=chat.id)).jobs)] == texts[::2]
        finally:
            for process in hosts:
                if process.stdin is not None:
                    process.stdin.close()
            for process in hosts:
                with anyio.move_on_after(30):  # they end when their stdin closes
                    while process.poll() is None:
                        await anyio.sleep(0.05)
                if process.poll() is None:
                    process.kill()
                    process.wait()
                for stream in (process.stdout, process.stderr):
                    if stream is not None:
                        stream.close()

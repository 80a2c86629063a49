"""host_sim.agui_app in process: what it answers besides a run, and what it imports (API.md section 21)."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from collections.abc import AsyncIterator
from typing import Any

import anyio
import httpx
import pytest

from host_sim import Host, ModelRequest, ToolCall, agui_app
from host_sim.testing import WATCH_AFTER, WATCH_LONG
from modular_sdk import InvalidArgumentError

pytestmark = pytest.mark.anyio


def test_import_host_sim_imports_nothing_of_ag_ui() -> None:
    code = "import sys, host_sim\nprint(sorted(m for m in sys.modules if m.split('.')[0] in ('ag_ui', 'pydantic')))"
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert "ag_ui" not in done.stdout


def test_without_the_extra_making_the_app_fails_naming_it() -> None:
    code = textwrap.dedent(
        """
        import sys
        sys.modules['ag_ui'] = None  # as if the extra were not installed
        import anyio
        from host_sim import Host, agui_app

        async def main():
            async with Host() as host:
                try:
                    agui_app(host)
                except ImportError as missing:
                    print(type(missing).__name__, missing)

        anyio.run(main)
        """
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert done.stdout.startswith("AguiUnavailableError") and "pip install 'modular-chat-sdk[agui]'" in done.stdout


async def test_a_body_that_is_not_a_run_answers_422_and_other_methods_and_paths_say_what_to_do() -> None:
    async with Host() as host:
        app = agui_app(host, path="/agui")
        async with httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url="http://chat") as client:
            bad = await client.post("/agui", json={"threadId": "t"})
            assert bad.status_code == 422 and "RunAgentInput" in bad.json()["error"] and "runId" in bad.json()["error"]
            not_json = await client.post("/agui", content=b"{")
            assert not_json.status_code == 422
            wrong_method = await client.get("/agui")
            assert wrong_method.status_code == 405 and wrong_method.headers["allow"] == "POST"
            elsewhere = await client.post("/other", json={})
            assert elsewhere.status_code == 404 and "'/agui'" in elsewhere.json()["error"]
        with pytest.raises(InvalidArgumentError, match="path must start with '/'") as refused:
            agui_app(host, path="agui")
        assert refused.value.argument == "path"
        with pytest.raises(InvalidArgumentError, match="open Host or a ScopedHost"):
            agui_app("not a host")  # type: ignore[arg-type]


async def test_a_client_that_holds_only_its_newest_message_continues_the_thread() -> None:
    async with Host() as host:
        app = agui_app(host)
        async with httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url="http://chat") as client:
            sessions = []
            for n, text in enumerate(["one", "two"]):
                run = {"threadId": "t", "runId": f"r{n}", "messages": [{"id": f"m{n}", "role": "user", "content": text}]}
                answer = await client.post("/", json=run)
                events = [json.loads(line[6:]) for line in answer.text.splitlines() if line.startswith("data: ")]
                sessions.append(events[-1]["result"]["sessionId"])
        assert sessions[0] == sessions[1]
        (session,) = (await host.sessions.list(tags={"agui_thread": "t"})).sessions
        assert [t.message.text for t in await session.turns() if t.message.type == "prompt"] == ["one", "two"]


class Echoing:
    """A streaming model: the prompt back, word by word, the scheduler let go between words."""

    name = "echoing"

    async def respond(self, request: ModelRequest) -> str | ToolCall:
        return f"you said {request.text}"

    async def stream(self, request: ModelRequest) -> AsyncIterator[str | ToolCall]:
        for word in ["you ", "said ", request.text]:
            await anyio.sleep(0)
            yield word


def events_of(body: str) -> list[dict[str, Any]]:
    return [json.loads(line[6:]) for line in body.splitlines() if line.startswith("data: ")]


async def test_fifty_runs_at_once_each_stream_their_own_reply_and_a_later_run_still_streams() -> None:
    async with Host(model=Echoing()) as host:
        app = agui_app(host)
        answers: dict[int, list[dict[str, Any]]] = {}
        async with httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url="http://chat") as client:

            async def one(n: int) -> None:
                run = {"threadId": f"t{n}", "runId": f"r{n}", "messages": [{"id": "m", "role": "user", "content": f"n{n}"}]}
                answers[n] = events_of((await client.post("/", json=run)).text)

            async with anyio.create_task_group() as group:
                for n in range(50):
                    group.start_soon(one, n)
            await one(50)  # every run before it has let go of the host's events: a new one is routed afresh
        for n, events in answers.items():
            kinds = [e["type"] for e in events]
            assert kinds[0] == "RUN_STARTED" and kinds[-1] == "RUN_FINISHED", (n, kinds)
            assert kinds[1:-1] == ["TEXT_MESSAGE_START", *["TEXT_MESSAGE_CONTENT"] * 3, "TEXT_MESSAGE_END"], (n, kinds)
            text = "".join(e["delta"] for e in events if e["type"] == "TEXT_MESSAGE_CONTENT")
            assert text == f"you said n{n}", (n, text)  # its own reply, none of another run's words


class Lingering:
    """A streaming model that says one word, another after ``pause`` seconds, then waits for ``release``."""

    name = "lingering"

    def __init__(self, pause: float) -> None:
        self.pause = pause
        self.release = anyio.Event()

    async def respond(self, request: ModelRequest) -> str | ToolCall:
        return "first second"

    async def stream(self, request: ModelRequest) -> AsyncIterator[str | ToolCall]:
        yield "first "
        await anyio.sleep(self.pause)
        yield "second"
        await self.release.wait()


async def test_a_client_that_goes_away_during_a_long_run_ends_its_stream_and_the_job_goes_on() -> None:
    model = Lingering(pause=WATCH_AFTER * 1.5)  # the second word comes after the app starts watching its client
    async with Host(model=model) as host:
        app = agui_app(host)
        chat = await host.sessions.create()
        body = json.dumps({"threadId": chat.id, "runId": "r", "messages": [{"id": "m", "role": "user", "content": "hi"}]})
        gone = anyio.Event()
        sent: list[bytes] = []
        second = anyio.Event()
        requested = False

        async def receive() -> dict[str, object]:
            nonlocal requested
            if not requested:
                requested = True
                return {"type": "http.request", "body": body.encode(), "more_body": False}
            await gone.wait()
            return {"type": "http.disconnect"}

        async def send(message: dict[str, object]) -> None:
            chunk = message.get("body", b"")
            if isinstance(chunk, bytes) and chunk:
                sent.append(chunk)
                if b'"second"' in chunk:
                    second.set()

        scope = {"type": "http", "method": "POST", "path": "/", "root_path": "", "headers": []}
        with anyio.fail_after(10):
            async with anyio.create_task_group() as group:
                group.start_soon(app, scope, receive, send)
                await second.wait()
                gone.set()  # the browser tab closes while the model still works
            # the app returned: its stream ended without the run's end, and the job still runs
            (job,) = (await host.jobs(session=chat.id)).jobs
            assert job.status == "running" and b"RUN_FINISHED" not in b"".join(sent)
            model.release.set()
            done = await job.wait()
        assert done.error is None and done.text == "first second"


class Chatty:
    """A streaming model that never pauses long: a word every 50 ms until ``release``."""

    name = "chatty"

    def __init__(self) -> None:
        self.release = anyio.Event()

    async def respond(self, request: ModelRequest) -> str | ToolCall:
        return "word"

    async def stream(self, request: ModelRequest) -> AsyncIterator[str | ToolCall]:
        while not self.release.is_set():
            yield "word "
            await anyio.sleep(0.05)


async def test_a_client_that_goes_away_during_a_run_that_never_pauses_ends_its_stream_once_it_streamed_long() -> None:
    model = Chatty()  # its words never leave WATCH_AFTER between them: only the run's length starts the watch
    async with Host(model=model) as host:
        app = agui_app(host)
        chat = await host.sessions.create()
        body = json.dumps({"threadId": chat.id, "runId": "r", "messages": [{"id": "m", "role": "user", "content": "hi"}]})
        gone = anyio.Event()
        requested = False
        sent: list[bytes] = []

        async def receive() -> dict[str, object]:
            nonlocal requested
            if not requested:
                requested = True
                return {"type": "http.request", "body": body.encode(), "more_body": False}
            await gone.wait()
            return {"type": "http.disconnect"}

        async def send(message: dict[str, object]) -> None:
            chunk = message.get("body", b"")
            if isinstance(chunk, bytes) and chunk:
                sent.append(chunk)

        scope = {"type": "http", "method": "POST", "path": "/", "root_path": "", "headers": []}
        with anyio.fail_after(WATCH_LONG + 20):
            async with anyio.create_task_group() as group:
                group.start_soon(app, scope, receive, send)
                await anyio.sleep(WATCH_LONG + 1)  # past WATCH_LONG, and a word after it: watched
                gone.set()  # the tab closes while the model still talks
            (job,) = (await host.jobs(session=chat.id)).jobs
            assert job.status == "running" and b"RUN_FINISHED" not in b"".join(sent)
            model.release.set()
            done = await job.wait()
        assert done.error is None and done.text.startswith("word word")


async def test_closing_the_host_ends_a_run_that_waits_for_its_model() -> None:
    model = Lingering(pause=0)  # two words, then it waits for a release that never comes
    answer: list[dict[str, Any]] = []
    with anyio.fail_after(10):
        async with anyio.create_task_group() as group:
            async with Host(model=model) as host:
                app = agui_app(host)
                run = {"threadId": "t", "runId": "r", "messages": [{"id": "m", "role": "user", "content": "hi"}]}


                async def post() -> None:
                    async with httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url="http://chat") as client:
                        answer.extend(events_of((await client.post("/", json=run)).text))

                async with host.subscribe() as events:  # before the run: its words cannot pass unseen
                    group.start_soon(post)
                    async for event in events:
                        if event.kind == "reply_delta" and event.text == "second":
                            break  # the run is under way; now the host closes under it
    kinds = [e["type"] for e in answer]
    assert kinds[0] == "RUN_STARTED" and kinds[-1] in ("RUN_ERROR", "RUN_FINISHED"), kinds
    assert "".join(e["delta"] for e in answer if e["type"] == "TEXT_MESSAGE_CONTENT") == "first second"

"""host_sim/examples/integration: a two-user chat backend over HTTP, in process, on the public surface only."""

from __future__ import annotations

import ast
import json
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import anyio
import httpx
import pytest
from starlette.applications import Starlette
from starlette.types import Message

from host_sim import ModelRequest, PostgresStore, ScriptedModel, SqliteStore, Store, ToolCall
from host_sim.examples.integration import create_app

ROOT = Path(__file__).resolve().parents[3]


class Typist:
    """A streaming model: its reply arrives in three chunks."""

    name = "typist"

    @staticmethod
    def words(request: ModelRequest) -> list[str]:
        return ["you ", "said: ", request.text]

    async def respond(self, request: ModelRequest) -> str | ToolCall:
        return "".join(self.words(request))

    async def stream(self, request: ModelRequest) -> AsyncIterator[str | ToolCall]:
        for word in self.words(request):
            await anyio.sleep(0)
            yield word


def app_on(path: Path) -> Starlette:
    def store() -> Store:
        return SqliteStore(path)

    return create_app(store, model=Typist())


@asynccontextmanager
async def serving(app: Starlette) -> AsyncIterator[httpx.AsyncClient]:
    """Run the app's lifespan as a server does (startup, requests, shutdown) around a client."""
    to_app, app_reads = anyio.create_memory_object_stream[Message](4)
    app_writes, from_app = anyio.create_memory_object_stream[Message](4)

    async def receive() -> Message:
        return await app_reads.receive()

    async def send(message: Message) -> None:
        await app_writes.send(message)

    async with anyio.create_task_group() as tg:
        tg.start_soon(app, {"type": "lifespan", "asgi": {"version": "3.0"}, "state": {}}, receive, send)
        await to_app.send({"type": "lifespan.startup"})
        assert (await from_app.receive())["type"] == "lifespan.startup.complete"
        try:
            async with httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url="http://chat") as client:
                yield client
        finally:
            await to_app.send({"type": "lifespan.shutdown"})
            assert (await from_app.receive())["type"] == "lifespan.shutdown.complete"
    for stream in (to_app, app_reads, app_writes, from_app):
        stream.close()


def as_(user: str) -> dict[str, str]:
    return {"X-User": user}


def sse(text: str) -> list[tuple[str, dict[str, object]]]:
    """(event name, data) of each server-sent event in a body; comments skipped."""
    found = []
    for block in text.split("\n\n"):
        fields = dict(line.split(": ", 1) for line in block.splitlines() if line and not line.startswith(":"))
        if "event" in fields:
            found.append((fields["event"], json.loads(fields["data"])))
    return found


async def new_session(client: httpx.AsyncClient, user: str, label: str | None = None) -> str:
    response = await client.post("/sessions", headers=as_(user), json={} if label is None else {"label": label})
    assert response.status_code == 201, response.text
    session_id: str = response.json()["id"]
    return session_id


async def agui_run(client: httpx.AsyncClient, user: str, thread: str, *texts: str) -> list[dict[str, Any]]:
    """POST /agui a run whose user messages are ``texts`` (the last is the input); its AG-UI events."""
    messages = [{"id": f"m{n}", "role": "user", "content": text} for n, text in enumerate(texts)]
    run = {"threadId": thread, "runId": f"run-{texts[-1]}", "messages": messages}
    answer = await client.post("/agui", headers=as_(user), json=run)
    assert answer.status_code == 200 and answer.headers["content-type"].startswith("text/event-stream"), answer.text
    events: list[dict[str, Any]] = [json.loads(line[6:]) for line in answer.text.splitlines() if line.startswith("data: ")]
    assert events[0]["type"] == "RUN_STARTED" and events[-1]["type"] in ("RUN_FINISHED", "RUN_ERROR"), events
    return events


async def say(client: httpx.AsyncClient, user: str, session_id: str, text: str) -> dict[str, object]:
    """Say it over AG-UI (POST /agui, the session as the thread), then read the run's job."""
    events = await agui_run(client, user, session_id, text)
    assert events[0]["threadId"] == session_id, events
    job_id = events[0]["metadata"]["host_sim"]["jobId"]
    done = await client.get(f"/jobs/{job_id}", headers=as_(user), params={"wait": 10})
    assert done.status_code == 200, done.text
    result: dict[str, object] = done.json()
    return result


@pytest.mark.anyio
async def test_two_users_chat_stream_run_a_task_fork_list_delete_and_find_it_all_after_a_restart(tmp_path: Path) -> None:
    path = tmp_path / "chat.sqlite"
    async with serving(app_on(path)) as client:
        first = await new_session(client, "alice", "Parser")
        second = await new_session(client, "alice")
        bobs = await new_session(client, "bob", "Bob's")

        # alice watches her sessions while both users talk: she sees only her own events, live
        watched: list[httpx.Response] = []

        async def watch() -> None:
            watched.append(await client.get("/events", headers=as_("alice"), params={"limit": 7}))

        async with anyio.create_task_group() as tg:
            tg.start_soon(watch)
            await anyio.wait_all_tasks_blocked()  # subscribed
            bob_job, alice_job = await say(client, "bob", bobs, "hi"), await say(client, "alice", first, "hello")
        assert alice_job["status"] == "finished" and bob_job["status"] == "finished"
        assert alice_job["submission"] == {
            "kind": "prompt",
            "text": "you said: hello",
            "turn_id": alice_job["submission"]["turn_id"],  # type: ignore[index]
            "error": None,
            "error_kind": None,
        }
        (response,) = watched
        assert response.headers["content-type"].startswith("text/event-stream")
        events = sse(response.text)
        assert [name for name, _ in events] == [
            "job_started", "turn_started", "reply_delta", "reply_delta", "reply_delta", "turn_finished", "job_finished",
        ]  # fmt: skip
        assert {data["session_id"] for _, data in events if "session_id" in data} == {first}
        assert events[1][1]["job_id"] == events[-1][1]["job_id"] == alice_job["id"]
        assert [data["text"] for name, data in events if name == "reply_delta"] == ["you ", "said: ", "hello"]
        assert events[-2][1]["reply"] == "you said: hello"

        # a /task runs as a job; its notification lands in alice's inbox only
        task = await say(client, "alice", first, "/task write the tests")
        submission = task["submission"]
        assert isinstance(submission, dict)
        assert task["status"] == "finished" and str(submission["text"]).startswith("Started task ses_")
        inbox = (await client.get("/inbox", headers=as_("alice"))).json()["notifications"]
        assert [n["message"]["title"] for n in inbox] == ["Task finished: write the tests"]
        assert (await client.get("/inbox", headers=as_("bob"))).json() == {"notifications": []}
        assert (await client.post(f"/inbox/{inbox[0]['id']}/read", headers=as_("bob"))).status_code == 404
        assert (await client.post(f"/inbox/{inbox[0]['id']}/read", headers=as_("alice"))).status_code == 204
        assert (await client.get("/inbox", headers=as_("alice"))).json() == {"notifications": []}

        # alice edits her later message in the chat UI: AG-UI runs it in a fork at the turn before it
        await say(client, "alice", first, "and then?")
        edited = await agui_run(client, "alice", first, "hello", "try another way")
        started, finished = edited[0], edited[-1]
        fork_id = started["threadId"]
        assert fork_id != first and finished["type"] == "RUN_FINISHED" and finished["result"]["sessionId"] == fork_id
        fork = (await client.get(f"/sessions/{fork_id}", headers=as_("alice"))).json()
        anchor = fork["lineage"]["parent_turn_ordinal"]  # the lineage in the SDK's JSON form (to_json)
        assert fork["lineage"]["kind"] == "fork" and fork["lineage"]["parent_session_id"] == first
        assert fork["tags"] == {"user": "alice"}
        log = fork["log"]
        assert [e["message"]["text"] for e in log if e["type"] == "turn" and e["author"]["kind"] == "user"] == ["hello", "try another way"]
        assert log[-1]["reply"] == "you said: try another way" and log[-1]["ordinal"] == anchor + 1
        assert (await client.get(f"/sessions/{first}", headers=as_("bob"))).status_code == 404  # bob cannot see it

        tree = (await client.get(f"/sessions/{first}/tree", headers=as_("alice"))).json()
        kids = [(c["kind"], c["label"], c["anchor_ordinal"]) for c in tree["children"]]
        assert tree["label"] == "Parser" and sorted(kids, key=str) == [("fork", "Task", 0), ("fork", None, anchor)]

        # listing by owner, a page at a time; another user's session is not there for alice
        page = (await client.get("/sessions", headers=as_("alice"), params={"limit": 2, "roots_only": "true"})).json()
        assert [s["id"] for s in page["sessions"]] == [second, first] and page["next"] is None
        everything: list[str] = []
        cursor: str | None = None
        while True:
            params: dict[str, str | int] = {"limit": 2} if cursor is None else {"limit": 2, "after": cursor}
            page = (await client.get("/sessions", headers=as_("alice"), params=params)).json()
            everything += [s["id"] for s in page["sessions"]]
            cursor = page["next"]
            if cursor is None:
                break
        assert len(everything) == len(set(everything)) >= 5 and fork_id in everything and bobs not in everything
        assert (await client.get(f"/sessions/{first}", headers=as_("bob"))).status_code == 404

        # delete: gone from the list and answered 410; its content is erased
        assert (await client.delete(f"/sessions/{second}", headers=as_("alice"))).status_code == 204
        assert (await client.get(f"/sessions/{second}", headers=as_("alice"))).status_code == 410
        listed = (await client.get("/sessions", headers=as_("alice"), params={"roots_only": "true"})).json()["sessions"]
        assert [s["id"] for s in listed] == [first]
        task_job = str(task["id"])

    # a restart: a new app on the same file has it all, commands included
    async with serving(app_on(path)) as client:
        listed = (await client.get("/sessions", headers=as_("alice"), params={"roots_only": "true"})).json()["sessions"]
        assert [s["id"] for s in listed] == [first]
        log = (await client.get(f"/sessions/{first}", headers=as_("alice"))).json()["log"]
        assert [e["type"] for e in log] == ["turn", "command", "turn", "turn"]
        command = log[1]
        assert command["command_id"] == "task" and command["argument"] == "write the tests"
        assert str(command["text"]).startswith("Started task") and command["error_kind"] is None
        job = (await client.get(f"/jobs/{task_job}", headers=as_("alice"))).json()
        assert job["status"] == "finished" and job["text"] == "/task write the tests"
        assert (await client.get(f"/jobs/{task_job}", headers=as_("bob"))).status_code == 404
        read = (await client.get("/inbox", headers=as_("alice"), params={"unread_only": "false"})).json()
        assert [n["message"]["title"] for n in read["notifications"]] == ["Task finished: write the tests"]
        assert (await client.get(f"/sessions/{bobs}", headers=as_("bob"))).json()["log"][0]["reply"] == "you said: hi"


@pytest.mark.anyio
async def test_twenty_concurrent_requests_keep_each_sessions_turns_in_order(tmp_path: Path) -> None:
    async with serving(app_on(tmp_path / "chat.sqlite")) as client:
        sessions = {"alice": await new_session(client, "alice"), "bob": await new_session(client, "bob")}
        results: list[dict[str, object]] = []

        async def one(n: int) -> None:
            user = "alice" if n % 2 else "bob"
            results.append(await say(client, user, sessions[user], f"message {n}"))

        async with anyio.create_task_group() as tg:
            for n in range(20):
                tg.start_soon(one, n)
        assert len(results) == 20 and all(r["status"] == "finished" for r in results)
        for user, session_id in sessions.items():
            log = (await client.get(f"/sessions/{session_id}", headers=as_(user))).json()["log"]
            assert [e["ordinal"] for e in log] == list(range(10))
            assert all(e["reply"] == f"you said: {e['message']['text']}" for e in log)


@pytest.mark.anyio
async def test_failures_answer_with_a_status_and_a_message_naming_the_value(tmp_path: Path) -> None:
    async with serving(app_on(tmp_path / "chat.sqlite")) as client:
        chat = await new_session(client, "alice")
        missing = await client.get("/sessions")
        assert missing.status_code == 401 and "X-User" in missing.json()["error"]
        bad = await client.post(f"/sessions/{chat}/messages", headers=as_("alice"), content=b"[1, 2]")
        assert bad.status_code == 400 and bad.json()["error"] == "the body must be a JSON object, got [1, 2]"
        no_text = await client.post(f"/sessions/{chat}/messages", headers=as_("alice"), json={"text": 3})
        assert no_text.status_code == 422 and "got text=3" in no_text.json()["error"]
        limit = await client.get("/sessions", headers=as_("alice"), params={"limit": "lots"})
        assert limit.status_code == 422 and limit.json()["error"] == "limit must be an integer from 1 to 200, got 'lots'"
        cursor = await client.get("/sessions", headers=as_("alice"), params={"after": "nonsense"})
        assert cursor.status_code == 422 and cursor.json()["argument"] == "after"
        not_a_run = await client.post("/agui", headers=as_("alice"), json={"threadId": chat})
        assert not_a_run.status_code == 422 and "RunAgentInput" in not_a_run.json()["error"]
        unknown = await say(client, "alice", chat, "/nosuch thing")
        submission = unknown["submission"]
        assert isinstance(submission, dict)
        assert unknown["status"] == "failed" and submission["error_kind"] == "unknown_command"
        empty = await say(client, "alice", chat, "   ")
        assert isinstance(empty["submission"], dict) and empty["submission"]["error_kind"] == "invalid_input"
        assert (await client.get("/jobs/job_000000000000", headers=as_("alice"))).status_code == 404


@pytest.mark.anyio
async def test_events_stream_as_they_happen_and_a_client_that_leaves_ends_its_subscription(tmp_path: Path) -> None:
    """Read /events through raw ASGI: the first event arrives while the response is still open."""
    app = app_on(tmp_path / "chat.sqlite")
    async with serving(app) as client:
        chat = await new_session(client, "alice")
        chunks: list[bytes] = []
        got_event, leave = anyio.Event(), anyio.Event()

        async def receive() -> Message:
            await leave.wait()
            return {"type": "http.disconnect"}

        async def send(message: Message) -> None:
            if message["type"] == "http.response.body" and message.get("body"):
                chunks.append(message["body"])
                got_event.set()

        scope = {
            "type": "http",
            "asgi": {"version": "3.0"},
            "http_version": "1.1",
            "method": "GET",
            "scheme": "http",
            "path": "/events",
            "raw_path": b"/events",
            "query_string": b"",
            "root_path": "",
            "headers": [(b"x-user", b"alice"), (b"host", b"chat")],
            "client": ("127.0.0.1", 1),
            "server": ("chat", 80),
            "state": {},
        }
        async with anyio.create_task_group() as tg:
            tg.start_soon(app, scope, receive, send)
            await anyio.wait_all_tasks_blocked()
            await client.post(f"/sessions/{chat}/messages", headers=as_("alice"), json={"text": "hello"})
            with anyio.fail_after(5):
                await got_event.wait()  # the response is still open: nothing has ended it
            assert sse(b"".join(chunks).decode())[0][0] == "job_started"
            leave.set()  # the client goes away: the handler ends and unsubscribes
        assert not tg.cancel_scope.cancel_called


def test_the_example_imports_only_public_names() -> None:
    for path in sorted((ROOT / "host_sim" / "examples" / "integration").glob("*.py")):
        tree = ast.parse(path.read_text(), filename=str(path))
        for node in ast.walk(tree):
            if isinstance(node, ast.ImportFrom) and node.module and node.module.split(".")[0] in ("host_sim", "modular_sdk"):
                assert node.module in ("host_sim", "modular_sdk", "host_sim.examples"), f"{path.name} imports from {node.module}"
                assert all(not a.name.startswith("_") for a in node.names), f"{path.name}: {ast.dump(node)}"
            if isinstance(node, ast.Import):
                assert all(a.name.split(".")[0] not in ("host_sim", "modular_sdk") or "." not in a.name for a in node.names)


@pytest.mark.anyio
async def test_a_user_cancels_their_running_job_and_nobody_else_can(tmp_path: Path) -> None:
    release = anyio.Event()

    async def slow(request: ModelRequest) -> str:
        await release.wait()
        return "too late"

    app = create_app(lambda: SqliteStore(tmp_path / "chat.sqlite"), model=ScriptedModel(slow))
    async with serving(app) as client:
        chat = await new_session(client, "alice")
        started = await client.post(f"/sessions/{chat}/messages", headers=as_("alice"), json={"text": "a long one"})
        job_id = started.json()["id"]
        assert (await client.delete(f"/jobs/{job_id}", headers=as_("bob"))).status_code == 404
        assert (await client.delete("/jobs/job_nope", headers=as_("alice"))).status_code == 404
        assert (await client.delete(f"/jobs/{job_id}", headers=as_("alice"))).status_code == 202
        done = (await client.get(f"/jobs/{job_id}", headers=as_("alice"), params={"wait": 5})).json()
        assert done["status"] == "cancelled" and done["submission"]["error_kind"] == "interrupted"
        release.set()


@pytest.mark.anyio
async def test_a_browser_that_reconnects_with_last_event_id_gets_what_it_missed(tmp_path: Path) -> None:
    async with serving(app_on(tmp_path / "chat.sqlite")) as client:
        chat = await new_session(client, "alice")
        await say(client, "alice", chat, "one")
        # From the start: what happened before it came, but the live-only reply deltas.
        first = await client.get("/events", headers={**as_("alice"), "Last-Event-ID": "0"}, params={"limit": 3})
        assert [name for name, _ in sse(first.text)] == ["session_created", "job_started", "turn_started"]
        await say(client, "alice", chat, "two")  # meanwhile
        last = [line for line in first.text.splitlines() if line.startswith("id: ")][-1].removeprefix("id: ")
        again = await client.get("/events", headers={**as_("alice"), "Last-Event-ID": last}, params={"limit": 6})
        assert [(name, data.get("reply")) for name, data in sse(again.text) if name.startswith("turn_")] == [
            ("turn_finished", "you said: one"),
            ("turn_started", None),
            ("turn_finished", "you said: two"),
        ]


@pytest.mark.anyio
async def test_two_backends_on_one_postgresql_database_serve_one_chat_with_no_sticky_routing(postgres_dsn: str) -> None:
    """Two app instances (two hosts) behind a load balancer: any request may reach either."""
    seen: list[ModelRequest] = []

    class Watching(Typist):
        async def respond(self, request: ModelRequest) -> str | ToolCall:
            seen.append(request)
            return await super().respond(request)

        async def stream(self, request: ModelRequest) -> AsyncIterator[str | ToolCall]:
            seen.append(request)
            for word in self.words(request):
                yield word

    def app() -> Starlette:
        return create_app(lambda: PostgresStore(postgres_dsn), model=Watching())

    with anyio.fail_after(60):
        async with serving(app()) as a, serving(app()) as b:
            chat = await new_session(a, "alice")
            assert (await say(a, "alice", chat, "one"))["status"] == "finished"
            assert (await say(b, "alice", chat, "two"))["status"] == "finished"  # the other instance goes on
            assert [entry.text for entry in seen[-1].history] == ["one"]

            # What A did reaches a client of B (events cross hosts through the database), in the
            # order it happened (API §12, §13): "two" was posted to B only once A said "one" had
            # finished, so B's events come after all of A's, whichever host writes its rows first.
            replay = await b.get("/events", headers={**as_("alice"), "Last-Event-ID": "0"}, params={"limit": 9})
            events = sse(replay.text)
            one_turn = ["job_started", "turn_started", "turn_finished", "job_finished"]
            assert [name for name, _ in events] == ["session_created", *one_turn, *one_turn]
            seqs = [data["seq"] for _, data in events]
            assert seqs == sorted(set(seqs))  # type: ignore[type-var]
            assert [data["ordinal"] for name, data in events if name == "turn_started"] == [0, 1]

            # deleted through A: B refuses it at once, and Bob never saw it
            assert (await a.delete(f"/sessions/{chat}", headers=as_("alice"))).status_code == 204
            gone = await b.post(f"/sessions/{chat}/messages", headers=as_("alice"), json={"text": "three"})
            assert gone.status_code == 410, gone.text
            assert (await b.get(f"/sessions/{chat}", headers=as_("bob"))).status_code == 404


@pytest.mark.anyio
async def test_with_an_otlp_endpoint_set_the_example_sends_its_spans_there(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from opentelemetry.sdk.trace import TracerProvider

    from host_sim.examples.integration import app, from_environment

    from .._otlp_receiver import OtlpReceiver

    made: list[TracerProvider] = []
    make = app.otlp_tracer_provider

    def kept() -> TracerProvider | None:
        provider = make()
        made.extend([provider] if provider is not None else [])
        return provider

    monkeypatch.setattr(app, "otlp_tracer_provider", kept)
    with OtlpReceiver() as receiver:
        monkeypatch.setenv("CHAT_STORE", str(tmp_path / "chat.sqlite"))
        monkeypatch.delenv("OPENAI_MODEL", raising=False)
        monkeypatch.setenv("OTEL_EXPORTER_OTLP_ENDPOINT", receiver.endpoint.removesuffix("/v1/traces"))
        try:
            async with serving(from_environment()) as client:
                chat = await new_session(client, "alice")
                assert (await say(client, "alice", chat, "hello"))["status"] == "finished"
            names = [name for name, _, _ in receiver.spans]  # the lifespan's end flushed the batch
        finally:
            for provider in made:
                provider.shutdown()  # its exporter's connection too
    assert len(made) == 1
    assert names.count("invoke_agent session") == 1 and names.count("chat echo") == 1


def test_without_an_otlp_endpoint_the_example_traces_nothing(monkeypatch: pytest.MonkeyPatch) -> None:
    from host_sim.examples.integration.app import otlp_tracer_provider

    monkeypatch.delenv("OTEL_EXPORTER_OTLP_ENDPOINT", raising=False)
    assert otlp_tracer_provider() is None

"""A web front end drives the host over AG-UI with the protocol's own published client (API.md section 21).

Each test serves ``host_sim.agui_app`` with uvicorn on loopback (tests/protocols/agui_server.py,
a subprocess on a SQLite store) and drives it with ``@ag-ui/client``'s ``HttpAgent`` run by node
(tests/protocols/agui_client/drive.mjs, installed from npm by ``npm ci``); the client checks the
event order itself, and every event it received is validated again with the Python
``ag-ui-protocol`` models. Between servers, the test reads and changes the store with a Host.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
from collections.abc import AsyncIterator, Mapping, Sequence
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Final

import anyio
import pytest
from ag_ui.core import Event
from pydantic import TypeAdapter

from host_sim import Host, SqliteStore
from modular_sdk import ForkLineage

pytestmark = pytest.mark.anyio

HERE: Final = Path(__file__).resolve().parent
CLIENT: Final = HERE / "agui_client"
SERVER: Final = HERE / "agui_server.py"
EVENTS: Final = TypeAdapter(Event)

Step = Mapping[str, object]
Ran = dict[str, object]


@pytest.fixture(scope="session")
def node_client() -> Path:
    """The published client, installed from the committed package-lock.json when missing."""
    node, npm = shutil.which("node"), shutil.which("npm")
    if node is None or npm is None:
        pytest.fail("node and npm are needed to run the published AG-UI client (.ci/run installs Debian's nodejs npm)")
    if not (CLIENT / "node_modules" / "@ag-ui" / "client").exists():
        subprocess.run([npm, "ci", "--no-audit", "--no-fund"], cwd=CLIENT, check=True, capture_output=True, timeout=600)
    return CLIENT


@asynccontextmanager
async def serving(store: Path, user: str | None = None) -> AsyncIterator[str]:
    """The app served by uvicorn in its own process; yields its URL; stops it (SIGTERM) after."""
    port_file = store.with_suffix(".port")
    port_file.unlink(missing_ok=True)
    args = [sys.executable, str(SERVER), str(store), str(port_file), *([] if user is None else [user])]
    process = await anyio.open_process(args, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    try:
        with anyio.fail_after(60):
            while not port_file.exists() or not port_file.read_text():
                if process.returncode is not None:
                    assert process.stderr is not None
                    raise AssertionError(f"the server exited: {(await process.stderr.receive()).decode()}")
                await anyio.sleep(0.05)
        yield f"http://127.0.0.1:{port_file.read_text()}/agui"
    finally:
        process.send_signal(signal.SIGTERM)
        with anyio.fail_after(30):
            await process.wait()
        await process.aclose()


async def drive(client: Path, url: str, thread: str, steps: Sequence[Step], messages: object = ()) -> list[Ran]:
    """Run the steps with HttpAgent (drive.mjs), holding ``messages`` first; each event is
    validated with the Python models."""
    plan = json.dumps({"url": url, "threadId": thread, "steps": list(steps), "messages": list(messages)})  # type: ignore[call-overload]
    done = await anyio.run_process(["node", str(client / "drive.mjs"), plan], cwd=client, check=False)
    assert done.returncode == 0, done.stderr.decode()
    runs: list[Ran] = [json.loads(line) for line in done.stdout.decode().splitlines()]
    assert len(runs) == len(steps)
    for ran in runs:
        for event in ran["events"]:  # type: ignore[attr-defined]
            EVENTS.validate_python(event)  # the Python protocol models accept what the client accepted
    return runs


def kinds(ran: Ran) -> list[str]:
    return [e["type"] for e in ran["events"]]  # type: ignore[attr-defined]


def of(ran: Ran, kind: str) -> list[dict[str, object]]:
    return [e for e in ran["events"] if e["type"] == kind]  # type: ignore[attr-defined]


def text(ran: Ran) -> str:
    return "".join(str(e["delta"]) for e in of(ran, "TEXT_MESSAGE_CONTENT"))


def result(ran: Ran) -> dict[str, object]:
    (finished,) = of(ran, "RUN_FINISHED")
    value = finished["result"]
    assert isinstance(value, dict)
    return value


async def test_a_prompt_streams_its_reply_in_chunks_between_run_started_and_run_finished(node_client: Path, tmp_path: Path) -> None:
    store = tmp_path / "chat.sqlite"
    async with serving(store) as url:
        (ran,) = await drive(node_client, url, "thread-1", [{"say": "hello", "runId": "run-1"}])
    assert ran["error"] is None
    assert kinds(ran) == [
        "RUN_STARTED", "TEXT_MESSAGE_START", "TEXT_MESSAGE_CONTENT", "TEXT_MESSAGE_CONTENT",
        "TEXT_MESSAGE_CONTENT", "TEXT_MESSAGE_END", "RUN_FINISHED",
    ]  # fmt: skip
    (started,) = of(ran, "RUN_STARTED")
    assert (started["threadId"], started["runId"]) == ("thread-1", "run-1")
    assert [e["delta"] for e in of(ran, "TEXT_MESSAGE_CONTENT")] == ["you said: ", "hello", " (after 0)"]
    done = result(ran)
    assert done["kind"] == "prompt" and started["metadata"] == {"host_sim": {"sessionId": done["sessionId"], "jobId": done["jobId"]}}
    messages = ran["messages"]
    assert isinstance(messages, list) and messages[-1]["content"] == "you said: hello (after 0)"
    async with Host(store=SqliteStore(store)) as host:
        session = await host.sessions.get(str(done["sessionId"]))
        (turn,) = await session.turns()
        assert turn.id == done["turnId"] and turn.reply == "you said: hello (after 0)"
        assert dict(session.tags) == {"agui_thread": "thread-1"}


async def test_a_slash_command_runs_and_a_doubled_slash_sends_a_literal_one(node_client: Path, tmp_path: Path) -> None:
    async with serving(tmp_path / "chat.sqlite") as url:
        command, literal, unknown = await drive(
            node_client, url, "thread-1", [{"say": "/summary the week"}, {"say": "//etc/hosts"}, {"say": "/nosuch x"}]
        )
    assert text(command) == "summary of the week" and result(command)["kind"] == "command"
    assert result(command)["turnId"] is None
    assert text(literal) == "you said: /etc/hosts (after 0)"
    (error,) = of(unknown, "RUN_ERROR")
    assert "nosuch" in str(error["message"]) and error["code"] == "unknown_command"
    assert kinds(unknown) == ["RUN_STARTED", "RUN_ERROR"]  # a failed run ends with RUN_ERROR, not RUN_FINISHED


async def test_a_tool_call_streams_as_tool_call_events_with_its_result(node_client: Path, tmp_path: Path) -> None:
    async with serving(tmp_path / "chat.sqlite") as url:
        (ran,) = await drive(node_client, url, "thread-1", [{"say": "use the tool"}])
    assert kinds(ran)[:5] == ["RUN_STARTED", "TOOL_CALL_START", "TOOL_CALL_ARGS", "TOOL_CALL_END", "TOOL_CALL_RESULT"]
    (start,) = of(ran, "TOOL_CALL_START")
    (args,) = of(ran, "TOOL_CALL_ARGS")
    (answer,) = of(ran, "TOOL_CALL_RESULT")
    assert start["toolCallName"] == "shout" and json.loads(str(args["delta"])) == {"word": "hey"}
    assert answer["toolCallId"] == start["toolCallId"] and answer["content"] == "HEY"
    assert text(ran) == "the tool said HEY"
    tool_messages = [m for m in ran["messages"] if m["role"] == "tool"]  # type: ignore[attr-defined]
    assert [m["content"] for m in tool_messages] == ["HEY"]  # the client folded the events into its messages


async def test_editing_an_earlier_message_runs_in_a_fork_at_the_turn_before_it(node_client: Path, tmp_path: Path) -> None:
    store = tmp_path / "chat.sqlite"
    async with serving(store) as url:
        first, second, third, edited, after = await drive(
            node_client,
            url,
            "thread-1",
            [
                {"say": "one", "runId": "run-1"},
                {"say": "two", "runId": "run-2"},
                {"say": "three", "runId": "run-3"},
                {"edit": {"index": 1, "text": "TWO"}, "runId": "run-4"},
                {"say": "four", "runId": "run-5"},
            ],
        )
    root = result(first)["sessionId"]
    assert result(second)["sessionId"] == result(third)["sessionId"] == root
    (started,) = of(edited, "RUN_STARTED")
    fork = result(edited)["sessionId"]
    assert fork != root and started["threadId"] == fork  # the run happens in a new thread: the fork
    assert started["parentRunId"] == "run-1"  # the run that made turn 0, where the fork starts
    assert text(edited) == "you said: TWO (after 1)"  # the fork's history: 'one' only
    (continued,) = of(after, "RUN_STARTED")
    assert result(after)["sessionId"] == fork and "parentRunId" not in continued  # the client's branch continues
    assert text(after) == "you said: four (after 2)"
    async with Host(store=SqliteStore(store)) as host:
        forked = await host.sessions.get(str(fork))
        lineage = forked.lineage
        assert isinstance(lineage, ForkLineage)
        assert (lineage.parent_session_id, lineage.parent_turn_ordinal) == (root, 0)
        assert [t.message.text for t in await forked.turns() if t.message.type == "prompt"] == ["one", "TWO", "four"]
        untouched = await host.sessions.get(str(root))
        assert [t.reply for t in await untouched.turns()][-1] == "you said: three (after 2)"


async def test_a_proposed_action_interrupts_the_run_and_resume_decides_it_as_the_scopes_user(
    node_client: Path, tmp_path: Path
) -> None:
    store = tmp_path / "chat.sqlite"
    approve = {"status": "resolved", "payload": {"approved": True, "reason": "looks right"}}
    reject = {"status": "resolved", "payload": {"approved": False, "reason": "not now"}}
    always = {"status": "resolved", "payload": {"approved": True, "reason": "routine", "always": True}}
    async with serving(store, user="alice") as url:
        runs = await drive(
            node_client,
            url,
            "thread-1",
            [
                {"say": "propose Write tests"},
                {"resume": [approve]},
                {"say": "propose Skip tests"},
                {"resume": [reject]},
                {"say": "propose Fix bug"},
                {"resume": [always]},
                {"say": "propose Fix another"},
            ],
        )
    proposed, confirmed, proposed_2, dismissed, proposed_3, allowed, by_rule = runs
    (finished,) = of(proposed, "RUN_FINISHED")
    outcome = finished["outcome"]
    assert isinstance(outcome, dict) and outcome["type"] == "interrupt"
    (interrupt,) = outcome["interrupts"]
    assert interrupt["metadata"]["host_sim"]["actionType"] == "task.create"
    assert interrupt["metadata"]["host_sim"]["payload"] == {"title": "Write tests"}
    assert proposed["pendingInterrupts"] == [interrupt]  # the client holds it until a resume answers it
    assert text(confirmed) == "created task 'Write tests'" and confirmed["pendingInterrupts"] == []
    assert text(dismissed) == "" and dismissed["error"] is None
    assert text(allowed) == "created task 'Fix bug'"
    assert not [e for e in of(by_rule, "RUN_FINISHED") if "outcome" in e]  # a standing approval decided it
    session_id = str(result(proposed)["sessionId"])
    async with Host(store=SqliteStore(store)) as host:
        (rule,) = await host.approvals.list()
        assert (rule.action_type, rule.by, rule.reason, dict(rule.tags)) == ("task.create", "alice", "routine", {"user": "alice"})
        decided = [(a.payload["title"], a.status, a.decided_by, a.reason) for a in await host.actions(session_id)]
        assert decided == [
            ("Write tests", "confirmed", "alice", "looks right"),
            ("Skip tests", "dismissed", "alice", "not now"),
            ("Fix bug", "confirmed", "alice", "routine"),
            ("Fix another", "confirmed", rule.id, "routine"),
        ]
        assert interrupt["id"] == (await host.actions(session_id))[0].id


async def test_a_scoped_app_keeps_to_its_users_sessions(node_client: Path, tmp_path: Path) -> None:
    store = tmp_path / "chat.sqlite"
    async with Host(store=SqliteStore(store)) as host:
        bobs = await host.scoped({"user": "bob"}).sessions.create()
    async with serving(store, user="alice") as url:
        (ran,) = await drive(node_client, url, bobs.id, [{"say": "hello"}])  # bob's session id as the thread
    mine = str(result(ran)["sessionId"])
    assert mine != bobs.id and text(ran) == "you said: hello (after 0)"
    async with Host(store=SqliteStore(store)) as host:
        assert dict((await host.sessions.get(mine)).tags) == {"user": "alice", "agui_thread": bobs.id}
        assert await (await host.sessions.get(bobs.id)).turns() == []  # alice's run never reached it


async def test_erased_text_is_never_streamed_and_a_deleted_thread_answers_run_error(node_client: Path, tmp_path: Path) -> None:
    store = tmp_path / "chat.sqlite"
    async with serving(store) as url:
        (secret,) = await drive(node_client, url, "thread-1", [{"say": "MARKER-secret-1"}])
    session_id = str(result(secret)["sessionId"])
    async with Host(store=SqliteStore(store)) as host:
        await host.lineage.forget(str(result(secret)["turnId"]), dry_run=False)
    async with serving(store) as url:
        # The front end still holds the forgotten message; the host neither forks for it nor sends it back.
        (recalled,) = await drive(node_client, url, "thread-1", [{"say": "recall"}], messages=secret["messages"])
    (started,) = of(recalled, "RUN_STARTED")
    assert result(recalled)["sessionId"] == session_id and started["threadId"] == "thread-1"
    assert "MARKER" not in json.dumps(recalled["events"]) and text(recalled) == "before: "
    async with Host(store=SqliteStore(store)) as host:
        await host.sessions.delete(session_id)
    async with serving(store) as url:
        by_tag, by_id = await drive(node_client, url, "thread-1", [{"say": "again"}, {"say": "again", "thread": session_id}])
    for ran in (by_tag, by_id):
        (error,) = of(ran, "RUN_ERROR")
        assert "deleted" in str(error["message"]) and error["code"] == "session_deleted"
        assert "MARKER" not in json.dumps(ran["events"])


async def test_widgets_and_spawned_sessions_arrive_as_custom_events(node_client: Path, tmp_path: Path) -> None:
    async with serving(tmp_path / "chat.sqlite") as url:
        placed, delegated = await drive(node_client, url, "thread-1", [{"say": "show progress"}, {"say": "/delegate hi"}])
    (widget,) = of(placed, "CUSTOM")
    value = widget["value"]
    assert widget["name"] == "host_sim.widget" and isinstance(value, dict)
    assert (value["widgetId"], value["data"], value["text"], value["index"]) == ("progress", {"done": 2, "total": 4}, "2/4", 0)
    assert value["turnId"] == result(placed)["turnId"]
    (spawn,) = of(delegated, "CUSTOM")
    assert spawn["name"] == "host_sim.spawn"
    spawned = spawn["value"]
    assert isinstance(spawned, dict) and spawned["parentSessionId"] == result(delegated)["sessionId"]
    assert text(delegated) == f"delegated to {spawned['sessionId']}: you said: hi (after 0)"


def test_the_published_client_is_pinned_by_a_committed_lockfile() -> None:
    lock = json.loads((CLIENT / "package-lock.json").read_text())
    assert lock["packages"]["node_modules/@ag-ui/client"]["version"] == "1.0.0"
    assert os.path.exists(CLIENT / "drive.mjs")

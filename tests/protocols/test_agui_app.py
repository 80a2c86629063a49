"""host_sim.agui_app in process: what it answers besides a run, and what it imports (API.md section 21)."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap

import httpx
import pytest

from host_sim import Host, agui_app
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

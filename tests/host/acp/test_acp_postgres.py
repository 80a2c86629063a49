"""``host-sim acp --store postgresql://...``: two editors' agent processes share one PostgreSQL store.

The published ACP client (``agent-client-protocol``'s client connection, as in
tests/cli/test_acp.py) drives each agent process; the SDK is asyncio, so asyncio only.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest
from acp import PROTOCOL_VERSION, text_block
from acp.schema import AgentMessageChunk, UserMessageChunk
from acp.stdio import spawn_agent_process

from cli.test_acp import MOD, Editor
from host_sim import Host, PostgresStore

from ..postgres_server import PostgresServer

pytestmark = [pytest.mark.anyio, pytest.mark.parametrize("anyio_backend", ["asyncio"])]


async def test_a_session_one_editor_started_on_postgresql_is_loaded_by_another_agent_process(
    postgres: PostgresServer, postgres_dsn: str, tmp_path: Path
) -> None:
    url = postgres.url(postgres_dsn.rsplit("dbname=", 1)[1])
    command = ["-m", "host_sim", "acp", MOD, "--store", url]
    env = {k: v for k, v in os.environ.items() if k != "HOST_SIM_STORE"}
    first, second = Editor(), Editor()
    with (tmp_path / "agents.stderr").open("ab") as log:
        options = {"stderr": log.fileno(), "shutdown_timeout": 30.0}
        async with spawn_agent_process(first, sys.executable, *command, env=env, cwd=tmp_path, transport_kwargs=options) as (
            conn,
            process,
        ):
            await conn.initialize(protocol_version=PROTOCOL_VERSION)
            session = (await conn.new_session(cwd=str(tmp_path))).session_id
            said = await conn.prompt(session_id=session, prompt=[text_block("hello over postgres")])
            shouted = await conn.prompt(session_id=session, prompt=[text_block("/shout shared")])
            async with spawn_agent_process(
                second, sys.executable, *command, env=env, cwd=tmp_path, transport_kwargs=options
            ) as (other, other_process):  # a second host on the same database, while the first runs
                await other.initialize(protocol_version=PROTOCOL_VERSION)
                listed = await other.list_sessions(cwd=str(tmp_path))
                await other.load_session(cwd=str(tmp_path), session_id=session)
            assert other_process.returncode == 0, (tmp_path / "agents.stderr").read_text()
        assert process.returncode == 0, (tmp_path / "agents.stderr").read_text()
    assert said.stop_reason == shouted.stop_reason == "end_turn"
    assert first.said(session) == ["echo: hello over postgres", "SHARED!"]
    assert [s.session_id for s in listed.sessions] == [session]
    assert [u.content.text for u in second.of(session, UserMessageChunk)] == ["hello over postgres", "/shout shared"]
    assert [u.content.text for u in second.of(session, AgentMessageChunk)] == ["echo: hello over postgres", "SHARED!"]
    async with Host(store=PostgresStore(url)) as host:
        stored = await host.sessions.get(session)
        assert stored.cwd == str(tmp_path) and [t.reply for t in await stored.turns()] == ["echo: hello over postgres"]

"""The integration example's ``from_environment`` opens the store ``$CHAT_STORE`` names: a
``postgresql://`` URL as well as a SQLite file (issue 36: it opened SQLite only)."""

from __future__ import annotations

import anyio
import pytest
from starlette.applications import Starlette
from starlette.types import Message

from host_sim import PostgresStore

from ..postgres_server import PostgresServer


async def _start_and_stop(app: Starlette) -> None:
    """The app's lifespan as a server runs it: startup (the host opens its store), shutdown."""
    to_app, app_reads = anyio.create_memory_object_stream[Message](4)
    app_writes, from_app = anyio.create_memory_object_stream[Message](4)
    async with anyio.create_task_group() as tg:
        tg.start_soon(app, {"type": "lifespan", "asgi": {"version": "3.0"}, "state": {}}, app_reads.receive, app_writes.send)
        await to_app.send({"type": "lifespan.startup"})
        started = await from_app.receive()
        assert started["type"] == "lifespan.startup.complete", started
        await to_app.send({"type": "lifespan.shutdown"})
        assert (await from_app.receive())["type"] == "lifespan.shutdown.complete"
    for stream in (to_app, app_reads, app_writes, from_app):
        stream.close()


@pytest.mark.anyio
async def test_chat_store_may_name_a_postgres_database(postgres: PostgresServer, monkeypatch: pytest.MonkeyPatch) -> None:
    from host_sim.examples.integration import from_environment

    url = postgres.url(postgres.database().rpartition("dbname=")[2])
    monkeypatch.setenv("CHAT_STORE", url)
    monkeypatch.delenv("OPENAI_MODEL", raising=False)
    monkeypatch.delenv("OTEL_EXPORTER_OTLP_ENDPOINT", raising=False)
    await _start_and_stop(from_environment())
    made = PostgresStore(url, create=False)  # refuses a database without the host's tables
    await made.open()
    await made.close()

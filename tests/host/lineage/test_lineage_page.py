"""``host.lineage.html``: the lineage page from code, on every store, naming no file path."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import anyio
import pytest

from host_sim import Host, MemoryStore, PostgresStore, SqliteStore, Store
from modular_sdk import AiSessionDisplayMetadata, InvalidArgumentError, UnknownSessionError

from ..postgres_server import PostgresServer

pytestmark = pytest.mark.anyio

StoreFactory = Callable[[], Store]


@pytest.fixture(params=["memory", "sqlite", "postgres"])
def make_store(request: pytest.FixtureRequest, tmp_path: Path) -> tuple[StoreFactory, str]:
    """A factory of stores on the same data, and where that data lives (a path or a DSN)."""
    if request.param == "memory":
        memory = MemoryStore()
        return (lambda: memory), "memory"
    if request.param == "postgres":
        dsn: str = request.getfixturevalue("postgres_dsn")
        return (lambda: PostgresStore(dsn)), dsn
    path = tmp_path / "secret-folder" / "store.sqlite"
    path.parent.mkdir()
    return (lambda: SqliteStore(path)), str(path)


def page_data(page: str) -> dict[str, object]:
    block = page.split('<script type="application/json" id="lineage-data">', 1)[1].split("</script>", 1)[0]
    data = json.loads(block)
    assert isinstance(data, dict)
    return data


def labels(page: str) -> list[object]:
    sessions = page_data(page)["sessions"]
    assert isinstance(sessions, list)
    return [s["label"] for s in sessions]


async def test_an_integrator_gets_the_lineage_page_from_code_on_every_store(make_store: tuple[StoreFactory, str]) -> None:
    factory, where = make_store
    async with Host(store=factory()) as host:
        chat = await host.sessions.create(metadata=AiSessionDisplayMetadata(label="Chat"), tags={"user": "alice"})
        await host.submit(chat, "Refactor the parser")
        await host.submit(chat, "and </script><!-- @DATA@ the tests")
        fork = await (await chat.turns())[0].fork(metadata=AiSessionDisplayMetadata(label="<img src=x onerror=alert(1)>"))
        await host.submit(fork.id, "another way")
        other = await host.sessions.create(metadata=AiSessionDisplayMetadata(label="Other"))

        page = await host.lineage.html()
        assert labels(page) == ["Chat", "<img src=x onerror=alert(1)>", "Other"]
        sessions = page_data(page)["sessions"]
        assert isinstance(sessions, list)
        assert [s["count"] for s in sessions] == [2, 2, 0]  # a fork's inherited turn counts
        assert sessions[0]["tags"] == {"user": "alice"}
        assert sessions[0]["turns"][1]["text"] == "and </script><!-- @DATA@ the tests"
        assert "<title>host-sim lineage</title>" in page and "<img" not in page
        if where != "memory":  # the page names no file path, database or user
            assert where not in page and "secret-folder" not in page and "dbname" not in page

        mine = await host.lineage.html(fork.id, title=f"lineage of {where}")
        assert labels(mine) == ["Chat", "<img src=x onerror=alert(1)>"]  # its chain: where it came from, not 'Other'
        assert page_data(mine)["title"] == f"lineage of {where}"  # a path only when the caller puts it there
        assert labels(await host.lineage.html(other.id)) == ["Other"]

    reopened = factory()  # the page is made from the store, so a later host shows the same
    async with Host(store=reopened) as again:
        assert labels(await again.lineage.html()) == ["Chat", "<img src=x onerror=alert(1)>", "Other"]


async def test_an_erased_turn_shows_as_erased_without_its_text(make_store: tuple[StoreFactory, str]) -> None:
    factory, _ = make_store
    async with Host(store=factory()) as host:
        chat = await host.sessions.create()
        done = await host.submit(chat, "my card number is 4111")
        assert done.turn is not None
        await host.lineage.forget(done.turn.id, dry_run=False)
        page = await host.lineage.html()
        assert "4111" not in page
        sessions = page_data(page)["sessions"]
        assert isinstance(sessions, list) and sessions[0]["turns"][0]["erased"] is True


async def test_the_page_refuses_an_unknown_root_and_a_title_that_is_not_text() -> None:
    async with Host() as host:
        with pytest.raises(UnknownSessionError, match=r"no session 'ses_nope' in this host's store; pass the id") as caught:
            await host.lineage.html("ses_nope")
        assert caught.value.session_id == "ses_nope"
        with pytest.raises(InvalidArgumentError, match=r"title must be a str or None, got 42; pass") as bad:
            await host.lineage.html(title=42)  # type: ignore[arg-type]
        assert bad.value.argument == "title" and bad.value.value == 42


def test_host_sim_lineage_html_reads_a_postgres_store_by_url(postgres: PostgresServer, tmp_path: Path) -> None:
    dsn = postgres.database()
    url = postgres.url(dsn.rsplit("dbname=", 1)[1])

    async def write() -> None:
        async with Host(store=PostgresStore(dsn)) as host:
            chat = await host.sessions.create(metadata=AiSessionDisplayMetadata(label="Chat"))
            await host.submit(chat, "hello")
            await chat.fork()

    anyio.run(write)
    done = subprocess.run(
        [sys.executable, "-m", "host_sim", "lineage", "--store", url, "--html", "page.html"],
        capture_output=True, text=True, cwd=tmp_path, timeout=120,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert done.stdout == "wrote page.html (2 sessions); open it in a browser\n"
    page = (tmp_path / "page.html").read_text(encoding="utf-8")
    assert labels(page) == ["Chat", None]
    assert url not in page and not re.search(r"postgres|dbname|\.sqlite", page)

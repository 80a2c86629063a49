"""Erasure wins every race (API.md section 23): once ``lineage.forget`` or ``sessions.delete``
returns, no turn holds the erased text and no later model call sees it, whatever ran at the
same moment.

Each example plants a marker in one turn, then runs the erasure at the same moment as sends
to the session and to forks of it, a spawn from a slash command, a job, and other deletions,
with small drawn delays and a slow model that repeats its history in its reply (a turn that
read the marker keeps it). The erasure either is refused (`TurnRunningError`: a turn was
running when it began, API §19; it is then run again once nothing races) or returns; either
way, once it has returned, every row of the store (SQLite: every byte of its files;
PostgreSQL: every text column of every table), every event ``subscribe(after=0)`` replays,
and the history of every model call that began afterwards are searched for the marker.
The same story runs with the racing turns on a second host process sharing PostgreSQL.
"""

from __future__ import annotations

import contextlib
import secrets
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import anyio
import attrs
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from host_sim import Host, MemoryStore, ModelRequest, PostgresStore, SqliteStore, Store, TurnRunningError
from modular_sdk import (
    ModMetadata,
    SessionDeletedError,
    SlashCommandContext,
    define_mod,
    slash_command,
)

from ..conftest import STORE_KINDS
from ..sessions.test_hosts_are_one_host import HOST_SCRIPT, OtherHost
from .test_erasure import _strings, postgres_survivors, sqlite_survivors

BACKENDS = ("asyncio", "trio")
RACERS = ("send", "fork", "spawn", "job", "delete fork", "delete")


class Recording:
    """A slow model that repeats the history it was shown, and notes when each call began."""

    name = "recording"

    def __init__(self, delay: float) -> None:
        self.delay = delay
        self.calls: list[tuple[float, str]] = []

    async def respond(self, request: ModelRequest) -> str:
        shown = " | ".join(f"{e.text} => {e.reply}" for e in request.history)
        self.calls.append((time.perf_counter(), shown))
        await anyio.sleep(self.delay)
        return f"seen: {shown}"


async def delegate(argument: str | None, ctx: SlashCommandContext) -> str:
    child = await ctx.session.spawn()
    return (await child.run(argument or "a child's job")).text


MOD = define_mod(
    metadata=ModMetadata(display_name="Delegator", description="Spawns a child and runs it"),
    commands=[slash_command(id="delegate", description="Spawn a child for a job", run=delegate)],
)


@attrs.frozen
class RaceStore:
    """One store kind: how to open it again, and where its bytes are."""

    kind: str
    make: Callable[[], Store]
    where: str


@pytest.fixture(params=STORE_KINDS)
def race_store(request: pytest.FixtureRequest, tmp_path: Path) -> RaceStore:
    """Each store kind, reopened by every example (the `any_store` pattern, with where its bytes are)."""
    kind: str = request.param
    if kind == "memory":
        memory = MemoryStore()
        return RaceStore(kind=kind, make=lambda: memory, where="")
    if kind == "sqlite":
        path = tmp_path / "store.sqlite"
        return RaceStore(kind=kind, make=lambda: SqliteStore(path), where=str(path))
    dsn: str = request.getfixturevalue("postgres_dsn")
    return RaceStore(kind=kind, make=lambda: PostgresStore(dsn), where=dsn)


async def replayed(host: Host) -> str:
    """Every event ``subscribe(after=0)`` yields, as text (read until none comes for a moment)."""
    out: list[str] = []
    async with host.subscribe(after=0) as events:
        while True:
            with anyio.move_on_after(0.3):
                out.append(repr(await events.__anext__()))
                continue
            return "\n".join(out)


def rows_holding(race: RaceStore, store: Store, marker: str) -> list[str]:
    """Where the marker survives in the store (read once the host closed it)."""
    if race.kind == "memory":
        return ["the memory store"] if any(marker in s for s in _strings(store)) else []
    if race.kind == "sqlite":
        return sqlite_survivors(race.where, marker)
    return postgres_survivors(race.where, marker)


@settings(max_examples=6, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture])
@given(
    erasure=st.sampled_from(["forget", "delete"]),
    racers=st.lists(st.sampled_from(RACERS), min_size=1, max_size=3),
    delays=st.lists(st.floats(0, 0.006), min_size=4, max_size=4),
    model_delay=st.floats(0, 0.005),
)
@pytest.mark.parametrize("backend", BACKENDS)
def test_once_forget_or_delete_returns_no_row_event_or_later_model_call_holds_the_text(
    race_store: RaceStore, backend: str, erasure: str, racers: list[str], delays: list[float], model_delay: float
) -> None:
    marker = f"mk{secrets.token_hex(6)}"
    model = Recording(model_delay)
    store = race_store.make()

    async def story() -> None:
        async with Host(mods=[MOD], model=model, store=store) as host:
            chat = await host.sessions.create()
            planted = await chat.run(f"plant {marker}")
            await chat.run("after the plant")
            fork = await chat.fork()  # inherits the planted turn
            returned: list[float] = []

            async def erase() -> bool:
                try:
                    if erasure == "forget":
                        await host.lineage.forget(planted.turn.id, dry_run=False)
                    else:
                        await host.sessions.delete(chat.id)
                except TurnRunningError:
                    return False  # a turn was running when it began: refused, nothing erased (API §19)
                returned.append(time.perf_counter())
                return True

            async def first_erasure() -> None:
                await anyio.sleep(delays[0])
                await erase()

            async def race(kind: str, delay: float) -> None:
                await anyio.sleep(delay)
                with contextlib.suppress(SessionDeletedError, TurnRunningError):
                    if kind == "send":
                        await chat.run("racing")
                    elif kind == "fork":
                        await (await chat.fork()).run("racing in a new fork")
                    elif kind == "spawn":
                        await host.submit(chat, "/delegate racing in a spawn")
                    elif kind == "job":
                        await (await host.start(fork, "racing as a job")).wait()
                    elif kind == "delete fork":
                        await host.sessions.delete(fork.id)
                    else:
                        await host.sessions.delete(chat.id)

            async with anyio.create_task_group() as tg:
                tg.start_soon(first_erasure)
                for kind, delay in zip(racers, delays[1:]):
                    tg.start_soon(race, kind, delay)
            if not returned:  # refused while racing: run it again, now that nothing runs
                assert await erase()
            with contextlib.suppress(SessionDeletedError):
                await fork.run("after the erasure")  # a model call that begins after it returned
            later = [shown for began, shown in model.calls if began > returned[0]]
            assert not [shown for shown in later if marker in shown], "a model call after the erasure saw the text"
            events = await replayed(host)
            assert marker not in events, "an event replayed after the erasure holds the text"
            jobs = repr(await host.jobs(limit=500))
            assert marker not in jobs
        assert rows_holding(race_store, store, marker) == []

    anyio.run(story, backend=backend)


# -- two hosts sharing PostgreSQL -------------------------------------------------------------


@pytest.fixture
def second_host(postgres_dsn: str) -> Iterator[OtherHost]:
    """A second host process over the same database (``postgres_host.py serve``), kept across examples."""
    process = subprocess.Popen(
        [sys.executable, str(HOST_SCRIPT), postgres_dsn, "-", "serve"],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    other = OtherHost(process)
    try:
        assert process.stdout is not None and process.stdout.readline() == "open\n"
        yield other
    finally:
        process.kill()
        process.wait(timeout=60)
        for stream in (process.stdin, process.stdout, process.stderr):
            if stream is not None:
                stream.close()


@settings(max_examples=8, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture])
@given(
    erasure=st.sampled_from(["forget", "delete"]),
    where=st.sampled_from(["session", "fork"]),
    delay=st.floats(0, 0.02),
)
@pytest.mark.parametrize("backend", BACKENDS)
def test_an_erasure_on_one_host_wins_against_a_turn_another_host_runs_at_the_same_moment(
    postgres_dsn: str, second_host: OtherHost, backend: str, erasure: str, where: str, delay: float
) -> None:
    """Host A forgets (or deletes) while host B, another process, sends to the session or a new
    fork of it with a model that repeats its history: once A's call returns, no row and no
    event holds the text, and neither host's next model call sees it."""
    marker = f"mk{secrets.token_hex(6)}"
    model = Recording(0.002)

    async def story() -> None:
        async with Host(model=model, store=PostgresStore(postgres_dsn)) as here:
            chat = await here.sessions.create()
            planted = await chat.run(f"plant {marker}")
            await chat.run("after the plant")
            fork = await chat.fork()
            returned: list[float] = []
            answers: list[dict[str, object]] = []

            async def erase() -> None:
                await anyio.sleep(delay)
                with contextlib.suppress(TurnRunningError):
                    if erasure == "forget":
                        await here.lineage.forget(planted.turn.id, dry_run=False)
                    else:
                        await here.sessions.delete(chat.id)
                    returned.append(time.perf_counter())

            async def send_there() -> None:
                op = "run" if where == "session" else "fork-run"
                answers.append(await second_host.call(op=op, session=chat.id, text="racing there", echo=True))

            async with anyio.create_task_group() as tg:
                tg.start_soon(send_there)
                tg.start_soon(erase)
            if not returned:  # refused: a turn was running when it began; run it again
                if erasure == "forget":
                    await here.lineage.forget(planted.turn.id, dry_run=False)
                else:
                    await here.sessions.delete(chat.id)
                returned.append(time.perf_counter())
            later_here = [shown for began, shown in model.calls if began > returned[0]]
            with contextlib.suppress(SessionDeletedError):
                await fork.run("after the erasure, here")
                later_here = [shown for began, shown in model.calls if began > returned[0]]
            there = await second_host.call(op="run", session=fork.id, text="after the erasure, there", echo=True)
            assert "error" not in there or there["error"] == SessionDeletedError.__name__, there
            assert marker not in repr(there), "a model call on the other host after the erasure saw the text"
            assert not [s for s in later_here if marker in s], "a model call here after the erasure saw the text"
            assert marker not in await replayed(here)
        assert postgres_survivors(postgres_dsn, marker) == []

    anyio.run(story, backend=backend)


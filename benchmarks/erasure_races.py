"""How often an erasure loses a race against the work of the session it erases (API.md §23).

Each round plants a marker in one turn of a fresh session, then runs ``lineage.forget`` of
that turn (or ``sessions.delete`` of its session) at the same moment as a send to the
session, a send to a fork of it, or a job in it. The model is slow (a few ms) and replies
with every history entry it was shown, so a turn that read the marker keeps it in its reply.

A round is *lost* when the erasure returned success and afterwards the marker is still
somewhere: in a stored row (SQLite: any byte of its files; PostgreSQL: any text column of
any table), in an event replayed by ``subscribe(after=0)``, or in the history of a model
call that began after the erasure returned. An erasure refused with `TurnRunningError`
(a turn was running when it began, API §19) is not lost: the round counts as refused.

With ``--hosts 2`` (PostgreSQL only) the racing send runs on a second host process over the
same database, and the erasure on the first.

    python benchmarks/erasure_races.py [--rounds 40] [--stores memory,sqlite,postgres] [--hosts 1|2]
"""

from __future__ import annotations

import argparse
import json
import random
import subprocess
import sys
import tempfile
import textwrap
from collections.abc import Callable
from pathlib import Path

import anyio

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tests"))

from host.postgres_server import MISSING, PostgresServer, find_binaries  # noqa: E402
from host_sim import Host, MemoryStore, ModelRequest, PostgresStore, SqliteStore, Store, TurnRunningError  # noqa: E402
from modular_sdk import ModularError  # noqa: E402

RACES = ("send", "fork", "job", "delete")


class Recording:
    """A slow model that repeats its history, and remembers what each call was shown."""

    name = "recording"

    def __init__(self) -> None:
        self.calls: list[tuple[float, str]] = []  # (when it began, what it was shown)

    async def respond(self, request: ModelRequest) -> str:
        shown = " | ".join(f"{e.text} => {e.reply}" for e in request.history) + f" || {request.text}"
        self.calls.append((anyio.current_time(), shown))
        await anyio.sleep(random.uniform(0.0, 0.006))
        return f"seen: {shown}"


async def _replayed(host: Host) -> str:
    """Every event ``subscribe(after=0)`` replays, as text."""
    out: list[str] = []
    async with host.subscribe(after=0) as events:
        while True:
            with anyio.move_on_after(0.3):
                out.append(repr(await events.__anext__()))
                continue
            return "\n".join(out)


def _store_bytes(kind: str, where: str) -> str:
    if kind == "sqlite":
        return "".join(p.read_bytes().decode("utf-8", "replace") for p in Path(where).parent.iterdir() if p.name.startswith(Path(where).name))
    import psycopg

    found: list[str] = []
    with psycopg.connect(where, autocommit=True) as conn:
        columns = conn.execute(
            "SELECT table_name, column_name FROM information_schema.columns WHERE table_schema = 'host_sim' "
            "AND data_type IN ('text', 'json', 'jsonb')"
        ).fetchall()
        for table, column in columns:
            for (value,) in conn.execute(f'SELECT "{column}"::text FROM host_sim."{table}"'):
                found.append(str(value))
    return "\n".join(found)


async def _round(kind: str, race: str, make: Callable[[], Store], where: str, index: int, second: str | None) -> str:
    marker = f"MK{index:04d}x{random.randrange(1 << 30):08x}"
    model = Recording()
    async with Host(store=make(), model=model) as host:
        chat = await host.sessions.create()
        planted = await chat.run(f"plant {marker}")
        await chat.run("after the plant")
        fork = await chat.fork() if race == "fork" else None
        forgot_at: list[float] = []
        outcome = ["erased"]

        async def erase() -> None:
            await anyio.sleep(random.uniform(0.0, 0.004))
            try:
                if race == "delete":
                    await host.sessions.delete(chat.id)
                else:
                    await host.lineage.forget(planted.turn.id, dry_run=False)
            except TurnRunningError:
                outcome[0] = "refused"
            forgot_at.append(anyio.current_time())

        async def work() -> None:
            try:
                if second is not None:
                    await anyio.to_thread.run_sync(_remote_send, second, where, (fork or chat).id)
                elif race == "job":
                    await (await host.start(chat, "a job")).wait()
                else:
                    await (fork or chat).run("racing")
            except ModularError:
                pass  # refused: deleted, or the turn failed

        async with anyio.create_task_group() as tg:
            tg.start_soon(work)
            tg.start_soon(erase)
        if outcome[0] == "refused":
            return "refused"
        if race != "delete":
            await (fork or chat).run("later")  # a model call after the erasure returned
        later = [shown for began, shown in model.calls if began > forgot_at[0]]
        places = [await _replayed(host), *later]
        if kind == "memory":
            state = await host._store.read_all()
            places.append(repr(state))
    if kind != "memory":
        places.append(_store_bytes(kind, where))
    return "lost" if any(marker in p for p in places) else "erased"


_REMOTE = textwrap.dedent(
    """
    import sys, anyio
    from host_sim import Host, PostgresStore, ModelRequest
    from modular_sdk import ModularError, SessionId

    class Echo:
        name = "recording"
        async def respond(self, request: ModelRequest) -> str:
            await anyio.sleep(0.003)
            return "seen: " + " | ".join(f"{e.text} => {e.reply}" for e in request.history)

    async def main() -> None:
        async with Host(store=PostgresStore(sys.argv[1]), model=Echo()) as host:
            print("ready", flush=True)
            for line in sys.stdin:
                try:
                    session = await host.sessions.get(SessionId(line.strip()))
                    await session.run("racing")
                except ModularError:
                    pass
                print("done", flush=True)

    anyio.run(main)
    """
)
_remote: dict[str, subprocess.Popen[str]] = {}


def _remote_send(script: str, dsn: str, session_id: str) -> None:
    proc = _remote.get(dsn)
    if proc is None:
        proc = _remote[dsn] = subprocess.Popen(
            [sys.executable, "-c", script, dsn], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True
        )
        assert proc.stdout is not None and proc.stdout.readline().strip() == "ready"
    assert proc.stdin is not None and proc.stdout is not None
    proc.stdin.write(session_id + "\n")
    proc.stdin.flush()
    proc.stdout.readline()


async def _measure(kind: str, rounds: int, hosts: int, server: PostgresServer | None) -> dict[str, dict[str, int]]:
    figures: dict[str, dict[str, int]] = {}
    with tempfile.TemporaryDirectory() as folder:
        memory = MemoryStore()
        dsn = server.database() if server is not None else ""
        for race in RACES if hosts == 1 else ("send", "fork"):
            counts = {"lost": 0, "refused": 0, "erased": 0}
            for index in range(rounds):
                if kind == "memory":
                    memory = MemoryStore()
                    where = ""

                    def make() -> Store:
                        return memory
                elif kind == "sqlite":
                    where = str(Path(folder) / f"{race}-{index}.sqlite")

                    def make() -> Store:
                        return SqliteStore(where)
                else:
                    where = dsn

                    def make() -> Store:
                        return PostgresStore(where)
                second = _REMOTE if hosts == 2 else None
                counts[await _round(kind, race, make, where, index, second)] += 1
            figures[race] = counts
    return figures


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rounds", type=int, default=40)
    parser.add_argument("--stores", default="memory,sqlite,postgres")
    parser.add_argument("--hosts", type=int, choices=(1, 2), default=1)
    args = parser.parse_args()
    kinds = ["postgres"] if args.hosts == 2 else args.stores.split(",")
    server: PostgresServer | None = None
    if "postgres" in kinds:
        binaries = find_binaries()
        if binaries is None:
            raise SystemExit(MISSING)
        server = PostgresServer(binaries)
    try:
        for kind in kinds:
            figures = anyio.run(_measure, kind, args.rounds, args.hosts, server if kind == "postgres" else None)
            for race, counts in figures.items():
                print(
                    f"{kind:9} hosts={args.hosts} forget/delete vs {race:6}: lost {counts['lost']:3} of {args.rounds}"
                    f"  (refused {counts['refused']}, erased {counts['erased']})",
                    flush=True,
                )
            print(json.dumps({kind: figures}), flush=True)
    finally:
        for proc in _remote.values():
            proc.kill()
        if server is not None:
            server.stop()


if __name__ == "__main__":
    main()

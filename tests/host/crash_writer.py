"""A host that writes until it is killed, and the harness that kills it: the crash test's engine.

Run as a script, this module is the *writer*: it opens ``Host(store=SqliteStore(PATH))``
and loops, with a seeded RNG and a few concurrent workers, over random operations (create a
root session, send a prompt, notify, fork a session, ``turn.fork()`` at a completed turn,
spawn from inside the ``/spawn`` slash command of the mod below). After each operation's
await returns it prints one acknowledgement line (JSON) carrying the ids it produced::

    python tests/host/crash_writer.py PATH --backend trio --seed 7

Imported, it is the *harness* (`run_crashes`) that ``tests/host/stores/test_crash_recovery.py``
and ``benchmarks/crash.py`` share: start a writer on a file, ``kill -9`` it at a random
moment, open the file read-only, run the store's one invariant checker
(``host_sim.stores._invariants.check``) and compare what the store holds with every
acknowledgement printed so far; then restart a writer on the same file, and again.
"""

from __future__ import annotations

import argparse
import json
import random
import signal
import sqlite3
import subprocess
import sys
import time
from collections.abc import Callable, Sequence
from contextlib import closing
from pathlib import Path
from typing import Literal
from urllib.parse import quote

import anyio
import attrs

from host_sim import Host, ModelRequest, ScriptedModel, SessionHandle, SqliteStore
from host_sim.stores import SessionRecord, StoredState, TurnRecord
from host_sim.testing import Violation, check
from modular_sdk import (
    AiPromptMessage,
    AiSessionHandle,
    AiTurnHandle,
    ModMetadata,
    SlashCommandContext,
    define_mod,
    slash_command,
)


async def read_back(store: SqliteStore) -> StoredState:
    await store.open()
    return await store.read_all()

WRITER: Path = Path(__file__).resolve()
"""This file: what the harness runs (``sys.executable WRITER PATH ...``)."""

Backend = Literal["asyncio", "trio"]
BACKENDS: tuple[Backend, Backend] = ("asyncio", "trio")


# -- acknowledgements ------------------------------------------------------------------


@attrs.frozen(kw_only=True)
class AckedSession:
    """A session a writer acknowledged: its id and lineage kind."""

    id: str
    kind: str


@attrs.frozen(kw_only=True)
class AckedTurn:
    """A finished turn a writer acknowledged."""

    id: str
    session_id: str
    ordinal: int
    status: str


@attrs.frozen(kw_only=True)
class Ack:
    """One acknowledgement line: the operation and everything it produced."""

    op: str
    sessions: tuple[AckedSession, ...] = ()
    turns: tuple[AckedTurn, ...] = ()

    def line(self) -> str:
        return json.dumps(
            {
                "op": self.op,
                "sessions": [[s.id, s.kind] for s in self.sessions],
                "turns": [[t.id, t.session_id, t.ordinal, t.status] for t in self.turns],
            },
            separators=(",", ":"),
        )

    @classmethod
    def parse(cls, line: str) -> Ack:
        data = json.loads(line)
        return cls(
            op=str(data["op"]),
            sessions=tuple(AckedSession(id=str(i), kind=str(k)) for i, k in data["sessions"]),
            turns=tuple(
                AckedTurn(id=str(i), session_id=str(s), ordinal=int(o), status=str(st)) for i, s, o, st in data["turns"]
            ),
        )


def _session_ack(session: AiSessionHandle) -> AckedSession:
    return AckedSession(id=session.id, kind=session.lineage.kind)


def _turn_ack(turn: AiTurnHandle) -> AckedTurn:
    return AckedTurn(id=turn.id, session_id=turn.session_id, ordinal=turn.ordinal, status=turn.status)


# -- the writer --------------------------------------------------------------------------


async def _spawn(argument: str | None, ctx: SlashCommandContext) -> str:
    """``/spawn [prompt]``: spawn a child of this session, and run a first turn in it when asked."""
    child = await ctx.session.spawn()
    turns: list[AckedTurn] = []
    if argument:
        turns.append(_turn_ack(await child.send(AiPromptMessage(text=argument))))
    return Ack(op="spawn", sessions=(_session_ack(child),), turns=tuple(turns)).line()


spawner = define_mod(
    metadata=ModMetadata(display_name="Crash spawner", description="Spawns sessions for the crash test"),
    id="crash-spawner",
    commands=[slash_command(id="spawn", description="Spawn a child session", run=_spawn)],
)


async def _respond(request: ModelRequest) -> str:
    """Fails the prompts that ask for it; takes a moment for the others, so kills land mid-turn."""
    if "fail" in request.text:
        raise RuntimeError("the crash test's model fails this prompt on purpose")
    if "slow" in request.text:
        await anyio.sleep(0.003)
    return f"re: {request.text[:40]}"


@attrs.define
class _Writer:
    host: Host
    rng: random.Random
    sessions: list[SessionHandle]
    forkable: list[SessionHandle]  # sessions with a completed turn in their history
    completed: list[AiTurnHandle]
    count: int = 0

    def ack(self, ack: Ack) -> None:
        print(ack.line(), flush=True)  # one write(2) per line: a kill never leaves half of one

    def text(self, *, may_fail: bool = True) -> str:
        self.count += 1
        moods = ["", "", " slow", " slow", " fail"] if may_fail else ["", " slow"]
        return f"prompt {self.count}{self.rng.choice(moods)}"

    async def step(self) -> None:
        rng = self.rng
        op = rng.choices(
            ["create", "send", "notify", "fork", "turn.fork", "spawn"], weights=[2, 6, 2, 3, 3, 3]
        )[0]
        if not self.sessions:
            op = "create"
        if (op == "fork" and not self.forkable) or (op == "turn.fork" and not self.completed):
            op = "send"  # (turns of earlier runs can be completed while none of their sessions is forkable)
        if op == "create":
            session = await self.host.sessions.create()
            self.sessions.append(session)
            self.ack(Ack(op=op, sessions=(_session_ack(session),)))
        elif op == "send":
            session = rng.choice(self.sessions)
            out = await self.host.submit(session, self.text())  # never raises: a failed turn is data
            turn = out.turn
            if turn is None:
                raise AssertionError(f"submit produced no turn: {out.error}")
            if turn.status == "completed":
                self.completed.append(turn)
                self.forkable.append(session)
            self.ack(Ack(op=op, turns=(_turn_ack(turn),)))
        elif op == "notify":
            session = rng.choice(self.sessions)
            turn = await session.notify(title=f"event {self.count}", body="done")
            self.completed.append(turn)
            self.forkable.append(session)
            self.ack(Ack(op=op, turns=(_turn_ack(turn),)))
        elif op in ("fork", "turn.fork"):
            forked = await (rng.choice(self.forkable) if op == "fork" else rng.choice(self.completed)).fork()
            assert isinstance(forked, SessionHandle)
            self.sessions.append(forked)
            self.forkable.append(forked)
            self.ack(Ack(op=op, sessions=(_session_ack(forked),)))
        else:
            session = rng.choice(self.sessions)
            prompt = self.text(may_fail=False) if rng.random() < 0.5 else ""  # send() raises on failure
            out = await self.host.submit(session, f"/spawn {prompt}".rstrip())
            if out.error is not None:
                raise AssertionError(f"/spawn failed: {out.error}")
            ack = Ack.parse(out.text)
            self.sessions.append(await self.host.sessions.get(ack.sessions[0].id))
            self.ack(ack)


async def all_sessions(host: Host) -> list[SessionHandle]:
    """Every session of the store, oldest first (listing pages newest first)."""
    out: list[SessionHandle] = []
    page = await host.sessions.list(limit=1000)
    out += page.sessions
    while page.next is not None:
        page = await host.sessions.list(limit=1000, after=page.next)
        out += page.sessions
    return out[::-1]


async def write_until_killed(path: str, seed: int, workers: int) -> None:
    """Open a host on ``path`` and write forever, acknowledging each operation on stdout."""
    print(Ack(op="start").line(), flush=True)
    rng = random.Random(seed)
    async with Host(mods=[spawner], model=ScriptedModel(_respond), store=SqliteStore(path)) as host:
        sessions = await all_sessions(host)
        forkable = [s for s in sessions if s.lineage.kind == "fork"]
        completed: list[AiTurnHandle] = []
        for session in rng.sample(sessions, min(10, len(sessions))):  # a few turns of earlier runs
            completed += [t for t in await session.turns() if t.status == "completed"]
        print(Ack(op="open").line(), flush=True)
        async with anyio.create_task_group() as tg:
            for _ in range(workers):
                tg.start_soon(_loop, _Writer(host, random.Random(rng.random()), sessions, forkable, completed))


async def _loop(writer: _Writer) -> None:
    while True:
        await writer.step()


# -- the harness -------------------------------------------------------------------------


@attrs.frozen(kw_only=True)
class CrashReport:
    """What a series of kills found. Every list is empty when the store kept its promises."""

    kills: int
    opened: int
    """Writer runs whose host opened (recovering the previous kill) before they were killed."""
    acknowledged: int
    """Operations acknowledged by the writers, over all runs."""
    lost: tuple[str, ...]
    """Acknowledged sessions or turns missing from the store, or stored differently."""
    torn: tuple[str, ...]
    """Violations of the invariant checker other than a turn left running by the kill."""
    failures: tuple[str, ...]
    """Writer runs that ended otherwise than by the kill, or printed a traceback."""
    interrupted: int
    """Turns found running after a kill (in flight: the next host marks them failed)."""
    seconds: float


@attrs.define
class Acknowledged:
    sessions: dict[str, AckedSession] = attrs.Factory(dict)
    turns: dict[str, AckedTurn] = attrs.Factory(dict)
    operations: int = 0

    def add(self, ack: Ack) -> None:
        self.operations += 1
        self.sessions.update((s.id, s) for s in ack.sessions)
        self.turns.update((t.id, t) for t in ack.turns)


async def _read_only(path: Path) -> StoredState:
    store = SqliteStore(path, read_only=True)
    try:
        return await read_back(store)
    finally:
        await store.close()


def read_store(path: Path) -> StoredState:
    """Everything the file holds, read through a read-only store (no lock, no recovery)."""
    return anyio.run(_read_only, path)


def holds_a_store(path: Path) -> bool:
    """Whether a writer got as far as making the store: a writer killed while it opened the
    very first time leaves no file, or an SQLite file with no table (the schema is made in one
    transaction), and nothing acknowledged, so there is nothing to read back yet."""
    if not path.exists():
        return False
    uri = f"file:{quote(str(path.absolute()))}?mode=ro"
    with closing(sqlite3.connect(uri, uri=True)) as conn:
        tables: int = conn.execute("SELECT count(*) FROM sqlite_master WHERE type = 'table'").fetchone()[0]
    return tables > 0


def compare(acked: Acknowledged, state: StoredState) -> tuple[list[str], list[str], list[str]]:
    """(lost, torn, ids of turns in flight) of ``state`` against what was acknowledged.

    A turn left ``running`` is in flight (tolerated: the next host marks it failed) unless
    it was acknowledged finished; every other violation of `check` is torn.
    """
    lost: list[str] = []
    sessions: dict[str, SessionRecord] = {s.id: s for s in state.sessions}
    turns: dict[str, TurnRecord] = {t.id: t for t in state.turns}
    for session in acked.sessions.values():
        record = sessions.get(session.id)
        if record is None:
            lost.append(f"acknowledged {session.kind} session {session.id!r} is not in the store")
        elif record.lineage.kind != session.kind:
            lost.append(f"session {session.id!r} was acknowledged a {session.kind}, stored a {record.lineage.kind}")
    for turn in acked.turns.values():
        stored = turns.get(turn.id)
        if stored is None:
            lost.append(f"acknowledged turn {turn.id!r} of {turn.session_id!r} is not in the store")
        elif (stored.session_id, stored.ordinal, stored.status) != (turn.session_id, turn.ordinal, turn.status):
            lost.append(
                f"turn {turn.id!r} was acknowledged {turn.status} at {turn.session_id!r}[{turn.ordinal}], "
                f"stored {stored.status} at {stored.session_id!r}[{stored.ordinal}]"
            )
    torn: list[str] = []
    running: list[str] = []
    for violation in check(state):
        if violation.code == "turn-running" and violation.subject not in acked.turns:
            running.append(violation.subject)
        else:
            torn.append(f"{violation.code}: {violation.message}")
    return lost, torn, running


def _lines(path: Path) -> list[str]:
    """The complete lines of a file (a kill may leave the last one unfinished)."""
    text = path.read_text(encoding="utf-8", errors="replace")
    return text.split("\n")[:-1]


@attrs.frozen(kw_only=True)
class WriterRun:
    """One writer, from its start to its kill."""

    acks: tuple[Ack, ...]
    """What it acknowledged, in order."""
    opened: bool
    """Whether its host had opened (and recovered the store) before the kill."""
    failure: str | None
    """How it failed (ended otherwise than by the kill, or wrote to stderr), or None."""


def run_writer_once(
    store: Path,
    logs: Path,
    *,
    backend: Backend,
    seed: int,
    delay: float,
    after: Literal["start", "open"] = "open",
    workers: int = 3,
    timeout: float = 60.0,
) -> WriterRun:
    """Start a writer on ``store`` and ``kill -9`` it ``delay`` seconds after it says ``after``.

    ``"start"``: the process has imported everything and is about to open its host (which
    recovers what the previous kill left); ``"open"``: its host is open and it writes.
    """
    out_path, err_path = logs / "writer.out", logs / "writer.err"
    with open(out_path, "wb") as out, open(err_path, "wb") as err:
        proc = subprocess.Popen(
            [sys.executable, str(WRITER), str(store), "--backend", backend, "--seed", str(seed), "--workers", str(workers)],
            stdout=out,
            stderr=err,
            stdin=subprocess.DEVNULL,
        )
    try:
        deadline = time.monotonic() + timeout
        wanted = 1 if after == "start" else 2  # the lines "start", then "open"
        while len(_lines(out_path)) < wanted and proc.poll() is None and time.monotonic() < deadline:
            time.sleep(0.005)
        if proc.poll() is None:
            time.sleep(delay)
    finally:
        if proc.poll() is None:
            proc.send_signal(signal.SIGKILL)
        code = proc.wait()
    lines = [Ack.parse(line) for line in _lines(out_path)]
    stderr = err_path.read_text(encoding="utf-8", errors="replace").strip()
    failure = None
    if code != -signal.SIGKILL or stderr:
        failure = f"writer ({backend}, seed {seed}) ended with status {code}, not by the kill:\n{stderr}"
    return WriterRun(
        acks=tuple(ack for ack in lines if ack.op not in ("start", "open")),
        opened=any(ack.op == "open" for ack in lines),
        failure=failure,
    )


def run_crashes(
    store: Path,
    logs: Path,
    *,
    kills: int,
    seed: int,
    min_delay: float = 0.05,
    max_delay: float = 0.3,
    during_open: float = 0.25,
    progress: Callable[[int, CrashReport], None] | None = None,
) -> CrashReport:
    """Kill ``kills`` writers on ``store`` one after another, checking the file after each kill.

    Writers alternate asyncio and trio. Each is killed ``min_delay``-``max_delay`` seconds
    after its host opened, or (a share ``during_open`` of the runs) after its process
    started, so that kills also land while a host opens and recovers the previous kill.
    Delays and writer seeds come from ``seed``; ``logs`` is a folder for the writers' output.
    """
    rng = random.Random(seed)
    acked = Acknowledged()
    lost: list[str] = []
    torn: list[str] = []
    failures: list[str] = []
    interrupted: set[str] = set()
    opened = 0
    start = time.perf_counter()

    def report(done: int) -> CrashReport:
        return CrashReport(
            kills=done,
            opened=opened,
            acknowledged=acked.operations,
            lost=tuple(lost),
            torn=tuple(torn),
            failures=tuple(failures),
            interrupted=len(interrupted),
            seconds=time.perf_counter() - start,
        )

    for run in range(kills):
        writer = run_writer_once(
            store,
            logs,
            backend=BACKENDS[run % 2],
            seed=rng.randrange(1 << 30),
            delay=rng.uniform(min_delay, max_delay),
            after="start" if rng.random() < during_open else "open",
        )
        opened += writer.opened
        if writer.failure is not None:
            failures.append(writer.failure)
        for ack in writer.acks:
            acked.add(ack)
        if holds_a_store(store):
            run_lost, run_torn, running = compare(acked, read_store(store))
            lost += [f"kill {run + 1}: {m}" for m in run_lost]
            torn += [f"kill {run + 1}: {m}" for m in run_torn]
            interrupted.update(running)
        elif acked.operations:
            lost.append(f"kill {run + 1}: {acked.operations} operations were acknowledged, yet the file holds no store")
        if progress is not None:
            progress(run + 1, report(run + 1))
    return report(kills)


def violations_after_recovery(store: Path) -> list[Violation]:
    """Open a host on ``store`` (it recovers what the kills left), close it, and check the file."""

    async def reopen() -> None:
        async with Host(mods=[spawner], store=SqliteStore(store)):
            pass

    anyio.run(reopen)
    return check(read_store(store))


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description="Write to a host-sim SQLite store until killed.")
    parser.add_argument("store")
    parser.add_argument("--backend", choices=BACKENDS, default="asyncio")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--workers", type=int, default=3)
    args = parser.parse_args(argv)
    anyio.run(write_until_killed, args.store, args.seed, args.workers, backend=args.backend)


if __name__ == "__main__":
    main()

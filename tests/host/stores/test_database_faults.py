"""Hosts outlive their database (API.md section 23): a real PostgreSQL server restarted (fast
or immediate), its connections killed, or stopped for 10 s, under two real host processes
that keep sending and run a job meanwhile; and a dead host's turn among several live hosts.

Each fault test asserts what an integrator relies on: both hosts take back their liveness
claim by themselves within 10 s of the server being back, no live host's turn or job is
failed as a dead host's (the watchers run through a whole grace period after the fault),
each turn has exactly one ``turn_started`` and one ``turn_finished`` row, none is left
running, and what callers got while the server was away is a `StoreError` that says it is
retryable.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from host_sim.testing import DEAD_HOST_GRACE, INTERRUPTED

from ..postgres_server import PostgresServer, find_binaries

HOST_SCRIPT = Path(__file__).parents[1] / "postgres_host.py"
OWNER_LOCK = 0x48530002  # the advisory lock class of a host's liveness claim (PostgresStore)
RETAKE_WITHIN = 10.0  # seconds: API.md section 23


@pytest.fixture(scope="module")
def server() -> Iterator[PostgresServer]:
    """A server of this module's own: these tests restart and stop it."""
    binaries = find_binaries()
    if binaries is None:
        pytest.skip("the PostgreSQL server binaries are not installed")
    made = PostgresServer(binaries, survives_crash=True)  # an immediate restart loses no acknowledged commit
    try:
        yield made
    finally:
        made.stop()


class HostProcess:
    """A host process (``postgres_host.py``) whose JSON lines are collected as they come."""

    def __init__(self, dsn: str, mode: str, *, name: str = "host", backend: str = "asyncio", session: str = "-") -> None:
        self.process = subprocess.Popen(
            [sys.executable, str(HOST_SCRIPT), dsn, session, mode, "--name", name, "--backend", backend],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            env={**os.environ, "PYTHONUNBUFFERED": "1"},
        )
        self.lines: list[dict[str, object]] = []
        self.raw: list[str] = []
        self._reader = threading.Thread(target=self._read, daemon=True)
        self._reader.start()

    def _read(self) -> None:
        assert self.process.stdout is not None
        for line in self.process.stdout:
            self.raw.append(line)
            if line.startswith("{"):
                self.lines.append(json.loads(line))

    def wait_for(self, predicate: object, timeout: float = 60.0) -> dict[str, object]:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            for line in list(self.lines):
                if callable(predicate) and predicate(line):
                    return line
            if self.process.poll() is not None and not self._reader.is_alive():
                break
            time.sleep(0.05)
        err = self.process.stderr.read() if self.process.poll() is not None and self.process.stderr else ""
        raise AssertionError(f"the host process never printed what was awaited; it printed {self.raw[-20:]}\n{err}")

    def turns(self) -> list[dict[str, object]]:
        return [line for line in self.lines if "turn" in line]

    def send(self, line: str) -> None:
        assert self.process.stdin is not None
        self.process.stdin.write(line + "\n")
        self.process.stdin.flush()

    def send_eof(self) -> None:
        assert self.process.stdin is not None
        self.process.stdin.close()

    def finish(self, timeout: float = 90.0) -> None:
        try:
            code = self.process.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            self.process.kill()
            raise AssertionError(f"the host process did not close; it printed {self.raw[-20:]}") from None
        self._reader.join(10)
        err = self.process.stderr.read() if self.process.stderr else ""
        self._close()
        assert code == 0, f"the host process failed ({code}):\n{err[-3000:]}"

    def kill(self) -> None:
        if self.process.poll() is None:
            self.process.kill()
            self.process.wait(30)
        self._reader.join(10)
        self._close()

    def _close(self) -> None:
        for pipe in (self.process.stdin, self.process.stdout, self.process.stderr):
            if pipe is not None and not pipe.closed:
                try:
                    pipe.close()
                except OSError:
                    pass


def _claims(server: PostgresServer, dbname: str) -> set[int]:
    """The owner keys whose liveness claim is held now."""
    out = server.psql(
        "SELECT objid FROM pg_locks WHERE locktype = 'advisory' AND granted AND objsubid = 2 "
        f"AND classid = {OWNER_LOCK} AND database = (SELECT oid FROM pg_database WHERE datname = '{dbname}')"
    )
    return {int(x) for x in out.split()}


def _owner(line: dict[str, object]) -> int:
    return int(str(line["host"]).removeprefix("pg-"))


def _one_event_per_turn(server: PostgresServer, dbname: str) -> None:
    for kind in ("turn_started", "turn_finished"):
        wrong = server.psql(
            f"SELECT t.id || ':' || count(e.seq) FROM host_sim.turns t LEFT JOIN host_sim.events e "
            f"ON e.turn_id = t.id AND e.kind = '{kind}' GROUP BY t.id HAVING count(e.seq) <> 1",
            dbname,
        )
        assert wrong == "", f"turns without exactly one {kind} row: {wrong}"


def _fault(server: PostgresServer, dbname: str, fault: str) -> None:
    if fault == "restart-fast":
        server.restart("fast")
    elif fault == "restart-immediate":
        server.restart("immediate")
    elif fault == "terminate-backends":
        assert server.terminate_backends(dbname) >= 2
    else:  # refused for 10 s
        server.halt("fast")
        time.sleep(10)
        server.start()


@pytest.mark.parametrize("fault", ["restart-fast", "restart-immediate", "terminate-backends", "stopped-10s"])
def test_two_live_hosts_take_back_their_claim_and_lose_no_turn_or_job_to_a_database_fault(
    server: PostgresServer, fault: str
) -> None:
    dsn = server.database("fault")
    dbname = dsn.rsplit("dbname=", 1)[1]
    hosts = [HostProcess(dsn, "churn", name="a", backend="asyncio"), HostProcess(dsn, "churn", name="b", backend="trio")]
    try:
        owners = [_owner(h.wait_for(lambda line: line.get("open") is True)) for h in hosts]
        for h in hosts:  # both are sending
            h.wait_for(lambda line: "turn" in line)
        assert set(owners) <= _claims(server, dbname)
        before = [len(h.turns()) for h in hosts]

        _fault(server, dbname, fault)
        back = time.monotonic()
        while not set(owners) <= _claims(server, dbname):
            assert time.monotonic() - back < RETAKE_WITHIN, (
                f"after {fault}, the hosts' claims {owners} were not all taken back within {RETAKE_WITHIN} s "
                f"(held: {_claims(server, dbname)})"
            )
            time.sleep(0.1)

        # Through a whole grace period (and more) after the fault: a watcher that took a live
        # host for dead would fail its running job and turns now.
        time.sleep(DEAD_HOST_GRACE + 3)
        for h, count in zip(hosts, before, strict=True):  # both still send, and turns complete
            h.wait_for(lambda line, h=h, count=count: len(h.turns()) > count + 5 and line.get("status") == "completed")
            assert _owner(h.lines[0]) in _claims(server, dbname)
        for h in hosts:
            h.send("release")
            h.send("stop")
        for h in hosts:
            h.finish()
    finally:
        for h in hosts:
            h.kill()

    for h in hosts:
        job = next(line for line in h.lines if "job" in line and "status" in line)
        assert job["status"] == "finished", f"a live host's job ended {job} after {fault}"
        failures = [line for line in h.lines if "exception" in line]
        for failure in failures:  # what a caller got while the server was away
            assert failure["exception"] == "StoreError" and failure["retryable"] is True, failure
            assert "retryable" in str(failure["message"]), failure
        for turn in h.turns():
            assert turn["error"] != INTERRUPTED, f"a live host's turn was failed as a dead host's: {turn}"
        if fault == "stopped-10s":  # 10 s of refusals: the callers saw them, as retryable errors
            assert failures, "no send failed while the server was stopped for 10 s"
    running = server.psql("SELECT id || ' ' || owner || ' ' || ordinal FROM host_sim.turns WHERE status = 'running'", dbname)
    assert running == "", f"turns left running after {fault}: {running}; the hosts said {[h.lines[-12:] for h in hosts]}"
    assert server.psql(f"SELECT count(*) FROM host_sim.turns WHERE error = '{INTERRUPTED}'", dbname) == "0"
    assert server.psql("SELECT string_agg(status, ',' ORDER BY status) FROM host_sim.jobs", dbname) == "finished,finished"
    _one_event_per_turn(server, dbname)


def test_a_dead_hosts_turn_is_claimed_by_exactly_one_of_several_live_hosts_and_no_other_send_fails(
    server: PostgresServer,
) -> None:
    dsn = server.database("claim")
    dbname = dsn.rsplit("dbname=", 1)[1]
    live = [HostProcess(dsn, "churn", name=f"live{i}", backend=("asyncio", "trio")[i % 2]) for i in range(3)]
    dead: HostProcess | None = None
    try:
        for h in live:
            h.wait_for(lambda line: line.get("open") is True)
        # the dead host's session, and its turn running in the model when it is killed
        maker = HostProcess(dsn, "serve")
        maker.send(json.dumps({"op": "create"}))
        session = str(maker.wait_for(lambda line: "session" in line)["session"])
        maker.send_eof()
        maker.finish()
        dead = HostProcess(dsn, "hang", session=session)
        deadline = time.monotonic() + 60
        while not any(r.strip() == "in-model" for r in dead.raw):
            assert time.monotonic() < deadline, dead.raw
            time.sleep(0.05)
        dead.kill()
        killed = time.monotonic()
        while server.psql("SELECT count(*) FROM host_sim.turns WHERE status = 'running' AND session_id = "
                          f"'{session}'", dbname) != "0":  # fmt: skip
            assert time.monotonic() - killed < 15, "the dead host's turn was not failed within 15 s"
            time.sleep(0.1)
        for h in live:
            h.send("release")
            h.send("stop")
        for h in live:
            h.finish()
    finally:
        for h in live:
            h.kill()
        if dead is not None:
            dead.kill()

    (status, error) = server.psql(f"SELECT status || '|' || error FROM host_sim.turns WHERE session_id = '{session}'", dbname).split("|", 1)
    assert (status, error) == ("failed", INTERRUPTED)
    for h in live:  # the claim failed nobody's unrelated send, nor named another session's turn
        assert not [line for line in h.lines if "exception" in line], h.lines
        assert all(t["status"] == "completed" for t in h.turns())
    finished = server.psql(
        "SELECT count(*) FROM host_sim.events e JOIN host_sim.turns t ON t.id = e.turn_id "
        f"WHERE e.kind = 'turn_finished' AND t.session_id = '{session}'",
        dbname,
    )
    assert finished == "1", f"the dead host's turn has {finished} turn_finished rows, not one"
    _one_event_per_turn(server, dbname)

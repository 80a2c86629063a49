"""The event spool under faults: whole events or none, applied at most once, deleted only after."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import anyio
import pytest

from host_sim import Host, MemoryStore, SqliteStore, TaskRef, write_event
from host_sim.stores._traces import TraceStore
from modular_sdk import InvalidArgumentError

pytestmark = pytest.mark.anyio

# A writer that dies (os._exit, as a kill -9 would) at one point of write_event.
WRITER = textwrap.dedent(
    """
    import os, sys
    from host_sim.traces import _spool
    point = sys.argv[2]
    if point == "before-rename":
        _spool.os.replace = lambda *a: os._exit(9)
    _spool.write_event(sys.argv[1], {"type": "commit", "output_id": "chg-1", "commit": "abcdef1", "id": "evt_killed"})
    """
)

# A host that dies right after applying an event, before deleting its file.
CONSUMER = textwrap.dedent(
    """
    import os, sys, anyio
    from pathlib import Path
    from host_sim import Host, SqliteStore
    from host_sim.traces import _spool
    def die(self, path):
        os._exit(9)
    _spool.SpoolConsumer._delete = die
    async def main():
        async with Host(store=SqliteStore(sys.argv[1]), spool=sys.argv[2]):
            await anyio.sleep(30)
    anyio.run(main)
    """
)


def run_python(code: str, *args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-c", code, *args], capture_output=True, text=True, cwd=cwd, timeout=120)


async def chat_with_output(store: SqliteStore | MemoryStore, output_id: str = "chg-1") -> str:
    async with Host(store=store) as h:
        trace = await h.traces.for_task(TaskRef(source="github", id="1"))
        chat = await h.sessions.create(trace=trace.id)
        assert h._engine is not None and h._engine.report_output is not None
        await h._engine.report_output(chat.id, "proposal", output_id)
        return chat.id


async def wait_until_empty(spool: Path, timeout: float = 30) -> None:
    with anyio.fail_after(timeout):
        while any(n.endswith(".json") for n in os.listdir(spool)):
            await anyio.sleep(0.05)


async def test_a_writer_killed_before_the_rename_leaves_no_event_and_no_broken_read(tmp_path: Path) -> None:
    spool = tmp_path / "spool"
    store = SqliteStore(tmp_path / "s.sqlite")
    await chat_with_output(store)
    killed = run_python(WRITER, str(spool), "before-rename", cwd=tmp_path)
    assert killed.returncode == 9
    leftovers = os.listdir(spool)
    assert [n for n in leftovers if n.endswith(".json")] == [] and len(leftovers) == 1  # only the temporary file
    write_event(spool, {"type": "output", "session_id": "ses_nope", "output_id": "x", "kind": "k", "id": "evt_a"})
    async with Host(store=SqliteStore(tmp_path / "s.sqlite"), spool=spool) as h:
        await wait_until_empty(spool)
        trace = await h.traces.find("chg-1")
        assert trace.outputs[0].commit is None  # the killed writer's event never existed
    assert (spool / "failed" / "evt_a.json").exists()  # an unknown session: set aside with its reason
    assert "no session 'ses_nope'" in (spool / "failed" / "evt_a.json.reason").read_text()
    assert any(n.endswith(".tmp") for n in os.listdir(spool))  # never read as an event


async def test_an_event_applied_then_killed_before_deletion_is_not_applied_twice(tmp_path: Path) -> None:
    spool = tmp_path / "spool"
    path = tmp_path / "s.sqlite"
    await chat_with_output(SqliteStore(path))
    write_event(spool, {"type": "commit", "output_id": "chg-1", "commit": "1111111", "id": "evt_once"})
    died = run_python(CONSUMER, str(path), str(spool), cwd=tmp_path)
    assert died.returncode == 9, died.stderr
    assert (spool / "evt_once.json").exists()  # applied, not deleted
    # The same id again with other content: applying it twice would be visible.
    write_event(spool, {"type": "commit", "output_id": "chg-1", "commit": "2222222", "id": "evt_once"})
    store = SqliteStore(path)
    async with Host(store=store, spool=spool) as h:
        await wait_until_empty(spool)
        assert (await h.traces.find("chg-1")).outputs[0].commit == "1111111"
        assert isinstance(store, TraceStore) and await store.event_applied("evt_once")
    assert not (spool / "failed").exists()


async def test_100_events_from_4_concurrent_writer_processes_are_all_applied_exactly_once(tmp_path: Path) -> None:
    spool = tmp_path / "spool"
    path = tmp_path / "s.sqlite"
    store = SqliteStore(path)
    async with Host(store=store, spool=spool) as h:
        chat = await h.sessions.create()
        writer = textwrap.dedent(
            """
            import sys
            from host_sim import write_event
            for i in range(25):
                write_event(sys.argv[1], {"type": "output", "session_id": sys.argv[2], "output_id": f"w{sys.argv[3]}-{i}", "kind": "proposal"})
            """
        )
        processes = [
            await anyio.open_process([sys.executable, "-c", writer, str(spool), chat.id, str(n)], cwd=tmp_path)
            for n in range(4)
        ]
        for process in processes:
            assert await process.wait() == 0
        await wait_until_empty(spool)
        trace = await h.traces.find(chat.id)
        ids = [o.output_id for o in trace.outputs]
        assert sorted(ids) == sorted(f"w{n}-{i}" for n in range(4) for i in range(25))
        assert len(ids) == len(set(ids)) == 100
        state = await store.read_traces()
        assert len(state.outputs) == 100 and len(state.traces) == 1
    assert not (spool / "failed").exists()


async def test_leftover_events_are_applied_at_start_and_emit_writes_them(tmp_path: Path) -> None:
    spool = tmp_path / "spool"
    path = tmp_path / "s.sqlite"
    chat = await chat_with_output(SqliteStore(path))
    emitted = subprocess.run(
        [sys.executable, "-m", "host_sim", "emit", "--spool", str(spool), "output",
         json.dumps({"session_id": chat, "output_id": "chg-2", "kind": "proposal"})],
        capture_output=True, text=True, cwd=tmp_path, timeout=120,
    )  # fmt: skip
    assert emitted.returncode == 0, emitted.stderr
    assert (spool / f"{emitted.stdout.strip()}.json").exists()
    bad = subprocess.run(
        [sys.executable, "-m", "host_sim", "emit", "--spool", str(spool), "commit", '{"output_id": "chg-2"}'],
        capture_output=True, text=True, cwd=tmp_path, timeout=120,
    )  # fmt: skip
    assert bad.returncode == 2 and "a 'commit' event needs 'commit'" in bad.stderr
    write_event(spool, {"type": "commit", "output_id": "chg-2", "commit": "cafe123"})
    async with Host(store=SqliteStore(path), spool=spool) as h:
        await wait_until_empty(spool)
        trace = await h.traces.find("cafe123")
        assert {o.output_id: o.commit for o in trace.outputs} == {"chg-1": None, "chg-2": "cafe123"}


async def test_events_that_can_never_apply_are_set_aside_with_their_reason(tmp_path: Path) -> None:
    spool = tmp_path / "spool"
    spool.mkdir()
    (spool / "evt_0_garbage.json").write_text("{not json")
    (spool / "evt_1_type.json").write_text('{"type": "delete", "id": "evt_1_type"}')
    write_event(spool, {"type": "commit", "output_id": "chg-404", "commit": "abcdef1", "id": "evt_2_unknown"})
    async with Host(store=MemoryStore(), spool=spool):
        await wait_until_empty(spool)
    reasons = {p.name: p.read_text() for p in (spool / "failed").glob("*.reason")}
    assert "not an event" in reasons["evt_0_garbage.json.reason"]
    assert "event type 'delete'" in reasons["evt_1_type.json.reason"]
    assert "no output 'chg-404'" in reasons["evt_2_unknown.json.reason"]


def test_write_event_refuses_what_the_host_would_not_apply(tmp_path: Path) -> None:
    with pytest.raises(InvalidArgumentError, match="event type 'delete'"):
        write_event(tmp_path, {"type": "delete"})
    with pytest.raises(InvalidArgumentError, match="needs 'session_id'"):
        write_event(tmp_path, {"type": "output", "output_id": "x", "kind": "k"})
    with pytest.raises(InvalidArgumentError, match="an event id is"):
        write_event(tmp_path, {"type": "commit", "output_id": "x", "commit": "abcdef1", "id": "../escape"})
    with pytest.raises(InvalidArgumentError, match="a JSON object with a 'type'"):
        write_event(tmp_path, ["commit"])  # type: ignore[arg-type]
    assert os.listdir(tmp_path) == []
    ident = write_event(tmp_path, {"type": "commit", "output_id": "x", "commit": "abcdef1", "extra": [1, 2]})
    assert json.loads((tmp_path / f"{ident}.json").read_text())["id"] == ident


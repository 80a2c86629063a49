"""The event spool under faults: whole events or none, applied at most once, deleted only after."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import textwrap
from datetime import UTC, datetime
from pathlib import Path

import anyio
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from host_sim import Host, MemoryStore, SqliteStore, TaskRef, TraceStore, UnknownTraceError, write_event
from host_sim.stores import StoreError
from host_sim.testing import SpoolConsumer, TraceLinker
from modular_sdk import InvalidArgumentError

pytestmark = pytest.mark.anyio

# A writer that dies (os._exit, as a kill -9 would) at one point of write_event.
WRITER = textwrap.dedent(
    """
    import os, sys
    from host_sim.testing import spool as _spool
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
    from host_sim.testing import spool as _spool
    def die(self, folder, name):
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
        await h._engine.report_output(chat.id, "proposal", output_id, None, None)
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
    spool.mkdir()  # emit writes into a spool folder, never makes one
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



# -- the spool is hostile input (API.md section 19) ---------------------------------------
#
# Each attack below is planted next to a good event, in a spool a running host consumes:
# the attack must be set aside (or skipped, when it cannot be moved safely), never read
# through a link, never block, never write outside the spool, and the good event must
# still be applied.


def _stolen(output_id: str) -> bytes:
    """What an attacker would like applied: an output event linking ``output_id`` to any session."""
    return json.dumps({"type": "output", "session_id": "ses_any", "output_id": output_id, "kind": "k"}).encode()


def _plant_non_ascii_name(spool: Path, outside: Path) -> None:
    fd = os.open(os.fsencode(spool) + b"/ev\xff.json", os.O_WRONLY | os.O_CREAT, 0o644)
    os.write(fd, _stolen("stolen-by-name"))
    os.close(fd)


def _plant_fifo(spool: Path, outside: Path) -> None:
    os.mkfifo(spool / "x.json")


def _plant_link_to_dev_zero(spool: Path, outside: Path) -> None:
    (spool / "evt_zero.json").symlink_to("/dev/zero")


def _plant_link_to_outside_file(spool: Path, outside: Path) -> None:
    secret = outside / "secret.json"
    secret.write_bytes(_stolen("stolen-through-link"))
    (spool / "evt_link.json").symlink_to(secret)


def _plant_oversized_file(spool: Path, outside: Path) -> None:
    event = _stolen("stolen-by-size")
    (spool / "evt_big.json").write_bytes(event[:-1] + b" " * (1024 * 1024) + b"}")  # valid JSON, 1 MiB + a bit


def _plant_folder(spool: Path, outside: Path) -> None:
    (spool / "evt_dir.json").mkdir()


def _plant_symlinked_failed(spool: Path, outside: Path) -> None:
    (spool / "failed").symlink_to(outside, target_is_directory=True)
    (spool / "evt_garbage.json").write_text("{not json")


def _plant_reason_link(spool: Path, outside: Path) -> None:
    (outside / "victim").write_text("keep me\n")
    (spool / "failed").mkdir()
    (spool / "failed" / "evt_garbage.json.reason").symlink_to(outside / "victim")
    (spool / "evt_garbage.json").write_text("{not json")


ATTACKS = {
    "a file named b'ev\\xff.json'": _plant_non_ascii_name,
    "a FIFO named x.json": _plant_fifo,
    "a symlink to /dev/zero": _plant_link_to_dev_zero,
    "a symlink to a file outside the spool": _plant_link_to_outside_file,
    "a file over max_event_bytes": _plant_oversized_file,
    "a folder named evt_dir.json": _plant_folder,
    "a symlinked failed/": _plant_symlinked_failed,
    "a planted failed/X.reason symlink": _plant_reason_link,
}


def _outside_listing(outside: Path) -> dict[str, bytes]:
    return {p.name: p.read_bytes() for p in outside.iterdir()}


@pytest.mark.parametrize("attack", list(ATTACKS))
async def test_a_hostile_spool_entry_is_set_aside_and_the_good_event_after_it_still_applies(
    attack: str, tmp_path: Path
) -> None:
    spool, outside = tmp_path / "spool", tmp_path / "outside"
    spool.mkdir()
    outside.mkdir()
    ATTACKS[attack](spool, outside)
    before = _outside_listing(outside)
    with anyio.fail_after(30):  # a FIFO that blocked the consumer would hang the host's close
        async with Host(store=MemoryStore(), spool=spool) as h:
            chat = await h.sessions.create()
            write_event(spool, {"type": "output", "session_id": chat.id, "output_id": "good-1", "kind": "proposal", "id": "zz_good"})
            while not await _has_trace(h, chat.id):  # the good event gives the chat its trace
                await anyio.sleep(0.05)
            trace = await h.traces.find(chat.id)
            assert [o.output_id for o in trace.outputs] == ["good-1"]  # and nothing stolen
            for stolen in ("stolen-by-name", "stolen-through-link", "stolen-by-size"):
                with pytest.raises(UnknownTraceError):
                    await h.traces.find(stolen)
    assert _outside_listing(outside) == before  # nothing written, moved or replaced outside
    assert not (spool / "zz_good.json").exists()
    failed = spool / "failed"
    if attack == "a symlinked failed/":
        assert failed.is_symlink() and (spool / "evt_garbage.json").exists()  # skipped: no safe place to move it
        return
    reasons = {p.name: p.read_text() for p in failed.iterdir() if p.name.endswith(".reason")}
    assert len(reasons) == 1 and all(not (failed / name).is_symlink() for name in reasons)
    assert not any("stolen" in reason for reason in reasons.values())  # the content is never copied
    moved = [p for p in failed.iterdir() if not p.name.endswith(".reason")]
    assert len(moved) == 1 and not os.path.lexists(spool / moved[0].name)
    if "symlink" in attack and "reason" not in attack:
        assert moved[0].is_symlink()  # moved as the link it is, never read through


async def _has_trace(h: Host, session_id: str) -> bool:
    try:
        await h.traces.find(session_id)
    except UnknownTraceError:
        return False
    return True


@pytest.mark.parametrize(
    ("entry", "why"),
    [
        (b"ev\xff.json", "is not an event file's"),
        (b"x.json", "a FIFO, not a regular file"),
        (b"evt_zero.json", "a symbolic link, not a regular file"),
        (b"evt_big.json", "over the host's max_event_bytes=1048576"),
    ],
)
async def test_the_reason_an_entry_was_set_aside_names_it_and_the_rule(entry: bytes, why: str, tmp_path: Path) -> None:
    spool, outside = tmp_path / "spool", tmp_path / "outside"
    spool.mkdir()
    outside.mkdir()
    for plant in (_plant_non_ascii_name, _plant_fifo, _plant_link_to_dev_zero, _plant_oversized_file):
        plant(spool, outside)
    with anyio.fail_after(30):
        async with Host(store=MemoryStore(), spool=spool):
            while os.path.lexists(os.fsencode(spool) + b"/" + entry):
                await anyio.sleep(0.05)
    reason = os.fsencode(spool) + b"/failed/" + entry + b".reason"
    with open(reason, encoding="utf-8") as file:
        text = file.read()
    assert why in text and repr(os.fsdecode(entry)) in text


async def test_a_smaller_max_event_bytes_sets_aside_events_over_it(tmp_path: Path) -> None:
    spool = tmp_path / "spool"
    with anyio.fail_after(30):
        async with Host(store=MemoryStore(), spool=spool, max_event_bytes=200) as h:
            chat = await h.sessions.create()
            write_event(spool, {"type": "output", "session_id": chat.id, "output_id": "x" * 300, "kind": "k", "id": "evt_a"})
            write_event(spool, {"type": "output", "session_id": chat.id, "output_id": "small", "kind": "k", "id": "evt_b"})
            await wait_until_empty(spool)
            assert [o.output_id for o in (await h.traces.find(chat.id)).outputs] == ["small"]
    assert "over the host's max_event_bytes=200" in (spool / "failed" / "evt_a.json.reason").read_text()


async def test_a_spool_path_that_is_not_a_folder_is_refused_when_the_host_starts(tmp_path: Path) -> None:
    file = tmp_path / "spool"
    file.write_text("not a folder")
    for path in (file, file / "below"):
        host = Host(store=MemoryStore(), spool=path)
        with pytest.raises(InvalidArgumentError, match=r"spool '.*spool.*' is not a folder the host can read .*pass the path of a folder") as caught:
            async with host:
                pass
        assert caught.value.argument == "spool" and caught.value.value == path


@pytest.mark.parametrize("bad", [0, -1, 1.5, True, "1000", None])
def test_max_event_bytes_must_be_a_positive_int(bad: object) -> None:
    with pytest.raises(InvalidArgumentError, match=r"max_event_bytes must be a positive int .* got " + re.escape(repr(bad))) as caught:
        Host(max_event_bytes=bad)  # type: ignore[arg-type]
    assert caught.value.argument == "max_event_bytes" and caught.value.value == bad


_entry_names = st.one_of(
    st.binary(min_size=1, max_size=40).map(lambda b: b.replace(b"/", b"_").replace(b"\x00", b"_") + b".json"),
    st.text(alphabet=st.characters(codec="ascii"), min_size=1, max_size=20).map(lambda t: (t.replace("/", "_").replace("\x00", "_") + ".json").encode()),
).filter(lambda n: not n.startswith(b".") and n != b"failed")


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    entries=st.dictionaries(_entry_names, st.one_of(st.binary(max_size=300), st.sampled_from(["fifo", "link", "dir"])), min_size=1, max_size=6),
    backend=st.sampled_from(["asyncio", "trio"]),
)
def test_no_entry_stops_a_scan_or_is_left_half_handled(entries: dict[bytes, bytes | str], backend: str, tmp_path_factory: pytest.TempPathFactory) -> None:
    """Whatever the entries, one scan applies what is an event and sets aside the rest."""
    spool = tmp_path_factory.mktemp("spool")
    root = os.fsencode(spool)
    for name, content in entries.items():
        path = root + b"/" + name
        if content == "fifo":
            os.mkfifo(path)
        elif content == "link":
            os.symlink(b"/dev/zero", path)
        elif content == "dir":
            os.mkdir(path)
        else:
            assert isinstance(content, bytes)
            with open(path, "wb") as file:
                file.write(content)

    async def one_scan() -> int:
        store = MemoryStore()
        await store.open()
        now = lambda: datetime.now(UTC)  # noqa: E731
        consumer = SpoolConsumer(spool, store, TraceLinker(store, now), now, max_event_bytes=1 << 20)
        with anyio.fail_after(20):
            return await consumer.scan()

    assert anyio.run(one_scan, backend=backend) == 0  # random bytes are never an event of a session this store holds
    left = [n for n in os.listdir(root) if n != b"failed"]
    assert left == []  # every entry was set aside, none left for a later scan to trip over
    failed = set(os.listdir(root + b"/failed"))
    assert failed == set(entries) | {n + b".reason" for n in entries}


NASTY_EVENTS: dict[str, str | bytes] = {
    "a lone surrogate in an id": '{"type": "output", "session_id": "@S", "output_id": "\\ud800", "kind": "k"}',
    "a NUL in an id": '{"type": "output", "session_id": "@S", "output_id": "q\\u0000", "kind": "k"}',
    "a 5,000-digit integer": '{"type": "output", "session_id": "@S", "output_id": "n", "kind": "k", "n": ' + "9" * 5000 + "}",
    "a float that overflows": '{"type": "output", "session_id": "@S", "output_id": "f", "kind": "k", "n": 1e999}',
    "NaN": '{"type": "output", "session_id": "@S", "output_id": "nan", "kind": "k", "n": NaN}',
    "nesting 100,000 deep": "[" * 100_000,
    "bytes that are not UTF-8": b'{"type": "commit", "output_id": "\xff", "commit": "abcdef1"}',
}  # fmt: skip


@pytest.mark.parametrize("nasty", list(NASTY_EVENTS))
async def test_an_event_no_store_could_hold_is_set_aside_saying_why(nasty: str, tmp_path: Path) -> None:
    spool = tmp_path / "spool"
    async with Host(store=SqliteStore(tmp_path / "s.sqlite"), spool=spool) as h:
        chat = await h.sessions.create()
        content = NASTY_EVENTS[nasty]
        (spool / "evt_0_nasty.json").write_bytes(content if isinstance(content, bytes) else content.replace("@S", chat.id).encode())
        write_event(spool, {"type": "output", "session_id": chat.id, "output_id": "good-1", "kind": "k", "id": "evt_1_good"})
        with anyio.fail_after(30):
            await wait_until_empty(spool)
        assert [o.output_id for o in (await h.traces.find(chat.id)).outputs] == ["good-1"]
    reason = (spool / "failed" / "evt_0_nasty.json.reason").read_text()
    assert reason.startswith(("not an event the host applies: ", "'output_id' of")) and len(reason) < 2100


@pytest.mark.parametrize(
    ("extra", "match"),
    [
        (float("nan"), r"is not strict JSON \(Out of range float values"),
        (10**30, r"the number '1000000000000000000000000000000' is an integer of 31 digits, outside the signed 64-bit range"),
    ],
)
def test_write_event_refuses_numbers_the_host_would_not_read(extra: object, match: str, tmp_path: Path) -> None:
    with pytest.raises(InvalidArgumentError, match=match) as caught:
        write_event(tmp_path, {"type": "commit", "output_id": "x", "commit": "abcdef1", "n": extra})
    assert caught.value.argument == "event" and os.listdir(tmp_path) == []
    with pytest.raises(InvalidArgumentError, match=r"'output_id' of a 'commit' event holds a NUL character, got 'x\\x00'"):
        write_event(tmp_path, {"type": "commit", "output_id": "x\x00", "commit": "abcdef1"})


async def test_a_store_that_fails_for_a_while_only_delays_the_spool(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    spool = tmp_path / "spool"
    failures = 3
    applied = MemoryStore.event_applied

    async def flaky(self: MemoryStore, event_id: str) -> bool:
        nonlocal failures
        if failures:
            failures -= 1
            raise StoreError("the database is restarting")
        return await applied(self, event_id)

    monkeypatch.setattr(MemoryStore, "event_applied", flaky)
    with anyio.fail_after(30):
        async with Host(store=MemoryStore(), spool=spool) as h:
            chat = await h.sessions.create()
            write_event(spool, {"type": "output", "session_id": chat.id, "output_id": "late", "kind": "k"})
            await wait_until_empty(spool)
            assert [o.output_id for o in (await h.traces.find(chat.id)).outputs] == ["late"]
    assert failures == 0 and not (spool / "failed").exists()

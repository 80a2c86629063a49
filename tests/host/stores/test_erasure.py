"""Every copy goes (API.md section 19): a marker planted through every public path that
stores text is gone, after ``forget`` and after ``sessions.delete``, from every public
read-out and from every byte the store keeps, on every store.

"Every place" is read from each store's own schema (``sqlite_master``,
``information_schema``), so a table added later without registering with the one erasure
walk (``host_sim/stores/_erasure.py``) fails here.
"""

from __future__ import annotations

import json
import secrets
import sqlite3
import tempfile
from collections.abc import Callable, Iterator
from pathlib import Path
from unittest import mock

import anyio
import attrs
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from host_sim import (
    Host,
    LineageArtifact,
    MemoryStore,
    ModelRequest,
    PostgresStore,
    ScriptedModel,
    SqliteStore,
    Store,
    ToolCall,
    TraceStore,
    TurnHandle,
    TurnRunningError,
    UnknownTraceError,
    Window,
    write_event,
)
from host_sim.testing import ERASED_BY_STORE, KEPT, PLACES, STORE_COLUMNS, Place, RecordStore, check
from host_sim.testing import erasure as _erasure
from modular_sdk import (
    ActionContext,
    ActionStateError,
    AiContributions,
    ModMetadata,
    SlashCommandContext,
    ToolContext,
    action,
    define_mod,
    slash_command,
    tool,
    widget,
)

pytestmark = pytest.mark.anyio

REGISTERED = {p.table for p in PLACES} | set(KEPT) | set(ERASED_BY_STORE)


def _decided(place: Place) -> set[str]:
    return {name for name, _ in place.erased} | set(place.kept) | ({place.stamp} if place.stamp else set())


def unregistered_columns(table: str, columns: list[str]) -> list[str]:
    """Columns of a place's table that nobody decided about (neither erased nor kept)."""
    place = next((p for p in PLACES if p.table == table), None)
    if place is None:
        return []
    return [f"column {table}.{c} is not registered with the erasure walk" for c in columns if c not in _decided(place) | set(STORE_COLUMNS)]


@attrs.frozen
class Note:
    text: str


async def save_note(payload: Note, ctx: ActionContext) -> str:
    return f"saved {payload.text}"


async def echo(argument: str | None, ctx: SlashCommandContext) -> str:
    """``/echo out KIND`` reports an output of that kind; ``/echo boom TEXT`` fails quoting
    TEXT; anything else is echoed."""
    if argument is not None and argument.startswith("out "):
        await ctx.report_output(kind=argument[4:], output_id=f"chg-{secrets.token_hex(4)}")
    if argument is not None and argument.startswith("boom "):
        raise RuntimeError(f"cannot echo {argument[5:]!r}")
    return f"echo: {argument}"


async def recall(payload: Note, ctx: ToolContext) -> str:
    """Recalls a note; one whose text says 'report' is also reported as an output of that kind."""
    if "report" in payload.text:
        await ctx.report_output(kind=f"recalled {payload.text}", output_id=f"rec-{secrets.token_hex(4)}")
    return f"recalled {payload.text}"


def note_card(data: Note) -> str:
    return f"[note] {data.text}"


MOD = define_mod(
    metadata=ModMetadata(display_name="Notes", description="Notes the user confirms"),
    commands=[slash_command(id="echo", description="Echo the argument", run=echo)],
    ai=AiContributions(tools=[tool(name="recall", description="Recall a note", input_type=Note, run=recall)]),
    actions=[action(type="note.save", description="Save a note", payload_type=Note, run=save_note)],
    widgets=[widget(id="note-card", description="A note as a card", data_type=Note, render=note_card)],
)


def respond(request: ModelRequest) -> str | ToolCall:
    """Replies quoting the prompt, proposing a note of it and placing a widget showing it,
    after recalling it with a tool call (its input and output quote it); a prompt with
    'fail' fails, the model's error quoting it (as real model errors do); 'fail quoting'
    fails quoting the history."""
    if request.text.startswith("prompt ") and not request.tool_results:
        return ToolCall(name="recall", input={"text": request.text})
    if request.text == "fail quoting":  # the model's error quotes the conversation it was given
        raise RuntimeError(f"the model refused a conversation of {[entry.text for entry in request.history]!r}")
    if "fail" in request.text:
        raise RuntimeError(f"the model refused {request.text!r}")
    payload = json.dumps({"text": request.text})
    card = f'<mod-widget type="note-card">{payload}</mod-widget>'
    return f"you said {request.text} <mod-action type=\"note.save\">{payload}</mod-action> {card}"


def make_store(kind: str, tmp_path: Path, request: pytest.FixtureRequest) -> tuple[Callable[[], Store], str]:
    """A store of one kind (reopened by calling again) and where it keeps its bytes."""
    if kind == "memory":
        memory = MemoryStore()
        return (lambda: memory), ""
    if kind == "sqlite":
        path = tmp_path / "erasure.sqlite"
        return (lambda: SqliteStore(path)), str(path)
    dsn: str = request.getfixturevalue("postgres_dsn")
    return (lambda: PostgresStore(dsn)), dsn


@attrs.define
class Planted:
    chat: str
    fork: str
    first_turn: str
    failed_turn: str
    action_ids: list[str]
    quoting_turn: str = ""


async def plant(host: Host, marker: str, *, outputs: bool, spool: Path | None = None) -> Planted:
    """The marker, through every public path that stores text."""
    traces = isinstance(host._store, TraceStore)
    chat = await host.sessions.create()
    # A command typed where turn 0 is asked: its argument and text, and the output it reports.
    typed = await host.submit(chat, f"/echo out typed-{marker}" if traces else f"/echo typed {marker}")
    assert typed.error is None
    # Turn 0: prompt, a tool call (reporting an output), reply, a proposed action.
    first = await host.submit(chat, f"prompt report {marker}")
    assert first.turn is not None and first.error is None
    assert marker in repr(first.turn.tool_calls)
    if traces:
        outputs_now = await outputs_of(host)
        assert f"typed-{marker}" in outputs_now and f"recalled prompt report {marker}" in outputs_now
    # The turn after it fails, its model's error quoting the conversation (turn 0's prompt),
    # and so does a job like it: their own text has no marker, their errors do.
    quoting = await host.submit(chat, "fail quoting")
    assert quoting.turn is not None and quoting.error is not None and marker in quoting.error
    quoting_job = await (await host.start(chat, "fail quoting")).wait()
    assert quoting_job.error is not None and marker in quoting_job.error
    assert marker in repr(first.turn.widgets)  # a widget the reply placed: its data
    # Memory (API.md section 20): a record's text and data (and why it was retracted), a
    # summary read from turn 0, a record derived from it; the store's full-text index of them.
    fact = await host.memory.record(
        chat, f"fact {marker}", kind="fact", cites=(first.turn.id,), data={"note": f"data {marker}"}
    )
    summary = await host.memory.record(
        chat, f"summary {marker}", kind="summary", read_from=Window(first=first.turn.id, last=first.turn.id)
    )
    await host.memory.record(chat, f"derived {marker}", kind="note", derived_from=(summary.id,))
    await host.memory.retract(fact.id, reason=f"moved {marker}")
    assert len(await host.memory.search(marker)) == 2  # the summary and what was derived from it
    await host.lineage.retract(first.turn.id, reason=f"wrong {marker}")  # a retraction's reason (and its event)
    job = await host.start(chat, f"/echo job {marker}")  # a command run as a job
    assert (await job.wait()).error is None
    job = await host.start(chat, f"job {marker}")  # a prompt run as a job: its text and result
    assert (await job.wait()).error is None
    action_ids: list[str] = []
    if traces:
        pending = await host.pending_actions(chat)
        assert len(pending) == 2 and all(marker in p.payload["text"] for p in pending)  # type: ignore[operator]
        confirmed = await host.confirm(pending[1].id, by="auditor", reason=f"why {marker}")  # payload and reason kept until erased
        assert confirmed.error is None and marker in confirmed.text
        action_ids = [p.id for p in pending]
    await chat.notify(title=f"note {marker}", body=f"body {marker}")  # a notification turn
    fork = await chat.fork()
    assert (await host.submit(fork, f"fork prompt {marker}")).error is None  # rests on turn 0
    elsewhere = await host.sessions.create()  # an integrator's edges: one citing turn 0, one the chat's file
    cited = LineageArtifact(type="turn", source_id=first.turn.id, label=f"cites {marker}")
    await host.lineage.add_edge(chat.id, elsewhere.id, "used_result_of", cited)
    if outputs:
        noted = LineageArtifact(type="file", source_id="notes.md", label=f"file {marker}")
        await host.lineage.add_edge(elsewhere.id, chat.id, "continued_from", noted)
    if outputs and traces:
        assert (await host.submit(chat, f"/echo out kind-{marker}")).error is None  # a trace output's kind
    if outputs and spool is not None:  # an output another process reported through the spool
        write_event(spool, {"type": "output", "session_id": chat.id, "output_id": "spooled-1", "kind": f"spooled-{marker}"})
        with anyio.fail_after(10):
            while True:
                try:
                    await host.traces.find("spooled-1")
                    break
                except UnknownTraceError:
                    await anyio.sleep(0.01)
    failed = await host.submit(chat, f"fail {marker}")  # the model's error quotes the prompt
    assert failed.turn is not None and failed.error is not None and marker in failed.error
    return Planted(
        chat=chat.id, fork=fork.id, first_turn=first.turn.id, failed_turn=failed.turn.id, action_ids=action_ids,
        quoting_turn=quoting.turn.id,
    )


async def outputs_of(host: Host) -> str:
    """Every trace output the host's store keeps, as text."""
    store = host._store
    assert isinstance(store, TraceStore)
    return repr((await store.read_traces()).outputs)


def _turn_text(turn: TurnHandle) -> str:
    return repr((turn.message, turn.reply, turn.error, turn.tool_calls, turn.widgets))


async def read_outs(host: Host, planted: Planted) -> dict[str, str]:
    """Every public read-out of what was planted, by name."""
    store = host._store
    out: dict[str, str] = {}
    for name, session in (("chat", planted.chat), ("fork", planted.fork)):
        out[f"log({name})"] = repr([_turn_text(e) if isinstance(e, TurnHandle) else repr(e) for e in await host.log(session)])
        out[f"transcript({name})"] = await host.transcript(session)
        if isinstance(store, TraceStore):
            out[f"pending_actions({name})"] = repr(await host.pending_actions(session))
            out[f"actions({name})"] = repr(await host.actions(session))
    out["jobs"] = repr([(j.text, j.status, j.submission) for j in (await host.jobs(limit=10_000)).jobs])
    out["notifications"] = repr([_turn_text(t) for t in await host.notifications(unread_only=False)])
    out["lineage page"] = await host.lineage.html()
    if isinstance(store, RecordStore):  # a store of an integrator's own may keep no memory records
        out["memory"] = repr((await host.memory.list(include_retracted=True, limit=1000)).records)
        out["memory search"] = repr([await host.memory.search(word) for word in ("fact", "summary", "derived")])
    out["edges"] = repr((await store.read_all()).edges)
    if isinstance(store, TraceStore):
        out["traces"] = repr(await store.read_traces())
        out["actions"] = repr([await store.get_action(a) for a in planted.action_ids])
    return out


def _strings(root: object) -> Iterator[str]:
    """Every str reachable from ``root`` (what an in-memory store holds)."""
    seen: set[int] = set()
    stack = [root]
    while stack:
        value = stack.pop()
        if id(value) in seen:
            continue
        seen.add(id(value))
        if isinstance(value, str):
            yield value
        elif isinstance(value, bytes):
            yield value.decode("utf-8", "replace")
        elif isinstance(value, dict):
            stack += [*value.keys(), *value.values()]
        elif isinstance(value, (list, tuple, set, frozenset)):
            stack += list(value)
        elif hasattr(value, "__dict__") or hasattr(type(value), "__slots__"):
            stack += list(getattr(value, "__dict__", {}).values())
            for cls in type(value).__mro__:
                stack += [getattr(value, s) for s in getattr(cls, "__slots__", ()) if hasattr(value, s)]
            if hasattr(value, "items") and callable(value.items):  # mapping proxies, frozen JSON
                stack += [x for pair in value.items() for x in pair]


def sqlite_survivors(path: str, marker: str) -> list[str]:
    """Where the marker survives in a closed SQLite store: its tables (every one of them is
    registered with the erasure walk) and every byte of its files."""
    found: list[str] = []
    conn = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
    try:
        tables = [name for (name,) in conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'")]
        found += [f"table {t!r} is not registered with the erasure walk" for t in tables if t not in REGISTERED]
        for table in tables:
            columns = [row[1] for row in conn.execute(f"PRAGMA table_info({table})")]
            found += unregistered_columns(table, columns)
            for row in conn.execute(f"SELECT * FROM {table}"):
                found += [f"{table}.{c}" for c, v in zip(columns, row) if isinstance(v, str) and marker in v]
    finally:
        conn.close()
    for file in Path(path).parent.iterdir():
        if file.name.startswith(Path(path).name) and marker.encode() in file.read_bytes():
            found.append(f"the bytes of {file.name}")
    return found


def postgres_survivors(dsn: str, marker: str) -> list[str]:
    """Where the marker survives in a PostgreSQL store: every text and JSON column of every
    table of its schema (MVCC keeps old row versions on disk until VACUUM: docs/stores.md)."""
    import psycopg

    found: list[str] = []
    with psycopg.connect(dsn, autocommit=True) as conn:
        tables = [t for (t,) in conn.execute("SELECT table_name FROM information_schema.tables WHERE table_schema = 'host_sim'")]
        found += [f"table {t!r} is not registered with the erasure walk" for t in tables if t not in REGISTERED]
        for table in tables:
            names = [c for (c,) in conn.execute(
                "SELECT column_name FROM information_schema.columns WHERE table_schema = 'host_sim' AND table_name = %s",
                (table,),
            )]
            found += unregistered_columns(table, names)
        columns = conn.execute(
            "SELECT table_name, column_name FROM information_schema.columns WHERE table_schema = 'host_sim' "
            "AND data_type IN ('text', 'json', 'jsonb', 'character varying', 'character')"
        ).fetchall()
        for table, column in columns:
            rows = conn.execute(
                f'SELECT count(*) FROM host_sim."{table}" WHERE strpos("{column}"::text, %s) > 0', (marker,)
            ).fetchone()
            if rows is not None and rows[0]:
                found.append(f"{table}.{column}")
    return found


async def survivors(kind: str, where: str, store: Store, marker: str) -> list[str]:
    if kind == "memory":
        return ["the memory store"] if any(marker in s for s in _strings(store)) else []
    if kind == "sqlite":
        return sqlite_survivors(where, marker)
    return postgres_survivors(where, marker)


def check_read_outs(read: dict[str, str], marker: str) -> None:
    leaks = [name for name, text in read.items() if marker in text]
    assert not leaks, f"the erased marker is still shown by {leaks}"


@pytest.mark.parametrize("kind", ["memory", "sqlite", "postgres"])
async def test_a_forgotten_turn_leaves_no_copy_of_its_text_in_any_read_out_or_byte_of_the_store(
    kind: str, tmp_path: Path, request: pytest.FixtureRequest
) -> None:
    marker = f"mk{secrets.token_hex(8)}"
    other = f"keep{secrets.token_hex(8)}"  # text elsewhere, which forget must not touch
    store, where = make_store(kind, tmp_path, request)
    async with Host(mods=[MOD], model=ScriptedModel(respond), store=store()) as host:
        elsewhere = await host.sessions.create()
        await host.submit(elsewhere, f"prompt report {other}")  # its tool reports an output that forget leaves
        planted = await plant(host, marker, outputs=False)
        before = await read_outs(host, planted)
        assert all(marker in before[name] for name in ("log(chat)", "log(fork)", "jobs", "notifications", "lineage page"))
        await host.lineage.forget(planted.first_turn, dry_run=False)
        quoting = await host.sessions.turn(planted.quoting_turn)  # not forgotten: it failed; its error quoted turn 0
        assert (quoting.status, quoting.message.text, quoting.error, quoting.erased_at) == ("failed", "fail quoting", "(erased)", None)  # type: ignore[union-attr]
        await host.lineage.forget(planted.failed_turn, dry_run=False)
        check_read_outs(await read_outs(host, planted), marker)
        for action_id in planted.action_ids:
            with pytest.raises(ActionStateError, match="was erased") as refused:
                await host.confirm(action_id)
            assert refused.value.action_id == action_id
        assert other in await host.transcript(elsewhere)
        assert f"recalled prompt report {other}" in await outputs_of(host)
    reopened = store()
    async with Host(mods=[MOD], model=ScriptedModel(respond), store=reopened) as host:  # what is durable
        check_read_outs(await read_outs(host, planted), marker)
        assert check(await reopened.read_all()) == []  # the structure is whole: fsck finds nothing
    assert await survivors(kind, where, reopened, marker) == []
    reopened = store()
    async with Host(mods=[MOD], model=ScriptedModel(respond), store=reopened) as host:  # and deleting after forgetting
        await host.sessions.delete(planted.chat)
        check_read_outs(await read_outs(host, planted), marker)
        assert f"recalled prompt report {other}" in await outputs_of(host)
    assert await survivors(kind, where, reopened, marker) == []


@pytest.mark.parametrize("kind", ["memory", "sqlite", "postgres"])
async def test_a_deleted_session_leaves_no_copy_of_its_text_in_any_read_out_or_byte_of_the_store(
    kind: str, tmp_path: Path, request: pytest.FixtureRequest
) -> None:
    marker = f"mk{secrets.token_hex(8)}"
    store, where = make_store(kind, tmp_path, request)
    opened = store()
    spool = tmp_path / "spool" if isinstance(opened, TraceStore) else None
    if spool is not None:
        spool.mkdir()
    async with Host(mods=[MOD], model=ScriptedModel(respond), store=opened, spool=spool) as host:
        planted = await plant(host, marker, outputs=True, spool=spool)
        await host.sessions.delete(planted.chat)
        check_read_outs(await read_outs(host, planted), marker)
        for action_id in planted.action_ids:
            with pytest.raises(ActionStateError, match="erased"):
                await host.confirm(action_id)
    reopened = store()
    async with Host(mods=[MOD], model=ScriptedModel(respond), store=reopened) as host:
        check_read_outs(await read_outs(host, planted), marker)
        assert check(await reopened.read_all()) == []
    assert await survivors(kind, where, reopened, marker) == []
    if spool is not None:  # an applied event leaves nothing behind in the spool
        assert [f for f in spool.rglob("*") if f.is_file() and marker.encode() in f.read_bytes()] == []


async def test_an_action_proposed_after_its_session_was_deleted_cannot_be_confirmed() -> None:
    async with Host(mods=[MOD], model=ScriptedModel(respond), store=MemoryStore()) as host:
        chat = await host.sessions.create()
        proposed = await host.submit(chat, "remember this")
        (pending,) = proposed.actions
        await host.sessions.delete(chat.id)  # nothing more is sent to it (SessionDeletedError)
        with pytest.raises(ActionStateError, match="was erased at .*its session deleted.* cannot be confirmed") as refused:
            await host.confirm(pending.id)
        assert refused.value.state == "erased"


@pytest.mark.parametrize("kind", ["memory", "sqlite", "postgres"])
@pytest.mark.parametrize("what", ["forget", "delete"])
async def test_erasing_while_a_turn_of_an_affected_session_runs_says_to_wait_and_erases_nothing(
    what: str, kind: str, tmp_path: Path, request: pytest.FixtureRequest
) -> None:
    entered, release = anyio.Event(), anyio.Event()

    async def slow(request: ModelRequest) -> str:
        if request.text == "slow":
            entered.set()  # the turn is begun (durable, running) before its model is called
            await release.wait()
        return f"re: {request.text}"

    store, _ = make_store(kind, tmp_path, request)
    async with Host(model=ScriptedModel(slow), store=store()) as host:
        chat = await host.sessions.create()
        first = await host.submit(chat, "first secret")
        assert first.turn is not None
        fork = await chat.fork()
        async with anyio.create_task_group() as tg:
            tg.start_soon(host.submit, fork, "slow")  # the fork's running turn rests on "first secret"
            await entered.wait()
            with pytest.raises(TurnRunningError, match="is still running.*wait for it") as busy:
                if what == "forget":
                    await host.lineage.forget(first.turn.id, dry_run=False)
                else:
                    await host.sessions.delete(chat.id)
            assert busy.value.session_id == fork.id
            assert isinstance(busy.value, RuntimeError)
            release.set()
        assert "first secret" in await host.transcript(chat)  # nothing was erased
        await host.lineage.forget(first.turn.id, dry_run=False)  # once it finished, it goes
        assert "first secret" not in await host.transcript(fork)


def test_every_table_of_a_new_sqlite_store_is_registered_with_the_erasure_walk(tmp_path: Path) -> None:
    path = tmp_path / "schema.sqlite"

    async def make() -> None:
        store = SqliteStore(path)
        await store.open()
        await store.close()

    anyio.run(make)
    assert sqlite_survivors(str(path), "no such marker") == []


# What a store made before erasure reached errors, actions and outputs holds: the rules
# that refused those changes, and an actions table without erased_at.
_OLD_RULES = """
DROP TRIGGER finished_turns_never_change;
CREATE TRIGGER finished_turns_never_change BEFORE UPDATE ON turns
WHEN OLD.status != 'running' AND NOT (
    OLD.erased_at IS NULL AND NEW.erased_at IS NOT NULL
    AND NEW.id = OLD.id AND NEW.session_id = OLD.session_id AND NEW.ordinal = OLD.ordinal
    AND NEW.message_id = OLD.message_id AND NEW.author = OLD.author AND NEW.runner_id = OLD.runner_id
    AND NEW.status = OLD.status AND NEW.started_at = OLD.started_at
    AND NEW.finished_at IS OLD.finished_at AND NEW.error IS OLD.error
)
BEGIN SELECT RAISE(ABORT, 'a finished turn never changes (except once, to be forgotten)'); END;
DROP TRIGGER actions_never_change;
CREATE TRIGGER actions_never_change BEFORE UPDATE ON actions BEGIN SELECT RAISE(ABORT, 'a proposed action never changes'); END;
DROP TRIGGER trace_outputs_never_change;
CREATE TRIGGER trace_outputs_never_change BEFORE UPDATE ON trace_outputs BEGIN SELECT RAISE(ABORT, 'a trace output never changes'); END;
ALTER TABLE actions DROP COLUMN erased_at;
DROP INDEX trace_outputs_by_turn;
DROP INDEX trace_outputs_by_position;
ALTER TABLE trace_outputs DROP COLUMN turn_id;
ALTER TABLE trace_outputs DROP COLUMN position;
"""


async def test_a_sqlite_store_made_before_erasure_reached_actions_and_errors_is_read_as_it_is_and_erased_once_a_host_writes_it(
    tmp_path: Path,
) -> None:
    marker = f"mk{secrets.token_hex(8)}"
    path = tmp_path / "older.sqlite"
    async with Host(mods=[MOD], model=ScriptedModel(respond), store=SqliteStore(path)) as host:
        chat = await host.sessions.create()
        first = await host.submit(chat, f"prompt report {marker}")
        failed = await host.submit(chat, f"fail {marker}")
        assert first.turn is not None and failed.turn is not None and len(first.actions) == 1
    conn = sqlite3.connect(path)
    conn.executescript(_OLD_RULES)
    conn.close()
    reader = SqliteStore(path, read_only=True)  # a reader never upgrades: the missing column reads as unset
    await reader.open()
    found = await reader.get_action(first.actions[0].id)
    assert found is not None and found[0].erased_at is None
    assert [(o.turn_id, o.position) for o in (await reader.read_traces()).outputs] == [(None, None)]
    await reader.close()
    later = f"mk{secrets.token_hex(8)}"
    async with Host(mods=[MOD], model=ScriptedModel(respond), store=SqliteStore(path)) as host:
        await host.lineage.forget(first.turn.id, dry_run=False)
        await host.lineage.forget(failed.turn.id, dry_run=False)
        assert await host.pending_actions(chat.id) == []
        assert marker not in await host.transcript(chat.id)
        # An output reported before outputs kept their turn is reached by its session only;
        # one reported now is reached by its turn.
        assert f"recalled prompt report {marker}" in await outputs_of(host)
        other = await host.sessions.create()
        second = await host.submit(other, f"prompt report {later}")
        assert second.turn is not None and f"recalled prompt report {later}" in await outputs_of(host)
        await host.lineage.forget(second.turn.id, dry_run=False)
        assert later not in await outputs_of(host)
        await host.sessions.delete(chat.id)
    assert sqlite_survivors(str(path), marker) == [] and sqlite_survivors(str(path), later) == []


Step = tuple[str, int]  # (what, which session: an index into the sessions made so far)
_STEPS = st.lists(
    st.tuples(st.sampled_from(["prompt", "command", "command job", "prompt job", "fail", "fork", "notify"]), st.integers(0, 5)),
    min_size=1,
    max_size=14,
)


def _sqlite_text(path: Path) -> str:
    """Every text cell of every table of a SQLite store (read beside the host that writes it)."""
    conn = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
    try:
        tables = [t for (t,) in conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'")]
        return "\n".join(v for t in tables for row in conn.execute(f"SELECT * FROM {t}") for v in row if isinstance(v, str))
    finally:
        conn.close()


async def _forget_exactly_the_plan(steps: list[Step], pick: int, folder: Path | None) -> None:
    path = None if folder is None else folder / f"{secrets.token_hex(4)}.sqlite"
    store: Store = MemoryStore() if path is None else SqliteStore(path)
    async with Host(mods=[MOD], model=ScriptedModel(respond), store=store) as host:
        sessions = [await host.sessions.create()]
        typed_at: dict[str, tuple[str, int]] = {}  # marker -> (session, the ordinal it was typed at)
        turn_of: dict[str, str] = {}  # marker -> the turn its text went into
        for index, (what, which) in enumerate(steps):
            session = sessions[which % len(sessions)]
            marker = f"mk{index}x"
            if what == "fork":
                if any(t.status == "completed" for t in await session.turns()):
                    sessions.append(await session.fork())
                continue
            typed_at[marker] = (session.id, len(await session.turns()))
            if what == "notify":
                turn_of[marker] = (await session.notify(title=marker, body=marker)).id
                continue
            text = {"prompt": f"p {marker}", "prompt job": f"p {marker}", "fail": f"fail {marker}"}.get(what, f"/echo {marker}")
            if what.endswith("job"):
                submitted = await (await host.start(session, text)).wait()
            else:
                submitted = await host.submit(session, text)
            if submitted.turn is not None:
                turn_of[marker] = submitted.turn.id
        own = [t for s in sessions for t in await s.turns() if t.session_id == s.id]
        if not own:
            return
        plan = await host.lineage.forget(own[pick % len(own)].id, dry_run=False)
        planned_turns = {ref.turn_id for ref in plan.turns}
        planned_positions = {(ref.session_id, ref.ordinal) for ref in plan.turns}
        shown = "\n".join(
            [
                text
                for s in sessions
                for text in (await read_outs(host, Planted(chat=s.id, fork=s.id, first_turn="", failed_turn="", action_ids=[]))).values()
            ]
        )
        held = "\n".join(_strings(store)) if path is None else _sqlite_text(path)
        assert check(await host._store.read_all()) == []  # structure and derived labels stay sound
        for marker, position in typed_at.items():
            if turn_of.get(marker) in planned_turns or position in planned_positions:
                assert marker not in shown and marker not in held, f"{marker} (typed at {position}) survived forget"
            else:
                assert marker in held, f"{marker} (typed at {position}) was erased, but the plan {plan.turns} did not reach it"


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(steps=_STEPS, pick=st.integers(0, 100))
def test_forget_erases_every_copy_of_exactly_the_planned_text(steps: list[Step], pick: int) -> None:
    anyio.run(_forget_exactly_the_plan, steps, pick, None)


@settings(max_examples=15, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(steps=_STEPS, pick=st.integers(0, 100))
def test_forget_erases_every_copy_of_exactly_the_planned_text_in_sqlite_as_in_memory(steps: list[Step], pick: int) -> None:
    # Key lists of 2 (not 200): every plan here spans several statements per place.
    with tempfile.TemporaryDirectory() as folder, mock.patch.object(_erasure, "_CHUNK", 2):
        anyio.run(_forget_exactly_the_plan, steps, pick, Path(folder))


def store_only(inner: Store) -> Store:
    """``inner`` seen as a `Store` and nothing more: no `IntegratorStore`, no `TraceStore` (a store
    of an integrator's own), so the host keeps invocations and jobs in its memory."""

    def delegate(name: str) -> Callable[..., object]:
        return lambda self, *args, **kwargs: getattr(self.inner, name)(*args, **kwargs)

    members = {name: delegate(name) for name in dir(Store) if not name.startswith("_")}
    cls = type("StoreOnly", (), {"__init__": lambda self, wrapped: setattr(self, "inner", wrapped), **members})
    wrapped: Store = cls(inner)
    return wrapped


async def test_a_log_kept_in_memory_beside_a_plain_store_is_erased_by_the_same_walk() -> None:
    marker = f"mk{secrets.token_hex(8)}"
    async with Host(mods=[MOD], model=ScriptedModel(respond), store=store_only(MemoryStore())) as host:
        chat = await host.sessions.create()
        await host.submit(chat, f"/echo typed {marker}")
        first = await host.submit(chat, f"prompt {marker}")
        assert first.turn is not None
        await (await host.start(chat, f"/echo job {marker}")).wait()  # typed where turn 1 is asked next
        await (await host.start(chat, f"p {marker}")).wait()  # turn 1, which rests on turn 0
        assert marker in repr(await host.log(chat)) and marker in repr([j.text for j in (await host.jobs()).jobs])
        await host.lineage.forget(first.turn.id, dry_run=False)
        planted = Planted(chat=chat.id, fork=chat.id, first_turn=first.turn.id, failed_turn="", action_ids=[])
        check_read_outs(await read_outs(host, planted), marker)


async def test_on_postgresql_vacuum_full_leaves_no_byte_of_the_erased_text_in_the_table_files(
    request: pytest.FixtureRequest,
) -> None:
    """The documented MVCC limit, and its remedy: erased rows' old versions stay in the table
    files until VACUUM; after ``VACUUM FULL`` (and a checkpoint) no file of the store's
    tables, their TOAST tables or indexes holds a byte of the text (the WAL still may, until
    its segments are recycled: docs/embedding.md)."""
    import psycopg

    server = request.getfixturevalue("postgres")
    dsn: str = request.getfixturevalue("postgres_dsn")
    marker = f"mk{secrets.token_hex(8)}"
    async with Host(mods=[MOD], model=ScriptedModel(respond), store=PostgresStore(dsn)) as host:
        planted = await plant(host, marker, outputs=True)
        await host.sessions.delete(planted.chat)
    with psycopg.connect(dsn, autocommit=True) as conn:
        tables = [t for (t,) in conn.execute("SELECT tablename FROM pg_tables WHERE schemaname = 'host_sim'")]
        conn.execute("VACUUM FULL " + ", ".join(f"host_sim.{t}" for t in tables))
        conn.execute("CHECKPOINT")
        files = [
            path
            for (path,) in conn.execute(
                "SELECT pg_relation_filepath(c.oid) FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace "
                "WHERE n.nspname = 'host_sim' OR c.oid IN (SELECT reltoastrelid FROM pg_class k JOIN pg_namespace m "
                "ON m.oid = k.relnamespace WHERE m.nspname = 'host_sim') "
                "OR c.oid IN (SELECT indexrelid FROM pg_index WHERE indrelid IN (SELECT reltoastrelid FROM pg_class))"
            )
            if path is not None
        ]
    assert files
    held = [p for p in files for f in sorted(server.data.glob(p + "*")) if marker.encode() in f.read_bytes()]
    assert held == []


@pytest.mark.parametrize("kind", ["memory", "sqlite", "postgres"])
async def test_forgetting_a_failed_turn_erases_the_model_error_that_quoted_its_prompt_and_keeps_that_it_failed(
    kind: str, tmp_path: Path, request: pytest.FixtureRequest
) -> None:
    store, _ = make_store(kind, tmp_path, request)
    async with Host(mods=[MOD], model=ScriptedModel(respond), store=store()) as host:
        chat = await host.sessions.create()
        failed = await host.submit(chat, "fail: my card is 4111 1111")
        assert failed.turn is not None and failed.turn.error is not None and "4111" in failed.turn.error
        await host.lineage.forget(failed.turn.id, dry_run=False)
        turn = await host.sessions.turn(failed.turn.id)
        assert (turn.status, turn.error, turn.erased_at is not None) == ("failed", "(erased)", True)
    async with Host(mods=[MOD], model=ScriptedModel(respond), store=store()) as host:
        turn = await host.sessions.turn(failed.turn.id)
        assert (turn.status, turn.error) == ("failed", "(erased)")


@pytest.mark.parametrize("kind", ["memory", "sqlite", "postgres"])
async def test_forget_erases_the_errors_that_quote_the_forgotten_text_and_no_other_error(
    kind: str, tmp_path: Path, request: pytest.FixtureRequest
) -> None:
    store, _ = make_store(kind, tmp_path, request)
    async with Host(mods=[MOD], model=ScriptedModel(respond), store=store()) as host:
        chat = await host.sessions.create()
        before = await host.submit(chat, "fail before it was asked")  # failed before: its model never saw it
        first = await host.submit(chat, "p the forgotten prompt")
        assert first.turn is not None and before.turn is not None
        fork = await chat.fork()
        in_fork = await host.submit(fork, "fail quoting")  # a fork's failed turn whose model saw it
        command = await host.submit(chat, "/echo boom p the forgotten prompt")  # a command error quoting it verbatim
        assert command.error is not None and "p the forgotten prompt" in command.error
        elsewhere = await host.sessions.create()
        unrelated = await host.submit(elsewhere, "fail quoting")  # another session's: never saw it
        assert in_fork.turn is not None and unrelated.turn is not None
        turns = {"in fork": in_fork.turn.id, "before": before.turn.id, "unrelated": unrelated.turn.id}
        await host.lineage.forget(first.turn.id, dry_run=False)

        async def check_errors(host: Host) -> None:
            assert (await host.sessions.turn(turns["in fork"])).error == "(erased)"
            kept = (await host.sessions.turn(turns["before"])).error
            assert kept is not None and kept.endswith("the model refused 'fail before it was asked'")
            kept = (await host.sessions.turn(turns["unrelated"])).error
            assert kept is not None and kept.endswith("the model refused a conversation of []")
            (invocation,) = [e for e in await host.log(chat.id) if not isinstance(e, TurnHandle)]
            assert "forgotten" not in repr((invocation.error, invocation.text))
            assert invocation.argument == "boom p the forgotten prompt"  # what was typed is no error: it stays
            assert "forgotten" not in await host.transcript(fork.id)

        await check_errors(host)
    async with Host(mods=[MOD], model=ScriptedModel(respond), store=store()) as host:
        await check_errors(host)


async def test_on_postgresql_an_event_row_written_after_an_erasure_holds_none_of_what_it_erased(
    request: pytest.FixtureRequest,
) -> None:
    """A host writes its event rows from an outbox: a row made before an erasure may be
    written after it, and then erases itself in its own transaction (an erased command's
    text, a quoted error)."""
    from host_sim import CommandFinished, HostEvent, TurnFinished
    from host_sim.testing import event_row

    dsn: str = request.getfixturevalue("postgres_dsn")
    marker = f"mk{secrets.token_hex(8)}"
    async with Host(mods=[MOD], model=ScriptedModel(respond), store=PostgresStore(dsn)) as host:
        chat = await host.sessions.create()
        typed = await host.submit(chat, f"/echo typed {marker}")  # typed where the forgotten turn is asked
        first = await host.submit(chat, f"p {marker}")
        quoting = await host.submit(chat, "fail quoting")
        assert typed.error is None and first.turn is not None and quoting.turn is not None
        (invocation,) = [e for e in await host.log(chat.id) if not isinstance(e, TurnHandle)]
        await host.lineage.forget(first.turn.id, dry_run=False)
        at = first.turn.started_at
        late: list[HostEvent] = [
            CommandFinished(
                seq=0, at=at, invocation_id=invocation.id, session_id=chat.id, command_id="echo",
                text=f"echo: typed {marker}", error=None, job_id=None,
            ),
            TurnFinished(
                seq=0, at=at, session_id=chat.id, turn_id=quoting.turn.id, status="failed", reply=None,
                error=f"the model refused a conversation of ['p {marker}']",
            ),
        ]  # fmt: skip
        store = host._store
        assert isinstance(store, PostgresStore)
        _, rewritten = await store.append_events([event_row(e) for e in late])
        assert rewritten  # and says so: the host then reads these rows rather than hand out what it made
    assert postgres_survivors(dsn, marker) == []


_OLD_POSTGRES_RULES = """
DROP TRIGGER actions_never_change ON host_sim.actions;
CREATE TRIGGER actions_never_change BEFORE UPDATE ON host_sim.actions
    FOR EACH ROW EXECUTE FUNCTION host_sim.refuse('a proposed action never changes');
DROP TRIGGER trace_outputs_never_change ON host_sim.trace_outputs;
CREATE TRIGGER trace_outputs_never_change BEFORE UPDATE ON host_sim.trace_outputs
    FOR EACH ROW EXECUTE FUNCTION host_sim.refuse('a trace output never changes');
DROP TRIGGER finished_turns_never_change ON host_sim.turns;
CREATE TRIGGER finished_turns_never_change BEFORE UPDATE ON host_sim.turns FOR EACH ROW
    WHEN (OLD.status <> 'running' AND NOT (OLD.erased_at IS NULL AND NEW.erased_at IS NOT NULL
        AND NEW.error IS NOT DISTINCT FROM OLD.error))
    EXECUTE FUNCTION host_sim.refuse('a finished turn never changes (except once, to be forgotten)');
ALTER TABLE host_sim.actions DROP COLUMN erased_at;
ALTER TABLE host_sim.trace_outputs DROP COLUMN turn_id, DROP COLUMN position;
"""


async def test_a_postgresql_store_made_before_erasure_reached_actions_and_errors_gets_the_rules_when_a_host_opens_it(
    request: pytest.FixtureRequest,
) -> None:
    import psycopg

    dsn: str = request.getfixturevalue("postgres_dsn")
    marker = f"mk{secrets.token_hex(8)}"
    async with Host(mods=[MOD], model=ScriptedModel(respond), store=PostgresStore(dsn)) as host:
        await host.sessions.create()  # the schema exists, then is made as an older host-sim left it
    with psycopg.connect(dsn, autocommit=True) as conn:
        conn.execute(_OLD_POSTGRES_RULES)
    async with Host(mods=[MOD], model=ScriptedModel(respond), store=PostgresStore(dsn)) as host:
        planted = await plant(host, marker, outputs=True)
        await host.sessions.delete(planted.chat)
        check_read_outs(await read_outs(host, planted), marker)
    assert postgres_survivors(dsn, marker) == []


@pytest.mark.parametrize("place", PLACES, ids=lambda p: p.table)
def test_every_field_of_a_record_that_keeps_text_is_either_erased_or_declared_kept(place: Place) -> None:
    fields = {f.name for f in attrs.fields(place.record)}
    decided = _decided(place)
    assert fields == decided, (
        f"{place.record.__name__} fields nobody decided about: {sorted(fields - decided)}; "
        f"decided but gone: {sorted(decided - fields)} (register them in host_sim/stores/_erasure.py PLACES)"
    )
    erased = [name for name, _ in place.erased]
    assert len(erased) + len(place.kept) + (place.stamp is not None) == len(decided)  # no field both erased and kept

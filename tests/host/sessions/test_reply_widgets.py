"""Widgets a model places in its reply (API.md section 17): ``<mod-widget type="ID">{json}</mod-widget>``
is recorded on the turn (``turn.widgets``) like actions are, durable on every store, shown by
transcripts, erased with the turn; every tag that places nothing is reported, never raised."""

from __future__ import annotations

import json
import sqlite3
import time
from pathlib import Path

import anyio
import attrs
import pytest

from host_sim import EchoModel, Host, ModelRequest, ScriptedModel, SqliteStore, WidgetPlacement
from modular_sdk import ModDefinitionError, ModMetadata, SerializationError, define_mod, widget

from ..conftest import StoreFactory

pytestmark = pytest.mark.anyio


@attrs.frozen
class Progress:
    """What the progress widget draws."""

    done: int
    total: int


def bar(data: Progress) -> str:
    filled = round(10 * data.done / data.total)
    return f"[{'#' * filled}{'.' * (10 - filled)}] {data.done}/{data.total}"


TASKS = define_mod(
    metadata=ModMetadata(display_name="Tasks", description="Shows task progress"),
    widgets=[widget(id="progress", description="How far the task got", data_type=Progress, render=bar)],
)


def replying(text: str) -> ScriptedModel:
    return ScriptedModel(lambda request: text)


def tag(kind: str, body: str) -> str:
    return f'<mod-widget type="{kind}">{body}</mod-widget>'


PLACING = f"Halfway there. {tag('progress', json.dumps({'done': 2, 'total': 4}))}"


async def test_a_widget_the_reply_places_is_kept_on_the_turn_and_renders_from_its_data() -> None:
    async with Host(mods=[TASKS], model=replying(PLACING)) as host:
        chat = await host.sessions.create()
        submission = await host.submit(chat, "how far are we?")
        assert submission.turn is not None and submission.widget_errors == ()
        assert submission.text == PLACING  # the tag stays in the reply, as <mod-action> tags do
        (placed,) = submission.turn.widgets
        assert placed == WidgetPlacement(widget_id="progress", data={"done": 2, "total": 4}, index=0)
        shown = await host.render_widget(placed.widget_id, chat, placed.data)
        assert shown.error is None and shown.text == "[#####.....] 2/4"


async def test_placed_widgets_are_read_back_after_a_reopen_and_shown_by_the_transcript(any_store: StoreFactory) -> None:
    async with Host(mods=[TASKS], model=replying(PLACING), store=any_store()) as host:
        chat = await host.sessions.create()
        live = (await chat.run("how far are we?")).turn.widgets

    async with Host(mods=[TASKS], model=EchoModel(), store=any_store()) as host:  # a new host: only the store
        (turn,) = await (await host.sessions.get(chat.id)).turns()
        assert turn.widgets == live and len(live) == 1
        lines = (await host.transcript(chat.id)).splitlines()
        assert lines[-1] == """    widget 'progress' {"done": 2, "total": 4}"""


async def test_a_turn_whose_reply_places_nothing_has_no_widgets(any_store: StoreFactory) -> None:
    async with Host(mods=[TASKS], model=EchoModel(), store=any_store()) as host:
        chat = await host.sessions.create()
        assert (await chat.run("hello")).turn.widgets == ()
    async with Host(mods=[TASKS], model=EchoModel(), store=any_store()) as host:
        (turn,) = await (await host.sessions.get(chat.id)).turns()
        assert turn.widgets == ()


async def test_every_tag_that_places_nothing_is_reported_and_the_good_ones_are_placed() -> None:
    reply = " ".join(
        [
            tag("progress", '{"done": 1, "total": 3}'),
            tag("gauge", '{"done": 1}'),  # no such widget
            tag("progress", '{"done": 1,'),  # not JSON
            tag("progress", "[1, 3]"),  # not an object
            tag("progress", '{"done": "1", "total": 3}'),  # never coerced
            tag("progress", '{"done": 3, "total": 3}'),
            "<mod-widget>{}</mod-widget>",  # malformed: no type
        ]
    )
    async with Host(mods=[TASKS], model=replying(reply)) as host:
        chat = await host.sessions.create()
        out = await host.submit(chat, "report")
        assert out.error is None and out.turn is not None
        assert [(w.index, dict(w.data)) for w in out.turn.widgets] == [(0, {"done": 1, "total": 3}), (5, {"done": 3, "total": 3})]
        unknown, not_json, not_object, not_fitting, malformed = out.widget_errors
        assert unknown == "<mod-widget type='gauge'> names no loaded widget (widgets: 'progress'); it was ignored"
        assert not_json.startswith("<mod-widget type='progress'> holds no JSON data (") and not_json.endswith("it was ignored")
        assert not_object == "<mod-widget type='progress'> holds '[1, 3]'; its data is a JSON object; it was ignored"
        assert "data does not fit Progress of mod 'tasks'" in not_fitting and "done" in not_fitting
        assert malformed == '1 <mod-widget> tag is malformed (write <mod-widget type="...">{json}</mod-widget>); ignored'


async def test_a_hostile_reply_never_raises_out_of_submit_and_places_at_most_100_widgets() -> None:
    good = tag("progress", '{"done": 1, "total": 2}')
    hostile = "".join(
        [
            good * 10_000,
            tag("progress", '{"done": ' + "9" * 5_000 + ', "total": 2}'),  # a number JSON cannot hold
            tag("progress", '{"done": 1e999, "total": 2}'),
            tag("progress", '{"done": NaN, "total": 2}'),
            tag("progress", "[" * 100_000),
            "<mod-widget " * 8_000,  # openings never closed
        ]
    )
    async with Host(mods=[TASKS], model=replying(hostile), max_reply_bytes=10_000_000) as host:
        chat = await host.sessions.create()
        started = time.monotonic()
        with anyio.fail_after(60):
            out = await host.submit(chat, "go wild")
        assert time.monotonic() - started < 30  # linear: a quadratic scan would take minutes
        assert out.error is None and out.turn is not None
        assert len(out.turn.widgets) == 100 and {w.index for w in out.turn.widgets} == set(range(100))
        assert any("ignored: a reply holds at most 100" in e for e in out.widget_errors)
        assert any("malformed" in e for e in out.widget_errors)


async def test_widget_tags_with_bad_numbers_are_reported_one_by_one() -> None:
    reply = "".join(
        [
            tag("progress", '{"done": ' + "9" * 5_000 + ', "total": 2}'),
            tag("progress", '{"done": NaN, "total": 2}'),
            tag("progress", '{"done": 1e999, "total": 2}'),
        ]
    )
    async with Host(mods=[TASKS], model=replying(reply)) as host:
        chat = await host.sessions.create()
        out = await host.submit(chat, "numbers")
        assert out.turn is not None and out.turn.widgets == ()
        assert len(out.widget_errors) == 3 and all(e.endswith("it was ignored") for e in out.widget_errors)


async def test_forgetting_a_turn_erases_its_widgets_data_but_keeps_which_widgets_it_placed(any_store: StoreFactory) -> None:
    marker = "mk-widget-7f3a"
    reply = f"here {tag('progress', json.dumps({'done': 1, 'total': 2}))} {marker}"
    async with Host(mods=[TASKS], model=replying(reply), store=any_store()) as host:
        chat = await host.sessions.create()
        result = await chat.run(f"show {marker}")
        await host.lineage.forget(result.turn.id, dry_run=False)
        (turn,) = await (await host.sessions.get(chat.id)).turns()
        assert turn.widgets == (WidgetPlacement(widget_id="progress", data={}, index=0),)
    async with Host(mods=[TASKS], model=EchoModel(), store=any_store()) as host:
        (turn,) = await (await host.sessions.get(chat.id)).turns()
        assert turn.widgets == (WidgetPlacement(widget_id="progress", data={}, index=0),)
        assert marker not in await host.transcript(chat.id)


async def test_a_retracted_turn_keeps_its_widgets(any_store: StoreFactory) -> None:
    async with Host(mods=[TASKS], model=replying(PLACING), store=any_store()) as host:
        chat = await host.sessions.create()
        result = await chat.run("how far?")
        await host.lineage.retract(result.turn.id, reason="the count was off")
    async with Host(mods=[TASKS], model=EchoModel(), store=any_store()) as host:
        (turn,) = await (await host.sessions.get(chat.id)).turns()
        assert turn.retracted_at is not None and turn.widgets == result.turn.widgets


async def test_a_failed_turn_places_no_widgets() -> None:
    def fails(request: ModelRequest) -> str:
        raise RuntimeError("no model today")

    async with Host(mods=[TASKS], model=ScriptedModel(fails)) as host:
        chat = await host.sessions.create()
        out = await host.submit(chat, "hi")
        assert out.turn is not None and out.turn.status == "failed" and out.turn.widgets == ()


def test_a_widget_placement_refuses_what_it_cannot_keep() -> None:
    with pytest.raises(ModDefinitionError, match=r"WidgetPlacement.index must be an int >= 0, got -1"):
        WidgetPlacement(widget_id="progress", data={}, index=-1)
    with pytest.raises(ModDefinitionError, match=r"widget_id"):
        WidgetPlacement(widget_id="", data={}, index=0)
    with pytest.raises(SerializationError, match=r"a widget's data"):
        WidgetPlacement(widget_id="progress", data=[1, 2], index=0)


async def test_a_sqlite_store_made_before_widgets_gets_the_column_once_a_host_writes_it(tmp_path: Path) -> None:
    path = tmp_path / "older.sqlite"
    async with Host(mods=[TASKS], model=EchoModel(), store=SqliteStore(path)) as host:
        chat = await host.sessions.create()
        await chat.run("before widgets were kept")
    conn = sqlite3.connect(path)
    conn.executescript("DROP TRIGGER finished_turns_never_change;\nALTER TABLE turns DROP COLUMN widgets;\n")
    conn.close()

    async with Host(mods=[TASKS], model=EchoModel(), store=SqliteStore(path, read_only=True)) as host:
        (old,) = await (await host.sessions.get(chat.id)).turns()  # a reader reads it as it is
        assert old.widgets == ()
    async with Host(mods=[TASKS], model=replying(PLACING), store=SqliteStore(path)) as host:
        await (await host.sessions.get(chat.id)).run("after")
    async with Host(mods=[TASKS], model=EchoModel(), store=SqliteStore(path)) as host:
        old, new = await (await host.sessions.get(chat.id)).turns()
        assert old.widgets == () and [w.widget_id for w in new.widgets] == ["progress"]
    conn = sqlite3.connect(path)
    with pytest.raises(sqlite3.DatabaseError, match="a finished turn never changes"):  # a retraction keeps widgets
        conn.execute(
            "UPDATE turns SET widgets = NULL, retracted_at = '2026-01-01T00:00:00+00:00', retraction_reason = 'x' "
            "WHERE widgets IS NOT NULL"
        )
    conn.close()


async def test_a_postgresql_store_made_before_widgets_and_usage_gets_both_columns_when_a_host_opens_it(
    request: pytest.FixtureRequest,
) -> None:
    import psycopg

    from host_sim import PostgresStore, Reply, Usage

    dsn: str = request.getfixturevalue("postgres_dsn")
    async with Host(mods=[TASKS], model=EchoModel(), store=PostgresStore(dsn)) as host:
        chat = await host.sessions.create()
        await chat.run("written by an older host")
    with psycopg.connect(dsn, autocommit=True) as conn:  # as a host-sim before widgets and usage left it
        conn.execute("DROP TRIGGER finished_turns_never_change ON host_sim.turns")
        conn.execute("ALTER TABLE host_sim.turns DROP COLUMN widgets")
        conn.execute("ALTER TABLE host_sim.turns DROP COLUMN usage")

    metered = ScriptedModel(lambda request: Reply(text=PLACING, usage=Usage(input_tokens=9, output_tokens=4)))
    async with Host(mods=[TASKS], model=metered, store=PostgresStore(dsn)) as host:
        (old,) = await (await host.sessions.get(chat.id)).turns()
        assert (old.widgets, old.usage) == ((), None)
        await (await host.sessions.get(chat.id)).run("after")
    async with Host(mods=[TASKS], model=EchoModel(), store=PostgresStore(dsn)) as host:
        _, new = await (await host.sessions.get(chat.id)).turns()
        assert [w.widget_id for w in new.widgets] == ["progress"] and new.usage == Usage(input_tokens=9, output_tokens=4)
    with psycopg.connect(dsn, autocommit=True) as conn, pytest.raises(psycopg.Error, match="a finished turn never changes"):
        conn.execute(  # the rule is back, and a retraction keeps widgets
            "UPDATE host_sim.turns SET widgets = NULL, retracted_at = '2026-01-01T00:00:00+00:00', "
            "retraction_reason = 'x' WHERE widgets IS NOT NULL"
        )

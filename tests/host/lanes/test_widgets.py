"""Widgets: small renderings shown inside a chat for one session, in the renderer lane."""

from __future__ import annotations

import attrs
import pytest

from host_sim import Host, ViewResult
from host_sim.fold import manifest_from_mod
from modular_sdk import ModDefinitionError, ModMetadata, UnknownSessionError, define_mod, widget


@attrs.frozen
class Progress:
    """What the progress widget draws."""

    done: int
    total: int


def bar(data: Progress) -> str:
    filled = round(10 * data.done / data.total)
    return f"[{'#' * filled}{'.' * (10 - filled)}] {data.done}/{data.total}"


def broken(data: Progress) -> str:
    raise RuntimeError("no ink")


def silent(data: Progress) -> str:
    return None  # type: ignore[return-value]


tasks = define_mod(
    metadata=ModMetadata(display_name="Tasks", description="Shows task progress"),
    widgets=[
        widget(id="progress", description="How far the task got", data_type=Progress, render=bar),
        widget(id="broken", description="Always fails", data_type=Progress, render=broken),
        widget(id="silent", description="Returns no text", data_type=Progress, render=silent),
    ],
)


@pytest.mark.anyio
async def test_a_widget_renders_json_data_structured_into_its_data_type() -> None:
    async with Host(mods=[tasks]) as host:
        chat = await host.sessions.create()

        shown = await host.render_widget("progress", chat, {"done": 3, "total": 4})

        assert shown == ViewResult(text="[########..] 3/4")
        assert (await host.render_widget("progress", chat.id, Progress(done=1, total=2))).text == "[#####.....] 1/2"


@pytest.mark.anyio
@pytest.mark.parametrize(
    ("data", "says"),
    [
        ({"done": "3", "total": 4}, "done"),  # never coerced
        ({"done": 3}, "total"),
        ({"done": 3, "total": 4, "extra": 1}, "extra"),
        ("3/4", "Progress"),
    ],
)
async def test_data_that_does_not_fit_the_widget_is_an_error_naming_what_is_wrong(data: object, says: str) -> None:
    async with Host(mods=[tasks]) as host:
        chat = await host.sessions.create()

        shown = await host.render_widget("progress", chat, data)

        assert shown.error is not None and shown.text == shown.error
        assert "widget 'progress' of mod 'tasks'" in shown.error and says in shown.error


@pytest.mark.anyio
async def test_a_failing_or_silent_widget_reports_its_error_and_the_host_goes_on() -> None:
    async with Host(mods=[tasks]) as host:
        chat = await host.sessions.create()

        failed = await host.render_widget("broken", chat, {"done": 1, "total": 1})
        silent_result = await host.render_widget("silent", chat, {"done": 1, "total": 1})

        assert failed.error is not None and "no ink" in failed.error
        assert silent_result.error is not None and "must return a str" in silent_result.error
        assert (await host.submit(chat, "still here")).ok


@pytest.mark.anyio
async def test_an_unknown_widget_lists_the_known_ones_and_an_unknown_session_raises() -> None:
    async with Host(mods=[tasks]) as host:
        chat = await host.sessions.create()

        unknown = await host.render_widget("progres", chat, {})
        assert unknown.error == "unknown widget 'progres' (widgets: 'broken', 'progress', 'silent')"
        with pytest.raises(UnknownSessionError):
            await host.render_widget("progress", "ses_missing", {"done": 1, "total": 2})


def test_a_widget_needs_an_attrs_data_type_and_a_render_taking_the_data() -> None:
    with pytest.raises(ModDefinitionError, match=r"data_type must be an attrs class") as info:
        widget(id="w", description="A widget", data_type=dict, render=lambda data: "")  # type: ignore[type-var]
    assert info.value.field == "data_type"
    with pytest.raises(ModDefinitionError, match=r"widget id"):
        widget(id="Not An Id", description="A widget", data_type=Progress, render=bar)


def test_two_widgets_of_one_mod_may_not_share_an_id() -> None:
    with pytest.raises(ModDefinitionError, match=r"widget id 'progress'"):
        define_mod(
            metadata=ModMetadata(display_name="Twice", description="Two of one"),
            widgets=[
                widget(id="progress", description="One", data_type=Progress, render=bar),
                widget(id="progress", description="Two", data_type=Progress, render=bar),
            ],
        )


def test_the_manifest_lists_widgets_with_their_data_schema() -> None:
    (entry, *_) = manifest_from_mod(tasks).widgets
    assert entry.id == "progress" and entry.description == "How far the task got"
    assert entry.data_schema["properties"] == {"done": {"type": "integer"}, "total": {"type": "integer"}}

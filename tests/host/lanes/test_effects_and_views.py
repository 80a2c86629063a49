"""Effects run while the host is open; views render data to text in the renderer lane."""

from __future__ import annotations

import time

import anyio
import attrs
import pytest

from host_sim import EffectStatus, Host, ViewResult
from modular_sdk import AiPromptMessage, EffectContext, ModAuthor, ModMetadata, define_mod, effect, view

log: list[str] = []


async def watch(ctx: EffectContext) -> None:
    log.append(f"started {ctx.mod_id}/{ctx.effect_id}")
    try:
        await anyio.sleep_forever()
    finally:
        log.append("stopped")


async def once(ctx: EffectContext) -> None:
    log.append("once")


async def crash(ctx: EffectContext) -> None:
    raise RuntimeError("watcher lost its socket")


@attrs.frozen
class Counts:
    """What the status view shows."""

    passed: int
    failed: int


def status_view(data: Counts) -> str:
    return f"{data.passed} passed, {data.failed} failed"


def broken_view(data: Counts) -> str:
    raise ZeroDivisionError("no data")


def wrong_view(data: Counts) -> str:
    return data.passed  # type: ignore[return-value]


def slow_view(data: Counts) -> str:
    time.sleep(0.3)
    return "too late"


mod = define_mod(
    metadata=ModMetadata(display_name="Watcher", description="Watches and shows"),
    effects=[effect(id="watch", activate=watch), effect(id="once", activate=once), effect(id="crash", activate=crash)],
    views=[
        view(id="status", title="Status", render=status_view),
        view(id="broken", title="Broken", render=broken_view),
        view(id="wrong", title="Wrong", render=wrong_view),
        view(id="slow", title="Slow", render=slow_view),
    ],
)


@pytest.fixture(autouse=True)
def clear() -> None:
    log.clear()


async def settle(host: Host) -> None:
    with anyio.fail_after(2):
        while any(s.effect_id in ("once", "crash") and s.state == "running" for s in host.effects):
            await anyio.sleep(0.001)
        while "started watcher/watch" not in log:
            await anyio.sleep(0.001)


@pytest.mark.anyio
async def test_effects_start_when_the_host_opens() -> None:
    async with Host(mods=[mod]) as host:
        await settle(host)

        assert "started watcher/watch" in log
        assert "once" in log
        by_id = {s.effect_id: s for s in host.effects}
        assert by_id["watch"] == EffectStatus(mod_id="watcher", effect_id="watch", state="running")
        assert by_id["once"].state == "finished"


@pytest.mark.anyio
async def test_effects_are_cancelled_when_the_host_closes() -> None:
    async with Host(mods=[mod]) as host:
        await settle(host)

    assert log[-1] == "stopped"
    assert [(s.effect_id, s.state) for s in host.effects] == [
        ("watch", "cancelled"),
        ("once", "finished"),
        ("crash", "failed"),
    ]


@pytest.mark.anyio
async def test_a_failing_effect_is_reported_and_the_host_goes_on() -> None:
    async with Host(mods=[mod]) as host:
        await settle(host)
        chat = await host.sessions.create()

        reply = await host.submit(chat, "still alive?")

        crashed = next(s for s in host.effects if s.effect_id == "crash")
        assert crashed.state == "failed"
        assert crashed.error is not None and crashed.error.startswith("effect 'crash' of mod 'watcher' failed: RuntimeError: watcher lost its socket (raised at "), crashed.error  # the mod's line that raised
        assert reply.error is None


@pytest.mark.anyio
async def test_what_an_effect_sends_is_stamped_with_its_mod() -> None:
    seen: list[str] = []

    async def greeter(ctx: EffectContext) -> None:
        session = await ctx.ai.sessions.create()
        turn = await session.send(AiPromptMessage(text="good morning"))
        assert turn.author == ModAuthor(mod_id="greeter")
        seen.append(turn.reply or "")

    greeting = define_mod(
        metadata=ModMetadata(display_name="Greeter", description="Says hello"),
        effects=[effect(id="greet", activate=greeter)],
    )
    async with Host(mods=[greeting]) as host:
        with anyio.fail_after(2):
            while host.effects[0].state == "running":
                await anyio.sleep(0.001)

        assert host.effects[0].state == "finished", host.effects[0].error
        assert seen == ["echo: good morning"]


@pytest.mark.anyio
async def test_a_view_renders_data_to_text() -> None:
    async with Host(mods=[mod]) as host:
        result = await host.render_view("status", Counts(passed=12, failed=1))

        assert result == ViewResult(text="12 passed, 1 failed")
        assert result.error is None


@pytest.mark.anyio
async def test_a_failing_view_reports_its_error() -> None:
    async with Host(mods=[mod]) as host:
        result = await host.render_view("broken", Counts(passed=0, failed=0))

        assert result.error is not None and result.error.startswith("view 'broken' of mod 'watcher' failed: ZeroDivisionError: no data (raised at "), result.error  # the mod's line that raised
        assert result.text == result.error


@pytest.mark.anyio
async def test_a_view_that_returns_no_text_reports_an_error() -> None:
    async with Host(mods=[mod]) as host:
        result = await host.render_view("wrong", Counts(passed=3, failed=0))

        assert result.error == "view 'wrong' of mod 'watcher' returned 3; render(data) must return a str"


@pytest.mark.anyio
async def test_a_view_that_hangs_times_out() -> None:
    async with Host(mods=[mod], handler_timeout=0.1) as host:
        result = await host.render_view("slow", Counts(passed=3, failed=0))

        assert result.error is not None and "view 'slow' of mod 'watcher' timed out after 0.1s" in result.error


@pytest.mark.anyio
async def test_an_unknown_view_is_reported_with_the_known_ones() -> None:
    async with Host(mods=[mod]) as host:
        result = await host.render_view("statu", Counts(passed=3, failed=0))

        assert result.error is not None
        assert result.error is not None and result.error.startswith("unknown view 'statu' (views: ")
        assert "'status'" in result.error

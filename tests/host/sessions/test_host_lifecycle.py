"""The host as an async context manager: what escapes its block, and what it refuses."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

from host_sim import Host
from modular_sdk import (
    HostClosedError,
    InvalidArgumentError,
    ManifestBuildError,
    Mod,
    ModDefinitionError,
    ModMetadata,
    NoConversationError,
    SlashCommandContext,
    define_mod,
    slash_command,
)

pytestmark = pytest.mark.anyio


async def test_an_error_raised_in_the_host_block_propagates_unwrapped() -> None:
    with pytest.raises(NoConversationError, match="a fork needs a completed turn"):
        async with Host() as host:
            chat = await host.sessions.create()
            await chat.fork()


async def test_a_cancelled_host_block_does_not_leak_an_exception_group() -> None:
    import anyio

    with anyio.move_on_after(0.05) as scope:
        async with Host() as host:
            await host.sessions.create()
            await anyio.sleep(10)
    assert scope.cancelled_caught


async def test_a_host_is_entered_once() -> None:
    host = Host()
    async with host:
        with pytest.raises(HostClosedError, match="entered once") as while_open:
            async with host:
                pass
    assert isinstance(while_open.value, RuntimeError) and while_open.value.state == "open"
    with pytest.raises(HostClosedError, match="entered once") as closed:
        async with host:
            pass
    assert closed.value.state == "closed"


async def test_a_closed_host_refuses_use_with_a_clear_message() -> None:
    async with Host() as host:
        pass
    with pytest.raises(RuntimeError, match="inside 'async with Host"):
        await host.sessions.create()


# -- one bad mod does not sink the rest (opt-in) ----------------------------------------------


def _say(text: str) -> Callable[[str | None, SlashCommandContext], str]:
    def run(argument: str | None, ctx: SlashCommandContext) -> str:
        return text

    return run


def _mod(name: str, command: str) -> Mod:
    return define_mod(
        metadata=ModMetadata(display_name=name, description=f"Says {name}"),
        commands=[slash_command(id=command, description="Say it", run=_say(name))],
    )


good = _mod("Good", "hello")
rival = _mod("Rival", "hello")  # declares the command good already declared
other = _mod("Other", "bye")
impure = str(Path(__file__).parents[2] / "fold" / "fixtures" / "fx_os_system.py")  # its build refuses it


@pytest.mark.anyio
async def test_skipping_bad_mods_loads_every_good_one_and_lists_the_bad_in_order() -> None:
    async with Host(mods=[good, impure, rival, 42, good, other], on_bad_mod="skip") as host:  # type: ignore[list-item]
        chat = await host.sessions.create()
        assert (await host.submit(chat, "/hello")).text == "Good"
        assert (await host.submit(chat, "/bye")).text == "Other"
        assert [m.id for m in host.mods] == [good.id, other.id]

        errors = host.mod_errors
    assert [type(e) for e in errors] == [ManifestBuildError, ModDefinitionError, ModDefinitionError, ModDefinitionError]
    built, clash, junk, twice = errors
    assert isinstance(built, ManifestBuildError) and built.spec == impure
    assert isinstance(clash, ModDefinitionError) and clash.value is rival and clash.field == "mods[2]"
    assert f"mod {rival.id!r} was not loaded" in str(clash) and "'hello'" in str(clash)
    assert isinstance(junk, ModDefinitionError) and junk.field == "mods[3]" and "got 42" in str(junk)
    assert isinstance(twice, ModDefinitionError) and "loaded twice" in str(twice)


@pytest.mark.anyio
async def test_by_default_one_bad_mod_refuses_them_all_naming_every_problem() -> None:
    with pytest.raises(ModDefinitionError, match=r"(?s)cannot load these mods together.*'hello'.*got 42"):
        async with Host(mods=[good, rival, 42]):  # type: ignore[list-item]
            pass


@pytest.mark.anyio
async def test_a_host_whose_mods_all_load_has_no_mod_errors() -> None:
    async with Host(mods=[good, other], on_bad_mod="skip") as host:
        assert host.mod_errors == ()


def test_on_bad_mod_accepts_raise_or_skip_only() -> None:
    with pytest.raises(InvalidArgumentError, match=r"on_bad_mod must be 'raise'.*got 'ignore'"):
        Host(on_bad_mod="ignore")  # type: ignore[arg-type]

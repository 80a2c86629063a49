"""The host as an async context manager: what escapes its block, and what it refuses."""

from __future__ import annotations

import pytest

from host_sim import Host
from modular_sdk import NoConversationError

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
        pass
    with pytest.raises(RuntimeError, match="entered once"):
        async with host:
            pass


async def test_a_closed_host_refuses_use_with_a_clear_message() -> None:
    async with Host() as host:
        pass
    with pytest.raises(RuntimeError, match="inside 'async with Host"):
        await host.sessions.create()

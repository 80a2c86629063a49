"""The modular-sdk pytest plugin: test your mod against a real `host_sim.Host`.

Installed with the package and registered under the ``pytest11`` entry point, so a mod
author's project gets it without a ``conftest.py``. It provides one fixture, `mod_host`,
an async factory that runs on asyncio and trio through anyio's pytest plugin::

    import pytest
    from host_sim.pytest_plugin import ModHost

    from my_mod import mod

    @pytest.mark.anyio
    async def test_task_reports_back(mod_host: ModHost) -> None:
        host = await mod_host(mod)
        chat = await host.sessions.create()
        await host.submit(chat, "Refactor the parser")
        out = await host.submit(chat, "/task write the tests")
        assert out.ok
        note = await mod_host.last_notification(chat)
        assert note.title == "Task finished: write the tests"

Every host the factory opens is closed when the test ends, failed or not (effects are
cancelled, stores closed). The helpers `transcript`, `lineage` and `last_notification`
(also methods of the fixture) read a session for assertions.
"""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator, Callable
from datetime import datetime
from typing import TypedDict, final

from typing_extensions import Unpack

import attrs
import pytest

from modular_sdk import (
    AiNotificationMessage,
    AiSessionHandle,
    AiSessionLineage,
    AiTurnHandle,
    Author,
    Mod,
)

from .models._protocol import Model
from .sessions._host import Host
from .stores._protocol import Store

__all__ = ["HostOptions", "ModHost", "Notification", "last_notification", "lineage", "mod_host", "notifications", "transcript"]


@attrs.frozen(kw_only=True)
class Notification:
    """A notification delivered into a session, for assertions. Immutable.

    ``title`` and ``body`` are the `AiNotificationMessage`'s; ``author`` is the stamp (the
    mod and command that sent it); ``turn`` is the turn it drove.
    """

    title: str
    body: str
    author: Author
    turn: AiTurnHandle


async def notifications(session: AiSessionHandle) -> list[Notification]:
    """Every notification in the session's history (inherited turns included), oldest first."""
    found: list[Notification] = []
    for turn in await session.turns():
        message = turn.message
        if isinstance(message, AiNotificationMessage):
            found.append(Notification(title=message.title, body=message.body, author=turn.author, turn=turn))
    return found


async def last_notification(session: AiSessionHandle) -> Notification:
    """The most recent notification of the session.

    Raises `AssertionError` (with the session's turns listed) when it has none, so a test
    can use it directly as an assertion.
    """
    found = await notifications(session)
    if not found:
        turns = await session.turns()
        listed = "; ".join(f"#{t.ordinal} {t.message.type} by {t.author.kind}" for t in turns) or "no turns"
        raise AssertionError(f"session {session.id!r} has received no notification (its turns: {listed})")
    return found[-1]


async def lineage(session: AiSessionHandle) -> list[AiSessionLineage]:
    """The lineage records from ``session`` up to its root, the session's own first.

    For a fork of a root: ``[ForkLineage(...), RootLineage()]``. Each record keeps its whole
    shape (fork anchor, spawn trigger); compare ``[r.kind for r in ...]`` for the outline.
    """
    chain: list[AiSessionLineage] = []
    current: AiSessionHandle | None = session
    while current is not None:
        chain.append(current.lineage)
        current = await current.parent()
    return chain


async def transcript(host: Host, session: AiSessionHandle) -> str:
    """The session's history as text (``host.transcript``), authors and notifications marked."""
    return await host.transcript(session.id)


class HostOptions(TypedDict, total=False):
    """The keyword arguments of `Host`, passed through by ``mod_host``; defaults are `Host`'s."""

    model: Model | None
    store: Store | None
    clock: Callable[[], datetime] | None
    handler_timeout: float | None
    model_timeout: float | None
    max_tool_rounds: int
    cwd: str | None


@final
class ModHost:
    """The `mod_host` fixture: ``host = await mod_host(mod, model=...)``.

    Each call opens a new `Host` with the given mods (`Mod` values or mod specs) and keyword
    arguments (``model``, ``store``, ``clock``, ``handler_timeout``, ``model_timeout``,
    ``max_tool_rounds``, ``cwd``), enters it and returns it; the fixture closes every host
    it opened when the test ends, in reverse order, even when the test fails. Obtain it by
    naming ``mod_host`` as an argument of an ``@pytest.mark.anyio`` test.
    """

    def __init__(self, stack: contextlib.AsyncExitStack) -> None:
        self._stack = stack
        self._hosts: list[Host] = []
        self._open = True

    @property
    def hosts(self) -> tuple[Host, ...]:
        """The hosts opened so far in this test, oldest first."""
        return tuple(self._hosts)

    async def __call__(
        self,
        *mods: Mod | str,
        **options: Unpack[HostOptions],
    ) -> Host:
        """Open a host with ``mods`` and return it entered; it is closed when the test ends."""
        if not self._open:
            raise RuntimeError("mod_host was called after its test ended; call it inside the test")
        for index, given in enumerate(mods):
            if isinstance(given, (list, tuple)):
                raise TypeError(
                    f"mod_host takes mods as separate arguments, got a {type(given).__name__} "
                    f"at position {index}; write mod_host(mod_a, mod_b), not mod_host([mod_a, mod_b])"
                )
        host = Host(mods, **options)
        entered = await self._stack.enter_async_context(host)
        self._hosts.append(entered)
        return entered

    async def transcript(self, session: AiSessionHandle) -> str:
        """The transcript of a session of one of this test's hosts (see ``Host.transcript``)."""
        return await transcript(await self._owner(session), session)

    async def lineage(self, session: AiSessionHandle) -> list[AiSessionLineage]:
        """The lineage records from ``session`` up to its root (see `lineage`)."""
        return await lineage(session)

    async def notifications(self, session: AiSessionHandle) -> list[Notification]:
        """Every notification of the session, oldest first (see `notifications`)."""
        return await notifications(session)

    async def last_notification(self, session: AiSessionHandle) -> Notification:
        """The session's most recent notification; `AssertionError` if none (see `last_notification`)."""
        return await last_notification(session)

    async def _owner(self, session: AiSessionHandle) -> Host:
        for host in reversed(self._hosts):
            with contextlib.suppress(LookupError, RuntimeError):
                if await host.sessions.get(session.id) == session:
                    return host
        raise LookupError(
            f"session {session.id!r} belongs to no host opened by mod_host in this test; "
            "pass a session made by one of them"
        )

    async def _close(self) -> None:
        self._open = False
        await self._stack.aclose()


@pytest.fixture
async def mod_host(anyio_backend: object) -> AsyncIterator[ModHost]:
    """Async factory of entered hosts: ``host = await mod_host(mod, model=...)``.

    Use it from ``@pytest.mark.anyio`` tests (asyncio and trio). Every host is closed when
    the test ends.
    """
    factory = ModHost(contextlib.AsyncExitStack())
    try:
        yield factory
    finally:
        await factory._close()

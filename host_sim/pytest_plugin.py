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

Record a real model once and replay it in CI with ``cassette=``::

    host = await mod_host(mod, cassette="cassettes/task.jsonl",
                          model=OpenAIModel("llama3.2", base_url="http://localhost:11434/v1"))

The path is relative to the test file's folder. When the cassette exists the host
replays it (`ReplayModel`: no network, ``model`` is never asked); when it does not, the
host records it with ``model`` (`RecordingModel`). ``pytest --record-cassettes`` records
every cassette again. Where the ``CI`` environment variable is set, a missing cassette
fails the test instead of being recorded: commit the cassettes you recorded.
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import AsyncIterator, Callable
from datetime import datetime
from pathlib import Path
from typing import TypedDict, final

import attrs
import pytest
from typing_extensions import Unpack

from modular_sdk import (
    AiNotificationMessage,
    AiSessionHandle,
    AiSessionLineage,
    AiTurnHandle,
    Author,
    HostClosedError,
    InvalidArgumentError,
    ManifestBuildError,
    Mod,
    UnknownSessionError,
)

from .models._cassette import RecordingModel, ReplayModel
from .models._protocol import Model
from .sessions._host import Host
from .stores._protocol import Store

__all__ = [
    "HostOptions",
    "ModHost",
    "Notification",
    "last_notification",
    "lineage",
    "mod_host",
    "notifications",
    "transcript",
]


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
    """The session's history as text (``host.transcript``): turns, authors and notifications
    marked, and the commands typed in it."""
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
    ``max_tool_rounds``, ``cwd``; ``cassette`` to record or replay the model, see the module
    docstring), enters it and returns it; the fixture closes every host
    it opened when the test ends, in reverse order, even when the test fails. Obtain it by
    naming ``mod_host`` as an argument of an ``@pytest.mark.anyio`` test.
    """

    def __init__(
        self, stack: contextlib.AsyncExitStack, *, folder: str | os.PathLike[str] | None = None, record: bool = False
    ) -> None:
        self._stack = stack
        self._hosts: list[Host] = []
        self._open = True
        self._folder = Path(folder) if folder is not None else None
        self._record = record

    @property
    def hosts(self) -> tuple[Host, ...]:
        """The hosts opened so far in this test, oldest first."""
        return tuple(self._hosts)

    async def __call__(
        self,
        *mods: Mod | str,
        cassette: str | os.PathLike[str] | None = None,
        **options: Unpack[HostOptions],
    ) -> Host:
        """Open a host with ``mods`` and return it entered; it is closed when the test ends.

        With ``cassette``, the host replays that cassette if it exists and records it with
        ``model`` if it does not (see the module docstring).
        """
        if not self._open:
            raise HostClosedError("mod_host was called after its test ended; call it inside the test", state="closed")
        if cassette is not None:
            options["model"] = self._cassette_model(cassette, options.get("model"))
        for index, given in enumerate(mods):
            if isinstance(given, (list, tuple)):
                raise InvalidArgumentError(
                    f"mod_host takes mods as separate arguments, got a {type(given).__name__} "
                    f"at position {index}; write mod_host(mod_a, mod_b), not mod_host([mod_a, mod_b])",
                    argument="mods",
                    value=given,
                )
        __tracebackhide__ = True  # a mod that does not load is the test's failure, not the host's code
        host = Host(mods, **options)
        try:
            entered = await self._stack.enter_async_context(host)
        except ManifestBuildError as refused:  # its message names the spec, the file and the line
            raise refused.with_traceback(None) from None
        self._hosts.append(entered)
        return entered

    def _cassette_model(self, cassette: str | os.PathLike[str], model: Model | None) -> Model:
        if not isinstance(cassette, (str, os.PathLike)) or not os.fspath(cassette):
            raise InvalidArgumentError(
                f"mod_host's cassette is a path (str or os.PathLike), got {cassette!r}; "
                "pass e.g. cassette='cassettes/task.jsonl'",
                argument="cassette",
                value=cassette,
            )
        path = Path(os.fspath(cassette))
        if not path.is_absolute() and self._folder is not None:
            path = self._folder / path
        if path.exists() and not self._record:
            return ReplayModel(path)
        if model is None:
            raise InvalidArgumentError(
                f"there is no cassette at {str(path)!r} and no model to record it with; pass the real "
                "model once, e.g. mod_host(mod, cassette=..., model=OpenAIModel('llama3.2', base_url=...))",
                argument="cassette",
                value=cassette,
            )
        if not self._record and _in_ci():
            raise InvalidArgumentError(
                f"there is no cassette at {str(path)!r}, and CI replays cassettes but never records them "
                "(the CI environment variable is set); record it where the model runs and commit it",
                argument="cassette",
                value=cassette,
            )
        path.parent.mkdir(parents=True, exist_ok=True)
        return RecordingModel(model, path)

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
        raise UnknownSessionError(
            f"session {session.id!r} belongs to no host opened by mod_host in this test; "
            "pass a session made by one of them",
            session_id=session.id,
        )

    async def _close(self) -> None:
        self._open = False
        await self._stack.aclose()


def _in_ci() -> bool:
    return os.environ.get("CI", "").strip().lower() not in ("", "0", "false", "no")


def pytest_addoption(parser: pytest.Parser) -> None:
    """``--record-cassettes``: record every ``mod_host(..., cassette=...)`` again."""
    parser.addoption(
        "--record-cassettes",
        action="store_true",
        default=False,
        help="record every mod_host cassette again with its real model (even one that exists, even in CI)",
    )


@pytest.fixture
async def mod_host(anyio_backend: object, request: pytest.FixtureRequest) -> AsyncIterator[ModHost]:
    """Async factory of entered hosts: ``host = await mod_host(mod, model=...)``.

    Use it from ``@pytest.mark.anyio`` tests (asyncio and trio). Every host is closed when
    the test ends. A ``cassette=`` path is relative to the test file's folder.
    """
    record = bool(request.config.getoption("record_cassettes", default=False))
    factory = ModHost(contextlib.AsyncExitStack(), folder=request.path.parent, record=record)
    try:
        yield factory
    finally:
        await factory._close()

"""An integrator's store written before ``Store.running_turns`` became ``turns_left_running``
keeps working for one release: the host asks it by its old name and warns, and the shipped
stores answer the old name too (docs/embedding.md, "Renamed store names")."""

from __future__ import annotations

import warnings
from collections.abc import Callable
from pathlib import Path

import pytest

from host_sim import Host, MemoryStore, SqliteStore, Store
from host_sim.stores import TurnRecord
from host_sim.testing import INTERRUPTED
from modular_sdk import AiPromptMessage, AiRunnerId, SessionId, TurnId, UserAuthor

from .._stores import T0, node, read_back, session
from ..conftest import StoreFactory

pytestmark = pytest.mark.anyio


def left_running(turn_id: str) -> TurnRecord:
    """A turn of session ``s-1`` its host began and never finished (it crashed)."""
    return TurnRecord(
        id=TurnId(turn_id),
        session_id=SessionId("s-1"),
        ordinal=0,
        message=AiPromptMessage(text="hi"),
        message_id=f"m-{turn_id}",
        author=UserAuthor(),
        runner_id=AiRunnerId("echo:s-1"),
        status="running",
        reply=None,
        error=None,
        started_at=T0,
        finished_at=None,
    )


def written_before_the_rename(inner: Store) -> Store:
    """A store of an integrator's own, written against the old protocol: every `Store` method
    but ``turns_left_running``, which it still calls ``running_turns``."""

    def delegate(name: str) -> Callable[..., object]:
        return lambda self, *args, **kwargs: getattr(self.inner, name)(*args, **kwargs)

    members = {name: delegate(name) for name in dir(Store) if not name.startswith("_")}
    members["running_turns"] = members.pop("turns_left_running")
    cls = type("StoreBeforeTheRename", (), {"__init__": lambda self, wrapped: setattr(self, "inner", wrapped), **members})
    wrapped: Store = cls(inner)
    return wrapped


@pytest.mark.parametrize("kind", ["memory", "sqlite"])
async def test_a_store_still_named_running_turns_opens_and_fails_the_turn_a_crash_left_running(
    kind: str, tmp_path: Path
) -> None:
    path = tmp_path / "chat.sqlite"
    inner: Store = MemoryStore() if kind == "memory" else SqliteStore(path)
    await inner.open()
    await inner.create_session(session("s-1"), node("s-1"), None)
    await inner.begin_turn(left_running("t-1"))
    await inner.close()  # the host that wrote it is gone

    old = written_before_the_rename(inner)
    with pytest.warns(DeprecationWarning, match=r"StoreBeforeTheRename\.running_turns is renamed turns_left_running"):
        async with Host(store=old):
            pass

    (turn,) = (await read_back(inner)).turns
    await inner.close()
    assert (turn.id, turn.status, turn.error) == ("t-1", "failed", INTERRUPTED)


async def test_a_store_with_the_new_name_opens_without_a_warning(tmp_path: Path) -> None:
    store = SqliteStore(tmp_path / "chat.sqlite")
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # any DeprecationWarning of ours fails the open
        async with Host(store=store):
            pass


async def test_running_turns_on_a_shipped_store_warns_at_its_caller_and_answers_as_turns_left_running(
    any_store: StoreFactory,
) -> None:
    store = any_store()
    await store.open()
    try:
        await store.create_session(session("s-1"), node("s-1"), None)
        await store.begin_turn(left_running("t-1"))
        with pytest.warns(DeprecationWarning, match=r"\.running_turns is renamed turns_left_running") as caught:
            old = await store.running_turns()  # type: ignore[attr-defined]
        new = await store.turns_left_running()
    finally:
        await store.close()
    assert [w.filename for w in caught] == [__file__]  # points at the line that used the old name
    assert old == new
    # a single-writer store hands back what a crash left running; PostgreSQL only a gone host's
    # turns, and this one's host (the store itself) is alive
    assert [t.id for t in new] == ([] if type(store).__name__ == "PostgresStore" else ["t-1"])

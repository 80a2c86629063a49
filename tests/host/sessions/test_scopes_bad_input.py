"""Any junk given to a scoped view (``host.scoped(...)`` and every method of it) raises a
ModularError, never a builtin, on MemoryStore and SqliteStore, as for the host itself."""

from __future__ import annotations

import tempfile
from collections.abc import Awaitable, Callable

import anyio
import pytest
from hypothesis import given
from hypothesis import strategies as st

from host_sim import Host, ScopedHost, TaskRef

from .test_host_bad_input_properties import (  # noqa: F401 - junk_database is a fixture
    junk,
    junk_database,
    junk_settings,
    refuses_only_with_our_errors,
    store_kinds,
    store_of,
)


async def _sync(value: object) -> object:
    return value


Call = Callable[[Host, ScopedHost, str, object], Awaitable[object]]
CALLS: dict[str, Call] = {
    "host.scoped": lambda host, view, chat, x: _sync(host.scoped(x)),  # type: ignore[arg-type]
    "view.scoped": lambda host, view, chat, x: _sync(view.scoped(x)),  # type: ignore[arg-type]
    "sessions.get": lambda host, view, chat, x: view.sessions.get(x),  # type: ignore[arg-type]
    "sessions.turn": lambda host, view, chat, x: view.sessions.turn(x),  # type: ignore[arg-type]
    "sessions.delete": lambda host, view, chat, x: view.sessions.delete(x),  # type: ignore[arg-type]
    "sessions.list(tags=)": lambda host, view, chat, x: view.sessions.list(tags=x),  # type: ignore[arg-type]
    "sessions.list(after=)": lambda host, view, chat, x: view.sessions.list(after=x),  # type: ignore[arg-type]
    "sessions.create(tags=)": lambda host, view, chat, x: view.sessions.create(tags=x),  # type: ignore[arg-type]
    "sessions.create(trace=)": lambda host, view, chat, x: view.sessions.create(trace=x),  # type: ignore[arg-type]
    "submit(session=)": lambda host, view, chat, x: view.submit(x, "hi"),  # type: ignore[arg-type]
    "submit(text=)": lambda host, view, chat, x: view.submit(chat, x),  # type: ignore[arg-type]
    "start(session=)": lambda host, view, chat, x: view.start(x, "hi"),  # type: ignore[arg-type]
    "job": lambda host, view, chat, x: view.job(x),  # type: ignore[arg-type]
    "cancel_job": lambda host, view, chat, x: view.cancel_job(x),  # type: ignore[arg-type]
    "jobs(session=)": lambda host, view, chat, x: view.jobs(session=x),  # type: ignore[arg-type]
    "jobs(tags=)": lambda host, view, chat, x: view.jobs(tags=x),  # type: ignore[arg-type]
    "jobs(after=)": lambda host, view, chat, x: view.jobs(after=x),  # type: ignore[arg-type]
    "notifications(session=)": lambda host, view, chat, x: view.notifications(session=x),  # type: ignore[arg-type]
    "notifications(tags=)": lambda host, view, chat, x: view.notifications(tags=x),  # type: ignore[arg-type]
    "mark_read": lambda host, view, chat, x: view.mark_read(x),  # type: ignore[arg-type]
    "log": lambda host, view, chat, x: view.log(x),  # type: ignore[arg-type]
    "transcript": lambda host, view, chat, x: view.transcript(x),  # type: ignore[arg-type]
    "pending_actions": lambda host, view, chat, x: view.pending_actions(x),  # type: ignore[arg-type]
    "confirm": lambda host, view, chat, x: view.confirm(x),  # type: ignore[arg-type]
    "dismiss": lambda host, view, chat, x: view.dismiss(x),  # type: ignore[arg-type]
    "run_command": lambda host, view, chat, x: view.run_command(x),  # type: ignore[arg-type]
    "completions": lambda host, view, chat, x: _sync(view.completions(x)),  # type: ignore[arg-type]
    "lineage.node": lambda host, view, chat, x: view.lineage.node(x),  # type: ignore[arg-type]
    "lineage.ancestors": lambda host, view, chat, x: view.lineage.ancestors(x),  # type: ignore[arg-type]
    "lineage.descendants(max_depth=)": lambda host, view, chat, x: view.lineage.descendants(chat, max_depth=x),  # type: ignore[arg-type]
    "lineage.chain": lambda host, view, chat, x: view.lineage.chain(x),  # type: ignore[arg-type]
    "lineage.tree": lambda host, view, chat, x: view.lineage.tree(x),  # type: ignore[arg-type]
    "lineage.forward": lambda host, view, chat, x: view.lineage.forward(x),  # type: ignore[arg-type]
    "lineage.backward": lambda host, view, chat, x: view.lineage.backward(x),  # type: ignore[call-overload]
    "lineage.forget": lambda host, view, chat, x: view.lineage.forget(x),  # type: ignore[arg-type]
    "lineage.add_edge(to_id=)": lambda host, view, chat, x: view.lineage.add_edge(chat, x, "continued_from"),  # type: ignore[arg-type]
    "lineage.find_by_artifact": lambda host, view, chat, x: view.lineage.find_by_artifact(x, x),  # type: ignore[arg-type]
    "lineage.html(root_id=)": lambda host, view, chat, x: view.lineage.html(x),  # type: ignore[arg-type]
    "lineage.html(title=)": lambda host, view, chat, x: view.lineage.html(title=x),  # type: ignore[arg-type]
    "traces.find": lambda host, view, chat, x: view.traces.find(x),  # type: ignore[arg-type]
    "traces.for_task": lambda host, view, chat, x: view.traces.for_task(x),  # type: ignore[arg-type]
    "traces.record_commit": lambda host, view, chat, x: view.traces.record_commit(x, "a" * 40),  # type: ignore[arg-type]
    "traces.attach_task": lambda host, view, chat, x: view.traces.attach_task(x, TaskRef(source="t", id="1")),  # type: ignore[arg-type]
    "subscribe(buffer=)": lambda host, view, chat, x: _subscribe(view, x),
}


async def _subscribe(view: ScopedHost, buffer: object) -> object:
    async with view.subscribe(buffer=buffer) as events:  # type: ignore[arg-type]
        return events


async def call_with(name: str, value: object, store_kind: str, dsn: str) -> None:
    with tempfile.TemporaryDirectory() as folder:
        async with Host(store=store_of(store_kind, folder, dsn)) as host:
            view = host.scoped({"user": "alice"})
            chat = await view.sessions.create()
            await view.submit(chat, "hello")
            await refuses_only_with_our_errors(lambda: CALLS[name](host, view, chat.id, value))


@pytest.mark.parametrize("name", sorted(CALLS))
@junk_settings
@given(value=junk, store_kind=store_kinds, backend=st.sampled_from(["asyncio", "trio"]))
def test_junk_in_any_scoped_argument_raises_only_a_modular_error(
    name: str, value: object, store_kind: str, backend: str, junk_database: str  # noqa: F811 - the fixture
) -> None:
    anyio.run(call_with, name, value, store_kind, junk_database, backend=backend)

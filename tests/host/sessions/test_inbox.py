"""The notifications inbox (API.md sections 12 and 13) on every store: read state is durable,
and an integrator filters it by owner tags."""

from __future__ import annotations

import pytest

from host_sim import Host
from modular_sdk import AiPromptMessage, InvalidArgumentError

from ..conftest import StoreFactory

pytestmark = pytest.mark.anyio


async def test_notifications_have_a_durable_read_state(any_store: StoreFactory) -> None:
    async with Host(store=any_store()) as host:
        a = await host.sessions.create()
        b = await host.sessions.create()
        first = await a.notify(title="build", body="green")
        await b.notify(title="deploy", body="done")
        await a.send(AiPromptMessage(text="not a notification"))
        assert [t.id for t in await host.notifications(session=a)] == [first.id]
        assert len(await host.notifications()) == 2
        await host.mark_read(first.message_id)
    async with Host(store=any_store()) as again:
        unread = await again.notifications()
        assert [t.message.type for t in unread] == ["notification"] and unread[0].id != first.id
        assert len(await again.notifications(unread_only=False)) == 2


async def test_alices_inbox_shows_only_her_sessions_notifications_oldest_first(any_store: StoreFactory) -> None:
    async with Host(store=any_store()) as host:
        alice = await host.sessions.create(tags={"user": "alice", "team": "core"})
        bob = await host.sessions.create(tags={"user": "bob", "team": "core"})
        untagged = await host.sessions.create()
        build = await alice.notify(title="build", body="green")
        await bob.notify(title="build", body="red")
        await untagged.notify(title="system", body="maintenance")
        fork = await alice.fork()  # inherits alice's tags
        deploy = await fork.notify(title="deploy", body="done")

        assert [t.id for t in await host.notifications(tags={"user": "alice"})] == [build.id, deploy.id]
        assert len(await host.notifications(tags={"team": "core"})) == 3
        assert await host.notifications(tags={"user": "alice", "team": "other"}) == []
        assert [t.id for t in await host.notifications(session=fork, tags={"user": "alice"})] == [deploy.id]
        assert await host.notifications(session=bob, tags={"user": "alice"}) == []

        await host.mark_read(build.id)
        assert [t.id for t in await host.notifications(tags={"user": "alice"})] == [deploy.id]
        assert len(await host.notifications(tags={"user": "alice"}, unread_only=False)) == 2


async def test_a_percent_or_underscore_in_a_tag_is_matched_literally(any_store: StoreFactory) -> None:
    async with Host(store=any_store()) as host:
        odd = await host.sessions.create(tags={"user": "a%_b"})
        other = await host.sessions.create(tags={"user": "axxb"})
        mine = await odd.notify(title="100% done", body="under_score")
        await other.notify(title="not mine", body="x")
        assert [t.id for t in await host.notifications(tags={"user": "a%_b"})] == [mine.id]
        assert await host.notifications(tags={"user": "a%"}) == []


@pytest.mark.parametrize(
    ("arguments", "named"),
    [
        ({"tags": ["user", "alice"]}, "tags"),
        ({"tags": {"user": 1}}, "tags"),
        ({"unread_only": "yes"}, "unread_only"),
        ({"session": 42}, "session"),
    ],
)
async def test_bad_inbox_arguments_name_the_value(arguments: dict[str, object], named: str) -> None:
    async with Host() as host:
        with pytest.raises(InvalidArgumentError, match=repr(next(iter(arguments.values()))).replace("[", r"\[")) as caught:
            await host.notifications(**arguments)  # type: ignore[arg-type]
        assert caught.value.argument == named

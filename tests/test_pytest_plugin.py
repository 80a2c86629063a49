"""The ``mod_host`` pytest plugin, used as a mod author would: from a fresh project, and here."""

from __future__ import annotations

import pytest

from host_sim import EchoModel, Host, ScriptedModel
from host_sim.pytest_plugin import ModHost
from modular_sdk import (
    AiSessionDisplayMetadata,
    ForkLineage,
    ModMetadata,
    RootLineage,
    SlashCommandContext,
    SpawnLineage,
    define_mod,
    slash_command,
)

pytest_plugins = ["pytester"]

TASK_MOD = '''
import anyio

from modular_sdk import (
    AiPromptMessage, EffectContext, ModMetadata, SlashCommandContext, define_mod, effect, slash_command,
)


async def run_task(argument: str | None, ctx: SlashCommandContext) -> str:
    if not argument:
        return "Usage: /task <prompt>"
    work = await ctx.session.fork()
    done = await work.send(AiPromptMessage(text=argument))
    report = await done.fork()
    summary = await report.run("Summarize")
    await ctx.session.notify(title=f"Task finished: {argument}", body=summary.text)
    return f"Started task {work.id}."


async def tick(ctx: EffectContext) -> None:
    await anyio.sleep_forever()


mod = define_mod(
    metadata=ModMetadata(display_name="Background Tasks", description="Fork work"),
    commands=[slash_command(id="task", description="Fork and work", run=run_task)],
    effects=[effect(id="ticker", activate=tick)],
)
'''

USER_TESTS = '''
import pytest

from host_sim import Host, ModelRequest, ScriptedModel
from host_sim.pytest_plugin import ModHost

from task_mod import mod

OPENED: list[Host] = []


@pytest.mark.anyio
async def test_task_reports_back(mod_host: ModHost) -> None:
    host = await mod_host(mod)
    OPENED.append(host)
    chat = await host.sessions.create()
    await host.submit(chat, "Refactor the parser")
    out = await host.submit(chat, "/task write the tests")
    assert out.ok, out.error
    note = await mod_host.last_notification(chat)
    assert note.title == "Task finished: write the tests"
    assert note.author.kind == "mod"
    work = (await chat.children())[0]
    assert [r.kind for r in await mod_host.lineage(work)] == ["fork", "root"]
    assert "notification" in await mod_host.transcript(chat)


@pytest.mark.anyio
async def test_scripted_model(mod_host: ModHost) -> None:
    def respond(request: ModelRequest) -> str:
        return f"scripted: {request.text}"

    host = await mod_host(mod, model=ScriptedModel(respond), handler_timeout=5)
    OPENED.append(host)
    chat = await host.sessions.create()
    reply = await host.submit(chat, "hello")
    assert reply.text == "scripted: hello"


@pytest.mark.anyio
async def test_fails_but_host_is_closed(mod_host: ModHost) -> None:
    OPENED.append(await mod_host(mod))
    assert False, "deliberate failure"
'''

CHECK_CLOSED = '''
import pytest

from test_task_mod import OPENED


def test_every_host_was_closed() -> None:
    assert len(OPENED) == 6  # three tests, two backends each
    for host in OPENED:
        assert [e.state for e in host.effects] == ["cancelled"]
        with pytest.raises(RuntimeError, match="this Host is closed"):
            host.sessions
'''


def test_fresh_project_uses_mod_host_on_both_backends(pytester: pytest.Pytester) -> None:
    """A conftest-free project gets ``mod_host`` from the entry point; hosts close at teardown."""
    pytester.makepyfile(task_mod=TASK_MOD, test_task_mod=USER_TESTS, test_z_closed=CHECK_CLOSED)
    result = pytester.runpytest_subprocess("-v", "-W", "error", "-p", "no:cacheprovider")
    result.assert_outcomes(passed=5, failed=2)
    result.stdout.fnmatch_lines_random(
        [
            "*test_task_reports_back?asyncio? PASSED*",
            "*test_task_reports_back?trio? PASSED*",
            "*test_scripted_model?asyncio? PASSED*",
            "*test_scripted_model?trio? PASSED*",
            "*test_fails_but_host_is_closed?asyncio? FAILED*",
            "*test_fails_but_host_is_closed?trio? FAILED*",
            "*test_every_host_was_closed PASSED*",
            "*AssertionError: deliberate failure*",
        ]
    )


def test_fresh_project_type_checks_with_mod_host(pytester: pytest.Pytester) -> None:
    """The fixture's type is importable, so a mod author's tests pass mypy --strict."""
    pytester.makepyfile(task_mod=TASK_MOD, test_task_mod=USER_TESTS)
    from mypy import api

    out, err, status = api.run(
        ["--strict", "--no-incremental", "--no-error-summary", str(pytester.path / "test_task_mod.py")]
    )
    assert status == 0, out + err


async def _echo_task(argument: str | None, ctx: SlashCommandContext) -> str:
    await ctx.session.fork(metadata=AiSessionDisplayMetadata(label="Work"))
    child = await ctx.session.spawn()
    await child.run("hi")
    await ctx.session.notify(title="one", body="first")
    await ctx.session.notify(title="two", body=argument or "")
    return "ok"


MOD = define_mod(
    metadata=ModMetadata(display_name="Helpers", description="Exercise the helpers"),
    commands=[slash_command(id="go", description="Fork, spawn, notify", run=_echo_task)],
)


@pytest.mark.anyio
async def test_helpers_read_lineage_and_notifications(mod_host: ModHost) -> None:
    host = await mod_host(MOD)
    chat = await host.sessions.create()
    await host.submit(chat, "start")
    out = await host.submit(chat, "/go body")
    assert out.ok, out.error
    fork, spawn = await chat.children()
    fork_chain = await mod_host.lineage(fork)
    assert isinstance(fork_chain[0], ForkLineage) and fork_chain[0].parent_turn_ordinal == 0
    assert isinstance(fork_chain[1], RootLineage)
    spawn_chain = await mod_host.lineage(spawn)
    assert isinstance(spawn_chain[0], SpawnLineage) and spawn_chain[0].trigger.kind == "command"
    notes = await mod_host.notifications(chat)
    assert [n.title for n in notes] == ["one", "two"]
    last = await mod_host.last_notification(chat)
    assert (last.title, last.body, last.turn.ordinal) == ("two", "body", 2)
    assert "[notification, system event from mod helpers /go] two" in await mod_host.transcript(chat)


@pytest.mark.anyio
async def test_last_notification_fails_as_an_assertion(mod_host: ModHost) -> None:
    host = await mod_host(MOD)
    chat = await host.sessions.create()
    await host.submit(chat, "start")
    with pytest.raises(AssertionError, match=r"has received no notification \(its turns: #0 prompt by user\)"):
        await mod_host.last_notification(chat)


@pytest.mark.anyio
async def test_several_hosts_and_keywords(mod_host: ModHost) -> None:
    first = await mod_host(MOD)
    second = await mod_host(MOD, model=ScriptedModel(lambda r: "fixed"), handler_timeout=None)
    assert mod_host.hosts == (first, second)
    chat = await second.sessions.create()
    assert (await second.submit(chat, "x")).text == "fixed"
    assert isinstance(first.model, EchoModel)
    # a session of the second host is found for its transcript, not confused with the first's
    assert "#0 [user] x" in await mod_host.transcript(chat)


@pytest.mark.anyio
async def test_transcript_refuses_a_foreign_session(mod_host: ModHost) -> None:
    await mod_host(MOD)
    async with Host(mods=[MOD]) as elsewhere:
        chat = await elsewhere.sessions.create()
        with pytest.raises(LookupError, match="belongs to no host opened by mod_host"):
            await mod_host.transcript(chat)


@pytest.mark.anyio
async def test_mods_are_separate_arguments(mod_host: ModHost) -> None:
    with pytest.raises(TypeError, match=r"write mod_host\(mod_a, mod_b\)"):
        await mod_host([MOD])  # type: ignore[arg-type]


BAD_SPEC_TEST = """
import pytest
from host_sim.pytest_plugin import ModHost


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


@pytest.mark.anyio
async def test_loads_a_missing_mod(mod_host: ModHost) -> None:
    await mod_host("no_such_mod_file.py")
"""


def test_a_spec_that_does_not_load_fails_the_test_at_its_line_without_the_loaders_traceback(
    pytester: pytest.Pytester,
) -> None:
    pytester.makepyfile(test_bad_spec=BAD_SPEC_TEST)
    result = pytester.runpytest_subprocess("-p", "no:cacheprovider")
    result.assert_outcomes(failed=1)
    out = result.stdout.str()
    assert "ManifestBuildError: cannot load mod 'no_such_mod_file.py': file 'no_such_mod_file.py' not found" in out
    assert "test_bad_spec.py:12: ManifestBuildError" in out  # the test's own line
    assert "fold/_sandbox.py" not in out and "fold/_spec.py" not in out and "contextlib.py" not in out

"""Argument completions (API.md section 17): ``slash_command(..., complete=fn)`` offers values
for what the user typed after the command name; ``host.completions`` stays a plain call for
command names, and awaiting it adds the values."""

from __future__ import annotations

import threading
from collections.abc import Sequence

import anyio
import pytest

from host_sim import Completion, Completions, Host
from modular_sdk import (
    CompletionContext,
    ModDefinitionError,
    ModMetadata,
    SlashCommandContext,
    define_mod,
    slash_command,
)

pytestmark = pytest.mark.anyio

TASKS = ["write the tests", "write the docs", "review the parser"]
seen: list[tuple[str, str, str]] = []


async def run_task(argument: str | None, ctx: SlashCommandContext) -> str:
    return f"started {argument}"


async def complete_task(prefix: str, ctx: CompletionContext) -> list[str]:
    seen.append((prefix, ctx.mod_id, ctx.command_id))
    return [t for t in TASKS if t.startswith(prefix)]


def complete_tag(prefix: str, ctx: CompletionContext) -> Sequence[str]:  # a plain def, in a worker thread
    assert threading.current_thread() is not threading.main_thread()
    return ("urgent", "later")


def broken(prefix: str, ctx: CompletionContext) -> list[str]:
    raise RuntimeError("the index is gone")


async def slow(prefix: str, ctx: CompletionContext) -> list[str]:
    await anyio.sleep(30)
    return ["never"]


def not_strings(prefix: str, ctx: CompletionContext) -> object:
    return "write"  # a str is not a sequence of values


mod = define_mod(
    metadata=ModMetadata(display_name="Tasks", description="Background tasks"),
    commands=[
        slash_command(id="task", description="Run a task", argument_hint="<what>", run=run_task, complete=complete_task),
        slash_command(id="tag", description="Tag the session", run=run_task, complete=complete_tag),
        slash_command(id="table", description="Show a table", run=run_task),
        slash_command(id="broken", description="A broken completer", run=run_task, complete=broken),
        slash_command(id="slow", description="A slow completer", run=run_task, complete=slow),
        slash_command(id="odd", description="An odd completer", run=run_task, complete=not_strings),  # type: ignore[arg-type]
    ],
)


@pytest.fixture(autouse=True)
def clear() -> None:
    seen.clear()


async def test_awaiting_completions_of_a_typed_argument_offers_the_commands_values_first() -> None:
    async with Host(mods=[mod]) as host:
        found = await host.completions("/task wri")
        assert [(c.name, c.argument) for c in found[:2]] == [("task", "write the tests"), ("task", "write the docs")]
        assert found[0] == Completion(
            name="task", description="Run a task", argument_hint="<what>", mod_id="tasks", argument="write the tests"
        )
        assert [c.name for c in found[2:]][0] == "task"  # then the commands, as a plain call lists them
        assert seen == [("wri", "tasks", "task")]


async def test_a_plain_call_stays_a_list_of_commands_and_runs_no_completer() -> None:
    async with Host(mods=[mod]) as host:
        found = host.completions("/task wri")
        assert isinstance(found, Completions) and isinstance(found, list)
        assert found[0].name == "task" and all(c.argument is None for c in found)
        assert seen == []
        assert await host.completions("/ta") == host.completions("/ta")  # no argument typed: nothing to add


async def test_a_plain_def_completer_runs_in_a_worker_thread() -> None:
    async with Host(mods=[mod]) as host:
        found = await host.completions("/tag ")
        assert [c.argument for c in found if c.argument is not None] == ["urgent", "later"]


@pytest.mark.parametrize("typed", ["/broken x", "/slow x", "/odd x", "/table x", "/nosuch x"])
async def test_a_completer_that_fails_times_out_or_offers_no_strings_offers_nothing_and_never_raises(typed: str) -> None:
    async with Host(mods=[mod], handler_timeout=0.2) as host:
        with anyio.fail_after(5):
            found = await host.completions(typed)
        assert all(c.argument is None for c in found)
        assert found == host.completions(typed)


def test_a_completer_that_cannot_take_prefix_and_ctx_is_refused_when_declared() -> None:
    def wrong(prefix: str) -> list[str]:
        return []

    with pytest.raises(ModDefinitionError, match=r"complete .*wrong\(prefix.* cannot be called as complete\(prefix, ctx\).*async def complete"):
        slash_command(id="bad", description="Bad", run=run_task, complete=wrong)  # type: ignore[arg-type]

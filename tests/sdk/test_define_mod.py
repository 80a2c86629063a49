"""`define_mod` gathers a mod into one frozen value and reports every problem at once."""

from __future__ import annotations

import re
from typing import Any

import attrs
import pytest

from modular_sdk import (
    HOST_ACTIONS,
    ActionEvent,
    AiContributions,
    Allow,
    CommandContext,
    Deny,
    EffectContext,
    Mod,
    ModDefinitionError,
    ModMetadata,
    SlashCommandContext,
    ToolContext,
    agent,
    before_action,
    command,
    define_mod,
    effect,
    slash_command,
    tool,
    view,
)


async def run_task(argument: str | None, ctx: SlashCommandContext) -> str:
    return f"started {argument}"


def open_panel(ctx: CommandContext) -> None:
    return None


@attrs.frozen(kw_only=True)
class NoteInput:
    """A note for later."""

    text: str


async def take_note(input: NoteInput, ctx: ToolContext) -> str:
    return input.text


async def watch(ctx: EffectContext) -> None:
    return None


def no_forks(event: ActionEvent) -> Allow | Deny:
    return Deny(reason="forks are disabled in this workspace")


METADATA = ModMetadata(display_name="Background Tasks", description="Run work in the background")


def task_mod(**overrides: Any) -> Mod:
    """The `/task` mod of the guide, with any argument replaced."""
    arguments: dict[str, Any] = {
        "metadata": METADATA,
        "commands": [
            slash_command(id="task", description="Run work in the background", run=run_task),
            command(id="tasks.open", title="Open the task list", run=open_panel),
        ],
        "ai": AiContributions(
            tools=[tool(name="note", description="Take a note", input_type=NoteInput, run=take_note)],
            agents=[agent(id="worker", description="Does the work")],
        ),
        "hooks": [before_action("session.fork", no_forks), before_action("command:task", no_forks)],
        "effects": [effect(id="watch", activate=watch)],
        "views": [view(id="count", title="Count", render=str)],
    }
    arguments.update(overrides)
    return define_mod(**arguments)


# -- the happy path -----------------------------------------------------------------


def test_define_mod_returns_frozen_data_with_tuples() -> None:
    mod = task_mod()
    assert isinstance(mod, Mod)
    assert [c.id for c in mod.commands] == ["task", "tasks.open"]
    assert isinstance(mod.commands, tuple)
    assert isinstance(mod.hooks, tuple)
    assert isinstance(mod.ai.tools, tuple)
    with pytest.raises(attrs.exceptions.FrozenInstanceError):
        mod.id = "other"  # type: ignore[misc]


def test_the_mod_id_defaults_to_the_slug_of_the_display_name() -> None:
    assert task_mod().id == "background-tasks"
    named = ModMetadata(display_name="  Code Review 2.0!  ", description="Reviews")
    assert define_mod(metadata=named).id == "code-review-2-0"


def test_an_explicit_id_wins_over_the_slug() -> None:
    assert task_mod(id="tasks").id == "tasks"


def test_a_display_name_with_no_usable_slug_asks_for_an_id() -> None:
    with pytest.raises(ModDefinitionError) as info:
        define_mod(metadata=ModMetadata(display_name="42 Things", description="Numbers"))
    assert str(info.value) == (
        "define_mod: metadata.display_name '42 Things' gives no valid mod id "
        "(it must start with a letter); pass id='my-mod'"
    )
    assert info.value.field == "id"
    assert info.value.value == "42 Things"


def test_an_explicit_bad_id_is_refused() -> None:
    with pytest.raises(ModDefinitionError, match=r"mod id 'Tasks' is not a valid id.*try 'tasks'") as info:
        task_mod(id="Tasks")
    assert info.value.field == "id"
    assert info.value.value == "Tasks"


def test_define_mod_is_pure_equal_inputs_give_equal_values() -> None:
    assert task_mod() == task_mod()
    assert hash(task_mod()) == hash(task_mod())
    assert task_mod() != task_mod(id="other")


def test_define_mod_accepts_no_ai_and_gives_empty_contributions() -> None:
    mod = define_mod(metadata=METADATA)
    assert mod.ai == AiContributions()
    assert (mod.commands, mod.hooks, mod.effects, mod.views) == ((), (), (), ())


def test_evolve_on_a_mod_checks_the_whole_again() -> None:
    mod = task_mod()
    with pytest.raises(ModDefinitionError, match="command id 'task' is declared twice") as info:
        attrs.evolve(mod, commands=(*mod.commands, mod.commands[0]))
    assert info.value.field == "commands[2].id"


# -- hook targets -----------------------------------------------------------------------


@pytest.mark.parametrize("action", HOST_ACTIONS)
def test_a_hook_may_target_every_host_action(action: str) -> None:
    assert task_mod(hooks=[before_action(action, no_forks)]).hooks[0].target == action


def test_a_hook_may_target_the_mods_own_palette_command() -> None:
    assert task_mod(hooks=[before_action("command:tasks.open", no_forks)]).hooks[0].target == "command:tasks.open"


def test_a_misspelt_command_target_suggests_the_close_match() -> None:
    with pytest.raises(ModDefinitionError) as info:
        task_mod(hooks=[before_action("command:tsak", no_forks)])
    assert str(info.value) == (
        "define_mod(id='background-tasks'): hook target 'command:tsak' names no command of mod "
        "'background-tasks' (its commands: 'task', 'tasks.open'); did you mean 'command:task'? "
        "(expected one of: 'session.create', 'session.spawn', 'session.fork', 'session.send', "
        "'session.notify', 'command:task', 'command:tasks.open')"
    )
    assert info.value.field == "hooks[0].target"
    assert info.value.value == "command:tsak"


def test_a_misspelt_host_action_suggests_the_close_match() -> None:
    with pytest.raises(ModDefinitionError, match=re.escape("did you mean 'session.fork'?")) as info:
        task_mod(hooks=[before_action("session.frok", no_forks)])
    assert "is neither a host action nor 'command:<id>' of this mod" in str(info.value)
    assert info.value.field == "hooks[0].target"


def test_a_target_far_from_anything_lists_what_is_expected_without_a_guess() -> None:
    with pytest.raises(ModDefinitionError, match=r"expected one of: 'session.create'") as info:
        task_mod(hooks=[before_action("delete everything", no_forks)])
    assert "did you mean" not in str(info.value)


def test_a_command_target_of_a_mod_without_commands_says_it_has_none() -> None:
    with pytest.raises(ModDefinitionError, match=re.escape("(its commands: none)")):
        define_mod(metadata=METADATA, hooks=[before_action("command:task", no_forks)])  # type: ignore[modular-hook-target]


def test_a_command_target_names_a_command_of_this_mod_not_of_another() -> None:
    other = slash_command(id="review", description="Review", run=run_task)
    assert other.id == "review"
    with pytest.raises(ModDefinitionError, match="names no command of mod 'background-tasks'"):
        task_mod(hooks=[before_action("command:review", no_forks)])


# -- duplicates -----------------------------------------------------------------------


def test_a_slash_command_and_a_palette_command_share_one_id_space() -> None:
    with pytest.raises(ModDefinitionError) as info:
        task_mod(
            commands=[
                slash_command(id="task", description="Run", run=run_task),
                command(id="task", title="Task", run=open_panel),
            ]
        )
    assert str(info.value) == (
        "define_mod(id='background-tasks'): command id 'task' is declared twice "
        "(commands[0] and commands[1]); give each a distinct id"
    )
    assert info.value.field == "commands[1].id"
    assert info.value.value == "task"


@pytest.mark.parametrize(
    ("overrides", "field", "what"),
    [
        (
            {"ai": AiContributions(tools=[tool(name="note", description="Note", input_type=NoteInput, run=take_note)] * 2)},
            "ai.tools[1].id",
            "tool name 'note'",
        ),
        ({"ai": AiContributions(agents=[agent(id="worker", description="Works")] * 2)}, "ai.agents[1].id", "agent id 'worker'"),
        ({"effects": [effect(id="watch", activate=watch)] * 2}, "effects[1].id", "effect id 'watch'"),
        ({"views": [view(id="count", title="Count", render=str)] * 2}, "views[1].id", "view id 'count'"),
    ],
    ids=["tools", "agents", "effects", "views"],
)
def test_duplicate_ids_are_refused_in_every_list(overrides: dict[str, Any], field: str, what: str) -> None:
    with pytest.raises(ModDefinitionError, match=re.escape(f"{what} is declared twice")) as info:
        task_mod(**overrides)
    assert info.value.field == field


# -- wrong kinds of things in the lists -------------------------------------------------


def test_a_command_list_entry_must_come_from_a_command_constructor() -> None:
    with pytest.raises(ModDefinitionError, match=re.escape("commands[0] must be made by slash_command(...) or command(...), got 'task' (str)")) as info:
        task_mod(commands=["task"])
    assert info.value.field == "commands[0]"
    assert info.value.value == "task"


def test_a_hook_list_entry_must_come_from_before_action() -> None:
    with pytest.raises(ModDefinitionError, match=re.escape("hooks[0] must be made by before_action")) as info:
        task_mod(hooks=[no_forks])
    assert info.value.value is no_forks


def test_metadata_must_be_mod_metadata() -> None:
    with pytest.raises(ModDefinitionError, match=re.escape("metadata must be a ModMetadata")):
        define_mod(metadata={"display_name": "Tasks"}, id="tasks")  # type: ignore[arg-type]


# -- every problem at once ---------------------------------------------------------------


def test_every_problem_of_one_call_is_reported_at_once() -> None:
    with pytest.raises(ModDefinitionError) as info:
        task_mod(
            id="Tasks",
            commands=[
                slash_command(id="task", description="Run", run=run_task),
                slash_command(id="task", description="Run again", run=run_task),
            ],
            hooks=[before_action("command:tsak", no_forks), before_action("session.frok", no_forks)],
            views=[view(id="count", title="Count", render=str)] * 2,
        )
    error = info.value
    assert str(error).startswith("define_mod(id='Tasks') has 5 problems:\n  - mod id 'Tasks'")
    assert [(p.field, p.value) for p in error.problems] == [
        ("id", "Tasks"),
        ("commands[1].id", "task"),
        ("hooks[0].target", "command:tsak"),
        ("hooks[1].target", "session.frok"),
        ("views[1].id", "count"),
    ]
    assert all(isinstance(p, ModDefinitionError) for p in error.problems)
    assert error.field == "id"
    assert error.value == "Tasks"
    for problem in error.problems:
        assert str(problem).startswith("define_mod(id='Tasks'): ")
        assert str(problem).removeprefix("define_mod(id='Tasks'): ") in str(error)


def test_a_single_problem_is_its_own_only_problem() -> None:
    with pytest.raises(ModDefinitionError) as info:
        task_mod(hooks=[before_action("session.frok", no_forks)])
    assert info.value.problems == (info.value,)


def test_define_mod_registers_nothing_and_can_be_called_again() -> None:
    first = task_mod()
    with pytest.raises(ModDefinitionError):
        task_mod(hooks=[before_action("command:nope", no_forks)])
    assert task_mod() == first

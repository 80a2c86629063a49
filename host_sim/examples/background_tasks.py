"""``/task``: fork this conversation, run work in the fork, report back.

The flagship example. It forks the conversation, runs the work in the fork, forks again
*at the exact completed work turn* (``completed_work.fork()``, not ``work.fork()``: another
turn may have entered the work session since, and "the current end" would move with it),
asks that report fork for a summary, and notifies the original session.
"""

from __future__ import annotations

from modular_sdk import (
    AiPromptMessage,
    AiSessionDisplayMetadata,
    ModMetadata,
    SlashCommandContext,
    define_mod,
    slash_command,
)


async def run_task(argument: str | None, ctx: SlashCommandContext) -> str:
    prompt = argument.strip() if argument is not None else None
    if prompt is None or len(prompt) == 0:
        return "Usage: /task <prompt>"

    work = await ctx.session.fork(
        metadata=AiSessionDisplayMetadata(label="Task", icon="CodiconChecklist"),
    )
    completed_work = await work.send(AiPromptMessage(text=prompt))
    report = await completed_work.fork(
        metadata=AiSessionDisplayMetadata(label="Task report"),
    )
    summary = await report.run(
        "Summarize the completed work, including files, commands, and results."
    )

    await ctx.session.notify(
        title=f"Task finished: {prompt}",
        body=f"{summary.text}\n\nSession {work.id}",
    )
    return f"Started task {work.id}."


task = slash_command(
    id="task",
    description="Fork this conversation and run background work.",
    argument_hint="<prompt>",
    run=run_task,
)

mod = define_mod(
    metadata=ModMetadata(
        display_name="Background Tasks",
        description="Fork conversations into background work",
    ),
    commands=[task],
)

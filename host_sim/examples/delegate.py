"""``/delegate``: spawn a fresh child session for a sub-job and report its answer.

A spawn starts with an empty history (unlike a fork) and inherits the parent's model and
working directory; its lineage records the command that made it.
"""

from __future__ import annotations

from modular_sdk import AiSessionDisplayMetadata, ModMetadata, SlashCommandContext, define_mod, slash_command


async def delegate(argument: str | None, ctx: SlashCommandContext) -> str:
    if not argument:
        return "Usage: /delegate <job>"
    child = await ctx.session.spawn(metadata=AiSessionDisplayMetadata(label="Delegated"))
    answer = await child.run(argument)
    return f"{child.id} answered: {answer.text}"


mod = define_mod(
    metadata=ModMetadata(display_name="Delegate", description="Hand a job to a fresh child session"),
    commands=[
        slash_command(id="delegate", description="Spawn a child session for a job", argument_hint="<job>", run=delegate)
    ],
)

"""Agents: declare a reviewer agent and start a root session configured by it.

``ctx.ai.agents.get(id).spawn()`` makes a *root* session from the workspace catalogue,
not a child of the current one: use ``ctx.session.spawn()`` when parent-child lineage
matters.
"""

from __future__ import annotations

from modular_sdk import AiContributions, ModMetadata, SlashCommandContext, agent, define_mod, slash_command


async def review(argument: str | None, ctx: SlashCommandContext) -> str:
    reviewer = await ctx.ai.agents.get("reviewer").spawn()
    verdict = await reviewer.run(f"Review: {argument or 'the current change'}")
    return f"Reviewer session {reviewer.id}: {verdict.text}"


mod = define_mod(
    metadata=ModMetadata(display_name="Reviewers", description="A review agent on demand"),
    commands=[slash_command(id="review", description="Ask the reviewer agent", argument_hint="[what]", run=review)],
    ai=AiContributions(
        agents=[
            agent(
                id="reviewer",
                description="Reviews changes strictly",
                instructions="You are a strict code reviewer. Answer with findings only.",
            )
        ]
    ),
)

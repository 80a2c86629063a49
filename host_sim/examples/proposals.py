"""Traces: a tool that reports the proposal it made, and an action the user confirms.

``create_proposal`` is what a model calls when a discussion has become a design: it writes
nothing here (a real mod would hand the text to its spec store) and reports the output it
produced with ``ctx.report_output``, so the host links the proposal to the trace of the
session. The mod never names a trace or a session.

``task.create`` is an action the model may *propose* in its reply,
``<mod-action type="task.create">{"title": ...}</mod-action>``; nothing happens until the
user confirms it (``host.confirm``). It answers the task ref of the local task it made,
which the host application attaches to the chat's trace (``host.traces.attach_task``):
the trace keeps its ``chat`` origin.
"""

from __future__ import annotations

import re

import attrs

from modular_sdk import ActionContext, AiContributions, ModMetadata, ToolContext, action, define_mod, tool


@attrs.frozen
class ProposalInput:
    """A proposal: a stable change id and its title."""

    change_id: str = attrs.field(metadata={"description": "A stable id for the change, like 'chg-parser-errors'"})
    title: str = attrs.field(metadata={"description": "One line saying what the change does"})


@attrs.frozen
class NewTask:
    """A local task the model suggests creating from the discussion."""

    title: str
    description: str = ""


async def create_proposal(proposal: ProposalInput, ctx: ToolContext) -> str:
    await ctx.report_output(kind="proposal", output_id=proposal.change_id)
    return f"proposal {proposal.change_id} created: {proposal.title}"


def create_task(task: NewTask, ctx: ActionContext) -> str:
    slug = re.sub(r"[^a-z0-9]+", "-", task.title.lower()).strip("-") or "task"
    return f"local:{slug}"


mod = define_mod(
    metadata=ModMetadata(display_name="Proposals", description="Proposals linked to why they exist"),
    ai=AiContributions(
        tools=[
            tool(
                name="create_proposal",
                description="Record a change proposal once the discussion has settled on a design",
                input_type=ProposalInput,
                run=create_proposal,
            )
        ]
    ),
    actions=[
        action(
            type="task.create",
            description="Create a local task for this discussion (the user confirms first)",
            payload_type=NewTask,
            run=create_task,
        )
    ],
)

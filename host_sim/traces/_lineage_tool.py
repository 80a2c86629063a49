"""``Host(builtin_tools=("lineage",))``: the read-only ``lineage_lookup`` tool for agents.

It answers "why does this exist" for an id the agent has (a commit hash, an output id, a
session id, a task ref or a trace id) from the store's trace index, as it is: it writes
nothing and never calls the host's commit resolver.
"""

from __future__ import annotations

from typing import Final

import attrs

from modular_sdk import AiContributions, Mod, ModMetadata, SessionId, ToolContext, define_mod, tool
from modular_sdk._frozen import thaw_object

from ..stores._protocol import Store
from ..stores._traces import TraceStore
from ._service import assemble, no_traces
from ._visible import Tags, admits, visible_trace

__all__ = ["BUILTIN_MOD_ID", "BUILTIN_TOOLS", "LineageLookup", "builtin_mod"]

BUILTIN_MOD_ID: Final = "host-sim"
BUILTIN_TOOLS: Final = ("lineage",)


@attrs.frozen(kw_only=True)
class LineageLookup:
    """The input of ``lineage_lookup``: any id the agent has."""

    id: str


async def lookup(store: Store, key: str, scope: Tags = None) -> dict[str, object]:
    """The trace ``key`` leads to as JSON data, or ``{"of": key, "error": ...}``.

    Within ``scope`` (the tags of the session whose model asks) it answers only what the
    scope sees (`visible_trace`, the one scope check of traces): a key outside it is
    answered exactly as a missing one.
    """
    if not isinstance(store, TraceStore):
        return {"of": key, "error": str(no_traces(store))}
    records = await visible_trace(store, store, scope, key) if isinstance(key, str) and key else None
    if records is None and isinstance(key, str) and key:
        # a session the scope sees (and only one it sees: no oracle) that has no trace says so
        session = await store.get_session(SessionId(key))
        if session is not None and admits(scope, session.tags):
            return {
                "of": key,
                "error": f"session {key!r} has no trace: no task started it and it reported no output "
                "(a trace begins with host.traces.for_task or a tool's ctx.report_output); "
                "its lineage is in host-sim lineage",
            }
    if records is None:
        return {
            "of": key,
            "error": f"no trace is found by {key!r}: it is no commit, output, session, task ref or trace id the host knows",
        }
    trace = assemble(records)
    sessions: list[dict[str, object]] = []
    for link in trace.links:
        record = await store.get_session(link.session_id)
        label = None if record is None or record.metadata is None else record.metadata.label
        sessions.append(
            {
                "session_id": link.session_id,
                "label": label,
                "joined_at": link.created_at.isoformat(),
                "outputs": [
                    {"output_id": o.output_id, "kind": o.kind, "created_at": o.created_at.isoformat(), "commit": o.commit}
                    for o in link.outputs
                ],
            }
        )
    task = trace.task
    return {
        "of": key,
        "trace": trace.id,
        "origin": trace.origin,
        "task": None if task is None else {"ref": task.ref, "snapshot": thaw_object(task.snapshot), "captured_at": task.captured_at.isoformat()},
        "sessions": sessions,
        "created_at": trace.created_at.isoformat(),
        "updated_at": trace.updated_at.isoformat(),
    }


def builtin_mod(names: tuple[str, ...], store: Store) -> Mod:
    """The host's own tools, as the mod ``host-sim``."""
    tools = []
    if "lineage" in names:

        async def lineage_lookup(query: LineageLookup, ctx: ToolContext) -> dict[str, object]:
            # the session the model runs in decides what it sees: its tags are its scope (docs/embedding.md)
            record = await store.get_session(SessionId(ctx.session.id))
            return await lookup(store, query.id, None if record is None else record.tags)

        tools.append(
            tool(
                name="lineage_lookup",
                description=(
                    "Find why something exists: give any id you have (a commit hash, a proposal or "
                    "output id, a session id, a task ref like 'github:42', a trace id) and get its "
                    "trace as JSON: origin (task or chat), the task and its snapshot, the sessions "
                    "that worked on it (with labels) and their outputs with the commits that landed "
                    "them. Read-only."
                ),
                input_type=LineageLookup,
                run=lineage_lookup,
            )
        )
    return define_mod(
        id=BUILTIN_MOD_ID,
        metadata=ModMetadata(display_name="host-sim", description="Tools built into the host"),
        ai=AiContributions(tools=tools),
    )

"""``host-sim demo``: the ``/task`` scenario on the offline `EchoModel`."""

from __future__ import annotations

import argparse

import anyio

from modular_sdk import SessionId

from ..examples.background_tasks import mod as task_mod
from ..lineage._render import render_lineage_tree, select_lineage_chain
from ..sessions._handles import SessionHandle
from ._endings import stops_on_ctrl_c
from ._model_option import add_model_options, chosen_model
from ._options import add_backend, add_store, open_store
from ._session_io import make_host, report_error

__all__ = ["register"]


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    parser = sub.add_parser(
        "demo",
        help="run the /task scenario offline and print transcripts and lineage",
        description="Run the /task example (host_sim.examples.background_tasks, shipped in the "
        "package) on the built-in offline EchoModel: one prompt, then "
        "'/task write the tests'; print every session's transcript and the lineage tree. "
        "The sessions are kept in the store (see --store), so host-sim lineage shows them. "
        "--model runs it on a real or recorded model instead.",
    )
    add_model_options(parser)
    add_store(parser)
    add_backend(parser)
    parser.set_defaults(handler=_main)


async def demo(args: argparse.Namespace) -> str:
    """Run the scenario and return what the command prints."""
    out: list[str] = []
    with open_store(args) as (store, path):
        async with make_host([task_mod], store=store, timeout=30.0, model=chosen_model(args)) as host:
            chat = await host.sessions.create()
            out.append(f"$ (in session {chat.id}) Refactor the parser")
            first = await host.submit(chat, "Refactor the parser")
            out.append(first.text)
            out.append(f"$ (in session {chat.id}) /task write the tests")
            started = await host.submit(chat, "/task write the tests")
            out.append(started.text)
            # The store may hold earlier runs: show this run's sessions only (the chat's tree).
            everything = []
            frontier: list[SessionHandle] = [chat]
            while frontier:
                handle = frontier.pop(0)
                everything.append(handle._state.record)
                frontier += [c for c in await handle.children() if isinstance(c, SessionHandle)]
            records = select_lineage_chain(everything, SessionId(chat.id))
            counts: dict[SessionId, int] = {}
            for record in records:
                session = await host.sessions.get(record.id)
                label = session.metadata.label if session.metadata else "chat"
                counts[record.id] = len(await session.turns())
                out.append("")
                out.append(f"== transcript of {session.id} ({label}, {session.lineage.kind}) ==")
                out.append(await host.transcript(session))
            out.append("")
            out.append("== lineage ==")
            out.append(render_lineage_tree(records, counts))
    if path is not None:
        out.append("")
        out.append(f"(sessions kept in {path}; draw them with: host-sim lineage --html lineage.html)")
    return "\n".join(out)


def _main(args: argparse.Namespace) -> int:
    backend: str = args.backend
    try:
        text = anyio.run(stops_on_ctrl_c, lambda: demo(args), backend=backend)
    except BaseException as exc:  # noqa: BLE001 - report_error re-raises what it does not own
        return report_error("demo", exc)
    print(text)
    return 0

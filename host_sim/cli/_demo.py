"""``host-sim demo``: the ``/task`` scenario on the offline `EchoModel`."""

from __future__ import annotations

import argparse
import importlib.util
from pathlib import Path

import anyio

from modular_sdk import Mod

from ..lineage._render import render_lineage_tree
from ..models._echo import EchoModel
from ..sessions._host import Host

__all__ = ["register"]


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    parser = sub.add_parser(
        "demo",
        help="run the /task scenario offline and print transcripts and lineage",
        description="Run the /task example on the built-in offline EchoModel: one prompt, "
        "then '/task write the tests'; print every session's transcript and the lineage tree.",
    )
    parser.add_argument("--backend", choices=("asyncio", "trio"), default="asyncio")
    parser.set_defaults(handler=_main)


def _example_mod() -> Mod:
    """The ``/task`` mod from ``examples/background_tasks.py`` of this checkout."""
    path = Path(__file__).resolve().parents[2] / "examples" / "background_tasks.py"
    spec = importlib.util.spec_from_file_location("examples.background_tasks", path)
    if spec is None or spec.loader is None or not path.exists():
        raise SystemExit(f"host-sim demo: cannot find the /task example at {path}")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    mod = module.mod
    assert isinstance(mod, Mod)
    return mod


async def demo() -> str:
    """Run the scenario and return what the command prints."""
    mod = _example_mod()
    out: list[str] = []
    async with Host(mods=[mod], model=EchoModel()) as host:
        chat = await host.sessions.create()
        out.append(f"$ (in session {chat.id}) Refactor the parser")
        first = await host.submit(chat, "Refactor the parser")
        out.append(first.text)
        out.append(f"$ (in session {chat.id}) /task write the tests")
        started = await host.submit(chat, "/task write the tests")
        out.append(started.text)
        sessions = await host.sessions.list()
        for session in sessions:
            label = session.metadata.label if session.metadata else "chat"
            out.append("")
            out.append(f"== transcript of {session.id} ({label}, {session.lineage.kind}) ==")
            out.append(await host.transcript(session))
        out.append("")
        out.append("== lineage ==")
        records = [host._session(s).record for s in sessions]
        counts = {s.id: len(await s.turns()) for s in sessions}
        out.append(render_lineage_tree(records, counts))
    return "\n".join(out)


def _main(args: argparse.Namespace) -> int:
    backend: str = args.backend
    print(anyio.run(demo, backend=backend))
    return 0

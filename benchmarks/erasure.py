"""What one erasure costs: ``forget`` of a turn that N later turns rest on, beside J jobs.

For each size, a session gets one turn and N more that rest on it (each with a proposed
action), and another session runs J jobs (rows the erasure must not touch). Forgetting
the first turn then erases N + 1 turns, their actions and, through the one walk, every
other place that keeps text, in one transaction. The time should grow with N (what is
erased), not with J (what is not).

    python benchmarks/erasure.py [--sizes 500,2000] [--jobs 4000] [--store sqlite|memory]
"""

from __future__ import annotations

import argparse
import tempfile
import time
from pathlib import Path

import anyio
import attrs

from host_sim import Host, MemoryStore, ModelRequest, ScriptedModel, SqliteStore, Store
from modular_sdk import ActionContext, ModMetadata, action, define_mod


@attrs.frozen
class Note:
    text: str


def _save(payload: Note, ctx: ActionContext) -> None:
    return None


MOD = define_mod(
    metadata=ModMetadata(display_name="Notes", description="notes"),
    actions=[action(type="note.save", description="Save a note", payload_type=Note, run=_save)],
)


def _respond(request: ModelRequest) -> str:
    return f'ok <mod-action type="note.save">{{"text": "{len(request.text)}"}}</mod-action>'


async def _measure(store: Store, resting: int, jobs: int) -> float:
    async with Host(mods=[MOD], model=ScriptedModel(_respond), store=store) as host:
        other = await host.sessions.create()
        for index in range(jobs):
            await (await host.start(other, f"job {index}")).wait()
        chat = await host.sessions.create()
        first = await host.submit(chat, "the turn to forget")
        assert first.turn is not None
        for index in range(resting):
            await host.submit(chat, f"turn {index}")
        started = time.perf_counter()
        plan = await host.lineage.forget(first.turn.id, dry_run=False)
        elapsed = time.perf_counter() - started
        assert len(plan.turns) == resting + 1
        return elapsed


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default="500,2000", help="resting turns per run (comma-separated)")
    parser.add_argument("--jobs", type=int, default=4000, help="jobs of another session beside them")
    parser.add_argument("--store", choices=("sqlite", "memory"), default="sqlite")
    args = parser.parse_args()
    for size in (int(s) for s in args.sizes.split(",")):
        with tempfile.TemporaryDirectory() as folder:
            store: Store = MemoryStore() if args.store == "memory" else SqliteStore(Path(folder) / "erasure.sqlite")
            elapsed = anyio.run(_measure, store, size, args.jobs)
        print(f"{args.store}: forget of a turn {size} turns rest on, beside {args.jobs} jobs: {elapsed:.3f} s")


if __name__ == "__main__":
    main()

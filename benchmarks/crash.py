"""kill -9 a writing host again and again: what is lost, what is torn, does the next host open?

Runs the crash test's harness (``tests/host/crash_writer.py``) for many kills: a writer
subprocess opens ``Host(store=SqliteStore(PATH))`` and does random operations (create, send,
notify, fork, turn.fork, spawn from a slash command) with three concurrent workers,
acknowledging each on stdout once its await returns; it is killed 50-300 ms after its host
opened (one run in four: after its process started, so that kills also land while a host
recovers the previous kill), the file is checked read-only with the store's invariant
checker, and a new writer (alternately asyncio and trio) is started on the same file. Prints the counts; exits 1 when
anything acknowledged was lost, a session was torn or a writer failed. Target: 0, 0, 0.

    python benchmarks/crash.py [--kills 200] [--seed N] [--store PATH]
"""

from __future__ import annotations

import argparse
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tests"))  # the harness is the crash test's

from host.crash_writer import CrashReport, run_crashes, violations_after_recovery  # noqa: E402


def _progress(done: int, report: CrashReport) -> None:
    if done % 10 == 0:
        print(
            f"  {done:>4} kills  {report.acknowledged:>6} acknowledged  lost {len(report.lost)}  "
            f"torn {len(report.torn)}  writer failures {len(report.failures)}  {report.seconds:6.1f} s",
            flush=True,
        )


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--kills", type=int, default=200, help="writers to start and kill (default 200)")
    parser.add_argument("--seed", type=int, default=20261202, help="seed of the delays and the writers' RNGs")
    parser.add_argument("--store", type=Path, default=None, help="keep the store at PATH (default: a temp dir)")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="host-sim-crash-") as tmp:
        store: Path = args.store if args.store is not None else Path(tmp) / "crash.sqlite"
        print(f"store={store} kills={args.kills} seed={args.seed}", flush=True)
        report = run_crashes(store, Path(tmp), kills=args.kills, seed=args.seed, progress=_progress)
        after = violations_after_recovery(store)
    for label, items in (("lost", report.lost), ("torn", report.torn), ("writer failure", report.failures)):
        for item in items[:10]:
            print(f"{label}: {item}")
    print(f"kills                     {report.kills}")
    print(f"writers that opened       {report.opened}")
    print(f"acknowledged operations   {report.acknowledged}")
    print(f"lost                      {len(report.lost)}")
    print(f"torn                      {len(report.torn)}")
    print(f"writer failures           {len(report.failures)}")
    print(f"turns caught running      {report.interrupted}")
    print(f"violations after reopen   {len(after)}")
    print(f"wall time                 {report.seconds:.1f} s")
    return 1 if report.lost or report.torn or report.failures or after else 0


if __name__ == "__main__":
    sys.exit(main())

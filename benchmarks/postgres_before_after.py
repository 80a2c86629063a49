"""A PostgreSQL turn before and after a change, in one run: ms per turn at N = 10 and 1,000
and write transactions per turn, fork and ``sessions.delete``, of this checkout and of
another copy of the project (the "before": e.g. ``git archive main | tar -x -C /tmp/base``),
beside LangGraph's PostgresSaver, on one durable throwaway server.

Each measurement runs in a fresh process that imports ``host_sim`` from the tree measured
(the measuring code is this checkout's ``benchmarks/postgres.py`` either way); the trees
take turns, pass after pass, so that a machine whose load changes meanwhile weighs on both
alike. Prints the median of the passes and the after/before ratios, and the load average
(``os.getloadavg``) when it began and ended.

    python benchmarks/postgres_before_after.py BEFORE [--passes 3] [--turns 100]

BEFORE is a tree of the project, or a commit of this repository (``main``, ``57568c5``),
which is then extracted (``git archive``) to a temporary folder for the run.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def measure(tree: str, dsn: str, what: str, turns: int) -> list[float]:
    """In a child process: the figures of ``what`` for the host_sim of ``tree``."""
    sys.path[:] = [p for p in sys.path if Path(p or ".").resolve() != ROOT / "benchmarks"]
    sys.path.insert(0, tree)
    import anyio

    sys.path.append(str(ROOT / "benchmarks"))
    import postgres as bench  # this checkout's measuring code, on the tree's host_sim

    assert Path(str(sys.modules["host_sim"].__file__)).is_relative_to(tree), "host_sim was not imported from the tree"
    if what == "xacts":
        return list(anyio.run(bench.write_transactions, dsn, turns))
    n = int(what.removeprefix("n"))
    return list(anyio.run(bench.host_turns_and_fork, dsn, n, turns))


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("before", nargs="?", help="the tree of the project before the change")
    parser.add_argument("--passes", type=int, default=3)
    parser.add_argument("--turns", type=int, default=100)
    parser.add_argument("--measure", nargs=3, metavar=("TREE", "DSN", "WHAT"), help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.measure:
        tree, dsn, what = args.measure
        print(json.dumps(measure(tree, dsn, what, args.turns)))
        return 0
    if not args.before:
        parser.error("name the tree of the project before the change")
    sys.path.insert(0, str(ROOT / "tests"))
    sys.path.append(str(ROOT / "benchmarks"))
    from host.postgres_server import MISSING, PostgresServer, find_binaries
    from postgres import langgraph_turns_and_fork

    binaries = find_binaries()
    if binaries is None:
        print(f"benchmarks/postgres_before_after.py: {MISSING}", file=sys.stderr)
        return 1
    if Path(args.before).is_dir():
        before = str(Path(args.before).resolve())
    else:  # a commit: its tree, extracted for this run
        extracted = tempfile.mkdtemp(prefix="host-sim-before-")
        archive = subprocess.run(["git", "-C", str(ROOT), "archive", args.before], capture_output=True, check=True).stdout
        subprocess.run(["tar", "-x", "-C", extracted], input=archive, check=True)
        before = extracted
    trees = {"before": before, "after": str(ROOT)}
    figures: dict[tuple[str, str], list[list[float]]] = {}
    began = os.getloadavg()
    server = PostgresServer(binaries, durable=True)
    try:
        for p in range(args.passes):
            for what in ("xacts", "n10", "n1000"):
                for name, tree in (trees.items() if p % 2 == 0 else reversed(trees.items())):
                    out = subprocess.run(
                        [sys.executable, __file__, "--measure", tree, server.database("ba"), what, "--turns", str(args.turns)],
                        capture_output=True,
                        text=True,
                        check=True,
                    ).stdout
                    figures.setdefault((name, what), []).append(json.loads(out.strip().splitlines()[-1]))
                if what != "xacts":
                    lg = langgraph_turns_and_fork(server.database("lg"), int(what[1:]), args.turns)
                    if lg is not None:
                        figures.setdefault(("langgraph", what), []).append(list(lg))
            print(f"  pass {p + 1} done, load {os.getloadavg()[0]:.2f}", flush=True)
    finally:
        server.stop()
    ended = os.getloadavg()

    def median(name: str, what: str, i: int) -> float:
        return statistics.median(f[i] for f in figures[(name, what)])

    print(f"\nload average (1, 5, 15 min): {began[0]:.2f} {began[1]:.2f} {began[2]:.2f} at the start, "
          f"{ended[0]:.2f} {ended[1]:.2f} {ended[2]:.2f} at the end; median of {args.passes} passes\n")
    print("| measure | before | after | after / before | LangGraph PostgresSaver | LangGraph / after |")
    print("|---|---:|---:|---:|---:|---:|")
    for label, i in (("write transactions per turn", 0), ("write transactions per fork", 1), ("write transactions per sessions.delete", 2)):
        b, a = median("before", "xacts", i), median("after", "xacts", i)
        print(f"| {label} | {b:.2f} | {a:.2f} | {a / b:.2f} | - | - |")
    for what, n in (("n10", "10"), ("n1000", "1,000")):
        for label, i in ((f"ms per turn, N = {n}", 0), (f"ms per fork at N/2, N = {n}", 1)):
            b, a = median("before", what, i), median("after", what, i)
            lg = median("langgraph", what, i) if ("langgraph", what) in figures else None
            shown = "-" if lg is None else f"{lg:.2f}"
            ratio = "-" if lg is None else f"{lg / a:.2f}x"
            print(f"| {label} | {b:.2f} | {a:.2f} | {a / b:.2f} | {shown} | {ratio} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())

"""Several hosts on one PostgreSQL database, before and after a change, in one run: turns/s of
1 and 2 host processes on distinct sessions (and their ratio), cross-host event latency, and
where the time of the 2-process run goes (what the server's backends waited on, and the CPU
the server and the host processes used).

Each pass measures each tree in turn (the order alternates) on one durable throwaway server
(``tests/host/postgres_server.py``: fsync and ``synchronous_commit`` on): a child process
importing ``host_sim`` from the tree (``PYTHONPATH``) runs ``benchmarks/postgres.py``'s
``turns_per_second`` (host processes started together, each sending TURNS prompts to a
session of its own, EchoModel) with 1, then 2 processes, then its ``event_latency`` (a host
process runs TURNS turns; a subscriber in the child reads each ``turn_finished``; the time
from the event's ``at``, when the other process published it, before its commit). Meanwhile a
thread samples ``pg_stat_activity`` every few ms: the share of samples with a backend waiting
on a lock (and which), or on the WAL's fsync. Prints the medians over the passes, the ratios,
and the load average (``/proc/loadavg``) at each measurement.

    python benchmarks/postgres_hosts.py [BEFORE_TREE] [--passes 3] [--turns 150]

BEFORE_TREE: another copy of the project (e.g. ``git archive main | tar -x -C /tmp/base``);
without it only this checkout is measured.
"""

from __future__ import annotations

import argparse
import collections
import json
import os
import statistics
import subprocess
import sys
import threading
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def _load() -> float:
    return float(Path("/proc/loadavg").read_text().split()[0])


def _cpu_seconds(pids: set[int]) -> float:
    ticks = os.sysconf("SC_CLK_TCK")
    total = 0
    for pid in pids:
        try:
            fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        total += int(fields[11]) + int(fields[12])  # utime, stime
    return total / ticks


def _server_pids(data: Path) -> set[int]:
    postmaster = int((data / "postmaster.pid").read_text().split()[0])
    found = {postmaster}
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                if int((entry / "stat").read_text().rsplit(")", 1)[1].split()[1]) == postmaster:
                    found.add(int(entry.name))
            except (OSError, ValueError, IndexError):
                continue
    return found


def _sample(dsn: str, stop: threading.Event, counts: collections.Counter[str]) -> None:
    import psycopg

    with psycopg.connect(dsn, autocommit=True) as conn:
        me = conn.info.backend_pid
        while not stop.is_set():
            waits = conn.execute(
                "SELECT wait_event_type, wait_event, left(query, 60) FROM pg_stat_activity "
                "WHERE backend_type = 'client backend' AND pid <> %s AND state <> 'idle'",
                (me,),
            ).fetchall()
            counts["samples"] += 1
            for kind, event, query in waits:
                if kind == "Lock":
                    counts[f"lock {event}: {query}"] += 1
                elif event == "WALSync":
                    counts["WAL fsync"] += 1
            time.sleep(0.003)


def measure(dsns: list[str], admin_dsn: str, data: str, turns: int) -> dict[str, object]:
    """In a child process importing the tree's host_sim: the figures of one pass."""
    import anyio

    sys.path.append(str(ROOT / "benchmarks"))
    import postgres as bench

    assert Path(str(sys.modules["host_sim"].__file__)).is_relative_to(os.environ["PYTHONPATH"]), "wrong host_sim"
    out: dict[str, object] = {}
    for hosts, dsn in ((1, dsns[0]), (2, dsns[1])):
        sessions = anyio.run(bench.new_sessions, dsn, hosts)
        counts: collections.Counter[str] = collections.Counter()
        stop = threading.Event()
        sampler = threading.Thread(target=_sample, args=(admin_dsn, stop, counts))
        server = _server_pids(Path(data))
        cpu_server, cpu_all, load = _cpu_seconds(server), time.process_time(), _load()
        children_before = os.times().children_user + os.times().children_system
        sampler.start()
        began = time.perf_counter()
        rate = bench.turns_per_second(dsn, sessions, turns)
        wall = time.perf_counter() - began
        stop.set()
        sampler.join()
        server_cpu = _cpu_seconds(_server_pids(Path(data)) | server) - cpu_server
        hosts_cpu = os.times().children_user + os.times().children_system - children_before
        samples = counts.pop("samples") or 1
        out[f"{hosts}"] = {
            "turns/s": rate,
            "load": load,
            "server cpu s per turn (ms)": 1000 * server_cpu / (turns * hosts),
            "host cpu per turn (ms)": 1000 * hosts_cpu / (turns * hosts),
            "cpu busy (cores)": (server_cpu + hosts_cpu) / wall,
            "waits (share of samples)": {k: v / samples for k, v in counts.most_common(4)},
        }
        del cpu_all
    p50, p95 = anyio.run(bench.event_latency, dsns[2], turns)
    out["latency"] = {"p50": p50, "p95": p95, "load": _load()}
    return out


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("before", nargs="?", help="the tree of the project before the change")
    parser.add_argument("--passes", type=int, default=3)
    parser.add_argument("--turns", type=int, default=150)
    parser.add_argument("--measure", nargs=5, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.measure:
        d1, d2, d3, admin, data = args.measure
        print(json.dumps(measure([d1, d2, d3], admin, data, args.turns)))
        return 0
    sys.path.insert(0, str(ROOT / "tests"))
    from host.postgres_server import MISSING, PostgresServer, find_binaries

    binaries = find_binaries()
    if binaries is None:
        print(f"benchmarks/postgres_hosts.py: {MISSING}", file=sys.stderr)
        return 1
    trees = {"after": str(ROOT)}
    if args.before:
        trees = {"before": str(Path(args.before).resolve()), **trees}
    results: dict[str, list[dict[str, object]]] = {name: [] for name in trees}
    server = PostgresServer(binaries, durable=True)
    try:
        for p in range(args.passes):
            for name, tree in trees.items() if p % 2 == 0 else reversed(trees.items()):
                dsns = [server.database("hosts") for _ in range(3)]
                done = subprocess.run(
                    [sys.executable, __file__, "--measure", *dsns, server.dsn(), str(server.data), "--turns", str(args.turns)],
                    capture_output=True,
                    text=True,
                    env={**os.environ, "PYTHONPATH": tree},
                    check=False,
                )
                if done.returncode != 0:
                    print(done.stderr[-3000:], file=sys.stderr)
                    return 1
                figures = json.loads(done.stdout.strip().splitlines()[-1])
                results[name].append(figures)
                one, two, lat = figures["1"], figures["2"], figures["latency"]
                print(
                    f"pass {p + 1} {name:6}: 1 host {one['turns/s']:.0f}/s (load {one['load']:.1f}), "
                    f"2 hosts {two['turns/s']:.0f}/s (load {two['load']:.1f}) = {two['turns/s'] / one['turns/s']:.2f}x; "
                    f"latency p50/p95 {lat['p50']:.1f}/{lat['p95']:.1f} ms (load {lat['load']:.1f})",
                    flush=True,
                )
                for hosts in ("1", "2"):
                    f = figures[hosts]
                    print(
                        f"    {hosts} host(s): server cpu {f['server cpu s per turn (ms)']:.2f} ms/turn, host cpu "
                        f"{f['host cpu per turn (ms)']:.2f} ms/turn, {f['cpu busy (cores)']:.2f} cores busy; waits "
                        + ", ".join(f"{k} {v:.0%}" for k, v in f["waits (share of samples)"].items()),
                        flush=True,
                    )
    finally:
        server.stop()
    print()
    print("| tree | 1 host turns/s | 2 hosts turns/s | 2 over 1 | latency p50 / p95 ms |")
    print("|---|---:|---:|---:|---:|")
    for name, passes in results.items():
        one = statistics.median(r["1"]["turns/s"] for r in passes)  # type: ignore[index]
        two = statistics.median(r["2"]["turns/s"] for r in passes)  # type: ignore[index]
        ratio = statistics.median(r["2"]["turns/s"] / r["1"]["turns/s"] for r in passes)  # type: ignore[index]
        p50 = statistics.median(r["latency"]["p50"] for r in passes)  # type: ignore[index]
        p95 = statistics.median(r["latency"]["p95"] for r in passes)  # type: ignore[index]
        print(f"| {name} | {one:.0f} | {two:.0f} | {ratio:.2f}x | {p50:.1f} / {p95:.1f} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())

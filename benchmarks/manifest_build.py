"""Whole-process cost of the sandboxed manifest build against a plain import.

For every mod in ``host_sim/examples/``, prints the median wall time of ``build_manifest(path)``
(spawning the sandbox child, setting its resource limits, importing the mod under the
purity guard, deriving the manifest, reading the report back) and of running
``python -c "import <module>"`` as a subprocess from the project root, and their ratio.
Target: ratio <= 1.3. (Blocking instead of only detecting costs within the noise: median
1.03-1.05x before the purity guard and 1.04-1.08x after it, on a shared 2-core machine.)

    python benchmarks/manifest_build.py [--runs 15]
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from host_sim.fold import build_manifest  # noqa: E402

TARGET = 1.3


def timed(action: Callable[[], object]) -> float:
    started = time.perf_counter()
    action()
    return time.perf_counter() - started


def median_times(a: Callable[[], object], b: Callable[[], object], runs: int) -> tuple[float, float]:
    """Medians of ``a`` and ``b``, run alternately so that machine load hits both alike."""
    a()
    b()  # warm up: compiled files, page cache
    samples_a, samples_b = [], []
    for _ in range(runs):
        samples_a.append(timed(a))
        samples_b.append(timed(b))
    return statistics.median(samples_a), statistics.median(samples_b)


def module_name(path: Path) -> str:
    return ".".join(path.relative_to(ROOT).with_suffix("").parts)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=15, help="timed runs per measurement (median)")
    args = parser.parse_args()
    examples = sorted(p for p in (ROOT / "host_sim" / "examples").glob("*.py") if not p.name.startswith("_"))
    if not examples:
        print("no examples found in host_sim/examples/")
        return 1
    print(f"{'mod':<28} {'python -c import':>17} {'build_manifest':>15} {'ratio':>7}")
    ratios = []
    for path in examples:
        module = module_name(path)

        def plain(module: str = module) -> None:
            subprocess.run([sys.executable, "-c", f"import {module}"], cwd=ROOT, check=True)

        def build(path: Path = path) -> None:
            build_manifest(str(path))

        t_plain, t_build = median_times(plain, build, args.runs)
        ratio = t_build / t_plain
        ratios.append(ratio)
        print(f"{path.name:<28} {t_plain * 1000:>14.1f} ms {t_build * 1000:>12.1f} ms {ratio:>6.2f}x")
    worst = max(ratios)
    verdict = "met" if worst <= TARGET else "MISSED"
    print(f"median ratio {statistics.median(ratios):.2f}x, worst {worst:.2f}x (target <= {TARGET}x: {verdict})")
    return 0


if __name__ == "__main__":
    sys.exit(main())

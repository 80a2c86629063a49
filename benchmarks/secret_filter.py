"""The secret filter (API.md section 24): what scrubbing costs per character, honest text
and hostile text alike, and that it grows linearly with the text.

For each kind of text, sizes of 10 KB, 100 KB and 1 MB are scrubbed with an
`OpenAIModel`-style key (median of a few runs); the figure is microseconds per 1,000
characters, and the ratio of the largest size's figure to the smallest's must stay near 1
(target <= 2x: linear, never quadratic), for honest prose, JSON with escapes, and the
hostile shapes (``%2525...`` chains, ``&amp;amp;...`` chains, runs of ``&#``, backslashes,
near-copies of the key).

    python benchmarks/secret_filter.py [--sizes 10000,100000,1000000]
"""

from __future__ import annotations

import argparse
import statistics
import time
from collections.abc import Callable

from host_sim.models._secrets import KeyScrubber

KEY = "sk-proj-4f9c2a7e1b3d5f60_8a9b0c1d2e3f4a5b6c7d8e9f"

SHAPES: dict[str, Callable[[int], str]] = {
    "prose": lambda n: ("The parser handles nested lists; see docs/parsing.md for more. " * (n // 60 + 1))[:n],
    "json with escapes": lambda n: ('{"a": "line\\nnext \\u00e9 \\/ %41 &amp;", "b": [1, 2]} ' * (n // 50 + 1))[:n],
    "percent chain": lambda n: "%" + "25" * (n // 2),
    "amp chain": lambda n: "&" + "amp;" * (n // 4),
    "ampersand hashes": lambda n: "&#" * (n // 2),
    "backslashes": lambda n: "\\" * n,
    "near copies of the key": lambda n: (KEY[:-1] + "! " + "\u00ad".join(KEY[:-2]) + " ") * (n // (3 * len(KEY)) + 1),
}


def timed(scrubber: KeyScrubber, text: str, runs: int) -> float:
    times = []
    for _ in range(runs):
        started = time.perf_counter()
        scrubber.text(text)
        times.append(time.perf_counter() - started)
    return statistics.median(times)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default="10000,100000,1000000")
    sizes = [int(s) for s in parser.parse_args().sizes.split(",")]
    scrubber = KeyScrubber(KEY)
    print(f"{'text':<24}" + "".join(f"{size:>12,}" for size in sizes) + "   ratio (us per 1k chars, largest/smallest)")
    worst = 0.0
    for name, make in SHAPES.items():
        per_k = []
        for size in sizes:
            text = make(size)
            seconds = timed(scrubber, text, runs=5 if size <= 100_000 else 3)
            per_k.append(seconds / len(text) * 1e9)  # microseconds per 1,000 characters
        ratio = per_k[-1] / per_k[0]
        worst = max(worst, ratio)
        print(f"{name:<24}" + "".join(f"{v:>12.1f}" for v in per_k) + f"   {ratio:.2f}x")
    print(f"worst ratio: {worst:.2f}x (target <= 2x)")


if __name__ == "__main__":
    main()

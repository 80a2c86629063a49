"""What a hostile reply costs the host: ``host.submit`` of a reply full of ``<mod-action`` tags.

Each row is one ``submit`` (MemoryStore, a ScriptedModel that returns the reply, a mod that
declares ``task.create``), the median of --repeat runs, so it measures the whole path a
reply takes (the model call, the size check, the tag scan, JSON reading, structuring and
storing the proposals). Only public names are used.

    unclosed    N unclosed openings ``<mod-action type="task.create">{`` for N = 1,000, 8,000
                and 16,000 (one regular expression took 10.7 s at 8,000 and 44 s at 16,000).
                target: t(16k)/t(1k) <= 32 (linear: 16; quadratic: 256), t(16k) < 0.5 s
                (t(16k)/t(8k) is printed too: 2 when linear, but a millisecond figure on a
                shared machine is too noisy to judge by that alone)
    megabyte    a 100,000- and a 1,000,000-byte reply of well-formed tags (the first 100
                become actions, the rest are counted) and, for scale, 1,000,000 bytes of text.
                target: t(1 MB)/t(0.1 MB) <= 20 (linear: 10; quadratic: 100), t(1 MB) < 1 s

    python benchmarks/replies.py [--repeat 9] [--backend asyncio|trio]
"""

from __future__ import annotations

import argparse
import statistics
import time

import anyio
import attrs

from host_sim import Host, ModelRequest, ScriptedModel
from modular_sdk import ActionContext, ModMetadata, action, define_mod


@attrs.frozen
class NewTask:
    title: str


async def create(payload: NewTask, ctx: ActionContext) -> str:
    return payload.title


MOD = define_mod(
    metadata=ModMetadata(display_name="Tasks", description="Tasks a model proposes"),
    actions=[action(type="task.create", description="Create a task", payload_type=NewTask, run=create)],
)


def unclosed(n: int) -> str:
    return '<mod-action type="task.create">{' * n


def tags_of(size: int) -> str:
    tag = '<mod-action type="task.create">{"title": "a task"}</mod-action>\n'
    return (tag * (size // len(tag) + 1))[:size]


async def submit_time(reply: str, repeat: int) -> float:
    """Median seconds of one ``submit`` whose model replies ``reply``."""
    times: list[float] = []

    def respond(request: ModelRequest) -> str:
        return reply

    async with Host(mods=[MOD], model=ScriptedModel(respond), max_reply_bytes=2_000_000) as host:
        for _ in range(repeat + 1):  # the first run warms up
            chat = await host.sessions.create()
            started = time.perf_counter()
            out = await host.submit(chat, "go")
            times.append(time.perf_counter() - started)
            assert out.error is None, out.error
    return statistics.median(times[1:])


def verdict(ok: bool) -> str:
    return "PASS" if ok else "FAIL"


async def main(repeat: int) -> bool:
    sizes = {n: await submit_time(unclosed(n), repeat) for n in (1_000, 8_000, 16_000)}
    for n, seconds in sizes.items():
        print(f"unclosed  {n:>6,} tags   {seconds * 1000:9.2f} ms   ({len(unclosed(n)):,} bytes)")
    ratio = sizes[16_000] / sizes[1_000]
    unclosed_ok = ratio <= 32 and sizes[16_000] < 0.5
    print(
        f"unclosed  t(8k)/t(1k) = {sizes[8_000] / sizes[1_000]:.2f}   t(16k)/t(8k) = {sizes[16_000] / sizes[8_000]:.2f}   "
        f"t(16k)/t(1k) = {ratio:.2f}   target <= 32 and t(16k) < 0.5 s   {verdict(unclosed_ok)}"
    )
    tenth = await submit_time(tags_of(100_000), repeat)
    tags = await submit_time(tags_of(1_000_000), repeat)
    text = await submit_time("x" * 1_000_000, repeat)
    print(f"megabyte  0.1 MB of tags {tenth * 1000:9.2f} ms")
    print(f"megabyte  1 MB of tags   {tags * 1000:9.2f} ms")
    print(f"megabyte  1 MB of text   {text * 1000:9.2f} ms   (for scale)")
    megabyte_ok = tags / tenth <= 20 and tags < 1.0
    print(f"megabyte  t(1 MB)/t(0.1 MB) = {tags / tenth:.2f}   target <= 20 and t(1 MB) < 1 s   {verdict(megabyte_ok)}")
    return unclosed_ok and megabyte_ok


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0] if __doc__ else None)
    parser.add_argument("--repeat", type=int, default=9)
    parser.add_argument("--backend", choices=["asyncio", "trio"], default="asyncio")
    args = parser.parse_args()
    raise SystemExit(0 if anyio.run(main, args.repeat, backend=args.backend) else 1)

"""What OpenTelemetry costs a turn (API §15): turns per second with tracing off and on.

Each turn is one ``host.submit`` on a MemoryStore host whose ScriptedModel calls a mod's tool
once and then replies: one ``invoke_agent`` span, two ``chat`` spans and one
``execute_tool`` span when traced, and two duration points when metered. The modes run in
interleaved rounds (each round runs every mode once, in a fresh host) and each figure is the
median over rounds of its ratio to off in the same round, so a shared machine's drift
cancels out; ``added/turn`` is the median of what a turn took more than off's. Only public names
are used, plus the opentelemetry SDK.

    off         no provider given and none configured globally: the host's no-op
                instrumentation (what a host without the ``otel`` extra runs); its own
                cost is also timed alone (the calls one such turn makes, in a loop)
                target: those calls <= 3% of a turn (the host runs >= 0.97x of a host
                with no instrumentation at all)
    dropped     an SDK TracerProvider whose sampler records nothing (ALWAYS_OFF)
                target: >= 0.97x of off
    no-op       an SDK TracerProvider (spans recorded) with a SpanProcessor that does
                nothing, and an SDK MeterProvider with no reader
                target: >= 0.8x of off
    in-memory   an SDK TracerProvider exporting every span to an InMemorySpanExporter
                (SimpleSpanProcessor), and a MeterProvider with an InMemoryMetricReader
                target: >= 0.8x of off

    python benchmarks/otel.py [--turns 400] [--rounds 7] [--backend asyncio|trio]
"""

from __future__ import annotations

import argparse
import statistics
import time
from collections.abc import Callable
from typing import Any

import anyio
import attrs
from opentelemetry.sdk.metrics import MeterProvider
from opentelemetry.sdk.metrics.export import InMemoryMetricReader
from opentelemetry.sdk.trace import SpanProcessor, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.sdk.trace.sampling import ALWAYS_OFF

from host_sim import Host, ModelRequest, ScriptedModel, ToolCall, ToolResult
from host_sim.observability import Telemetry
from modular_sdk import AiContributions, ModMetadata, ToolContext, define_mod, tool


@attrs.frozen
class Query:
    pattern: str


async def search(query: Query, ctx: ToolContext) -> str:
    return f"parser.py: def {query.pattern}"


MOD = define_mod(
    metadata=ModMetadata(display_name="Search", description="A tool the model calls"),
    ai=AiContributions(tools=[tool(name="search", description="Find a pattern", input_type=Query, run=search)]),
)


async def respond(request: ModelRequest) -> str | ToolCall:
    if not request.tool_results:
        return ToolCall(name="search", input={"pattern": "parse"})
    return f"found: {request.tool_results[0].output}"


@attrs.frozen
class Mode:
    name: str
    providers: Callable[[], tuple[TracerProvider | None, MeterProvider | None]]


def off() -> tuple[TracerProvider | None, MeterProvider | None]:
    return None, None


def dropped() -> tuple[TracerProvider | None, MeterProvider | None]:
    return TracerProvider(sampler=ALWAYS_OFF), None


def noop() -> tuple[TracerProvider | None, MeterProvider | None]:
    provider = TracerProvider()
    provider.add_span_processor(SpanProcessor())  # the SDK's base processor: does nothing
    return provider, MeterProvider()


def in_memory() -> tuple[TracerProvider | None, MeterProvider | None]:
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(InMemorySpanExporter()))
    return provider, MeterProvider(metric_readers=[InMemoryMetricReader()])


MODES = (Mode("off", off), Mode("dropped", dropped), Mode("no-op", noop), Mode("in-memory", in_memory))


async def turns_per_second(mode: Mode, turns: int) -> float:
    tracer_provider, meter_provider = mode.providers()
    async with Host(
        mods=[MOD], model=ScriptedModel(respond), tracer_provider=tracer_provider, meter_provider=meter_provider
    ) as host:
        chat = await host.sessions.create()
        for _ in range(20):  # warm up
            await host.submit(chat, "where is parse?")
        chats = [await host.sessions.create() for _ in range(turns // 10)]  # short histories
        started = time.perf_counter()
        for i in range(turns):
            out = await host.submit(chats[i % len(chats)], "where is parse?")
            assert out.error is None, out.error
        elapsed = time.perf_counter() - started
    for provider in (tracer_provider, meter_provider):
        if provider is not None:
            provider.shutdown()
    return turns / elapsed


def noop_seconds_per_turn(loops: int = 100_000) -> float:
    """What the no-op instrumentation costs one turn with a tool call: the calls the engine
    makes, timed alone (the arguments are placeholders: the no-op reads none of them)."""
    telemetry = Telemetry()
    nothing: Any = None
    result = ToolResult(call_id="c", name="search", input={}, output="x")
    started = time.perf_counter()
    for _ in range(loops):
        span = telemetry.turn(nothing, nothing)
        with span.current():
            for reply in ("tool", "text"):
                with telemetry.chat(nothing, nothing, nothing) as call:
                    call.replied(reply)
            with telemetry.tool(nothing, "c", "search", nothing) as run:
                run.finished(result)
        span.end(nothing)
    return (time.perf_counter() - started) / loops


def verdict(ok: bool) -> str:
    return "PASS" if ok else "FAIL"


async def main(turns: int, rounds: int) -> bool:
    results: dict[str, list[float]] = {m.name: [] for m in MODES}
    for _ in range(rounds):
        for mode in MODES:
            results[mode.name].append(await turns_per_second(mode, turns))
    off_rates = results["off"]
    targets = {"dropped": 0.97, "no-op": 0.8, "in-memory": 0.8}
    ok = True
    print(f"{'mode':<10} {'turns/s':>9}  {'x of off':>8}  {'added/turn':>10}   target")
    print(f"{'off':<10} {statistics.median(off_rates):9.0f}  {1.0:8.3f}  {0:7.0f} us")
    for name, rates in results.items():
        if name == "off":
            continue
        # Each round's mode beside that round's off: drift between rounds cancels out.
        ratio = statistics.median(rate / off for rate, off in zip(rates, off_rates))
        added = statistics.median(1 / rate - 1 / off for rate, off in zip(rates, off_rates))
        passed = ratio >= targets[name]
        ok = ok and passed
        print(
            f"{name:<10} {statistics.median(rates):9.0f}  {ratio:8.3f}  {added * 1e6:7.0f} us   "
            f">= {targets[name]:.2f}x  {verdict(passed)}"
        )
    print(f"({turns} turns with one tool call per mode per round, medians over {rounds} interleaved rounds)")
    alone = noop_seconds_per_turn()
    share = alone * statistics.median(off_rates)
    passed = share <= 0.03
    print(f"off: the no-op instrumentation alone costs {alone * 1e6:.2f} us per turn, {share:.2%} of a turn   <= 3%  {verdict(passed)}")
    return ok and passed


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0] if __doc__ else None)
    parser.add_argument("--turns", type=int, default=400)
    parser.add_argument("--rounds", type=int, default=7)
    parser.add_argument("--backend", choices=["asyncio", "trio"], default="asyncio")
    args = parser.parse_args()
    raise SystemExit(0 if anyio.run(main, args.turns, args.rounds, backend=args.backend) else 1)

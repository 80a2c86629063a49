"""What OpenTelemetry costs a turn (API §15): turns per second with tracing off and on.

Each turn is one ``host.submit`` on a MemoryStore host whose ScriptedModel calls a mod's tool
once and then replies: one ``invoke_agent`` span, two ``chat`` spans and one
``execute_tool`` span when traced, and two duration points when metered. The modes run in
interleaved rounds (each round runs every mode once, in a fresh host) and each figure is the
median over rounds of its ratio to off in the same round, so a shared machine's drift
cancels out; ``added/turn`` is the median of what a turn took more than off's. Only public names
are used, plus the opentelemetry SDK.

    off         no provider given and none configured globally: the host's no-op
                instrumentation (what a host without the ``otel`` extra runs)
                target, instrumentation alone: <= 3% of a turn (>= 0.97x of a host with
                no instrumentation at all)
    dropped     an SDK TracerProvider whose sampler records nothing (ALWAYS_OFF)
                target: >= 0.97x of off
    no-op       an SDK TracerProvider (spans recorded) with a SpanProcessor that does
                nothing, and an SDK MeterProvider with no reader
                target: >= 0.8x of off
    in-memory   an SDK TracerProvider exporting every span to an InMemorySpanExporter
                (SimpleSpanProcessor), and a MeterProvider with an InMemoryMetricReader
                target: >= 0.8x of off

Whole turns on a shared machine vary by +-100 us between identical runs, more than the
cheaper modes add; so the instrumentation is also timed alone, per mode (the calls one turn
makes into it, in a loop, with stand-in records), against the turn time measured with it
off: the same targets, as a share of a turn.

    python benchmarks/otel.py [--turns 400] [--rounds 7] [--backend asyncio|trio]
"""

from __future__ import annotations

import argparse
import statistics
import time
from collections.abc import Callable
from types import SimpleNamespace
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
from host_sim.observability import telemetry_for
from modular_sdk import AiContributions, AiPromptMessage, ModMetadata, ToolContext, UserAuthor, define_mod, tool


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


def instrumentation_seconds_per_turn(mode: Mode, loops: int = 5_000) -> float:
    """What the instrumentation alone costs one such turn in ``mode``: the calls the engine
    makes into it, timed in a loop with stand-in session and turn records (no host, no
    model, no store), so a shared machine's noise in a whole turn does not swamp it."""
    tracer_provider, meter_provider = mode.providers()
    telemetry = telemetry_for(tracer_provider, meter_provider, ScriptedModel(respond))
    session: Any = SimpleNamespace(id="ses_1", record=SimpleNamespace(metadata=None, model="scripted", agent_id=None))
    message = AiPromptMessage(text="where is parse?")
    request = ModelRequest(session_id="ses_1", model="scripted", kind="prompt", text=message.text, message=message, history=())
    call = ToolCall(name="search", input={"pattern": "parse"}, call_id="c")
    result = ToolResult(call_id="c", name="search", input={"pattern": "parse"}, output="parser.py: def parse")
    arguments: Any = call.input
    turns: list[Any] = [
        SimpleNamespace(
            id=f"turn_{i}", session_id="ses_1", ordinal=0, author=UserAuthor(), message=message,
            status="completed", reply="found", error=None, failure=None, erased_at=None,
        )
        for i in range(loops)
    ]
    started = time.perf_counter()
    for turn in turns:
        span = telemetry.turn(session, turn)
        with span.current():
            with telemetry.chat(session, turn, request) as asked:
                asked.replied(call)
            with telemetry.tool(turn, "c", "search", arguments) as run:
                run.finished(result)
            with telemetry.chat(session, turn, request) as answered:
                answered.replied("found")
        span.end(turn)
    elapsed = (time.perf_counter() - started) / loops
    for provider in (tracer_provider, meter_provider):
        if provider is not None:
            provider.shutdown()
    return elapsed


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
    turn = 1 / statistics.median(off_rates)
    print(f"\nthe instrumentation alone, per turn (a turn here takes {turn * 1e6:.0f} us with it off):")
    for mode in MODES:
        alone = instrumentation_seconds_per_turn(mode)
        target = 0.03 if mode.name == "off" else 1 / targets[mode.name] - 1
        passed = alone <= target * turn
        ok = ok and passed
        print(
            f"{mode.name:<10} {alone * 1e6:7.1f} us   {alone / turn:6.1%} of a turn   "
            f"<= {target:.0%}  {verdict(passed)}   (as a ratio: {turn / (turn + alone):.3f}x of off)"
        )
    return ok


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0] if __doc__ else None)
    parser.add_argument("--turns", type=int, default=400)
    parser.add_argument("--rounds", type=int, default=7)
    parser.add_argument("--backend", choices=["asyncio", "trio"], default="asyncio")
    args = parser.parse_args()
    raise SystemExit(0 if anyio.run(main, args.turns, args.rounds, backend=args.backend) else 1)

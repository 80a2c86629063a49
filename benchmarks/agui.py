"""What speaking AG-UI costs: host_sim.agui_app beside the host's own surface (API.md section 21).

1. **First text.** A streaming model stamps the moment it yields its first chunk; the time until
   the app sends the first ``TEXT_MESSAGE_CONTENT`` (the ASGI ``send`` of its SSE bytes) is
   what AG-UI adds to the user's wait. Beside it, the same for a plain ``host.subscribe()``
   reader of ``reply_delta`` (what any integrator's stream pays). Target: p50 <= 2 ms.
2. **Throughput.** 50 runs at once, in 50 threads (sessions made before), through the app (the ASGI app called
   in process, each run a full request), against 50 turns at once through ``host.start``
   (jobs, the host's own rate). Target: the host's rate / the app's rate <= 1.5. Beside the
   rates, the CPU time this process spent per run (``time.process_time``): on a shared,
   loaded machine the wall clock also counts other processes' time, the CPU time less so.

    python benchmarks/agui.py [--runs 200] [--concurrency 50] [--rounds 4] [--backend asyncio|trio]

"""

from __future__ import annotations

import argparse
import json
import statistics
import time
from collections.abc import AsyncIterator

import anyio

from host_sim import Host, ModelRequest, ToolCall, agui_app

FIRST: list[float] = []  # when the model yielded its first chunk, per request (in order)


class Stamping:
    """A streaming model: three chunks; it notes when it yields the first."""

    name = "stamping"

    async def respond(self, request: ModelRequest) -> str | ToolCall:
        return "one two three"

    async def stream(self, request: ModelRequest) -> AsyncIterator[str | ToolCall]:
        FIRST.append(time.perf_counter())
        yield "one "
        await anyio.sleep(0)
        yield "two "
        yield "three"


def body(thread: str, run: str) -> bytes:
    message = {"id": f"{run}-m", "role": "user", "content": "hello"}
    return json.dumps({"threadId": thread, "runId": run, "messages": [message]}).encode()


async def call(app: object, payload: bytes, on_content: list[float] | None = None) -> bytes:
    """One POST through the ASGI app, in process; the SSE bytes it sent."""
    sent: list[bytes] = []
    delivered = False

    async def receive() -> dict[str, object]:
        nonlocal delivered
        if not delivered:
            delivered = True
            return {"type": "http.request", "body": payload, "more_body": False}
        await anyio.sleep_forever()
        raise AssertionError

    async def send(message: dict[str, object]) -> None:
        chunk = message.get("body", b"")
        if isinstance(chunk, bytes) and chunk:
            if on_content is not None and not on_content and b'"TEXT_MESSAGE_CONTENT"' in chunk:
                on_content.append(time.perf_counter())
            sent.append(chunk)

    scope = {"type": "http", "method": "POST", "path": "/", "root_path": "", "headers": []}
    assert callable(app)
    await app(scope, receive, send)
    return b"".join(sent)


async def first_text(samples: int) -> tuple[list[float], list[float]]:
    """(through the app, through a plain subscriber): ms from the model's first chunk to the first text."""
    through_app: list[float] = []
    through_events: list[float] = []
    async with Host(model=Stamping()) as host:
        app = agui_app(host)
        for i in range(samples):
            FIRST.clear()
            seen: list[float] = []
            await call(app, body(f"t-{i}", f"r-{i}"), seen)
            through_app.append((seen[0] - FIRST[0]) * 1000)
        for i in range(samples):
            FIRST.clear()
            chat = await host.sessions.create()
            async with host.subscribe() as events:
                job = await host.start(chat, "hello")
                async for event in events:
                    if event.kind == "reply_delta":
                        through_events.append((time.perf_counter() - FIRST[0]) * 1000)
                        break
                await job.wait()
    return through_app, through_events


async def rate_of_host(runs: int, concurrency: int) -> tuple[float, float]:
    """(turns per second, CPU ms per turn)."""
    async with Host(model=Stamping()) as host:
        chats = [await host.sessions.create() for _ in range(runs)]
        started, cpu = time.perf_counter(), time.process_time()
        for start in range(0, runs, concurrency):
            async with anyio.create_task_group() as group:
                for chat in chats[start : start + concurrency]:

                    async def one(session_id: str = chat.id) -> None:
                        await (await host.start(session_id, "hello")).wait()

                    group.start_soon(one)
        return runs / (time.perf_counter() - started), (time.process_time() - cpu) * 1000 / runs


async def rate_of_app(runs: int, concurrency: int) -> tuple[float, float]:
    """(runs per second, CPU ms per run)."""
    async with Host(model=Stamping()) as host:
        app = agui_app(host)
        chats = [await host.sessions.create() for _ in range(runs)]  # the threads, as for host.start
        started, cpu = time.perf_counter(), time.process_time()
        for start in range(0, runs, concurrency):
            async with anyio.create_task_group() as group:
                for i in range(start, min(start + concurrency, runs)):

                    async def one(n: int = i) -> None:
                        answer = await call(app, body(chats[n].id, f"run-{n}"))
                        assert b"RUN_FINISHED" in answer, answer[-300:]

                    group.start_soon(one)
        return runs / (time.perf_counter() - started), (time.process_time() - cpu) * 1000 / runs


async def main(runs: int, concurrency: int, rounds: int) -> None:
    through_app, through_events = await first_text(100)
    p50_app, p50_events = statistics.median(through_app), statistics.median(through_events)
    print(f"first text after the model's first chunk, p50: app {p50_app:.3f} ms, plain subscriber {p50_events:.3f} ms")
    print(f"  p90: app {statistics.quantiles(through_app, n=10)[-1]:.3f} ms (target p50 <= 2 ms: {'ok' if p50_app <= 2 else 'MISSED'})")
    host_rounds, app_rounds = [], []
    for _ in range(rounds):
        host_rounds.append(await rate_of_host(runs, concurrency))
        app_rounds.append(await rate_of_app(runs, concurrency))
    host_rate, app_rate = statistics.median(r for r, _ in host_rounds), statistics.median(r for r, _ in app_rounds)
    host_cpu, app_cpu = statistics.median(c for _, c in host_rounds), statistics.median(c for _, c in app_rounds)
    ratio = host_rate / app_rate
    print(f"{concurrency} at once, {runs} each round, median of {rounds}: host.start {host_rate:.0f} turns/s, agui_app {app_rate:.0f} runs/s")
    print(f"  ratio host/app {ratio:.2f}x (target <= 1.5x: {'ok' if ratio <= 1.5 else 'MISSED'})")
    print(f"  CPU per turn: host.start {host_cpu:.2f} ms, agui_app {app_cpu:.2f} ms ({app_cpu / host_cpu:.2f}x)")


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--runs", type=int, default=200)
    parser.add_argument("--concurrency", type=int, default=50)
    parser.add_argument("--rounds", type=int, default=4)
    parser.add_argument("--backend", choices=("asyncio", "trio"), default="asyncio")
    options = parser.parse_args()
    anyio.run(main, options.runs, options.concurrency, options.rounds, backend=options.backend)

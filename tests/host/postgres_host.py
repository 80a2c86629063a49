"""A host process on a `PostgresStore`, for the several-hosts tests and ``benchmarks/postgres.py``.

    python tests/host/postgres_host.py DSN SESSION_ID write --turns N [--workers W] [--name NAME]
    python tests/host/postgres_host.py DSN SESSION_ID hang
    python tests/host/postgres_host.py DSN SESSION_ID job
    python tests/host/postgres_host.py DSN - serve

``write`` sends N prompts to the session (W concurrent senders in this process) and prints
one acknowledgement line (JSON: turn id, ordinal, status, prompt) once each send returns.
``hang`` sends one prompt whose model call prints ``in-model`` and then waits for a line
on stdin (forever, if nobody writes one: the test kills the process there); it prints the
acknowledgement once the turn finishes. ``job`` starts a job (``host.start``) whose model
call never returns, prints ``{"job": ID}``, and prints its status and error kind once it
ends (another host cancels it). ``hang-job`` is ``hang`` run as a job. ``churn`` sends prompts to a session of its own, one after another, while a job of its own
waits for the line ``release`` on stdin; each send's outcome is one JSON line (an exception:
its type, message and ``retryable``); it stops on the line ``stop`` and prints how its job
ended (the database fault tests). ``serve`` runs one JSON command per stdin line
(``{"op": "run" | "fork-run" | "forget" | "delete" | "retract" | "create" | "keyed", ...}``) and prints one JSON
answer per command; a ``run`` (``fork-run``: in a new fork of the session) answers with the history its
model was given, and with ``"echo": true`` its reply repeats that history; ``keyed`` runs ``count``
concurrent ``start``s (waited for) or ``send``s of ``text`` with request id ``key`` and answers with their ids. Each process prints
``open`` once its host is open.
"""

from __future__ import annotations

import argparse
import json
import sys

import anyio
import anyio.to_thread

from host_sim import Host, ModelRequest, PostgresStore, ScriptedModel, StoreError
from modular_sdk import AiPromptMessage


def ack(**fields: object) -> None:
    print(json.dumps(fields), flush=True)


async def write(dsn: str, session_id: str, turns: int, workers: int, name: str) -> None:
    async with Host(store=PostgresStore(dsn)) as host:
        print("open", flush=True)
        session = await host.sessions.get(session_id)
        counter = iter(range(turns))

        async def worker() -> None:
            for i in counter:
                prompt = f"{name}-{i}"
                turn = await session.run(prompt)
                ack(turn=turn.turn.id, ordinal=turn.turn.ordinal, status=turn.turn.status, prompt=prompt)

        async with anyio.create_task_group() as tg:
            for _ in range(workers):
                tg.start_soon(worker)


async def hang(dsn: str, session_id: str, as_job: bool = False) -> None:
    async def respond(request: ModelRequest) -> str:
        print("in-model", flush=True)
        line = await anyio.to_thread.run_sync(sys.stdin.readline, abandon_on_cancel=True)
        return f"released: {line.strip()}"

    async with Host(model=ScriptedModel(respond), store=PostgresStore(dsn)) as host:
        print("open", flush=True)
        session = await host.sessions.get(session_id)
        if as_job:  # the same, as a job the host owns
            job = await host.start(session, "hang")
            done = await job.wait()
            ack(job=job.id, status=job.status, text=done.text)
            return
        result = await session.run("hang")
        ack(turn=result.turn.id, ordinal=result.turn.ordinal, status=result.turn.status, prompt="hang")


async def job(dsn: str, session_id: str) -> None:
    never = anyio.Event()

    async def respond(request: ModelRequest) -> str:
        await never.wait()
        return "never"

    async with Host(model=ScriptedModel(respond), store=PostgresStore(dsn)) as host:
        print("open", flush=True)
        started = await host.start(session_id, "a long job")
        ack(job=started.id)
        submission = await started.wait()
        ack(job=started.id, status=started.status, error_kind=submission.error_kind)


async def churn(dsn: str, name: str) -> None:
    release, stop = anyio.Event(), anyio.Event()

    async def respond(request: ModelRequest) -> str:
        if request.text == "job":
            await release.wait()
            return "job done"
        await anyio.sleep(0.02)
        return f"reply to {request.text}"

    async def commands() -> None:
        while line := await anyio.to_thread.run_sync(sys.stdin.readline, abandon_on_cancel=True):
            if line.strip() == "release":
                release.set()
            elif line.strip() == "stop":
                stop.set()
                return

    store = PostgresStore(dsn)
    async with Host(model=ScriptedModel(respond), store=store) as host, anyio.create_task_group() as tg:
        session = await host.sessions.create()
        job = await host.start(await host.sessions.create(), "job")
        ack(open=True, host=store.host_id, session=session.id, job=job.id)
        tg.start_soon(commands)
        i = 0
        while not stop.is_set():
            try:
                result = await session.run(f"{name}-{i}")
                ack(turn=result.turn.id, status=result.turn.status, error=result.turn.error)
            except Exception as exc:  # reported to the test, which checks what it says
                ack(exception=type(exc).__name__, retryable=getattr(exc, "retryable", None), message=str(exc))
                await anyio.sleep(0.1)
            i += 1
        try:
            done = await job.wait()
            ack(job=job.id, status=job.status, error_kind=done.error_kind, host=store.host_id)
        except StoreError as exc:
            ack(exception=type(exc).__name__, retryable=exc.retryable, message=str(exc))


async def serve(dsn: str) -> None:
    seen: list[list[object]] = []
    echo = [False]  # a command's "echo": the reply repeats the history (a turn that read a text keeps it)

    async def respond(request: ModelRequest) -> str:
        seen.append([[h.text, h.reply, h.erased] for h in request.history])
        if echo[0]:
            await anyio.sleep(0.003)
            return "seen: " + " | ".join(f"{h.text} => {h.reply}" for h in request.history)
        return f"reply to {request.text}"

    async with Host(model=ScriptedModel(respond), store=PostgresStore(dsn)) as host:
        print("open", flush=True)
        while line := await anyio.to_thread.run_sync(sys.stdin.readline, abandon_on_cancel=True):
            command = json.loads(line)
            op = command["op"]
            echo[0] = bool(command.get("echo", False))
            try:
                if op == "create":
                    ack(session=(await host.sessions.create()).id)
                elif op == "run":
                    session = await host.sessions.get(command["session"])
                    result = await session.run(command["text"])
                    ack(turn=result.turn.id, status=result.turn.status, history=seen[-1])
                elif op == "fork-run":  # fork at the last completed turn and run there
                    fork = await (await host.sessions.get(command["session"])).fork()
                    result = await fork.run(command["text"])
                    ack(turn=result.turn.id, status=result.turn.status, history=seen[-1], session=fork.id)
                elif op == "forget":
                    await host.lineage.forget(command["turn"], dry_run=False)
                    ack(done=True)
                elif op == "delete":
                    await host.sessions.delete(command["session"])
                    ack(done=True)
                elif op == "retract":
                    await host.lineage.retract(command["turn"], reason=command["reason"])
                    ack(done=True)
                elif op == "keyed":  # "count" concurrent starts (or sends) of one text with one request id
                    ids: list[str] = []

                    async def keyed(session_id: str = command["session"], text: str = command["text"]) -> None:
                        if command["what"] == "start":
                            job = await host.start(session_id, text, request_id=command["key"])
                            await job.wait()
                            ids.append(job.id)
                        else:
                            session = await host.sessions.get(session_id)
                            ids.append((await session.send(AiPromptMessage(text=text), request_id=command["key"])).id)

                    async with anyio.create_task_group() as tg:
                        for _ in range(command["count"]):
                            tg.start_soon(keyed)
                    ack(ids=ids)
            except Exception as exc:  # reported to the test, which checks the type
                ack(error=type(exc).__name__, message=str(exc))


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("dsn")
    parser.add_argument("session_id")
    parser.add_argument("mode", choices=["write", "hang", "hang-job", "job", "serve", "churn"])
    parser.add_argument("--turns", type=int, default=10)
    parser.add_argument("--workers", type=int, default=1)
    parser.add_argument("--name", default="host")
    parser.add_argument("--backend", default="asyncio", choices=["asyncio", "trio"])
    args = parser.parse_args()
    if args.mode == "serve":
        anyio.run(serve, args.dsn, backend=args.backend)
    elif args.mode == "churn":
        anyio.run(churn, args.dsn, args.name, backend=args.backend)
    elif args.mode == "write":
        anyio.run(write, args.dsn, args.session_id, args.turns, args.workers, args.name, backend=args.backend)
    elif args.mode == "job":
        anyio.run(job, args.dsn, args.session_id, backend=args.backend)
    else:
        anyio.run(hang, args.dsn, args.session_id, args.mode == "hang-job", backend=args.backend)


if __name__ == "__main__":
    main()

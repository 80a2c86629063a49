"""Serve host_sim.agui_app with uvicorn on loopback, for tests/protocols/test_agui_client.py.

    python tests/protocols/agui_server.py STORE PORT_FILE [USER]

Opens a Host on a SqliteStore at STORE with the mods and the streaming model below, serves
``agui_app(host)`` (or ``agui_app(host.scoped({"user": USER}))``) at ``/agui`` on 127.0.0.1
on a free port, writes the port to PORT_FILE once it listens, and stops on SIGTERM or SIGINT.
"""

from __future__ import annotations

import json
import sys
from collections.abc import AsyncIterator
from pathlib import Path

import anyio
import attrs
import uvicorn

from host_sim import Host, ModelRequest, SqliteStore, ToolCall, agui_app
from modular_sdk import (
    ActionContext,
    AiContributions,
    ModMetadata,
    SlashCommandContext,
    ToolContext,
    action,
    define_mod,
    slash_command,
    tool,
    widget,
)


@attrs.frozen
class NewTask:
    title: str


@attrs.frozen
class Word:
    word: str


@attrs.frozen
class Progress:
    done: int
    total: int


async def create_task(payload: NewTask, ctx: ActionContext) -> str:
    return f"created task {payload.title!r}"


async def shout(value: Word, ctx: ToolContext) -> str:
    return value.word.upper()


async def summary(argument: str | None, ctx: SlashCommandContext) -> str:
    return f"summary of {argument or 'nothing'}"


async def delegate(argument: str | None, ctx: SlashCommandContext) -> str:
    child = await ctx.session.spawn()
    return f"delegated to {child.id}: {(await child.run(argument or 'hello')).text}"


def bar(data: Progress) -> str:
    return f"{data.done}/{data.total}"


MOD = define_mod(
    id="agui-world",
    metadata=ModMetadata(display_name="AG-UI world", description="What the AG-UI client tests use"),
    commands=[
        slash_command(id="summary", description="Summarise", run=summary, argument_hint="topic"),
        slash_command(id="delegate", description="Ask a spawned session", run=delegate),
    ],
    actions=[action(type="task.create", description="Create a task", payload_type=NewTask, run=create_task)],
    widgets=[widget(id="progress", description="Progress", data_type=Progress, render=bar)],
    ai=AiContributions(tools=[tool(name="shout", description="Shout a word", input_type=Word, run=shout)]),
)


class Typist:
    """A streaming model: each reply arrives in chunks; some prompts call a tool, propose or place."""

    name = "typist"

    @staticmethod
    def reply(request: ModelRequest) -> list[str] | ToolCall:
        text = request.text
        if request.tool_results:
            return ["the tool said ", str(request.tool_results[-1].output)]
        if text == "use the tool":
            return ToolCall(name="shout", input={"word": "hey"})
        if text.startswith("propose "):
            body = json.dumps({"title": text.removeprefix("propose ")})
            return ["Shall I? ", f'<mod-action type="task.create">{body}</mod-action>']
        if text == "show progress":
            return ["Halfway. ", '<mod-widget type="progress">{"done": 2, "total": 4}</mod-widget>']
        seen = [entry.text for entry in request.history if entry.kind == "prompt"]
        if text == "recall":
            return ["before: ", " | ".join(seen)]
        return ["you said: ", text, f" (after {len(seen)})"]

    async def respond(self, request: ModelRequest) -> str | ToolCall:
        reply = self.reply(request)
        return reply if isinstance(reply, ToolCall) else "".join(reply)

    async def stream(self, request: ModelRequest) -> AsyncIterator[str | ToolCall]:
        reply = self.reply(request)
        if isinstance(reply, ToolCall):
            yield reply
            return
        for chunk in reply:
            await anyio.sleep(0)
            yield chunk


async def main(store: str, port_file: str, user: str | None) -> None:
    async with Host(mods=[MOD], model=Typist(), store=SqliteStore(store)) as host:
        app = agui_app(host if user is None else host.scoped({"user": user}), path="/agui")
        config = uvicorn.Config(app, host="127.0.0.1", port=0, log_level="warning", lifespan="on")
        server = uvicorn.Server(config)
        async with anyio.create_task_group() as group:
            group.start_soon(server.serve)
            while not server.started:
                await anyio.sleep(0.01)
            port = server.servers[0].sockets[0].getsockname()[1]
            Path(port_file).write_text(str(port))


if __name__ == "__main__":
    anyio.run(main, sys.argv[1], sys.argv[2], sys.argv[3] if len(sys.argv) > 3 else None)

"""Models and tools: Echo and Scripted models, and the mod tools a model calls."""

from __future__ import annotations

import attrs
import pytest

from host_sim import EchoModel, Host, ModelRequest, ScriptedModel, ToolCall, ToolResult
from modular_sdk import (
    AiContributions,
    AiNotificationMessage,
    AiPromptMessage,
    ModMetadata,
    ReentrantTurnError,
    ToolContext,
    TurnFailedError,
    define_mod,
    tool,
)


@attrs.frozen
class SearchInput:
    """What to look for."""

    pattern: str
    max_results: int = 5


@attrs.frozen
class Hit:
    """One search hit."""

    file: str
    line: int


calls: list[SearchInput] = []
reentrant: list[ReentrantTurnError] = []


def search(query: SearchInput, ctx: ToolContext) -> list[str]:
    calls.append(query)
    corpus = ["parser.py: def parse(text)", "lexer.py: def tokens(text)", "README.md: parse files"]
    return [line for line in corpus if query.pattern in line][: query.max_results]


async def locate(query: SearchInput, ctx: ToolContext) -> Hit:
    return Hit(file="parser.py", line=len(query.pattern))


async def talk_to_self(query: SearchInput, ctx: ToolContext) -> str:
    try:
        if query.pattern == "notify":
            await ctx.session.notify(title="self", body="")
        else:
            await ctx.session.send(AiPromptMessage(text="hello me"))
    except ReentrantTurnError as exc:
        reentrant.append(exc)
        raise
    return "unreachable"


async def fork_self(query: SearchInput, ctx: ToolContext) -> str:
    fork = await ctx.session.fork()
    turn = await fork.send(AiPromptMessage(text=query.pattern))
    return turn.reply or ""


mod = define_mod(
    metadata=ModMetadata(display_name="Code Search", description="Let the model search"),
    ai=AiContributions(
        tools=[
            tool(name="search", description="Find lines containing a pattern", input_type=SearchInput, run=search),
            tool(name="locate", description="Where a pattern is", input_type=SearchInput, run=locate),
            tool(name="self_talk", description="Sends to its own session", input_type=SearchInput, run=talk_to_self),
            tool(name="self_fork", description="Forks its own session", input_type=SearchInput, run=fork_self),
        ]
    ),
)


@pytest.fixture(autouse=True)
def clear() -> None:
    calls.clear()
    reentrant.clear()


def one_call(name: str, input: dict[str, object], seen: list[ModelRequest]) -> ScriptedModel:
    def respond(request: ModelRequest) -> str | ToolCall:
        seen.append(request)
        if request.kind == "prompt" and request.text == "go" and not request.tool_results:
            return ToolCall(name=name, input=input, call_id="call_1")  # type: ignore[arg-type]
        if request.tool_results:
            result = request.tool_results[-1]
            return f"output={result.output} error={result.error}"
        return f"plain: {request.text}"

    return ScriptedModel(respond)


@pytest.mark.anyio
async def test_echo_model_reply_contains_the_input_verbatim() -> None:
    text = "Refactor the parser: keep `tokens()` pure\nand ünïcode ✓"
    async with Host(model=EchoModel()) as host:
        chat = await host.sessions.create()

        turn = await chat.send(AiPromptMessage(text=text))
        note = await chat.notify(title="Build", body="green ✓")

        assert turn.reply is not None and text in turn.reply
        assert note.reply is not None and "Build" in note.reply and "green ✓" in note.reply
        assert chat.model == "echo"


@pytest.mark.anyio
async def test_echo_model_is_deterministic() -> None:
    async with Host() as host:
        first, second = await host.sessions.create(), await host.sessions.create()

        a = await first.run("same input")
        b = await second.run("same input")

        assert a.text == b.text


@pytest.mark.anyio
async def test_scripted_model_answers_with_a_sync_function() -> None:
    seen: list[ModelRequest] = []

    def respond(request: ModelRequest) -> str:
        seen.append(request)
        return f"sync:{request.text}"

    async with Host(model=ScriptedModel(respond, name="scripted-sync")) as host:
        chat = await host.sessions.create()

        result = await chat.run("exact text  with  spaces ")

        assert result.text == "sync:exact text  with  spaces "
        assert seen[0].text == "exact text  with  spaces "
        assert seen[0].message == AiPromptMessage(text="exact text  with  spaces ")
        assert seen[0].session_id == chat.id
        assert seen[0].model == "scripted-sync" == chat.model


@pytest.mark.anyio
async def test_scripted_model_answers_with_an_async_function() -> None:
    async def respond(request: ModelRequest) -> str:
        return f"async:{request.text}"

    async with Host(model=ScriptedModel(respond)) as host:
        chat = await host.sessions.create()

        assert (await chat.run("hi")).text == "async:hi"


@pytest.mark.anyio
async def test_scripted_model_sees_a_notification_title_and_body() -> None:
    seen: list[ModelRequest] = []

    def respond(request: ModelRequest) -> str:
        seen.append(request)
        return "ok"

    async with Host(model=ScriptedModel(respond)) as host:
        chat = await host.sessions.create()
        await chat.notify(title="Deploy done", body="v1.2 is live")

    (request,) = seen
    assert request.kind == "notification"
    assert request.message == AiNotificationMessage(title="Deploy done", body="v1.2 is live")
    assert "Deploy done" in request.text and "v1.2 is live" in request.text


def test_scripted_model_refuses_a_non_callable() -> None:
    with pytest.raises(TypeError, match="ScriptedModel needs a function respond"):
        ScriptedModel("not a function")  # type: ignore[arg-type]


@pytest.mark.anyio
async def test_the_model_is_offered_every_mod_tool_with_its_schema() -> None:
    seen: list[ModelRequest] = []
    async with Host(mods=[mod], model=one_call("none", {}, seen)) as host:
        chat = await host.sessions.create()
        await chat.run("hello")

    specs = {spec.name: spec for spec in seen[0].tools}
    assert set(specs) == {"search", "locate", "self_talk", "self_fork"}
    assert specs["search"].description == "Find lines containing a pattern"
    schema = specs["search"].input_schema
    properties = schema["properties"]
    assert isinstance(properties, dict)
    assert set(properties) == {"pattern", "max_results"}


@pytest.mark.anyio
async def test_a_tool_call_runs_the_mod_tool_with_its_typed_input_and_feeds_the_result_back() -> None:
    seen: list[ModelRequest] = []
    async with Host(mods=[mod], model=one_call("search", {"pattern": "parse", "max_results": 1}, seen)) as host:
        chat = await host.sessions.create()

        result = await chat.run("go")

    assert calls == [SearchInput(pattern="parse", max_results=1)]
    assert len(seen) == 2
    assert seen[0].tool_results == ()
    (fed_back,) = seen[1].tool_results
    assert fed_back == ToolResult(
        call_id="call_1",
        name="search",
        input={"pattern": "parse", "max_results": 1},
        output='["parser.py: def parse(text)"]',
        error=None,
    )
    assert seen[1].text == "go"
    assert result.text == 'output=["parser.py: def parse(text)"] error=None'


@pytest.mark.anyio
async def test_tool_input_defaults_apply() -> None:
    seen: list[ModelRequest] = []
    async with Host(mods=[mod], model=one_call("search", {"pattern": "def"}, seen)) as host:
        chat = await host.sessions.create()
        await chat.run("go")

    assert calls == [SearchInput(pattern="def", max_results=5)]


@pytest.mark.anyio
async def test_an_attrs_tool_result_is_fed_back_as_json() -> None:
    seen: list[ModelRequest] = []
    async with Host(mods=[mod], model=one_call("locate", {"pattern": "abc"}, seen)) as host:
        chat = await host.sessions.create()
        await chat.run("go")

    assert seen[1].tool_results[0].output == '{"file": "parser.py", "line": 3}'


@pytest.mark.anyio
async def test_invalid_tool_input_is_reported_to_the_model_and_the_tool_does_not_run() -> None:
    seen: list[ModelRequest] = []
    async with Host(mods=[mod], model=one_call("search", {"pattern": "x", "max_results": "3"}, seen)) as host:
        chat = await host.sessions.create()

        turn = (await chat.run("go")).turn

    assert calls == []
    assert turn.status == "completed"
    (fed_back,) = seen[1].tool_results
    assert fed_back.output is None
    assert fed_back.error is not None
    assert fed_back.error.startswith("invalid input for tool 'search'")
    assert "max_results" in fed_back.error


@pytest.mark.anyio
async def test_missing_tool_input_is_reported_to_the_model() -> None:
    seen: list[ModelRequest] = []
    async with Host(mods=[mod], model=one_call("search", {}, seen)) as host:
        chat = await host.sessions.create()
        await chat.run("go")

    assert calls == []
    error = seen[1].tool_results[0].error
    assert error is not None and "pattern" in error


@pytest.mark.anyio
async def test_an_unknown_tool_is_reported_to_the_model() -> None:
    seen: list[ModelRequest] = []
    async with Host(mods=[mod], model=one_call("grep", {"pattern": "x"}, seen)) as host:
        chat = await host.sessions.create()
        await chat.run("go")

    error = seen[1].tool_results[0].error
    assert error is not None
    assert error.startswith("unknown tool 'grep'; the tools are: 'search'")


@pytest.mark.anyio
async def test_a_model_that_keeps_calling_tools_fails_its_turn_after_max_tool_rounds() -> None:
    def respond(request: ModelRequest) -> ToolCall:
        return ToolCall(name="search", input={"pattern": "x"})

    async with Host(mods=[mod], model=ScriptedModel(respond), max_tool_rounds=3) as host:
        chat = await host.sessions.create()

        with pytest.raises(TurnFailedError, match=r"more than 3 tool calls in one turn") as info:
            await chat.run("loop")

    assert len(calls) == 3
    assert "max_tool_rounds" in info.value.reason


@pytest.mark.anyio
async def test_a_model_returning_something_else_fails_the_turn() -> None:
    def respond(request: ModelRequest) -> str:
        return 42  # type: ignore[return-value]

    async with Host(model=ScriptedModel(respond)) as host:
        chat = await host.sessions.create()

        with pytest.raises(TurnFailedError, match="a model must return reply text or a ToolCall"):
            await chat.run("hi")


@pytest.mark.anyio
@pytest.mark.parametrize("how", ["send", "notify"])
async def test_a_tool_sending_to_its_own_session_raises_reentrant_turn(how: str) -> None:
    seen: list[ModelRequest] = []
    async with Host(mods=[mod], model=one_call("self_talk", {"pattern": how}, seen), handler_timeout=2) as host:
        chat = await host.sessions.create()

        with pytest.raises(TurnFailedError, match="would wait for itself"):
            await chat.run("go")

        (error,) = reentrant
        assert error.session_id == chat.id
        assert "tried to send to that same session" in str(error)
        assert [t.status for t in await chat.turns()] == ["failed"]


@pytest.mark.anyio
async def test_a_tool_may_fork_its_own_session_and_use_the_fork() -> None:
    seen: list[ModelRequest] = []
    async with Host(mods=[mod], model=one_call("self_fork", {"pattern": "in the fork"}, seen)) as host:
        chat = await host.sessions.create()
        await chat.run("first")

        result = await chat.run("go")

        assert result.text == "output=plain: in the fork error=None"
        (fork,) = await chat.children()
        assert [t.ordinal for t in await fork.turns()] == [0, 1]

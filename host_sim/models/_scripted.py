"""`ScriptedModel`: a model whose every reply comes from your function."""

from __future__ import annotations

import inspect
from collections.abc import Awaitable, Callable
from typing import final

from modular_sdk import InvalidArgumentError

from ..lanes._threads import run_in_daemon_thread
from ._protocol import ModelReply, ModelRequest

__all__ = ["ScriptedModel"]


@final
class ScriptedModel:
    """A model that answers each request with ``respond(request)`` (``def`` or ``async def``).

    ``respond`` returns the reply text, or a `ToolCall` to make the host call that mod tool
    and ask again with its result in ``request.tool_results``; to report token usage it
    returns ``Reply(text=..., usage=Usage(...))`` or a `ToolCall` with ``usage=`` (a
    `ScriptedModel` reports none of its own)::

        def respond(request: ModelRequest) -> str | ToolCall:
            if request.tool_results:
                return f"the tool said {request.tool_results[-1].output}"
            return ToolCall(name="grep", input={"pattern": "TODO"})

        model = ScriptedModel(respond)
    """

    def __init__(
        self,
        respond: Callable[[ModelRequest], ModelReply | Awaitable[ModelReply]],
        *,
        name: str = "scripted",
    ) -> None:
        if not callable(respond):
            raise InvalidArgumentError(
                f"ScriptedModel needs a function respond(request), got {respond!r}", argument="respond", value=respond
            )
        self._respond = respond
        self._name = name

    @property
    def name(self) -> str:
        return self._name

    async def respond(self, request: ModelRequest) -> ModelReply:
        """``respond(request)``; a plain ``def`` runs in a daemon thread, so a slow or blocked
        one never stalls the event loop and the host's ``model_timeout`` holds for it."""
        if inspect.iscoroutinefunction(self._respond) or inspect.iscoroutinefunction(
            getattr(self._respond, "__call__", None)
        ):
            result = self._respond(request)
        else:
            result = await run_in_daemon_thread(self._respond, (request,), name=f"host-sim model {self._name!r}")
        if inspect.isawaitable(result):
            return await result
        return result

    def __repr__(self) -> str:
        return f"ScriptedModel({self._respond!r}, name={self._name!r})"

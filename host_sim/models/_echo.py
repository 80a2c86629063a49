"""`EchoModel`: the built-in offline model."""

from __future__ import annotations

from typing import final

from ._protocol import ModelRequest, ToolCall

__all__ = ["EchoModel"]


@final
class EchoModel:
    """A deterministic offline model whose reply contains the input text verbatim.

    A prompt ``p`` gets ``"echo: p"``; a notification gets ``"noted: <title>\\n\\n<body>"``.
    It never calls tools. Handy for demos and for tests of everything around the model.
    """

    @property
    def name(self) -> str:
        return "echo"

    async def respond(self, request: ModelRequest) -> str | ToolCall:
        if request.kind == "notification":
            return f"noted: {request.text}"
        return f"echo: {request.text}"

    def __repr__(self) -> str:
        return "EchoModel()"

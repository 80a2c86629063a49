"""Models: the `Model` protocol, `EchoModel` (offline, deterministic) and `ScriptedModel`."""

from ._echo import EchoModel
from ._protocol import HistoryEntry, Model, ModelReply, ModelRequest, ToolCall, ToolResult, ToolSpec
from ._scripted import ScriptedModel

__all__ = [
    "EchoModel",
    "HistoryEntry",
    "Model",
    "ModelReply",
    "ModelRequest",
    "ScriptedModel",
    "ToolCall",
    "ToolResult",
    "ToolSpec",
]

"""Models: the `Model` protocol, `EchoModel` (offline, deterministic), `ScriptedModel`,
`OpenAIModel` (any OpenAI-compatible server) and cassettes (`RecordingModel`, `ReplayModel`)."""

from ._cassette import RecordingModel, ReplayModel
from ._echo import EchoModel
from ._errors import CassetteMismatchError, ModelError
from ._openai import OpenAIModel
from ._protocol import HistoryEntry, Model, ModelReply, ModelRequest, Reply, ToolCall, ToolResult, ToolSpec, Usage
from ._scripted import ScriptedModel

__all__ = [
    "CassetteMismatchError",
    "EchoModel",
    "HistoryEntry",
    "Model",
    "ModelReply",
    "ModelError",
    "ModelRequest",
    "OpenAIModel",
    "RecordingModel",
    "Reply",
    "ReplayModel",
    "ScriptedModel",
    "ToolCall",
    "ToolResult",
    "ToolSpec",
    "Usage",
]

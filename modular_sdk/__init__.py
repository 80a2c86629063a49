"""modular-sdk: write slash commands, palette commands, AI tools, hooks, effects and views
for AI chat sessions as pure, typed, declarative data.

Everything public is re-exported here; the ``_`` modules are private.
"""

from ._actions import ActionEvent as ActionEvent
from ._actions import Allow as Allow
from ._actions import Deny as Deny
from ._actions import HookDecision as HookDecision
from ._errors import ActionDeniedError as ActionDeniedError
from ._errors import ActionStateError as ActionStateError
from ._errors import HostClosedError as HostClosedError
from ._errors import InvalidArgumentError as InvalidArgumentError
from ._errors import ManifestBuildError as ManifestBuildError
from ._errors import ModDefinitionError as ModDefinitionError
from ._errors import ModularError as ModularError
from ._errors import NoConversationError as NoConversationError
from ._errors import ReentrantTurnError as ReentrantTurnError
from ._errors import ReplyValidationError as ReplyValidationError
from ._errors import SerializationError as SerializationError
from ._errors import SessionDeletedError as SessionDeletedError
from ._errors import SpawnContextError as SpawnContextError
from ._errors import TurnFailedError as TurnFailedError
from ._errors import UnknownRecordError as UnknownRecordError
from ._errors import UnknownSessionError as UnknownSessionError
from ._errors import UnknownTurnError as UnknownTurnError
from ._ids import HOST_ACTIONS as HOST_ACTIONS
from ._ids import AiRunnerId as AiRunnerId
from ._ids import HostAction as HostAction
from ._ids import SessionId as SessionId
from ._ids import TurnId as TurnId
from ._ids import TurnStatus as TurnStatus
from ._json import from_json as from_json
from ._json import to_json as to_json
from ._lineage import AiSessionLineage as AiSessionLineage
from ._lineage import CommandTrigger as CommandTrigger
from ._lineage import ForkLineage as ForkLineage
from ._lineage import RootLineage as RootLineage
from ._lineage import SpawnLineage as SpawnLineage
from ._lineage import SpawnTrigger as SpawnTrigger
from ._lineage import ToolTrigger as ToolTrigger
from ._mcp import McpServer as McpServer
from ._mcp import mcp_server as mcp_server
from ._memory import AiMemory as AiMemory
from ._memory import HostAuthor as HostAuthor
from ._memory import MemoryAuthor as MemoryAuthor
from ._memory import MemoryRecord as MemoryRecord
from ._memory import RecordId as RecordId
from ._memory import Window as Window
from ._messages import AiMessage as AiMessage
from ._messages import AiNotificationMessage as AiNotificationMessage
from ._messages import AiPromptMessage as AiPromptMessage
from ._messages import AiSessionDisplayMetadata as AiSessionDisplayMetadata
from ._messages import Author as Author
from ._messages import ModAuthor as ModAuthor
from ._messages import UserAuthor as UserAuthor
from ._mod import Action as Action
from ._mod import Agent as Agent
from ._mod import AiContributions as AiContributions
from ._mod import AnyCommand as AnyCommand
from ._mod import BeforeActionHook as BeforeActionHook
from ._mod import Effect as Effect
from ._mod import Mod as Mod
from ._mod import ModMetadata as ModMetadata
from ._mod import PaletteCommand as PaletteCommand
from ._mod import SlashCommand as SlashCommand
from ._mod import Tool as Tool
from ._mod import View as View
from ._mod import Widget as Widget
from ._mod import action as action
from ._mod import agent as agent
from ._mod import before_action as before_action
from ._mod import command as command
from ._mod import define_mod as define_mod
from ._mod import effect as effect
from ._mod import slash_command as slash_command
from ._mod import tool as tool
from ._mod import view as view
from ._mod import widget as widget
from ._protocols import ActionContext as ActionContext
from ._protocols import AgentHandle as AgentHandle
from ._protocols import AiAgents as AiAgents
from ._protocols import AiContext as AiContext
from ._protocols import AiRunResult as AiRunResult
from ._protocols import AiSessionHandle as AiSessionHandle
from ._protocols import AiSessions as AiSessions
from ._protocols import AiTurnHandle as AiTurnHandle
from ._protocols import CommandContext as CommandContext
from ._protocols import CompletionContext as CompletionContext
from ._protocols import EffectContext as EffectContext
from ._protocols import SlashCommandContext as SlashCommandContext
from ._protocols import ToolContext as ToolContext
from ._records import ToolCallRecord as ToolCallRecord
from ._records import Usage as Usage
from ._records import WidgetPlacement as WidgetPlacement

__all__ = [
    "HOST_ACTIONS",
    "Action",
    "ActionContext",
    "ActionDeniedError",
    "ActionEvent",
    "ActionStateError",
    "Agent",
    "AgentHandle",
    "AiAgents",
    "AiContext",
    "AiContributions",
    "AiMemory",
    "AiMessage",
    "AiNotificationMessage",
    "AiPromptMessage",
    "AiRunResult",
    "AiRunnerId",
    "AiSessionDisplayMetadata",
    "AiSessionHandle",
    "AiSessionLineage",
    "AiSessions",
    "AiTurnHandle",
    "Allow",
    "AnyCommand",
    "Author",
    "BeforeActionHook",
    "CommandContext",
    "CommandTrigger",
    "CompletionContext",
    "Deny",
    "Effect",
    "EffectContext",
    "ForkLineage",
    "HookDecision",
    "HostAuthor",
    "HostClosedError",
    "InvalidArgumentError",
    "HostAction",
    "ManifestBuildError",
    "MemoryAuthor",
    "MemoryRecord",
    "Mod",
    "ModAuthor",
    "ModDefinitionError",
    "ModMetadata",
    "ModularError",
    "NoConversationError",
    "PaletteCommand",
    "RecordId",
    "ReentrantTurnError",
    "ReplyValidationError",
    "RootLineage",
    "SerializationError",
    "SessionDeletedError",
    "SessionId",
    "SlashCommand",
    "SlashCommandContext",
    "SpawnContextError",
    "SpawnLineage",
    "SpawnTrigger",
    "Tool",
    "ToolCallRecord",
    "ToolContext",
    "ToolTrigger",
    "TurnFailedError",
    "TurnId",
    "Usage",
    "WidgetPlacement",
    "TurnStatus",
    "UnknownRecordError",
    "UnknownSessionError",
    "UnknownTurnError",
    "UserAuthor",
    "View",
    "Widget",
    "Window",
    "action",
    "agent",
    "before_action",
    "command",
    "define_mod",
    "effect",
    "from_json",
    "slash_command",
    "tool",
    "mcp_server",
    "McpServer",
    "to_json",
    "view",
    "widget",
]

def _publish() -> None:
    """Say ``modular_sdk.X`` in reprs and docs (annotations are resolved first)."""
    import attrs

    for name in __all__:
        obj = globals()[name]
        if not getattr(obj, "__module__", "").startswith("modular_sdk._"):
            continue
        if isinstance(obj, type) and attrs.has(obj):
            attrs.resolve_types(obj)
        if isinstance(obj, type) or callable(obj):
            obj.__module__ = "modular_sdk"


_publish()

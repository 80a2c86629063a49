"""host_sim: the host simulator that folds modular-sdk mods and runs their AI sessions.

Everything public is re-exported here; the ``_`` modules and the sub-packages' private
modules are implementation.
"""

from __future__ import annotations

# Ctrl-C while the ``host-sim`` command is still starting ends as Ctrl-C later does: one line
# and status 130, not a traceback through the imports below (a few tenths of a second). The
# guard goes in before anything of Python runs that a signal could land in: ``_signal`` (the C
# half of ``signal``; importing ``signal`` itself runs its enum conversion, where a Ctrl-C once
# printed a traceback), ``os`` and ``sys`` are loaded with the interpreter, so these lines are
# the whole window. ``host_sim._cli.main`` puts Python's own handler back first thing (from then
# on Ctrl-C cancels the command's work and main reports it). A program that imports host_sim
# (any other script name) is left alone.
import _signal  # type: ignore[import-not-found]  # (no stub: the C module behind signal)
import os as _os
import sys as _sys


def _interrupted_while_starting(signum: int, frame: object) -> None:
    """SIGINT before ``main`` runs: one line, status 130, nothing else to clean up yet."""
    try:
        _os.write(2, b"\nhost-sim: interrupted\n")
    finally:
        _os._exit(130)


if _sys.argv and _sys.argv[0] and _os.path.basename(_sys.argv[0]) == "host-sim":
    try:
        _signal.signal(_signal.SIGINT, _interrupted_while_starting)
    except ValueError:  # not the main thread (an embedding that runs the script so): left alone
        pass

from modular_sdk import HostAuthor as HostAuthor
from modular_sdk import MemoryRecord as MemoryRecord
from modular_sdk import RecordId as RecordId
from modular_sdk import ToolCallRecord as ToolCallRecord  # noqa: E402
from modular_sdk import UnknownRecordError as UnknownRecordError
from modular_sdk import UnknownTurnError as UnknownTurnError
from modular_sdk import Usage as Usage
from modular_sdk import WidgetPlacement as WidgetPlacement
from modular_sdk import Window as Window

from .agui._app import AguiApp as AguiApp
from .agui._app import agui_app as agui_app
from .fold._fold import load_verified as load_verified
from .fold._manifest import Manifest as Manifest
from .fold._sandbox import build_manifest as build_manifest
from .fold._sandbox import build_manifest_async as build_manifest_async
from .fold._spec import discover_mods as discover_mods
from .fold._spec import load_mod as load_mod
from .lanes._renderer import ViewResult as ViewResult
from .lineage._errors import LineageEdgeError as LineageEdgeError
from .lineage._errors import TurnRunningError as TurnRunningError
from .lineage._graph import LineageGraph as LineageGraph
from .lineage._provenance import ErasurePlan as ErasurePlan
from .lineage._provenance import Provenance as Provenance
from .lineage._provenance import RecordOrigin as RecordOrigin
from .lineage._provenance import RecordRef as RecordRef
from .lineage._provenance import TurnOrigin as TurnOrigin
from .lineage._provenance import TurnRef as TurnRef
from .lineage._tree import LineageTree as LineageTree
from .lineage._types import HOST_RELATIONS as HOST_RELATIONS
from .lineage._types import NATIVE_ARTIFACT_TYPES as NATIVE_ARTIFACT_TYPES
from .lineage._types import LineageArtifact as LineageArtifact
from .lineage._types import LineageChain as LineageChain
from .lineage._types import LineageEdge as LineageEdge
from .lineage._types import LineageRelation as LineageRelation
from .lineage._types import SessionMetrics as SessionMetrics
from .lineage._types import SessionNode as SessionNode
from .lineage_mcp._server import lineage_mcp_server as lineage_mcp_server
from .memory._book import Memory as Memory
from .memory._book import MemoryPage as MemoryPage
from .memory._policy import ContextPolicy as ContextPolicy
from .models._cassette import RecordingModel as RecordingModel
from .models._cassette import ReplayModel as ReplayModel
from .models._echo import EchoModel as EchoModel
from .models._openai import OpenAIModel as OpenAIModel
from .models._protocol import HistoryEntry as HistoryEntry
from .models._protocol import Model as Model
from .models._protocol import ModelRequest as ModelRequest
from .models._protocol import Reply as Reply
from .models._protocol import ToolCall as ToolCall
from .models._protocol import ToolResult as ToolResult
from .models._protocol import ToolSpec as ToolSpec
from .models._scripted import ScriptedModel as ScriptedModel
from .sessions._approvals import ApprovalRule as ApprovalRule
from .sessions._approvals import Approvals as Approvals
from .sessions._approvals import UnknownApprovalRuleError as UnknownApprovalRuleError
from .sessions._completions import Completion as Completion
from .sessions._completions import Completions as Completions
from .sessions._events import CommandFinished as CommandFinished
from .sessions._events import EventStream as EventStream
from .sessions._events import HostEvent as HostEvent
from .sessions._events import JobFinished as JobFinished
from .sessions._events import JobStarted as JobStarted
from .sessions._events import Lagged as Lagged
from .sessions._events import MemoryErased as MemoryErased
from .sessions._events import MemoryRecorded as MemoryRecorded
from .sessions._events import MemoryRetracted as MemoryRetracted
from .sessions._events import NotificationEvent as NotificationEvent
from .sessions._events import ReplyDelta as ReplyDelta
from .sessions._events import SessionCompacted as SessionCompacted
from .sessions._events import SessionCreated as SessionCreated
from .sessions._events import SessionDeleted as SessionDeleted
from .sessions._events import ToolCalled as ToolCalled
from .sessions._events import ToolFinished as ToolFinished
from .sessions._events import TurnErased as TurnErased
from .sessions._events import TurnFinished as TurnFinished
from .sessions._events import TurnRetracted as TurnRetracted
from .sessions._events import TurnStarted as TurnStarted
from .sessions._handles import AiSessionsImpl as AiSessionsImpl
from .sessions._handles import SessionHandle as SessionHandle
from .sessions._handles import SessionPage as SessionPage
from .sessions._handles import TurnHandle as TurnHandle
from .sessions._host import EffectStatus as EffectStatus
from .sessions._host import Host as Host
from .sessions._host import Submission as Submission
from .sessions._job_errors import UnknownJobError as UnknownJobError
from .sessions._jobs import Job as Job
from .sessions._jobs import JobPage as JobPage
from .sessions._scoped import ScopedEventStream as ScopedEventStream
from .sessions._scoped import ScopedHost as ScopedHost
from .sessions._scoped import ScopedLineage as ScopedLineage
from .sessions._scoped import ScopedTraces as ScopedTraces
from .stores._erasure import Erasure as Erasure
from .stores._errors import StoreError as StoreError
from .stores._errors import StoreLockedError as StoreLockedError
from .stores._memory import MemoryStore as MemoryStore
from .stores._postgres import PostgresStore as PostgresStore
from .stores._protocol import Store as Store
from .stores._records import ErrorKind as ErrorKind
from .stores._records import Invocation as Invocation
from .stores._records import SessionRecord as SessionRecord
from .stores._records import StoredState as StoredState
from .stores._records import TurnRecord as TurnRecord
from .stores._sqlite import SqliteStore as SqliteStore
from .stores._traces import TraceStore as TraceStore
from .traces._errors import TraceError as TraceError
from .traces._errors import UnknownTraceError as UnknownTraceError
from .traces._service import Traces as Traces
from .traces._spool import write_event as write_event
from .traces._types import ActionRecord as ActionRecord
from .traces._types import ActionStatus as ActionStatus
from .traces._types import PendingAction as PendingAction
from .traces._types import TaskRef as TaskRef
from .traces._types import Trace as Trace
from .traces._types import TraceLink as TraceLink
from .traces._types import TraceOutput as TraceOutput
from .traces._types import TraceTask as TraceTask

__all__ = [
    "ActionRecord",
    "ApprovalRule",
    "Approvals",
    "UnknownApprovalRuleError",
    "ActionStatus",
    "PendingAction",
    "TaskRef",
    "Trace",
    "TraceError",
    "TraceLink",
    "TraceOutput",
    "TraceStore",
    "TraceTask",
    "Traces",
    "UnknownTraceError",
    "write_event",
    "HOST_RELATIONS",
    "NATIVE_ARTIFACT_TYPES",
    "AiSessionsImpl",
    "CommandFinished",
    "Completion",
    "Completions",
    "EchoModel",
    "EffectStatus",
    "ErasurePlan",
    "ErrorKind",
    "EventStream",
    "HistoryEntry",
    "Host",
    "HostEvent",
    "Invocation",
    "Job",
    "JobFinished",
    "JobPage",
    "JobStarted",
    "Lagged",
    "LineageArtifact",
    "LineageChain",
    "LineageEdge",
    "LineageEdgeError",
    "TurnRunningError",
    "LineageGraph",
    "LineageRelation",
    "LineageTree",
    "Manifest",
    "MemoryStore",
    "Model",
    "ModelRequest",
    "NotificationEvent",
    "OpenAIModel",
    "PostgresStore",
    "Provenance",
    "RecordingModel",
    "ReplayModel",
    "ReplyDelta",
    "ScopedEventStream",
    "ScopedHost",
    "ScopedLineage",
    "ScopedTraces",
    "ScriptedModel",
    "SessionCreated",
    "SessionDeleted",
    "SessionHandle",
    "SessionMetrics",
    "SessionNode",
    "SessionPage",
    "SessionRecord",
    "SqliteStore",
    "Store",
    "Erasure",
    "StoreError",
    "StoreLockedError",
    "StoredState",
    "Submission",
    "Reply",
    "ToolCall",
    "ToolCallRecord",
    "ToolCalled",
    "ToolFinished",
    "ToolResult",
    "ToolSpec",
    "TurnErased",
    "TurnFinished",
    "TurnHandle",
    "TurnOrigin",
    "TurnRecord",
    "TurnRetracted",
    "TurnRef",
    "TurnStarted",
    "Usage",
    "UnknownJobError",
    "WidgetPlacement",
    "UnknownTurnError",
    "ViewResult",
    "ContextPolicy",
    "HostAuthor",
    "Memory",
    "MemoryPage",
    "MemoryRecord",
    "MemoryRecorded",
    "MemoryRetracted",
    "MemoryErased",
    "RecordId",
    "RecordOrigin",
    "RecordRef",
    "SessionCompacted",
    "UnknownRecordError",
    "Window",
    "build_manifest",
    "build_manifest_async",
    "discover_mods",
    "lineage_mcp_server",
    "AguiApp",
    "agui_app",
    "load_mod",
    "load_verified",
]


def _publish() -> None:
    """Say ``host_sim.X`` in reprs and docs (annotations are resolved first)."""
    import attrs

    for name in __all__:
        obj = globals()[name]
        if not getattr(obj, "__module__", "").startswith("host_sim."):
            continue
        if isinstance(obj, type) and attrs.has(obj):
            attrs.resolve_types(obj)
        if isinstance(obj, type) or callable(obj):
            obj.__module__ = "host_sim"


_publish()

"""The public surface of `modular_sdk` is exactly the contract (API.md sections 2, 3, 4, 6).

An added, removed or renamed export fails here first, so an API change is a reviewed diff.
"""

from __future__ import annotations

import importlib
import inspect
import pkgutil
import types
from typing import Any, get_args

import attrs
import pytest

import modular_sdk

# API.md section 2: the authoring import block, and the names its prose relies on
AUTHORING = {
    "define_mod", "slash_command", "command", "tool", "agent", "before_action", "effect", "view", "widget",
    "ModMetadata", "AiContributions", "SlashCommandContext",
    "AiSessionHandle", "AiTurnHandle", "AiPromptMessage", "AiNotificationMessage",
    "AiSessionDisplayMetadata", "AiRunResult",
    "AiSessionLineage", "RootLineage", "SpawnLineage", "ForkLineage",
    "CommandTrigger", "ToolTrigger", "SessionId", "TurnId", "AiRunnerId",
    "Mod", "SlashCommand", "HostAction",
}  # fmt: skip
# section 3: sessions and turns
SESSIONS = {
    "AiSessionHandle", "AiTurnHandle", "AiMessage", "AiPromptMessage", "AiNotificationMessage",
    "AiRunResult", "UserAuthor", "ModAuthor", "AiSessionDisplayMetadata",
}  # fmt: skip
# section 4: lineage
LINEAGE = {"AiSessionLineage", "RootLineage", "SpawnLineage", "ForkLineage", "CommandTrigger", "ToolTrigger"}
# section 6: errors and the values hooks see
ERRORS = {
    "ModularError", "ModDefinitionError", "NoConversationError", "SpawnContextError",
    "TurnFailedError", "ReentrantTurnError", "ReplyValidationError", "ActionDeniedError",
    "UnknownSessionError", "ManifestBuildError",
    "HostClosedError", "UnknownTurnError", "ActionStateError", "SessionDeletedError",
    "UserAuthor", "ModAuthor", "Allow", "Deny", "ActionEvent", "HostAction",
}  # fmt: skip
# section 9: agents propose actions (the host side lives in host_sim)
TRACES = {"action"}
# section 16: a mod declares the MCP servers whose tools its sessions may use
MCP = {"mcp_server"}
# section 20: memory records and the handler-side protocol ``ctx.ai.memory``
MEMORY = {"MemoryRecord", "Window", "RecordId", "UnknownRecordError", "AiMemory", "HostAuthor", "MemoryAuthor"}
CONTRACT = AUTHORING | SESSIONS | LINEAGE | ERRORS | TRACES | MCP | MEMORY

# Documented extras: the declaration classes the constructors return, the other handler
# contexts, the union aliases, the JSON helpers and their error.
EXTRAS = {
    "HOST_ACTIONS", "Action", "ActionContext", "Agent", "AgentHandle", "AiAgents", "AiContext", "AiSessions",
    "AnyCommand", "Author", "BeforeActionHook", "CommandContext", "CompletionContext", "Effect", "EffectContext",
    "HookDecision", "InvalidArgumentError", "PaletteCommand", "SerializationError", "SpawnTrigger", "Tool",
    "ToolCallRecord", "ToolContext", "TurnStatus", "Usage", "View", "Widget", "WidgetPlacement", "from_json", "to_json", "McpServer",
}  # fmt: skip

PINNED = [
    "Action", "ActionContext", "ActionDeniedError", "ActionEvent", "ActionStateError", "Agent", "AgentHandle", "AiAgents", "AiContext",
    "AiContributions", "AiMemory", "AiMessage", "AiNotificationMessage", "AiPromptMessage", "AiRunResult",
    "AiRunnerId", "AiSessionDisplayMetadata", "AiSessionHandle", "AiSessionLineage",
    "AiSessions", "AiTurnHandle", "Allow", "AnyCommand", "Author", "BeforeActionHook",
    "CommandContext", "CommandTrigger", "CompletionContext", "Deny", "Effect", "EffectContext", "ForkLineage",
    "HOST_ACTIONS", "HookDecision", "HostAction", "HostAuthor", "HostClosedError", "InvalidArgumentError",
    "ManifestBuildError", "McpServer", "MemoryAuthor", "MemoryRecord", "Mod", "ModAuthor",
    "ModDefinitionError", "ModMetadata", "ModularError", "NoConversationError",
    "PaletteCommand", "RecordId", "ReentrantTurnError", "ReplyValidationError", "RootLineage",
    "SerializationError", "SessionDeletedError", "SessionId", "SlashCommand", "SlashCommandContext",
    "SpawnContextError", "SpawnLineage", "SpawnTrigger", "Tool", "ToolCallRecord", "ToolContext", "ToolTrigger",
    "TurnFailedError", "TurnId", "TurnStatus", "UnknownRecordError", "UnknownSessionError", "UnknownTurnError", "Usage", "UserAuthor", "View", "Widget", "WidgetPlacement", "Window",
    "action", "agent", "before_action", "command", "define_mod", "effect", "from_json", "mcp_server",
    "slash_command", "to_json", "tool", "view", "widget",
]  # fmt: skip

# What the `_` modules declare but keep inside the package (helpers for the host and the
# plugin, not for mod authors).
INTERNAL = {
    "_frozen": {"FrozenJsonObject", "FrozenJsonValue", "JsonArray", "JsonObject", "JsonValue", "freeze", "freeze_object", "thaw", "thaw_object"},
    "_json": {"INT_RANGE", "converter", "load_json", "parse_json_text", "register_tagged", "structure", "unstructure"},
    "_rules": {
        "ID_PATTERN", "MAX_DEPTH", "Problem", "check_json_data", "close_match", "raise_problems", "show",
        "slug", "text_validator", "unstorable_text",
    },
    "_schema": {"DRAFT", "JsonObject", "JsonValue", "SchemaError", "json_schema"},
}  # fmt: skip

PUBLIC = [getattr(modular_sdk, name) for name in modular_sdk.__all__]
CLASSES = [obj for obj in PUBLIC if isinstance(obj, type)]
DECLARATIONS = [
    cls for cls in CLASSES if attrs.has(cls) and not getattr(cls, "_is_protocol", False)
]
ERROR_CLASSES = [cls for cls in CLASSES if issubclass(cls, BaseException)]
PROTOCOLS = [cls for cls in CLASSES if getattr(cls, "_is_protocol", False)]


def name_of(obj: object) -> str:
    return str(getattr(obj, "__name__", obj))


def test_all_is_pinned() -> None:
    assert sorted(modular_sdk.__all__) == sorted(PINNED)
    assert len(modular_sdk.__all__) == len(set(modular_sdk.__all__))


def test_all_is_the_contract_plus_the_documented_extras() -> None:
    assert set(modular_sdk.__all__) == CONTRACT | EXTRAS
    assert not CONTRACT & EXTRAS


def test_star_import_gives_exactly_all() -> None:
    namespace: dict[str, Any] = {}
    exec("from modular_sdk import *", namespace)  # noqa: S102
    namespace.pop("__builtins__")
    assert set(namespace) == set(modular_sdk.__all__)


def public_names(module: types.ModuleType) -> set[str]:
    """The names ``module`` offers: identifiers not starting with ``_``.

    pytest's assertion rewriting puts ``@py_builtins`` and ``@pytest_ar`` into every module
    it rewrites, which is every module of an installed distribution that ships a
    ``pytest11`` plugin (ours does); no attribute access or import can reach such names.
    """
    return {n for n in vars(module) if n.isidentifier() and not n.startswith("_")}


def test_nothing_public_outside_all() -> None:
    assert public_names(modular_sdk) == set(modular_sdk.__all__)
    assert not hasattr(modular_sdk, "Any")


def test_the_public_name_check_ignores_assertion_rewriting_but_not_a_leak() -> None:
    rewritten = types.ModuleType("rewritten")
    vars(rewritten).update({"@py_builtins": object(), "@pytest_ar": object(), "_private": 1, "mod": 2})
    assert public_names(rewritten) == {"mod"}
    vars(rewritten)["Any"] = Any
    assert public_names(rewritten) == {"mod", "Any"}


@pytest.mark.parametrize(
    "module_name",
    sorted(m.name for m in pkgutil.iter_modules(modular_sdk.__path__) if m.name.startswith("_")),
)
def test_every_name_of_a_private_module_is_exported_or_known_internal(module_name: str) -> None:
    module = importlib.import_module(f"modular_sdk.{module_name}")
    declared = set(getattr(module, "__all__", ()))
    assert declared, f"modular_sdk.{module_name} has no __all__"
    missing = declared - set(modular_sdk.__all__) - INTERNAL.get(module_name, set())
    assert not missing
    for name in declared & set(modular_sdk.__all__):
        assert getattr(module, name) is getattr(modular_sdk, name)


@pytest.mark.parametrize("obj", [o for o in PUBLIC if isinstance(o, type) or inspect.isfunction(o)], ids=name_of)
def test_classes_and_functions_say_modular_sdk_as_their_module(obj: Any) -> None:
    assert obj.__module__ == "modular_sdk"
    assert "modular_sdk._" not in repr(obj)


@pytest.mark.parametrize("name", ["SessionId", "TurnId", "AiRunnerId"])
def test_id_new_types_say_modular_sdk(name: str) -> None:
    new_type = getattr(modular_sdk, name)
    assert new_type.__module__ == "modular_sdk"
    assert new_type.__supertype__ is str
    assert new_type("x") == "x"


@pytest.mark.parametrize(
    ("alias", "members"),
    [
        ("AiSessionLineage", {"RootLineage", "SpawnLineage", "ForkLineage"}),
        ("SpawnTrigger", {"CommandTrigger", "ToolTrigger"}),
        ("AiMessage", {"AiPromptMessage", "AiNotificationMessage"}),
        ("Author", {"UserAuthor", "ModAuthor"}),
        ("HookDecision", {"Allow", "Deny"}),
        ("AnyCommand", {"SlashCommand", "PaletteCommand"}),
    ],
)
def test_union_aliases_are_closed_unions_of_exported_classes(alias: str, members: set[str]) -> None:
    args = get_args(getattr(modular_sdk, alias))
    assert {getattr(a, "__origin__", a).__name__ for a in args} == members
    for arg in args:
        assert getattr(arg, "__origin__", arg) is getattr(modular_sdk, getattr(arg, "__origin__", arg).__name__)


def test_host_actions_literal_matches_the_tuple() -> None:
    assert get_args(modular_sdk.HostAction) == modular_sdk.HOST_ACTIONS == (
        "session.create", "session.spawn", "session.fork", "session.send", "session.notify",
    )  # fmt: skip
    assert get_args(modular_sdk.TurnStatus) == ("running", "completed", "failed")


@pytest.mark.parametrize("cls", DECLARATIONS, ids=name_of)
def test_declarations_are_frozen_keyword_only_attrs_classes(cls: type) -> None:
    assert attrs.has(cls)
    assert getattr(cls.__setattr__, "__name__", "") == "_frozen_setattrs", f"{cls.__name__} is not frozen"
    assert all(a.kw_only for a in attrs.fields(cls) if a.init), f"{cls.__name__} is not kw_only"
    assert "Immutable" in (cls.__doc__ or ""), f"{cls.__name__}'s docstring does not say it is immutable"


@pytest.mark.parametrize("cls", DECLARATIONS, ids=name_of)
def test_declarations_say_modular_sdk_in_their_repr(cls: type) -> None:
    assert repr(cls) == f"<class 'modular_sdk.{cls.__name__}'>"


@pytest.mark.parametrize("cls", ERROR_CLASSES, ids=name_of)
def test_errors_subclass_modular_error_and_a_builtin(cls: type) -> None:
    assert issubclass(cls, modular_sdk.ModularError)
    if cls is not modular_sdk.ModularError:
        builtins = [b for b in cls.__mro__[1:] if b.__module__ == "builtins" and b not in (Exception, BaseException, object)]
        assert builtins, f"{cls.__name__} inherits no matching builtin"


def test_protocols_are_protocols_and_cannot_be_instantiated() -> None:
    assert {cls.__name__ for cls in PROTOCOLS} == {
        "ActionContext", "AgentHandle", "AiAgents", "AiContext", "AiMemory", "AiSessionHandle", "AiSessions", "AiTurnHandle",
        "CommandContext", "CompletionContext", "EffectContext", "SlashCommandContext", "ToolContext",
    }  # fmt: skip
    for cls in PROTOCOLS:
        with pytest.raises(TypeError):
            cls()


@pytest.mark.parametrize("obj", [o for o in PUBLIC if isinstance(o, type) or inspect.isfunction(o)], ids=name_of)
def test_every_public_class_and_function_has_a_docstring(obj: Any) -> None:
    assert inspect.getdoc(obj), f"{name_of(obj)} has no docstring"


def test_the_package_imports_no_host() -> None:
    for module in list(vars(modular_sdk).values()):
        if isinstance(module, types.ModuleType):
            assert not module.__name__.startswith("host_sim")
    source = "\n".join(
        inspect.getsource(importlib.import_module(f"modular_sdk.{m.name}"))
        for m in pkgutil.iter_modules(modular_sdk.__path__)
        if m.name != "mypy_plugin"
    )
    assert "host_sim" not in source.replace("`host_sim`", "")


# -- host_sim -------------------------------------------------------------------------------

HOST_CONTRACT = {
    "Host", "EchoModel", "ScriptedModel", "MemoryStore", "SqliteStore", "build_manifest",
    "OpenAIModel", "RecordingModel", "ReplayModel",  # section 10
    "Provenance", "TurnOrigin", "TurnRef", "ErasurePlan", "UnknownTurnError",  # section 8
    "PostgresStore",  # section 11
    "lineage_mcp_server",  # section 16
    "Memory", "MemoryRecord", "Window", "RecordOrigin", "RecordRef", "MemoryPage", "ContextPolicy", "UnknownRecordError",  # section 20
    "Trace", "TaskRef", "UnknownTraceError", "TraceError", "PendingAction", "write_event", "TraceStore",  # section 9
    "ScopedHost",  # section 14
}  # fmt: skip
# Classes of modular_sdk that host_sim re-exports (the same class, not a copy).
HOST_REEXPORTS = {
    "UnknownTurnError", "ToolCallRecord", "Usage", "WidgetPlacement",
    "HostAuthor", "MemoryRecord", "RecordId", "UnknownRecordError", "Window",
}  # fmt: skip
HOST_PINNED = sorted(
    [
        "ActionRecord",
        "AguiApp",
        "agui_app",
        "ApprovalRule",
        "Approvals",
        "UnknownApprovalRuleError",
        "ActionStatus",
        "HOST_RELATIONS",
        "NATIVE_ARTIFACT_TYPES",
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
        "AiSessionsImpl",
        "CommandFinished",
        "Completion",
        "Completions",
        "EchoModel",
        "EffectStatus",
        "Erasure",
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
        "TurnRunningError",
        "TurnStarted",
        "Usage",
        "WidgetPlacement",
        "UnknownJobError",
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
        "load_mod",
        "load_verified",
    ]
)


def test_host_sim_all_is_pinned_and_holds_the_contract() -> None:
    import host_sim

    assert sorted(host_sim.__all__) == HOST_PINNED
    assert HOST_CONTRACT <= set(host_sim.__all__)


def test_host_sim_classes_and_functions_say_host_sim_as_their_module() -> None:
    import host_sim

    leaks = [
        name
        for name in host_sim.__all__
        if (isinstance(getattr(host_sim, name), type) or inspect.isfunction(getattr(host_sim, name)))
        and getattr(host_sim, name).__module__ != "host_sim"
        and name not in HOST_REEXPORTS
    ]
    assert leaks == []
    assert all(getattr(host_sim, name) is getattr(modular_sdk, name) for name in HOST_REEXPORTS)


def test_handles_have_no_public_constructor() -> None:
    import host_sim

    for cls in (
        host_sim.SessionHandle,
        host_sim.TurnHandle,
        host_sim.ScopedHost,
        host_sim.ScopedLineage,
        host_sim.ScopedTraces,
        host_sim.ScopedEventStream,
    ):
        construct: Any = cls  # a user trying anyway, whatever the signature says
        with pytest.raises(TypeError, match="has no public constructor"):
            construct()
        assert getattr(cls, "__final__", False) is True


# host_sim.stores: the store protocols an integrator implements, and their records
STORES_PINNED = sorted(
    [
        "INDEX_VERSION", "SCHEMA_VERSION", "IntegratorStore", "Invocation", "JobRecord", "MemoryStore",
        "PostgresStore", "SessionRecord", "SqliteStore", "Store", "StoreError", "StoreLockedError",
        "StoredState", "TurnRecord",
    ]
)  # fmt: skip


def test_host_sim_stores_all_is_pinned() -> None:
    import host_sim.stores

    assert sorted(host_sim.stores.__all__) == STORES_PINNED
    assert all(hasattr(host_sim.stores, name) for name in STORES_PINNED)


def test_a_renamed_store_name_still_imports_for_one_release_and_warns_with_its_new_name() -> None:
    import host_sim.stores

    with pytest.warns(DeprecationWarning, match=r"host_sim\.stores\.LogStore is renamed IntegratorStore") as caught:
        from host_sim.stores import LogStore
    assert LogStore is host_sim.stores.IntegratorStore
    assert isinstance(host_sim.stores.MemoryStore(), LogStore)
    assert {w.filename for w in caught} == {__file__}  # at the import that used the old name
    assert "LogStore" not in host_sim.stores.__all__  # not advertised: `import *` never warns
    with pytest.raises(AttributeError, match="has no attribute 'NoSuchStore'"):
        host_sim.stores.NoSuchStore  # type: ignore[attr-defined]  # noqa: B018

# The public API of `modular_sdk`, rendered from the code by `python -m tools.render_stubs`.
# Do not edit: change the code, re-run the command, review the diff.

"""modular-sdk: write slash commands, palette commands, AI tools, hooks, effects and views"""

HOST_ACTIONS: tuple[HostAction, ...] = ('session.create', 'session.spawn', 'session.fork', 'session.send', 'session.notify')

@attrs.frozen(kw_only=True)
class Action(Generic[InputT]):
    """An action the model may propose and the user must confirm. Immutable; make one with `action`."""
    type: str
    description: str
    payload_type: builtins.type[InputT]
    run: Callable[[InputT, ActionContext], object]
    payload_schema: FrozenJsonObject = attrs.field(init=False, eq=False, repr=False)


class ActionContext(Protocol):
    """What an action's ``run(payload, ctx)`` receives once the user confirmed it."""
    @property
    def session(self) -> AiSessionHandle:
        """The session whose model proposed the action (its handles act as the user)."""
    @property
    def ai(self) -> AiContext: ...
    @property
    def mod_id(self) -> str: ...
    @property
    def action_type(self) -> str:
        """The declared type of the confirmed action (``"task.create"``)."""


class ActionDeniedError(ModularError, PermissionError):
    """A ``before_action`` hook answered `Deny`; ``reason`` is what it said."""
    def __init__(self, message: str, *, action: str, reason: str, mod_id: str) -> None: ...
    action: str
    reason: str
    mod_id: str


@attrs.frozen(kw_only=True)
class ActionEvent:
    """An action about to happen, shown to ``before_action`` hooks. Immutable."""
    action: str = attrs.field(validator=text_validator())
    session_id: SessionId | None = attrs.field(validator=text_validator(optional=True))
    author: Author = attrs.field(validator=_author)
    anchor_ordinal: int | None = attrs.field(default=None, validator=_optional_ordinal)
    anchor_turn_id: TurnId | None = attrs.field(default=None, validator=text_validator(optional=True))
    trigger: SpawnTrigger | None = attrs.field(default=None, validator=_optional_trigger)


class ActionStateError(ModularError, RuntimeError):
    """A proposed action cannot move to the state asked: confirmed twice, or after dismissal."""
    def __init__(self, message: str, *, action_id: str, state: str) -> None: ...
    action_id: str
    state: str


@attrs.frozen(kw_only=True)
class Agent:
    """A declared agent: ``ctx.ai.agents.get(id).spawn()`` makes a root session with it."""
    id: str
    description: str
    model: str | None = None
    instructions: str | None = None


class AgentHandle(Protocol):
    """A declared agent; obtain one from ``ctx.ai.agents.get(id)``."""
    @property
    def id(self) -> str:
        """The agent id as declared."""
    async def spawn(self, *, metadata: AiSessionDisplayMetadata | None = None) -> AiSessionHandle:
        """A new root session configured by this agent (not a child of any session)."""


class AiAgents(Protocol):
    """The agents declared by loaded mods, ``ctx.ai.agents``."""
    def get(self, agent_id: str) -> AgentHandle:
        """The agent with this id; raises `LookupError` naming the known agents."""


class AiContext(Protocol):
    """``ctx.ai``: sessions, agents and memory."""
    @property
    def sessions(self) -> AiSessions: ...
    @property
    def agents(self) -> AiAgents: ...
    @property
    def memory(self) -> AiMemory:
        """What this handler remembers (docs/memory.md), stamped with its mod and command or tool."""


@attrs.frozen(kw_only=True)
class AiContributions:
    """A mod's AI contributions: tools the model may call, declared agents, and MCP servers"""
    tools: tuple[Tool[Any], ...] = attrs.field(default=(), converter=_tools)
    agents: tuple[Agent, ...] = attrs.field(default=(), converter=_agents)
    mcp_servers: tuple[McpServer, ...] = attrs.field(default=(), converter=_mcp_servers)


class AiMemory(Protocol):
    """``ctx.ai.memory``: what a handler remembers, stamped with its mod and command or tool."""
    async def record(self, session: object, text: str, *, kind: str, read_from: Window | None = None, cites: Sequence[TurnId | str] = (), derived_from: Sequence[RecordId | str] = (), data: JsonValue = None) -> MemoryRecord:
        """Make a record resting on a window, cited turns or records of ``session`` (a"""
    async def get(self, record_id: str) -> MemoryRecord:
        """One record; `UnknownRecordError` for an id the host does not hold."""
    async def search(self, query: str, *, limit: int = 10) -> tuple[MemoryRecord, ...]:
        """Records matching ``query``, best first (erased and retracted ones left out)."""


AiMessage: TypeAlias = AiPromptMessage | AiNotificationMessage
"""What drives a turn; discriminated by ``type``."""

@attrs.frozen(kw_only=True)
class AiNotificationMessage:
    """A system event delivered into a session (never something the user said)."""
    type: Literal['notification'] = attrs.field(default='notification', init=False)
    title: str = attrs.field(validator=text_validator(non_empty=True))
    body: str = attrs.field(validator=text_validator())


@attrs.frozen(kw_only=True)
class AiPromptMessage:
    """A prompt: text for the model. Immutable; ``type`` is always ``"prompt"``."""
    type: Literal['prompt'] = attrs.field(default='prompt', init=False)
    text: str = attrs.field(validator=text_validator())


@attrs.frozen(kw_only=True)
class AiRunResult:
    """The finished answer of `AiSessionHandle.run`: reply ``text`` and the ``turn``. Immutable."""
    text: str
    turn: AiTurnHandle


AiRunnerId = NewType('AiRunnerId', str)
"""Identifier of the model runner that produced a turn."""

@attrs.frozen(kw_only=True)
class AiSessionDisplayMetadata:
    """How a session is shown (label and optional icon). Immutable."""
    label: str = attrs.field(validator=text_validator(non_empty=True))
    icon: str | None = attrs.field(default=None, validator=text_validator(optional=True))


class AiSessionHandle(Protocol):
    """An AI session: a conversation the host runs turn by turn."""
    @property
    def id(self) -> SessionId:
        """Stable identifier of this session."""
    @property
    def lineage(self) -> AiSessionLineage:
        """How this session came to exist: root, spawned, or forked."""
    @property
    def metadata(self) -> AiSessionDisplayMetadata | None:
        """Immutable presentation metadata, if any was given."""
    @property
    def model(self) -> str:
        """The model this session runs on."""
    @property
    def cwd(self) -> str:
        """The working directory of this session."""
    @property
    def created_at(self) -> datetime:
        """When the session was created (the host's clock)."""
    @property
    def last_activity_at(self) -> datetime:
        """When its latest own turn or command invocation started, else `created_at`."""
    async def send(self, message: AiMessage, *, request_id: str | None = None) -> AiTurnHandle:
        """Put a message into this session and wait for the turn it drives to complete."""

    @overload
    async def run(self, prompt: str) -> AiRunResult: ...
    @overload
    async def run(self, prompt: str, *, output_type: type[T]) -> T: ...
    async def run(self, prompt: str, *, output_type: type[T] | None = None) -> AiRunResult | T:
        """Send a prompt and wait for the finished answer."""
    async def notify(self, *, title: str, body: str) -> AiTurnHandle:
        """Shorthand for ``send(AiNotificationMessage(title=..., body=...))``."""
    async def fork(self, *, metadata: AiSessionDisplayMetadata | None = None) -> AiSessionHandle:
        """Copy the conversation through its last completed turn into a new session."""
    async def spawn(self, *, metadata: AiSessionDisplayMetadata | None = None) -> AiSessionHandle:
        """Make a fresh child session (empty history, same model and cwd)."""
    async def parent(self) -> AiSessionHandle | None:
        """The session this one was forked or spawned from, or ``None`` for a root."""
    async def children(self) -> list[AiSessionHandle]:
        """Forks and spawns of this session, in creation order."""
    async def turns(self) -> list[AiTurnHandle]:
        """The history, inherited turns included, in ordinal order."""


AiSessionLineage: TypeAlias = RootLineage | SpawnLineage | ForkLineage
"""How a session came to exist; discriminated by ``kind``. ``match`` on it exhaustively."""

class AiSessions(Protocol):
    """The workspace session catalogue, ``ctx.ai.sessions``."""
    async def create(self, *, metadata: AiSessionDisplayMetadata | None = None, model: str | None = None, cwd: str | None = None) -> AiSessionHandle:
        """A new, empty root session."""
    async def get(self, session_id: str) -> AiSessionHandle:
        """The session with this id; raises `UnknownSessionError`."""


class AiTurnHandle(Protocol):
    """One turn of a session: its input message, author, reply and status."""
    @property
    def id(self) -> TurnId:
        """Stable identifier of this turn."""
    @property
    def ordinal(self) -> int:
        """0-based position in the conversation (forks keep their parent's ordinals)."""
    @property
    def session_id(self) -> SessionId:
        """The session that ran this turn (for a copied turn: the ancestor that ran it)."""
    @property
    def status(self) -> TurnStatus:
        """``"running"``, ``"completed"`` or ``"failed"``, as of now."""
    @property
    def message(self) -> AiMessage:
        """The input message that drove this turn."""
    @property
    def message_id(self) -> str:
        """Identifier of the stamped input message."""
    @property
    def author(self) -> Author:
        """Who sent the input, stamped by the host from the calling context."""
    @property
    def reply(self) -> str | None:
        """The model's final reply; ``None`` until completed (and for a failed turn)."""
    @property
    def error(self) -> str | None:
        """Why the turn failed; ``None`` unless ``status == "failed"``."""
    @property
    def started_at(self) -> datetime:
        """When the turn began (the host's clock)."""
    @property
    def finished_at(self) -> datetime | None:
        """When it completed or failed; ``None`` while it runs."""
    @property
    def erased_at(self) -> datetime | None:
        """When the user had it forgotten (its text and reply are gone); ``None`` otherwise."""
    @property
    def retracted_at(self) -> datetime | None:
        """When someone found it wrong (the turn stays, text and all); ``None`` otherwise."""
    @property
    def retraction_reason(self) -> str | None:
        """Why it was retracted (the first reason given); ``None`` if it was not."""
    @property
    def tool_calls(self) -> tuple[ToolCallRecord, ...]:
        """The tool calls the turn made, in order; durable with the turn, erased with it."""
    @property
    def usage(self) -> Usage | None:
        """The tokens its model calls used, added up; ``None`` when no call reported usage."""
    @property
    def widgets(self) -> tuple[WidgetPlacement, ...]:
        """The widgets its reply placed (``<mod-widget>`` tags that fit), in reply order; durable, erased with it."""
    @property
    def runner_id(self) -> AiRunnerId:
        """The model runner that produced this turn."""
    async def fork(self, *, metadata: AiSessionDisplayMetadata | None = None) -> AiSessionHandle:
        """Fork the session immediately after this turn, whatever entered it afterwards."""


@attrs.frozen(kw_only=True)
class Allow:
    """A hook's answer: let the action happen. Immutable."""
    kind: Literal['allow'] = attrs.field(default='allow', init=False)


AnyCommand = SlashCommand[str] | PaletteCommand[str]
"""Any entry of ``define_mod(commands=[...])``."""

Author: TypeAlias = UserAuthor | ModAuthor
"""Who produced a turn's input; discriminated by ``kind``."""

@attrs.frozen(kw_only=True)
class BeforeActionHook(Generic[TargetT]):
    """A policy hook run before a host action or one of the mod's own commands. Immutable."""
    target: TargetT
    handle: HookHandle


class CommandContext(Protocol):
    """What a palette command's ``run(ctx)`` receives: no session."""
    @property
    def ai(self) -> AiContext: ...
    @property
    def mod_id(self) -> str: ...
    @property
    def command_id(self) -> str: ...


@attrs.frozen(kw_only=True)
class CommandTrigger:
    """A spawn made by a command handler. Immutable."""
    kind: Literal['command'] = attrs.field(default='command', init=False)
    mod_id: str = attrs.field(validator=_str)
    command_id: str = attrs.field(validator=_str)


class CompletionContext(Protocol):
    """What a slash command's ``complete(prefix, ctx)`` receives: which command it completes."""
    @property
    def mod_id(self) -> str: ...
    @property
    def command_id(self) -> str: ...


@attrs.frozen(kw_only=True)
class Deny:
    """A hook's answer: refuse the action. Immutable."""
    kind: Literal['deny'] = attrs.field(default='deny', init=False)
    reason: str = attrs.field(validator=text_validator(non_empty=True, fix='say why the action is refused'))


@attrs.frozen(kw_only=True)
class Effect:
    """Long-running work started when the host activates the mod, cancelled when it closes."""
    id: str
    activate: Callable[[EffectContext], object]


class EffectContext(Protocol):
    """What an effect's ``activate(ctx)`` receives."""
    @property
    def ai(self) -> AiContext: ...
    @property
    def mod_id(self) -> str: ...
    @property
    def effect_id(self) -> str: ...


@attrs.frozen(kw_only=True)
class ForkLineage:
    """A session whose history is its parent's turns ``0..parent_turn_ordinal``. Immutable."""
    kind: Literal['fork'] = attrs.field(default='fork', init=False)
    parent_session_id: SessionId = attrs.field(validator=_str)
    parent_turn_ordinal: int = attrs.field(validator=non_negative_int)
    parent_runner_id: AiRunnerId = attrs.field(validator=_str)
    depth: int = attrs.field(validator=_positive)
    forked_at: datetime = attrs.field(validator=aware_datetime)
    parent_user_message_id: str | None = attrs.field(default=None, validator=text_validator(optional=True))


HookDecision: TypeAlias = Allow | Deny
"""A hook's answer; discriminated by ``kind``."""

@attrs.frozen(kw_only=True)
class HostAuthor:
    """The host itself (``host.memory``, a compaction summary), stamped on what it writes. Immutable."""
    kind: Literal['host'] = attrs.field(default='host', init=False)


class HostClosedError(ModularError, RuntimeError):
    """An operation was asked of a host (or a handle of one) that is not open."""
    def __init__(self, message: str, *, state: str = 'closed') -> None: ...
    state: str


class InvalidArgumentError(ModularError, TypeError, ValueError):
    """A bad argument to a message constructor or a host method (wrong type, or a value it cannot take)."""
    def __init__(self, message: str, *, argument: str, value: object = None) -> None: ...
    argument: str
    value: object


HostAction: TypeAlias = Literal['session.create', 'session.spawn', 'session.fork', 'session.send', 'session.notify']
"""The host actions a ``before_action`` hook can target."""

class ManifestBuildError(ModularError, RuntimeError):
    """The build-time fold refused a mod module."""
    def __init__(self, message: str, *, spec: str, problems: Sequence[str] = ()) -> None: ...
    spec: str
    problems


MemoryAuthor: TypeAlias = UserAuthor | ModAuthor | HostAuthor
"""Who made a memory record; discriminated by ``kind``."""

@attrs.frozen(kw_only=True)
class MemoryRecord:
    """What memory made of a conversation: text (and data) resting on the turns or records"""
    id: RecordId = attrs.field(validator=text_validator(non_empty=True))
    session_id: SessionId = attrs.field(validator=text_validator(non_empty=True))
    kind: str = attrs.field(validator=text_validator(non_empty=True))
    text: str = attrs.field(validator=text_validator())
    data: FrozenJsonValue = attrs.field(default=None, converter=_freeze_data)
    read_from: Window | None = None
    cites: tuple[TurnId, ...] = ()
    derived_from: tuple[RecordId, ...] = ()
    made_by: MemoryAuthor = attrs.field(factory=HostAuthor)
    created_at: datetime = attrs.field(validator=aware_datetime)
    retracted_at: datetime | None = None
    retraction_reason: str | None = attrs.field(default=None, validator=text_validator(optional=True))
    erased_at: datetime | None = None


@attrs.frozen(kw_only=True)
class Mod:
    """A whole mod, as returned by `define_mod`. Immutable data; the host folds it."""
    id: str
    metadata: ModMetadata
    commands: tuple[AnyCommand, ...] = attrs.field(default=(), converter=_commands)
    ai: AiContributions = attrs.field(factory=AiContributions)
    hooks: tuple[BeforeActionHook[str], ...] = attrs.field(default=(), converter=_hooks)
    effects: tuple[Effect, ...] = attrs.field(default=(), converter=_effects)
    views: tuple[View[Any], ...] = attrs.field(default=(), converter=_views)
    actions: tuple[Action[Any], ...] = attrs.field(default=(), converter=_actions)
    widgets: tuple[Widget[Any], ...] = attrs.field(default=(), converter=_widgets)


@attrs.frozen(kw_only=True)
class ModAuthor:
    """A mod, stamped on what its handler sends: the mod id and its command or tool."""
    kind: Literal['mod'] = attrs.field(default='mod', init=False)
    mod_id: str = attrs.field(validator=text_validator())
    command_id: str | None = attrs.field(default=None, validator=text_validator(optional=True))
    tool_name: str | None = attrs.field(default=None, validator=text_validator(optional=True))


class ModDefinitionError(ModularError, ValueError):
    """A declaration breaks a rule: a mod and its parts, or any frozen value of this package"""
    field: str | None = field
    value: object = value
    problems: tuple[ModDefinitionError, ...] = tuple(problems) if problems else (self,)
    def __init__(self, message: str, *, field: str | None = None, value: object = None, problems: Sequence[ModDefinitionError] = ()) -> None: ...


@attrs.frozen(kw_only=True)
class ModMetadata:
    """What the user sees of a mod: display name and one-line description. Immutable."""
    display_name: str
    description: str


class ModularError(Exception):
    """Base class of every error raised by modular-sdk and the host simulator."""


class NoConversationError(ModularError, RuntimeError):
    """A fork of a session (or at a turn) with no completed turn to copy."""
    def __init__(self, message: str, *, session_id: str) -> None: ...
    session_id: str


@attrs.frozen(kw_only=True)
class PaletteCommand(Generic[IdT]):
    """A workbench command run from the palette, with no session. Immutable."""
    kind: Literal['palette'] = attrs.field(default='palette', init=False)
    id: IdT
    title: str
    run: CommandRun


RecordId = NewType('RecordId', str)
"""Stable identifier of a memory record (``mem_...``)."""

class ReentrantTurnError(ModularError, RuntimeError):
    """A handler running inside a turn of a session sent a message to that same session."""
    def __init__(self, message: str, *, session_id: str) -> None: ...
    session_id: str


class ReplyValidationError(ModularError, ValueError):
    """A model reply does not match the ``output_type`` asked of `AiSessionHandle.run`."""
    def __init__(self, message: str, *, raw: str, output_type: str) -> None: ...
    raw: str
    output_type: str


@attrs.frozen(kw_only=True)
class RootLineage:
    """A session with no parent: made by the user or ``ctx.ai.sessions.create``. Immutable."""
    kind: Literal['root'] = attrs.field(default='root', init=False)


class SerializationError(ModularError, ValueError):
    """JSON data that does not describe one of our values."""
    def __init__(self, message: str, *, value: object = None, type_name: str = '') -> None: ...
    value: object
    type_name: str


class SessionDeletedError(ModularError, RuntimeError):
    """The session was deleted (``sessions.delete``, on any host sharing the store): nothing"""
    def __init__(self, message: str, *, session_id: str) -> None: ...
    session_id: str


SessionId = NewType('SessionId', str)
"""Stable identifier of an AI session."""

@attrs.frozen(kw_only=True)
class SlashCommand(Generic[IdT]):
    """A command typed in a chat session as ``/<id> [argument]``. Immutable."""
    kind: Literal['slash'] = attrs.field(default='slash', init=False)
    id: IdT
    description: str
    run: SlashCommandRun
    argument_hint: str | None = None
    complete: SlashCommandComplete | None = None


class SlashCommandContext(Protocol):
    """What a slash command's ``run(argument, ctx)`` receives."""
    @property
    def session(self) -> AiSessionHandle:
        """The chat session the command was typed into."""
    @property
    def ai(self) -> AiContext: ...
    @property
    def mod_id(self) -> str: ...
    @property
    def command_id(self) -> str: ...
    async def report_output(self, *, kind: str, output_id: str) -> None:
        """Report an output this handler really produced (a proposal, a file, a change)."""


class SpawnContextError(ModularError, RuntimeError):
    """`AiSessionHandle.spawn` called outside a command or tool handler."""
    def __init__(self, message: str, *, session_id: str) -> None: ...
    session_id: str


@attrs.frozen(kw_only=True)
class SpawnLineage:
    """A fresh child with empty history, made by a command or tool handler. Immutable."""
    kind: Literal['spawn'] = attrs.field(default='spawn', init=False)
    parent_session_id: SessionId = attrs.field(validator=_str)
    parent_chat_uri: str = attrs.field(validator=_str)
    depth: int = attrs.field(validator=_positive)
    spawned_at: datetime = attrs.field(validator=aware_datetime)
    trigger: SpawnTrigger = attrs.field(validator=_trigger)


SpawnTrigger: TypeAlias = CommandTrigger | ToolTrigger
"""What made a spawn; discriminated by ``kind``."""

@attrs.frozen(kw_only=True)
class Tool(Generic[InputT]):
    """An AI tool the model decides to call. Immutable; make one with `tool`."""
    name: str
    description: str
    input_type: type[InputT]
    run: Callable[[InputT, ToolContext], object]
    input_schema: FrozenJsonObject = attrs.field(init=False, eq=False, repr=False)


@attrs.frozen(kw_only=True)
class ToolCallRecord:
    """One tool call a turn made, as the record keeps it (docs/the-record.md). Immutable."""
    call_id: str = attrs.field(validator=text_validator(non_empty=True))
    name: str = attrs.field(validator=text_validator(non_empty=True))
    input: FrozenJsonObject = attrs.field(converter=_frozen_input)
    output: str | None = attrs.field(validator=text_validator(optional=True))
    error: str | None = attrs.field(validator=text_validator(optional=True))
    started_at: datetime = attrs.field(validator=aware_datetime)
    finished_at: datetime = attrs.field(validator=aware_datetime)


class ToolContext(Protocol):
    """What a tool's ``run(input, ctx)`` receives when the model calls it."""
    @property
    def session(self) -> AiSessionHandle:
        """The session whose turn called the tool (sending to it raises `ReentrantTurnError`)."""
    @property
    def ai(self) -> AiContext: ...
    @property
    def mod_id(self) -> str: ...
    @property
    def tool_name(self) -> str: ...
    @property
    def call_id(self) -> str: ...
    async def report_output(self, *, kind: str, output_id: str) -> None:
        """Report an output this handler really produced (a proposal, a file, a change)."""


@attrs.frozen(kw_only=True)
class ToolTrigger:
    """A spawn made by a tool handler the model called. Immutable."""
    kind: Literal['tool'] = attrs.field(default='tool', init=False)
    mod_id: str = attrs.field(validator=_str)
    tool_name: str = attrs.field(validator=_str)
    call_id: str = attrs.field(validator=_str)


class TurnFailedError(ModularError, RuntimeError):
    """A turn failed: the model or a tool raised, timed out, or was cancelled."""
    def __init__(self, message: str, *, turn_id: str, reason: str) -> None: ...
    turn_id: str
    reason: str


TurnId = NewType('TurnId', str)
"""Stable identifier of one turn of a session."""

@attrs.frozen(kw_only=True)
class Usage:
    """The tokens one model call used, as the model's server counted them. Immutable."""
    input_tokens: int = attrs.field(validator=non_negative_int)
    output_tokens: int = attrs.field(validator=non_negative_int)
    @property
    def total_tokens(self) -> int:
        """``input_tokens + output_tokens``."""


@attrs.frozen(kw_only=True)
class WidgetPlacement:
    """A widget a model placed in its reply, as the turn's record keeps it (docs/the-record.md). Immutable."""
    widget_id: str = attrs.field(validator=text_validator(non_empty=True))
    data: FrozenJsonObject = attrs.field(converter=_frozen_data)
    index: int = attrs.field(validator=non_negative_int)


TurnStatus: TypeAlias = Literal['running', 'completed', 'failed']
"""Where a turn is: still running, completed with a reply, or failed."""

class UnknownRecordError(ModularError, LookupError):
    """No memory record has this id in this host; ``id`` is the id asked for (docs/memory.md)."""
    def __init__(self, message: str, *, id: str) -> None: ...
    id: str


class UnknownSessionError(ModularError, LookupError):
    """No session has this id; ``session_id`` is the id asked for."""
    def __init__(self, message: str, *, session_id: str) -> None: ...
    session_id: str


class UnknownTurnError(ModularError, LookupError):
    """No turn or message has this id in this host; ``id`` is the id asked for."""
    def __init__(self, message: str, *, id: str) -> None: ...
    id: str


@attrs.frozen(kw_only=True)
class UserAuthor:
    """The person at the keyboard: the stamp outside any mod handler. Immutable."""
    kind: Literal['user'] = attrs.field(default='user', init=False)


@attrs.frozen(kw_only=True)
class View(Generic[DataT]):
    """A renderer-lane view: pure data in, text out, no session access. Immutable."""
    id: str
    title: str
    render: Callable[[DataT], str]


@attrs.frozen(kw_only=True)
class Widget(Generic[InputT]):
    """A small renderer contribution shown inside a chat for one session: a status line, a"""
    id: str
    description: str
    data_type: builtins.type[InputT]
    render: Callable[[InputT], str]
    data_schema: FrozenJsonObject = attrs.field(init=False, eq=False, repr=False)


@attrs.frozen(kw_only=True)
class Window:
    """A contiguous range of completed turns of a session's history, inherited turns"""
    first: TurnId = attrs.field(validator=text_validator(non_empty=True, fix='pass a turn id (turn.id)'))
    last: TurnId = attrs.field(validator=text_validator(non_empty=True, fix='pass a turn id (turn.id)'))


def action(*, type: str, description: str, payload_type: type[RecordT], run: Callable[[RecordT, ActionContext], object]) -> Action[RecordT]:
    """Declare an action the model may propose and the user must confirm, for ``define_mod(actions=[...])``."""

def agent(*, id: str, description: str, model: str | None = None, instructions: str | None = None) -> Agent:
    """Declare an agent for ``AiContributions(agents=[...])``."""

def before_action(target: TargetT_inv, handle: HookHandle) -> BeforeActionHook[TargetT_inv]:
    """Declare a hook run before ``target``: a `HostAction` or ``"command:<own id>"``."""

def command(*, id: IdT_inv, title: str, run: CommandRun) -> PaletteCommand[IdT_inv]:
    """Declare a palette command: workbench work with no session; ``run(ctx)``."""

def define_mod(*, metadata: ModMetadata, commands: Sequence[AnyCommand] = (), ai: AiContributions | None = None, hooks: Sequence[BeforeActionHook[str]] = (), effects: Sequence[Effect] = (), views: Sequence[View[Any]] = (), actions: Sequence[Action[Any]] = (), widgets: Sequence[Widget[Any]] = (), id: str | None = None) -> Mod:
    """The entry point of the SDK: gather a mod's declarations into one frozen `Mod`."""

def effect(*, id: str, activate: Callable[[EffectContext], object]) -> Effect:
    """Declare long-running work: started when the host opens, cancelled when it closes."""


@overload
def from_json(text: str | bytes, tp: type[T]) -> T: ...
@overload
def from_json(text: str | bytes, tp: object) -> object: ...
def from_json(text: str | bytes, tp: object) -> object:
    """Read JSON written by `to_json` back as ``tp`` (a class or a union alias)."""

def slash_command(*, id: IdT_inv, description: str, run: SlashCommandRun, argument_hint: str | None = None, complete: SlashCommandComplete | None = None) -> SlashCommand[IdT_inv]:
    """Declare a command the user types inside a chat session as ``/<id> [argument]``."""

def tool(*, name: str, description: str, input_type: type[RecordT], run: Callable[[RecordT, ToolContext], object]) -> Tool[RecordT]:
    """Declare an AI tool the model may call with JSON matching ``input_type``."""

def mcp_server(*, id: str, command: str | None = None, args: Iterable[str] = (), env: Mapping[str, str] | None = None, url: str | None = None, description: str, read_only_tools: Iterable[str] = (), trust_annotations: bool = False) -> McpServer:
    """Declare an MCP server whose tools the model may call, for ``AiContributions(mcp_servers=[...])``."""

@attrs.frozen(kw_only=True)
class McpServer:
    """An MCP server a mod uses, for ``AiContributions(mcp_servers=[...])``. Immutable; make"""
    id: str
    description: str
    command: str | None = None
    args: tuple[str, ...] = attrs.field(default=(), converter=_args)
    env: Mapping[str, str] | None = attrs.field(default=None, converter=_env, hash=False)
    url: str | None = None
    read_only_tools: tuple[str, ...] = attrs.field(default=(), converter=_names)
    trust_annotations: bool = False
    @property
    def transport(self) -> Literal['stdio', 'http']:
        """``"stdio"`` for a ``command``, ``"http"`` for a ``url``."""


def to_json(value: object) -> str:
    """Serialize a message, author, lineage, trigger or decision to JSON (sorted keys)."""

def view(*, id: str, title: str, render: Callable[[DataT], str]) -> View[DataT]:
    """Declare a renderer-lane view: ``render(data) -> str``, with no session access."""

def widget(*, id: str, description: str, data_type: type[RecordT], render: Callable[[RecordT], str]) -> Widget[RecordT]:
    """Declare a widget for ``define_mod(widgets=[...])``: a small rendering shown inside a"""


# -- Not exported, referenced above --------------------------------------------------

CommandRun = Callable[[CommandContext], object]
"""``run(ctx)`` of a palette command; ``def`` or ``async def``."""

DataT = TypeVar('DataT')

FrozenJsonObject: TypeAlias = Mapping[str, FrozenJsonValue]
"""A frozen JSON object: a read-only mapping of frozen JSON values."""

FrozenJsonValue: TypeAlias = Union[None, bool, int, float, str, JsonArray, Mapping[str, 'FrozenJsonValue']]

HookHandle = Callable[[ActionEvent], HookDecision | Awaitable[HookDecision]]
"""``handle(event)`` returning (or awaiting to) `Allow` or `Deny`, nothing else (not a bool)."""

IdT = TypeVar('IdT', bound=str, covariant=True)

IdT_inv = TypeVar('IdT_inv', bound=str)

InputT = TypeVar('InputT')

JsonValue: TypeAlias = Union[None, bool, int, float, str, list['JsonValue'], dict[str, 'JsonValue']]

RecordT = TypeVar('RecordT', bound=attrs.AttrsInstance)
"""A tool's ``input_type``: an attrs class (mypy refuses a dataclass or a plain class)."""

SlashCommandComplete = Callable[[str, CompletionContext], Sequence[str] | Awaitable[Sequence[str]]]
"""``complete(prefix, ctx)``: argument values for what the user typed after ``/<id> ``; ``def`` or ``async def``."""

SlashCommandRun = Callable[[str | None, SlashCommandContext], object]
"""``run(argument, ctx)``; ``def`` or ``async def``; its result is shown as ``str(value)``."""

T = TypeVar('T')

TargetT = TypeVar('TargetT', bound=str, covariant=True)

TargetT_inv = TypeVar('TargetT_inv', bound=str)

# The public API of `host_sim`, rendered from the code by `python -m tools.render_stubs`.
# Do not edit: change the code, re-run the command, review the diff.

"""host_sim: the host simulator that folds modular-sdk mods and runs their AI sessions."""

@attrs.frozen(kw_only=True)
class ActionRecord:
    """An action a model proposed and what became of it (docs/the-record.md). Immutable."""
    id: str
    type: str
    payload: FrozenJsonObject
    mod_id: str
    session_id: SessionId
    turn_id: TurnId
    created_at: datetime
    status: ActionStatus
    decided_by: str | None = None
    decided_at: datetime | None = None
    reason: str | None = None


@final
@attrs.frozen(kw_only=True)
class ApprovalRule:
    """A standing approval: actions it matches are confirmed at once. Immutable."""
    id: str
    action_type: str
    tool: str | None
    session_id: SessionId | None
    tags: Mapping[str, str]
    by: str
    reason: str | None
    created_at: datetime
    revoked_at: datetime | None = None
    revoked_by: str | None = None


@final
class Approvals:
    """Standing approvals: ``host.approvals`` (every rule) or ``view.approvals`` (a scope's)."""
    def __init__(self, engine: Engine, declared: frozenset[str], clock: Callable[[], datetime], scope: Scope | None) -> None: ...
    async def allow(self, *, action_type: str, tool: str | None = None, session: SessionHandle | SessionId | str | None = None, tags: Mapping[str, str] | None = None, by: str, reason: str | None = None) -> ApprovalRule:
        """Allow actions of ``action_type`` for good: each one proposed from now on in a session"""
    async def list(self) -> list[ApprovalRule]:
        """Every rule (revoked ones too, with ``revoked_at``), oldest first; a scope's only."""
    async def get(self, rule_id: str) -> ApprovalRule:
        """One rule by id; `UnknownApprovalRuleError` for an id unknown (or outside the scope)."""
    async def revoke(self, rule_id: str, *, by: str) -> ApprovalRule:
        """End a rule: it matches nothing from now on (what it decided stays decided)."""


class UnknownApprovalRuleError(ModularError, LookupError):
    """No approval rule has this id (or none the scope sees); ``id`` is the id asked for."""
    def __init__(self, message: str, *, id: str) -> None: ...
    id: str


ActionStatus: TypeAlias = Literal['pending', 'confirmed', 'dismissed']
"""Where a proposed action is: waiting for the user, or decided once."""

@attrs.frozen(kw_only=True)
class PendingAction:
    """An action a model proposed, waiting for the user. Immutable."""
    id: str
    type: str
    payload: FrozenJsonObject
    mod_id: str
    session_id: SessionId
    turn_id: TurnId
    created_at: datetime


@attrs.frozen(kw_only=True)
class TaskRef:
    """Where a task lives: ``source`` (``"github"``, ``"jira"``, ``"local"``) and its ``id`` there. Immutable."""
    source: str = attrs.field(validator=_text('TaskRef', colon=False))
    id: str = attrs.field(validator=_text('TaskRef'))
    @property
    def ref(self) -> str:
        """``"source:id"``."""
    @classmethod
    def parse(cls, ref: str) -> TaskRef:
        """``TaskRef.parse("github:42") == TaskRef(source="github", id="42")``; raises `ModDefinitionError`."""


@attrs.frozen(kw_only=True)
class Trace:
    """Why code exists: a task (or a chat), the sessions that worked on it, their outputs and"""
    id: str
    origin: Literal['task', 'chat']
    task: TraceTask | None
    links: tuple[TraceLink, ...]
    created_at: datetime
    updated_at: datetime
    @property
    def outputs(self) -> tuple[TraceOutput, ...]:
        """Every output of every session of the trace, in link order."""


class TraceError(ModularError, RuntimeError):
    """A trace operation that breaks a rule: a second task for a trace, a task ref another"""
    def __init__(self, message: str, *, trace_id: str | None = None) -> None: ...
    trace_id: str | None


@attrs.frozen(kw_only=True)
class TraceLink:
    """A session working on the trace, with the outputs it produced, in order. Immutable."""
    session_id: SessionId
    created_at: datetime
    outputs: tuple[TraceOutput, ...] = ()


@attrs.frozen(kw_only=True)
class TraceOutput:
    """An output a session produced (``kind`` ``"proposal"``, ``output_id`` ``"chg-1"``) and"""
    output_id: str
    kind: str
    created_at: datetime
    commit: str | None = None


@runtime_checkable
class TraceStore(Protocol):
    """A store that keeps traces (see the module docstring). Each write is one transaction."""
    async def create_trace(self, trace: TraceRecord, task: TraceTaskRecord | None) -> None:
        """Write a new trace (and its task) with their index rows; refuses a task ref another trace holds."""
    async def create_linked_session(self, record: SessionRecord, node: SessionNode, edge: LineageEdge | None, trace_id: str | None) -> None:
        """`Store.create_session`, and in the same transaction the session's trace link."""
    async def add_output(self, *, output_id: str, session_id: SessionId, kind: str, created_at: datetime, chat_trace: TraceRecord, event_id: str | None = None, turn_id: TurnId | None = None, position: int | None = None) -> None:
        """Link an output to the trace of its session, in one transaction."""
    async def record_commit(self, commit: TraceCommitRecord, *, event_id: str | None = None) -> None:
        """Record the first commit of an output (a later one is ignored: never overwritten)."""
    async def attach_task(self, task: TraceTaskRecord) -> None:
        """Give a trace its task; refuses a trace that has one and a ref another trace holds."""
    async def apply_event(self, event_id: str, at: datetime) -> None:
        """Record a spool event as applied when applying it wrote nothing; refuses an id applied before."""
    async def event_applied(self, event_id: str) -> bool:
        """Whether a spool event with this id was applied."""
    async def get_trace(self, trace_id: str) -> TraceRecords | None:
        """One trace's records, or ``None``."""
    async def find_trace(self, key: str) -> str | None:
        """The trace ``key`` is the id of, or else leads to in the index (task ref, session,"""
    async def trace_of_session(self, session_id: SessionId) -> str | None:
        """The trace a session is linked to, or ``None`` (from the records, not the index)."""
    async def get_output(self, output_id: str) -> TraceOutputRecord | None:
        """One output's record, or ``None``."""
    async def get_commit(self, output_id: str) -> TraceCommitRecord | None:
        """The commit recorded for an output, or ``None``."""
    async def propose_actions(self, actions: Sequence[ProposedActionRecord]) -> None:
        """Write proposed actions (all or none); refuses an id already stored."""
    async def decide_action(self, outcome: ActionOutcomeRecord) -> None:
        """Write the user's decision about a pending action; refuses one decided before."""
    async def get_action(self, action_id: str) -> tuple[ProposedActionRecord, ActionOutcomeRecord | None] | None:
        """An action and its outcome (``None``: pending), or ``None`` for an unknown id."""
    async def pending_actions(self, session_id: SessionId) -> Sequence[ProposedActionRecord]:
        """A session's actions with no outcome yet, in the order proposed."""
    async def session_actions(self, session_id: SessionId) -> Sequence[tuple[ProposedActionRecord, ActionOutcomeRecord | None]]:
        """Every action proposed in a session with its outcome (``None``: pending), in the order proposed."""
    async def trace_index_version(self) -> int | None:
        """The `TRACE_INDEX_VERSION` the trace index was built with (``None``: never)."""
    async def read_traces(self) -> TraceState:
        """Every trace record and index row (for checks and repair: it reads every row)."""
    async def rebuild_trace_index(self, entries: Sequence[TraceIndexEntry]) -> None:
        """Replace the whole trace index by ``entries`` and record `TRACE_INDEX_VERSION`, in one transaction."""
    async def erase(self, erasure: Erasure) -> None:
        """`Store.erase`, plus the trace records' text it reaches, in the same transaction."""


@attrs.frozen(kw_only=True)
class TraceTask:
    """The task of a trace: ``ref`` (``"source:id"``), a JSON ``snapshot`` of it as it was,"""
    ref: str
    snapshot: FrozenJsonObject = attrs.field(converter=_snapshot)
    captured_at: datetime


@final
class Traces:
    """The host's traces: why code exists, from task to session to output to commit."""
    def __init__(self, store: TraceStore, clock: Callable[[], datetime], resolver: CommitResolver | None, sessions: Store, scope: Mapping[str, str] | None = None) -> None: ...
    async def for_task(self, ref: TaskRef, snapshot: Mapping[str, object] | None = None) -> Trace:
        """The trace of task ``ref``, created (origin ``"task"``, with ``snapshot``, a JSON"""
    async def find(self, id: str) -> Trace:
        """The trace ``id`` leads to: a trace id, a task ref (``"github:42"``), a session id,"""
    async def attach_task(self, trace_id: str, ref: TaskRef, snapshot: Mapping[str, object] | None = None) -> Trace:
        """Give trace ``trace_id`` (a chat trace) its task; its origin stays as it was."""
    async def record_commit(self, output_id: str, commit: str) -> str:
        """Store ``commit`` as the commit that landed output ``output_id``, unless one is stored."""


class UnknownTraceError(ModularError, LookupError):
    """No trace is found by this id: not a trace id, task ref, session, output or commit the"""
    def __init__(self, message: str, *, id: str) -> None: ...
    id: str


def write_event(directory: str | os.PathLike[str], event: Mapping[str, object]) -> str:
    """Write one event to the spool ``directory`` (created if missing) for a host to apply; returns its id."""

HOST_RELATIONS: tuple[LineageRelation, ...] = ('continued_from', 'used_result_of', 'delegated_from', 'planned_by')
"""Relations an integrator records with ``add_edge``; the host records the other two."""

NATIVE_ARTIFACT_TYPES: tuple[str, ...] = ('canvas_card', 'job_result', 'plan_step', 'file', 'checkpoint', 'turn')
"""Artifact types the host knows. The set is open: never switch exhaustively on it."""

@final
class AiSessionsImpl:
    """The session catalogue (``host.sessions``, ``ctx.ai.sessions``)."""
    def __init__(self, engine: Engine, actor: Actor, scope: Scope | None = None) -> None: ...
    async def create(self, *, metadata: AiSessionDisplayMetadata | None = None, model: str | None = None, cwd: str | None = None, tags: Mapping[str, str] | None = None, trace: str | None = None) -> SessionHandle:
        """A new, empty root session (``session.create`` hooks run first). With"""
    async def get(self, session_id: str) -> SessionHandle:
        """The session with this id; raises `UnknownSessionError`."""
    async def turn(self, turn_id: str) -> TurnHandle:
        """The turn with this turn id or message id, in whichever session ran it."""
    async def list(self, *, tags: Mapping[str, str] | None = None, roots_only: bool = False, limit: int = 50, after: str | None = None) -> SessionPage:
        """A page of sessions, newest first: those whose tags include every one of ``tags``"""
    async def delete(self, session_id: str) -> None:
        """Delete a session: erase the content of its own turns (through ``lineage.forget``,"""


@attrs.frozen(kw_only=True)
class CommandFinished:
    """A slash or palette command finished; its invocation is durable (``host.log``). Immutable."""
    kind: Literal['command_finished'] = attrs.field(default='command_finished', init=False)
    seq: int
    at: datetime
    host_id: str = ''
    invocation_id: str
    session_id: SessionId | None
    command_id: str
    text: str
    error: str | None
    job_id: str | None


@attrs.frozen(kw_only=True)
class Completion:
    """One typeahead entry of ``host.completions("/ta")``. Immutable."""
    name: str
    description: str
    argument_hint: str | None
    mod_id: str
    argument: str | None = None


@final
class Completions(list[Completion]):
    """What ``host.completions(text)`` returns: the matching commands, best first."""
    def __init__(self, found: Iterable[Completion], values: Callable[[], Awaitable[list[Completion]]] | None) -> None: ...


@final
class EchoModel:
    """A deterministic offline model whose reply contains the input text verbatim."""
    @property
    def name(self) -> str: ...
    async def respond(self, request: ModelRequest) -> str | ToolCall: ...


@attrs.frozen(kw_only=True)
class EffectStatus:
    """Where an effect is: ``running``, ``finished``, ``failed`` or ``cancelled``."""
    mod_id: str
    effect_id: str
    state: Literal['running', 'finished', 'failed', 'cancelled']
    error: str | None = None


@attrs.frozen(kw_only=True)
class ErasurePlan:
    """What forgetting a turn removes (``host.lineage.forget``). Immutable."""
    of: TurnRef | RecordRef
    turns: tuple[TurnRef, ...]
    sessions: tuple[SessionId, ...]
    spawns: tuple[SessionId, ...]
    edges: tuple[LineageEdge, ...]
    erased: bool
    records: tuple[RecordRef, ...] = ()


ErrorKind: TypeAlias = Literal['unknown_command', 'denied', 'handler_failed', 'timeout', 'model_failed', 'invalid_input', 'interrupted']
"""Why a submission failed, for a program to branch on (`Submission.error_kind`); ``"interrupted"``:"""

@final
class EventStream:
    """One subscriber's view of the host's events: ``async for event in events``."""
    def __init__(self, hub: EventHub, buffer: int) -> None: ...
    buffer: int
    @property
    def after(self) -> int:
        """The seq of the last event this stream delivered, or starts after. Read-only."""


@attrs.frozen(kw_only=True)
class HistoryEntry:
    """One completed earlier turn as the model sees it."""
    kind: Literal['prompt', 'notification', 'summary']
    text: str
    reply: str
    erased: bool = False
    retracted: bool = False
    retraction_reason: str | None = None
    covers: tuple[int, int] | None = None


@final
class Host:
    """The host simulator: folds mods into lanes and runs their AI sessions."""
    def __init__(self, mods: Sequence[Mod | str] = (), *, model: Model | None = None, store: Store | None = None, clock: Callable[[], datetime] | None = None, handler_timeout: float | None = 30.0, model_timeout: float | None = 120.0, max_tool_rounds: int = 8, cwd: str | None = None, spool: str | os.PathLike[str] | None = None, max_event_bytes: int = 1048576, commit_resolver: CommitResolver | None = None, builtin_tools: Sequence[str] = (), on_bad_mod: Literal['raise', 'skip'] = 'raise', max_reply_bytes: int = 1000000, event_history: int = 10000, tracer_provider: TracerProvider | None = None, meter_provider: MeterProvider | None = None, context: ContextPolicy | None = None) -> None: ...
    async def __aenter__(self) -> Host: ...
    async def __aexit__(self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None) -> bool | None: ...
    @property
    def sessions(self) -> AiSessionsImpl:
        """The session catalogue: ``await host.sessions.create()`` / ``get(id)``."""
    @property
    def memory(self) -> Memory:
        """What conversations were read into (API.md section 20): records resting on turns,"""
    @property
    def lineage(self) -> LineageGraph:
        """The lineage graph of every session this host (and its store) has seen."""
    @property
    def mods(self) -> tuple[Mod, ...]:
        """The mods loaded, in the order given."""
    @property
    def model(self) -> Model: ...
    @property
    def mod_errors(self) -> tuple[ModularError, ...]:
        """The mods ``Host(on_bad_mod="skip")`` left out, one error each, in ``mods`` order."""
    @property
    def effects(self) -> list[EffectStatus]:
        """Every effect's status, in declaration order."""
    async def submit(self, session: SessionHandle | SessionId | str, text: str, *, request_id: str | None = None) -> Submission:
        """What the user types: ``/name argument`` runs a slash command, anything else is a prompt."""
    async def run_command(self, command_id: str) -> Submission:
        """Run a palette command (no session) and report like `submit`."""
    def scoped(self, tags: Mapping[str, str]) -> ScopedHost:
        """The host as one tenant or owner sees it (API.md §14): ``host.scoped({"user": "alice"})``."""
    def completions(self, text: str) -> Completions:
        """Slash-command typeahead for what the user typed so far (``"/ta"``), best first."""
    async def render_view(self, view_id: str, data: object) -> ViewResult:
        """Render a view in the renderer lane (pure data in, text out, no session access)."""
    async def render_widget(self, widget_id: str, session: SessionHandle | SessionId | str, data: object) -> ViewResult:
        """Render a widget for one session in the renderer lane: ``data`` (JSON data, or an"""
    async def transcript(self, session: SessionHandle | SessionId | str) -> str:
        """The session's history as text: its turns (authors and notifications marked) and the"""
    def subscribe(self, *, buffer: int = 1000, after: int | None = None) -> AbstractAsyncContextManager[EventStream]:
        """Watch the host live: ``async with host.subscribe() as events: async for event in events``."""
    async def start(self, session: SessionHandle | SessionId | str, text: str, *, request_id: str | None = None) -> Job:
        """Accept what `submit` accepts and return at once a running `Job` the host owns."""
    async def job(self, job_id: str) -> Job:
        """The job with this id, on whichever host sharing the store started it (one read by key)."""
    async def cancel_job(self, job_id: str) -> None:
        """Cancel a job on whichever host runs it (`Job.cancel`); `UnknownJobError` for an unknown id."""
    async def jobs(self, *, session: SessionHandle | SessionId | str | None = None, status: JobStatus | None = None, tags: Mapping[str, str] | None = None, limit: int = 50, after: str | None = None) -> JobPage:
        """A page of the jobs of every host sharing the store, newest first: of one session,"""
    async def log(self, session: SessionHandle | SessionId | str) -> list[TurnHandle | Invocation]:
        """The session's turns (inherited ones included) and command invocations, in the order they started."""
    async def notifications(self, *, session: SessionHandle | SessionId | str | None = None, unread_only: bool = True, tags: Mapping[str, str] | None = None) -> list[TurnHandle]:
        """The notification turns (of one session, or of every session), oldest first; read ones"""
    async def mark_read(self, turn_id: str) -> None:
        """Remember that the user read this notification (a turn id or message id)."""
    @property
    def traces(self) -> Traces:
        """Traces: task -> session -> output -> commit (``for_task``, ``find``, ``attach_task``,"""
    @property
    def approvals(self) -> Approvals:
        """Standing approvals ("allow always", API.md section 21): ``allow``, ``list``, ``get``, ``revoke``."""
    async def pending_actions(self, session: SessionHandle | SessionId | str) -> list[PendingAction]:
        """The actions models proposed in ``session`` that wait for the user, in the order proposed."""
    async def confirm(self, action_id: str, *, by: str | None = None, reason: str | None = None) -> Submission:
        """Run a pending action once, as the user: its ``run(payload, ctx)``."""
    async def dismiss(self, action_id: str, *, by: str | None = None, reason: str | None = None) -> None:
        """Drop a pending action: it never runs. ``by`` and ``reason`` are kept as for `confirm`."""
    async def actions(self, session: SessionHandle | SessionId | str, *, status: ActionStatus | None = None) -> list[ActionRecord]:
        """Every action proposed in ``session`` and what became of it, in the order proposed."""


HostEvent: TypeAlias = SessionCreated | TurnStarted | ReplyDelta | ToolCalled | ToolFinished | TurnFinished | CommandFinished | JobStarted | JobFinished | NotificationEvent | SessionDeleted | TurnErased | Lagged | TurnRetracted | MemoryRecorded | MemoryRetracted | MemoryErased | SessionCompacted
"""Everything ``host.subscribe()`` yields; discriminated by ``kind``."""

@attrs.frozen(kw_only=True)
class Invocation:
    """One run of a slash or palette command, as ``host.log`` lists it. Immutable."""
    id: str
    session_id: SessionId | None
    mod_id: str
    command_id: str
    argument: str | None
    author: Author
    started_at: datetime
    finished_at: datetime | None = None
    text: str | None = None
    error: str | None = None
    error_kind: ErrorKind | None = None
    position: int = 0
    erased_at: datetime | None = None


@final
class Job:
    """A submission a host runs in its own task group (``host.start``)."""
    def __init__(self, record: JobRecord, submission: Submission | None, book: JobBook) -> None: ...
    @property
    def id(self) -> str: ...
    @property
    def session_id(self) -> SessionId:
        """The session the job's text was submitted to."""
    @property
    def turn_id(self) -> TurnId | None:
        """The turn the job's prompt runs (known once it began; ``None`` for a command)."""
    @property
    def text(self) -> str:
        """What was submitted."""
    @property
    def status(self) -> JobStatus: ...
    @property
    def created_at(self) -> datetime: ...
    @property
    def finished_at(self) -> datetime | None: ...
    @property
    def submission(self) -> Submission | None:
        """What the submission gave, once the job ended (``None`` while it runs)."""
    async def wait(self) -> Submission:
        """Wait until the job ends, on whichever host it runs; its `Submission` (never raises for a failed job)."""
    async def cancel(self) -> None:
        """Cancel the job on whichever host runs it: its status becomes ``"cancelled"``."""


@attrs.frozen(kw_only=True)
class JobFinished:
    """A job ended, durably: ``finished``, ``failed``, ``cancelled`` or ``interrupted``. Immutable."""
    kind: Literal['job_finished'] = attrs.field(default='job_finished', init=False)
    seq: int
    at: datetime
    host_id: str = ''
    job_id: str
    status: JobStatus
    error_kind: ErrorKind | None


@attrs.frozen(kw_only=True)
class JobPage:
    """One page of ``host.jobs(...)``: ``jobs`` newest first; ``next`` is the cursor of the"""
    jobs: tuple[Job, ...]
    next: str | None


@attrs.frozen(kw_only=True)
class JobStarted:
    """A job (``host.start``) was accepted and is durable; its submission runs now. Immutable."""
    kind: Literal['job_started'] = attrs.field(default='job_started', init=False)
    seq: int
    at: datetime
    host_id: str = ''
    job_id: str
    session_id: SessionId


@attrs.frozen(kw_only=True)
class Lagged:
    """This subscriber fell behind: ``missed`` events were dropped before it read them. Immutable."""
    kind: Literal['lagged'] = attrs.field(default='lagged', init=False)
    seq: int
    at: datetime
    host_id: str = ''
    missed: int


@attrs.frozen(kw_only=True)
class LineageArtifact:
    """What was carried from one session to another. Immutable; ``type`` is open."""
    type: str = attrs.field(validator=_str)
    source_id: str = attrs.field(validator=_str)
    label: str = attrs.field(validator=_str)


@attrs.frozen(kw_only=True)
class LineageChain:
    """A session with its ancestors and descendants, and the edges between them."""
    nodes: tuple[SessionNode, ...]
    edges: tuple[LineageEdge, ...]


@attrs.frozen(kw_only=True, weakref_slot=False)
class LineageEdge:
    """A typed relation from ``from_session_id`` to ``to_session_id``. Immutable."""
    from_session_id: SessionId = attrs.field(validator=_str)
    to_session_id: SessionId = attrs.field(validator=_str)
    relation: LineageRelation = attrs.field(validator=_relation)
    created_at: datetime = attrs.field(validator=aware_datetime)
    artifact: LineageArtifact | None = None


class LineageEdgeError(ModularError, ValueError):
    """`LineageGraph.add_edge` refused an edge."""
    def __init__(self, message: str, *, from_session_id: str, to_session_id: str, relation: str) -> None: ...
    from_session_id: str
    to_session_id: str
    relation: str


class TurnRunningError(ModularError, RuntimeError):
    """``forget`` or ``sessions.delete`` reaches a session whose turn (or job) is still running."""
    def __init__(self, message: str, *, session_id: str, running_id: str) -> None: ...
    session_id: str
    running_id: str


@final
class LineageGraph:
    """How the sessions of a host relate: forks, spawns, and the edges integrators add."""
    def __init__(self, store: Store, *, clock: Callable[[], datetime] = _utc_now, integrator_store: IntegratorStore | None = None, facts: LineageFacts | None = None) -> None:
        """Internal: the host builds its graph over its (open) store and integrator store; users get ``host.lineage``."""
    async def tree(self, root_id: str) -> LineageTree:
        """The session ``root_id`` and every session forked or spawned from it, nested, in"""
    async def html(self, root_id: str | None = None, *, title: str | None = None) -> str:
        """The lineage as one self-contained HTML page, the one ``host-sim lineage --html`` writes."""
    async def forward(self, turn_id: str) -> Provenance:
        """What the host made of a turn: the sessions holding it, the turns resting on it, its"""

    @overload
    async def backward(self, turn_id: RecordId) -> RecordOrigin: ...
    @overload
    async def backward(self, turn_id: str) -> TurnOrigin: ...
    async def backward(self, turn_id: str) -> TurnOrigin | RecordOrigin:
        """What a turn's reply was read from: the completed turns its model saw, and their fork"""
    async def forget(self, turn_id: str, *, dry_run: bool = True) -> ErasurePlan:
        """What forgetting a turn removes (a dry run, by default), or remove it (``dry_run=False``)."""
    async def retract(self, turn_id: str, *, reason: str) -> TurnRecord:
        """Mark a turn wrong without erasing it (seed 001, corrections; docs/the-record.md)."""
    async def node(self, session_id: str) -> SessionNode:
        """The node of one session (with its metrics once `complete_session` ran)."""
    async def ancestors(self, session_id: str, max_depth: int = 10) -> list[SessionNode]:
        """Sessions this one came from, breadth-first over incoming edges, nearest first."""
    async def descendants(self, session_id: str, max_depth: int = 10) -> list[SessionNode]:
        """Sessions that came from this one, breadth-first over outgoing edges, nearest first."""
    async def chain(self, session_id: str, max_depth: int = 10) -> LineageChain:
        """The session, its ancestors and its descendants, and every edge between them."""
    async def find_by_artifact(self, type: str, source_id: str) -> list[SessionNode]:
        """The sessions at the receiving end of edges that carried this artifact."""
    async def add_edge(self, from_id: str, to_id: str, relation: LineageRelation, artifact: LineageArtifact | None = None) -> LineageEdge:
        """Record that ``to_id`` relates to ``from_id`` (continued from it, used its result ...)."""
    async def complete_session(self, session_id: str, metrics: SessionMetrics | None = None) -> SessionNode:
        """Stamp a session completed now (host clock) with its aggregate metrics."""


LineageRelation: TypeAlias = Literal['continued_from', 'branched_from', 'spawned_by', 'used_result_of', 'delegated_from', 'planned_by']
"""How one session relates to another. Closed: consumers may switch on it exhaustively."""

@attrs.frozen(kw_only=True)
class LineageTree:
    """One session of a lineage tree and its children (forks and spawns, in creation order). Immutable."""
    session_id: SessionId
    label: str | None
    kind: Literal['root', 'spawn', 'fork']
    anchor_ordinal: int | None
    tags: Mapping[str, str] = attrs.field(hash=False)
    children: tuple[LineageTree, ...]


@attrs.frozen(kw_only=True)
class Manifest:
    """The build-time fold of a mod: everything about it that is data, nothing callable."""
    manifest_version: int = attrs.field(default=MANIFEST_VERSION, validator=_version)
    id: str
    metadata: ManifestMetadata
    commands: tuple[CommandEntry, ...] = ()
    tools: tuple[ToolEntry, ...] = ()
    agents: tuple[AgentEntry, ...] = ()
    hooks: tuple[HookEntry, ...] = ()
    effects: tuple[EffectEntry, ...] = ()
    views: tuple[ViewEntry, ...] = ()
    actions: tuple[ActionEntry, ...] = ()
    widgets: tuple[WidgetEntry, ...] = ()
    mcp_servers: tuple[McpServerEntry, ...] = ()
    def to_data(self) -> JsonObject:
        """The manifest as plain JSON data (dicts, lists, strings, numbers, None)."""
    def to_json(self) -> str:
        """Deterministic JSON: sorted keys, two-space indent, UTF-8 text, trailing newline."""
    @classmethod
    def from_json(cls, text: str | bytes) -> Manifest:
        """Read JSON written by `to_json`; raises `SerializationError` naming the problem."""
    @classmethod
    def from_data(cls, data: object) -> Manifest:
        """Structure plain JSON data into a `Manifest`; raises `SerializationError`."""


@final
class MemoryStore:
    """A store that keeps what a host writes in memory, for as long as this object lives."""
    def __init__(self) -> None: ...
    async def open(self) -> None:
        """Open the store; what was written to it before is still there."""
    async def close(self) -> None:
        """Close the store; the records stay for the next `open`."""
    async def create_session(self, record: SessionRecord, node: SessionNode, edge: LineageEdge | None) -> None:
        """Keep a new session, its node and its edge; refuses an id already kept."""
    async def begin_turn(self, record: TurnRecord) -> None:
        """Keep a turn that starts (status ``running``)."""
    async def finish_turn(self, record: TurnRecord) -> None:
        """Replace a running turn by its finished record."""
    async def retract_turn(self, turn_id: TurnId, at: datetime, reason: str) -> TurnRecord:
        """Mark a finished turn retracted, once (a turn retracted before keeps its first reason)."""
    async def save_node(self, node: SessionNode) -> None:
        """Replace the node of a session kept here."""
    async def save_edge(self, edge: LineageEdge) -> None:
        """Keep a lineage edge (an edge between the same two sessions replaces it)."""
    async def rebuild_index(self, nodes: Sequence[SessionNode], edges: Sequence[LineageEdge]) -> None:
        """Replace every node and edge."""
    async def erase(self, erasure: Erasure) -> None:
        """Carry out an erasure over every place that keeps text (``PLACES``), all or nothing."""
    async def add_record(self, record: MemoryRecord, rests_on: Sequence[TurnId]) -> None: ...
    async def get_record(self, record_id: str) -> MemoryRecord | None: ...
    async def rests_on(self, record_id: RecordId) -> Sequence[TurnId]: ...
    async def records_on_turns(self, turn_ids: Sequence[TurnId]) -> Sequence[MemoryRecord]: ...
    async def records_derived_from(self, record_ids: Sequence[RecordId]) -> Sequence[MemoryRecord]: ...
    async def retract_record(self, record_id: RecordId, at: datetime, reason: str) -> MemoryRecord: ...
    async def page_records(self, session_id: SessionId | None, kind: str | None, tags: Mapping[str, str], include_retracted: bool, limit: int, after: int | None) -> tuple[Sequence[MemoryRecord], int | None]: ...
    async def search_records(self, query: str, tags: Mapping[str, str], limit: int) -> Sequence[MemoryRecord]: ...
    async def begin_invocation(self, record: Invocation) -> None: ...
    async def finish_invocation(self, record: Invocation) -> None: ...
    async def invocations_of(self, session_id: SessionId) -> Sequence[Invocation]: ...
    async def save_job(self, record: JobRecord) -> None: ...
    async def list_jobs(self) -> Sequence[JobRecord]: ...
    async def get_job(self, job_id: str) -> JobRecord | None: ...
    async def page_jobs(self, session_id: SessionId | None, status: JobStatus | None, tags: Mapping[str, str], limit: int, before: int | None) -> tuple[Sequence[JobRecord], int | None]: ...
    async def job_turn_began(self, job_id: str, turn_id: TurnId) -> None: ...
    async def request_job_cancel(self, job_id: str, at: datetime) -> None: ...
    async def cancel_requests(self, job_ids: Sequence[str]) -> Sequence[str]: ...
    async def interrupt_jobs(self, now: Callable[[], datetime]) -> int: ...
    async def mark_read(self, turn_id: TurnId, at: datetime) -> None: ...
    async def notification_turns(self, session_id: SessionId | None, unread_only: bool, tags: Mapping[str, str]) -> Sequence[TurnRecord]: ...
    async def page_sessions(self, tags: Mapping[str, str], roots_only: bool, limit: int, before: int | None) -> tuple[Sequence[SessionRecord], int | None]: ...
    async def delete_session(self, session_id: SessionId, at: datetime) -> None: ...
    async def deleted_at(self, session_id: SessionId) -> datetime | None: ...
    async def index_version(self) -> int | None: ...
    async def get_session(self, session_id: SessionId) -> SessionRecord | None: ...
    async def get_turns(self, session_id: SessionId) -> Sequence[TurnRecord]: ...
    async def turns_since(self, session_id: SessionId, ordinal: int) -> Sequence[TurnRecord]: ...
    async def find_turn(self, turn_or_message_id: str) -> TurnRecord | None: ...
    async def spawned_during(self, turn_id: str) -> Sequence[SessionRecord]: ...
    async def turns_left_running(self) -> Sequence[TurnRecord]: ...
    async def running_turns(self) -> Sequence[TurnRecord]:
        """Deprecated: renamed `turns_left_running` (this name warns, and goes in the next release)."""
    async def child_sessions(self, session_id: SessionId) -> Sequence[SessionRecord]: ...
    async def list_sessions(self) -> Sequence[SessionRecord]: ...
    async def get_nodes(self, session_ids: Sequence[SessionId]) -> Sequence[SessionNode]: ...
    async def get_edges(self, session_ids: Sequence[SessionId], direction: Literal['out', 'in']) -> Sequence[LineageEdge]: ...
    async def find_edges(self, artifact_type: str, source_id: str) -> Sequence[LineageEdge]: ...
    async def read_all(self) -> StoredState:
        """Everything kept, in the order first written (a rewrite keeps its place)."""
    async def create_trace(self, trace: TraceRecord, task: TraceTaskRecord | None) -> None:
        """Keep a new trace and its task; refuses a taken trace id or task ref."""
    async def create_linked_session(self, record: SessionRecord, node: SessionNode, edge: LineageEdge | None, trace_id: str | None) -> None:
        """`create_session`, and the session's trace link with it (all or nothing)."""
    async def add_output(self, *, output_id: str, session_id: SessionId, kind: str, created_at: datetime, chat_trace: TraceRecord, event_id: str | None = None, turn_id: TurnId | None = None, position: int | None = None) -> None:
        """Link an output to its session's trace (a new chat trace when it has none)."""
    async def record_commit(self, commit: TraceCommitRecord, *, event_id: str | None = None) -> None:
        """Keep the first commit of a stored output (a later one is ignored)."""
    async def attach_task(self, task: TraceTaskRecord) -> None:
        """Give a stored trace its task, once."""
    async def apply_event(self, event_id: str, at: datetime) -> None:
        """Mark a spool event applied."""
    async def event_applied(self, event_id: str) -> bool: ...
    async def get_trace(self, trace_id: str) -> TraceRecords | None: ...
    async def find_trace(self, key: str) -> str | None: ...
    async def trace_of_session(self, session_id: SessionId) -> str | None: ...
    async def get_output(self, output_id: str) -> TraceOutputRecord | None: ...
    async def get_commit(self, output_id: str) -> TraceCommitRecord | None: ...
    async def propose_actions(self, actions: Sequence[ProposedActionRecord]) -> None:
        """Keep proposed actions, all or none."""
    async def decide_action(self, outcome: ActionOutcomeRecord) -> None:
        """Keep the one decision about a pending action."""
    async def get_action(self, action_id: str) -> tuple[ProposedActionRecord, ActionOutcomeRecord | None] | None: ...
    async def pending_actions(self, session_id: SessionId) -> Sequence[ProposedActionRecord]: ...
    async def add_approval_rule(self, rule: ApprovalRuleRecord) -> None: ...
    async def revoke_approval_rule(self, rule_id: str, at: datetime, by: str) -> None: ...
    async def get_approval_rule(self, rule_id: str) -> ApprovalRuleRecord | None: ...
    async def approval_rules(self, action_type: str | None = None) -> Sequence[ApprovalRuleRecord]: ...
    async def decide_by_rule(self, outcome: ActionOutcomeRecord, rule_id: str) -> None: ...
    async def session_actions(self, session_id: SessionId) -> Sequence[tuple[ProposedActionRecord, ActionOutcomeRecord | None]]: ...
    async def trace_index_version(self) -> int | None: ...
    async def read_traces(self) -> TraceState: ...
    async def rebuild_trace_index(self, entries: Sequence[TraceIndexEntry]) -> None:
        """Replace the trace index."""


class Model(Protocol):
    """A model: answers a request with reply text (``str`` or `Reply`) or a `ToolCall`."""
    @property
    def name(self) -> str:
        """The model name sessions report as ``session.model``."""
    async def respond(self, request: ModelRequest) -> ModelReply: ...


@attrs.frozen(kw_only=True)
class ModelRequest:
    """What a model is asked for one step of a turn."""
    session_id: str
    model: str
    kind: Literal['prompt', 'notification']
    text: str
    message: AiMessage
    history: Sequence[HistoryEntry]
    output_schema: JsonValue = None
    instructions: str | None = None
    tools: tuple[ToolSpec, ...] = ()
    tool_results: tuple[ToolResult, ...] = ()


@attrs.frozen(kw_only=True)
class NotificationEvent:
    """A notification was delivered to a session (its turn started). Immutable."""
    kind: Literal['notification'] = attrs.field(default='notification', init=False)
    seq: int
    at: datetime
    host_id: str = ''
    session_id: SessionId
    turn_id: TurnId
    title: str
    body: str


@final
class OpenAIModel:
    """A model served by any OpenAI-compatible Chat Completions server."""
    def __init__(self, model: str, *, base_url: str = 'https://api.openai.com/v1', api_key: str | None = None, timeout: float = 60.0, max_retries: int = 2, max_retry_wait: float = 60.0) -> None: ...
    @property
    def name(self) -> str:
        """The model name as the server knows it (``session.model``)."""
    @property
    def base_url(self) -> str:
        """The server's base URL, without a trailing slash."""
    async def respond(self, request: ModelRequest) -> str | Reply | ToolCall:
        """Ask the server for the next step of the turn; raises `ModelError` when it cannot."""
    async def stream(self, request: ModelRequest) -> AsyncIterator[str | ToolCall | Usage]:
        """Ask for the next step of the turn as the server writes it (``"stream": true``)."""
    def scrub(self, text: str) -> str:
        """``text`` with every copy of the API key replaced by ``<api key>``, however it is"""


@final
class PostgresStore(SqlStore):
    """A durable store in a PostgreSQL database that several hosts share (one session graph)."""
    def __init__(self, dsn: str, *, create: bool = True, connections: int = 8, event_retention: timedelta = timedelta(hours=24)) -> None: ...
    @property
    def path(self) -> str:
        """The DSN without its password: what messages and `StoreError.path` name."""
    async def erase(self, erasure: Erasure) -> None:
        """Carry out an erasure over every place that keeps text, in one transaction."""
    async def interrupt_jobs(self, now: Callable[[], datetime]) -> int:
        """Mark ``interrupted`` the running jobs whose host is gone (it holds no owner lock any"""
    async def interrupt_dead_hosts_jobs(self, now: Callable[[], datetime]) -> Sequence[str]:
        """`interrupt_jobs`, returning the ids of the jobs it marked (a live host announces them)."""
    async def delete_session(self, session_id: SessionId, at: datetime) -> None:
        """Mark a stored session deleted (the engine's steps), with the event log's share in"""
    async def erasure_generation(self) -> int:
        """The counter every `erase` and `delete_session` bumps in its transaction (0: none yet)."""
    async def turns_left_running(self) -> Sequence[TurnRecord]:
        """The running turns whose host holds no claim at this moment, read only."""
    async def running_turns(self) -> Sequence[TurnRecord]:
        """Deprecated: renamed `turns_left_running` (this name warns, and goes in the next release)."""
    async def dead_turns(self, host_ids: Sequence[str]) -> Sequence[TurnRecord]:
        """The running turns of the hosts ``host_ids`` whose claim is still gone, read only."""
    async def keep_claim(self) -> bool:
        """Make sure this host's liveness claim (the owner lock) is held; whether it had to be"""
    async def absent_hosts(self) -> set[str]:
        """The hosts that left turns or jobs running and hold no claim now (dead, or away for a moment)."""
    async def claim_dead(self, host_ids: Sequence[str], now: Callable[[], datetime], announce: Callable[[Sequence[TurnRecord], Sequence[str]], Sequence[EventRow]]) -> tuple[Sequence[TurnRecord], Sequence[str]]:
        """Fail as interrupted the running turns, and interrupt the running jobs, of the hosts"""
    def lock_session(self, session_id: SessionId, since: int | None = None) -> AbstractAsyncContextManager[Locked]:
        """Hold session ``session_id``'s turn lock across every host of this database (`PostgresLocks`);"""
    @property
    def host_id(self) -> str:
        """This open store's owner key as text: the ``host_id`` of the events its host publishes."""
    async def append_events(self, rows: Sequence[EventRow]) -> tuple[int, bool]:
        """Write event rows (in order) in one transaction and wake every other listening host."""
    async def events_after(self, seq: int, limit: int) -> Sequence[tuple[int, str, str]]:
        """Up to ``limit`` event rows after ``seq`` as ``(seq, host_id, event)``, in seq order."""
    async def trimmed_events(self) -> int:
        """The newest seq retention deleted (0: none)."""
    async def last_event_seq(self) -> int:
        """The newest event row's seq (0: none): where a host that opens starts reading."""
    async def wait_for_events(self, timeout: float) -> list[str]:
        """Wait until a host wrote event rows or ``timeout`` seconds passed; the reply_delta payloads meanwhile."""
    async def send_delta(self, payload: str) -> None:
        """Hand a reply_delta to the other hosts' listeners (best-effort)."""
    async def trim_events(self) -> int:
        """Delete event rows older than ``event_retention``; returns how many."""
    async def open(self) -> None:
        """Open the store (connect, check or create its schema); reads no records. Opening an open store does nothing."""
    async def close(self) -> None:
        """Close the store; everything acknowledged is durable. Idempotent; it may be opened again."""
    async def read_all(self) -> StoredState:
        """Every record and index row, in writing order, from one consistent snapshot."""
    async def create_session(self, record: SessionRecord, node: SessionNode, edge: LineageEdge | None) -> None:
        """Write a session, its node and its edge in one transaction; refuses an id already stored."""
    async def begin_turn(self, record: TurnRecord) -> None:
        """Write a turn that starts (status ``running``, owned by this host where several write); refuses a taken id or ordinal."""
    async def finish_turn(self, record: TurnRecord) -> None:
        """Replace a running turn by its finished record; refuses any turn that is not running."""
    async def retract_turn(self, turn_id: TurnId, at: datetime, reason: str) -> TurnRecord:
        """Mark a finished turn retracted, once; returns its record as stored (a turn retracted"""
    async def save_node(self, node: SessionNode) -> None:
        """Replace the node of a stored session."""
    async def save_edge(self, edge: LineageEdge) -> None:
        """Write a lineage edge between two stored sessions (same pair: replaced)."""
    async def rebuild_index(self, nodes: Sequence[SessionNode], edges: Sequence[LineageEdge]) -> None:
        """Replace every node and edge and record `INDEX_VERSION`, in one transaction."""
    async def mark_read(self, turn_id: TurnId, at: datetime) -> None: ...
    async def index_version(self) -> int | None:
        """The `INDEX_VERSION` the index was built with, or ``None`` (built by an older host)."""
    async def get_session(self, session_id: SessionId) -> SessionRecord | None: ...
    async def get_turns(self, session_id: SessionId) -> Sequence[TurnRecord]: ...
    async def turns_since(self, session_id: SessionId, ordinal: int) -> Sequence[TurnRecord]:
        """A session's own turns from ``ordinal`` on, in ordinal order (what other hosts added)."""
    async def find_turn(self, turn_or_message_id: str) -> TurnRecord | None: ...
    async def spawned_during(self, turn_id: str) -> Sequence[SessionRecord]: ...
    async def child_sessions(self, session_id: SessionId) -> Sequence[SessionRecord]: ...
    async def find_edges(self, artifact_type: str, source_id: str) -> Sequence[LineageEdge]: ...
    async def notification_turns(self, session_id: SessionId | None, unread_only: bool, tags: Mapping[str, str]) -> Sequence[TurnRecord]: ...
    async def page_sessions(self, tags: Mapping[str, str], roots_only: bool, limit: int, before: int | None) -> tuple[Sequence[SessionRecord], int | None]: ...
    async def deleted_at(self, session_id: SessionId) -> datetime | None: ...
    async def list_sessions(self) -> Sequence[SessionRecord]: ...
    async def get_nodes(self, session_ids: Sequence[SessionId]) -> Sequence[SessionNode]: ...
    async def get_edges(self, session_ids: Sequence[SessionId], direction: Literal['out', 'in']) -> Sequence[LineageEdge]: ...
    async def save_job(self, record: JobRecord) -> None:
        """Write a job record: a start (``running``) inserts it, refused when its id is taken"""
    async def page_jobs(self, session_id: SessionId | None, status: JobStatus | None, tags: Mapping[str, str], limit: int, before: int | None) -> tuple[Sequence[JobRecord], int | None]: ...
    async def begin_invocation(self, record: Invocation) -> None: ...
    async def finish_invocation(self, record: Invocation) -> None: ...
    async def invocations_of(self, session_id: SessionId) -> Sequence[Invocation]: ...
    async def get_job(self, job_id: str) -> JobRecord | None: ...
    async def list_jobs(self) -> Sequence[JobRecord]: ...
    async def job_turn_began(self, job_id: str, turn_id: TurnId) -> None: ...
    async def request_job_cancel(self, job_id: str, at: datetime) -> None:
        """Ask the host running this job to cancel it: it polls `cancel_requests` for its own jobs."""
    async def cancel_requests(self, job_ids: Sequence[str]) -> Sequence[str]: ...
    async def create_linked_session(self, record: SessionRecord, node: SessionNode, edge: LineageEdge | None, trace_id: str | None) -> None:
        """`create_session` and the session's trace link (given, or its parent's), in one transaction."""
    async def create_trace(self, trace: TraceRecord, task: TraceTaskRecord | None) -> None:
        """Write a trace and its task with their index rows, in one transaction."""
    async def add_output(self, *, output_id: str, session_id: SessionId, kind: str, created_at: datetime, chat_trace: TraceRecord, event_id: str | None = None, turn_id: TurnId | None = None, position: int | None = None) -> None:
        """Link an output to its session's trace (a new chat trace when it has none), in one transaction."""
    async def record_commit(self, commit: TraceCommitRecord, *, event_id: str | None = None) -> None:
        """Record an output's first commit (a later one is ignored), in one transaction."""
    async def attach_task(self, task: TraceTaskRecord) -> None:
        """Give a stored trace its task, once."""
    async def apply_event(self, event_id: str, at: datetime) -> None:
        """Record a spool event applied."""
    async def event_applied(self, event_id: str) -> bool: ...
    async def get_trace(self, trace_id: str) -> TraceRecords | None: ...
    async def find_trace(self, key: str) -> str | None: ...
    async def trace_of_session(self, session_id: SessionId) -> str | None: ...
    async def get_output(self, output_id: str) -> TraceOutputRecord | None: ...
    async def get_commit(self, output_id: str) -> TraceCommitRecord | None: ...
    async def propose_actions(self, actions: Sequence[ProposedActionRecord]) -> None:
        """Write proposed actions, all or none."""
    async def decide_action(self, outcome: ActionOutcomeRecord) -> None:
        """Write the one decision about a pending action."""
    async def get_action(self, action_id: str) -> tuple[ProposedActionRecord, ActionOutcomeRecord | None] | None: ...
    async def pending_actions(self, session_id: SessionId) -> Sequence[ProposedActionRecord]: ...
    async def session_actions(self, session_id: SessionId) -> Sequence[tuple[ProposedActionRecord, ActionOutcomeRecord | None]]: ...
    async def trace_index_version(self) -> int | None: ...
    async def read_traces(self) -> TraceState:
        """Every trace record and index row, in writing order."""
    async def rebuild_trace_index(self, entries: Sequence[TraceIndexEntry]) -> None:
        """Replace the trace index and record `TRACE_INDEX_VERSION`, in one transaction."""
    async def add_approval_rule(self, rule: ApprovalRuleRecord) -> None: ...
    async def revoke_approval_rule(self, rule_id: str, at: datetime, by: str) -> None: ...
    async def get_approval_rule(self, rule_id: str) -> ApprovalRuleRecord | None: ...
    async def decide_by_rule(self, outcome: ActionOutcomeRecord, rule_id: str) -> None: ...
    async def approval_rules(self, action_type: str | None = None) -> Sequence[ApprovalRuleRecord]: ...
    async def add_record(self, record: MemoryRecord, rests_on: Sequence[TurnId]) -> None: ...
    async def get_record(self, record_id: str) -> MemoryRecord | None: ...
    async def rests_on(self, record_id: RecordId) -> Sequence[TurnId]: ...
    async def records_on_turns(self, turn_ids: Sequence[TurnId]) -> Sequence[MemoryRecord]: ...
    async def records_derived_from(self, record_ids: Sequence[RecordId]) -> Sequence[MemoryRecord]: ...
    async def retract_record(self, record_id: RecordId, at: datetime, reason: str) -> MemoryRecord: ...
    async def page_records(self, session_id: SessionId | None, kind: str | None, tags: Mapping[str, str], include_retracted: bool, limit: int, after: int | None) -> tuple[Sequence[MemoryRecord], int | None]: ...
    async def search_records(self, query: str, tags: Mapping[str, str], limit: int) -> Sequence[MemoryRecord]: ...


@attrs.frozen(kw_only=True)
class Provenance:
    """What the host made of a turn or a memory record (``host.lineage.forward``). Immutable."""
    of: TurnRef | RecordRef
    sessions: tuple[SessionId, ...]
    turns: tuple[TurnRef, ...]
    spawns: tuple[SessionId, ...]
    edges: tuple[LineageEdge, ...]
    records: tuple[RecordRef, ...] = ()


@final
class RecordingModel:
    """A model that answers with ``inner`` and writes every call to the cassette at ``path``."""
    def __init__(self, inner: Model, path: str | os.PathLike[str], *, max_reply_bytes: int = 1000000) -> None: ...
    @property
    def name(self) -> str:
        """``inner``'s name: sessions report the model they would have without the recording."""
    @property
    def path(self) -> str:
        """The cassette being written."""
    async def respond(self, request: ModelRequest) -> ModelReply:
        """``inner``'s answer (or error), after appending the call to the cassette (a reply"""
    def scrub(self, text: str) -> str:
        """``inner``'s ``scrub`` (the secret it holds replaced in ``text``), or ``text``"""


@final
class ReplayModel:
    """A model that answers from a cassette `RecordingModel` wrote, with no network."""
    def __init__(self, path: str | os.PathLike[str]) -> None: ...
    @property
    def name(self) -> str:
        """The model the cassette was recorded with (``"replay"`` for an empty cassette)."""
    @property
    def path(self) -> str:
        """The cassette being replayed."""
    @property
    def remaining(self) -> int:
        """How many recorded calls have not been asked for yet (``0`` once all were replayed)."""
    async def respond(self, request: ModelRequest) -> ModelReply:
        """The recorded answer to this request (with the recorded `Usage`, if any); raises"""


@attrs.frozen(kw_only=True)
class ReplyDelta:
    """A chunk of a streaming model's reply; the turn's reply is their concatenation. Immutable."""
    kind: Literal['reply_delta'] = attrs.field(default='reply_delta', init=False)
    seq: int | None
    at: datetime
    host_id: str = ''
    session_id: SessionId
    turn_id: TurnId
    text: str


@final
class ScopedEventStream:
    """The events of one scope: ``async for event in events``, as `EventStream`."""
    def __init__(self, stream: EventStream, scope: Scope, numbers: ScopeNumbers, last: int) -> None: ...


@final
class ScopedHost:
    """The host as one tenant or owner sees it: ``host.scoped({"user": "alice"})``."""
    def __init__(self, core: HostCore, scope: Scope) -> None: ...
    @property
    def tags(self) -> Mapping[str, str]:
        """The scope: a session is visible when its tags include every one of these. Read-only."""
    def scoped(self, tags: Mapping[str, str]) -> ScopedHost:
        """A view narrower still: this scope's tags plus ``tags``. Raises `InvalidArgumentError`"""
    @property
    def sessions(self) -> AiSessionsImpl:
        """The scope's sessions: ``create`` adds the scope's tags; ``get``, ``turn``, ``list`` and"""
    @property
    def memory(self) -> Memory:
        """`Host.memory` limited to the scope: records of its sessions only (others raise"""
    @property
    def lineage(self) -> ScopedLineage:
        """The lineage graph within the scope: walks stop at its edge (see `ScopedLineage`)."""
    @property
    def traces(self) -> ScopedTraces:
        """Traces as the scope sees them (see `ScopedTraces`)."""
    async def submit(self, session: SessionHandle | SessionId | str, text: str, *, request_id: str | None = None) -> Submission:
        """`Host.submit` in a session of the scope; a handler it runs acts within the session's tags."""
    async def start(self, session: SessionHandle | SessionId | str, text: str, *, request_id: str | None = None) -> Job:
        """`Host.start` in a session of the scope."""
    async def run_command(self, command_id: str) -> Submission:
        """`Host.run_command`: a palette command, whose handler acts within the scope."""
    def completions(self, text: str) -> list[Completion]:
        """`Host.completions` (slash-command typeahead: the mods' commands, no tenant data)."""
    async def log(self, session: SessionHandle | SessionId | str) -> list[TurnHandle | Invocation]:
        """`Host.log` of a session of the scope."""
    async def transcript(self, session: SessionHandle | SessionId | str) -> str:
        """`Host.transcript` of a session of the scope."""
    async def job(self, job_id: str) -> Job:
        """A job of a session of the scope; `UnknownJobError` (as for a missing id) otherwise."""
    async def cancel_job(self, job_id: str) -> None:
        """Cancel a job of the scope (`Host.cancel_job`); `UnknownJobError` otherwise."""
    async def jobs(self, *, session: SessionHandle | SessionId | str | None = None, status: JobStatus | None = None, tags: Mapping[str, str] | None = None, limit: int = 50, after: str | None = None) -> JobPage:
        """`Host.jobs` limited to the scope's sessions, served by the tag index."""
    async def notifications(self, *, session: SessionHandle | SessionId | str | None = None, unread_only: bool = True, tags: Mapping[str, str] | None = None) -> list[TurnHandle]:
        """`Host.notifications`: the scope's inbox, served by the tag index."""
    async def mark_read(self, turn_id: str) -> None:
        """`Host.mark_read` of a notification of the scope; `UnknownTurnError` otherwise."""
    async def pending_actions(self, session: SessionHandle | SessionId | str) -> list[PendingAction]:
        """`Host.pending_actions` of a session of the scope."""
    async def actions(self, session: SessionHandle | SessionId | str, *, status: ActionStatus | None = None) -> list[ActionRecord]:
        """`Host.actions` of a session of the scope: what became of each action proposed in it."""
    async def confirm(self, action_id: str, *, by: str | None = None, reason: str | None = None) -> Submission:
        """`Host.confirm` of an action proposed in the scope; `ActionStateError` (as for an"""
    async def dismiss(self, action_id: str, *, by: str | None = None, reason: str | None = None) -> None:
        """`Host.dismiss` of an action proposed in the scope; `ActionStateError` otherwise."""
    @property
    def approvals(self) -> Approvals:
        """`Host.approvals` within the scope: a rule it allows carries the scope's tags (so it"""
    def subscribe(self, *, buffer: int = 1000, after: int | None = None) -> AbstractAsyncContextManager[ScopedEventStream]:
        """`Host.subscribe`, filtered in the host: only events of the scope's sessions."""


@final
class ScopedLineage:
    """`LineageGraph` within a scope: ``view.lineage``."""
    def __init__(self, graph: LineageGraph, store: Store, integrator_store: IntegratorStore, scope: Scope) -> None: ...
    async def node(self, session_id: str) -> SessionNode:
        """`LineageGraph.node` of a session of the scope."""
    async def ancestors(self, session_id: str, max_depth: int = 10) -> list[SessionNode]:
        """`LineageGraph.ancestors`, stopping at the scope's edge."""
    async def descendants(self, session_id: str, max_depth: int = 10) -> list[SessionNode]:
        """`LineageGraph.descendants`, stopping at the scope's edge."""
    async def chain(self, session_id: str, max_depth: int = 10) -> LineageChain:
        """`LineageGraph.chain` within the scope: its nodes and the edges between them."""
    async def tree(self, root_id: str) -> LineageTree:
        """`LineageGraph.tree` of a session of the scope, without the branches outside it."""
    async def find_by_artifact(self, type: str, source_id: str) -> list[SessionNode]:
        """`LineageGraph.find_by_artifact`: only the scope's sessions."""
    async def add_edge(self, from_id: str, to_id: str, relation: LineageRelation, artifact: LineageArtifact | None = None) -> LineageEdge:
        """`LineageGraph.add_edge` between two sessions of the scope; an id outside it raises"""
    async def html(self, root_id: str | None = None, *, title: str | None = None) -> str:
        """`LineageGraph.html` of the scope: its (listed) sessions, or with ``root_id`` (a"""
    async def complete_session(self, session_id: str, metrics: SessionMetrics | None = None) -> SessionNode:
        """`LineageGraph.complete_session` of a session of the scope (computed from its record without ``metrics``)."""
    async def forward(self, turn_id: str) -> Provenance:
        """`LineageGraph.forward` of a turn or memory record of the scope, listing only the scope's part."""

    @overload
    async def backward(self, turn_id: RecordId) -> RecordOrigin: ...
    @overload
    async def backward(self, turn_id: str) -> TurnOrigin: ...
    async def backward(self, turn_id: str) -> TurnOrigin | RecordOrigin:
        """`LineageGraph.backward` of a turn or memory record of the scope, listing only the scope's part."""
    async def forget(self, turn_id: str, *, dry_run: bool = True) -> ErasurePlan:
        """`LineageGraph.forget` of a turn or memory record of the scope; the plan lists only the scope's part."""


@final
class ScopedTraces:
    """`host.traces` within a scope: ``view.traces``."""
    def __init__(self, traces: Traces, scope: Scope) -> None: ...
    async def for_task(self, ref: TaskRef, snapshot: Mapping[str, object] | None = None) -> Trace:
        """`Traces.for_task` in the scope's own namespace: another scope's trace of the same task"""
    async def find(self, id: str) -> Trace:
        """`Traces.find` within the scope; `UnknownTraceError` for anything it does not see"""
    async def attach_task(self, trace_id: str, ref: TaskRef, snapshot: Mapping[str, object] | None = None) -> Trace:
        """`Traces.attach_task` of a trace the scope sees, with a task ref of its namespace."""
    async def record_commit(self, output_id: str, commit: str) -> str:
        """`Traces.record_commit` of an output of the scope; `UnknownTraceError` otherwise."""


@final
class ScriptedModel:
    """A model that answers each request with ``respond(request)`` (``def`` or ``async def``)."""
    def __init__(self, respond: Callable[[ModelRequest], ModelReply | Awaitable[ModelReply]], *, name: str = 'scripted') -> None: ...
    @property
    def name(self) -> str: ...
    async def respond(self, request: ModelRequest) -> ModelReply:
        """``respond(request)``; a plain ``def`` runs in a daemon thread, so a slow or blocked"""


@attrs.frozen(kw_only=True)
class SessionCreated:
    """A session was created (root, fork or spawn) and is durable. Immutable."""
    kind: Literal['session_created'] = attrs.field(default='session_created', init=False)
    seq: int
    at: datetime
    host_id: str = ''
    session_id: SessionId
    lineage: AiSessionLineage
    tags: Mapping[str, str]


@attrs.frozen(kw_only=True)
class SessionDeleted:
    """A session was deleted (``sessions.delete``): its own turns are erased, it is hidden from"""
    kind: Literal['session_deleted'] = attrs.field(default='session_deleted', init=False)
    seq: int
    at: datetime
    host_id: str = ''
    session_id: SessionId


@final
class SessionHandle:
    """An AI session (implements `modular_sdk.AiSessionHandle`)."""
    def __init__(self, engine: Engine, state: SessionState, actor: Actor) -> None: ...
    @property
    def id(self) -> SessionId: ...
    @property
    def lineage(self) -> AiSessionLineage: ...
    @property
    def metadata(self) -> AiSessionDisplayMetadata | None: ...
    @property
    def tags(self) -> Mapping[str, str]:
        """The tags the session was created with (forks and spawns inherit them). Read-only."""
    @property
    def created_at(self) -> datetime:
        """When the session was created (host clock)."""
    @property
    def last_activity_at(self) -> datetime:
        """The start of its latest turn or command invocation, else `created_at` (for a listing UI)."""
    @property
    def deleted_at(self) -> datetime | None:
        """When ``host.sessions.delete`` deleted it (its content is gone); ``None`` otherwise."""
    @property
    def model(self) -> str: ...
    @property
    def cwd(self) -> str: ...
    async def send(self, message: AiMessage, *, request_id: str | None = None) -> TurnHandle:
        """Drive one turn with ``message`` and wait for it; raises `TurnFailedError`."""

    @overload
    async def run(self, prompt: str) -> AiRunResult: ...
    @overload
    async def run(self, prompt: str, *, output_type: type[T]) -> T: ...
    async def run(self, prompt: str, *, output_type: type[T] | None = None) -> AiRunResult | T:
        """Send a prompt and wait for the answer, structured into ``output_type`` if given."""
    async def notify(self, *, title: str, body: str) -> TurnHandle:
        """Deliver a system event: ``send(AiNotificationMessage(title=..., body=...))``."""
    async def fork(self, *, metadata: AiSessionDisplayMetadata | None = None) -> SessionHandle:
        """Copy the conversation through its last completed turn into a new session."""
    async def spawn(self, *, metadata: AiSessionDisplayMetadata | None = None) -> SessionHandle:
        """A fresh child (empty history); only inside a command or tool handler."""
    async def parent(self) -> SessionHandle | None: ...
    async def children(self) -> list[AiSessionHandle]: ...
    async def turns(self) -> list[AiTurnHandle]: ...


@attrs.frozen(kw_only=True)
class SessionMetrics:
    """Aggregates stamped by ``complete_session``. Immutable."""
    tool_calls: int = attrs.field(validator=non_negative_int)
    token_usage: int = attrs.field(validator=non_negative_int)
    duration_ms: int = attrs.field(validator=non_negative_int)
    sessions_spawned: int = attrs.field(validator=non_negative_int)


@attrs.frozen(kw_only=True, weakref_slot=False)
class SessionNode:
    """A vertex of the lineage graph: one session. Immutable (completion makes a new one)."""
    session_id: SessionId = attrs.field(validator=_str)
    created_at: datetime = attrs.field(validator=aware_datetime)
    summary: str | None = None
    agent_id: str | None = None
    completed_at: datetime | None = attrs.field(default=None, validator=attrs.validators.optional(aware_datetime))
    metrics: SessionMetrics | None = None


@attrs.frozen(kw_only=True)
class SessionPage:
    """One page of ``host.sessions.list(...)``: ``sessions`` newest first; ``next`` is the"""
    sessions: tuple[SessionHandle, ...]
    next: str | None


@attrs.frozen(kw_only=True, weakref_slot=False)
class SessionRecord:
    """A session as created: never changes afterwards. Immutable."""
    id: SessionId
    lineage: AiSessionLineage
    metadata: AiSessionDisplayMetadata | None
    model: str
    cwd: str
    _runner_id: AiRunnerId | None = attrs.field(default=None, alias='runner_id')
    created_at: datetime
    agent_id: str | None = None
    trigger_turn_id: TurnId | None = None
    tags: Mapping[str, str] = attrs.field(factory=dict, converter=_frozen_tags, hash=False)
    @property
    def runner_id(self) -> AiRunnerId:
        """The runner of the session's turns: ``"{model}:{id}"`` unless created with another."""


@final
class SqliteStore(SqlStore):
    """A durable store in one SQLite file: a reopened host sees every acknowledged write."""
    def __init__(self, path: str | os.PathLike[str], *, create: bool = True, read_only: bool = False) -> None: ...
    @property
    def path(self) -> Path:
        """The store's file."""
    @property
    def read_only(self) -> bool:
        """Whether this store only reads (and takes no lock)."""
    async def erase(self, erasure: Erasure) -> None:
        """Carry out an erasure over every place that keeps text, in one transaction."""
    async def interrupt_jobs(self, now: Callable[[], datetime]) -> int: ...
    async def turns_left_running(self) -> Sequence[TurnRecord]: ...
    async def running_turns(self) -> Sequence[TurnRecord]:
        """Deprecated: renamed `turns_left_running` (this name warns, and goes in the next release)."""
    async def open(self) -> None:
        """Open the store (connect, check or create its schema); reads no records. Opening an open store does nothing."""
    async def close(self) -> None:
        """Close the store; everything acknowledged is durable. Idempotent; it may be opened again."""
    async def read_all(self) -> StoredState:
        """Every record and index row, in writing order, from one consistent snapshot."""
    async def create_session(self, record: SessionRecord, node: SessionNode, edge: LineageEdge | None) -> None:
        """Write a session, its node and its edge in one transaction; refuses an id already stored."""
    async def begin_turn(self, record: TurnRecord) -> None:
        """Write a turn that starts (status ``running``, owned by this host where several write); refuses a taken id or ordinal."""
    async def finish_turn(self, record: TurnRecord) -> None:
        """Replace a running turn by its finished record; refuses any turn that is not running."""
    async def retract_turn(self, turn_id: TurnId, at: datetime, reason: str) -> TurnRecord:
        """Mark a finished turn retracted, once; returns its record as stored (a turn retracted"""
    async def save_node(self, node: SessionNode) -> None:
        """Replace the node of a stored session."""
    async def save_edge(self, edge: LineageEdge) -> None:
        """Write a lineage edge between two stored sessions (same pair: replaced)."""
    async def rebuild_index(self, nodes: Sequence[SessionNode], edges: Sequence[LineageEdge]) -> None:
        """Replace every node and edge and record `INDEX_VERSION`, in one transaction."""
    async def delete_session(self, session_id: SessionId, at: datetime) -> None: ...
    async def mark_read(self, turn_id: TurnId, at: datetime) -> None: ...
    async def index_version(self) -> int | None:
        """The `INDEX_VERSION` the index was built with, or ``None`` (built by an older host)."""
    async def get_session(self, session_id: SessionId) -> SessionRecord | None: ...
    async def get_turns(self, session_id: SessionId) -> Sequence[TurnRecord]: ...
    async def turns_since(self, session_id: SessionId, ordinal: int) -> Sequence[TurnRecord]:
        """A session's own turns from ``ordinal`` on, in ordinal order (what other hosts added)."""
    async def find_turn(self, turn_or_message_id: str) -> TurnRecord | None: ...
    async def spawned_during(self, turn_id: str) -> Sequence[SessionRecord]: ...
    async def child_sessions(self, session_id: SessionId) -> Sequence[SessionRecord]: ...
    async def find_edges(self, artifact_type: str, source_id: str) -> Sequence[LineageEdge]: ...
    async def notification_turns(self, session_id: SessionId | None, unread_only: bool, tags: Mapping[str, str]) -> Sequence[TurnRecord]: ...
    async def page_sessions(self, tags: Mapping[str, str], roots_only: bool, limit: int, before: int | None) -> tuple[Sequence[SessionRecord], int | None]: ...
    async def deleted_at(self, session_id: SessionId) -> datetime | None: ...
    async def list_sessions(self) -> Sequence[SessionRecord]: ...
    async def get_nodes(self, session_ids: Sequence[SessionId]) -> Sequence[SessionNode]: ...
    async def get_edges(self, session_ids: Sequence[SessionId], direction: Literal['out', 'in']) -> Sequence[LineageEdge]: ...
    async def save_job(self, record: JobRecord) -> None:
        """Write a job record: a start (``running``) inserts it, refused when its id is taken"""
    async def page_jobs(self, session_id: SessionId | None, status: JobStatus | None, tags: Mapping[str, str], limit: int, before: int | None) -> tuple[Sequence[JobRecord], int | None]: ...
    async def begin_invocation(self, record: Invocation) -> None: ...
    async def finish_invocation(self, record: Invocation) -> None: ...
    async def invocations_of(self, session_id: SessionId) -> Sequence[Invocation]: ...
    async def get_job(self, job_id: str) -> JobRecord | None: ...
    async def list_jobs(self) -> Sequence[JobRecord]: ...
    async def job_turn_began(self, job_id: str, turn_id: TurnId) -> None: ...
    async def request_job_cancel(self, job_id: str, at: datetime) -> None:
        """Ask the host running this job to cancel it: it polls `cancel_requests` for its own jobs."""
    async def cancel_requests(self, job_ids: Sequence[str]) -> Sequence[str]: ...
    async def create_linked_session(self, record: SessionRecord, node: SessionNode, edge: LineageEdge | None, trace_id: str | None) -> None:
        """`create_session` and the session's trace link (given, or its parent's), in one transaction."""
    async def create_trace(self, trace: TraceRecord, task: TraceTaskRecord | None) -> None:
        """Write a trace and its task with their index rows, in one transaction."""
    async def add_output(self, *, output_id: str, session_id: SessionId, kind: str, created_at: datetime, chat_trace: TraceRecord, event_id: str | None = None, turn_id: TurnId | None = None, position: int | None = None) -> None:
        """Link an output to its session's trace (a new chat trace when it has none), in one transaction."""
    async def record_commit(self, commit: TraceCommitRecord, *, event_id: str | None = None) -> None:
        """Record an output's first commit (a later one is ignored), in one transaction."""
    async def attach_task(self, task: TraceTaskRecord) -> None:
        """Give a stored trace its task, once."""
    async def apply_event(self, event_id: str, at: datetime) -> None:
        """Record a spool event applied."""
    async def event_applied(self, event_id: str) -> bool: ...
    async def get_trace(self, trace_id: str) -> TraceRecords | None: ...
    async def find_trace(self, key: str) -> str | None: ...
    async def trace_of_session(self, session_id: SessionId) -> str | None: ...
    async def get_output(self, output_id: str) -> TraceOutputRecord | None: ...
    async def get_commit(self, output_id: str) -> TraceCommitRecord | None: ...
    async def propose_actions(self, actions: Sequence[ProposedActionRecord]) -> None:
        """Write proposed actions, all or none."""
    async def decide_action(self, outcome: ActionOutcomeRecord) -> None:
        """Write the one decision about a pending action."""
    async def get_action(self, action_id: str) -> tuple[ProposedActionRecord, ActionOutcomeRecord | None] | None: ...
    async def pending_actions(self, session_id: SessionId) -> Sequence[ProposedActionRecord]: ...
    async def session_actions(self, session_id: SessionId) -> Sequence[tuple[ProposedActionRecord, ActionOutcomeRecord | None]]: ...
    async def trace_index_version(self) -> int | None: ...
    async def read_traces(self) -> TraceState:
        """Every trace record and index row, in writing order."""
    async def rebuild_trace_index(self, entries: Sequence[TraceIndexEntry]) -> None:
        """Replace the trace index and record `TRACE_INDEX_VERSION`, in one transaction."""
    async def add_approval_rule(self, rule: ApprovalRuleRecord) -> None: ...
    async def revoke_approval_rule(self, rule_id: str, at: datetime, by: str) -> None: ...
    async def get_approval_rule(self, rule_id: str) -> ApprovalRuleRecord | None: ...
    async def decide_by_rule(self, outcome: ActionOutcomeRecord, rule_id: str) -> None: ...
    async def approval_rules(self, action_type: str | None = None) -> Sequence[ApprovalRuleRecord]: ...
    async def add_record(self, record: MemoryRecord, rests_on: Sequence[TurnId]) -> None: ...
    async def get_record(self, record_id: str) -> MemoryRecord | None: ...
    async def rests_on(self, record_id: RecordId) -> Sequence[TurnId]: ...
    async def records_on_turns(self, turn_ids: Sequence[TurnId]) -> Sequence[MemoryRecord]: ...
    async def records_derived_from(self, record_ids: Sequence[RecordId]) -> Sequence[MemoryRecord]: ...
    async def retract_record(self, record_id: RecordId, at: datetime, reason: str) -> MemoryRecord: ...
    async def page_records(self, session_id: SessionId | None, kind: str | None, tags: Mapping[str, str], include_retracted: bool, limit: int, after: int | None) -> tuple[Sequence[MemoryRecord], int | None]: ...
    async def search_records(self, query: str, tags: Mapping[str, str], limit: int) -> Sequence[MemoryRecord]: ...


class Store(Protocol):
    """Durable (or not) persistence for a `Host`: authoritative records and a derived index."""
    async def open(self) -> None:
        """Open the store (creating it if it allows); reads none of its records."""
    async def close(self) -> None:
        """Flush and close; the store may be opened again."""
    async def create_session(self, record: SessionRecord, node: SessionNode, edge: LineageEdge | None) -> None:
        """Write a new session with its lineage node and (fork, spawn) its edge, in one transaction."""
    async def begin_turn(self, record: TurnRecord) -> None:
        """Write a turn that starts now (status ``running``). Refuses a taken id or ordinal."""
    async def finish_turn(self, record: TurnRecord) -> None:
        """Replace a ``running`` turn by its finished record (same id). Refuses any other."""
    async def retract_turn(self, turn_id: TurnId, at: datetime, reason: str) -> TurnRecord:
        """Set a finished turn's ``retracted_at`` and ``retraction_reason``, once, and return"""
    async def save_node(self, node: SessionNode) -> None:
        """Replace the lineage node of a session the store holds (completion, metrics)."""
    async def save_edge(self, edge: LineageEdge) -> None:
        """Write a lineage edge between two sessions the store holds (same pair: replaced)."""
    async def rebuild_index(self, nodes: Sequence[SessionNode], edges: Sequence[LineageEdge]) -> None:
        """Replace the whole lineage index by these and record `INDEX_VERSION`, in one transaction."""
    async def erase(self, erasure: Erasure) -> None:
        """Carry out one erasure (``forget``, a session's deletion) in one transaction."""
    async def index_version(self) -> int | None:
        """The `INDEX_VERSION` the index was last rebuilt with (``None``: never). Reads no rows."""
    async def get_session(self, session_id: SessionId) -> SessionRecord | None:
        """One session's record, or ``None``."""
    async def get_turns(self, session_id: SessionId) -> Sequence[TurnRecord]:
        """A session's own turns (not those a fork inherits), in ordinal order."""
    async def turns_since(self, session_id: SessionId, ordinal: int) -> Sequence[TurnRecord]:
        """A session's own turns from ``ordinal`` on, in ordinal order (costs what it returns)."""
    async def find_turn(self, turn_or_message_id: str) -> TurnRecord | None:
        """The turn with this turn id, or else with this message id, or ``None``."""
    async def spawned_during(self, turn_id: str) -> Sequence[SessionRecord]:
        """Sessions spawned by a tool call that turn ``turn_id`` made, in creation order."""
    async def turns_left_running(self) -> Sequence[TurnRecord]:
        """Every turn still ``running`` (after a crash: those it interrupted)."""
    async def child_sessions(self, session_id: SessionId) -> Sequence[SessionRecord]:
        """The forks and spawns of a session, in creation order."""
    async def list_sessions(self) -> Sequence[SessionRecord]:
        """Every session, in creation order."""
    async def get_nodes(self, session_ids: Sequence[SessionId]) -> Sequence[SessionNode]:
        """The nodes of these sessions (those the index holds), in the order asked."""
    async def get_edges(self, session_ids: Sequence[SessionId], direction: Literal['out', 'in']) -> Sequence[LineageEdge]:
        """Edges out of (or into) these sessions: per session in the order asked, then in writing order."""
    async def find_edges(self, artifact_type: str, source_id: str) -> Sequence[LineageEdge]:
        """Edges whose artifact has this type and source id, in writing order."""
    async def read_all(self) -> StoredState:
        """Everything the store holds (for checks, repair and export: it reads every row)."""


@attrs.frozen(kw_only=True)
class Erasure:
    """What one ``forget`` or session deletion erases, by key. Immutable."""
    at: datetime
    turns: tuple[TurnRecord, ...] = ()
    edges: tuple[LineageEdge, ...] = ()
    turn_ids: frozenset[TurnId] = frozenset()
    positions: frozenset[tuple[SessionId, int]] = frozenset()
    commands: frozenset[tuple[SessionId, str]] = frozenset()
    sessions: frozenset[SessionId] = frozenset()
    errors: frozenset[tuple[str, str]] = frozenset()
    records: frozenset[RecordId] = frozenset()


class StoreError(ModularError, RuntimeError):
    """A store cannot be used: a file that is not a host-sim store, a newer schema, a closed store."""
    def __init__(self, message: str, *, path: str | None = None, retryable: bool = False) -> None: ...
    path: str | None
    retryable: bool


class StoreLockedError(StoreError):
    """Another host holds the store's file: a `SqliteStore` has one writer at a time."""
    def __init__(self, message: str, *, path: str, pid: int | None) -> None: ...
    pid: int | None


@attrs.frozen(kw_only=True)
class StoredState:
    """Everything a store holds, read back when a host opens on it."""
    sessions: tuple[SessionRecord, ...] = ()
    turns: tuple[TurnRecord, ...] = ()
    nodes: tuple[SessionNode, ...] = ()
    edges: tuple[LineageEdge, ...] = ()


@attrs.frozen(kw_only=True)
class Submission:
    """What ``host.submit`` (or ``host.run_command``) gives back. Immutable."""
    kind: Literal['prompt', 'command']
    text: str
    turn: TurnHandle | None = None
    error: str | None = None
    error_kind: ErrorKind | None = None
    actions: tuple[PendingAction, ...] = ()
    action_errors: tuple[str, ...] = ()
    widget_errors: tuple[str, ...] = ()
    @property
    def ok(self) -> bool:
        """True when nothing failed."""


@attrs.frozen(kw_only=True)
class Reply:
    """Reply text with the tokens the model call used. Immutable."""
    text: str
    usage: Usage | None = attrs.field(default=None, validator=_optional_usage)


@attrs.frozen(kw_only=True)
class ToolCall:
    """A model's request to call a mod tool with JSON ``input``; the host answers it."""
    name: str
    input: JsonObject = attrs.field(factory=dict)
    call_id: str | None = None
    usage: Usage | None = attrs.field(default=None, validator=_optional_usage, kw_only=True)


from modular_sdk import ToolCallRecord as ToolCallRecord  # re-exported, one class


@attrs.frozen(kw_only=True)
class ToolCalled:
    """The model called a tool; its handler runs now. Immutable."""
    kind: Literal['tool_called'] = attrs.field(default='tool_called', init=False)
    seq: int
    at: datetime
    host_id: str = ''
    session_id: SessionId
    turn_id: TurnId
    call_id: str
    tool_name: str
    input: JsonObject


@attrs.frozen(kw_only=True)
class ToolFinished:
    """A tool call returned (``output``, what the model gets) or failed (``error``). Immutable."""
    kind: Literal['tool_finished'] = attrs.field(default='tool_finished', init=False)
    seq: int
    at: datetime
    host_id: str = ''
    session_id: SessionId
    turn_id: TurnId
    call_id: str
    output: str | None
    error: str | None


@attrs.frozen(kw_only=True)
class ToolResult:
    """What a tool call gave back to the model (``error`` set when it failed)."""
    call_id: str
    name: str
    input: JsonObject
    output: str | None
    error: str | None = None


@attrs.frozen(kw_only=True)
class ToolSpec:
    """A tool the model may call: name, description and input JSON Schema."""
    name: str
    description: str
    input_schema: JsonObject = attrs.field(converter=thaw_object)


@attrs.frozen(kw_only=True)
class TurnErased:
    """A turn was erased (``lineage.forget`` or ``sessions.delete``): events published before"""
    kind: Literal['turn_erased'] = attrs.field(default='turn_erased', init=False)
    seq: int
    at: datetime
    host_id: str = ''
    session_id: SessionId
    turn_id: TurnId
    records: tuple[RecordId, ...] = ()


@attrs.frozen(kw_only=True)
class TurnFinished:
    """A turn completed or failed, durably. Immutable."""
    kind: Literal['turn_finished'] = attrs.field(default='turn_finished', init=False)
    seq: int
    at: datetime
    host_id: str = ''
    session_id: SessionId
    turn_id: TurnId
    status: TurnStatus
    reply: str | None
    error: str | None


@final
class TurnHandle:
    """One turn of a session (implements `modular_sdk.AiTurnHandle`)."""
    def __init__(self, engine: Engine, session: SessionState, turn: TurnState, actor: Actor) -> None: ...
    @property
    def id(self) -> TurnId: ...
    @property
    def ordinal(self) -> int: ...
    @property
    def session_id(self) -> SessionId: ...
    @property
    def status(self) -> TurnStatus: ...
    @property
    def message(self) -> AiMessage: ...
    @property
    def message_id(self) -> str: ...
    @property
    def author(self) -> Author: ...
    @property
    def reply(self) -> str | None: ...
    @property
    def error(self) -> str | None: ...
    @property
    def runner_id(self) -> AiRunnerId: ...
    @property
    def started_at(self) -> datetime:
        """When the turn began (host clock)."""
    @property
    def finished_at(self) -> datetime | None:
        """When it completed or failed; ``None`` while it runs."""
    @property
    def erased_at(self) -> datetime | None:
        """When the user forgot it (``host.lineage.forget``): its text is gone. ``None`` otherwise."""
    @property
    def retracted_at(self) -> datetime | None:
        """When someone found the turn wrong (``host.lineage.retract``); ``None`` otherwise. The turn stays."""
    @property
    def retraction_reason(self) -> str | None:
        """Why it was retracted (the first reason given); ``None`` if it was not."""
    @property
    def tool_calls(self) -> tuple[ToolCallRecord, ...]:
        """The tool calls the turn made, in the order made (docs/the-record.md)."""
    @property
    def usage(self) -> Usage | None:
        """The tokens the turn's model calls used, added up (docs/observability.md)."""
    @property
    def widgets(self) -> tuple[WidgetPlacement, ...]:
        """The widgets the reply placed (docs/the-record.md), in reply order."""
    async def fork(self, *, metadata: AiSessionDisplayMetadata | None = None) -> SessionHandle:
        """A new session whose history is exactly turns ``0..ordinal``."""


@attrs.frozen(kw_only=True)
class TurnOrigin:
    """What a turn's reply was read from (``host.lineage.backward``). Immutable."""
    of: TurnRef
    read_from: tuple[TurnRef, ...]
    sessions: tuple[SessionId, ...]


@attrs.frozen(kw_only=True, weakref_slot=False)
class TurnRecord:
    """A turn: written ``running`` when it starts, then once more when it finishes. Immutable."""
    id: TurnId
    session_id: SessionId
    ordinal: int
    message: AiMessage
    message_id: str
    author: Author
    runner_id: AiRunnerId
    status: TurnStatus
    reply: str | None
    error: str | None
    started_at: datetime
    finished_at: datetime | None
    erased_at: datetime | None = None
    tool_calls: tuple[ToolCallRecord, ...] = ()
    retracted_at: datetime | None = None
    retraction_reason: str | None = None
    usage: Usage | None = None
    widgets: tuple[WidgetPlacement, ...] = ()


@attrs.frozen(kw_only=True)
class TurnRetracted:
    """A turn was found wrong and retracted (``host.lineage.retract``), ``reason`` saying why;"""
    kind: Literal['turn_retracted'] = attrs.field(default='turn_retracted', init=False)
    seq: int
    at: datetime
    host_id: str = ''
    session_id: SessionId
    turn_id: TurnId
    reason: str


@attrs.frozen(kw_only=True)
class TurnRef:
    """Which turn: the session that ran it, its id and its ordinal. Immutable."""
    session_id: SessionId
    turn_id: TurnId
    ordinal: int


@attrs.frozen(kw_only=True)
class TurnStarted:
    """A turn was accepted (its message is durable) and its model is about to be called. Immutable."""
    kind: Literal['turn_started'] = attrs.field(default='turn_started', init=False)
    seq: int
    at: datetime
    host_id: str = ''
    session_id: SessionId
    turn_id: TurnId
    ordinal: int
    author: Author
    message: AiMessage
    job_id: str | None


from modular_sdk import Usage as Usage  # re-exported, one class


class UnknownJobError(ModularError, LookupError):
    """No job has this id in the host's store; ``id`` is the id asked for."""
    def __init__(self, message: str, *, id: str) -> None: ...
    id: str


from modular_sdk import WidgetPlacement as WidgetPlacement  # re-exported, one class


from modular_sdk import UnknownTurnError as UnknownTurnError  # re-exported, one class


@attrs.frozen(kw_only=True)
class ViewResult:
    """What ``host.render_view`` and ``host.render_widget`` give back: the text, or the error"""
    text: str
    error: str | None = None


@attrs.frozen(kw_only=True)
class ContextPolicy:
    """How much history a model call may carry (``Host(context=ContextPolicy(...))``). Immutable."""
    max_tokens: int = attrs.field(validator=_positive)
    keep_recent: int = attrs.field(default=4, validator=_positive)
    summarize: Summarize | None = attrs.field(default=None, validator=_summarizer)


from modular_sdk import HostAuthor as HostAuthor  # re-exported, one class


@final
class Memory:
    """What a conversation was read into (docs/memory.md): records resting on turns."""
    def __init__(self, store: Store, *, clock: Callable[[], datetime], author: MemoryAuthor, tags: Mapping[str, str] | None = None, notices: MemoryNotices | None = None) -> None: ...
    async def record(self, session: object, text: str, *, kind: str, read_from: Window | None = None, cites: Sequence[TurnId | str] = (), derived_from: Sequence[RecordId | str] = (), data: JsonValue = None) -> MemoryRecord:
        """Make a record of ``session`` (a handle or an id) resting on a window of its"""
    async def get(self, record_id: str) -> MemoryRecord:
        """One record as it is now; `UnknownRecordError` for an id the host (or scope) does not hold."""
    async def list(self, *, session: object = None, kind: str | None = None, tags: Mapping[str, str] | None = None, include_retracted: bool = False, limit: int = 50, after: int | None = None) -> MemoryPage:
        """Records in writing order (of one session, of one kind, of sessions carrying"""
    async def search(self, query: str, *, limit: int = 10) -> tuple[MemoryRecord, ...]:
        """Records whose text holds every word of ``query``, best first, served by the store's"""
    async def retract(self, record_id: str, *, reason: str) -> MemoryRecord:
        """Mark a record wrong (seed 001's corrections): it stays, marked, and leaves search,"""


@attrs.frozen(kw_only=True)
class MemoryPage:
    """One page of ``memory.list``: ``records`` in writing order, and ``next``, the cursor to"""
    records: tuple[MemoryRecord, ...]
    next: int | None


from modular_sdk import MemoryRecord as MemoryRecord  # re-exported, one class


@attrs.frozen(kw_only=True)
class MemoryRecorded:
    """A memory record was made (``memory.record``, ``ctx.ai.memory.record``, a compaction):"""
    kind: Literal['memory_recorded'] = attrs.field(default='memory_recorded', init=False)
    seq: int
    at: datetime
    host_id: str = ''
    session_id: SessionId
    record_id: RecordId
    record_kind: str


@attrs.frozen(kw_only=True)
class MemoryRetracted:
    """A memory record was found wrong and retracted (``memory.retract``); it stays. Immutable."""
    kind: Literal['memory_retracted'] = attrs.field(default='memory_retracted', init=False)
    seq: int
    at: datetime
    host_id: str = ''
    session_id: SessionId
    record_id: RecordId


@attrs.frozen(kw_only=True)
class MemoryErased:
    """A memory record was erased and no ``turn_erased`` names it: forgotten by its own id"""
    kind: Literal['memory_erased'] = attrs.field(default='memory_erased', init=False)
    seq: int
    at: datetime
    host_id: str = ''
    session_id: SessionId
    record_id: RecordId


from modular_sdk import RecordId as RecordId  # re-exported, one class


@attrs.frozen(kw_only=True)
class RecordOrigin:
    """Where a memory record came from (``host.lineage.backward(record_id)``). Immutable."""
    of: RecordRef
    read_from: tuple[TurnRef, ...]
    passages: tuple[Window, ...]
    records: tuple[RecordRef, ...]


@attrs.frozen(kw_only=True)
class RecordRef:
    """Which memory record: its id, the session it was made in, and its kind. Immutable."""
    record_id: RecordId
    session_id: SessionId
    kind: str


@attrs.frozen(kw_only=True)
class SessionCompacted:
    """The host compacted a session's history before a model call (``Host(context=...)``):"""
    kind: Literal['session_compacted'] = attrs.field(default='session_compacted', init=False)
    seq: int
    at: datetime
    host_id: str = ''
    session_id: SessionId
    record_id: RecordId
    first: int
    last: int


from modular_sdk import UnknownRecordError as UnknownRecordError  # re-exported, one class


from modular_sdk import Window as Window  # re-exported, one class


def build_manifest(spec: str, *, timeout: float = 10.0) -> Manifest:
    """Fold ``spec`` at build time: import it in a throwaway sandbox and derive its manifest."""

async def build_manifest_async(spec: str, *, timeout: float = 10.0) -> Manifest:
    """`build_manifest` for async code (asyncio or trio): the same sandbox, awaited."""

def discover_mods() -> dict[str, str]:
    """Installed mods: entry-point name -> mod spec, from the group ``modular.mods``."""

def lineage_mcp_server(host: Host) -> MCPServer:
    """The read-only lineage of ``host`` as an MCP server, for an application to mount."""

@final
class AguiApp:
    """An ASGI app speaking AG-UI for one host or view; obtain it from ``host_sim.agui_app(...)``."""
    def __init__(self, view: Host | ScopedHost, path: str) -> None: ...
    async def __call__(self, scope: Mapping[str, object], receive: Receive, send: Send) -> None: ...


def agui_app(host_or_scoped: Host | ScopedHost, *, path: str = '/') -> AguiApp:
    """The host as an AG-UI agent: an ASGI app answering ``POST path`` with a run's event stream."""

def load_mod(spec: str) -> Mod:
    """Import the mod module named by ``spec`` in this process and return its `Mod`."""

async def load_verified(spec: str, *, timeout: float = 10.0) -> Mod:
    """Load a mod for the runtime fold, after the build-time fold vouched for it."""


# -- Not exported, referenced above --------------------------------------------------

Actor: TypeAlias = 'HandlerFrame | None'
"""Who a handle acts as: a mod handler's frame, or ``None`` for the user."""

CommandEntry = SlashCommandEntry | PaletteCommandEntry
"""One entry of `Manifest.commands`, discriminated by ``kind``."""

CommitResolver = Callable[[TraceOutput], 'str | None | Awaitable[str | None]']
"""``Host(commit_resolver=fn)``: ``fn(output)`` (plain or async) answers the commit that landed"""

JobStatus: TypeAlias = Literal['running', 'finished', 'failed', 'interrupted', 'cancelled']
"""Where a job is: ``"running"``, then one of the others, once."""

ModelReply: TypeAlias = str | Reply | ToolCall
"""What ``Model.respond`` returns: reply text (``str``, or a `Reply` carrying `Usage`) or a `ToolCall`."""

Receive: TypeAlias = Callable[[], Awaitable[Mapping[str, object]]]

Send: TypeAlias = Callable[[dict[str, object]], Awaitable[None]]

Summarize = Callable[[Sequence[HistoryEntry]], Awaitable[str]]
"""``summarize(entries) -> text``: the summary of a window of history entries (an earlier summary first, when there is one)."""

T = TypeVar('T')

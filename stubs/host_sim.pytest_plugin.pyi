# The public API of `host_sim.pytest_plugin`, rendered from the code by `python -m tools.render_stubs`.
# Do not edit: change the code, re-run the command, review the diff.

"""The modular-sdk pytest plugin: test your mod against a real `host_sim.Host`."""

class HostOptions(TypedDict):
    """The keyword arguments of `Host`, passed through by ``mod_host``; defaults are `Host`'s."""
    model: Model | None
    store: Store | None
    clock: Callable[[], datetime] | None
    handler_timeout: float | None
    model_timeout: float | None
    max_tool_rounds: int
    cwd: str | None


@final
class ModHost:
    """The `mod_host` fixture: ``host = await mod_host(mod, model=...)``."""
    def __init__(self, stack: contextlib.AsyncExitStack, *, folder: str | os.PathLike[str] | None = None, record: bool = False) -> None: ...
    @property
    def hosts(self) -> tuple[Host, ...]:
        """The hosts opened so far in this test, oldest first."""
    async def __call__(self, *mods: Mod | str, cassette: str | os.PathLike[str] | None = None, **options: Unpack[HostOptions]) -> Host:
        """Open a host with ``mods`` and return it entered; it is closed when the test ends."""
    async def transcript(self, session: AiSessionHandle) -> str:
        """The transcript of a session of one of this test's hosts (see ``Host.transcript``)."""
    async def lineage(self, session: AiSessionHandle) -> list[AiSessionLineage]:
        """The lineage records from ``session`` up to its root (see `lineage`)."""
    async def notifications(self, session: AiSessionHandle) -> list[Notification]:
        """Every notification of the session, oldest first (see `notifications`)."""
    async def last_notification(self, session: AiSessionHandle) -> Notification:
        """The session's most recent notification; `AssertionError` if none (see `last_notification`)."""


@attrs.frozen(kw_only=True)
class Notification:
    """A notification delivered into a session, for assertions. Immutable."""
    title: str
    body: str
    author: Author
    turn: AiTurnHandle


async def last_notification(session: AiSessionHandle) -> Notification:
    """The most recent notification of the session."""

async def lineage(session: AiSessionHandle) -> list[AiSessionLineage]:
    """The lineage records from ``session`` up to its root, the session's own first."""

@pytest.fixture
async def mod_host(anyio_backend: object, request: pytest.FixtureRequest) -> AsyncIterator[ModHost]:
    """Async factory of entered hosts: ``host = await mod_host(mod, model=...)``."""

async def notifications(session: AiSessionHandle) -> list[Notification]:
    """Every notification in the session's history (inherited turns included), oldest first."""

async def transcript(host: Host, session: AiSessionHandle) -> str:
    """The session's history as text (``host.transcript``): turns, authors and notifications"""

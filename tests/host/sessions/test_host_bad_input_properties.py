"""Any junk given to a host method or to ``Host(...)`` raises a ModularError, never a builtin.

Each method is called on a host that works (on every store: the store sees what gets past
the checks) with one argument replaced by generated junk: None, lone
surrogates, numbers past 64 bits, NaN, containers, objects whose ``repr`` raises. The call
may succeed or raise a `ModularError`; ``TypeError``, ``UnicodeEncodeError``,
``OverflowError`` and friends from inside the library fail the test.
"""

from __future__ import annotations

import tempfile
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import anyio
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from host_sim import Host, PostgresStore, SqliteStore, Store
from modular_sdk import ActionStateError, InvalidArgumentError, ModularError

from ..postgres_server import PostgresServer

junk_settings = settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.too_slow])


class Unprintable:
    def __repr__(self) -> str:
        raise RuntimeError("no repr for you")


surrogate_text = st.builds(lambda a, s, b: a + s + b, st.text(max_size=3), st.characters(min_codepoint=0xD800, max_codepoint=0xDFFF), st.text(max_size=3))
scalars = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(),
    st.just(2**64),
    st.integers(min_value=5000, max_value=5001).map(lambda n: 10**n),
    st.floats(),
    st.text(max_size=12),
    surrogate_text,
    st.sampled_from(["p9999999999999", "p" + "9" * 30, "p-1", "p", "p\u0663", "", "/", "//x", "/unknown", "act_000000000000"]),
    st.binary(max_size=6),
    st.builds(Unprintable),
    st.sampled_from([int, str, object]),
)
junk = st.recursive(
    scalars,
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.one_of(st.text(max_size=4), surrogate_text, st.integers()), inner, max_size=3),
    max_leaves=6,
)


async def refuses_only_with_our_errors(call: Callable[[], Awaitable[object]]) -> object:
    try:
        return await call()
    except ModularError as exc:
        assert str(exc)
        return exc


Call = Callable[[Host, object], Awaitable[object]]
CALLS: dict[str, Call] = {
    "sessions.list(tags=)": lambda host, x: host.sessions.list(tags=x),  # type: ignore[arg-type]
    "sessions.list(after=)": lambda host, x: host.sessions.list(after=x),  # type: ignore[arg-type]
    "sessions.list(limit=)": lambda host, x: host.sessions.list(limit=x),  # type: ignore[arg-type]
    "sessions.list(roots_only=)": lambda host, x: host.sessions.list(roots_only=x),  # type: ignore[arg-type]
    "sessions.get": lambda host, x: host.sessions.get(x),  # type: ignore[arg-type]
    "sessions.create(tags=)": lambda host, x: host.sessions.create(tags=x),  # type: ignore[arg-type]
    "run_command": lambda host, x: host.run_command(x),  # type: ignore[arg-type]
    "confirm": lambda host, x: host.confirm(x),  # type: ignore[arg-type]
    "dismiss": lambda host, x: host.dismiss(x),  # type: ignore[arg-type]
    "submit(text=)": lambda host, x: _submit(host, x),
    "start(text=)": lambda host, x: _start(host, x),
    "sessions.turn": lambda host, x: host.sessions.turn(x),  # type: ignore[arg-type]
    "lineage.forward": lambda host, x: host.lineage.forward(x),  # type: ignore[arg-type]
    "lineage.forget(turn_id=)": lambda host, x: host.lineage.forget(x),  # type: ignore[arg-type]
    "job": lambda host, x: host.job(x),  # type: ignore[arg-type]
    "jobs(after=)": lambda host, x: host.jobs(after=x),  # type: ignore[arg-type]
    "jobs(tags=)": lambda host, x: host.jobs(tags=x),  # type: ignore[arg-type]
    "jobs(status=)": lambda host, x: host.jobs(status=x),  # type: ignore[arg-type]
    "mark_read": lambda host, x: host.mark_read(x),  # type: ignore[arg-type]
    "completions": lambda host, x: _completions(host, x),
    "lineage.forget(dry_run=)": lambda host, x: _forget(host, x),
}


async def _submit(host: Host, text: object) -> object:
    chat = await host.sessions.create()
    return await host.submit(chat, text)  # type: ignore[arg-type]


async def _start(host: Host, text: object) -> object:
    chat = await host.sessions.create()
    job = await host.start(chat, text)  # type: ignore[arg-type]
    return await job.wait()


async def _completions(host: Host, text: object) -> object:
    return host.completions(text)  # type: ignore[arg-type]


async def _forget(host: Host, dry_run: object) -> object:
    chat = await host.sessions.create()
    out = await host.submit(chat, "hello")
    assert out.turn is not None
    return await host.lineage.forget(out.turn.id, dry_run=dry_run)  # type: ignore[arg-type]


def store_of(kind: str, folder: str, dsn: str) -> Store | None:
    """The store a junk example runs on: the default MemoryStore (``None``), a SqliteStore in
    ``folder``, or a PostgresStore on ``dsn`` (the database the examples share)."""
    if kind == "sqlite":
        return SqliteStore(Path(folder) / "s.sqlite")
    return PostgresStore(dsn) if kind == "postgres" else None


store_kinds = st.sampled_from(["memory", "sqlite", "postgres"])


async def call_with(name: str, value: object, store_kind: str, dsn: str) -> None:
    with tempfile.TemporaryDirectory() as folder:
        async with Host(store=store_of(store_kind, folder, dsn)) as host:
            await refuses_only_with_our_errors(lambda: CALLS[name](host, value))


@pytest.fixture(scope="module")
def junk_database(postgres: PostgresServer) -> str:
    """One database the junk examples of a module share (each opens its own host on it)."""
    return postgres.database("junk")


@pytest.mark.parametrize("name", sorted(CALLS))
@junk_settings
@given(value=junk, store_kind=store_kinds, backend=st.sampled_from(["asyncio", "trio"]))
def test_junk_in_any_host_argument_raises_only_a_modular_error(
    name: str, value: object, store_kind: str, backend: str, junk_database: str
) -> None:
    anyio.run(call_with, name, value, store_kind, junk_database, backend=backend)


HOST_ARGUMENTS = [
    "mods",
    "model",
    "store",
    "clock",
    "handler_timeout",
    "model_timeout",
    "max_tool_rounds",
    "cwd",
    "spool",
    "commit_resolver",
    "builtin_tools",
    "max_reply_bytes",
    "max_event_bytes",
    "on_bad_mod",
    "tracer_provider",
    "meter_provider",
]


@pytest.mark.parametrize("argument", HOST_ARGUMENTS)
@junk_settings
@given(value=junk)
def test_junk_in_any_host_constructor_argument_raises_only_a_modular_error(argument: str, value: object) -> None:
    kwargs: dict[str, Any] = {argument: value}
    try:
        Host(**kwargs)
    except ModularError as exc:
        assert str(exc)


# -- the cases from the issue, with their messages --------------------------------------------


@pytest.mark.anyio
async def test_listing_by_a_tag_with_a_lone_surrogate_names_it(tmp_path: Path) -> None:
    """It was a UnicodeEncodeError from SQLite."""
    async with Host(store=SqliteStore(tmp_path / "s.sqlite")) as host:
        with pytest.raises(InvalidArgumentError, match=r"^the tag 'u': '\\ud800' holds the lone surrogate '\\ud800' at index 0, which cannot be stored as UTF-8.*; tags are text a store can hold$") as info:
            await host.sessions.list(tags={"u": "\ud800"})
        assert info.value.argument == "tags"


@pytest.mark.anyio
@pytest.mark.parametrize("cursor", ["p" + "9" * 20, f"p{2**63}", "p\u0663", "p-1", "p"])
async def test_a_cursor_no_store_can_hold_is_not_a_page_cursor(tmp_path: Path, cursor: str) -> None:
    """A cursor past 64 bits was an OverflowError from SQLite."""
    async with Host(store=SqliteStore(tmp_path / "s.sqlite")) as host:
        with pytest.raises(InvalidArgumentError, match=r"is not a page cursor; pass the `next` of a SessionPage this host returned$") as info:
            await host.sessions.list(after=cursor)
        assert info.value.argument == "after"
        assert (await host.sessions.list(after=f"p{2**63 - 1}")).sessions == ()


@pytest.mark.anyio
@pytest.mark.parametrize("dry_run", [None, 0, "no", 1])
async def test_forget_refuses_a_dry_run_that_is_not_a_bool(dry_run: object) -> None:
    async with Host() as host:
        chat = await host.sessions.create()
        out = await host.submit(chat, "keep me")
        assert out.turn is not None
        with pytest.raises(InvalidArgumentError, match=rf"^forget\(dry_run=...\) takes True \(show the plan\) or False \(erase\), got {dry_run!r}; pass dry_run=False to erase$"):
            await host.lineage.forget(out.turn.id, dry_run=dry_run)  # type: ignore[arg-type]
        assert (await chat.turns())[0].reply == "echo: keep me"  # nothing was erased


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [
        ({"builtin_tools": None}, r"^Host's builtin_tools must be a sequence of 'lineage', got None \(NoneType\); write builtin_tools=\('lineage',\)"),
        ({"builtin_tools": "lineage"}, r"builtin_tools must be a sequence of 'lineage', got 'lineage' \(str\)"),
        ({"handler_timeout": "soon"}, r"^Host's handler_timeout must be a positive number of seconds or None, got 'soon' \(str\); pass e.g. handler_timeout=30.0$"),
        ({"model_timeout": float("nan")}, r"model_timeout must be a positive number of seconds or None, got nan"),
        ({"mods": None}, r"^Host's mods must be a sequence of Mod values or mod specs \(str\), got None"),
        ({"mods": 3}, r"mods must be a sequence of Mod values or mod specs \(str\), got 3 \(int\)"),
        ({"model": "echo"}, r"^Host's model must be a model \(an object with respond\(request\)\) or None, got 'echo'"),
        ({"store": "host.sqlite"}, r"store must be a store \(MemoryStore, SqliteStore, PostgresStore\) or None, got 'host.sqlite'"),
        ({"max_tool_rounds": -1}, r"max_tool_rounds must be an int >= 0, got -1"),
        ({"cwd": "\udc80"}, r"cwd must be a folder path as a str \(valid text\) or None"),
        (
            {"tracer_provider": "otel"},
            r"^Host's tracer_provider must be an OpenTelemetry tracer provider \(with get_tracer\(\)\) or None, got 'otel' \(str\); "
            r"pass e.g. tracer_provider=opentelemetry.sdk.trace.TracerProvider\(\)",
        ),
        ({"meter_provider": 3}, r"^Host's meter_provider must be an OpenTelemetry meter provider \(with get_meter\(\)\) or None, got 3 \(int\)"),
    ],
)
def test_host_names_the_argument_it_refuses(kwargs: dict[str, Any], match: str) -> None:
    with pytest.raises(InvalidArgumentError, match=match) as info:
        Host(**kwargs)
    assert info.value.argument == next(iter(kwargs))


@pytest.mark.anyio
async def test_run_command_refuses_what_is_not_a_command_id() -> None:
    """It was a TypeError from inside the typo suggestion."""
    async with Host() as host:
        with pytest.raises(InvalidArgumentError, match=r"^run_command\(\) takes a palette command id \(a str, like 'open'\), got None \(NoneType\)$"):
            await host.run_command(None)  # type: ignore[arg-type]


@pytest.mark.anyio
@pytest.mark.parametrize("verb", ["confirm", "dismiss"])
async def test_confirming_or_dismissing_a_lone_surrogate_is_an_unknown_action(tmp_path: Path, verb: str) -> None:
    """It was a UnicodeEncodeError from SQLite."""
    async with Host(store=SqliteStore(tmp_path / "s.sqlite")) as host:
        with pytest.raises(ActionStateError, match=rf"^{verb}\(\) takes an action id \(PendingAction.id, a str of valid text\), got '\\ud800'; use an id from Submission.actions") as info:
            await getattr(host, verb)("\ud800")
        assert info.value.state == "unknown"


# -- the public doors of API §24's list -------------------------------------------------------


@pytest.mark.parametrize("length", [4_097, 100_000, 1_000_000])
def test_build_manifest_of_a_spec_of_any_length_is_a_build_error_naming_its_length(length: int) -> None:
    from host_sim import build_manifest
    from modular_sdk import ManifestBuildError

    for spec in ("x" * length, "x/" * (length // 2) + "m.py"):
        with pytest.raises(ManifestBuildError, match=rf"\({len(spec):,} characters\).*no path or module name is longer than 4,096"):
            build_manifest(spec)
    with pytest.raises(ManifestBuildError, match="no path or module name holds a NUL character"):
        build_manifest("mods/a\x00.py")


@pytest.mark.anyio
@pytest.mark.parametrize("relation", [["x"], {"a": 1}, None, 3, b"continued_from"])
async def test_add_edge_with_a_relation_that_is_not_text_is_a_lineage_edge_error(relation: object) -> None:
    from host_sim import LineageEdgeError

    async with Host() as host:
        a, b = await host.sessions.create(), await host.sessions.create()
        with pytest.raises(LineageEdgeError, match="unknown lineage relation"):
            await host.lineage.add_edge(a.id, b.id, relation)  # type: ignore[arg-type]


@pytest.mark.anyio
@pytest.mark.parametrize("view_id", [["x"], {"a": 1}, None, 3])
async def test_render_view_with_an_id_that_is_not_text_is_an_unknown_view(view_id: object) -> None:
    async with Host() as host:
        result = await host.render_view(view_id, {})  # type: ignore[arg-type]
    assert result.error is not None and result.error.startswith("unknown view ")


@pytest.mark.parametrize("path", [None, "", 3, ["a"], "a\x00b", b"s.sqlite"])
def test_sqlite_store_with_a_path_that_is_not_text_is_an_invalid_argument(path: object) -> None:
    with pytest.raises(InvalidArgumentError, match="SqliteStore needs the store file's path"):
        SqliteStore(path)  # type: ignore[arg-type]


@pytest.mark.parametrize("path", ["\x00", "cassettes/a\x00.jsonl"])
def test_a_cassette_path_with_a_nul_is_an_invalid_argument(path: str, tmp_path: Path) -> None:
    from host_sim import EchoModel, RecordingModel, ReplayModel

    with pytest.raises(InvalidArgumentError, match="without NUL characters"):
        ReplayModel(path)
    with pytest.raises(InvalidArgumentError, match="without NUL characters"):
        RecordingModel(EchoModel(), path)
    with pytest.raises(InvalidArgumentError, match="cannot read the cassette"):
        ReplayModel(str(tmp_path / ("c" * 5_000)))

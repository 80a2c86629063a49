"""``host-sim check SPEC... [--json] [--no-mcp]``: validate many mods, report every problem at once.

Besides the build and the fold, each MCP server a mod declares is started (with the
timeout), its tools listed, and stopped: a server that cannot start is a problem naming
it, its exit status and its last standard error lines. ``--no-mcp`` skips that.
"""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Callable, Coroutine, Sequence
from datetime import UTC, datetime

import anyio
import attrs

from modular_sdk import ManifestBuildError, Mod

from ..fold import Manifest, build_manifest_async, check_drift, load_mod
from ..fold._manifest import dump_json
from ..mcp._client import McpTools
from ..mcp._extra import McpUnavailableError, require_mcp
from ..stores._memory import MemoryStore
from ._endings import stops_on_ctrl_c
from ._options import add_timeout, seconds

__all__ = ["CheckResult", "check", "mcp_servers", "register", "run"]


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    parser = sub.add_parser(
        "check",
        help="validate mods: sandboxed build, loading, runtime fold agreement",
        description="Build each mod's manifest in the sandbox, import it, and check that the "
        "runtime fold agrees with the build; start each MCP server a mod declares and list "
        "its tools (--no-mcp skips it). Reports every problem of every mod; exit code 0 "
        "when all pass, 1 otherwise.",
    )
    parser.add_argument("specs", nargs="+", metavar="SPEC", help="path/to/file.py or package.module[:attr]")
    parser.add_argument("--json", action="store_true", help="print one JSON report for tools")
    parser.add_argument(
        "--no-mcp", action="store_true", help="do not start the MCP servers the mods declare (only build and load)"
    )
    add_timeout(parser, default=10.0, what="each import")
    parser.add_argument(
        "--mcp-timeout",
        type=seconds,
        default=30.0,
        metavar="SECONDS",
        help="time limit of each MCP server's start and listing (default 30, a host's handler_timeout)",
    )
    parser.set_defaults(handler=run)


@attrs.frozen(kw_only=True)
class CheckResult:
    """The verdict on one spec. Immutable."""

    spec: str
    mod_id: str | None
    problems: tuple[str, ...]
    manifest: Manifest | None = attrs.field(default=None, eq=False)
    mcp_tools: tuple[tuple[str, tuple[str, ...] | None], ...] = ()
    """Each declared MCP server that started: its id and its tools (``server.tool``); ``None``
    for one not started because the ``mcp`` extra is missing."""
    notes: tuple[str, ...] = ()
    """What was not checked, and why (no problem of the mod)."""

    @property
    def ok(self) -> bool:
        """No problems."""
        return not self.problems


def _problems(exc: ManifestBuildError) -> tuple[str, ...]:
    return exc.problems or (str(exc),)


async def mcp_servers(mod: Mod, *, timeout: float) -> tuple[tuple[tuple[str, tuple[str, ...] | None], ...], list[str]]:
    """Start each MCP server ``mod`` declares, as a host would, list its tools, stop it:
    ``(server id, its tools)`` of those that started, and why each other one did not.

    Without the ``mcp`` package nothing starts: every server is listed with ``None`` (not
    started) and the one message says which extra to install; that is no problem of the mod.
    """
    declared = {server.id: (mod, server) for server in mod.ai.mcp_servers}
    if not declared:
        return (), []
    try:  # without the extra no host can start them either: said, not a problem of the mod
        require_mcp(f"starting the MCP servers of mod {mod.id!r}")
    except McpUnavailableError as missing:
        return tuple((server_id, None) for server_id in declared), [str(missing)]
    async with anyio.create_task_group() as tg:

        def start(run: Callable[[], Coroutine[object, object, None]]) -> None:
            tg.start_soon(run)

        servers = McpTools(
            declared, store=MemoryStore(), clock=lambda: datetime.now(UTC), timeout=timeout, start=start
        )
        specs = await servers.specs()
        failures = servers.failures()
        tg.cancel_scope.cancel()  # stops every server (a stdio one's process is ended and reaped)
    started = tuple(
        (server_id, tuple(s.name for s in specs if s.name.startswith(f"{server_id}.")))
        for server_id in declared
        if server_id not in failures
    )
    return started, [failures[server_id] for server_id in declared if server_id in failures]


async def check(specs: Sequence[str], *, timeout: float = 10.0, mcp_timeout: float | None = 30.0) -> list[CheckResult]:
    """Check every spec (sandboxed builds run concurrently); one result per spec, in order.

    The MCP servers each loaded mod declares are started and listed too, each within
    ``mcp_timeout`` seconds (``None``: they are not started).
    """
    built: dict[int, Manifest | ManifestBuildError] = {}
    limiter = anyio.CapacityLimiter(max(1, os.cpu_count() or 1))

    async def build(index: int, spec: str) -> None:
        async with limiter:
            try:
                built[index] = await build_manifest_async(spec, timeout=timeout)
            except ManifestBuildError as exc:
                built[index] = exc

    async with anyio.create_task_group() as tg:
        for index, spec in enumerate(specs):
            tg.start_soon(build, index, spec)

    results: list[CheckResult] = []
    owners: dict[str, str] = {}
    for index, spec in enumerate(specs):
        outcome = built[index]
        if isinstance(outcome, ManifestBuildError):
            results.append(CheckResult(spec=spec, mod_id=None, problems=_problems(outcome)))
            continue
        problems: list[str] = []
        notes: list[str] = []
        started: tuple[tuple[str, tuple[str, ...] | None], ...] = ()
        try:  # the runtime fold: safe to import here, the sandbox found no I/O
            mod = load_mod(spec)
            check_drift(spec, outcome, mod)
        except ManifestBuildError as exc:
            problems.extend(_problems(exc))
        else:
            if mcp_timeout is not None:
                started, failed = await mcp_servers(mod, timeout=mcp_timeout)
                if any(tools is None for _, tools in started):
                    notes.extend(failed)
                else:
                    problems.extend(failed)
        if outcome.id in owners:
            problems.append(
                f"mod id {outcome.id!r} is also the id of {owners[outcome.id]!r}; one host "
                "cannot load both: give one of them another id (define_mod(id=...))"
            )
        owners.setdefault(outcome.id, spec)
        results.append(
            CheckResult(
                spec=spec, mod_id=outcome.id, problems=tuple(problems), manifest=outcome, mcp_tools=started, notes=tuple(notes)
            )
        )
    return results


def _summary(manifest: Manifest) -> str:
    """``1 command, 2 tools, 1 action``: every kind of contribution the manifest holds.

    Read from the manifest's own fields (each tuple of entries), so a kind added to the
    manifest is counted here without anyone remembering to.
    """
    counts = [
        (len(value), field.name[:-1])
        for field in attrs.fields(Manifest)
        for value in [getattr(manifest, field.name)]
        if isinstance(value, tuple) and field.name.endswith("s")
    ]
    return ", ".join(f"{n} {word}{'' if n == 1 else 's'}" for n, word in counts if n)


def render_text(results: Sequence[CheckResult]) -> str:
    """The report a person reads: one block per mod, then a summary line."""
    lines: list[str] = []
    for result in results:
        if result.ok:
            detail = f"{result.mod_id}" + (f" ({_summary(result.manifest)})" if result.manifest else "")
            lines.append(f"ok      {result.spec}: {detail}")
            for server_id, tools in result.mcp_tools:
                if tools is not None:
                    lines.append(f"        mcp server {server_id!r} started: {', '.join(tools) or 'no tools'}")
            lines += [f"        (not checked: {note})" for note in result.notes]
        else:
            lines.append(f"FAILED  {result.spec}")
            for problem in result.problems:
                first, *rest = problem.splitlines() or [""]
                lines.append(f"        - {first}")
                lines += [f"          {more.strip()}" for more in rest]
    failed = sum(1 for r in results if not r.ok)
    mods = "mod" if len(results) == 1 else "mods"
    lines.append(f"checked {len(results)} {mods}: {len(results) - failed} ok, {failed} failed")
    return "\n".join(lines) + "\n"


def render_json(results: Sequence[CheckResult]) -> str:
    """The report for tools: ``{"ok": ..., "mods": [{"spec", "ok", "id", "problems"}]}``."""
    return dump_json(
        {
            "ok": all(r.ok for r in results),
            "mods": [
                {
                    "spec": r.spec,
                    "ok": r.ok,
                    "id": r.mod_id,
                    "problems": list(r.problems),
                    "mcp_servers": [
                        {"id": server_id, "tools": None if tools is None else list(tools)} for server_id, tools in r.mcp_tools
                    ],
                    "notes": list(r.notes),
                }
                for r in results
            ],
        }
    )


def run(args: argparse.Namespace) -> int:
    """Check every spec, print the report; exit 0 when every mod passes, else 1."""
    specs: list[str] = args.specs
    timeout: float = args.timeout
    mcp_timeout: float | None = None if args.no_mcp else args.mcp_timeout
    results = anyio.run(stops_on_ctrl_c, lambda: check(specs, timeout=timeout, mcp_timeout=mcp_timeout))
    sys.stdout.write(render_json(results) if args.json else render_text(results))
    return 0 if all(r.ok for r in results) else 1

"""``host-sim check SPEC... [--json]``: validate many mods, report every problem at once."""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Sequence

import anyio
import attrs

from modular_sdk import ManifestBuildError

from ..fold import Manifest, build_manifest_async, check_drift, load_mod
from ..fold._manifest import dump_json
from ._endings import stops_on_ctrl_c
from ._options import add_timeout

__all__ = ["CheckResult", "check", "register", "run"]


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    parser = sub.add_parser(
        "check",
        help="validate mods: sandboxed build, loading, runtime fold agreement",
        description="Build each mod's manifest in the sandbox, import it, and check that the "
        "runtime fold agrees with the build. Reports every problem of every mod; exit code 0 "
        "when all pass, 1 otherwise.",
    )
    parser.add_argument("specs", nargs="+", metavar="SPEC", help="path/to/file.py or package.module[:attr]")
    parser.add_argument("--json", action="store_true", help="print one JSON report for tools")
    add_timeout(parser, default=10.0, what="each import")
    parser.set_defaults(handler=run)


@attrs.frozen(kw_only=True)
class CheckResult:
    """The verdict on one spec. Immutable."""

    spec: str
    mod_id: str | None
    problems: tuple[str, ...]
    manifest: Manifest | None = attrs.field(default=None, eq=False)

    @property
    def ok(self) -> bool:
        """No problems."""
        return not self.problems


def _problems(exc: ManifestBuildError) -> tuple[str, ...]:
    return exc.problems or (str(exc),)


async def check(specs: Sequence[str], *, timeout: float = 10.0) -> list[CheckResult]:
    """Check every spec (sandboxed builds run concurrently); one result per spec, in order."""
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
        try:  # the runtime fold: safe to import here, the sandbox found no I/O
            check_drift(spec, outcome, load_mod(spec))
        except ManifestBuildError as exc:
            problems.extend(_problems(exc))
        if outcome.id in owners:
            problems.append(
                f"mod id {outcome.id!r} is also the id of {owners[outcome.id]!r}; one host "
                "cannot load both: give one of them another id (define_mod(id=...))"
            )
        owners.setdefault(outcome.id, spec)
        results.append(CheckResult(spec=spec, mod_id=outcome.id, problems=tuple(problems), manifest=outcome))
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
                {"spec": r.spec, "ok": r.ok, "id": r.mod_id, "problems": list(r.problems)} for r in results
            ],
        }
    )


def run(args: argparse.Namespace) -> int:
    """Check every spec, print the report; exit 0 when every mod passes, else 1."""
    specs: list[str] = args.specs
    timeout: float = args.timeout
    results = anyio.run(stops_on_ctrl_c, lambda: check(specs, timeout=timeout))
    sys.stdout.write(render_json(results) if args.json else render_text(results))
    return 0 if all(r.ok for r in results) else 1

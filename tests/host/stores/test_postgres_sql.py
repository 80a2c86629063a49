"""PostgresStore's SQL never hands psycopg a bare percent sign.

psycopg reads ``%`` in a statement run with parameters as a placeholder, so
``LIKE 'x%'`` failed ``host.notifications()`` on PostgreSQL. The rule, for every module
that holds PostgreSQL SQL: every statement is run with parameters (an empty tuple when it
has none), and a literal percent is written ``%%``. Read from the source, so a statement
added later obeys it too.
"""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest

import host_sim
from host_sim import Host, PostgresStore, TaskRef
from host_sim.testing import postgres_driver as _postgres_commit

STORES = Path(host_sim.__file__).resolve().parent / "stores"
MODULES = sorted([*STORES.glob("_postgres*.py"), STORES / "_sql.py", *STORES.glob("_sql_*.py"), STORES / "_approvals.py"])  # the last three: SQL both stores run
BARE_PERCENT = re.compile(r"%(?![s%])")


def _strings(tree: ast.AST) -> list[tuple[int, str]]:
    return [
        (node.lineno, node.value)
        for node in ast.walk(tree)
        if isinstance(node, ast.Constant) and isinstance(node.value, str)
    ]


def test_there_are_postgres_modules_to_check() -> None:
    assert {p.name for p in MODULES} >= {"_postgres.py", "_postgres_traces.py", "_postgres_sql.py", "_sql.py", "_sql_traces.py", "_sql_jobs.py"}


def test_no_string_in_the_postgres_modules_holds_a_bare_percent() -> None:
    offenders = [
        f"{path.name}:{line}: {text!r}"
        for path in MODULES
        for line, text in _strings(ast.parse(path.read_text(encoding="utf-8")))
        if BARE_PERCENT.search(text.replace("%%", ""))
    ]
    assert not offenders, "write a literal percent as %% (psycopg reads % as a placeholder): " + "; ".join(offenders)


def test_every_statement_is_executed_with_parameters() -> None:
    offenders = [
        f"{path.name}:{node.lineno}"
        for path in MODULES
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8")))
        if isinstance(node, ast.Call)
        and isinstance(node.func, ast.Attribute)
        and node.func.attr == "execute"
        and len(node.args) < 2
    ]
    assert not offenders, (
        "pass parameters to every execute (an empty tuple when there are none), so that %% "
        "means one percent in every statement: " + ", ".join(offenders)
    )


@pytest.mark.anyio
async def test_job_trace_and_action_reads_are_served_by_indexes(postgres_dsn: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """Every read the jobs, inbox, traces and actions make, EXPLAINed with table scans
    disabled: none scans a table (a scan is then chosen only when no index can serve)."""
    import psycopg

    ran: list[tuple[str, tuple[object, ...]]] = []

    def recording(sql: str, params: tuple[object, ...]) -> None:
        ran.append((sql, params))

    async with Host(store=PostgresStore(postgres_dsn)) as host:
        chat = await host.sessions.create(tags={"user": "alice", "team": "core"})
        await chat.notify(title="t", body="b")
        job = await host.start(chat, "hello")
        await job.wait()
        trace = await host.traces.for_task(TaskRef(source="github", id="7"))
        monkeypatch.setattr(_postgres_commit, "read_seen", recording)  # the driver's seam for tests
        await host.job(job.id)
        for arguments in ({}, {"session": chat}, {"status": "finished"}, {"tags": {"user": "alice", "team": "core"}}):
            await host.jobs(limit=1, **arguments)
        await host.notifications(tags={"user": "alice"})
        await host.traces.find(trace.id)
        await host.traces.find("github:7")
        await host.pending_actions(chat)
        store = PostgresStore(postgres_dsn)
        await store.open()
        try:
            await store.cancel_requests([job.id])
        finally:
            await store.close()
    monkeypatch.undo()
    assert len(ran) >= 10
    with psycopg.connect(postgres_dsn, autocommit=True) as conn:
        conn.execute("SET enable_seqscan = off")
        for sql, params in ran:
            plan = "\n".join(row[0] for row in conn.execute(f"EXPLAIN {sql}".encode(), params).fetchall())
            assert "Seq Scan" not in plan, f"{sql}\n{plan}"

"""The trace tables of a `PostgresStore` (``TRACE_TABLES_SCHEMA``): traces, actions and spool ids.

Their reads and writes are `_sql_traces.SqlTraces`, written once for both SQL stores. The
tables mirror `SqliteStore`'s (stores/_trace_records.py describes the records), in schema
``host_sim``, each with a ``seq`` identity column that keeps writing order; the statements
below are their only drawing (``trace_index`` is derived).

Records never change and are never deleted (triggers refuse), except to be erased (an
action's payload, an output's kind: `PostgresStore.erase`, rules in _postgres.py); only the derived
``trace_index`` is rewritten, by `rebuild_trace_index`. A database made before traces gets
the tables when a host opens it (``IF NOT EXISTS``), and then has no trace index version,
so the host derives the index.
"""

from __future__ import annotations

from typing import Final

__all__ = ["TRACE_TABLES_SCHEMA"]

_KEPT: Final = (
    ("traces", "trace record (its origin is fixed at creation)"),
    ("trace_tasks", "task of a trace"),
    ("trace_links", "trace link of a session"),
    ("trace_outputs", "trace output"),
    ("trace_commits", "recorded commit"),
    ("actions", "proposed action"),
    ("action_outcomes", "decision about an action"),
    ("spool_applied", "applied event id"),
)

TRACE_TABLES_SCHEMA: Final = """
CREATE TABLE IF NOT EXISTS host_sim.traces (
    seq bigint GENERATED ALWAYS AS IDENTITY, id text PRIMARY KEY,
    origin text NOT NULL CHECK (origin IN ('task', 'chat')), created_at text NOT NULL
);
CREATE TABLE IF NOT EXISTS host_sim.trace_tasks (
    seq bigint GENERATED ALWAYS AS IDENTITY, trace_id text PRIMARY KEY, ref text NOT NULL UNIQUE,
    snapshot text NOT NULL, captured_at text NOT NULL
);
CREATE TABLE IF NOT EXISTS host_sim.trace_links (
    seq bigint GENERATED ALWAYS AS IDENTITY, session_id text PRIMARY KEY, trace_id text NOT NULL,
    created_at text NOT NULL
);
CREATE INDEX IF NOT EXISTS trace_links_by_trace ON host_sim.trace_links (trace_id, seq);
CREATE TABLE IF NOT EXISTS host_sim.trace_outputs (
    seq bigint GENERATED ALWAYS AS IDENTITY, output_id text PRIMARY KEY, trace_id text NOT NULL,
    session_id text NOT NULL, kind text NOT NULL, created_at text NOT NULL
);
CREATE INDEX IF NOT EXISTS trace_outputs_by_trace ON host_sim.trace_outputs (trace_id, seq);
CREATE TABLE IF NOT EXISTS host_sim.trace_commits (
    seq bigint GENERATED ALWAYS AS IDENTITY, output_id text PRIMARY KEY, commit_hash text NOT NULL,
    recorded_at text NOT NULL
);
CREATE TABLE IF NOT EXISTS host_sim.trace_index (
    seq bigint GENERATED ALWAYS AS IDENTITY, kind text NOT NULL, key text NOT NULL, trace_id text NOT NULL,
    PRIMARY KEY (key, kind, trace_id)
);
CREATE TABLE IF NOT EXISTS host_sim.actions (
    seq bigint GENERATED ALWAYS AS IDENTITY, id text PRIMARY KEY, type text NOT NULL, payload text NOT NULL,
    mod_id text NOT NULL, session_id text NOT NULL, turn_id text NOT NULL, created_at text NOT NULL,
    erased_at text
);
CREATE INDEX IF NOT EXISTS actions_by_session ON host_sim.actions (session_id, seq);
CREATE TABLE IF NOT EXISTS host_sim.action_outcomes (
    seq bigint GENERATED ALWAYS AS IDENTITY, action_id text PRIMARY KEY, state text NOT NULL,
    decided_at text NOT NULL
);
CREATE TABLE IF NOT EXISTS host_sim.spool_applied (
    seq bigint GENERATED ALWAYS AS IDENTITY, event_id text PRIMARY KEY, applied_at text NOT NULL
);
""" + "".join(
    f"CREATE OR REPLACE TRIGGER {table}_never_change BEFORE UPDATE ON host_sim.{table} "
    f"FOR EACH ROW EXECUTE FUNCTION host_sim.refuse('a {what} never changes');\n"
    f"CREATE OR REPLACE TRIGGER {table}_are_kept BEFORE DELETE ON host_sim.{table} "
    f"FOR EACH ROW EXECUTE FUNCTION host_sim.refuse('a {what} is never deleted');\n"
    f"CREATE OR REPLACE TRIGGER {table}_are_never_truncated BEFORE TRUNCATE ON host_sim.{table} "
    f"FOR EACH STATEMENT EXECUTE FUNCTION host_sim.refuse('{what} records are never deleted');\n"
    for table, what in _KEPT
)
"""The trace tables (run when a host opens the store: ``IF NOT EXISTS``, ``OR REPLACE``)."""

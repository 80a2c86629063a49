"""The schema of a `SqliteStore` file: the statements that make it, and those that bring an
older file to it (SQL only; `SqliteStore` decides which to run when it opens a file).

A new store is made as version 2 was, then brought to version 3 by the same statements an
upgrade runs: one definition of each version, no drift between new and upgraded files. The
tables' columns are the records' fields (`_rows`); a column added here is declared there.
"""

from __future__ import annotations

import sqlite3
from typing import Final

from ._invariants import ERASED_LABEL

__all__ = [
    "APPLICATION",
    "DECISIONS_17",
    "ERASURE_19",
    "ERASURE_RULES",
    "JOBS_4",
    "LOG_3",
    "OUTPUT_COLUMNS_19",
    "RECORD_17",
    "RETRACTION_17",
    "RETRACTION_COLUMNS_17",
    "SCHEMA",
    "SCHEMA_VERSION",
    "TRACES",
    "UPGRADE_FROM_1",
    "UPGRADE_FROM_2",
    "USAGE_COLUMN_15",
    "WIDGETS_COLUMN_17",
    "script",
]

SCHEMA_VERSION: Final = 3
"""The schema this host-sim writes and reads; a store with a newer one is refused, an older one upgraded."""

APPLICATION: Final = "host-sim"


# The turns table as version 2 made it (the upgrade from version 1 builds this one).
_TURNS_TABLE_V2: Final = """
CREATE TABLE turns (
    id TEXT PRIMARY KEY,
    session_id TEXT NOT NULL,
    ordinal INTEGER NOT NULL,
    message TEXT NOT NULL,
    message_id TEXT NOT NULL,
    author TEXT NOT NULL,
    runner_id TEXT NOT NULL,
    status TEXT NOT NULL,
    reply TEXT,
    error TEXT,
    started_at TEXT NOT NULL,
    finished_at TEXT
);
CREATE UNIQUE INDEX turns_by_session ON turns (session_id, ordinal);
CREATE TRIGGER finished_turns_never_change BEFORE UPDATE ON turns WHEN OLD.status != 'running'
BEGIN SELECT RAISE(ABORT, 'a finished turn never changes'); END;
"""

# Version 3: a finished turn changes once more, only to be forgotten (its text goes, its
# structure stays); every read a host makes is served by an index (no scans).
_VERSION_3: Final = """
DROP TRIGGER finished_turns_never_change;
CREATE TRIGGER finished_turns_never_change BEFORE UPDATE ON turns
WHEN OLD.status != 'running' AND NOT (
    OLD.erased_at IS NULL AND NEW.erased_at IS NOT NULL
    AND NEW.id = OLD.id AND NEW.session_id = OLD.session_id AND NEW.ordinal = OLD.ordinal
    AND NEW.message_id = OLD.message_id AND NEW.author = OLD.author AND NEW.runner_id = OLD.runner_id
    AND NEW.status = OLD.status AND NEW.started_at = OLD.started_at
    AND NEW.finished_at IS OLD.finished_at AND NEW.error IS OLD.error
)
BEGIN SELECT RAISE(ABORT, 'a finished turn never changes (except once, to be forgotten)'); END;
CREATE INDEX turns_by_message ON turns (message_id);
CREATE INDEX turns_running ON turns (status) WHERE status = 'running';
CREATE INDEX sessions_by_parent ON sessions (json_extract(lineage, '$.parent_session_id'));
CREATE INDEX sessions_by_trigger_turn ON sessions (trigger_turn_id) WHERE trigger_turn_id IS NOT NULL;
CREATE INDEX edges_in ON edges (to_session_id);
CREATE INDEX edges_by_artifact ON edges (json_extract(artifact, '$.type'), json_extract(artifact, '$.source_id'))
    WHERE artifact IS NOT NULL;
"""

_RECORD_TRIGGERS: Final = """
CREATE TRIGGER sessions_never_change BEFORE UPDATE ON sessions
BEGIN SELECT RAISE(ABORT, 'a session record never changes'); END;
CREATE TRIGGER sessions_are_kept BEFORE DELETE ON sessions
BEGIN SELECT RAISE(ABORT, 'a session record is never deleted'); END;
"""

_COLUMNS_3: Final = "ALTER TABLE sessions ADD COLUMN trigger_turn_id TEXT;\nALTER TABLE turns ADD COLUMN erased_at TEXT;\n"

# Version 3, the integrator's log (API.md section 12): tags fixed at creation (and their
# index, derived: position is the session's rowid, so a page is a range of one index),
# deletions, command invocations, jobs, notification read state.
LOG_3: Final = """
ALTER TABLE sessions ADD COLUMN tags TEXT;
CREATE TABLE IF NOT EXISTS session_tags (
    session_id TEXT NOT NULL,
    key TEXT NOT NULL,
    value TEXT NOT NULL,
    position INTEGER NOT NULL,
    PRIMARY KEY (key, value, position)
);
CREATE INDEX IF NOT EXISTS sessions_by_kind ON sessions (json_extract(lineage, '$.kind'));
CREATE TABLE IF NOT EXISTS deletions (session_id TEXT PRIMARY KEY, deleted_at TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS invocations (
    id TEXT PRIMARY KEY,
    session_id TEXT,
    mod_id TEXT NOT NULL,
    command_id TEXT NOT NULL,
    argument TEXT,
    author TEXT NOT NULL,
    started_at TEXT NOT NULL,
    finished_at TEXT,
    text TEXT,
    error TEXT,
    error_kind TEXT,
    position INTEGER NOT NULL,
    erased_at TEXT
);
CREATE INDEX IF NOT EXISTS invocations_by_session ON invocations (session_id) WHERE session_id IS NOT NULL;
CREATE TABLE IF NOT EXISTS jobs (
    id TEXT PRIMARY KEY,
    session_id TEXT NOT NULL,
    text TEXT NOT NULL,
    status TEXT NOT NULL,
    created_at TEXT NOT NULL,
    finished_at TEXT,
    kind TEXT,
    result TEXT,
    error TEXT,
    error_kind TEXT,
    turn_id TEXT
);
CREATE INDEX IF NOT EXISTS jobs_running ON jobs (status) WHERE status = 'running';
CREATE TABLE IF NOT EXISTS reads (turn_id TEXT PRIMARY KEY, read_at TEXT NOT NULL);
CREATE INDEX IF NOT EXISTS turns_notifications ON turns (session_id, ordinal) WHERE json_extract(message, '$.type') = 'notification';
"""

# Jobs from any host (API.md section 13): a job is found by id, paged newest first by
# session, status or its session's tags (job_tags: position is the job's rowid, copied from
# session_tags when the job starts), and cancelled through a request its host polls for.
# Run by a writer opening a store made before them (IF NOT EXISTS; job_tags filled in).
JOBS_4: Final = """
ALTER TABLE jobs ADD COLUMN cancel_requested_at TEXT;
CREATE TABLE IF NOT EXISTS job_tags (
    key TEXT NOT NULL, value TEXT NOT NULL, position INTEGER NOT NULL, job_id TEXT NOT NULL,
    PRIMARY KEY (key, value, position)
);
CREATE INDEX IF NOT EXISTS jobs_by_session ON jobs (session_id);
CREATE INDEX IF NOT EXISTS jobs_by_status ON jobs (status);
CREATE INDEX IF NOT EXISTS session_tags_by_session ON session_tags (session_id);
INSERT OR IGNORE INTO job_tags (key, value, position, job_id)
    SELECT t.key, t.value, j.rowid, j.id FROM jobs j JOIN session_tags t ON t.session_id = j.session_id;
"""

# Traces (API.md section 9, stores/_traces.py): append-only records that triggers keep
# unchanged, the derived trace index, proposed actions and their one outcome, and applied
# spool event ids. IF NOT EXISTS: a writer also runs this when it opens a version-3 store
# made before traces (readers do without the tables).
TRACES: Final = """
CREATE TABLE IF NOT EXISTS traces (
    id TEXT PRIMARY KEY, origin TEXT NOT NULL CHECK (origin IN ('task', 'chat')), created_at TEXT NOT NULL
);
CREATE TABLE IF NOT EXISTS trace_tasks (
    trace_id TEXT PRIMARY KEY, ref TEXT NOT NULL UNIQUE, snapshot TEXT NOT NULL, captured_at TEXT NOT NULL
);
CREATE TABLE IF NOT EXISTS trace_links (session_id TEXT PRIMARY KEY, trace_id TEXT NOT NULL, created_at TEXT NOT NULL);
CREATE INDEX IF NOT EXISTS trace_links_by_trace ON trace_links (trace_id);
CREATE TABLE IF NOT EXISTS trace_outputs (
    output_id TEXT PRIMARY KEY, trace_id TEXT NOT NULL, session_id TEXT NOT NULL, kind TEXT NOT NULL,
    created_at TEXT NOT NULL
);
CREATE INDEX IF NOT EXISTS trace_outputs_by_trace ON trace_outputs (trace_id);
CREATE TABLE IF NOT EXISTS trace_commits (output_id TEXT PRIMARY KEY, commit_hash TEXT NOT NULL, recorded_at TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS trace_index (
    kind TEXT NOT NULL, key TEXT NOT NULL, trace_id TEXT NOT NULL, PRIMARY KEY (key, kind, trace_id)
);
CREATE TABLE IF NOT EXISTS actions (
    id TEXT PRIMARY KEY, type TEXT NOT NULL, payload TEXT NOT NULL, mod_id TEXT NOT NULL,
    session_id TEXT NOT NULL, turn_id TEXT NOT NULL, created_at TEXT NOT NULL, erased_at TEXT
);
CREATE INDEX IF NOT EXISTS actions_by_session ON actions (session_id);
CREATE TABLE IF NOT EXISTS action_outcomes (action_id TEXT PRIMARY KEY, state TEXT NOT NULL, decided_at TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS spool_applied (event_id TEXT PRIMARY KEY, applied_at TEXT NOT NULL);
""" + "".join(
    f"CREATE TRIGGER IF NOT EXISTS {table}_never_change BEFORE UPDATE ON {table} "
    f"BEGIN SELECT RAISE(ABORT, 'a {what} never changes'); END;\n"
    f"CREATE TRIGGER IF NOT EXISTS {table}_are_kept BEFORE DELETE ON {table} "
    f"BEGIN SELECT RAISE(ABORT, 'a {what} is never deleted'); END;\n"
    for table, what in (
        ("traces", "trace record (its origin is fixed at creation)"),
        ("trace_tasks", "task of a trace"),
        ("trace_links", "trace link of a session"),
        ("trace_outputs", "trace output"),
        ("trace_commits", "recorded commit"),
        ("actions", "proposed action"),
        ("action_outcomes", "decision about an action"),
        ("spool_applied", "applied event id"),
    )
)

# Erasure (stores/_erasure.py): a record changes once more only to lose its text. A writer
# makes these rules at open when its store has older ones (made before erasure reached
# turn errors, actions and outputs), so every store a host writes has them.
ERASURE_RULES: Final = f"""
DROP TRIGGER IF EXISTS finished_turns_never_change;
CREATE TRIGGER finished_turns_never_change BEFORE UPDATE ON turns
WHEN OLD.status != 'running' AND NOT (
    OLD.erased_at IS NULL AND NEW.erased_at IS NOT NULL
    AND NEW.id = OLD.id AND NEW.session_id = OLD.session_id AND NEW.ordinal = OLD.ordinal
    AND NEW.message_id = OLD.message_id AND NEW.author = OLD.author AND NEW.runner_id = OLD.runner_id
    AND NEW.status = OLD.status AND NEW.started_at = OLD.started_at
    AND NEW.finished_at IS OLD.finished_at AND (NEW.error IS NULL) = (OLD.error IS NULL)
)
BEGIN SELECT RAISE(ABORT, 'a finished turn never changes (except once, to be forgotten)'); END;
DROP TRIGGER IF EXISTS actions_never_change;
CREATE TRIGGER actions_never_change BEFORE UPDATE ON actions
WHEN NOT (
    OLD.erased_at IS NULL AND NEW.erased_at IS NOT NULL AND NEW.id = OLD.id AND NEW.type = OLD.type
    AND NEW.mod_id = OLD.mod_id AND NEW.session_id = OLD.session_id AND NEW.turn_id = OLD.turn_id
    AND NEW.created_at = OLD.created_at
)
BEGIN SELECT RAISE(ABORT, 'a proposed action never changes (except once, to be erased)'); END;
DROP TRIGGER IF EXISTS trace_outputs_never_change;
CREATE TRIGGER trace_outputs_never_change BEFORE UPDATE ON trace_outputs
WHEN NOT (
    NEW.kind = '{ERASED_LABEL}' AND NEW.output_id = OLD.output_id AND NEW.trace_id = OLD.trace_id
    AND NEW.session_id = OLD.session_id AND NEW.created_at = OLD.created_at
)
BEGIN SELECT RAISE(ABORT, 'a trace output never changes (except to be erased)'); END;
CREATE INDEX IF NOT EXISTS jobs_by_turn ON jobs (turn_id) WHERE turn_id IS NOT NULL;
CREATE INDEX IF NOT EXISTS jobs_by_session ON jobs (session_id);
CREATE INDEX IF NOT EXISTS actions_by_turn ON actions (turn_id);
"""

# The record, complete (API.md section 17): a turn's tool calls, written with its finished
# record (JSON, NULL in rows written before). Run by a writer opening a store without it.
RECORD_17: Final = "ALTER TABLE turns ADD COLUMN tool_calls TEXT;\n"

# Retraction (API.md section 17): a finished turn changes once to be forgotten (as before; its
# retraction stays as it is, its reason is erased) or once to be retracted (nothing else
# changes). A turn's token usage (API.md section 15, JSON, NULL when no model call reported
# any) is written with its finished record and never changes afterwards, not even when the
# turn is forgotten (counts are not text). Run by a writer whose turns rule does not name
# usage (after any older rule).
RETRACTION_COLUMNS_17: Final = "ALTER TABLE turns ADD COLUMN retracted_at TEXT;\nALTER TABLE turns ADD COLUMN retraction_reason TEXT;\n"
USAGE_COLUMN_15: Final = "ALTER TABLE turns ADD COLUMN usage TEXT;\n"
# The widgets a reply placed (API.md section 17; JSON, NULL in rows written before): written
# with the finished record, erased (their data) with the turn, unchanged by a retraction.
WIDGETS_COLUMN_17: Final = "ALTER TABLE turns ADD COLUMN widgets TEXT;\n"
RETRACTION_17: Final = """
DROP TRIGGER IF EXISTS finished_turns_never_change;
CREATE TRIGGER finished_turns_never_change BEFORE UPDATE ON turns
WHEN OLD.status != 'running' AND NOT (
    NEW.id = OLD.id AND NEW.session_id = OLD.session_id AND NEW.ordinal = OLD.ordinal
    AND NEW.message_id = OLD.message_id AND NEW.author = OLD.author AND NEW.runner_id = OLD.runner_id
    AND NEW.status = OLD.status AND NEW.started_at = OLD.started_at AND NEW.finished_at IS OLD.finished_at
    AND NEW.usage IS OLD.usage
    AND ((
        OLD.erased_at IS NULL AND NEW.erased_at IS NOT NULL AND (NEW.error IS NULL) = (OLD.error IS NULL)
        AND NEW.retracted_at IS OLD.retracted_at AND (NEW.retraction_reason IS NULL) = (OLD.retraction_reason IS NULL)
    ) OR (
        OLD.retracted_at IS NULL AND NEW.retracted_at IS NOT NULL AND NEW.retraction_reason IS NOT NULL
        AND NEW.message = OLD.message AND NEW.reply IS OLD.reply AND NEW.error IS OLD.error
        AND NEW.erased_at IS OLD.erased_at AND NEW.tool_calls IS OLD.tool_calls AND NEW.widgets IS OLD.widgets
    ))
)
BEGIN SELECT RAISE(ABORT, 'a finished turn never changes (except once to be forgotten, once to be retracted)'); END;
"""

# Decisions are records (API.md section 17): who decided about an action and why, with the
# action's session and turn (so the erasure walk finds the reason, text, with them). A
# decision changes once more only to lose its reason. Run by a writer whose store lacks it.
DECISIONS_17: Final = f"""
ALTER TABLE action_outcomes ADD COLUMN decided_by TEXT;
ALTER TABLE action_outcomes ADD COLUMN reason TEXT;
ALTER TABLE action_outcomes ADD COLUMN session_id TEXT;
ALTER TABLE action_outcomes ADD COLUMN turn_id TEXT;
CREATE INDEX IF NOT EXISTS action_outcomes_by_session ON action_outcomes (session_id) WHERE session_id IS NOT NULL;
CREATE INDEX IF NOT EXISTS action_outcomes_by_turn ON action_outcomes (turn_id) WHERE turn_id IS NOT NULL;
DROP TRIGGER IF EXISTS action_outcomes_never_change;
CREATE TRIGGER action_outcomes_never_change BEFORE UPDATE ON action_outcomes
WHEN NOT (
    NEW.action_id = OLD.action_id AND NEW.state = OLD.state AND NEW.decided_at = OLD.decided_at
    AND NEW.decided_by IS OLD.decided_by AND NEW.session_id IS OLD.session_id AND NEW.turn_id IS OLD.turn_id
    AND (NEW.reason IS OLD.reason OR NEW.reason = '{ERASED_LABEL}')
)
BEGIN SELECT RAISE(ABORT, 'a decision about an action never changes (except to lose its reason, erased)'); END;
"""

# Erasure is total (API.md section 19): a trace output keeps the turn whose tool reported it
# and the session position where the command that reported it was typed, so that forgetting
# that turn erases it; it changes once more only to lose its kind. A finished turn may also
# lose only its error, which quoted erased text (a later failed turn whose model saw a
# forgotten one). Run by a writer whose trace outputs rule does not name turn_id or whose
# turns rule does not allow that (after `ERASURE_RULES` and `RETRACTION_17`); a reader
# reads the columns as absent (NULL: reached by its session only).
OUTPUT_COLUMNS_19: Final = "ALTER TABLE trace_outputs ADD COLUMN turn_id TEXT;\nALTER TABLE trace_outputs ADD COLUMN position INTEGER;\n"
ERASURE_19: Final = f"""
DROP TRIGGER IF EXISTS finished_turns_never_change;
CREATE TRIGGER finished_turns_never_change BEFORE UPDATE ON turns
WHEN OLD.status != 'running' AND NOT (
    NEW.id = OLD.id AND NEW.session_id = OLD.session_id AND NEW.ordinal = OLD.ordinal
    AND NEW.message_id = OLD.message_id AND NEW.author = OLD.author AND NEW.runner_id = OLD.runner_id
    AND NEW.status = OLD.status AND NEW.started_at = OLD.started_at AND NEW.finished_at IS OLD.finished_at
    AND NEW.usage IS OLD.usage
    AND ((
        OLD.erased_at IS NULL AND NEW.erased_at IS NOT NULL AND (NEW.error IS NULL) = (OLD.error IS NULL)
        AND NEW.retracted_at IS OLD.retracted_at AND (NEW.retraction_reason IS NULL) = (OLD.retraction_reason IS NULL)
    ) OR (
        OLD.retracted_at IS NULL AND NEW.retracted_at IS NOT NULL AND NEW.retraction_reason IS NOT NULL
        AND NEW.message = OLD.message AND NEW.reply IS OLD.reply AND NEW.error IS OLD.error
        AND NEW.erased_at IS OLD.erased_at AND NEW.tool_calls IS OLD.tool_calls AND NEW.widgets IS OLD.widgets
    ) OR (
        OLD.error IS NOT NULL AND NEW.error = '{ERASED_LABEL}' AND NEW.message = OLD.message
        AND NEW.reply IS OLD.reply AND NEW.erased_at IS OLD.erased_at AND NEW.tool_calls IS OLD.tool_calls
        AND NEW.widgets IS OLD.widgets
        AND NEW.retracted_at IS OLD.retracted_at AND NEW.retraction_reason IS OLD.retraction_reason
    ))
)
BEGIN SELECT RAISE(ABORT, 'a finished turn never changes (except once to be forgotten, once to be retracted, to lose a quoted error)'); END;
CREATE INDEX IF NOT EXISTS trace_outputs_by_turn ON trace_outputs (turn_id) WHERE turn_id IS NOT NULL;
CREATE INDEX IF NOT EXISTS trace_outputs_by_position ON trace_outputs (session_id, position) WHERE position IS NOT NULL;
DROP TRIGGER IF EXISTS trace_outputs_never_change;
CREATE TRIGGER trace_outputs_never_change BEFORE UPDATE ON trace_outputs
WHEN NOT (
    NEW.kind = '{ERASED_LABEL}' AND NEW.output_id = OLD.output_id AND NEW.trace_id = OLD.trace_id
    AND NEW.session_id = OLD.session_id AND NEW.created_at = OLD.created_at
    AND NEW.turn_id IS OLD.turn_id AND NEW.position IS OLD.position
)
BEGIN SELECT RAISE(ABORT, 'a trace output never changes (except to be erased)'); END;
"""

# A new store is made as version 2 was, then brought to version 3 by the same statements
# an upgrade runs: one definition of each version, no drift between new and upgraded files.
SCHEMA: Final = (
    """
CREATE TABLE meta (
    key TEXT PRIMARY KEY,
    value TEXT NOT NULL
);
CREATE TABLE sessions (
    id TEXT PRIMARY KEY,
    lineage TEXT NOT NULL,
    metadata TEXT,
    model TEXT NOT NULL,
    cwd TEXT NOT NULL,
    runner_id TEXT NOT NULL,
    created_at TEXT NOT NULL,
    agent_id TEXT
);
CREATE TABLE nodes (
    session_id TEXT PRIMARY KEY,
    created_at TEXT NOT NULL,
    summary TEXT,
    agent_id TEXT,
    completed_at TEXT,
    metrics TEXT
);
CREATE TABLE edges (
    from_session_id TEXT NOT NULL,
    to_session_id TEXT NOT NULL,
    relation TEXT NOT NULL,
    created_at TEXT NOT NULL,
    artifact TEXT,
    PRIMARY KEY (from_session_id, to_session_id)
);
"""
    + _TURNS_TABLE_V2
    + _RECORD_TRIGGERS
    + _COLUMNS_3
    + _VERSION_3
    + LOG_3
    + TRACES
)

# Version 1 had no constraints on records and a turns table without running turns.
UPGRADE_FROM_1: Final = (
    "ALTER TABLE turns RENAME TO turns_v1;\n"
    "DROP INDEX IF EXISTS turns_by_session;\n"
    + _TURNS_TABLE_V2
    + "INSERT INTO turns SELECT * FROM turns_v1 ORDER BY rowid;\n"
    "DROP TABLE turns_v1;\n"
    + _RECORD_TRIGGERS
    + "UPDATE meta SET value = '2' WHERE key = 'schema_version';\n"
)

# Version 2 read everything at open; version 3 reads by key. The index was built by an
# older host: leaving index_version unset makes the next host rebuild it once.
UPGRADE_FROM_2: Final = _COLUMNS_3 + _VERSION_3 + LOG_3 + TRACES + "UPDATE meta SET value = '3' WHERE key = 'schema_version';\n"


def script(sql: str) -> list[str]:
    """Statements of a script (triggers keep their inner ';')."""
    out: list[str] = []
    current = ""
    for piece in sql.split(";"):
        current += piece
        if sqlite3.complete_statement(current + ";"):
            if current.strip():
                out.append(current.strip())
            current = ""
        else:
            current += ";"
    return out

"""The schema of a `SqliteStore` file: the statements that make it, those that bring an
older file to it, and `prepare`, which runs them when a store opens a file.

A new store is made as version 2 was, then brought to version 3 by the same statements an
upgrade runs: one definition of each version, no drift between new and upgraded files. The
tables' columns are the records' fields (`_rows`); a column added here is declared there.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Callable
from typing import Final

import attrs

from . import _rows
from ._approvals import SQLITE_APPROVALS
from ._errors import StoreError
from ._protocol import INDEX_VERSION
from ._records import ERASED_LABEL
from ._sql_memory import MEMORY_SQLITE

__all__ = [
    "Found",
    "prepare",
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

# Version 3, the integrator's log (docs/embedding.md): tags fixed at creation (and their
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

# Jobs from any host (docs/embedding.md): a job is found by id, paged newest first by
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

# Traces (docs/traces.md, stores/_traces.py): append-only records that triggers keep
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

# The record, complete (docs/the-record.md): a turn's tool calls, written with its finished
# record (JSON, NULL in rows written before). Run by a writer opening a store without it.
RECORD_17: Final = "ALTER TABLE turns ADD COLUMN tool_calls TEXT;\n"

# Retraction (docs/the-record.md): a finished turn changes once to be forgotten (as before; its
# retraction stays as it is, its reason is erased) or once to be retracted (nothing else
# changes). A turn's token usage (docs/observability.md, JSON, NULL when no model call reported
# any) is written with its finished record and never changes afterwards, not even when the
# turn is forgotten (counts are not text). Run by a writer whose turns rule does not name
# usage (after any older rule).
RETRACTION_COLUMNS_17: Final = "ALTER TABLE turns ADD COLUMN retracted_at TEXT;\nALTER TABLE turns ADD COLUMN retraction_reason TEXT;\n"
USAGE_COLUMN_15: Final = "ALTER TABLE turns ADD COLUMN usage TEXT;\n"
# The widgets a reply placed (docs/the-record.md; JSON, NULL in rows written before): written
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

# Decisions are records (docs/the-record.md): who decided about an action and why, with the
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

# Erasure is total (docs/embedding.md): a trace output keeps the turn whose tool reported it
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


@attrs.frozen(kw_only=True)
class Found:
    """What `prepare` found in a store's file. Immutable.

    ``missing``: the ``"table.column"``s its schema lacks (a reader reads them as NULL);
    ``tables``: every table it has; ``absent_tables``: the optional tables it lacks;
    ``has_traces``: whether the trace tables exist.
    """

    missing: frozenset[str]
    tables: frozenset[str]
    absent_tables: frozenset[str]
    has_traces: bool


def prepare(
    conn: sqlite3.Connection,
    *,
    create: bool,
    read_only: bool,
    fail: Callable[[str, str], StoreError],
    write_error: Callable[[sqlite3.Error], StoreError],
) -> Found:
    """Check that ``conn``'s file is a host-sim store this host reads, make it (``create``, an
    empty file), or bring a writer's older one to the current schema; raises `StoreError`
    (``fail``, ``write_error``: how the store's errors read)."""
    return _Opening(create=create, read_only=read_only, fail=fail, write_error=write_error).prepare(conn)


class _Opening:
    """One `prepare`: what it was asked, and whether it found the trace tables."""

    def __init__(
        self,
        *,
        create: bool,
        read_only: bool,
        fail: Callable[[str, str], StoreError],
        write_error: Callable[[sqlite3.Error], StoreError],
    ) -> None:
        self._create = create
        self._read_only = read_only
        self._fail = fail
        self._write_error = write_error
        self._has_traces = False

    def prepare(self, conn: sqlite3.Connection) -> Found:
        try:
            tables = {name for (name,) in conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
        except sqlite3.OperationalError as exc:  # not the file's content: this process's access to it
            raise self._fail(
                f"cannot be read ({exc})",
                "check that this process may read the file"
                + ("" if self._read_only else ", and write it and its folder (SQLite adds -wal and -shm files there)"),
            ) from exc
        except sqlite3.DatabaseError as exc:
            raise self._fail(
                f"is not a SQLite database ({exc})",
                "pass the path of a host-sim store" + (", or a new path to create one" if self._create else ""),
            ) from exc
        if not tables:
            if not self._create:
                raise self._fail("is an empty SQLite database, not a host-sim store", "pass the path of a store a host wrote")
            self._execute_script(conn, "PRAGMA journal_mode = WAL")
            self._execute_script(
                conn,
                "BEGIN;\n"
                + SCHEMA
                + f"INSERT INTO meta (key, value) VALUES ('application', '{APPLICATION}');\n"
                + f"INSERT INTO meta (key, value) VALUES ('schema_version', '{SCHEMA_VERSION}');\n"
                + f"INSERT INTO meta (key, value) VALUES ('index_version', '{INDEX_VERSION}');\n"
                + "COMMIT;",
            )
        else:
            version = self._check_meta(conn, tables)
            if not self._read_only:
                self._execute_script(conn, "PRAGMA journal_mode = WAL")
                if version == 1:
                    self._upgrade_from_1(conn)
                    version = 2
                if version == 2:
                    self._execute_script(conn, "BEGIN IMMEDIATE;\n" + UPGRADE_FROM_2 + "COMMIT;")
        self._prepare_traces(conn)
        if not self._read_only:  # memory records (docs/memory.md); a reader of an older store finds none
            self._execute_script(conn, "BEGIN IMMEDIATE;\n" + MEMORY_SQLITE + "COMMIT;")
        self._prepare_log(conn)
        self._prepare_jobs(conn)
        self._prepare_record(conn)
        self._prepare_approvals(conn)
        missing = frozenset(
            f"{table.name}.{column}"
            for table in (*_rows.LINEAGE_TABLES, *_rows.LOG_TABLES, _rows.ACTIONS, _rows.ACTION_OUTCOMES, _rows.TRACE_OUTPUTS)
            for present in [{row[1] for row in conn.execute(f"PRAGMA table_info({table.name})")}]
            for column in table.columns
            if column not in present
        )
        present = frozenset(name for (name,) in conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'"))
        if not self._read_only:
            conn.execute("PRAGMA synchronous = FULL")
            conn.execute("PRAGMA secure_delete = ON")  # what forget erases is zeroed, not freed
        return Found(
            missing=missing,
            tables=present,
            absent_tables=frozenset({"reads", "deletions", "session_tags", "job_tags"} - present),
            has_traces=self._has_traces,
        )

    def _upgrade_from_1(self, conn: sqlite3.Connection) -> None:
        try:
            self._execute_script(conn, "BEGIN IMMEDIATE;\n" + UPGRADE_FROM_1 + "COMMIT;")
        except StoreError as exc:
            cause = exc.__cause__
            if not isinstance(cause, sqlite3.IntegrityError):
                raise
            # Version 1 enforced nothing: two hosts on one file left duplicate ordinals.
            raise self._fail(
                f"cannot be upgraded from schema version 1: its records break a rule of version "
                f"{SCHEMA_VERSION} ({cause}); it is left as it was",
                "see every problem with 'host-sim fsck --store PATH', which reads it without upgrading",
            ) from cause

    def _execute_script(self, conn: sqlite3.Connection, sql: str) -> None:
        try:
            for statement in script(sql):
                conn.execute(statement)
        except sqlite3.Error as exc:
            if conn.in_transaction:
                conn.execute("ROLLBACK")
            raise self._write_error(exc) from exc

    def _check_meta(self, conn: sqlite3.Connection, tables: set[str]) -> int:
        meta: dict[str, str] = {}
        if "meta" in tables:
            try:
                meta = {str(k): str(v) for k, v in conn.execute("SELECT key, value FROM meta")}
            except sqlite3.DatabaseError:
                meta = {}
        if meta.get("application") != APPLICATION:
            raise self._fail(
                f"is a SQLite database of another application (tables: {', '.join(sorted(tables))}), "
                "not a host-sim store",
                "pass the path of a host-sim store" + (", or a new path to create one" if self._create else ""),
            )
        raw = meta.get("schema_version", "")
        try:
            version = int(raw)
        except ValueError:
            raise self._fail(f"has an unreadable schema version {raw!r}", "the file is damaged; use another path") from None
        if version > SCHEMA_VERSION:
            raise self._fail(
                f"was written by a newer host-sim (schema version {version}; this one reads up to {SCHEMA_VERSION})",
                "upgrade host-sim to open it",
            )
        if version < 1:
            raise self._fail(f"has an unknown schema version {version}", "the file is damaged; use another path")
        missing = {t.name for t in _rows.LINEAGE_TABLES} - tables
        if missing:
            raise self._fail(f"lacks the tables {', '.join(sorted(missing))}", "the file is damaged; use another path")
        return version

    def _prepare_log(self, conn: sqlite3.Connection) -> None:
        """Give a writer's version-3 store made before the integrator's log its tables (and
        the tags column); a reader reads such a store as it is (no tags, an empty log)."""
        if self._read_only:
            return
        present = {name for (name,) in conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
        if "jobs" in present:
            return
        columns = {row[1] for row in conn.execute("PRAGMA table_info(sessions)")}
        script = LOG_3 if "tags" not in columns else LOG_3.replace("ALTER TABLE sessions ADD COLUMN tags TEXT;\n", "")
        self._execute_script(conn, "BEGIN IMMEDIATE;\n" + script + "DELETE FROM meta WHERE key = 'index_version';\nCOMMIT;")

    def _prepare_jobs(self, conn: sqlite3.Connection) -> None:
        """Give a writer's store made before jobs could be found and cancelled their indexes
        and cancel column (`JOBS_4`); a reader reads such a store as it is."""
        if self._read_only:
            return
        present = {name for (name,) in conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
        if "job_tags" not in present:
            self._execute_script(conn, "BEGIN IMMEDIATE;\n" + JOBS_4 + "COMMIT;")

    def _prepare_record(self, conn: sqlite3.Connection) -> None:
        """Give a writer's store made before tool calls, retraction, decisions, usage and widgets
        were part of the record (docs/the-record.md, docs/observability.md) their columns and rules (`RECORD_17`,
        `RETRACTION_17`, `USAGE_COLUMN_15`, `WIDGETS_COLUMN_17`, `DECISIONS_17`), and trace
        outputs where they were reported and turns that lose a quoted error (`ERASURE_19`); a
        reader reads them as absent (no calls, not retracted, no usage, no widgets, no one who
        decided, no reason, no turn or position)."""
        if self._read_only:
            return
        columns = {row[1] for row in conn.execute("PRAGMA table_info(turns)")}
        if "tool_calls" not in columns:
            self._execute_script(conn, "BEGIN IMMEDIATE;\n" + RECORD_17 + "COMMIT;")
        rule = conn.execute("SELECT sql FROM sqlite_master WHERE type = 'trigger' AND name = 'finished_turns_never_change'").fetchone()
        if rule is None or "NEW.widgets" not in str(rule[0]):
            added = "" if "retracted_at" in columns else RETRACTION_COLUMNS_17
            added += "" if "usage" in columns else USAGE_COLUMN_15
            added += "" if "widgets" in columns else WIDGETS_COLUMN_17
            self._execute_script(conn, "BEGIN IMMEDIATE;\n" + added + RETRACTION_17 + "COMMIT;")
        columns = {row[1] for row in conn.execute("PRAGMA table_info(action_outcomes)")}
        if "reason" not in columns:
            self._execute_script(conn, "BEGIN IMMEDIATE;\n" + DECISIONS_17 + "COMMIT;")
        rules = dict(
            conn.execute(
                "SELECT name, sql FROM sqlite_master WHERE type = 'trigger' "
                "AND name IN ('trace_outputs_never_change', 'finished_turns_never_change')"
            ).fetchall()
        )
        turns_rule = str(rules.get("finished_turns_never_change"))
        if "turn_id" not in str(rules.get("trace_outputs_never_change")) or "quoted error" not in turns_rule or (
            "NEW.widgets" not in turns_rule
        ):
            columns = {row[1] for row in conn.execute("PRAGMA table_info(trace_outputs)")}
            added = "" if "turn_id" in columns else OUTPUT_COLUMNS_19
            self._execute_script(conn, "BEGIN IMMEDIATE;\n" + added + ERASURE_19 + "COMMIT;")

    def _prepare_approvals(self, conn: sqlite3.Connection) -> None:
        """Give a writer's store the table of standing approvals (docs/protocols.md) when it
        lacks it; a reader reads a store without it as holding no rule."""
        if self._read_only:
            return
        present = conn.execute("SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'approval_rules'").fetchone()
        if present is None:
            self._execute_script(conn, "BEGIN IMMEDIATE;\n" + SQLITE_APPROVALS + "COMMIT;")

    def _prepare_traces(self, conn: sqlite3.Connection) -> None:
        """Give a writer's store the trace tables (a version-3 store made before traces gets
        them; its trace index is then rebuilt by the host); a reader notes whether they exist."""
        present = {name for (name,) in conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
        if self._read_only:
            self._has_traces = {t.name for t in _rows.TRACE_TABLES} <= present
            return
        stale = "" if "trace_index" in present else "DELETE FROM meta WHERE key = 'trace_index_version';\n"
        self._execute_script(conn, "BEGIN IMMEDIATE;\n" + TRACES + stale + "COMMIT;")
        self._has_traces = True
        rule = conn.execute("SELECT sql FROM sqlite_master WHERE type = 'trigger' AND name = 'actions_never_change'").fetchone()
        if rule is None or "erased_at" not in str(rule[0]):  # a store made before erasure reached actions
            columns = {row[1] for row in conn.execute("PRAGMA table_info(actions)")}
            added = "" if "erased_at" in columns else "ALTER TABLE actions ADD COLUMN erased_at TEXT;\n"
            self._execute_script(conn, "BEGIN IMMEDIATE;\n" + added + ERASURE_RULES + "COMMIT;")

"""The schema of a `PostgresStore` database (PostgreSQL schema ``host_sim``): the statements
that make it, those that give a store made before a later part of it that part, and
`prepare`, which a host runs (under an advisory lock, one creator at a time) when it opens one.

The tables' columns are the records' fields (`_rows`); a column added here is declared there.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Final

from ._approvals import POSTGRES_APPROVALS
from ._errors import StoreError
from ._postgres_events import APPEND_EVENTS_BODY, APPEND_EVENTS_FUNCTION, APPEND_EVENTS_SIGNATURE, LISTENERS
from ._postgres_sql import diagnosis
from ._postgres_traces import TRACE_TABLES_SCHEMA
from ._protocol import INDEX_VERSION
from ._records import ERASED_LABEL
from ._sql_memory import HAS_MEMORY_RULES_POSTGRES, MEMORY_POSTGRES, MEMORY_RULES_POSTGRES

__all__ = [
    "APPLICATION",
    "ERASURE_RULES",
    "EVENT_LOG",
    "POSTGRES_SCHEMA_VERSION",
    "SCHEMA",
    "prepare",
    "statements",
]

POSTGRES_SCHEMA_VERSION: Final = 1
"""The PostgreSQL schema this host-sim writes and reads; a newer one is refused."""

APPLICATION: Final = "host-sim"
SCHEMA_LOCK: Final = 0x48530003  # advisory lock class: creating or upgrading the schema

SCHEMA: Final = """
CREATE SCHEMA host_sim;
CREATE TABLE host_sim.meta (
    key text PRIMARY KEY,
    value text NOT NULL
);
CREATE TABLE host_sim.sessions (
    seq bigint GENERATED ALWAYS AS IDENTITY,
    id text PRIMARY KEY,
    lineage text NOT NULL,
    metadata text,
    model text NOT NULL,
    cwd text NOT NULL,
    runner_id text NOT NULL,
    created_at text NOT NULL,
    agent_id text,
    trigger_turn_id text,
    parent_session_id text,
    tags text
);
CREATE INDEX sessions_by_parent ON host_sim.sessions (parent_session_id, seq) WHERE parent_session_id IS NOT NULL;
CREATE INDEX sessions_by_trigger_turn ON host_sim.sessions (trigger_turn_id, seq) WHERE trigger_turn_id IS NOT NULL;
CREATE INDEX sessions_in_order ON host_sim.sessions (seq);
CREATE TABLE host_sim.turns (
    seq bigint GENERATED ALWAYS AS IDENTITY,
    id text PRIMARY KEY,
    session_id text NOT NULL,
    ordinal integer NOT NULL CHECK (ordinal >= 0),
    message text NOT NULL,
    message_id text NOT NULL,
    author text NOT NULL,
    runner_id text NOT NULL,
    status text NOT NULL CHECK (status IN ('running', 'completed', 'failed')),
    reply text,
    error text,
    started_at text NOT NULL,
    finished_at text,
    erased_at text,
    owner integer,
    CONSTRAINT turns_one_per_ordinal UNIQUE (session_id, ordinal)
);
CREATE INDEX turns_by_message ON host_sim.turns (message_id, seq);
CREATE INDEX turns_running ON host_sim.turns (seq) WHERE status = 'running';
CREATE TABLE host_sim.nodes (
    seq bigint GENERATED ALWAYS AS IDENTITY,
    session_id text PRIMARY KEY,
    created_at text NOT NULL,
    summary text,
    agent_id text,
    completed_at text,
    metrics text
);
CREATE TABLE host_sim.edges (
    seq bigint GENERATED ALWAYS AS IDENTITY,
    from_session_id text NOT NULL,
    to_session_id text NOT NULL,
    relation text NOT NULL,
    created_at text NOT NULL,
    artifact text,
    artifact_type text,
    artifact_source_id text,
    PRIMARY KEY (from_session_id, to_session_id)
);
CREATE INDEX edges_in ON host_sim.edges (to_session_id, seq);
CREATE INDEX edges_by_artifact ON host_sim.edges (artifact_type, artifact_source_id, seq) WHERE artifact_type IS NOT NULL;
CREATE FUNCTION host_sim.refuse() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    RAISE EXCEPTION USING ERRCODE = 'integrity_constraint_violation', MESSAGE = TG_ARGV[0];
END
$$;
CREATE TRIGGER sessions_never_change BEFORE UPDATE ON host_sim.sessions
    FOR EACH ROW EXECUTE FUNCTION host_sim.refuse('a session record never changes');
CREATE TRIGGER sessions_are_kept BEFORE DELETE ON host_sim.sessions
    FOR EACH ROW EXECUTE FUNCTION host_sim.refuse('a session record is never deleted');
CREATE TRIGGER sessions_are_never_truncated BEFORE TRUNCATE ON host_sim.sessions
    FOR EACH STATEMENT EXECUTE FUNCTION host_sim.refuse('session records are never deleted');
CREATE TRIGGER finished_turns_never_change BEFORE UPDATE ON host_sim.turns FOR EACH ROW
    WHEN (OLD.status <> 'running' AND NOT (
        OLD.erased_at IS NULL AND NEW.erased_at IS NOT NULL
        AND NEW.id = OLD.id AND NEW.session_id = OLD.session_id AND NEW.ordinal = OLD.ordinal
        AND NEW.message_id = OLD.message_id AND NEW.author = OLD.author AND NEW.runner_id = OLD.runner_id
        AND NEW.status = OLD.status AND NEW.started_at = OLD.started_at
        AND NEW.finished_at IS NOT DISTINCT FROM OLD.finished_at AND (NEW.error IS NULL) = (OLD.error IS NULL)
        AND NEW.owner IS NOT DISTINCT FROM OLD.owner))
    EXECUTE FUNCTION host_sim.refuse('a finished turn never changes (except once, to be forgotten)');
CREATE TRIGGER finished_turns_are_kept BEFORE DELETE ON host_sim.turns FOR EACH ROW
    WHEN (OLD.status <> 'running')
    EXECUTE FUNCTION host_sim.refuse('a finished turn is never deleted');
CREATE TRIGGER turns_are_never_truncated BEFORE TRUNCATE ON host_sim.turns
    FOR EACH STATEMENT EXECUTE FUNCTION host_sim.refuse('turn records are never deleted');
CREATE TABLE host_sim.session_tags (
    key text NOT NULL,
    value text NOT NULL,
    seq bigint NOT NULL,
    session_id text NOT NULL,
    PRIMARY KEY (key, value, seq)
);
CREATE INDEX sessions_roots ON host_sim.sessions (seq) WHERE parent_session_id IS NULL;
CREATE TABLE host_sim.deletions (session_id text PRIMARY KEY, deleted_at text NOT NULL);
CREATE TABLE host_sim.invocations (
    seq bigint GENERATED ALWAYS AS IDENTITY,
    id text PRIMARY KEY,
    session_id text,
    mod_id text NOT NULL,
    command_id text NOT NULL,
    argument text,
    author text NOT NULL,
    started_at text NOT NULL,
    finished_at text,
    text text,
    error text,
    error_kind text,
    position integer NOT NULL,
    erased_at text
);
CREATE INDEX invocations_by_session ON host_sim.invocations (session_id, seq) WHERE session_id IS NOT NULL;
CREATE TABLE host_sim.jobs (
    seq bigint GENERATED ALWAYS AS IDENTITY,
    id text PRIMARY KEY,
    session_id text NOT NULL,
    text text NOT NULL,
    status text NOT NULL,
    created_at text NOT NULL,
    finished_at text,
    kind text,
    result text,
    error text,
    error_kind text,
    turn_id text,
    owner bigint
);
CREATE INDEX jobs_running ON host_sim.jobs (seq) WHERE status = 'running';
CREATE TABLE host_sim.reads (turn_id text PRIMARY KEY, read_at text NOT NULL);
CREATE INDEX turns_notifications ON host_sim.turns (seq) WHERE message LIKE '{"type":"notification"%%';
"""

# Jobs from any host (docs/embedding.md): found by id, paged newest first by session, status
# or its session's tags (job_tags, copied from session_tags when the job starts), cancelled
# through cancel_requested_at, which the host running the job polls for by key. Run when a
# host opens a store made before them (IF NOT EXISTS; job_tags filled in).
JOBS_SCHEMA: Final = """
ALTER TABLE host_sim.jobs ADD COLUMN IF NOT EXISTS cancel_requested_at text;
CREATE TABLE IF NOT EXISTS host_sim.job_tags (
    key text NOT NULL, value text NOT NULL, seq bigint NOT NULL, job_id text NOT NULL,
    PRIMARY KEY (key, value, seq)
);
CREATE INDEX IF NOT EXISTS jobs_in_order ON host_sim.jobs (seq);
CREATE INDEX IF NOT EXISTS jobs_by_session ON host_sim.jobs (session_id, seq);
CREATE INDEX IF NOT EXISTS jobs_by_status ON host_sim.jobs (status, seq);
CREATE INDEX IF NOT EXISTS session_tags_by_session ON host_sim.session_tags (session_id);
INSERT INTO host_sim.job_tags (key, value, seq, job_id)
    SELECT t.key, t.value, j.seq, j.id FROM host_sim.jobs j JOIN host_sim.session_tags t ON t.session_id = j.session_id
    ON CONFLICT DO NOTHING;
"""
# Erasure (stores/_erasure.py): a record changes once more only to lose its text. Made with
# a new store, and when a host opens a store made before erasure reached turn errors,
# actions and outputs (its actions rule does not name erased_at).
ERASURE_RULES: Final = f"""
ALTER TABLE host_sim.actions ADD COLUMN IF NOT EXISTS erased_at text;
CREATE INDEX IF NOT EXISTS jobs_by_turn ON host_sim.jobs (turn_id) WHERE turn_id IS NOT NULL;
CREATE INDEX IF NOT EXISTS actions_by_turn ON host_sim.actions (turn_id);
CREATE OR REPLACE TRIGGER finished_turns_never_change BEFORE UPDATE ON host_sim.turns FOR EACH ROW
    WHEN (OLD.status <> 'running' AND NOT (
        OLD.erased_at IS NULL AND NEW.erased_at IS NOT NULL
        AND NEW.id = OLD.id AND NEW.session_id = OLD.session_id AND NEW.ordinal = OLD.ordinal
        AND NEW.message_id = OLD.message_id AND NEW.author = OLD.author AND NEW.runner_id = OLD.runner_id
        AND NEW.status = OLD.status AND NEW.started_at = OLD.started_at
        AND NEW.finished_at IS NOT DISTINCT FROM OLD.finished_at AND (NEW.error IS NULL) = (OLD.error IS NULL)
        AND NEW.owner IS NOT DISTINCT FROM OLD.owner))
    EXECUTE FUNCTION host_sim.refuse('a finished turn never changes (except once, to be forgotten)');
CREATE OR REPLACE TRIGGER actions_never_change BEFORE UPDATE ON host_sim.actions FOR EACH ROW
    WHEN (NOT (
        OLD.erased_at IS NULL AND NEW.erased_at IS NOT NULL AND NEW.id = OLD.id AND NEW.type = OLD.type
        AND NEW.mod_id = OLD.mod_id AND NEW.session_id = OLD.session_id AND NEW.turn_id = OLD.turn_id
        AND NEW.created_at = OLD.created_at AND NEW.seq = OLD.seq))
    EXECUTE FUNCTION host_sim.refuse('a proposed action never changes (except once, to be erased)');
CREATE OR REPLACE TRIGGER trace_outputs_never_change BEFORE UPDATE ON host_sim.trace_outputs FOR EACH ROW
    WHEN (NOT (
        NEW.kind = '{ERASED_LABEL}' AND NEW.output_id = OLD.output_id AND NEW.trace_id = OLD.trace_id
        AND NEW.session_id = OLD.session_id AND NEW.created_at = OLD.created_at AND NEW.seq = OLD.seq))
    EXECUTE FUNCTION host_sim.refuse('a trace output never changes (except to be erased)');
"""
# The record, complete (docs/the-record.md): a turn's tool calls, written with its finished
# record (JSON; NULL in rows written before). Made with a new store, and when a host opens
# a store made before it.
# A turn's token usage (docs/observability.md; JSON, NULL when no model call reported any) is
# written with its finished record and never changes afterwards, not even by forget.
# Decisions are records too: who decided about an action and why, with the action's session
# and turn (the erasure walk finds the reason, text, with them); a decision changes once
# more only to lose its reason.
RECORD_SCHEMA: Final = f"""
ALTER TABLE host_sim.turns ADD COLUMN IF NOT EXISTS tool_calls text;
ALTER TABLE host_sim.turns ADD COLUMN IF NOT EXISTS retracted_at text;
ALTER TABLE host_sim.turns ADD COLUMN IF NOT EXISTS retraction_reason text;
ALTER TABLE host_sim.turns ADD COLUMN IF NOT EXISTS usage text;
ALTER TABLE host_sim.turns ADD COLUMN IF NOT EXISTS widgets text;
CREATE OR REPLACE TRIGGER finished_turns_never_change BEFORE UPDATE ON host_sim.turns FOR EACH ROW
    WHEN (OLD.status <> 'running' AND NOT (
        NEW.id = OLD.id AND NEW.session_id = OLD.session_id AND NEW.ordinal = OLD.ordinal
        AND NEW.message_id = OLD.message_id AND NEW.author = OLD.author AND NEW.runner_id = OLD.runner_id
        AND NEW.status = OLD.status AND NEW.started_at = OLD.started_at
        AND NEW.finished_at IS NOT DISTINCT FROM OLD.finished_at AND NEW.owner IS NOT DISTINCT FROM OLD.owner
        AND NEW.seq = OLD.seq AND NEW.usage IS NOT DISTINCT FROM OLD.usage
        AND ((
            OLD.erased_at IS NULL AND NEW.erased_at IS NOT NULL AND (NEW.error IS NULL) = (OLD.error IS NULL)
            AND NEW.retracted_at IS NOT DISTINCT FROM OLD.retracted_at
            AND (NEW.retraction_reason IS NULL) = (OLD.retraction_reason IS NULL)
        ) OR (
            OLD.retracted_at IS NULL AND NEW.retracted_at IS NOT NULL AND NEW.retraction_reason IS NOT NULL
            AND NEW.message = OLD.message AND NEW.reply IS NOT DISTINCT FROM OLD.reply
            AND NEW.error IS NOT DISTINCT FROM OLD.error AND NEW.erased_at IS NOT DISTINCT FROM OLD.erased_at
            AND NEW.tool_calls IS NOT DISTINCT FROM OLD.tool_calls AND NEW.widgets IS NOT DISTINCT FROM OLD.widgets
        ))))
    EXECUTE FUNCTION host_sim.refuse('a finished turn never changes (except once to be forgotten, once to be retracted)');
ALTER TABLE host_sim.action_outcomes ADD COLUMN IF NOT EXISTS decided_by text;
ALTER TABLE host_sim.action_outcomes ADD COLUMN IF NOT EXISTS reason text;
ALTER TABLE host_sim.action_outcomes ADD COLUMN IF NOT EXISTS session_id text;
ALTER TABLE host_sim.action_outcomes ADD COLUMN IF NOT EXISTS turn_id text;
CREATE INDEX IF NOT EXISTS action_outcomes_by_session ON host_sim.action_outcomes (session_id) WHERE session_id IS NOT NULL;
CREATE INDEX IF NOT EXISTS action_outcomes_by_turn ON host_sim.action_outcomes (turn_id) WHERE turn_id IS NOT NULL;
CREATE OR REPLACE TRIGGER action_outcomes_never_change BEFORE UPDATE ON host_sim.action_outcomes FOR EACH ROW
    WHEN (NOT (
        NEW.action_id = OLD.action_id AND NEW.state = OLD.state AND NEW.decided_at = OLD.decided_at
        AND NEW.decided_by IS NOT DISTINCT FROM OLD.decided_by AND NEW.session_id IS NOT DISTINCT FROM OLD.session_id
        AND NEW.turn_id IS NOT DISTINCT FROM OLD.turn_id AND NEW.seq = OLD.seq
        AND (NEW.reason IS NOT DISTINCT FROM OLD.reason OR NEW.reason = '{ERASED_LABEL}')))
    EXECUTE FUNCTION host_sim.refuse('a decision about an action never changes (except to lose its reason, erased)');
"""
# Erasure is total (docs/embedding.md): a trace output keeps the turn whose tool reported it
# and the session position where the command that reported it was typed, so that forgetting
# that turn erases it; it changes once more only to lose its kind. A finished turn may also
# lose only its error, which quoted erased text (a later failed turn whose model saw a
# forgotten one). Made with a new store, and when a host opens a store made before (its
# trace outputs rule does not name turn_id, or its turns rule does not allow that).
ERASURE_SCHEMA_19: Final = f"""
CREATE OR REPLACE TRIGGER finished_turns_never_change BEFORE UPDATE ON host_sim.turns FOR EACH ROW
    WHEN (OLD.status <> 'running' AND NOT (
        NEW.id = OLD.id AND NEW.session_id = OLD.session_id AND NEW.ordinal = OLD.ordinal
        AND NEW.message_id = OLD.message_id AND NEW.author = OLD.author AND NEW.runner_id = OLD.runner_id
        AND NEW.status = OLD.status AND NEW.started_at = OLD.started_at
        AND NEW.finished_at IS NOT DISTINCT FROM OLD.finished_at AND NEW.owner IS NOT DISTINCT FROM OLD.owner
        AND NEW.seq = OLD.seq AND NEW.usage IS NOT DISTINCT FROM OLD.usage
        AND ((
            OLD.erased_at IS NULL AND NEW.erased_at IS NOT NULL AND (NEW.error IS NULL) = (OLD.error IS NULL)
            AND NEW.retracted_at IS NOT DISTINCT FROM OLD.retracted_at
            AND (NEW.retraction_reason IS NULL) = (OLD.retraction_reason IS NULL)
        ) OR (
            OLD.retracted_at IS NULL AND NEW.retracted_at IS NOT NULL AND NEW.retraction_reason IS NOT NULL
            AND NEW.message = OLD.message AND NEW.reply IS NOT DISTINCT FROM OLD.reply
            AND NEW.error IS NOT DISTINCT FROM OLD.error AND NEW.erased_at IS NOT DISTINCT FROM OLD.erased_at
            AND NEW.tool_calls IS NOT DISTINCT FROM OLD.tool_calls AND NEW.widgets IS NOT DISTINCT FROM OLD.widgets
        ) OR (
            OLD.error IS NOT NULL AND NEW.error = '{ERASED_LABEL}' AND NEW.message = OLD.message
            AND NEW.reply IS NOT DISTINCT FROM OLD.reply AND NEW.erased_at IS NOT DISTINCT FROM OLD.erased_at
            AND NEW.tool_calls IS NOT DISTINCT FROM OLD.tool_calls AND NEW.widgets IS NOT DISTINCT FROM OLD.widgets
            AND NEW.retracted_at IS NOT DISTINCT FROM OLD.retracted_at
            AND NEW.retraction_reason IS NOT DISTINCT FROM OLD.retraction_reason
        ))))
    EXECUTE FUNCTION host_sim.refuse('a finished turn never changes (except once to be forgotten, once to be retracted, to lose a quoted error)');
ALTER TABLE host_sim.trace_outputs ADD COLUMN IF NOT EXISTS turn_id text;
ALTER TABLE host_sim.trace_outputs ADD COLUMN IF NOT EXISTS position integer;
CREATE INDEX IF NOT EXISTS trace_outputs_by_turn ON host_sim.trace_outputs (turn_id) WHERE turn_id IS NOT NULL;
CREATE INDEX IF NOT EXISTS trace_outputs_by_position ON host_sim.trace_outputs (session_id, position)
    WHERE position IS NOT NULL;
CREATE OR REPLACE TRIGGER trace_outputs_never_change BEFORE UPDATE ON host_sim.trace_outputs FOR EACH ROW
    WHEN (NOT (
        NEW.kind = '{ERASED_LABEL}' AND NEW.output_id = OLD.output_id AND NEW.trace_id = OLD.trace_id
        AND NEW.session_id = OLD.session_id AND NEW.created_at = OLD.created_at AND NEW.seq = OLD.seq
        AND NEW.turn_id IS NOT DISTINCT FROM OLD.turn_id AND NEW.position IS NOT DISTINCT FROM OLD.position))
    EXECUTE FUNCTION host_sim.refuse('a trace output never changes (except to be erased)');
"""
HAS_ERASURE_SCHEMA_19: Final = (
    "SELECT EXISTS (SELECT 1 FROM pg_catalog.pg_trigger t JOIN pg_catalog.pg_class c ON c.oid = t.tgrelid "
    "JOIN pg_catalog.pg_namespace n ON n.oid = c.relnamespace WHERE n.nspname = 'host_sim' "
    "AND t.tgname = 'trace_outputs_never_change' AND pg_catalog.pg_get_triggerdef(t.oid) LIKE '%%turn_id%%') "
    "AND EXISTS (SELECT 1 FROM pg_catalog.pg_trigger t JOIN pg_catalog.pg_class c ON c.oid = t.tgrelid "
    "JOIN pg_catalog.pg_namespace n ON n.oid = c.relnamespace WHERE n.nspname = 'host_sim' "
    "AND t.tgname = 'finished_turns_never_change' AND pg_catalog.pg_get_triggerdef(t.oid) LIKE '%%quoted error%%' "
    "AND pg_catalog.pg_get_triggerdef(t.oid) LIKE '%%widgets%%')"
)
HAS_RECORD_SCHEMA: Final = (
    "SELECT EXISTS (SELECT 1 FROM pg_catalog.pg_trigger t JOIN pg_catalog.pg_class c ON c.oid = t.tgrelid "
    "JOIN pg_catalog.pg_namespace n ON n.oid = c.relnamespace WHERE n.nspname = 'host_sim' "
    "AND t.tgname = 'action_outcomes_never_change' AND pg_catalog.pg_get_triggerdef(t.oid) LIKE '%%reason%%') "
    "AND EXISTS (SELECT 1 FROM pg_catalog.pg_trigger t JOIN pg_catalog.pg_class c ON c.oid = t.tgrelid "
    "JOIN pg_catalog.pg_namespace n ON n.oid = c.relnamespace WHERE n.nspname = 'host_sim' "
    "AND t.tgname = 'finished_turns_never_change' AND pg_catalog.pg_get_triggerdef(t.oid) LIKE '%%widgets%%') "
    "AND EXISTS (SELECT 1 FROM information_schema.columns WHERE table_schema = 'host_sim' "
    "AND table_name = 'turns' AND column_name = 'tool_calls')"
)
HAS_ERASURE_RULES: Final = (
    "SELECT EXISTS (SELECT 1 FROM pg_catalog.pg_trigger t JOIN pg_catalog.pg_class c ON c.oid = t.tgrelid "
    "JOIN pg_catalog.pg_namespace n ON n.oid = c.relnamespace WHERE n.nspname = 'host_sim' "
    "AND t.tgname = 'actions_never_change' AND pg_catalog.pg_get_triggerdef(t.oid) LIKE '%%erased_at%%')"
)

EVENT_LOG: Final = """
CREATE TABLE IF NOT EXISTS host_sim.events (
    seq bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    host_id text NOT NULL,
    kind text NOT NULL,
    session_id text,
    turn_id text,
    written timestamptz NOT NULL DEFAULT now(),
    event text NOT NULL
);
CREATE INDEX IF NOT EXISTS events_by_turn ON host_sim.events (turn_id) WHERE turn_id IS NOT NULL;
CREATE INDEX IF NOT EXISTS events_by_session ON host_sim.events (session_id) WHERE session_id IS NOT NULL;
CREATE INDEX IF NOT EXISTS events_by_time ON host_sim.events (written);
"""
"""The event log (docs/embedding.md), added to stores of schema version 1 when opened."""


def prepare(
    conn: Any,
    *,
    create: bool,
    psycopg: Any,
    fail: Callable[[str, str], StoreError],
    database_error: Callable[[BaseException, str], StoreError],
    scrub: Callable[[str], str],
) -> None:
    """Check that the database holds a host-sim store this host can read, or create it (``create``);
    give a store made before a later part of the schema that part. Raises `StoreError`
    (``fail``, ``database_error``: how the store's errors read; ``scrub`` hides the password).
    """
    try:
        with conn.transaction():
            conn.execute("SELECT pg_advisory_xact_lock(%s, 0)", (SCHEMA_LOCK,))  # one creator at a time
            (has_schema, has_meta, dbname) = conn.execute(
                "SELECT EXISTS (SELECT 1 FROM pg_catalog.pg_namespace WHERE nspname = 'host_sim'), "
                "to_regclass('host_sim.meta') IS NOT NULL, current_database()",
                (),
            ).fetchone()
            if not has_schema:
                if not create:
                    raise fail(
                        f"holds no host-sim store (database {dbname!r} has no schema host_sim)",
                        "pass the DSN of the database your hosts write, or open it with a host to create one",
                    )
                for statement in statements(
                    SCHEMA + TRACE_TABLES_SCHEMA + JOBS_SCHEMA + ERASURE_RULES + EVENT_LOG + RECORD_SCHEMA
                    + ERASURE_SCHEMA_19 + POSTGRES_APPROVALS + MEMORY_POSTGRES + MEMORY_RULES_POSTGRES
                ):
                    conn.execute(statement, ())
                conn.execute(LISTENERS, ())
                conn.execute(APPEND_EVENTS_FUNCTION, ())
                conn.execute(
                    "INSERT INTO host_sim.meta (key, value) VALUES ('application', %s), "
                    "('schema_version', %s), ('index_version', %s)",
                    (APPLICATION, str(POSTGRES_SCHEMA_VERSION), str(INDEX_VERSION)),
                )
                return
            if not has_meta:
                raise fail(
                    f"has a schema host_sim in database {dbname!r} that is not a host-sim store (no meta table)",
                    "pass the DSN of a database whose schema host_sim a host created, or another database",
                )
            meta = {str(k): str(v) for k, v in conn.execute("SELECT key, value FROM host_sim.meta", ()).fetchall()}
            if create and conn.execute("SELECT to_regclass('host_sim.traces') IS NULL", ()).fetchone()[0]:
                for statement in statements(TRACE_TABLES_SCHEMA):  # a store made before traces
                    conn.execute(statement, ())
            if create and conn.execute("SELECT to_regclass('host_sim.job_tags') IS NULL", ()).fetchone()[0]:
                for statement in statements(JOBS_SCHEMA):  # a store made before jobs had indexes
                    conn.execute(statement, ())
            if create and not conn.execute(HAS_ERASURE_RULES, ()).fetchone()[0]:
                for statement in statements(ERASURE_RULES):  # a store made before erasure reached them
                    conn.execute(statement, ())
            if meta.get("application") == APPLICATION and conn.execute(
                "SELECT to_regclass('host_sim.events') IS NULL", ()
            ).fetchone()[0]:
                for statement in statements(EVENT_LOG):  # a store written before the event log
                    conn.execute(statement, ())
            if create and not conn.execute(HAS_RECORD_SCHEMA, ()).fetchone()[0]:
                for statement in statements(RECORD_SCHEMA):  # a store made before tool calls and decisions were kept
                    conn.execute(statement, ())
            if create and conn.execute("SELECT to_regclass('host_sim.approval_rules') IS NULL", ()).fetchone()[0]:
                for statement in statements(POSTGRES_APPROVALS):  # a store made before standing approvals
                    conn.execute(statement, ())
            if create and conn.execute("SELECT to_regclass('host_sim.memory_records') IS NULL", ()).fetchone()[0]:
                for statement in statements(MEMORY_POSTGRES):  # a store made before memory records
                    conn.execute(statement, ())
            if create and not conn.execute(HAS_MEMORY_RULES_POSTGRES, ()).fetchone()[0]:
                for statement in statements(MEMORY_RULES_POSTGRES):  # a store made before records were guarded
                    conn.execute(statement, ())
            if create and not conn.execute(HAS_ERASURE_SCHEMA_19, ()).fetchone()[0]:
                for statement in statements(ERASURE_SCHEMA_19):  # a store made before erasure reached outputs and quoted errors
                    conn.execute(statement, ())
            if conn.execute(
                "SELECT (SELECT prosrc FROM pg_catalog.pg_proc WHERE oid = to_regprocedure(%s)) IS DISTINCT FROM %s "
                "OR to_regclass('host_sim.listeners') IS NULL",
                (APPEND_EVENTS_SIGNATURE, APPEND_EVENTS_BODY),
            ).fetchone()[0]:
                # A store made before event rows were one function call (or before hosts
                # said they listen), or one whose function another version of host-sim made
                # (every version's function writes the same rows).
                try:
                    with conn.transaction():  # a savepoint: a role that may not create it still reads the store
                        conn.execute(LISTENERS, ())
                        conn.execute(APPEND_EVENTS_FUNCTION, ())
                except psycopg.errors.InsufficientPrivilege:
                    pass  # its writes say so (`PostgresDriver.database_error`)
    except StoreError:
        raise
    except psycopg.errors.InsufficientPrivilege as exc:
        raise fail(
            f"cannot be created: the role may not create schema host_sim ({scrub(diagnosis(exc))})",
            "GRANT CREATE ON DATABASE to the role, or let a role that may open it first",
        ) from None
    except psycopg.Error as exc:
        raise database_error(exc, "cannot be opened") from None
    if meta.get("application") != APPLICATION:
        raise fail(
            f"has a schema host_sim of another application (application {meta.get('application')!r})",
            "pass the DSN of a host-sim store's database, or another database",
        )
    raw = meta.get("schema_version", "")
    if not raw.isdigit():
        raise fail(f"has an unreadable schema version {raw!r}", "the meta table was edited; restore it")
    if int(raw) > POSTGRES_SCHEMA_VERSION:
        raise fail(
            f"was written by a newer host-sim (schema version {raw}; this one reads up to "
            f"{POSTGRES_SCHEMA_VERSION})",
            "upgrade host-sim to open it",
        )


def statements(script: str) -> list[str]:
    """Statements of a script; a ``$$`` body keeps its inner ';'."""
    out: list[str] = []
    current: list[str] = []
    quoted = False
    for piece in script.split(";"):
        current.append(piece)
        quoted ^= piece.count("$$") % 2 == 1
        if not quoted:
            statement = ";".join(current).strip()
            if statement:
                out.append(statement)
            current = []
    return out

"""What this project's own tests reach below the public API: the one door they use for it.

Not part of the contract (docs/API.md) and not for mod authors or integrators (their test
helpers are `host_sim.pytest_plugin`); names here may change with the code they come from.
Each name is here because a test needs the host's own value or seam, not a copy of it:

- checkers the tests run after every step and every crash (`check`);
- values a test must agree with to the byte: what a crash or an erasure leaves
  (`INTERRUPTED`, `ERASED_LABEL`, `erased`), the erasure walk's catalogue (`PLACES`, ...),
  the schemas' erasure rules, the instruction a summary is asked with;
- clocks and limits a test waits on (`DEAD_HOST_GRACE`, the AG-UI app's `WATCH_AFTER` and
  `WATCH_LONG`);
- fault injection points, patched by tests: modules whose globals a test replaces
  (`ids.secrets` for repeatable ids, `mod_specs.entry_points` for installed mods,
  `erasure._CHUNK` for statements that span several chunks, `spool`'s file steps for a
  writer or a consumer that dies between them) and `across_hosts`, whose switch for
  applying other hosts' facts a test turns off to make this host's reader late;
- the PostgreSQL store's statements, which a test has the server EXPLAIN one by one, and
  its advisory lock ids (`postgres_statements`, `OWNER_LOCK`), and what its session lock
  reads (`Locked`); its driver, whose connections a test traces (`PostgresDriver`) and
  whose statement hook a test records (`postgres_driver.read_seen`);
- parsers of hostile input and renderers that the tests drive with generated input
  (`parse_actions`, `scan_tags`, `render_lineage_html`, ...), faster and wider than a whole
  host per example allows;
- record types a test writes to a store directly (the trace records, `EventRow`);
- the JSON types and helpers the host shares with modular_sdk (`JsonObject`, `json_schema`,
  ...), which the host's tests annotate and build expected values with.

The command line's own seams (its parser, its subcommands) are ``host_sim.cli.testing``.
tests/test_tests_use_public_names.py fails when a test imports a private module instead.
"""

from __future__ import annotations

from modular_sdk._frozen import thaw_object
from modular_sdk._schema import JsonObject, JsonValue, json_schema

from .agui._app import WATCH_AFTER, WATCH_LONG
from .fold import _spec as mod_specs
from .fold._guard import BLOCKED as GUARD_BLOCKED
from .fold._guard import Scope as GuardScope
from .fold._guard import run_guarded
from .fold._importing import BLOCKED as IMPORT_GUARD_BLOCKED
from .fold._manifest import McpServerEntry
from .lineage._html import layout, render_lineage_html
from .memory._compaction import SUMMARY_INSTRUCTION
from .models._openai import _retry_after as retry_after
from .models._openai import wire_names
from .models._secrets import KeyFilter, KeyScrubber
from .sessions import _across_hosts as across_hosts
from .sessions import _ids as ids
from .sessions._across_hosts import DEAD_HOST_GRACE, event_of
from .sessions._actions import parse_actions
from .sessions._events import event_row
from .sessions._reply_tags import ReplyTag, scan_tags
from .sessions._view_data import view_data
from .stores import _erasure as erasure
from .stores import _postgres as postgres_statements
from .stores import _postgres_commit as postgres_driver
from .stores._erasure import ERASED_BY_STORE, KEPT, PLACES, STORE_COLUMNS, Place
from .stores._invariants import check
from .stores._memory_records import RecordStore
from .stores._postgres_commit import OWNER_LOCK, PostgresDriver
from .stores._postgres_schema import ERASURE_RULES as POSTGRES_ERASURE_RULES
from .stores._records import ERASED_LABEL, INTERRUPTED, JobStatus, Violation, erased
from .stores._shared import EventRow, Locked
from .stores._sqlite_schema import ERASURE_RULES as SQLITE_ERASURE_RULES
from .stores._trace_records import (
    ActionOutcomeRecord,
    ProposedActionRecord,
    TraceCommitRecord,
    TraceRecord,
    TraceTaskRecord,
)
from .traces import _spool as spool
from .traces._lineage_tool import lookup as lineage_lookup
from .traces._service import TraceLinker
from .traces._spool import SpoolConsumer

__all__ = [
    "DEAD_HOST_GRACE",
    "ERASED_BY_STORE",
    "ERASED_LABEL",
    "GUARD_BLOCKED",
    "IMPORT_GUARD_BLOCKED",
    "JsonObject",
    "JsonValue",
    "INTERRUPTED",
    "KEPT",
    "PLACES",
    "POSTGRES_ERASURE_RULES",
    "SQLITE_ERASURE_RULES",
    "STORE_COLUMNS",
    "SUMMARY_INSTRUCTION",
    "ActionOutcomeRecord",
    "EventRow",
    "GuardScope",
    "Locked",
    "OWNER_LOCK",
    "WATCH_AFTER",
    "WATCH_LONG",
    "PostgresDriver",
    "across_hosts",
    "postgres_driver",
    "JobStatus",
    "KeyFilter",
    "KeyScrubber",
    "McpServerEntry",
    "Place",
    "ProposedActionRecord",
    "RecordStore",
    "ReplyTag",
    "SpoolConsumer",
    "TraceCommitRecord",
    "TraceLinker",
    "TraceRecord",
    "TraceTaskRecord",
    "Violation",
    "check",
    "erased",
    "erasure",
    "event_of",
    "event_row",
    "json_schema",
    "ids",
    "layout",
    "lineage_lookup",
    "mod_specs",
    "parse_actions",
    "postgres_statements",
    "render_lineage_html",
    "retry_after",
    "run_guarded",
    "scan_tags",
    "spool",
    "thaw_object",
    "view_data",
    "wire_names",
]

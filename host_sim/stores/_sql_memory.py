"""The `RecordStore` methods of both SQL stores (stores/_memory_records.py; docs/memory.md),
written once, and the memory tables of each database: the statements below are their only
drawing (PostgreSQL's in schema ``host_sim``, with a ``seq`` identity column for writing
order; ``memory_by_turn`` and ``memory_by_record`` are derived).

Full-text search is the database's own index: SQLite an FTS5 table over ``text`` (external
content, kept by triggers; an erasure merges it so no segment keeps a deleted term),
PostgreSQL a generated ``tsvector`` column with a GIN index. A record never changes except
by retraction (once) and erasure; a trigger refuses any other change and every delete
(on both databases: ``MEMORY_RULES_POSTGRES`` is PostgreSQL's).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from datetime import datetime
from typing import Final

from modular_sdk import MemoryRecord, RecordId, SessionId, TurnId

from . import _rows
from ._memory_records import query_terms
from ._sql import SqlPart, Step

__all__ = ["HAS_MEMORY_RULES_POSTGRES", "MEMORY_POSTGRES", "MEMORY_RULES_POSTGRES", "MEMORY_SQLITE", "SqlMemory"]

MEMORY_SQLITE: Final = """
CREATE TABLE IF NOT EXISTS memory_records (
    id TEXT PRIMARY KEY, session_id TEXT NOT NULL, kind TEXT NOT NULL, text TEXT NOT NULL, data TEXT,
    read_from TEXT, cites TEXT NOT NULL, derived_from TEXT NOT NULL, made_by TEXT NOT NULL,
    created_at TEXT NOT NULL, retracted_at TEXT, retraction_reason TEXT, erased_at TEXT
);
CREATE INDEX IF NOT EXISTS memory_records_by_session ON memory_records (session_id);
CREATE TABLE IF NOT EXISTS memory_by_turn (
    turn_id TEXT NOT NULL, record_id TEXT NOT NULL, PRIMARY KEY (turn_id, record_id)
) WITHOUT ROWID;
CREATE INDEX IF NOT EXISTS memory_by_turn_of_record ON memory_by_turn (record_id);
CREATE TABLE IF NOT EXISTS memory_by_record (
    parent_id TEXT NOT NULL, record_id TEXT NOT NULL, PRIMARY KEY (parent_id, record_id)
) WITHOUT ROWID;
CREATE VIRTUAL TABLE IF NOT EXISTS memory_fts USING fts5(text, content='memory_records', content_rowid='rowid');
CREATE TRIGGER IF NOT EXISTS memory_fts_insert AFTER INSERT ON memory_records BEGIN
    INSERT INTO memory_fts (rowid, text) VALUES (NEW.rowid, NEW.text);
END;
CREATE TRIGGER IF NOT EXISTS memory_fts_update AFTER UPDATE OF text ON memory_records BEGIN
    INSERT INTO memory_fts (memory_fts, rowid, text) VALUES ('delete', OLD.rowid, OLD.text);
    INSERT INTO memory_fts (rowid, text) VALUES (NEW.rowid, NEW.text);
END;
DROP TRIGGER IF EXISTS memory_records_never_change;
CREATE TRIGGER memory_records_never_change BEFORE UPDATE ON memory_records
WHEN NEW.id IS NOT OLD.id OR NEW.session_id IS NOT OLD.session_id OR NEW.kind IS NOT OLD.kind
    OR NEW.read_from IS NOT OLD.read_from OR NEW.cites IS NOT OLD.cites OR NEW.derived_from IS NOT OLD.derived_from
    OR NEW.made_by IS NOT OLD.made_by OR NEW.created_at IS NOT OLD.created_at
    OR (OLD.retracted_at IS NOT NULL AND NEW.retracted_at IS NOT OLD.retracted_at)
    OR (NEW.retraction_reason IS NOT OLD.retraction_reason
        AND NOT (OLD.retracted_at IS NULL AND NEW.retracted_at IS NOT NULL)
        AND NOT (OLD.erased_at IS NULL AND NEW.erased_at IS NOT NULL))
    OR (OLD.erased_at IS NOT NULL AND (NEW.erased_at IS NOT OLD.erased_at
        OR NEW.text IS NOT OLD.text OR NEW.data IS NOT OLD.data))
    OR (NEW.erased_at IS NULL AND (NEW.text IS NOT OLD.text OR NEW.data IS NOT OLD.data))
BEGIN SELECT RAISE(ABORT, 'a memory record never changes, except by its retraction and erasure'); END;
CREATE TRIGGER IF NOT EXISTS memory_records_are_kept BEFORE DELETE ON memory_records
BEGIN SELECT RAISE(ABORT, 'a memory record is never deleted'); END;
"""
"""The memory tables of a `SqliteStore` (made when a writer opens the store). The rule
trigger is made again at every writer's open, so a file made under a looser rule gets this
one: a record changes only by its first retraction and its first erasure (PostgreSQL's
``MEMORY_RULES_POSTGRES`` says the same)."""

MEMORY_POSTGRES: Final = """
CREATE TABLE IF NOT EXISTS host_sim.memory_records (
    seq bigint GENERATED ALWAYS AS IDENTITY, id text PRIMARY KEY, session_id text NOT NULL, kind text NOT NULL,
    text text NOT NULL, data text, read_from text, cites text NOT NULL, derived_from text NOT NULL,
    made_by text NOT NULL, created_at text NOT NULL, retracted_at text, retraction_reason text, erased_at text,
    search tsvector GENERATED ALWAYS AS (to_tsvector('simple', text)) STORED
);
CREATE UNIQUE INDEX IF NOT EXISTS memory_records_by_seq ON host_sim.memory_records (seq);
CREATE INDEX IF NOT EXISTS memory_records_by_session ON host_sim.memory_records (session_id, seq);
CREATE INDEX IF NOT EXISTS memory_records_search ON host_sim.memory_records USING GIN (search);
CREATE TABLE IF NOT EXISTS host_sim.memory_by_turn (
    turn_id text NOT NULL, record_id text NOT NULL, PRIMARY KEY (turn_id, record_id)
);
CREATE INDEX IF NOT EXISTS memory_by_turn_of_record ON host_sim.memory_by_turn (record_id);
CREATE TABLE IF NOT EXISTS host_sim.memory_by_record (
    parent_id text NOT NULL, record_id text NOT NULL, PRIMARY KEY (parent_id, record_id)
);
"""
"""The memory tables of a `PostgresStore` (made when a host opens the database)."""

MEMORY_RULES_POSTGRES: Final = """
CREATE OR REPLACE TRIGGER memory_records_never_change BEFORE UPDATE ON host_sim.memory_records FOR EACH ROW
    WHEN (NEW.seq IS DISTINCT FROM OLD.seq OR NEW.id IS DISTINCT FROM OLD.id
        OR NEW.session_id IS DISTINCT FROM OLD.session_id OR NEW.kind IS DISTINCT FROM OLD.kind
        OR NEW.read_from IS DISTINCT FROM OLD.read_from OR NEW.cites IS DISTINCT FROM OLD.cites
        OR NEW.derived_from IS DISTINCT FROM OLD.derived_from OR NEW.made_by IS DISTINCT FROM OLD.made_by
        OR NEW.created_at IS DISTINCT FROM OLD.created_at
        OR (OLD.retracted_at IS NOT NULL AND NEW.retracted_at IS DISTINCT FROM OLD.retracted_at)
        OR (NEW.retraction_reason IS DISTINCT FROM OLD.retraction_reason
            AND NOT (OLD.retracted_at IS NULL AND NEW.retracted_at IS NOT NULL)
            AND NOT (OLD.erased_at IS NULL AND NEW.erased_at IS NOT NULL))
        OR (OLD.erased_at IS NOT NULL AND (NEW.erased_at IS DISTINCT FROM OLD.erased_at
            OR NEW.text IS DISTINCT FROM OLD.text OR NEW.data IS DISTINCT FROM OLD.data))
        OR (NEW.erased_at IS NULL AND (NEW.text IS DISTINCT FROM OLD.text OR NEW.data IS DISTINCT FROM OLD.data)))
    EXECUTE FUNCTION host_sim.refuse('a memory record never changes, except by its retraction and erasure');
CREATE OR REPLACE TRIGGER memory_records_are_kept BEFORE DELETE ON host_sim.memory_records FOR EACH ROW
    EXECUTE FUNCTION host_sim.refuse('a memory record is never deleted');
CREATE OR REPLACE TRIGGER memory_records_are_never_truncated BEFORE TRUNCATE ON host_sim.memory_records
    FOR EACH STATEMENT EXECUTE FUNCTION host_sim.refuse('memory records are never deleted');
"""
"""SQLite's ``memory_records_never_change`` and ``memory_records_are_kept`` for PostgreSQL (the
same rule): a record changes only by its retraction (once) and its erasure (once), and is
never deleted or truncated."""

HAS_MEMORY_RULES_POSTGRES: Final = (
    "SELECT EXISTS (SELECT 1 FROM pg_catalog.pg_trigger t JOIN pg_catalog.pg_class c ON c.oid = t.tgrelid "
    "JOIN pg_catalog.pg_namespace n ON n.oid = c.relnamespace WHERE n.nspname = 'host_sim' "
    "AND t.tgname = 'memory_records_never_change')"
)


class SqlMemory(SqlPart):
    """The `RecordStore` methods of the SQL store engine, `_sql_store.SqlStore` (see the
    module docstring): a part of it, over its dialect and driver."""

    __slots__ = ()

    async def add_record(self, record: MemoryRecord, rests_on: Sequence[TurnId]) -> None:
        d, table = self._dialect, _rows.MEMORY_RECORDS
        t, m = d.table, d.mark
        steps = [
            d.check(_rows.session_stored(record.session_id, f"memory record {record.id!r} is made in a stored session")),
            Step(
                f"INSERT INTO {t(table.name)} ({', '.join(table.columns)}) VALUES ({d.marks(len(table.columns))})",
                self._row(table, record),
                f"memory record {record.id!r} is already stored; records never change",
            ),
        ]
        steps += [
            Step(f"INSERT INTO {t('memory_by_turn')} (turn_id, record_id) VALUES ({m}, {m})", (turn_id, record.id), "cannot index a memory record")
            for turn_id in dict.fromkeys(rests_on)
        ]
        steps += [
            Step(f"INSERT INTO {t('memory_by_record')} (parent_id, record_id) VALUES ({m}, {m})", (parent, record.id), "cannot index a memory record")
            for parent in dict.fromkeys(record.derived_from)
        ]
        await self._transact(steps)

    async def get_record(self, record_id: str) -> MemoryRecord | None:
        found = await self._records_where(_rows.MEMORY_RECORDS, MemoryRecord, f"WHERE id = {self._dialect.mark}", (record_id,))
        return found[0] if found else None

    async def _by_index(self, index: str, key: str, values: Sequence[str]) -> Sequence[MemoryRecord]:
        if not values:
            return ()
        d = self._dialect
        out: list[MemoryRecord] = []
        unique = list(dict.fromkeys(values))
        for start in range(0, len(unique), 500):
            chunk = unique[start : start + 500]
            out += await self._records_where(
                _rows.MEMORY_RECORDS,
                MemoryRecord,
                f"WHERE id IN (SELECT record_id FROM {d.table(index)} WHERE {key} IN ({d.marks(len(chunk))})) ORDER BY {d.order}",
                tuple(chunk),
            )
        if len(unique) > 500:  # several chunks: each record once, in writing order overall
            seen: dict[str, MemoryRecord] = {}
            for record in out:
                seen.setdefault(record.id, record)
            positions = await self._positions(list(seen))
            return sorted(seen.values(), key=lambda r: positions[r.id])
        return out

    async def _positions(self, ids: Sequence[str]) -> dict[str, int]:
        d = self._dialect
        found: dict[str, int] = {}
        for start in range(0, len(ids), 500):
            chunk = list(ids[start : start + 500])
            rows = await self._query(
                f"SELECT id, {d.order} FROM {d.table('memory_records')} WHERE id IN ({d.marks(len(chunk))})", tuple(chunk)
            )
            found.update((str(i), int(p)) for i, p in rows)
        return found

    async def rests_on(self, record_id: RecordId) -> Sequence[TurnId]:
        d = self._dialect
        rows = await self._query(f"SELECT turn_id FROM {d.table('memory_by_turn')} WHERE record_id = {d.mark}", (record_id,))
        return [TurnId(str(r[0])) for r in rows]

    async def records_on_turns(self, turn_ids: Sequence[TurnId]) -> Sequence[MemoryRecord]:
        return await self._by_index("memory_by_turn", "turn_id", turn_ids)

    async def records_derived_from(self, record_ids: Sequence[RecordId]) -> Sequence[MemoryRecord]:
        return await self._by_index("memory_by_record", "parent_id", record_ids)

    async def retract_record(self, record_id: RecordId, at: datetime, reason: str) -> MemoryRecord:
        d = self._dialect
        m = d.mark
        await self._transact(
            [
                Step(
                    f"UPDATE {d.table('memory_records')} SET retracted_at = {m}, retraction_reason = {m} "
                    f"WHERE id = {m} AND retracted_at IS NULL",
                    (at.isoformat(), reason, record_id),
                    f"cannot retract memory record {record_id!r}",
                )
            ]
        )
        found = await self.get_record(record_id)
        if found is None:
            raise self._refuse(f"no memory record {record_id!r} to retract")
        return found

    def _scoped(self, tags: Mapping[str, str], column: str = "session_id") -> tuple[str, tuple[object, ...]]:
        d = self._dialect
        clauses = "".join(
            f" AND {column} IN (SELECT session_id FROM {d.table('session_tags')} WHERE key = {d.mark} AND value = {d.mark})"
            for _ in tags
        )
        return clauses, tuple(v for pair in tags.items() for v in pair)

    async def page_records(
        self,
        session_id: SessionId | None,
        kind: str | None,
        tags: Mapping[str, str],
        include_retracted: bool,
        limit: int,
        after: int | None,
    ) -> tuple[Sequence[MemoryRecord], int | None]:
        d = self._dialect
        m = d.mark
        where = f"WHERE {d.order} > {m}"
        params: list[object] = [after if after is not None else -1]
        if session_id is not None:
            where, params = where + f" AND session_id = {m}", [*params, session_id]
        if kind is not None:
            where, params = where + f" AND kind = {m}", [*params, kind]
        if not include_retracted:
            where += " AND retracted_at IS NULL"
        scoped, tag_params = self._scoped(tags)
        found = await self._records_where(
            _rows.MEMORY_RECORDS,
            MemoryRecord,
            f"{where}{scoped} ORDER BY {d.order} LIMIT {int(limit) + 1}",
            (*params, *tag_params),
        )
        if len(found) <= limit:
            return found, None
        page = found[:limit]
        return page, (await self._positions([page[-1].id]))[page[-1].id]

    async def search_records(self, query: str, tags: Mapping[str, str], limit: int) -> Sequence[MemoryRecord]:
        terms = query_terms(query)
        if not terms:
            return ()
        d = self._dialect
        live = "erased_at IS NULL AND retracted_at IS NULL"
        if d.or_ignore:  # SQLite: FTS5, ranked by bm25
            match = " ".join('"' + term.replace('"', '""') + '"' for term in terms)
            scoped, tag_params = self._scoped(tags, "r.session_id")
            rows = await self._query(
                # CROSS JOIN: the full-text index drives (SQLite keeps the left table outer), never a scan of records
                f"SELECT r.id FROM memory_fts CROSS JOIN memory_records r ON r.rowid = memory_fts.rowid "
                f"WHERE memory_fts MATCH ? AND r.erased_at IS NULL AND r.retracted_at IS NULL"
                f"{scoped} ORDER BY memory_fts.rank LIMIT {int(limit)}",
                (match, *tag_params),
            )
        else:
            scoped, tag_params = self._scoped(tags)  # PostgreSQL: tsvector with its GIN index, ranked by ts_rank
            rows = await self._query(
                f"SELECT id FROM host_sim.memory_records WHERE search @@ plainto_tsquery('simple', %s) AND {live}{scoped} "
                f"ORDER BY ts_rank(search, plainto_tsquery('simple', %s)) DESC, seq LIMIT {int(limit)}",
                (" ".join(terms), *tag_params, " ".join(terms)),
            )
        ids = [str(r[0]) for r in rows]
        if not ids:
            return ()
        records = await self._records_where(
            _rows.MEMORY_RECORDS, MemoryRecord, f"WHERE id IN ({d.marks(len(ids))})", tuple(ids)
        )
        by_id: dict[str, MemoryRecord] = {r.id: r for r in records}
        return tuple(by_id[i] for i in ids if i in by_id)

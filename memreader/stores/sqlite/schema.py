"""The embedded store's tables, and the conversions between its rows and memreader's types.

- ``memories``: one row per memory (the item JSON without its vector, which is a float32 blob
  beside it), with a partial UNIQUE index on ``(user_id, memory_type, content_hash)`` over
  active rows: two processes can never both add one memory.
- ``memory_keys``: the support keys of each memory (``doc:``, ``session:``, ``message:``,
  ``input:``), what forget and ``replaces`` look up.
- ``history``: one row per change.
- ``memories_terms``: FTS5 over each memory's terms (rowid = the memory's rowid): not the raw
  text but :func:`~memreader.retrieval.terms.index_text` of it (NFKC- and case-folded words,
  Chinese, Japanese and Korean as overlapping bigrams), because FTS5's tokenizer sees a whole
  CJK clause as one word (``咖啡`` found nothing). Schema 1 had ``memories_fts`` over the raw
  text: opening such a file rebuilds the index from the stored rows and makes it schema 2
  (:func:`create_or_upgrade`), which an older memreader refuses to open (it would index raw
  text beside the terms). Schema 3 added each memory's scope (``agent_id``, ``task_id``, ""
  for none, and ``visibility``: :mod:`memreader.scopes`), which searches filter by; a
  scoped memory's ``content_hash`` covers its scope (:func:`~memreader.scopes.scoped_hash`),
  so the UNIQUE index keeps one active memory per owner, type, text and scope.
- ``owner_versions``: bumped by every change of an owner's rows, so a process knows its cached
  vectors are stale.
- ``categories``: each owner's categories (description, its vector as a float32 blob, the
  summary and how it was made), and ``category_links``: which memories (by id, of the same
  owner) each covers. Added after the first release: ``CREATE ... IF NOT EXISTS`` on every open
  adds them to an older store file, so they did not move the schema version (schema 2 did: its
  text index is another table, see ``memories_terms``).
- ``memory_pins``: the memories an operator pinned (the budget never expires them: see
  :mod:`memreader.stores.lifecycle`), by owner and id; a trigger removes a memory's pin with
  its row (purge, erase). Added like the categories tables, without a version move.
"""

from __future__ import annotations

import json
import logging
import re
import sqlite3
from datetime import datetime, timezone
from typing import Any

from memreader.errors import ConfigError
from memreader.retrieval.terms import index_text
from memreader.stores.base import HistoryEntry
from memreader.stores.records import StoredMemory, item_from_json, unless_broken
from memreader.stores.sqlite.vectors import VectorRow, from_blob

__all__ = [
    "MEMORY_COLUMNS",
    "SCHEMA",
    "SCHEMA_OBJECTS",
    "SCHEMA_VERSION",
    "STAMP",
    "UPGRADE",
    "VECTOR_COLUMNS",
    "create_or_upgrade",
    "history_from_row",
    "is_busy",
    "is_wal",
    "iso",
    "memory_from_row",
    "parse_time",
    "path_of_url",
    "schema_is_current",
    "time_of",
    "vector_row",
]

SCHEMA_VERSION = "3"

#: The schema versions :func:`create_or_upgrade` brings to :data:`SCHEMA_VERSION`.
UPGRADES_FROM = frozenset({"1", "2"})

_log = logging.getLogger(__name__)

SCHEMA = """
CREATE TABLE IF NOT EXISTS memreader_meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS memories (
    rowid INTEGER PRIMARY KEY,
    id TEXT NOT NULL,
    user_id TEXT NOT NULL,
    session_id TEXT NOT NULL,
    agent_id TEXT NOT NULL DEFAULT '',
    task_id TEXT NOT NULL DEFAULT '',
    visibility TEXT NOT NULL DEFAULT 'private' CHECK (visibility IN ('private', 'shared')),
    memory_type TEXT NOT NULL,
    memory TEXT NOT NULL,
    content_hash TEXT NOT NULL,
    status TEXT NOT NULL CHECK (status IN ('active', 'superseded', 'expired')),
    valid_from TEXT,
    valid_to TEXT,
    recorded_at TEXT NOT NULL,
    retired_at TEXT,
    superseded_by TEXT,
    importance REAL,
    importance_reason TEXT,
    reinforced INTEGER NOT NULL DEFAULT 0,
    embedding BLOB,
    embedding_model TEXT,
    supports TEXT NOT NULL,
    item TEXT NOT NULL,
    UNIQUE (user_id, id)
);
CREATE UNIQUE INDEX IF NOT EXISTS memories_active_hash
    ON memories (user_id, memory_type, content_hash) WHERE status = 'active';
CREATE INDEX IF NOT EXISTS memories_owner ON memories (user_id, status);
CREATE INDEX IF NOT EXISTS memories_retired ON memories (status, retired_at);
CREATE INDEX IF NOT EXISTS memories_owner_scope ON memories (user_id, task_id, agent_id, status);
CREATE TABLE IF NOT EXISTS memory_keys (
    key TEXT NOT NULL,
    memory_rowid INTEGER NOT NULL,
    PRIMARY KEY (key, memory_rowid)
) WITHOUT ROWID;
CREATE INDEX IF NOT EXISTS memory_keys_memory ON memory_keys (memory_rowid);
CREATE TABLE IF NOT EXISTS history (
    id INTEGER PRIMARY KEY,
    user_id TEXT NOT NULL,
    memory_id TEXT NOT NULL,
    event TEXT NOT NULL,
    old_memory TEXT,
    new_memory TEXT,
    at TEXT NOT NULL,
    reason TEXT NOT NULL,
    source_ids TEXT NOT NULL
);
CREATE INDEX IF NOT EXISTS history_memory ON history (user_id, memory_id, id);
CREATE VIRTUAL TABLE IF NOT EXISTS memories_terms USING fts5 (terms);
CREATE TABLE IF NOT EXISTS owner_versions (user_id TEXT PRIMARY KEY, version INTEGER NOT NULL);
CREATE TABLE IF NOT EXISTS categories (
    user_id TEXT NOT NULL,
    name TEXT NOT NULL,
    description TEXT NOT NULL,
    embedding BLOB,
    summary TEXT NOT NULL DEFAULT '',
    summary_kind TEXT NOT NULL DEFAULT 'empty'
        CHECK (summary_kind IN ('llm', 'deterministic', 'empty')),
    summary_note TEXT,
    updated_at TEXT,
    PRIMARY KEY (user_id, name)
) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS category_links (
    user_id TEXT NOT NULL,
    name TEXT NOT NULL,
    memory_id TEXT NOT NULL,
    PRIMARY KEY (user_id, name, memory_id)
) WITHOUT ROWID;
CREATE INDEX IF NOT EXISTS category_links_memory ON category_links (user_id, memory_id);
CREATE TABLE IF NOT EXISTS memory_pins (
    user_id TEXT NOT NULL,
    memory_id TEXT NOT NULL,
    pinned_at TEXT NOT NULL,
    PRIMARY KEY (user_id, memory_id)
) WITHOUT ROWID;
CREATE TRIGGER IF NOT EXISTS memory_pins_removed AFTER DELETE ON memories
BEGIN DELETE FROM memory_pins WHERE user_id = old.user_id AND memory_id = old.id; END;
"""

#: What a new (or older) file gets with its tables, in the same transaction: its schema version.
STAMP = f"INSERT OR IGNORE INTO memreader_meta (key, value) VALUES ('schema', '{SCHEMA_VERSION}');"

#: Schema 1 to 2, after :data:`SCHEMA` (which adds the empty ``memories_terms``), in the same
#: transaction: every stored row's terms indexed (``memreader_index_text``: the Python function
#: :func:`create_or_upgrade` lends the connection; SQLite streams the rows, so memory stays
#: bounded whatever the store's size), the raw-text index dropped, the version moved. Each
#: statement does nothing on a file at schema 2 (or a new one): the version is read inside the
#: write lock, so two processes opening one old file rebuild it once.
UPGRADE = """
INSERT INTO memories_terms (rowid, terms)
    SELECT rowid, memreader_index_text(memory) FROM memories
    WHERE (SELECT value FROM memreader_meta WHERE key = 'schema') = '1';
DROP TABLE IF EXISTS memories_fts;
UPDATE memreader_meta SET value = '2' WHERE key = 'schema' AND value = '1';
UPDATE memreader_meta SET value = '3' WHERE key = 'schema' AND value = '2';
"""

#: Schema 2 to 3 (scopes: :mod:`memreader.scopes`): the columns a search filters by, added to
#: an older ``memories`` table before :data:`SCHEMA` indexes them. Every stored memory is
#: unscoped and private, what the defaults say, and keeps its ``content_hash``
#: (:func:`~memreader.scopes.scoped_hash` of an unscoped memory is its text's hash).
SCOPE_COLUMNS = (
    "ALTER TABLE memories ADD COLUMN agent_id TEXT NOT NULL DEFAULT ''",
    "ALTER TABLE memories ADD COLUMN task_id TEXT NOT NULL DEFAULT ''",
    "ALTER TABLE memories ADD COLUMN visibility TEXT NOT NULL DEFAULT 'private' "
    "CHECK (visibility IN ('private', 'shared'))",
)

#: The tables and indexes :data:`SCHEMA` makes (what a current file holds).
SCHEMA_OBJECTS = frozenset(
    re.findall(r"CREATE (?:UNIQUE |VIRTUAL )?(?:TABLE|INDEX) IF NOT EXISTS (\w+)", SCHEMA)
)


def schema_is_current(conn: sqlite3.Connection) -> bool:
    """Whether the file holds every table and index of :data:`SCHEMA` and a schema version:
    read without a write lock, so opening a current store never waits for a writer."""
    names = {row[0] for row in conn.execute("SELECT name FROM sqlite_master")}
    # memories_fts: schema 1's index, or the empty one an older memreader made on its way to
    # refusing a schema-2 file (UPGRADE drops it).
    if not names >= SCHEMA_OBJECTS or "memories_fts" in names:
        return False
    row = conn.execute("SELECT value FROM memreader_meta WHERE key = 'schema'").fetchone()
    return row is not None and row[0] not in UPGRADES_FROM


def create_or_upgrade(conn: sqlite3.Connection, *, also: str = "") -> None:
    """Create what the file lacks of :data:`SCHEMA` (and of ``also``, another index's own
    ``IF NOT EXISTS`` script) and stamp its version; a file at an older schema
    (:data:`UPGRADES_FROM`) is brought to :data:`SCHEMA_VERSION` (:data:`UPGRADE`): all in one
    immediate transaction, so two processes opening one file do it once, and a failure leaves
    the file as it was."""
    conn.create_function("memreader_index_text", 1, index_text, deterministic=True)
    if "memreader_meta" in {r[0] for r in conn.execute("SELECT name FROM sqlite_master")}:
        row = conn.execute("SELECT value FROM memreader_meta WHERE key = 'schema'").fetchone()
        if row is not None and row[0] in UPGRADES_FROM:
            count = conn.execute("SELECT count(*) FROM memories").fetchone()[0]
            _log.info(
                "upgrading the store's schema %s to %s: indexing the terms of %d memories",
                row[0],
                SCHEMA_VERSION,
                count,
            )
    _add_scope_columns(conn)
    conn.executescript(f"BEGIN IMMEDIATE;\n{SCHEMA}\n{UPGRADE}\n{also}\n{STAMP}\nCOMMIT;")


def _add_scope_columns(conn: sqlite3.Connection) -> None:
    """Add :data:`SCOPE_COLUMNS` to an older ``memories`` table, in a transaction of its own
    (``executescript`` would commit a pending one first): the columns are read inside the
    write lock, so two processes add them once; a file left here with the columns and its
    old version is upgraded by the next open (the columns' defaults are what it holds)."""
    conn.execute("BEGIN IMMEDIATE")
    try:
        columns = {row[1] for row in conn.execute("PRAGMA table_info(memories)")}
        if columns and "agent_id" not in columns:
            for statement in SCOPE_COLUMNS:
                conn.execute(statement)
    except BaseException:
        conn.execute("ROLLBACK")
        raise
    conn.execute("COMMIT")


def is_wal(conn: sqlite3.Connection) -> bool:
    """Whether the file is in WAL mode already (asking does not lock)."""
    return str(conn.execute("PRAGMA journal_mode").fetchone()[0]).lower() == "wal"


def is_busy(exc: sqlite3.Error) -> bool:
    """Whether ``exc`` is a lock held by another connection past the busy timeout, which says
    nothing about the file being broken."""
    code = getattr(exc, "sqlite_errorcode", None)
    if code is not None:
        return code & 0xFF in (sqlite3.SQLITE_BUSY, sqlite3.SQLITE_LOCKED)
    text = str(exc).lower()
    return "database is locked" in text or "busy" in text


#: The columns :func:`memory_from_row` reads, in order.
MEMORY_COLUMNS = (
    "rowid, item, embedding, status, content_hash, recorded_at, valid_from, valid_to, "
    "retired_at, superseded_by, importance, importance_reason, reinforced, id, user_id"
)

#: The columns :func:`vector_row` reads after the rowid, over ``memories m``.
VECTOR_COLUMNS = (
    "m.embedding, m.status, m.memory_type, m.session_id, "
    "COALESCE(m.valid_from, m.recorded_at), COALESCE(m.embedding_model, ''), "
    "m.agent_id, m.task_id, m.visibility, m.importance"
)


def path_of_url(url: str) -> str:
    """The database path of a ``sqlite:///relative.db``, ``sqlite:////absolute.db`` or
    ``sqlite://:memory:`` URL.

    Raises:
        ConfigError: not a sqlite URL, no path, or a query string (options are keywords).
    """
    scheme, sep, rest = url.partition("://")
    if scheme.lower() != "sqlite" or not sep:
        raise ConfigError(f"not a sqlite URL: {url!r} (expected sqlite:///path.db)")
    if "?" in rest:
        raise ConfigError(
            f"sqlite URL {url!r} has a query string; pass options as keyword arguments"
        )
    path = rest[1:] if rest.startswith("/") else rest
    if not path:
        raise ConfigError(f"sqlite URL {url!r} names no file (expected sqlite:///path.db)")
    return path


def iso(value: datetime | None) -> str | None:
    """``value`` as fixed-width UTC ISO text (so text order is time order)."""
    if value is None:
        return None
    return value.astimezone(timezone.utc).isoformat(timespec="microseconds")


def parse_time(text: str | None) -> datetime | None:
    """A time back from :func:`iso`."""
    return None if text is None else datetime.fromisoformat(text)


def memory_from_row(row: sqlite3.Row | tuple[Any, ...]) -> StoredMemory | None:
    """A :class:`StoredMemory` from a row of :data:`MEMORY_COLUMNS`; ``None`` (and a warning)
    when the row cannot be read (:func:`~memreader.stores.records.unless_broken`)."""
    return unless_broken("memory", row[14], row[13], lambda: _memory(row))


def _memory(row: sqlite3.Row | tuple[Any, ...]) -> StoredMemory:
    item = item_from_json(row[1], from_blob(row[2]) if row[2] is not None else None)
    recorded = parse_time(row[5])
    assert recorded is not None  # NOT NULL column
    return StoredMemory(
        item=item,
        status=row[3],
        content_hash=row[4],
        recorded_at=recorded,
        valid_from=parse_time(row[6]),
        valid_to=parse_time(row[7]),
        retired_at=parse_time(row[8]),
        superseded_by=row[9],
        importance=row[10],
        importance_reason=row[11],
        reinforced=row[12],
    )


def history_from_row(row: tuple[Any, ...]) -> HistoryEntry | None:
    """A :class:`HistoryEntry` from ``memory_id, event, old_memory, new_memory, at, reason,
    source_ids``; ``None`` (and a warning) when the row cannot be read."""
    return unless_broken("history entry of memory", "", row[0], lambda: _entry(row))


def _entry(row: tuple[Any, ...]) -> HistoryEntry:
    at = parse_time(row[4])
    assert at is not None  # NOT NULL column
    return HistoryEntry(
        memory_id=row[0],
        event=row[1],
        old_memory=row[2],
        new_memory=row[3],
        at=at,
        reason=row[5],
        source_ids=tuple(json.loads(row[6])),
    )


def vector_row(row: tuple[Any, ...]) -> VectorRow:
    """A :data:`VectorRow` of the rowid and :data:`VECTOR_COLUMNS` (a deleted row: all but
    the rowid ``NULL``, read as a row with no vector)."""
    moment = time_of(row[0], row[5]) if row[2] is not None else None
    if moment is None:  # deleted, or a time that cannot be read: no vector to search
        return (row[0], b"", "expired", "", "", 0.0, "", ("", "", "private"), None, None)
    scope = (row[7], row[8], row[9])
    at = moment.timestamp()
    return (row[0], row[1] or b"", row[2], row[3], row[4], at, row[6], scope, row[10], moment)


def time_of(rowid: int, text: str | None) -> datetime | None:
    """A row's stored time, ``None`` (and a warning naming the row) when it cannot be read."""
    if isinstance(text, str):
        # The usual case first, without the wrapper (a search reads ~100 candidates' times).
        try:
            return datetime.fromisoformat(text)
        except ValueError:
            pass
    return unless_broken("memory at rowid", "(see its row)", rowid, lambda: _parsed(text))


def _parsed(text: str | None) -> datetime:
    moment = parse_time(text)
    if moment is None:
        raise ValueError("no time")
    return moment

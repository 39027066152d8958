"""The PostgreSQL store's tables, and the conversions between its rows and memreader's types.

- ``memreader_memories``: one row per memory (the item JSON without its vector, which is a
  pgvector ``vector`` beside it), with a partial UNIQUE index on ``(user_id, memory_type,
  content_hash)`` over active rows (two writers can never both add one memory), an HNSW index
  (cosine) on the vector, made when the store's dimension is known, and a ``tsvector`` with a
  GIN index for full text: ``to_tsvector('simple', ...)`` not of the raw text but of its terms
  (:func:`~memreader.retrieval.terms.index_text`: NFKC- and case-folded words, Chinese,
  Japanese and Korean as overlapping bigrams), written with the row, so both stores match the
  same terms. Schema 1 generated it from the raw text (a CJK clause was one "word"):
  :mod:`~memreader.stores.postgres.upgrade` rebuilds it on open. Schema 3 added each memory's
  scope (``agent_id``, ``task_id``, "" for none, and ``visibility``: :mod:`memreader.scopes`),
  which searches filter by (``ADD COLUMN IF NOT EXISTS`` below gives an older table them, as
  unscoped private memories); a scoped memory's ``content_hash`` covers its scope
  (:func:`~memreader.scopes.scoped_hash`), so the UNIQUE index keeps one active memory per
  owner, type, text and scope.
- ``memreader_keys``: the support keys of each memory (``doc:``, ``session:``, ``message:``,
  ``input:``), what forget and ``replaces`` look up.
- ``memreader_history``: one row per change.
- ``memreader_meta``: the schema version and the vector dimension.
- ``memreader_categories``: each owner's categories (description, its vector as ``real[]``:
  a ``vector`` column needs one dimension, and the descriptions' embedder need not be the
  memories'), the summary and how it was made; ``memreader_category_links``: which memories
  each covers, removed with the memory (``ON DELETE CASCADE``: purge) or the category. Added
  after the first release: ``CREATE ... IF NOT EXISTS`` on every open adds them to an older
  database, so they did not move the schema version (schema 2 did: the ``fts`` column holds
  terms).
- ``memreader_memory_pins``: the memories an operator pinned (the budget never expires them:
  :mod:`memreader.stores.lifecycle`), removed with the memory (``ON DELETE CASCADE``); added
  like the categories tables.

The tables are prefixed: a PostgreSQL database is often shared with other applications.
"""

from __future__ import annotations

import json
import re
from datetime import datetime, timezone
from typing import Any
from urllib.parse import parse_qsl, urlsplit

from memreader.stores.base import HistoryEntry
from memreader.stores.records import StoredMemory, item_with_vector, unless_broken

__all__ = [
    "DIMENSION_LOCK",
    "HNSW_MAX_DIMENSION",
    "MEMORY_COLUMNS",
    "SCHEMA",
    "SCHEMA_LOCK",
    "SCHEMA_OBJECTS",
    "SCHEMA_VERSION",
    "UPGRADES_FROM",
    "history_from_row",
    "index_sql",
    "memory_from_row",
    "parse_vector",
    "safe_url",
    "scrub",
    "vector_text",
]

SCHEMA_VERSION = "3"

#: The schema versions :mod:`~memreader.stores.postgres.upgrade` brings to
#: :data:`SCHEMA_VERSION`.
UPGRADES_FROM = frozenset({"1", "2"})

#: Advisory lock keys (transaction scoped): creating the schema, fixing the dimension. Owner
#: locks use ``hashtextextended(user_id, 0)``; these two constants sit outside its range only
#: by chance, which is harmless: a collision makes two transactions queue, never corrupts.
SCHEMA_LOCK = 0x6D656D7265616472  # "memreadr"
DIMENSION_LOCK = SCHEMA_LOCK + 1

#: pgvector's HNSW indexes ``vector`` columns of at most this many dimensions.
HNSW_MAX_DIMENSION = 2000

SCHEMA = """
CREATE EXTENSION IF NOT EXISTS vector;
CREATE TABLE IF NOT EXISTS memreader_meta (key text PRIMARY KEY, value text NOT NULL);
CREATE TABLE IF NOT EXISTS memreader_memories (
    rowid bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    id text NOT NULL,
    user_id text NOT NULL,
    session_id text NOT NULL,
    agent_id text NOT NULL DEFAULT '',
    task_id text NOT NULL DEFAULT '',
    visibility text NOT NULL DEFAULT 'private' CHECK (visibility IN ('private', 'shared')),
    memory_type text NOT NULL,
    memory text NOT NULL,
    content_hash text NOT NULL,
    status text NOT NULL CHECK (status IN ('active', 'superseded', 'expired')),
    valid_from timestamptz,
    valid_to timestamptz,
    recorded_at timestamptz NOT NULL,
    retired_at timestamptz,
    superseded_by text,
    importance double precision,
    importance_reason text,
    reinforced integer NOT NULL DEFAULT 0,
    embedding vector,
    embedding_model text,
    supports text NOT NULL,
    item text NOT NULL,
    fts tsvector,
    UNIQUE (user_id, id)
);
ALTER TABLE memreader_memories
    ADD COLUMN IF NOT EXISTS agent_id text NOT NULL DEFAULT '',
    ADD COLUMN IF NOT EXISTS task_id text NOT NULL DEFAULT '',
    ADD COLUMN IF NOT EXISTS visibility text NOT NULL DEFAULT 'private'
        CHECK (visibility IN ('private', 'shared'));
CREATE INDEX IF NOT EXISTS memreader_memories_owner_scope
    ON memreader_memories (user_id, task_id, agent_id, status);
CREATE UNIQUE INDEX IF NOT EXISTS memreader_memories_active_hash
    ON memreader_memories (user_id, memory_type, content_hash) WHERE status = 'active';
CREATE INDEX IF NOT EXISTS memreader_memories_owner
    ON memreader_memories (user_id, status, memory_type);
CREATE INDEX IF NOT EXISTS memreader_memories_retired ON memreader_memories (status, retired_at);
CREATE INDEX IF NOT EXISTS memreader_memories_owner_recent ON memreader_memories (user_id, rowid);
CREATE INDEX IF NOT EXISTS memreader_memories_fts ON memreader_memories USING gin (fts);
CREATE TABLE IF NOT EXISTS memreader_keys (
    key text NOT NULL,
    memory_rowid bigint NOT NULL REFERENCES memreader_memories (rowid) ON DELETE CASCADE,
    PRIMARY KEY (key, memory_rowid)
);
CREATE INDEX IF NOT EXISTS memreader_keys_memory ON memreader_keys (memory_rowid);
CREATE TABLE IF NOT EXISTS memreader_history (
    id bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    user_id text NOT NULL,
    memory_id text NOT NULL,
    event text NOT NULL,
    old_memory text,
    new_memory text,
    at timestamptz NOT NULL,
    reason text NOT NULL,
    source_ids text NOT NULL
);
CREATE INDEX IF NOT EXISTS memreader_history_memory
    ON memreader_history (user_id, memory_id, id);
CREATE TABLE IF NOT EXISTS memreader_categories (
    user_id text NOT NULL,
    name text NOT NULL,
    description text NOT NULL,
    embedding real[],
    summary text NOT NULL DEFAULT '',
    summary_kind text NOT NULL DEFAULT 'empty'
        CHECK (summary_kind IN ('llm', 'deterministic', 'empty')),
    summary_note text,
    updated_at timestamptz,
    PRIMARY KEY (user_id, name)
);
CREATE TABLE IF NOT EXISTS memreader_category_links (
    user_id text NOT NULL,
    name text NOT NULL,
    memory_id text NOT NULL,
    PRIMARY KEY (user_id, name, memory_id),
    FOREIGN KEY (user_id, name) REFERENCES memreader_categories (user_id, name)
        ON DELETE CASCADE,
    FOREIGN KEY (user_id, memory_id) REFERENCES memreader_memories (user_id, id)
        ON DELETE CASCADE
);
CREATE INDEX IF NOT EXISTS memreader_category_links_memory
    ON memreader_category_links (user_id, memory_id);
CREATE TABLE IF NOT EXISTS memreader_memory_pins (
    user_id text NOT NULL,
    memory_id text NOT NULL,
    pinned_at timestamptz NOT NULL,
    PRIMARY KEY (user_id, memory_id),
    FOREIGN KEY (user_id, memory_id) REFERENCES memreader_memories (user_id, id)
        ON DELETE CASCADE
);
"""

#: The tables and indexes :data:`SCHEMA` makes (what a current database holds).
SCHEMA_OBJECTS = frozenset(
    re.findall(r"CREATE (?:UNIQUE )?(?:TABLE|INDEX) IF NOT EXISTS (\w+)", SCHEMA)
)

#: The columns :func:`memory_from_row` reads, in order.
MEMORY_COLUMNS = (
    "rowid, item, embedding::text, status, content_hash, recorded_at, valid_from, valid_to, "
    "retired_at, superseded_by, importance, importance_reason, reinforced, id, user_id"
)


def index_sql(dimension: int) -> list[str]:
    """The statements that fix the vector column to ``dimension`` and index it (HNSW, cosine)."""
    return [
        f"ALTER TABLE memreader_memories ALTER COLUMN embedding TYPE vector({int(dimension)})",
        "CREATE INDEX IF NOT EXISTS memreader_memories_hnsw ON memreader_memories "
        "USING hnsw (embedding vector_cosine_ops)",
    ]


def _password(url: str) -> str | None:
    try:
        parts = urlsplit(url)
        query = dict(parse_qsl(parts.query))
        return parts.password or query.get("password") or None
    except ValueError:
        return None


def safe_url(url: str) -> str:
    """``url`` without its password or query (what errors and reprs show): the user, host,
    port and database only.

    >>> safe_url("postgresql://ana:s3cret@db.example:5432/mem?sslmode=require")
    'postgresql://ana@db.example:5432/mem'
    """
    try:
        parts = urlsplit(url)
        host = parts.hostname or ""
        port = f":{parts.port}" if parts.port else ""
        user = f"{parts.username}@" if parts.username else ""
        query = dict(parse_qsl(parts.query))
    except ValueError:
        return "postgresql://(unparsable URL)"
    where = host + port if host else f"(socket {query.get('host', 'default')})"
    return f"{parts.scheme}://{user}{where}{parts.path}"


def scrub(message: str, url: str) -> str:
    """``message`` with the password of ``url`` (if any) masked, and the URL itself shown
    without it: driver messages must never carry a secret into an error or a log."""
    text = message.replace(url, safe_url(url))
    password = _password(url)
    return text.replace(password, "***") if password else text


def vector_text(vector: list[float]) -> str:
    """``vector`` in pgvector's text form (``[1.0,2.5]``), what a ``%s::vector`` parameter reads.

    >>> vector_text([1, 0.5])
    '[1.0,0.5]'
    """
    return "[" + ",".join(repr(float(x)) for x in vector) + "]"


def parse_vector(text: str | None) -> list[float] | None:
    """A vector back from pgvector's text form (float32 precision, as stored).

    >>> parse_vector("[1,0.5]"), parse_vector(None)
    ([1.0, 0.5], None)
    """
    if text is None:
        return None
    body = text.strip()[1:-1]
    return [float(x) for x in body.split(",")] if body else []


def memory_from_row(row: tuple[Any, ...]) -> StoredMemory | None:
    """A :class:`StoredMemory` from a row of :data:`MEMORY_COLUMNS`; ``None`` (and a warning)
    when the row cannot be read (:func:`~memreader.stores.records.unless_broken`)."""
    return unless_broken("memory", row[14], row[13], lambda: _memory(row))


def _memory(row: tuple[Any, ...]) -> StoredMemory:
    item = item_with_vector(
        json.loads(row[1]), parse_vector(row[2]) if row[2] is not None else None
    )
    return StoredMemory(
        item=item,
        status=row[3],
        content_hash=row[4],
        recorded_at=_utc(row[5]),
        valid_from=_utc(row[6]) if row[6] is not None else None,
        valid_to=_utc(row[7]) if row[7] is not None else None,
        retired_at=_utc(row[8]) if row[8] is not None else None,
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
    return HistoryEntry(
        memory_id=row[0],
        event=row[1],
        old_memory=row[2],
        new_memory=row[3],
        at=_utc(row[4]),
        reason=row[5],
        source_ids=tuple(json.loads(row[6])),
    )


def _utc(value: datetime) -> datetime:
    return value.astimezone(timezone.utc)

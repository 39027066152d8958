"""Bringing an older PostgreSQL store's schema to the current one, on open, in the opening
transaction (a failure leaves the database as it was).

Schema 1 to 2: the ``fts`` column was generated from the raw text, in which PostgreSQL's
parser sees a whole Chinese or Japanese clause as one word (``咖啡`` found nothing). It becomes
a plain column of the text's terms (:func:`~memreader.retrieval.terms.index_text`, written with
each row by the store), rebuilt here from the stored rows :data:`BATCH` at a time (memory stays
bounded whatever the store's size), and its GIN index made again.

Schema 2 to 3: the scope columns (:mod:`memreader.scopes`), which :data:`SCHEMA` adds to an
older table (``ADD COLUMN IF NOT EXISTS``, in the same transaction, before this runs): every
stored memory is unscoped and private, what the columns' defaults say, so only the version
moves here.
"""

from __future__ import annotations

import logging
from typing import Any

import psycopg

from memreader.retrieval.terms import index_text
from memreader.stores.postgres.schema import SCHEMA_LOCK, SCHEMA_VERSION, UPGRADES_FROM

__all__ = ["BATCH", "upgrade_schema"]

#: Rows whose terms one statement writes while rebuilding the text index.
BATCH = 1_000

_log = logging.getLogger(__name__)

Connection = psycopg.Connection[Any]


def upgrade_schema(conn: Connection) -> str | None:
    """Bring the schema to :data:`SCHEMA_VERSION` when it is at a version this knows
    (:data:`UPGRADES_FROM`), under the schema lock (two processes opening one old database
    upgrade it once: the second finds it done); return the version now stored."""
    conn.execute("SELECT pg_advisory_xact_lock(%s)", (SCHEMA_LOCK,))
    row = conn.execute("SELECT value FROM memreader_meta WHERE key = 'schema'").fetchone()
    version = str(row[0]) if row else None
    if version not in UPGRADES_FROM:
        return version
    if version == "1":
        _rebuild_terms(conn)
    conn.execute("UPDATE memreader_meta SET value = %s WHERE key = 'schema'", (SCHEMA_VERSION,))
    return SCHEMA_VERSION


def _rebuild_terms(conn: Connection) -> None:
    """Schema 1 to 2: the ``fts`` column rebuilt from the stored rows' terms."""
    rows = conn.execute("SELECT count(*) FROM memreader_memories").fetchone()
    _log.info(
        "upgrading the store's schema 1 to %s: indexing the terms of %d memories",
        SCHEMA_VERSION,
        rows[0] if rows else 0,
    )
    # Dropping the generated column drops its GIN index; the plain one is filled below.
    conn.execute("ALTER TABLE memreader_memories DROP COLUMN fts")
    conn.execute("ALTER TABLE memreader_memories ADD COLUMN fts tsvector")
    last = 0
    while True:
        batch = conn.execute(
            "SELECT rowid, memory FROM memreader_memories WHERE rowid > %s ORDER BY rowid LIMIT %s",
            (last, BATCH),
        ).fetchall()
        if not batch:
            break
        conn.execute(
            "UPDATE memreader_memories m SET fts = to_tsvector('simple', t.terms) "
            "FROM unnest(%s::bigint[], %s::text[]) AS t(rowid, terms) WHERE m.rowid = t.rowid",
            ([r[0] for r in batch], [index_text(r[1]) for r in batch]),
        )
        last = batch[-1][0]
    conn.execute(
        "CREATE INDEX IF NOT EXISTS memreader_memories_fts ON memreader_memories USING gin (fts)"
    )

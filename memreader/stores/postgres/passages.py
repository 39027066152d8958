"""The PostgreSQL store's passage index (:mod:`memreader.stores.passages.rows`): one row per
memory it added, keyed by the memory's rowid (``ON DELETE CASCADE``: purge and erase remove it
with the memory): its passages' spans and their vectors, as ``bytea`` (fetched by rowid
for re-scoring, so no vector index is needed).

Its own schema step (:func:`ensure_passages`, on open when the table is missing), separate from
the memories' schema: an older database gains the table on open, and its memories, which have
no passage row, are scored by their own vector and their passages' words.
"""

from __future__ import annotations

from collections.abc import Collection
from typing import Any

import psycopg

from memreader.stores.passages.rows import (
    PassagePlan,
    passages_of_json,
    spans_from_blob,
    vectors_from_blob,
)
from memreader.stores.passages.scoring import PassageSet, span_rows
from memreader.stores.passages.words import passage_words

__all__ = ["PASSAGE_SCHEMA", "add_passages", "ensure_passages", "read_passages"]

Connection = psycopg.Connection[Any]

PASSAGE_SCHEMA = """
CREATE TABLE IF NOT EXISTS memreader_passages (
    memory_rowid bigint PRIMARY KEY
        REFERENCES memreader_memories (rowid) ON DELETE CASCADE,
    spans bytea NOT NULL,
    embedding_model text NOT NULL DEFAULT '',
    embeddings bytea
);
"""


def ensure_passages(conn: Connection, lock: int) -> None:
    """Create the passage table when it is missing (under the schema's advisory ``lock``);
    a current database is only read."""
    found = conn.execute("SELECT to_regclass('memreader_passages') IS NOT NULL").fetchone()
    if found is not None and found[0]:
        return
    conn.execute("SELECT pg_advisory_xact_lock(%s)", (lock,))
    conn.execute(PASSAGE_SCHEMA)


def add_passages(conn: Connection, plan: PassagePlan) -> int:
    """Inside the write's transaction: the planned passages of each memory it stored under
    that id, unless it has them already (a stored id keeps its text); how many gained them."""
    added = 0
    for (owner, memory_id), stored in plan.items():
        cursor = conn.execute(
            "INSERT INTO memreader_passages (memory_rowid, spans, embedding_model, embeddings) "
            "SELECT rowid, %s, %s, %s FROM memreader_memories WHERE user_id = %s AND id = %s "
            "ON CONFLICT (memory_rowid) DO NOTHING",
            (stored.spans, stored.model, stored.vectors, owner, memory_id),
        )
        added += max(cursor.rowcount, 0)
    return added


def read_passages(
    conn: Connection, candidates: Collection[tuple[int, float | None]]
) -> list[PassageSet]:
    """The :class:`PassageSet` of each candidate (rowid, the memory's cosine with the query);
    a memory stored before passages were (no row) has its passages cut from its item."""
    cosine = dict(candidates)
    rows = conn.execute(
        "SELECT m.rowid, m.memory, m.session_id, p.spans, p.embeddings, "
        "CASE WHEN p.spans IS NULL THEN m.item END FROM memreader_memories m "
        "LEFT JOIN memreader_passages p ON p.memory_rowid = m.rowid WHERE m.rowid = ANY(%s)",
        (list(cosine),),
    ).fetchall()
    sets: list[PassageSet] = []
    for rowid, text, session, spans, vectors, item in rows:
        if spans is not None:
            grid = spans_from_blob(bytes(spans))
            matrix = vectors_from_blob(bytes(vectors) if vectors else None, len(grid))
        else:
            try:
                grid, matrix = span_rows(passages_of_json(text, item)), None
            except (ValueError, AttributeError):
                continue  # a row that cannot be read has no passages to score
        sets.append(
            PassageSet(rowid, text, grid, matrix, cosine[rowid], passage_words(text, grid), session)
        )
    return sets

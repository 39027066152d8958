"""The PostgreSQL store's use records (:mod:`memreader.stores.usage`): the
``memreader_memory_use`` table, its own schema step (:func:`ensure_use`, on open when it is
missing: an older database gains it without a schema version change), each row removed with its
memory (``ON DELETE CASCADE``: purge, erase), and the statements that mark, read and weigh
use (:mod:`~memreader.stores.postgres.use_records` runs them)."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime
from typing import Any

import psycopg

from memreader.stores.usage import CHUNK, Usage, heat

Connection = psycopg.Connection[Any]

__all__ = ["USE_SCHEMA", "ensure_use", "mark_used", "read_heat", "read_usage"]

USE_SCHEMA = """
CREATE TABLE IF NOT EXISTS memreader_memory_use (
    memory_id text NOT NULL,
    user_id text NOT NULL,
    access_count integer NOT NULL DEFAULT 0,
    last_accessed_at timestamptz,
    PRIMARY KEY (user_id, memory_id),
    FOREIGN KEY (user_id, memory_id) REFERENCES memreader_memories (user_id, id)
        ON DELETE CASCADE
);
"""

# One upsert per chunk: the owner's memories among the ids (unknown ones match no row), each
# counted once more; the last use never moves back (GREATEST ignores NULL).
_MARK = """
INSERT INTO memreader_memory_use AS u (user_id, memory_id, access_count, last_accessed_at)
SELECT user_id, id, 1, %s FROM memreader_memories WHERE user_id = %s AND id = ANY(%s)
ON CONFLICT (user_id, memory_id) DO UPDATE SET
    access_count = u.access_count + 1,
    last_accessed_at = GREATEST(u.last_accessed_at, EXCLUDED.last_accessed_at)
"""


def ensure_use(conn: Connection, lock: int) -> None:
    """Create the use table when it is missing (under the schema's advisory ``lock``); a
    current database is only read."""
    found = conn.execute("SELECT to_regclass('memreader_memory_use') IS NOT NULL").fetchone()
    if found is not None and found[0]:
        return
    conn.execute("SELECT pg_advisory_xact_lock(%s)", (lock,))
    conn.execute(USE_SCHEMA)


def read_heat(
    conn: Connection, rowids: Sequence[int], now: datetime, weight: float
) -> dict[int, float]:
    """The heat of the memories at ``rowids`` (search candidates, one owner's), by rowid;
    nothing is read at weight 0 (heat then counts for nothing)."""
    if weight <= 0 or not rowids:
        return {}
    rows = conn.execute(
        "SELECT m.rowid, u.access_count, u.last_accessed_at FROM memreader_memories m "
        "JOIN memreader_memory_use u ON u.user_id = m.user_id AND u.memory_id = m.id "
        "WHERE m.rowid = ANY(%s)",
        (list(rowids),),
    ).fetchall()
    return {r[0]: heat(Usage(int(r[1]), r[2]), now) for r in rows}


def mark_used(conn: Connection, ids: Sequence[str], owner: str, at: datetime) -> int:
    """Inside a write transaction holding ``owner``'s lock: count one use of each of
    ``owner``'s memories ``ids``; how many were marked."""
    marked = 0
    for start in range(0, len(ids), CHUNK):
        marked += conn.execute(_MARK, (at, owner, list(ids[start : start + CHUNK]))).rowcount
    return marked


def read_usage(conn: Connection, ids: Sequence[str], owner: str) -> dict[str, Usage]:
    """The use rows of ``owner``'s memories ``ids``."""
    rows = conn.execute(
        "SELECT memory_id, access_count, last_accessed_at FROM memreader_memory_use "
        "WHERE user_id = %s AND memory_id = ANY(%s)",
        (owner, list(ids)),
    ).fetchall()
    return {r[0]: Usage(int(r[1]), r[2]) for r in rows}

"""The embedded store's use records (:mod:`memreader.stores.usage`): the ``memory_use`` table,
its own schema step (:data:`USE_SCHEMA`, run on open when it is missing: an older store file
gains it without a schema version change), a trigger that removes a memory's row with it
(purge, erase), and the statements :class:`~memreader.stores.sqlite.store.SQLiteStore` runs."""

from __future__ import annotations

import sqlite3
from collections.abc import Sequence
from datetime import datetime

from memreader.stores.sqlite.handle import SQLiteHandle
from memreader.stores.sqlite.schema import iso, parse_time
from memreader.stores.usage import CHUNK, Usage, heat

__all__ = [
    "USE_SCHEMA",
    "mark_used",
    "read_heat",
    "read_usage",
    "record_uses",
    "usage_of",
    "use_current",
]

USE_SCHEMA = """
CREATE TABLE IF NOT EXISTS memory_use (
    memory_id TEXT NOT NULL,
    user_id TEXT NOT NULL,
    access_count INTEGER NOT NULL DEFAULT 0,
    last_accessed_at TEXT,
    PRIMARY KEY (user_id, memory_id)
) WITHOUT ROWID;
CREATE TRIGGER IF NOT EXISTS memory_use_removed AFTER DELETE ON memories
BEGIN DELETE FROM memory_use WHERE user_id = old.user_id AND memory_id = old.id; END;
"""

# One upsert per chunk: the owner's memories among the ids (unknown ones match no row), each
# counted once more; the last use never moves back (iso text orders as time).
_MARK = """
INSERT INTO memory_use (user_id, memory_id, access_count, last_accessed_at)
SELECT user_id, id, 1, ? FROM memories WHERE user_id = ? AND id IN ({marks})
ON CONFLICT (user_id, memory_id) DO UPDATE SET
    access_count = memory_use.access_count + 1,
    last_accessed_at = max(COALESCE(memory_use.last_accessed_at, ''), excluded.last_accessed_at)
"""


def use_current(conn: sqlite3.Connection) -> bool:
    """Whether the file holds the use table and its trigger (read without a lock)."""
    names = {row[0] for row in conn.execute("SELECT name FROM sqlite_master")}
    return {"memory_use", "memory_use_removed"} <= names


def mark_used(conn: sqlite3.Connection, ids: Sequence[str], owner: str, at: datetime) -> int:
    """Inside a write transaction: count one use of each of ``owner``'s memories ``ids``;
    how many were marked."""
    marked = 0
    for start in range(0, len(ids), CHUNK):
        chunk = list(ids[start : start + CHUNK])
        sql = _MARK.format(marks=", ".join("?" * len(chunk)))
        marked += conn.execute(sql, (iso(at), owner, *chunk)).rowcount
    return marked


def read_usage(conn: sqlite3.Connection, ids: Sequence[str], owner: str) -> dict[str, Usage]:
    """The use rows of ``owner``'s memories ``ids``."""
    found: dict[str, Usage] = {}
    for start in range(0, len(ids), CHUNK):
        chunk = list(ids[start : start + CHUNK])
        rows = conn.execute(
            "SELECT memory_id, access_count, last_accessed_at FROM memory_use "
            f"WHERE user_id = ? AND memory_id IN ({', '.join('?' * len(chunk))})",
            (owner, *chunk),
        )
        found.update({r[0]: Usage(int(r[1]), parse_time(r[2])) for r in rows})
    return found


def read_heat(
    conn: sqlite3.Connection, rowids: Sequence[int], now: datetime, weight: float
) -> dict[int, float]:
    """The heat of the memories at ``rowids`` (search candidates, one owner's), by rowid;
    nothing is read at weight 0 (heat then counts for nothing)."""
    if weight <= 0 or not rowids:
        return {}
    rows = conn.execute(
        "SELECT m.rowid, u.access_count, u.last_accessed_at FROM memories m JOIN memory_use u "
        "ON u.user_id = m.user_id AND u.memory_id = m.id "
        f"WHERE m.rowid IN ({', '.join('?' * len(rowids))})",
        list(rowids),
    )
    return {r[0]: heat(Usage(int(r[1]), parse_time(r[2])), now) for r in rows}


def record_uses(store: SQLiteHandle, ids: list[str], owner: str, at: datetime) -> int:
    # The store's connection named: a write that stages nothing and does not count as a
    # change of the memories, so the search caches (vectors, word counts, passages) stay.
    with store._transaction(store._conn) as conn:
        return mark_used(conn, ids, owner, at)


def usage_of(store: SQLiteHandle, ids: list[str], owner: str) -> dict[str, Usage]:
    with store._transaction(write=False) as conn:
        return read_usage(conn, ids, owner)

"""The embedded store's erase steps (:mod:`memreader.stores.erase_rules`): the SQL of each
place a memory's text lives in the SQLite file, run inside the erasing write transaction, and
the file-level steps that make removed text leave the file's bytes (:func:`settle_file`).

Why the file-level steps: a deleted row's bytes stay in the page it lived on (or a freed page)
until SQLite reuses the space, and FTS5 never rewrites the index segment that holds a deleted
row's terms: it adds a delete marker in a newer segment and leaves the terms where they were
until segments are merged. So the store opens every connection with ``secure_delete`` (SQLite
overwrites what it frees with zeros), an erasure merges the whole full-text index into one
segment (FTS5 ``optimize``: the segments holding the erased terms are rewritten without them
and freed, so zeroed), and once it committed the WAL is checkpointed into the file and
truncated (``wal_checkpoint(TRUNCATE)``): the WAL held the pages as they were. A reader holding
an old snapshot open blocks the truncation: the receipt then says so.
"""

from __future__ import annotations

import sqlite3
from typing import Any, Protocol

from memreader.stores.erase_rules import SCRUB_NOTE
from memreader.stores.erasure import Tally
from memreader.stores.sqlite.schema import iso

__all__ = [
    "EraseTransaction",
    "erase",
    "facts",
    "optimize_text_index",
    "put_summary",
    "set_session",
    "settle_file",
    "successor",
    "summaries",
]


def optimize_text_index(conn: sqlite3.Connection, tally: Tally) -> None:
    """Inside the erasing transaction: merge the FTS5 index into one segment, so no segment
    keeps an erased memory's terms (their old pages are freed, and zeroed by
    ``secure_delete``). Its cost grows with the index: it rewrites all of it."""
    conn.execute("INSERT INTO memories_terms (memories_terms) VALUES ('optimize')")
    tally.file_steps.append("sqlite: secure_delete on (freed pages and cells are zeroed)")
    tally.file_steps.append("sqlite: FTS5 optimize (the text index rewritten without it)")


def settle_file(conn: sqlite3.Connection, path: str, tally: Tally) -> None:
    """After the erasing commit: checkpoint the WAL into the file and truncate it (the WAL
    held the erased pages as they were); the receipt says whether it could."""
    if path == ":memory:":
        tally.file_steps.append("sqlite: in-memory database (no file)")
        return
    busy, log, done = conn.execute("PRAGMA wal_checkpoint(TRUNCATE)").fetchone()
    if busy or (log > 0 and done < log):
        tally.file_steps.append(
            "sqlite: WAL checkpoint blocked by another connection's read; the WAL may hold "
            "erased pages until the next checkpoint (closing every connection runs one)"
        )
    else:
        tally.file_steps.append("sqlite: WAL checkpointed and truncated")


class EraseTransaction(Protocol):
    """What the erase steps use of the store's ``Changes`` (one write transaction): its
    connection, its tally, and the time it writes at."""

    conn: sqlite3.Connection
    tally: Tally
    owners: set[str]
    now: Any


def facts(tx: EraseTransaction, rowid: int) -> tuple[str, str | None, str]:
    text, successor, supports = tx.conn.execute(
        "SELECT memory, superseded_by, supports FROM memories WHERE rowid = ?", (rowid,)
    ).fetchone()
    return str(text), successor, str(supports)


def successor(tx: EraseTransaction, owner: str, memory_id: str) -> tuple[Any, ...] | None:
    row: tuple[Any, ...] | None = tx.conn.execute(
        "SELECT rowid, supports, item, superseded_by FROM memories WHERE user_id = ? AND id = ?",
        (owner, memory_id),
    ).fetchone()
    return row


def erase(
    tx: EraseTransaction, rowid: int, owner: str, memory_id: str, text: str, successor: str | None
) -> None:
    # Its text also sits in the history of the memories it replaced (new_memory) and of
    # the one that replaced it (old_memory): an erasure removes it there too.
    rewritten = tx.conn.execute(
        "UPDATE history SET new_memory = NULL WHERE user_id = ? AND new_memory = ? AND "
        "memory_id IN (SELECT id FROM memories WHERE user_id = ? AND superseded_by = ?)",
        (owner, text, owner, memory_id),
    ).rowcount
    rewritten += tx.conn.execute(
        "UPDATE history SET old_memory = NULL "
        "WHERE user_id = ? AND memory_id = ? AND old_memory = ?",
        (owner, successor, text),
    ).rowcount
    tx.tally.rewritten["neighbour_history"] += rewritten
    # Each place by hand, counted (the triggers on memories then find nothing left).
    steps = (
        ("keys", "DELETE FROM memory_keys WHERE memory_rowid = ?", (rowid,)),
        ("text_index", "DELETE FROM memories_terms WHERE rowid = ?", (rowid,)),
        ("passages", "DELETE FROM memory_passages WHERE memory_rowid = ?", (rowid,)),
        (
            "category_links",
            "DELETE FROM category_links WHERE user_id = ? AND memory_id = ?",
            (owner, memory_id),
        ),
        (
            "use_records",
            "DELETE FROM memory_use WHERE user_id = ? AND memory_id = ?",
            (owner, memory_id),
        ),
        (
            "pins",
            "DELETE FROM memory_pins WHERE user_id = ? AND memory_id = ?",
            (owner, memory_id),
        ),
        (
            "history",
            "DELETE FROM history WHERE user_id = ? AND memory_id = ?",
            (owner, memory_id),
        ),
        ("memories", "DELETE FROM memories WHERE rowid = ?", (rowid,)),
    )
    for place, sql, args in steps:
        tx.tally.count(place, tx.conn.execute(sql, args).rowcount)
    tx.owners.add(owner)


def summaries(tx: EraseTransaction, owner: str) -> list[tuple[str, str]]:
    rows = tx.conn.execute(
        "SELECT name, summary FROM categories WHERE user_id = ? AND summary != '' ORDER BY name",
        (owner,),
    )
    return [(str(name), str(summary)) for name, summary in rows]


def put_summary(tx: EraseTransaction, owner: str, name: str, summary: str) -> None:
    tx.conn.execute(
        "UPDATE categories SET summary = ?, summary_note = ?, updated_at = ?, "
        "summary_kind = CASE WHEN ? THEN 'empty' ELSE summary_kind END "
        "WHERE user_id = ? AND name = ?",
        (summary, SCRUB_NOTE, iso(tx.now), not summary.strip(), owner, name),
    )


def set_session(tx: EraseTransaction, rowid: int, session_id: str) -> None:
    tx.conn.execute("UPDATE memories SET session_id = ? WHERE rowid = ?", (session_id, rowid))

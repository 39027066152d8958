"""The PostgreSQL store's erase steps (:mod:`memreader.stores.erase_rules`): the SQL of each
place a memory's text lives in the database, run inside the erasing write transaction, and
what the database keeps after the commit (:data:`POSTGRES_RESIDUE`).

After the commit no query sees the erased text. Its bytes are another matter: PostgreSQL
deletes by marking a row version dead; the dead version (in the table, its TOAST table and its
indexes, the text index's lexemes included) stays in the data files until ``VACUUM`` prunes it
(autovacuum does, some time later), and even then the freed space in a page is not overwritten
until reused; the write-ahead log keeps the row as inserted until its segments are recycled,
and any WAL archive, replica or backup keeps it as long as they are kept. memreader cannot run
``VACUUM`` inside the erasing transaction (PostgreSQL refuses it there), so the receipt names
these places as ``residue`` and the README says what an operator runs to reach them.
"""

from __future__ import annotations

from typing import Any, Protocol

from memreader.stores.erase_rules import SCRUB_NOTE
from memreader.stores.erasure import Tally
from memreader.stores.postgres.operations import Connection

__all__ = [
    "POSTGRES_RESIDUE",
    "EraseTransaction",
    "erase",
    "facts",
    "put_summary",
    "set_session",
    "successor",
    "summaries",
]

#: What an erasure of the PostgreSQL store cannot reach (the receipt's ``residue``).
POSTGRES_RESIDUE = (
    "postgresql: dead row versions in the tables, TOAST and indexes until VACUUM prunes them "
    "(VACUUM FULL rewrites the tables; freed page space is not zeroed)",
    "postgresql: the write-ahead log until its segments are recycled, and any WAL archive, "
    "replica or backup as long as they are kept",
)


class EraseTransaction(Protocol):
    """What the erase steps use of the store's ``Changes`` (one write transaction): its
    connection, its tally, and the time it writes at."""

    conn: Connection
    tally: Tally
    now: Any


def facts(tx: EraseTransaction, rowid: int) -> tuple[str, str | None, str]:
    row = tx.conn.execute(
        "SELECT memory, superseded_by, supports FROM memreader_memories WHERE rowid = %s",
        (rowid,),
    ).fetchone()
    assert row is not None  # found in this transaction, under the owner's lock
    return str(row[0]), row[1], str(row[2])


def successor(tx: EraseTransaction, owner: str, memory_id: str) -> tuple[Any, ...] | None:
    row: tuple[Any, ...] | None = tx.conn.execute(
        "SELECT rowid, supports, item, superseded_by FROM memreader_memories "
        "WHERE user_id = %s AND id = %s",
        (owner, memory_id),
    ).fetchone()
    return row


def erase(
    tx: EraseTransaction, rowid: int, owner: str, memory_id: str, text: str, successor: str | None
) -> None:
    # Its text also sits in the history of the memories it replaced (new_memory) and of
    # the one that replaced it (old_memory): an erasure removes it there too.
    rewritten = tx.conn.execute(
        "UPDATE memreader_history SET new_memory = NULL WHERE user_id = %s "
        "AND new_memory = %s AND memory_id IN (SELECT id FROM memreader_memories "
        "WHERE user_id = %s AND superseded_by = %s)",
        (owner, text, owner, memory_id),
    ).rowcount
    rewritten += tx.conn.execute(
        "UPDATE memreader_history SET old_memory = NULL "
        "WHERE user_id = %s AND memory_id = %s AND old_memory = %s",
        (owner, successor, text),
    ).rowcount
    tx.tally.rewritten["neighbour_history"] += rewritten
    # Each place by hand, counted (ON DELETE CASCADE then finds nothing left); the text
    # index is the row's own tsvector column, so it goes with the row.
    by_rowid = (rowid,)
    by_id = (owner, memory_id)
    steps: tuple[tuple[str, str, tuple[Any, ...]], ...] = (
        ("keys", "DELETE FROM memreader_keys WHERE memory_rowid = %s", by_rowid),
        ("passages", "DELETE FROM memreader_passages WHERE memory_rowid = %s", by_rowid),
        (
            "category_links",
            "DELETE FROM memreader_category_links WHERE user_id = %s AND memory_id = %s",
            by_id,
        ),
        (
            "use_records",
            "DELETE FROM memreader_memory_use WHERE user_id = %s AND memory_id = %s",
            by_id,
        ),
        (
            "pins",
            "DELETE FROM memreader_memory_pins WHERE user_id = %s AND memory_id = %s",
            by_id,
        ),
        (
            "history",
            "DELETE FROM memreader_history WHERE user_id = %s AND memory_id = %s",
            by_id,
        ),
    )
    for place, sql, args in steps:
        tx.tally.count(place, tx.conn.execute(sql, args).rowcount)
    removed = tx.conn.execute(
        "DELETE FROM memreader_memories WHERE rowid = %s RETURNING fts IS NOT NULL", by_rowid
    ).fetchall()
    tx.tally.count("memories", len(removed))
    tx.tally.count("text_index", sum(1 for (indexed,) in removed if indexed))


def summaries(tx: EraseTransaction, owner: str) -> list[tuple[str, str]]:
    rows = tx.conn.execute(
        "SELECT name, summary FROM memreader_categories WHERE user_id = %s "
        "AND summary <> '' ORDER BY name",
        (owner,),
    ).fetchall()
    return [(str(name), str(summary)) for name, summary in rows]


def put_summary(tx: EraseTransaction, owner: str, name: str, summary: str) -> None:
    tx.conn.execute(
        "UPDATE memreader_categories SET summary = %s, summary_note = %s, updated_at = %s, "
        "summary_kind = CASE WHEN %s THEN 'empty' ELSE summary_kind END "
        "WHERE user_id = %s AND name = %s",
        (summary, SCRUB_NOTE, tx.now, not summary.strip(), owner, name),
    )


def set_session(tx: EraseTransaction, rowid: int, session_id: str) -> None:
    tx.conn.execute(
        "UPDATE memreader_memories SET session_id = %s WHERE rowid = %s", (session_id, rowid)
    )

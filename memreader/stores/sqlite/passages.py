"""The embedded store's passage index (:mod:`memreader.stores.passages.rows`): one row per
memory it added, keyed by the memory's rowid: its passages' spans and their vectors.

Its own schema step (:data:`PASSAGE_SCHEMA`, run on open when the table is missing), separate
from the memories' schema: an older store file gains the table on open, and its memories,
which have no passage row, are scored by their own vector and their passages' words
(:func:`read_passages` cuts their passages from the item). A trigger removes a memory's
passages with it (purge, erase), whatever removes the row.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Collection

import numpy as np

from memreader.stores.passages.rows import (
    PassagePlan,
    passages_of_json,
    spans_from_blob,
    vectors_from_blob,
)
from memreader.stores.passages.scoring import PassageSet, span_rows
from memreader.stores.passages.words import passage_words

__all__ = [
    "PASSAGE_CACHE",
    "PASSAGE_SCHEMA",
    "PassageCache",
    "add_passages",
    "passages_current",
    "read_passages",
]

PASSAGE_SCHEMA = """
CREATE TABLE IF NOT EXISTS memory_passages (
    memory_rowid INTEGER PRIMARY KEY,
    spans BLOB NOT NULL,
    embedding_model TEXT NOT NULL DEFAULT '',
    embeddings BLOB
);
CREATE TRIGGER IF NOT EXISTS memory_passages_removed AFTER DELETE ON memories
BEGIN DELETE FROM memory_passages WHERE memory_rowid = old.rowid; END;
"""

#: Rowids per query (well under SQLite's parameter limit).
CHUNK = 500
#: Memories whose passages one store keeps between searches (then it starts again): ~35 KiB
#: each for a fast-mode window of ~20 messages and 384 dimensions, so ~70 MiB at most.
PASSAGE_CACHE = 2_000


def passages_current(conn: sqlite3.Connection) -> bool:
    """Whether the file holds the passage table and its trigger (read without a lock)."""
    names = {row[0] for row in conn.execute("SELECT name FROM sqlite_master")}
    return {"memory_passages", "memory_passages_removed"} <= names


def add_passages(conn: sqlite3.Connection, plan: PassagePlan) -> int:
    """Inside the write's transaction: the planned passages of each memory it stored under
    that id (a memory it reinforced, or found already stored, gets none), unless the memory
    has them already (a stored id keeps its text, so its passages cannot be stale). Returns
    how many memories gained passages."""
    added = 0
    for (owner, memory_id), stored in plan.items():
        cursor = conn.execute(
            "INSERT OR IGNORE INTO memory_passages (memory_rowid, spans, embedding_model, "
            "embeddings) SELECT rowid, ?, ?, ? FROM memories WHERE user_id = ? AND id = ?",
            (stored.spans, stored.model, stored.vectors, owner, memory_id),
        )
        added += cursor.rowcount
    return added


def read_passages(
    conn: sqlite3.Connection, candidates: Collection[tuple[int, float | None]]
) -> list[PassageSet]:
    """The :class:`PassageSet` of each candidate (rowid, the memory's cosine with the query):
    its text, passages and their vectors; a memory stored before passages were (no row) has
    its passages cut from its item, without vectors."""
    cosine = dict(candidates)
    ids = list(cosine)
    sets: list[PassageSet] = []
    for start in range(0, len(ids), CHUNK):
        chunk = ids[start : start + CHUNK]
        rows = conn.execute(
            "SELECT m.rowid, m.memory, m.session_id, p.spans, p.embeddings, "
            "CASE WHEN p.spans IS NULL THEN m.item END FROM memories m "
            "LEFT JOIN memory_passages p ON p.memory_rowid = m.rowid "
            f"WHERE m.rowid IN ({', '.join('?' * len(chunk))})",
            chunk,
        )
        for rowid, text, session, spans, vectors, item in rows:
            if spans is not None:
                grid = spans_from_blob(spans)
                matrix = vectors_from_blob(vectors, len(grid))
            else:
                try:
                    grid, matrix = span_rows(passages_of_json(text, item)), None
                except (ValueError, AttributeError):
                    continue  # a row that cannot be read has no passages to score
            sets.append(
                PassageSet(
                    rowid, text, grid, matrix, cosine[rowid], passage_words(text, grid), session
                )
            )
    return sets


class PassageCache:
    """The passages of the memories recent searches read, kept until any write by any
    process (``stamp``: the connection's ``data_version`` and this store's count of commits,
    so a rowid reused after a deletion is never served stale) or until it holds
    :data:`PASSAGE_CACHE` memories: a search that repeats its candidates reads no blob."""

    def __init__(self) -> None:
        self._sets: dict[int, PassageSet] = {}
        # Each kept set's vector columns (one vector a passage or two side by side), -1 when
        # it has none or one is not finite: a query of a dimension they fit never reads the
        # memory's own cosine (every passage gets one of its own).
        self._columns: dict[int, int] = {}
        self._stamp: tuple[int, int] | None = None

    def read(
        self,
        conn: sqlite3.Connection,
        candidates: Collection[tuple[int, float | None]],
        stamp: tuple[int, int],
        dim: int | None = None,
    ) -> list[PassageSet]:
        """:func:`read_passages`, from the cache where it can; ``dim``: the query vector's
        (``None``: no query vector)."""
        if stamp != self._stamp or len(self._sets) > PASSAGE_CACHE:
            self._sets.clear()
            self._columns.clear()
            self._stamp = stamp
        missing = [(rowid, None) for rowid, _ in candidates if rowid not in self._sets]
        if missing:
            for fresh in read_passages(conn, missing):
                self._sets[fresh.rowid] = fresh
                self._columns[fresh.rowid] = _columns(fresh.vectors)
        # The memory's own cosine counts only for a candidate whose passages have no vector
        # the query can be compared with (and only with a query vector): the others are
        # handed out as kept, not copied with it (a search has ~100 candidates: issue 42).
        # Nothing changes a kept set. The constructor, not dataclasses.replace (three times
        # the cost).
        sets, columns = self._sets, self._columns
        found: list[PassageSet] = []
        for rowid, cosine in candidates:
            kept = sets.get(rowid)
            if kept is None:
                continue
            if dim is None or (dim > 0 and columns[rowid] in (dim, 2 * dim)):
                found.append(kept)
            else:
                found.append(
                    PassageSet(
                        kept.rowid,
                        kept.text,
                        kept.spans,
                        kept.vectors,
                        cosine,
                        kept.words,
                        kept.session,
                    )
                )
        return found


def _columns(vectors: np.ndarray | None) -> int:
    """The columns of a memory's passage vectors, -1 without usable ones (none, not one row
    a passage, or not finite)."""
    if vectors is None or vectors.ndim != 2 or not len(vectors):
        return -1
    return int(vectors.shape[1]) if bool(np.isfinite(vectors).all()) else -1

"""The full-text half of the embedded store's search: the rowids of an owner's best matches
for a query's words, by FTS5's ``bm25``, within the budget a search may rank
(:data:`~memreader.stores.sqlite.operations.TEXT_BUDGET`; the words taken rarest first,
:func:`~memreader.stores.text_match.affordable_words`).

Each word's ``bm25`` is read once and kept until the next write by any process
(:class:`TextIndex`): FTS5 scores ``"a" OR "b" OR "c"`` row by row as the sum of each phrase's
share, added in the query's order, and each share is what ``bm25`` gives the phrase searched
alone (same row count, same document length, same average; the negation is exact), so the
sums made here are the very floats FTS5 makes. A search whose words were all seen since the
last write reads no ``bm25`` at all: on 2,000 memories, three words in ~600 rows cost ~0.7 ms
of ``bm25`` each search (issue 42). Ties keep FTS5's order, rowid ascending, as SQLite's
``ORDER BY bm25(...)`` does; then the owner and the filters are checked on the best rows
first, in growing chunks, until ``n`` pass.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from memreader.stores.text_match import affordable_words, fts_match, fts_words

__all__ = ["SCORE_CACHE", "TextIndex"]

#: Words whose row counts one store keeps between writes (then it starts again).
WORD_CACHE = 50_000
#: Rows whose per-word ``bm25`` one store keeps between writes, over all words (16 bytes
#: each: ~3 MiB), then it starts again.
SCORE_CACHE = 200_000
#: The most rowids one statement checks against the owner and the filters.
CHECK_CHUNK = 500

#: A ``WHERE`` fragment over ``memories m`` (starting with ``AND``) and its parameters.
Where = tuple[str, list[Any]]

#: What a search already knows of some rowids without a statement: of ``rowids``, those that
#: are the owner's and pass the filters, and those it cannot tell (a statement checks them).
Known = Callable[[Sequence[int]], tuple[set[int], list[int]]]


class TextIndex:
    """The full-text search over ``conn``'s ``memories_terms``, with what it keeps between
    searches: each word's row count and each affordable word's ``bm25`` by row."""

    def __init__(self, conn: sqlite3.Connection) -> None:
        self.conn = conn
        self._stamp: tuple[int, int, int] | None = None
        self._counts: dict[str, int] = {}
        self._scores: dict[str, tuple[np.ndarray, np.ndarray]] = {}
        self._held = 0

    def search(
        self,
        query: str,
        owner: str,
        where: Where,
        n: int,
        budget: int,
        commits: int,
        known: Known | None = None,
    ) -> list[int]:
        """The rowids of ``owner``'s best ``n`` full-text matches that ``where`` keeps: by
        ``bm25`` over every row holding the words the budget affords; when it affords none of
        them, the owner's newest rows holding them, ranked by ``bm25`` among themselves
        (:meth:`newest`). ``commits``: the store's count of its own commits (with the file's
        ``data_version``, what says the kept scores are current); ``known``: what the caller
        knows of rows without a statement (the owner's cached vectors, issue 42)."""
        stamp = (self.conn.execute("PRAGMA data_version").fetchone()[0], commits, budget)
        if stamp != self._stamp or len(self._counts) > WORD_CACHE or self._held > SCORE_CACHE:
            self._counts.clear()
            self._scores.clear()
            self._held = 0
            self._stamp = stamp
        words = fts_words(query)
        rows = self._rows_holding(words, budget)
        kept = affordable_words(words, rows, budget)
        held = [w for w in words if rows.get(w, 0) > 0]
        if not kept and held:
            # Every word of the query is past the budget: rather than find nothing, rank the
            # owner's newest rows holding them (bounded by the budget).
            return self.newest(held, owner, where, budget, n)
        return self._owned(self._ranked(kept), owner, where, n, known) if kept else []

    def newest(
        self, words: Sequence[str], owner: str, where: Where, budget: int, n: int
    ) -> list[int]:
        """The best ``n`` by bm25 among ``owner``'s newest ``budget`` rows holding any of
        ``words`` that ``where`` keeps: the bounded ranking of words too common to rank over
        every row holding them (the index is read newest first and stops at ``budget`` rows,
        the filters then apply to those)."""
        sql, params = where
        rows = self.conn.execute(
            "SELECT c.rowid FROM (SELECT f.rowid AS rowid, bm25(memories_terms) AS score "
            "FROM memories_terms f JOIN memories o ON o.rowid = f.rowid "
            "WHERE memories_terms MATCH ? AND o.user_id = ? ORDER BY f.rowid DESC LIMIT ?) c "
            f"JOIN memories m ON m.rowid = c.rowid WHERE 1 = 1{sql} "
            "ORDER BY c.score, c.rowid DESC LIMIT ?",
            (fts_match(words), owner, budget, *params, n),
        ).fetchall()
        return [r[0] for r in rows]

    def _rows_holding(self, words: Sequence[str], budget: int) -> dict[str, int]:
        """How many rows of the text index hold each of ``words``, counted up to
        ``budget + 1`` (enough to decide)."""
        for word in words:
            if word not in self._counts:
                self._counts[word] = self.conn.execute(
                    "SELECT count(*) FROM (SELECT 1 FROM memories_terms WHERE memories_terms "
                    "MATCH ? LIMIT ?)",
                    (fts_match([word]), budget + 1),
                ).fetchone()[0]
        return {word: self._counts[word] for word in words}

    def _ranked(self, words: Sequence[str]) -> list[int]:
        """Every rowid holding any of ``words``, best ``bm25`` of the words together first
        (ties: lower rowid first)."""
        parts = [self._word_scores(word) for word in words]
        rowids, at = np.unique(np.concatenate([ids for ids, _ in parts]), return_inverse=True)
        totals = np.zeros(len(rowids), dtype=np.float64)
        start = 0
        for ids, scores in parts:  # the query's order: the order FTS5 adds them in
            totals[at[start : start + len(ids)]] += scores
            start += len(ids)
        ranked: list[int] = rowids[np.lexsort((rowids, totals))].tolist()
        return ranked

    def _word_scores(self, word: str) -> tuple[np.ndarray, np.ndarray]:
        """The rowids holding ``word`` and their ``bm25`` for it alone (rowid order)."""
        kept = self._scores.get(word)
        if kept is None:
            rows = self.conn.execute(
                "SELECT rowid, bm25(memories_terms) FROM memories_terms "
                "WHERE memories_terms MATCH ? ORDER BY rowid",
                (fts_match([word]),),
            ).fetchall()
            ids = np.array([r[0] for r in rows], dtype=np.int64)
            scores = np.array([r[1] for r in rows], dtype=np.float64)
            self._scores[word] = kept = (ids, scores)
            self._held += len(rows)
        return kept

    def _owned(
        self, ranked: list[int], owner: str, where: Where, n: int, known: Known | None
    ) -> list[int]:
        """The first ``n`` of ``ranked`` that are ``owner``'s and that ``where`` keeps,
        checked best first in growing chunks (one owner of the store: the first chunk); the
        rows ``known`` cannot tell are checked by a statement."""
        sql, params = where
        found: list[int] = []
        start, step = 0, min(max(2 * n, 64), CHECK_CHUNK)
        while start < len(ranked) and len(found) < n:
            chunk = ranked[start : start + step]
            passing, unknown = known(chunk) if known is not None else (set(), chunk)
            if unknown:
                marks = ", ".join("?" * len(unknown))
                passing.update(
                    r[0]
                    for r in self.conn.execute(
                        # NOT INDEXED: the rowids pick the rows (an index on the owner or the
                        # status would scan all of them); rowid lookups stay allowed.
                        f"SELECT m.rowid FROM memories m NOT INDEXED WHERE m.rowid IN ({marks}) "
                        f"AND m.user_id = ?{sql}",
                        (*unknown, owner, *params),
                    )
                )
            found += [rowid for rowid in chunk if rowid in passing]
            start, step = start + len(chunk), min(4 * step, CHECK_CHUNK)
        return found[:n]

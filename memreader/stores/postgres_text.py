"""The PostgreSQL store's full-text half of a search, within a budget: ``ts_rank`` reads the
``tsvector`` of every row it ranks, so a query holding a common word ("I", "the", "my") ranked
most of an owner's rows (875 ms p95 at 100k memories). As in the embedded store
(:data:`memreader.stores.sqlite_ops.TEXT_BUDGET`), the query's words are taken rarest first
while the owner's rows holding them add up to at most :data:`TEXT_BUDGET`
(:func:`~memreader.stores.scoring.affordable_words`); a word's rows are counted up to the
budget plus one (enough to decide) and cached by :class:`WordRows`.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from typing import Any, Protocol

import psycopg

from memreader.stores.scoring import affordable_words, fts_words

__all__ = ["TEXT_BUDGET", "WORD_CACHE", "WORD_TTL", "WordRows", "text_list", "tsquery"]

#: The most rows one search's ``ts_rank`` reads. Measured at 100k memories (benchmarks/store.py,
#: RESULTS.md): ranking costs about 1 ms per 1,000 rows here, so 2,000 keeps the text half
#: near the vector half (~15 ms) while a word held by up to 2% of an owner's rows still counts.
TEXT_BUDGET = 2_000
#: ``(owner, word)`` counts one store keeps (then it starts again).
WORD_CACHE = 50_000
#: Seconds a count is trusted when no write of this store came since: another process's
#: writes go unseen for this long (a stale count only changes which words are ranked).
WORD_TTL = 60.0

Connection = psycopg.Connection[Any]


class Filters(Protocol):
    """What :func:`text_list` needs of a search's filters."""

    def sql(self) -> tuple[str, list[Any]]: ...


def tsquery(words: Sequence[str]) -> str | None:
    """``words`` (:func:`~memreader.stores.scoring.fts_words`) as a ``to_tsquery`` text
    matching any of them, each quoted; ``None`` when there is none."""
    return " | ".join(f"'{w}'" for w in words) or None


class WordRows:
    """How many of an owner's rows hold a word, counted up to ``TEXT_BUDGET + 1``; cleared
    when ``stamp`` (the store's count of writes) moves, after :data:`WORD_TTL` seconds, or
    past :data:`WORD_CACHE` entries."""

    def __init__(self) -> None:
        self._rows: dict[tuple[str, str], int] = {}
        self._stamp: int | None = None
        self._since = 0.0

    def get(self, conn: Connection, owner: str, words: Sequence[str], stamp: int) -> dict[str, int]:
        now = time.monotonic()
        if stamp != self._stamp or now - self._since > WORD_TTL or len(self._rows) > WORD_CACHE:
            self._rows.clear()
            self._stamp = stamp
            self._since = now
        for word in words:
            if (owner, word) not in self._rows:
                row = conn.execute(
                    "SELECT count(*) FROM (SELECT 1 FROM memreader_memories "
                    "WHERE fts @@ to_tsquery('simple', %s) AND user_id = %s LIMIT %s) x",
                    (tsquery([word]), owner, TEXT_BUDGET + 1),
                ).fetchone()
                self._rows[owner, word] = int(row[0]) if row else 0
        return {word: self._rows[owner, word] for word in words}


def text_list(
    conn: Connection,
    query: str,
    owner: str,
    filters: Filters,
    n: int,
    counts: tuple[WordRows, int],
) -> list[int]:
    """The rowids of ``owner``'s best ``n`` full-text matches of ``query`` by ``ts_rank``,
    matching only the words the budget affords (``counts``: the cache and the store's write
    count)."""
    words = fts_words(query)
    if not words:
        return []
    cache, stamp = counts
    q = tsquery(affordable_words(words, cache.get(conn, owner, words, stamp), TEXT_BUDGET))
    if q is None:
        return []
    where, params = filters.sql()
    rows = conn.execute(
        "SELECT m.rowid FROM memreader_memories m, to_tsquery('simple', %s) q "
        f"WHERE m.fts @@ q AND m.user_id = %s{where} "
        "ORDER BY ts_rank(m.fts, q) DESC, m.rowid LIMIT %s",
        (q, owner, *params, n),
    ).fetchall()
    return [r[0] for r in rows]

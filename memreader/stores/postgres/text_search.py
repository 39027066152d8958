"""The PostgreSQL store's full-text half of a search, within a budget: ``ts_rank`` reads the
``tsvector`` of every row it ranks, so a query holding a common word ("I", "the", "my") ranked
most of an owner's rows (875 ms p95 at 100k memories). As in the embedded store
(:data:`memreader.stores.sqlite.operations.TEXT_BUDGET`), the query's words are taken rarest first
while the owner's rows holding them add up to at most :data:`TEXT_BUDGET`
(:func:`~memreader.stores.scoring.affordable_words`); a word's rows are counted up to the
budget plus one (enough to decide) and cached by :class:`WordRows`. Once PostgreSQL has
statistics of the table (``ANALYZE``: autovacuum's after large writes), a word's rows are
estimated from them instead (:class:`WordStats`): counting a common word's rows on its first
search cost up to 23 ms (p95 at 100k memories), more than ranking them.

When no word of the query fits the budget (every word of the query is common: "river
train" in nearly all of 50k rows found nothing), the owner's newest :data:`TEXT_BUDGET` rows
holding them are ranked by ``ts_rank`` instead (:func:`newest`, read newest first by the
``(user_id, rowid)`` index and stopped at the budget, the filters applied to those): a search
never ranks more than the budget, and never silently finds nothing. The store option
``text_budget`` sets it per store.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from typing import Any

import psycopg

from memreader.retrieval.terms import is_single_cjk
from memreader.stores.text_match import affordable_words, fts_words

__all__ = [
    "TEXT_BUDGET",
    "WORD_CACHE",
    "WORD_TTL",
    "WordRows",
    "WordStats",
    "newest",
    "text_list",
    "tsquery",
]

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


def tsquery(words: Sequence[str]) -> str | None:
    """``words`` (:func:`~memreader.stores.text_match.fts_words`: ``\\w`` characters only,
    never a quote) as a ``to_tsquery`` text matching any of them, each quoted, one CJK
    character as a prefix (it starts the bigrams of its runs, or ends one: see
    :func:`~memreader.retrieval.terms.index_terms`); ``None`` when there is none.

    >>> tsquery(["porto", "咖啡", "猫"])
    "'porto' | '咖啡' | '猫':*"
    """
    return " | ".join(f"'{w}':*" if is_single_cjk(w) else f"'{w}'" for w in words) or None


#: PostgreSQL's statistics of the ``fts`` column (its most common words and their share of
#: the table's rows) and of ``user_id`` (the largest owners and their shares), with the table's
#: row count: what ``ANALYZE`` (autovacuum's, or the benchmark's after its bulk load) found.
STATS_SQL = """
SELECT s.attname, s.most_common_elems::text::text[], s.most_common_elem_freqs,
       s.most_common_vals::text::text[], s.most_common_freqs, c.reltuples
FROM pg_stats s JOIN pg_class c ON c.relname = s.tablename
JOIN pg_namespace n ON n.oid = c.relnamespace AND n.nspname = s.schemaname
WHERE s.tablename = 'memreader_memories' AND s.attname IN ('fts', 'user_id')
  AND s.schemaname = ANY(current_schemas(false))
"""


class WordStats:
    """How many of an owner's rows hold a word, estimated from PostgreSQL's statistics
    (:data:`STATS_SQL`, read again after :data:`WORD_TTL` seconds or a write of this store)
    without counting: a listed word's share of the table times the owner's rows, an unlisted
    word the smallest listed share (a rarer word is not listed). ``None`` when there are no
    statistics, or the owner is not among the largest (a small owner's rows are cheap to
    count)."""

    def __init__(self) -> None:
        self._words: dict[str, float] = {}
        self._rare = 0.0
        self._owners: dict[str, float] = {}
        self._since: float | None = None
        self._stamp: int | None = None

    def _read(self, conn: Connection) -> None:
        self._words, self._owners, self._rare = {}, {}, 0.0
        for column, elems, elem_freqs, vals, val_freqs, rows in conn.execute(STATS_SQL):
            if column == "fts" and elems and elem_freqs:
                # The frequencies list the elements' own, then their minimum and maximum.
                self._words = dict(zip(elems, elem_freqs[: len(elems)], strict=True))
                self._rare = min(self._words.values())
            elif column == "user_id" and vals and val_freqs and rows > 0:
                self._owners = {v: f * rows for v, f in zip(vals, val_freqs, strict=True)}

    def get(
        self, conn: Connection, owner: str, words: Sequence[str], stamp: int
    ) -> dict[str, int] | None:
        now = time.monotonic()
        if stamp != self._stamp or self._since is None or now - self._since > WORD_TTL:
            self._read(conn)
            self._since, self._stamp = now, stamp
        owner_rows = self._owners.get(owner)
        if not self._words or owner_rows is None:
            return None
        share = self._words.get
        return {w: max(1, round(share(w, self._rare) * owner_rows)) for w in words}


class WordRows:
    """How many of an owner's rows hold a word: estimated by :class:`WordStats` when
    PostgreSQL has statistics of the owner, else counted up to ``TEXT_BUDGET + 1``; counts
    are cleared when ``stamp`` (the store's count of writes) moves, after :data:`WORD_TTL`
    seconds, or past :data:`WORD_CACHE` entries."""

    def __init__(self) -> None:
        self._rows: dict[tuple[str, str], int] = {}
        self._stamp: tuple[int, int] | None = None
        self._since = 0.0
        self.stats = WordStats()

    def get(
        self, conn: Connection, owner: str, words: Sequence[str], stamp: int, budget: int
    ) -> dict[str, int]:
        estimated = self.stats.get(conn, owner, words, stamp)
        if estimated is not None:
            return estimated
        now = time.monotonic()
        key = (stamp, budget)
        if key != self._stamp or now - self._since > WORD_TTL or len(self._rows) > WORD_CACHE:
            self._rows.clear()
            self._stamp = key
            self._since = now
        missing = [w for w in dict.fromkeys(words) if (owner, w) not in self._rows]
        if missing:
            # One statement for all of them: a CJK sentence is dozens of bigrams, and a round
            # trip per term cost more than the counting.
            # Each count its own subquery with its own parameter: a tsquery read from a
            # column (unnest) is not one the GIN index is planned for, and scanned every row.
            one = (
                "SELECT %s, (SELECT count(*) FROM (SELECT 1 FROM memreader_memories "
                "WHERE fts @@ to_tsquery('simple', %s) AND user_id = %s LIMIT %s) x)"
            )
            params: list[Any] = []
            for n, word in enumerate(missing):
                params += [n, tsquery([word]), owner, budget + 1]
            sql = " UNION ALL ".join([one] * len(missing))
            for n, count in conn.execute(sql, params).fetchall():
                self._rows[owner, missing[n]] = int(count)
        return {word: self._rows[owner, word] for word in words}


def text_list(
    conn: Connection,
    query: str,
    owner: str,
    where: tuple[str, list[Any]],
    n: int,
    counts: tuple[WordRows, int, int | None],
) -> list[int]:
    """The rowids of ``owner``'s best ``n`` full-text matches of ``query`` among the rows
    ``where`` keeps (a ``WHERE`` fragment and its parameters): by ``ts_rank`` over every row
    holding the words the budget affords; when it affords none of them, the best of the
    owner's newest rows holding them (:func:`newest`). ``counts``: the
    cache, the store's write count and its budget (``None``: :data:`TEXT_BUDGET`)."""
    words = fts_words(query)
    if not words:
        return []
    cache, stamp, own_budget = counts
    budget = own_budget if own_budget is not None else TEXT_BUDGET
    rows = cache.get(conn, owner, words, stamp, budget)
    kept = affordable_words(words, rows, budget)
    sql, params = where
    found: list[int] = []
    q = tsquery(kept)
    if q is not None:
        found = [
            r[0]
            for r in conn.execute(
                "SELECT m.rowid FROM memreader_memories m, to_tsquery('simple', %s) q "
                f"WHERE m.fts @@ q AND m.user_id = %s{sql} "
                "ORDER BY ts_rank(m.fts, q) DESC, m.rowid LIMIT %s",
                (q, owner, *params, n),
            ).fetchall()
        ]
    held = [w for w in words if rows.get(w, 0) > 0]
    if not kept and held:
        # Every word of the query is past the budget: rather than find nothing, rank the
        # owner's newest rows holding them (bounded by the budget).
        return newest(conn, held, owner, where, budget, n)
    return found


def newest(
    conn: Connection,
    words: Sequence[str],
    owner: str,
    where: tuple[str, list[Any]],
    budget: int,
    n: int,
) -> list[int]:
    """The best ``n`` by ``ts_rank`` among ``owner``'s newest ``budget`` rows holding any of
    ``words`` that ``where`` keeps: the bounded ranking of words too common to rank over every
    row holding them (read newest first and stopped at ``budget`` rows, the filters then apply
    to those)."""
    sql, params = where
    rows = conn.execute(
        "SELECT m.rowid FROM (SELECT o.rowid, ts_rank(o.fts, q) AS score "
        "FROM memreader_memories o, to_tsquery('simple', %s) q "
        # IS TRUE: not a condition the GIN index answers, so the rows come newest first from
        # the (user_id, rowid) index and the scan stops at the budget (the GIN index would
        # hand over, and ts_rank read, every row holding the words).
        "WHERE (o.fts @@ q) IS TRUE AND o.user_id = %s ORDER BY o.rowid DESC LIMIT %s) c "
        f"JOIN memreader_memories m ON m.rowid = c.rowid WHERE TRUE{sql} "
        "ORDER BY c.score DESC, c.rowid DESC LIMIT %s",
        (tsquery(words), owner, budget, *params, n),
    ).fetchall()
    return [r[0] for r in rows]

"""The PostgreSQL store's reads and bulk operations inside an open transaction: owner locks,
nearest vectors (HNSW, with an exact fallback), which items are not stored yet, hybrid search
and purge. Ranking is :mod:`memreader.stores.scoring`'s, exactly as the embedded store ranks.
"""

from __future__ import annotations

import math
from collections.abc import Collection, Iterable, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any

import psycopg

from memreader.items import TextualMemoryItem
from memreader.stores.base import ScoreParts, SearchHit
from memreader.stores.checks import Filters
from memreader.stores.decisions import content_hash, looked_up
from memreader.stores.events import WriteEvent
from memreader.stores.postgres_schema import MEMORY_COLUMNS, memory_from_row
from memreader.stores.postgres_text import WordRows, text_list
from memreader.stores.scoring import Candidate, rank_candidates

__all__ = [
    "CANDIDATES",
    "EXACT_CATEGORY",
    "LOOKUP_CHUNK",
    "Ranking",
    "filter_sql",
    "lock_owners",
    "lookup",
    "nearest",
    "owners_of",
    "purge",
    "search",
    "seen_rows",
    "unstored",
]

#: How many candidates each list gives the fusion, at least (and 5 per hit asked for): the
#: embedded store's numbers, so both stores fuse the same lists.
CANDIDATES = 50

#: The HNSW candidate list (``hnsw.ef_search``) of every vector search, at least: pgvector's
#: default (40) gave recall@10 0.76 at 10k 384-dim vectors. At 100k memories of one owner
#: (benchmarks/store.py, latent vectors, 280 queries), ef_search 100 / 120 / 160 / 200 gave
#: recall@10 0.941 / 0.958 / 0.979 / 0.985 and vector-only p50 13.4 / 11.4 / 13.4 / 15.4 ms,
#: p95 21.9 / 13.5 / 15.0 / 17.5 ms: 160 is the smallest keeping recall >= 0.95 with margin
#: (>= 0.97). At most pgvector's limit, 1000.
MIN_EF_SEARCH = 160
MAX_EF_SEARCH = 1000

#: The most memories of a category whose vectors a category search compares exactly (read
#: from the category's links); a larger category is searched through the HNSW index with
#: the filter, which keeps enough of its candidates (see :func:`nearest`).
EXACT_CATEGORY = 20_000

#: Items per query of :func:`lookup`.
LOOKUP_CHUNK = 1000

Connection = psycopg.Connection[Any]


def filter_sql(filters: Filters) -> tuple[str, list[Any]]:
    """``filters`` as a ``WHERE`` fragment over ``memreader_memories m`` (starting with
    ``AND``) and its parameters."""
    parts: list[str] = []
    params: list[Any] = []
    if not filters.include_inactive:
        parts.append("m.status = 'active'")
    if filters.types is not None:
        parts.append("m.memory_type = ANY(%s)")
        params.append(list(filters.types))
    if filters.session_id is not None:
        parts.append("m.session_id = %s")
        params.append(filters.session_id)
    if filters.since is not None:
        parts.append("COALESCE(m.valid_from, m.recorded_at) >= %s")
        params.append(filters.since)
    if filters.until is not None:
        parts.append("COALESCE(m.valid_from, m.recorded_at) <= %s")
        params.append(filters.until)
    if filters.category is not None:
        # A scalar subquery, not EXISTS: PostgreSQL turns EXISTS into a join, and a join cannot
        # follow the HNSW index's order (a category holding most of 50k memories was an exact
        # scan, 0.7-1.7 s); this is one primary-key probe per candidate the index yields.
        parts.append(
            "(SELECT 1 FROM memreader_category_links l WHERE l.user_id = m.user_id "
            "AND l.name = %s AND l.memory_id = m.id LIMIT 1) IS NOT NULL"
        )
        params.append(filters.category)
    return "".join(f" AND {p}" for p in parts), params


def lock_owners(conn: Connection, owners: Iterable[str]) -> None:
    """Take the transaction's advisory lock of each owner, in sorted order (so two writers
    never wait on each other crosswise): every change of an owner's rows happens under it, so
    a writer's checks and inserts see every earlier writer's committed rows."""
    for owner in sorted(set(owners)):
        conn.execute("SELECT pg_advisory_xact_lock(hashtextextended(%s, 0))", (owner,))


def nearest(
    conn: Connection,
    owner: str,
    where: str,
    params: Sequence[Any],
    query: str,
    n: int,
    category: str | None = None,
) -> list[tuple[int, str, float]]:
    """The ``n`` memories of ``owner`` (passing ``where``/``params``) whose vectors are most
    similar to ``query`` (pgvector text): (rowid, id, cosine), best first.

    The HNSW index answers when the planner picks it (``ef_search`` at least ``n``); when it
    returns fewer than ``n`` rows (the filters threw its candidates away), the search is rerun
    exactly, so a filter never hides a match that exists. With a ``category``, the exact
    search reads the category's memories only, from its links (:func:`_category_nearest`): a
    small category of a large owner is never an exact scan of every vector (1.6-3 s at 50k).
    """
    if category is not None:
        exact = _category_nearest(conn, owner, where, params, query, n, category)
        if exact is not None:
            return exact
    ef_search = min(max(n, MIN_EF_SEARCH), MAX_EF_SEARCH)
    conn.execute("SELECT set_config('hnsw.ef_search', %s, true)", (str(ef_search),))
    rows: list[tuple[int, str, float]] = []
    orders = ["m.embedding <=> %s::vector", "(m.embedding <=> %s::vector) + 0"]
    # A large category the index did not keep enough of: its links are read below instead.
    for order in orders[:1] if category is not None else orders:
        # ``+ 0``: an expression no index orders by, so the planner scans and sorts exactly.
        rows = conn.execute(
            "SELECT m.rowid, m.id, 1 - (m.embedding <=> %s::vector) FROM memreader_memories m "
            f"WHERE m.user_id = %s AND m.embedding IS NOT NULL{where} ORDER BY {order} LIMIT %s",
            (query, owner, *params, query, n),
        ).fetchall()
        if len(rows) >= n:
            break
    if category is not None and len(rows) < n:
        rows = _category_nearest(conn, owner, where, params, query, n, category, bound=None) or []
    # A zero vector has no direction: its cosine is NaN, and it is nobody's neighbour.
    return [(r[0], r[1], float(r[2])) for r in rows if r[2] is not None and not math.isnan(r[2])]


def _category_nearest(
    conn: Connection,
    owner: str,
    where: str,
    params: Sequence[Any],
    query: str,
    n: int,
    category: str,
    bound: int | None = EXACT_CATEGORY,
) -> list[tuple[int, str, float]] | None:
    """The exact nearest of ``owner``'s memories linked to ``category``, read from the links
    (their primary key) when the category has at most ``bound`` links (``None``: however
    many); ``None`` when it has more (then the HNSW index, filtered, answers)."""
    if bound is not None:
        row = conn.execute(
            "SELECT count(*) FROM (SELECT 1 FROM memreader_category_links "
            "WHERE user_id = %s AND name = %s LIMIT %s) c",
            (owner, category, bound + 1),
        ).fetchone()
        if row is None or row[0] > bound:
            return None
    rows = conn.execute(
        "SELECT m.rowid, m.id, 1 - (m.embedding <=> %s::vector) FROM memreader_category_links l "
        "JOIN memreader_memories m ON m.user_id = l.user_id AND m.id = l.memory_id "
        f"WHERE l.user_id = %s AND l.name = %s AND m.embedding IS NOT NULL{where} "
        "ORDER BY (m.embedding <=> %s::vector) + 0 LIMIT %s",
        (query, owner, category, *params, query, n),
    ).fetchall()
    return [(r[0], r[1], r[2]) for r in rows]


def unstored(conn: Connection, items: Sequence[TextualMemoryItem]) -> list[int]:
    """The positions of ``items`` whose id is not stored active and whose content is not
    active for their owner and type: the ones worth embedding (a retired memory written again
    comes back as written now, with a vector)."""
    todo = []
    for position, item in enumerate(items):
        meta = item.metadata
        found = conn.execute(
            "SELECT 1 FROM memreader_memories WHERE user_id = %s AND status = 'active' AND "
            "(id = %s OR (memory_type = %s AND content_hash = %s)) LIMIT 1",
            (meta.user_id, item.id, meta.memory_type.value, content_hash(item.memory)),
        ).fetchone()
        if found is None:
            todo.append(position)
    return todo


def lookup(
    conn: Connection, owner: str, items: Sequence[TextualMemoryItem]
) -> list[WriteEvent | None]:
    """What writing each of ``owner``'s ``items`` would find stored (see
    :meth:`MemoryStore.lookup`): one query per :data:`LOOKUP_CHUNK` items."""
    found: list[WriteEvent | None] = []
    for start in range(0, len(items), LOOKUP_CHUNK):
        chunk = items[start : start + LOOKUP_CHUNK]
        hashes = [content_hash(item.memory) for item in chunk]
        rows = conn.execute(
            "SELECT id, memory_type, content_hash, status FROM memreader_memories "
            "WHERE user_id = %s AND (id = ANY(%s) OR "
            "(status = 'active' AND content_hash = ANY(%s))) ORDER BY rowid",
            (owner, sorted({item.id for item in chunk}), sorted(set(hashes))),
        ).fetchall()
        found += looked_up(start, chunk, hashes, rows)
    return found


def owners_of(conn: Connection, key: str) -> list[str]:
    """The owners of active memories that the support key ``key`` supports, sorted."""
    rows = conn.execute(
        "SELECT DISTINCT m.user_id FROM memreader_keys k JOIN memreader_memories m "
        "ON m.rowid = k.memory_rowid WHERE k.key = %s AND m.status = 'active' "
        "ORDER BY m.user_id",
        (key,),
    ).fetchall()
    return [r[0] for r in rows]


def seen_rows(conn: Connection, key: str, owner: str, seen: Collection[str]) -> set[int]:
    """The rowids of ``owner``'s active memories under ``key`` whose id is in ``seen``."""
    rows = conn.execute(
        "SELECT m.rowid FROM memreader_keys k JOIN memreader_memories m "
        "ON m.rowid = k.memory_rowid WHERE k.key = %s AND m.user_id = %s "
        "AND m.status = 'active' AND m.id = ANY(%s)",
        (key, owner, sorted(set(seen))),
    ).fetchall()
    return {int(r[0]) for r in rows}


@dataclass(frozen=True)
class Ranking:
    """How a store ranks: its decay ``gamma``, its ``importance_weight`` (see
    :mod:`memreader.stores.scoring`), its word-count cache, its count of writes so far and
    its ``text_budget``."""

    gamma: float
    importance_weight: float
    words: WordRows
    writes: int
    text_budget: int | None = None


def search(
    conn: Connection,
    query: str,
    owner: str,
    k: int,
    filters: Filters,
    vector: str | None,
    now: datetime,
    ranking: Ranking,
) -> list[SearchHit]:
    """The hybrid search of :meth:`MemoryStore.search`: the vector list (``vector`` in pgvector
    text, ``None`` for text only) and the ``ts_rank`` list (within the word budget of
    :mod:`memreader.stores.postgres_text`), fused and scored as
    :mod:`memreader.stores.scoring` says."""
    n = max(CANDIDATES, 5 * k)
    vector_list: list[tuple[int, str, float]] = []
    where = filter_sql(filters)
    if vector is not None:
        vector_list = nearest(conn, owner, *where, vector, n, filters.category)
    counts = (ranking.words, ranking.writes, ranking.text_budget)
    text_ranks = {
        rowid: rank for rank, rowid in enumerate(text_list(conn, query, owner, where, n, counts), 1)
    }
    ranks: dict[int, list[int]] = {}
    for rank, (rowid, _, _) in enumerate(vector_list, 1):
        ranks.setdefault(rowid, []).append(rank)
    for rowid, rank in text_ranks.items():
        ranks.setdefault(rowid, []).append(rank)
    if not ranks:
        return []
    rows = conn.execute(
        "SELECT rowid, importance, COALESCE(valid_from, recorded_at), "
        "1 - (embedding <=> %s::vector) FROM memreader_memories "
        "WHERE user_id = %s AND rowid = ANY(%s)",
        (vector, owner, list(ranks)),
    ).fetchall()
    candidates: list[Candidate] = [
        (rowid, importance, when, None if cosine is None or math.isnan(cosine) else float(cosine))
        for rowid, importance, when, cosine in rows
    ]
    scored = rank_candidates(
        candidates, ranks, text_ranks, now, ranking.gamma, ranking.importance_weight
    )
    return _hits(conn, scored[:k])


def _hits(conn: Connection, scored: list[tuple[int, ScoreParts]]) -> list[SearchHit]:
    if not scored:
        return []
    rows = conn.execute(
        f"SELECT {MEMORY_COLUMNS} FROM memreader_memories WHERE rowid = ANY(%s)",
        ([rowid for rowid, _ in scored],),
    ).fetchall()
    memories = {row[0]: memory_from_row(row) for row in rows}
    # A row that cannot be read is passed over (a warning names it), not the whole search.
    return [SearchHit(m, parts) for rowid, parts in scored if (m := memories.get(rowid))]


def purge(conn: Connection, cutoff: datetime) -> int:
    """Remove expired and superseded memories retired before ``cutoff``, with their keys,
    category links (both by ``ON DELETE CASCADE``) and history, under their owners' locks (a
    writer bringing one back waits, or is waited for); return how many."""
    owners = conn.execute(
        "SELECT DISTINCT user_id FROM memreader_memories "
        "WHERE status IN ('expired', 'superseded') AND retired_at < %s",
        (cutoff,),
    ).fetchall()
    locked = [r[0] for r in owners]
    lock_owners(conn, locked)
    rows = conn.execute(
        "DELETE FROM memreader_memories WHERE status IN ('expired', 'superseded') "
        "AND retired_at < %s AND user_id = ANY(%s) RETURNING user_id, id",
        (cutoff, locked),
    ).fetchall()
    if rows:
        conn.execute(
            "DELETE FROM memreader_history h USING unnest(%s::text[], %s::text[]) AS d(u, i) "
            "WHERE h.user_id = d.u AND h.memory_id = d.i",
            ([r[0] for r in rows], [r[1] for r in rows]),
        )
    return len(rows)

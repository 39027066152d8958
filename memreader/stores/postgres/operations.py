"""The PostgreSQL store's reads and bulk operations inside an open transaction: owner locks,
nearest vectors (HNSW, with an exact fallback), hybrid search and purge (which items are
stored already: :mod:`~memreader.stores.postgres.known`). Ranking is
:mod:`memreader.stores.scoring`'s, exactly as the embedded store ranks.
"""

from __future__ import annotations

import json
import math
from collections.abc import Collection, Iterable, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any

import numpy as np
import psycopg

from memreader.stores.base import ScoreParts, SearchHit
from memreader.stores.filters import SearchFilters
from memreader.stores.passages.scoring import ScoredPassages, rank_by_passages
from memreader.stores.postgres.passages import read_passages
from memreader.stores.postgres.schema import MEMORY_COLUMNS, memory_from_row
from memreader.stores.postgres.text_search import WordRows, text_list
from memreader.stores.postgres.usage import read_heat
from memreader.stores.scoring import Candidate

__all__ = [
    "CANDIDATES",
    "LARGE_CATEGORY",
    "SMALL_CATEGORY",
    "Ranking",
    "filter_sql",
    "lock_owners",
    "nearest",
    "owners_of",
    "purge",
    "search",
    "seen_rows",
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

#: A category search (see :func:`nearest`): a category of at most ``SMALL_CATEGORY`` memories
#: is searched exactly from its links (at 50k memories, 500 of them: ~10 ms, where filtering
#: the HNSW list then scanning every vector took 16-65 ms); up to ``LARGE_CATEGORY``, the HNSW
#: list is read with ``ef_search`` at its maximum, so the category's share of it fills the
#: candidates; a larger one is filtered from the usual list.
SMALL_CATEGORY = 2_000
LARGE_CATEGORY = 20_000

Connection = psycopg.Connection[Any]


def filter_sql(filters: SearchFilters, *, probe: bool = False) -> tuple[str, list[Any]]:
    """``filters`` as a ``WHERE`` fragment over ``memreader_memories m`` (starting with
    ``AND``) and its parameters. ``probe``: the category as one primary-key probe per row,
    for a scan that follows the HNSW index's order (see below); else as ``EXISTS``, which the
    planner may turn into a join (the faster exact scan of a small category)."""
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
    for column, wanted in filters.scope():  # memreader.scopes.visible, in SQL
        parts.append(f"(m.{column} IN ('', %s) OR m.visibility = 'shared')")
        params.append(wanted)
    if filters.since is not None:
        parts.append("COALESCE(m.valid_from, m.recorded_at) >= %s")
        params.append(filters.since)
    if filters.until is not None:
        parts.append("COALESCE(m.valid_from, m.recorded_at) <= %s")
        params.append(filters.until)
    if filters.category is not None and probe:
        # A scalar subquery, not EXISTS: PostgreSQL turns EXISTS into a join, and a join cannot
        # follow the HNSW index's order (a category holding most of 50k memories was an exact
        # scan, 0.4-1.7 s); this is one primary-key probe per candidate the index yields.
        parts.append(
            "(SELECT 1 FROM memreader_category_links l WHERE l.user_id = m.user_id "
            "AND l.name = %s AND l.memory_id = m.id LIMIT 1) IS NOT NULL"
        )
        params.append(filters.category)
    elif filters.category is not None:
        parts.append(
            "EXISTS (SELECT 1 FROM memreader_category_links l WHERE l.user_id = m.user_id "
            "AND l.name = %s AND l.memory_id = m.id)"
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
    category: tuple[str, tuple[str, list[Any]]] | None = None,
    *,
    index_first: bool = False,
) -> list[tuple[int, str, float]]:
    """The ``n`` memories of ``owner`` (passing ``where``/``params``) whose vectors are most
    similar to ``query`` (pgvector text): (rowid, id, cosine), best first. ``index_first``:
    the HNSW index is asked first whatever the planner's statistics say (a write's check per
    item, see below).

    The HNSW index answers when the planner picks it (``ef_search`` at least ``n``); when it
    returns fewer than ``n`` rows (the filters threw its candidates away), the search is rerun
    exactly, so a filter never hides a match that exists. A ``category`` (its name, and the
    filters with it as a probe per row: :func:`filter_sql`) is followed through the index
    first; the exact search then reads the category's memories from its links, one index
    probe each, instead of every vector of the owner.
    """
    ef_search = min(max(n, MIN_EF_SEARCH), MAX_EF_SEARCH)
    if category is not None:
        links = _links_up_to(conn, owner, category[0], LARGE_CATEGORY)
        if links <= SMALL_CATEGORY:
            exact = _category_exact(conn, owner, where, params, query, n, category[0])
            return [(r[0], r[1], float(r[2])) for r in exact if _usable(r[2])]
        if links <= LARGE_CATEGORY:
            # The index hands over at most ef_search rows and the category keeps its share of
            # them: the most it may give (at 50k, a tenth of them then fills k=10 at once).
            ef_search = MAX_EF_SEARCH
    # index_first: sorting is the planner's last resort for the index's statement. Without
    # statistics (a young table: rows written since autovacuum last analysed it) it guessed an
    # owner holds a few rows and sorted every active row of the owner, for each item written.
    sort = conn.execute(
        "SELECT current_setting('enable_sort'), set_config('hnsw.ef_search', %s, true), "
        "set_config('enable_sort', CASE WHEN %s THEN 'off' ELSE current_setting('enable_sort') "
        "END, true)",
        (str(ef_search), index_first),
    ).fetchone()
    first, values = category[1] if category is not None else (where, list(params))
    rows = _ordered(conn, owner, first, values, query, n, "m.embedding <=> %s::vector")
    if index_first:
        conn.execute("SELECT set_config('enable_sort', %s, true)", (sort[0] if sort else "on",))
    if len(rows) < n:  # the filters threw the index's candidates away: search exactly
        if category is not None:
            rows = _category_exact(conn, owner, where, params, query, n, category[0])
        else:
            # ``+ 0``: an expression no index orders by, so the planner scans and sorts exactly.
            order = "(m.embedding <=> %s::vector) + 0"
            rows = _ordered(conn, owner, where, params, query, n, order)
    return [(r[0], r[1], float(r[2])) for r in rows if _usable(r[2])]


def _ordered(
    conn: Connection,
    owner: str,
    where: str,
    params: Sequence[Any],
    query: str,
    n: int,
    order: str,
) -> list[Any]:
    """The first ``n`` of ``owner``'s memories with a vector passing ``where``, by ``order``:
    (rowid, id, cosine to ``query``)."""
    return conn.execute(
        "SELECT m.rowid, m.id, 1 - (m.embedding <=> %s::vector) FROM memreader_memories m "
        f"WHERE m.user_id = %s AND m.embedding IS NOT NULL{where} ORDER BY {order} LIMIT %s",
        (query, owner, *params, query, n),
    ).fetchall()


def _usable(cosine: float | None) -> bool:
    """A zero vector has no direction: its cosine is NaN, and it is nobody's neighbour."""
    return cosine is not None and not math.isnan(cosine)


def _links_up_to(conn: Connection, owner: str, category: str, bound: int) -> int:
    """How many memories ``owner``'s ``category`` links, counted up to ``bound + 1`` (its
    primary key's entries only)."""
    row = conn.execute(
        "SELECT count(*) FROM (SELECT 1 FROM memreader_category_links "
        "WHERE user_id = %s AND name = %s LIMIT %s) c",
        (owner, category, bound + 1),
    ).fetchone()
    return int(row[0]) if row else 0


def _category_exact(
    conn: Connection,
    owner: str,
    where: str,
    params: Sequence[Any],
    query: str,
    n: int,
    category: str,
) -> list[tuple[int, str, float]]:
    """The exact nearest of ``owner``'s memories linked to ``category``: its links read by
    their primary key, each memory fetched by its own (``OFFSET 0`` keeps the planner from
    turning the lookups into a scan of every memory of the owner)."""
    return conn.execute(
        "SELECT x.rowid, x.id, 1 - x.distance FROM memreader_category_links l CROSS JOIN "
        "LATERAL (SELECT m.rowid, m.id, m.embedding <=> %s::vector AS distance "
        "FROM memreader_memories m WHERE m.user_id = l.user_id AND m.id = l.memory_id "
        f"AND m.embedding IS NOT NULL{where} OFFSET 0) x "
        "WHERE l.user_id = %s AND l.name = %s ORDER BY x.distance LIMIT %s",
        (query, *params, owner, category, n),
    ).fetchall()


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
    filters: SearchFilters,
    vector: str | None,
    now: datetime,
    ranking: Ranking,
) -> list[SearchHit]:
    """The hybrid search of :meth:`MemoryStore.search`: the vector list (``vector`` in pgvector
    text, ``None`` for text only) and the ``ts_rank`` list (within the word budget of
    :mod:`memreader.stores.postgres.text_search`), fused and scored as
    :mod:`memreader.stores.scoring` says."""
    n = max(CANDIDATES, 5 * k)
    vector_list: list[tuple[int, str, float]] = []
    where = filter_sql(filters)
    # The category as a probe per row where rows come in an index's order (the HNSW list, the
    # text list), as EXISTS for the exact vector scan (a join there is faster).
    probe = filter_sql(filters, probe=True) if filters.category is not None else where
    if vector is not None:
        followed = (filters.category, probe) if filters.category is not None else None
        vector_list = nearest(conn, owner, *where, vector, n, followed)
    counts = (ranking.words, ranking.writes, ranking.text_budget)
    text_ranks = {
        rowid: rank for rank, rowid in enumerate(text_list(conn, query, owner, probe, n, counts), 1)
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
    sets = read_passages(conn, [(c[0], c[3]) for c in candidates])
    q = _unit(vector) if vector is not None else None
    lists = (candidates, ranks, text_ranks)
    weights = (now, ranking.gamma, ranking.importance_weight)
    heat = read_heat(conn, list(ranks), now, filters.heat), filters.heat
    scored, passages = rank_by_passages(query, q, sets, lists, weights, filters.min_score, k, heat)
    return _hits(conn, scored, passages)


def _unit(vector: str) -> np.ndarray | None:
    """A query vector in pgvector text as a float32 unit vector (``None``: no direction)."""
    array = np.asarray(json.loads(vector), dtype=np.float32)
    norm = float(np.linalg.norm(array))
    return array / norm if norm > 0 and math.isfinite(norm) else None


def _hits(
    conn: Connection, scored: list[tuple[int, ScoreParts]], passages: Mapping[int, ScoredPassages]
) -> list[SearchHit]:
    if not scored:
        return []
    rows = conn.execute(
        f"SELECT {MEMORY_COLUMNS} FROM memreader_memories WHERE rowid = ANY(%s)",
        ([rowid for rowid, _ in scored],),
    ).fetchall()
    memories = {row[0]: memory_from_row(row) for row in rows}
    # A row that cannot be read is passed over (a warning names it), not the whole search.
    return [
        SearchHit(m, parts, found.hits() if (found := passages.get(rowid)) else ())
        for rowid, parts in scored
        if (m := memories.get(rowid))
    ]


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

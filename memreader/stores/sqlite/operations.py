"""The embedded store's reads and bulk operations on an open connection: the owner's cached
vectors (patched with this connection's own writes: temporary triggers note which rows and
owner versions a transaction changed, :meth:`StoreOps.stage` reads them before the commit and
:meth:`StoreOps.committed` patches the cache after it), which items are not stored yet, hybrid
search and purge. The caller holds the store's lock and (for several statements) a
transaction."""

from __future__ import annotations

import sqlite3
from collections.abc import Collection, Mapping, Sequence
from datetime import datetime
from functools import lru_cache
from typing import Any

import numpy as np

from memreader.items import TextualMemoryItem
from memreader.stores.base import ScoreParts, SearchHit
from memreader.stores.borrowed import KEPT, borrowing
from memreader.stores.events import WriteEvent
from memreader.stores.filters import SearchFilters
from memreader.stores.known import known_rows, unstored_positions
from memreader.stores.passages.scoring import ScoredPassages, rank_by_passages
from memreader.stores.scoring import Candidate
from memreader.stores.sqlite.candidates import FilterMasks, cosines, ranking
from memreader.stores.sqlite.categories import category_rowids, drop_links
from memreader.stores.sqlite.passages import PassageCache
from memreader.stores.sqlite.schema import (
    MEMORY_COLUMNS,
    VECTOR_COLUMNS,
    iso,
    memory_from_row,
    time_of,
    vector_row,
)
from memreader.stores.sqlite.text_search import Known, TextIndex
from memreader.stores.sqlite.usage import read_heat
from memreader.stores.sqlite.vectors import OwnerVectors, VectorCache, VectorRow, unit
from memreader.stores.sqlite.writes import bump_versions
from memreader.stores.write_decisions import looked_up, memory_hash

__all__ = ["StoreOps", "filter_sql"]

#: How many candidates each list gives the fusion, at least (and 5 per hit asked for).
CANDIDATES = 50
#: Ids (or hashes) per index lookup of what a write finds stored (well under SQLite's limit).
LOOKUP_CHUNK = 500
#: The most full-text index entries one search ranks over all the rows holding a word (see
#: :func:`~memreader.stores.scoring.affordable_words`): ranking costs about 1.3 ms per 1,000
#: entries here, so a word in more rows than this is not ranked over all of them (at 100k
#: memories, a word in more than 10% of them), which keeps the text half of a search at 100k
#: memories near 10-25 ms (it was 100-500 ms when every word was ranked). Below 10k rows in
#: all, every word counts. When no word of the query fits the budget (every word of the
#: query is common: "river train" in nearly all of 50k rows found nothing), the owner's newest
#: ``TEXT_BUDGET`` rows holding them are ranked instead, the filters applied to those
#: (:meth:`~memreader.stores.sqlite.text_search.TextIndex.newest`): a search never ranks more
#: than the budget, and never silently finds nothing. The store option ``text_budget`` sets
#: it per store.
TEXT_BUDGET = 10_000

#: What notes this connection's changes (temporary: only this connection's writes fire them).
_TRACKING = """
CREATE TEMP TABLE IF NOT EXISTS memreader_changed (
    row INTEGER PRIMARY KEY, user_id TEXT NOT NULL);
CREATE TEMP TABLE IF NOT EXISTS memreader_moves (
    user_id TEXT PRIMARY KEY, from_version INTEGER NOT NULL, to_version INTEGER NOT NULL);
CREATE TEMP TRIGGER IF NOT EXISTS memreader_changed_insert AFTER INSERT ON main.memories
BEGIN INSERT OR IGNORE INTO memreader_changed VALUES (new.rowid, new.user_id); END;
CREATE TEMP TRIGGER IF NOT EXISTS memreader_changed_update AFTER UPDATE OF embedding, status,
    memory_type, session_id, valid_from, recorded_at, embedding_model, agent_id, task_id,
    visibility, importance ON main.memories
BEGIN INSERT OR IGNORE INTO memreader_changed VALUES (new.rowid, new.user_id); END;
CREATE TEMP TRIGGER IF NOT EXISTS memreader_changed_delete AFTER DELETE ON main.memories
BEGIN INSERT OR IGNORE INTO memreader_changed VALUES (old.rowid, old.user_id); END;
CREATE TEMP TRIGGER IF NOT EXISTS memreader_moved_insert AFTER INSERT ON main.owner_versions
BEGIN
    INSERT OR IGNORE INTO memreader_moves VALUES (new.user_id, 0, new.version);
    UPDATE memreader_moves SET to_version = new.version WHERE user_id = new.user_id;
END;
CREATE TEMP TRIGGER IF NOT EXISTS memreader_moved_update AFTER UPDATE ON main.owner_versions
BEGIN
    INSERT OR IGNORE INTO memreader_moves VALUES (new.user_id, old.version, new.version);
    UPDATE memreader_moves SET to_version = new.version WHERE user_id = new.user_id;
END;
"""

#: What one committed write changed for one owner whose vectors are cached: the owner, its
#: version before and after, and the changed rows as the loader reads them.
Staged = tuple[str, int, int, list[VectorRow]]


def filter_sql(filters: SearchFilters) -> tuple[str, list[Any]]:
    """``filters`` as a ``WHERE`` fragment over ``memories m`` (starting with ``AND``) and its
    parameters."""
    parts: list[str] = []
    params: list[Any] = []
    if not filters.include_inactive:
        parts.append("m.status = 'active'")
    if filters.types is not None:
        parts.append(f"m.memory_type IN ({', '.join('?' * len(filters.types))})")
        params.extend(filters.types)
    if filters.session_id is not None:
        parts.append("m.session_id = ?")
        params.append(filters.session_id)
    for column, wanted in filters.scope():  # memreader.scopes.visible, in SQL
        parts.append(f"(m.{column} IN ('', ?) OR m.visibility = 'shared')")
        params.append(wanted)
    if filters.since is not None:
        parts.append("COALESCE(m.valid_from, m.recorded_at) >= ?")
        params.append(iso(filters.since))
    if filters.until is not None:
        parts.append("COALESCE(m.valid_from, m.recorded_at) <= ?")
        params.append(iso(filters.until))
    if filters.category is not None:
        parts.append(
            "EXISTS (SELECT 1 FROM category_links l WHERE l.user_id = m.user_id "
            "AND l.name = ? AND l.memory_id = m.id)"
        )
        params.append(filters.category)
    return "".join(f" AND {p}" for p in parts), params


class StoreOps:
    """Reads and purges over ``conn``; ``gamma`` is the daily decay of search scores,
    ``importance_weight`` how much importance moves them (see :mod:`~memreader.stores.scoring`)."""

    def __init__(
        self,
        conn: sqlite3.Connection,
        gamma: float,
        importance_weight: float,
        text_budget: int | None = None,
    ) -> None:
        self.conn = conn
        self.gamma = gamma
        self.importance_weight = importance_weight
        #: See :data:`TEXT_BUDGET` (read at each search when not set: tests change it).
        self.text_budget = text_budget
        self.cache = VectorCache()
        self._commits = 0
        self.passages = PassageCache()
        #: The memories borrowed searches built, by their whole row (memreader.stores.borrowed).
        self.kept_memory = lru_cache(maxsize=KEPT)(memory_from_row)
        self._kept_stamp: tuple[int, int] | None = None
        self.text = TextIndex(conn)
        conn.executescript(_TRACKING)

    def stage(self) -> list[Staged]:
        """Inside a write transaction, just before its commit: what it changed for owners
        whose vectors are cached (rows changed without a version move, or vectors cached at
        another version: versions -1, so they are dropped); the notes are cleared."""
        moves = {
            owner: (before, after)
            for owner, before, after in self.conn.execute(
                "SELECT user_id, from_version, to_version FROM temp.memreader_moves"
            )
        }
        changed = self.conn.execute("SELECT DISTINCT user_id FROM temp.memreader_changed")
        staged: list[Staged] = []
        for owner in sorted({r[0] for r in changed} | set(moves)):
            cached = self.cache.version_of(owner)
            if cached is None:
                continue
            before, after = moves.get(owner, (-1, -1))
            if cached != before:
                staged.append((owner, -1, -1, []))
                continue
            rows = self.conn.execute(
                f"SELECT c.row, {VECTOR_COLUMNS} FROM temp.memreader_changed c "
                "LEFT JOIN memories m ON m.rowid = c.row WHERE c.user_id = ?",
                (owner,),
            )
            staged.append((owner, before, after, [vector_row(r) for r in rows]))
        self.conn.execute("DELETE FROM temp.memreader_changed")
        self.conn.execute("DELETE FROM temp.memreader_moves")
        return staged

    def committed(self, staged: list[Staged]) -> None:
        """After the commit of the write :meth:`stage` read: patch the cached vectors."""
        self._commits += 1
        self.kept_memory.cache_clear()  # what they were made of may be gone (an erase too)
        for owner, before, after, rows in staged:
            self.cache.patch(owner, before, after, rows)

    def vectors(self, owner: str) -> OwnerVectors:
        """``owner``'s vectors as of now (from the cache when its version has not moved)."""
        row = self.conn.execute(
            "SELECT version FROM owner_versions WHERE user_id = ?", (owner,)
        ).fetchone()
        return self.cache.get(owner, row[0] if row else 0, lambda: self._vector_rows(owner))

    def _vector_rows(self, owner: str) -> list[VectorRow]:
        rows = self.conn.execute(
            f"SELECT m.rowid, {VECTOR_COLUMNS} FROM memories m "
            "WHERE m.user_id = ? AND m.embedding IS NOT NULL",
            (owner,),
        )
        return [vector_row(r) for r in rows]

    def unstored(self, items: Sequence[TextualMemoryItem]) -> list[int]:
        """The positions of ``items`` whose id is not stored active and whose content is not
        active for their owner and type: the ones worth embedding (a retired memory written
        again comes back as written now, with a vector). Index lookups only
        (:mod:`~memreader.stores.known`)."""
        hashes = [memory_hash(item) for item in items]
        return unstored_positions(items, hashes, self._known(items, hashes))

    def lookup(self, owner: str, items: Sequence[TextualMemoryItem]) -> list[WriteEvent | None]:
        """What writing each of ``owner``'s ``items`` would find stored (see
        :meth:`MemoryStore.lookup`): two index lookups per :data:`LOOKUP_CHUNK` items (and
        memory type)."""
        hashes = [memory_hash(item) for item in items]
        rows = [row[1:] for row in self._known(items, hashes)]
        return looked_up(0, items, hashes, rows)

    def _known(self, items: Sequence[TextualMemoryItem], hashes: list[str]) -> list[Any]:
        # The indexes named: without statistics the planner guesses a list of values costs
        # more than the owner's (user_id, status) range, which is every active row.
        columns = "SELECT user_id, id, memory_type, content_hash, status FROM memories INDEXED BY"

        def by_ids(owner: str, ids: list[str]) -> list[Any]:
            sql = f"{columns} sqlite_autoindex_memories_1 WHERE user_id = ? AND id IN "
            sql += f"({', '.join('?' * len(ids))})"
            return self.conn.execute(sql, (owner, *ids)).fetchall()

        def by_hashes(owner: str, memory_type: str, digests: list[str]) -> list[Any]:
            sql = f"{columns} memories_active_hash WHERE user_id = ? AND memory_type = ? AND "
            sql += f"content_hash IN ({', '.join('?' * len(digests))}) AND status = 'active'"
            return self.conn.execute(sql, (owner, memory_type, *digests)).fetchall()

        return known_rows(items, hashes, by_ids, by_hashes, LOOKUP_CHUNK)

    def owners_of(self, key: str) -> list[str]:
        """The owners of active memories that the support key ``key`` supports, sorted."""
        rows = self.conn.execute(
            "SELECT DISTINCT m.user_id FROM memory_keys k JOIN memories m "
            "ON m.rowid = k.memory_rowid WHERE k.key = ? AND m.status = 'active' "
            "ORDER BY m.user_id",
            (key,),
        )
        return [r[0] for r in rows]

    def seen_rows(self, key: str, owner: str, seen: Collection[str]) -> set[int]:
        """The rowids of ``owner``'s active memories under ``key`` whose id is in ``seen``."""
        wanted = set(seen)
        rows = self.conn.execute(
            "SELECT m.rowid, m.id FROM memory_keys k JOIN memories m "
            "ON m.rowid = k.memory_rowid WHERE k.key = ? AND m.user_id = ? "
            "AND m.status = 'active'",
            (key, owner),
        )
        return {rowid for rowid, memory_id in rows if memory_id in wanted}

    def search(
        self,
        query: str,
        owner: str,
        k: int,
        filters: SearchFilters,
        vector: Sequence[float] | None,
        now: datetime,
    ) -> list[SearchHit]:
        """The hybrid search of :meth:`MemoryStore.search` (:mod:`memreader.stores.scoring`):
        the two lists pick candidates, their passages score them (``query`` "": vector mode)."""
        n = max(CANDIDATES, 5 * k)
        owned = self.vectors(owner)
        q = unit(vector) if vector is not None else None
        vector_list: list[tuple[int, float]] = []
        masks = FilterMasks(
            owned, filters, lambda: category_rowids(self.conn, owner, filters.category or "")
        )
        group = owned.groups.get(len(q)) if q is not None else None
        if q is not None and group is not None:
            vector_list = group.top(q, masks.of(len(q)), n)
        text_list = self._text_search(query, owner, filters, n, masks.known())
        ranks: dict[int, list[int]] = {}
        for rank, (rowid, _) in enumerate(vector_list, 1):
            ranks.setdefault(rowid, []).append(rank)
        text_ranks = {rowid: rank for rank, rowid in enumerate(text_list, 1)}
        for rowid, rank in text_ranks.items():
            ranks.setdefault(rowid, []).append(rank)
        if not ranks:
            return []
        # From the cached vectors when every candidate has one there (no statement), else
        # read (ascending rowid, as both give them).
        candidates = ranking(owned, ranks, q)
        if candidates is None:
            candidates = self._read_candidates(owner, ranks, owned, q)
        stamp = (self.conn.execute("PRAGMA data_version").fetchone()[0], self._commits)
        dim = len(q) if q is not None else None
        sets = self.passages.read(self.conn, [(c[0], c[3]) for c in candidates], stamp, dim)
        heat = read_heat(self.conn, list(ranks), now, filters.heat), filters.heat
        lists, weights = (candidates, ranks, text_ranks), (now, self.gamma, self.importance_weight)
        scored, found = rank_by_passages(query, q, sets, lists, weights, filters.min_score, k, heat)
        return self._hits(scored, found, stamp)

    def _read_candidates(
        self, owner: str, ranks: Collection[int], owned: OwnerVectors, q: np.ndarray | None
    ) -> list[Candidate]:
        """What the search ranks ``owner``'s ``ranks`` by, read from the store (a row whose
        time cannot be read is passed over, a warning naming it)."""
        marks = ", ".join("?" * len(ranks))
        rows = self.conn.execute(
            # "+user_id": the rowids pick the rows (the owner's index would scan all of them).
            f"SELECT rowid, importance, COALESCE(valid_from, recorded_at) FROM memories "
            f"WHERE rowid IN ({marks}) AND +user_id = ? ORDER BY rowid",
            (*ranks, owner),
        ).fetchall()
        similarities = cosines(owned, [r[0] for r in rows], q) if q is not None else None
        candidates: list[Candidate] = []
        for i, (rowid, importance, when) in enumerate(rows):
            moment = time_of(rowid, when)
            if moment is None:
                continue  # a time edited into something else: that row is passed over
            similarity = similarities[i] if similarities is not None else None
            candidates.append((rowid, importance, moment, similarity))
        return candidates

    def _text_search(
        self, query: str, owner: str, filters: SearchFilters, n: int, known: Known | None
    ) -> list[int]:
        """The rowids of the best ``n`` full-text matches
        (:meth:`~memreader.stores.sqlite.text_search.TextIndex.search`)."""
        budget = self.text_budget if self.text_budget is not None else TEXT_BUDGET
        where = filter_sql(filters)
        return self.text.search(query, owner, where, n, budget, self._commits, known)

    def _hits(
        self,
        scored: list[tuple[int, ScoreParts]],
        passages: Mapping[int, ScoredPassages],
        stamp: tuple[int, int],
    ) -> list[SearchHit]:
        if not scored:
            return []
        marks = ", ".join("?" * len(scored))
        rows = self.conn.execute(
            f"SELECT {MEMORY_COLUMNS} FROM memories WHERE rowid IN ({marks})",
            [rowid for rowid, _ in scored],
        )
        if borrowing():
            # The memory made of the same row before (every column in the key: a changed
            # row is a new one); forgotten at any write, as the passages are.
            if stamp != self._kept_stamp:
                self.kept_memory.cache_clear()
                self._kept_stamp = stamp
            memories = {row[0]: self.kept_memory(row) for row in rows}
        else:
            memories = {row[0]: memory_from_row(row) for row in rows}
        # A row that cannot be read is passed over (a warning names it), not the whole search.
        return [
            SearchHit(m, parts, found.hits() if (found := passages.get(rowid)) else ())
            for rowid, parts in scored
            if (m := memories.get(rowid))
        ]

    def purge(self, cutoff: datetime) -> int:
        """Remove expired and superseded memories retired before ``cutoff``, with their keys,
        text index rows, category links and history; return how many."""
        rows = self.conn.execute(
            "SELECT rowid, user_id, id FROM memories WHERE status IN ('expired', 'superseded') "
            "AND retired_at < ?",
            (iso(cutoff),),
        ).fetchall()
        for rowid, owner, memory_id in rows:
            self.conn.execute("DELETE FROM memory_keys WHERE memory_rowid = ?", (rowid,))
            self.conn.execute("DELETE FROM memories_terms WHERE rowid = ?", (rowid,))
            drop_links(self.conn, owner, memory_id)
            self.conn.execute(
                "DELETE FROM history WHERE user_id = ? AND memory_id = ?", (owner, memory_id)
            )
            self.conn.execute("DELETE FROM memories WHERE rowid = ?", (rowid,))
        bump_versions(self.conn, {owner for _, owner, _ in rows})
        return len(rows)

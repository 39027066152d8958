"""The PostgreSQL memory store (``postgresql://user:password@host:5432/db``): psycopg 3 and
pgvector, for stores shared by many processes or machines.

Vectors are searched with pgvector's HNSW index (cosine; an exact scan when filters leave the
index too few candidates), text with a generated ``tsvector`` under a GIN index, ranked by
``ts_rank``; the two lists are fused exactly as the embedded store fuses them
(:mod:`memreader.stores.scoring`), and every write decision is the embedded store's
(:mod:`memreader.stores.write_decisions`).

Concurrency: each call is one transaction. A write takes the transaction-scoped advisory lock of
every owner it changes (sorted, so writers never deadlock on each other) before it reads
anything, so its checks and inserts see every earlier writer's committed rows; the partial
UNIQUE index on active ``(user_id, memory_type, content_hash)`` stands behind the locks. A
transaction that fails on a conflict anyway (unique violation, deadlock, serialization failure)
is retried from the start, at most
:data:`~memreader.stores.postgres.session.RETRIES` times. Reads run in one REPEATABLE READ,
READ ONLY snapshot. ``timeout`` bounds every lock wait (``lock_timeout``) and the connection.

The vector dimension is fixed by the ``dimension`` option or by the first vector written (the
column becomes ``vector(n)`` and the HNSW index is made); a vector of another length is then an
:class:`~memreader.errors.InputError` naming the item.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping, Sequence
from datetime import datetime
from typing import Any

from memreader.calls.deadlines import Deadline, check_deadline
from memreader.errors import ConfigError
from memreader.items import TextualMemoryItem
from memreader.stores import register_store
from memreader.stores.base import (
    HistoryEntry,
    MemoryStore,
    QueryEmbedder,
    SearchHit,
    SearchMode,
    SourceSelector,
)
from memreader.stores.checks import (
    aware,
    check_option,
    check_owner,
    check_text_budget,
    check_url,
    moment,
)
from memreader.stores.embedder_rules import store_embedder
from memreader.stores.embedding import embed, embed_missing
from memreader.stores.erasure import Tally
from memreader.stores.events import WriteEvent
from memreader.stores.filters import SearchFilters
from memreader.stores.passages.rows import plan_passages
from memreader.stores.postgres import categories, lifecycle, use_records
from memreader.stores.postgres.erase import POSTGRES_RESIDUE
from memreader.stores.postgres.known import lookup, unstored
from memreader.stores.postgres.operations import (
    Connection,
    Ranking,
    filter_sql,
    lock_owners,
    owners_of,
    purge,
    search,
    seen_rows,
)
from memreader.stores.postgres.passages import add_passages
from memreader.stores.postgres.schema import (
    HNSW_MAX_DIMENSION,
    MEMORY_COLUMNS,
    history_from_row,
    memory_from_row,
    safe_url,
    vector_text,
)
from memreader.stores.postgres.session import Session, check_dimensions, stored_dimension
from memreader.stores.postgres.text_search import WordRows
from memreader.stores.postgres.writes import Changes, prepare
from memreader.stores.records import StoredMemory, readable
from memreader.stores.scoring import (
    DEFAULT_GAMMA,
    DEFAULT_IMPORTANCE_WEIGHT,
    check_importance_weight,
)
from memreader.stores.usage import DEFAULT_HEAT_WEIGHT, check_heat_weight
from memreader.stores.validation import retired_owners, validate_items
from memreader.stores.write_decisions import DEFAULT_NEAR_DUPLICATE, selector_key

__all__ = ["PostgresStore"]

#: Seconds a call waits for a lock (or for the server to accept the connection) before it fails.
DEFAULT_TIMEOUT = 30.0

_OPTIONS = {"near_duplicate", "gamma", "importance_weight", "timeout", "dimension", "text_budget"}
_OPTIONS.add("heat_weight")


@register_store("postgresql")
class PostgresStore(MemoryStore):
    """The PostgreSQL store (see the module docstring).

    Args:
        url: ``postgresql://...`` (any libpq URI: host, port, database, ``?sslmode=`` ...).
        embedder: embeds search queries and items written without a vector (required unless
            ``text_only``: :func:`~memreader.stores.embedder_rules.store_embedder`).
        text_only: no embedder, on purpose: search is full text only.
        near_duplicate: the cosine at which a new memory reinforces a stored one.
        gamma: the daily decay of search scores.
        importance_weight: how much a memory's importance moves its search score, in [0, 2).
        heat_weight: how much a memory's use moves its search score, in [0, 1]
            (:data:`~memreader.stores.usage.DEFAULT_HEAT_WEIGHT`; a search may name another).
        timeout: seconds any call waits for a lock, and the connection for the server.
        dimension: the vector dimension, when it should be fixed before the first vector.
        text_budget: the most rows a search's ``ts_rank`` reads over all the rows holding a
            word, and the most of the owner's newest rows it ranks for the words past it
            (:data:`~memreader.stores.postgres.text_search.TEXT_BUDGET` when ``None``).

    Raises:
        MissingEmbedderError: no ``embedder`` and not ``text_only``.
        ConfigError: an option is out of range, or ``dimension`` is not the store's.
        StoreError: the server cannot be reached, refuses the schema, or holds another
            schema version.
    """

    #: What an erasure cannot reach (the receipt's ``residue``).
    erase_residue = POSTGRES_RESIDUE

    # -- hooks of the contract, written in the helper modules (memreader.stores.contract) ----
    _upsert_categories = categories.upsert_categories
    _link_categories = categories.link_categories
    _categories = categories.categories
    _category_memories = categories.category_memories
    _categories_of = categories.categories_of
    _save_summary = categories.save_summary
    _mark_used = use_records.record_uses
    _usage = use_records.usage_of
    _set_pins = lifecycle.set_pins
    _pinned_active = lifecycle.pinned_active
    _pinned = lifecycle.pinned
    _active_counts = lifecycle.active_counts
    _budget_facts = lifecycle.budget_facts
    _expire_for_budget = lifecycle.expire_for_budget
    _restore = lifecycle.restore
    _retired_counts = lifecycle.retired_counts
    _unindexed_counts = lifecycle.unindexed_counts
    _unindexed = lifecycle.unindexed
    _reindex = lifecycle.reindex

    def __init__(
        self,
        url: str,
        *,
        embedder: QueryEmbedder | None = None,
        text_only: bool = False,
        near_duplicate: float = DEFAULT_NEAR_DUPLICATE,
        gamma: float = DEFAULT_GAMMA,
        importance_weight: float = DEFAULT_IMPORTANCE_WEIGHT,
        timeout: float = DEFAULT_TIMEOUT,
        dimension: int | None = None,
        text_budget: int | None = None,
        heat_weight: float = DEFAULT_HEAT_WEIGHT,
    ) -> None:
        self.embedder = store_embedder(embedder, text_only, f"the store {safe_url(url)}")
        if dimension is not None and (
            isinstance(dimension, bool)
            or not isinstance(dimension, int)
            or not 1 <= dimension <= HNSW_MAX_DIMENSION
        ):
            raise ConfigError(
                f"store option dimension must be an integer in [1, {HNSW_MAX_DIMENSION}] "
                f"(pgvector's HNSW limit), got {dimension!r}"
            )
        self.url = safe_url(check_url(url))
        self.near_duplicate = check_option("near_duplicate", near_duplicate, 0.0, 1.0)
        self.gamma = check_option("gamma", gamma, 0.0, 1.0)
        self.importance_weight = check_importance_weight(importance_weight)
        self.heat_weight = check_heat_weight(heat_weight, "store option heat_weight")
        self.timeout = check_option("timeout", timeout, 0.0, 86_400.0)
        self.text_budget = check_text_budget(text_budget)
        self._words = WordRows()
        self._session = Session(url, self.timeout)
        try:
            self._dimension = self._session.run(
                lambda c: self._session.setup(c, dimension), write=True
            )
        except BaseException:
            self._session.close()
            raise

    @classmethod
    def from_url(
        cls,
        url: str,
        *,
        embedder: QueryEmbedder | None = None,
        text_only: bool = False,
        **options: Any,
    ) -> PostgresStore:
        """Open ``postgresql://...`` (options: ``near_duplicate``, ``gamma``,
        ``importance_weight``, ``heat_weight``, ``timeout``, ``dimension``, ``text_budget``)."""
        unknown = sorted(set(options) - _OPTIONS)
        if unknown:
            raise ConfigError(
                f"unknown postgresql store option(s) {', '.join(unknown)}; known: "
                + ", ".join(sorted(_OPTIONS))
            )
        check_url(url)
        if not url.lower().startswith("postgresql://"):
            raise ConfigError(f"not a postgresql URL: {safe_url(url)!r}")
        return cls(url, embedder=embedder, text_only=text_only, **options)

    def _write(
        self,
        items: Sequence[TextualMemoryItem],
        source: SourceSelector | None,
        user_id: str | None,
        now: datetime | None,
        *,
        in_parts: bool,
        deadline: Deadline | None = None,
    ) -> list[WriteEvent]:
        at = moment(now)
        key = selector_key(source) if source is not None else None
        checked = embed_missing(validate_items(items, user_id), self.embedder, self._unstored)
        prepared = [prepare(index, item, key) for index, item in enumerate(checked)]
        # The passages of the items not stored yet, embedded before the transaction (a stored
        # item keeps the passages it has: writing it again embeds nothing).
        new = [checked[i] for i in self._unstored(checked)] if checked else []
        passages = plan_passages(new, self.embedder)
        check_deadline(deadline, "before the store write's transaction")
        owners = {p.user_id for p in prepared} | ({user_id} if user_id else set())

        def work(conn: Connection) -> tuple[list[WriteEvent], int | None]:
            dimension = check_dimensions(conn, checked, self._dimension)
            lock_owners(conn, owners)
            changes = Changes(conn, at, self.near_duplicate, key, in_parts)
            events = [changes.apply(p) for p in prepared]
            add_passages(conn, passages)
            if key is not None and not in_parts:
                for owner in sorted(owners):
                    events += changes.supersede_from(owner, key)
            # Last thing before the commit: past the deadline, the whole write rolls back.
            check_deadline(deadline, "right before the postgresql store write commits")
            return events, dimension

        events, dimension = self._session.run(work, write=True)
        self._dimension = dimension
        return events

    def _retire_unseen(
        self, source: SourceSelector, seen: Mapping[str, Collection[str]], now: datetime | None
    ) -> list[WriteEvent]:
        at = moment(now)
        key = selector_key(source)

        def work(conn: Connection) -> list[WriteEvent]:
            owners = retired_owners(source, seen, owners_of(conn, key))
            lock_owners(conn, owners)
            changes = Changes(conn, at, self.near_duplicate)
            events: list[WriteEvent] = []
            for owner in owners:
                changes.touched = seen_rows(conn, key, owner, seen.get(owner, ()))
                events += changes.supersede_from(owner, key)
            return events

        return self._session.run(work, write=True)

    def lookup(
        self, items: Sequence[TextualMemoryItem], *, user_id: str
    ) -> list[WriteEvent | None]:
        """See :meth:`MemoryStore.lookup`."""
        owner = check_owner(user_id)
        checked = validate_items(items, owner)
        return self._session.run(lambda c: lookup(c, owner, checked), write=False)

    def _unstored(self, items: list[TextualMemoryItem]) -> list[int]:
        return self._session.run(lambda c: unstored(c, items), write=False)

    def _get(self, memory_id: str, owner: str) -> StoredMemory | None:
        row = self._session.run(
            lambda c: c.execute(
                f"SELECT {MEMORY_COLUMNS} FROM memreader_memories WHERE user_id = %s AND id = %s",
                (owner, memory_id),
            ).fetchone(),
            write=False,
        )
        return memory_from_row(row) if row else None

    def _search(
        self,
        query: str,
        user_id: str,
        k: int,
        filters: SearchFilters,
        now: datetime,
        mode: SearchMode,
    ) -> list[SearchHit]:
        owner = user_id
        vector = None
        if self.embedder is not None and query.strip() and mode != "text":
            vector = embed(self.embedder, [query])[0]
        text = query if mode != "vector" else ""

        def work(conn: Connection) -> list[SearchHit]:
            dimension = self._dimension or stored_dimension(conn)
            # Like the embedded store: a query vector of another length, or a zero one, cannot
            # be compared with what is stored, and the search is full text only.
            usable = vector is not None and len(vector) == dimension and any(vector)
            pg_vector = vector_text(vector) if usable and vector is not None else None
            words, writes = self._words, self._session.writes
            ranking = Ranking(self.gamma, self.importance_weight, words, writes, self.text_budget)
            return search(conn, text, owner, k, filters, pg_vector, now, ranking)

        return self._session.run(work, write=False)

    def _list_memories(
        self, owner: str, filters: SearchFilters, limit: int, before: int | None
    ) -> list[tuple[int, StoredMemory | None]]:
        where, params = filter_sql(filters)
        if before is not None:
            where += " AND m.rowid < %s"
            params.append(before)
        rows = self._session.run(
            lambda c: c.execute(
                f"SELECT {MEMORY_COLUMNS} FROM memreader_memories m WHERE m.user_id = %s"
                f"{where} ORDER BY m.rowid DESC LIMIT %s",
                (owner, *params, limit),
            ).fetchall(),
            write=False,
        )
        return [(int(row[0]), memory_from_row(row)) for row in rows]

    def _embedding_models(self, owner: str | None) -> dict[str, int]:
        # One aggregate over the owner's active rows (the (user_id, status, ...) index), or
        # over every active row when no owner is named.
        where = "status = 'active' AND embedding IS NOT NULL"
        where += " AND user_id = %s" if owner else ""
        rows = self._session.run(
            lambda c: c.execute(
                "SELECT COALESCE(embedding_model, ''), count(*) FROM memreader_memories "
                f"WHERE {where} GROUP BY 1",
                (owner,) if owner else (),
            ).fetchall(),
            write=False,
        )
        return {str(model): int(n) for model, n in rows}

    def _history(self, memory_id: str, owner: str) -> list[HistoryEntry]:
        rows = self._session.run(
            lambda c: c.execute(
                "SELECT memory_id, event, old_memory, new_memory, at, reason, source_ids "
                "FROM memreader_history WHERE user_id = %s AND memory_id = %s ORDER BY id",
                (owner, memory_id),
            ).fetchall(),
            write=False,
        )
        return readable(history_from_row(row) for row in rows)

    def _forget(
        self, source: SourceSelector, user_id: str, now: datetime | None, erase: bool
    ) -> tuple[list[WriteEvent], Tally]:
        at = moment(now)
        key = selector_key(source)

        def work(conn: Connection) -> tuple[list[WriteEvent], Tally]:
            lock_owners(conn, [user_id])
            changes = Changes(conn, at, self.near_duplicate)
            return changes.expire_from(user_id, key, erase=erase), changes.tally

        return self._session.run(work, write=True)

    def _delete(
        self, memory_id: str, owner: str, *, erase: bool, now: datetime
    ) -> tuple[WriteEvent, Tally] | None:
        def work(conn: Connection) -> tuple[WriteEvent, Tally] | None:
            lock_owners(conn, [owner])
            changes = Changes(conn, now, self.near_duplicate)
            event = changes.delete_one(owner, memory_id, erase=erase)
            return None if event is None else (event, changes.tally)

        return self._session.run(work, write=True)

    def purge(self, *, older_than: datetime) -> int:
        """See :meth:`MemoryStore.purge`."""
        cutoff = aware(older_than, "older_than")
        return self._session.run(lambda c: purge(c, cutoff), write=True)

    def close(self) -> None:
        """Close the connection (further calls fail with :class:`StoreError`)."""
        self._session.close()

    def __repr__(self) -> str:
        return f"PostgresStore({self.url!r})"

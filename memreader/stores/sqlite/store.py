"""The embedded memory store: one SQLite file, no server, no extension (``sqlite:///path.db``).

Vectors are searched exactly with numpy over the owner's cached matrix
(:mod:`memreader.stores.sqlite.vectors`), text with SQLite's built-in FTS5; the two lists are fused
(:mod:`memreader.stores.scoring`). Concurrency: WAL journal (readers never wait for the
writer), every write in ``BEGIN IMMEDIATE`` (writers queue for the lock instead of failing
halfway), a busy timeout bounding every wait, and one connection per store guarded by a lock
(calls from threads take turns). Two processes writing one memory cannot both add it: the
check and the insert sit in one immediate transaction, and a partial UNIQUE index stands
behind them.
"""

from __future__ import annotations

import sqlite3
import threading
from collections import Counter
from collections.abc import Collection, Iterator, Mapping, Sequence
from contextlib import contextmanager, suppress
from datetime import datetime
from typing import Any

from memreader.calls.deadlines import Deadline, check_deadline
from memreader.errors import ConfigError, MemReaderError, StoreError
from memreader.items import TextualMemoryItem
from memreader.stores import register_store
from memreader.stores.base import (
    HistoryEntry,
    QueryEmbedder,
    SearchHit,
    SearchMode,
    SourceSelector,
)
from memreader.stores.checks import (
    Filters,
    aware,
    check_option,
    check_owner,
    check_text_budget,
    check_url,
    moment,
)
from memreader.stores.embedder_rules import store_embedder
from memreader.stores.embedding import embed_missing
from memreader.stores.events import WriteEvent
from memreader.stores.passages.rows import plan_passages
from memreader.stores.records import StoredMemory, readable
from memreader.stores.scoring import (
    DEFAULT_GAMMA,
    DEFAULT_IMPORTANCE_WEIGHT,
    check_importance_weight,
)
from memreader.stores.sqlite.erasing import SQLiteErasing
from memreader.stores.sqlite.folder import make_folder
from memreader.stores.sqlite.lifecycle import SQLiteLifecycle
from memreader.stores.sqlite.operations import StoreOps
from memreader.stores.sqlite.passages import PASSAGE_SCHEMA, add_passages, passages_current
from memreader.stores.sqlite.schema import (
    MEMORY_COLUMNS,
    SCHEMA_VERSION,
    create_or_upgrade,
    history_from_row,
    is_busy,
    is_wal,
    memory_from_row,
    path_of_url,
    schema_is_current,
)
from memreader.stores.sqlite.usage import USE_SCHEMA, SQLiteUse, use_current
from memreader.stores.sqlite.vectors import unusable_blob
from memreader.stores.sqlite.writes import Changes, prepare
from memreader.stores.usage import DEFAULT_HEAT_WEIGHT, check_heat_weight
from memreader.stores.validation import retired_owners, validate_items
from memreader.stores.write_decisions import DEFAULT_NEAR_DUPLICATE, selector_key

__all__ = ["SQLiteStore"]

#: Seconds a call waits for another process's write lock before it fails.
DEFAULT_TIMEOUT = 30.0

#: The connection's page cache, KiB (SQLite's default is 2 MB). A row of the memories table
#: (its item and vector) fills most of a 4 KB page, so a search joining a few hundred
#: full-text matches to their rows read that many pages: with the default cache, again from
#: the file each time (0.96 ms of a 3.4 ms search of 2,000 memories; 0.61 ms with the file's
#: pages kept, issue 31). Pages are held only as they are read, up to this bound.
CACHE_KIB = 65_536


@register_store("sqlite")
class SQLiteStore(SQLiteLifecycle, SQLiteUse, SQLiteErasing):
    """The embedded store (see the module docstring).

    Args:
        path: the database file (created if missing), or ``":memory:"``.
        embedder: embeds search queries and items written without a vector (required unless
            ``text_only``: :func:`~memreader.stores.embedder_rules.store_embedder`).
        text_only: no embedder, on purpose: search is full text only.
        near_duplicate: the cosine at which a new memory reinforces a stored one
            (:data:`~memreader.stores.write_decisions.DEFAULT_NEAR_DUPLICATE`).
        gamma: the daily decay of search scores (:data:`~memreader.stores.scoring.DEFAULT_GAMMA`).
        importance_weight: how much a memory's importance moves its search score, in [0, 2)
            (:data:`~memreader.stores.scoring.DEFAULT_IMPORTANCE_WEIGHT`).
        heat_weight: how much a memory's use moves its search score, in [0, 1]
            (:data:`~memreader.stores.usage.DEFAULT_HEAT_WEIGHT`; a search may name another).
        timeout: seconds any call waits for another process's lock (opening a store that is
            current never waits: it only reads).
        text_budget: the most full-text index entries a search ranks over all the rows holding
            a word, and the most of the owner's newest rows it ranks for the words past it
            (:data:`~memreader.stores.sqlite.operations.TEXT_BUDGET` when ``None``).

    Raises:
        MissingEmbedderError: no ``embedder`` and not ``text_only``.
        ConfigError: an option is out of range.
        StoreError: the file cannot be opened or is not a memreader store.
    """

    def __init__(
        self,
        path: str,
        *,
        embedder: QueryEmbedder | None = None,
        text_only: bool = False,
        near_duplicate: float = DEFAULT_NEAR_DUPLICATE,
        gamma: float = DEFAULT_GAMMA,
        importance_weight: float = DEFAULT_IMPORTANCE_WEIGHT,
        timeout: float = DEFAULT_TIMEOUT,
        text_budget: int | None = None,
        heat_weight: float = DEFAULT_HEAT_WEIGHT,
    ) -> None:
        if not isinstance(path, str) or "\0" in path:
            raise ConfigError(f"a sqlite store path must be a string without NUL, got {path!r}")
        self.embedder = store_embedder(embedder, text_only, f"the sqlite store {path}")
        self.path = path
        self.near_duplicate = check_option("near_duplicate", near_duplicate, 0.0, 1.0)
        self.gamma = check_option("gamma", gamma, 0.0, 1.0)
        self.importance_weight = check_importance_weight(importance_weight)
        self.heat_weight = check_heat_weight(heat_weight, "store option heat_weight")
        self.timeout = check_option("timeout", timeout, 0.0, 86_400.0)
        self._lock = threading.RLock()
        self._conn = self._connect()
        self._ops = StoreOps(
            self._conn, self.gamma, self.importance_weight, check_text_budget(text_budget)
        )

    @classmethod
    def from_url(
        cls,
        url: str,
        *,
        embedder: QueryEmbedder | None = None,
        text_only: bool = False,
        **options: Any,
    ) -> SQLiteStore:
        """Open ``sqlite:///path.db`` (options: ``near_duplicate``, ``gamma``,
        ``importance_weight``, ``heat_weight``, ``timeout``, ``text_budget``)."""
        known = {"near_duplicate", "gamma", "importance_weight", "heat_weight", "timeout"}
        known.add("text_budget")
        unknown = sorted(set(options) - known)
        if unknown:
            raise ConfigError(
                f"unknown sqlite store option(s) {', '.join(unknown)}; known: "
                + ", ".join(sorted(known))
            )
        path = path_of_url(check_url(url))
        return cls(path, embedder=embedder, text_only=text_only, **options)

    def _connect(self) -> sqlite3.Connection:
        """Open the file; write only when it needs it (a new file, a table or index added
        since it was made): opening a current store reads its schema, so it never waits for
        another process's write lock (readers never wait for the writer)."""
        make_folder(self.path)
        try:
            conn = sqlite3.connect(
                self.path, timeout=self.timeout, isolation_level=None, check_same_thread=False
            )
        except sqlite3.Error as exc:
            raise StoreError(f"cannot open the sqlite store {self.path}: {exc}") from exc
        try:
            conn.execute(f"PRAGMA busy_timeout = {int(self.timeout * 1000)}")
            conn.execute("PRAGMA synchronous = NORMAL")
            # What a delete frees is overwritten with zeros (erase: memreader.stores.sqlite.erase).
            conn.execute("PRAGMA secure_delete = ON")
            conn.execute(f"PRAGMA cache_size = -{CACHE_KIB}")
            conn.create_function("memreader_unusable_vector", 1, unusable_blob, deterministic=True)
            if not (schema_is_current(conn) and passages_current(conn) and use_current(conn)):
                if self.path != ":memory:" and not is_wal(conn):
                    conn.execute("PRAGMA journal_mode = WAL")
                # One immediate transaction: two processes opening a new (or older) file
                # create (or upgrade) it once; the passage index and the use records are
                # their own steps (an older file gains them here).
                create_or_upgrade(conn, also=PASSAGE_SCHEMA + USE_SCHEMA)
            self._check_version(conn)
        except sqlite3.Error as exc:
            conn.close()
            raise self._error(exc, opening=True) from exc
        except BaseException:
            conn.close()
            raise
        return conn

    def _check_version(self, conn: sqlite3.Connection) -> None:
        row = conn.execute("SELECT value FROM memreader_meta WHERE key = 'schema'").fetchone()
        if row is None or row[0] != SCHEMA_VERSION:
            found = row[0] if row else "(none)"
            raise StoreError(
                f"{self.path} has store schema {found}; this memreader reads {SCHEMA_VERSION}"
            )

    def _error(self, exc: sqlite3.Error, *, opening: bool = False) -> StoreError:
        """``exc`` as a :class:`StoreError`: a lock held past the timeout says so (the file is
        fine: retry), a file that is not a store says that."""
        if is_busy(exc):
            return StoreError(
                f"sqlite store {self.path} is busy: another connection held its write lock "
                f"for more than the {self.timeout:g}s timeout ({exc}); retry later"
            )
        if opening:
            return StoreError(f"{self.path} is not a usable memreader store: {exc}")
        return StoreError(f"sqlite store {self.path}: {exc}")

    @contextmanager
    def _transaction(
        self, conn: sqlite3.Connection | None = None, *, write: bool = True
    ) -> Iterator[sqlite3.Connection]:
        """One transaction under the store's lock; sqlite failures become :class:`StoreError`,
        and any failure rolls back. A write on the store's connection patches the cached
        vectors with what it changed once it is committed (see :meth:`StoreOps.stage`)."""
        own = conn is None and write
        conn = conn if conn is not None else self._conn
        with self._lock:
            try:
                conn.execute("BEGIN IMMEDIATE" if write else "BEGIN")
                yield conn
                staged = self._ops.stage() if own else []
                conn.execute("COMMIT")
                if own:
                    self._ops.committed(staged)
            except BaseException as exc:
                with suppress(sqlite3.Error):  # a closed connection has nothing to roll back
                    if conn.in_transaction:
                        conn.execute("ROLLBACK")
                if isinstance(exc, sqlite3.Error):
                    raise self._error(exc) from exc
                raise

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
        with self._transaction() as conn:
            changes = Changes(conn, at, self._ops.vectors, self.near_duplicate, key, in_parts)
            changes.expect(prepared)
            events = [changes.apply(p) for p in prepared]
            add_passages(conn, passages)
            if key is not None and not in_parts:
                owners = {p.user_id for p in prepared} | ({user_id} if user_id else set())
                for owner in sorted(owners):
                    events += changes.supersede_from(owner, key)
            changes.bump_versions()
            # Last thing before the commit: past the deadline, the whole write rolls back.
            check_deadline(deadline, "right before the sqlite store write commits")
        return events

    def _unstored(self, items: list[TextualMemoryItem]) -> list[int]:
        with self._transaction(write=False):
            return self._ops.unstored(items)

    def _get(self, memory_id: str, owner: str) -> StoredMemory | None:
        with self._transaction(write=False) as conn:
            row = conn.execute(
                f"SELECT {MEMORY_COLUMNS} FROM memories WHERE user_id = ? AND id = ?",
                (owner, memory_id),
            ).fetchone()
        return memory_from_row(row) if row else None

    def _search(
        self, query: str, user_id: str, k: int, filters: Filters, now: datetime, mode: SearchMode
    ) -> list[SearchHit]:
        vector = self._query_vector(query) if mode != "text" else None
        text = query if mode != "vector" else ""
        with self._transaction(write=False):
            return self._ops.search(text, user_id, k, filters, vector, now)

    def _query_vector(self, query: str) -> list[float] | None:
        if self.embedder is None or not query.strip():
            return None
        try:
            return list(self.embedder.embed([query])[0])
        except MemReaderError:
            raise
        except Exception as exc:
            raise StoreError(f"the store's embedder failed: {type(exc).__name__}: {exc}") from exc

    def _embedding_models(self, owner: str | None) -> dict[str, int]:
        # One aggregate over the owner's active rows (the (user_id, status) index), or over
        # every active row when no owner is named.
        where = "status = 'active' AND embedding IS NOT NULL"
        where += " AND user_id = ?" if owner else ""
        with self._transaction(write=False) as conn:
            rows = conn.execute(
                f"SELECT COALESCE(embedding_model, ''), COUNT(*) FROM memories WHERE {where} "
                "GROUP BY 1",
                (owner,) if owner else (),
            ).fetchall()
        return {str(model): int(n) for model, n in rows}

    def _watched_models(self, owner: str) -> Counter[str]:
        # The owner's vectors as the search about to run loads them (cached, with each row's
        # model): counting them costs no query of its own.
        with self._transaction(write=False):
            owned = self._ops.vectors(owner)
        found: Counter[str] = Counter()
        for group in owned.groups.values():
            found.update(group.models[group.active].tolist())
        return found

    def _history(self, memory_id: str, owner: str) -> list[HistoryEntry]:
        with self._transaction(write=False) as conn:
            rows = conn.execute(
                "SELECT memory_id, event, old_memory, new_memory, at, reason, source_ids "
                "FROM history WHERE user_id = ? AND memory_id = ? ORDER BY id",
                (owner, memory_id),
            ).fetchall()
        return readable(history_from_row(row) for row in rows)

    def _retire_unseen(
        self, source: SourceSelector, seen: Mapping[str, Collection[str]], now: datetime | None
    ) -> list[WriteEvent]:
        at = moment(now)
        key = selector_key(source)
        with self._transaction() as conn:
            changes = Changes(conn, at, self._ops.vectors, self.near_duplicate)
            events: list[WriteEvent] = []
            for owner in retired_owners(source, seen, self._ops.owners_of(key)):
                changes.touched = self._ops.seen_rows(key, owner, seen.get(owner, ()))
                events += changes.supersede_from(owner, key)
            changes.bump_versions()
        return events

    def lookup(
        self, items: Sequence[TextualMemoryItem], *, user_id: str
    ) -> list[WriteEvent | None]:
        """See :meth:`MemoryStore.lookup`."""
        checked = validate_items(items, check_owner(user_id))
        with self._transaction(write=False):
            return self._ops.lookup(user_id, checked)

    def purge(self, *, older_than: datetime) -> int:
        """See :meth:`MemoryStore.purge`."""
        cutoff = aware(older_than, "older_than")
        with self._transaction():
            return self._ops.purge(cutoff)

    def close(self) -> None:
        """Close the connection (further calls fail with :class:`StoreError`)."""
        with self._lock:
            self._conn.close()
            self._ops.cache.clear()

    def __repr__(self) -> str:
        return f"SQLiteStore({self.path!r})"

"""The embedded memory store: one SQLite file, no server, no extension (``sqlite:///path.db``).

Vectors are searched exactly with numpy over the owner's cached matrix
(:mod:`memreader.stores.vectors`), text with SQLite's built-in FTS5; the two lists are fused
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
from collections.abc import Collection, Iterator, Mapping, Sequence
from contextlib import contextmanager, suppress
from datetime import datetime, timezone
from typing import Any

from memreader.errors import ConfigError, InputError, MemReaderError, StoreError
from memreader.items import TextualMemoryItem
from memreader.stores import register_store
from memreader.stores.base import (
    SEARCH_MODES,
    HistoryEntry,
    QueryEmbedder,
    SearchHit,
    SearchMode,
    SourceSelector,
    StoredMemory,
)
from memreader.stores.category_api import check_category
from memreader.stores.decisions import DEFAULT_NEAR_DUPLICATE, selector_key, validate_items
from memreader.stores.events import WriteEvent
from memreader.stores.scoring import (
    DEFAULT_GAMMA,
    DEFAULT_IMPORTANCE_WEIGHT,
    check_importance_weight,
)
from memreader.stores.sqlite_categories import SQLiteCategories
from memreader.stores.sqlite_ops import Filters, StoreOps
from memreader.stores.sqlite_schema import (
    MEMORY_COLUMNS,
    SCHEMA,
    SCHEMA_VERSION,
    aware,
    history_from_row,
    memory_from_row,
    path_of_url,
)
from memreader.stores.sqlite_write import Changes, prepare

__all__ = ["SQLiteStore"]

#: Seconds a call waits for another process's write lock before it fails.
DEFAULT_TIMEOUT = 30.0


def _option(name: str, value: Any, low: float, high: float) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not low < value <= high:
        raise ConfigError(f"store option {name} must be a number in ({low}, {high}], got {value!r}")
    return float(value)


@register_store("sqlite")
class SQLiteStore(SQLiteCategories):
    """The embedded store (see the module docstring).

    Args:
        path: the database file (created if missing), or ``":memory:"``.
        embedder: embeds search queries and items written without a vector; without one,
            search is full text only.
        near_duplicate: the cosine at which a new memory reinforces a stored one
            (:data:`~memreader.stores.decisions.DEFAULT_NEAR_DUPLICATE`).
        gamma: the daily decay of search scores (:data:`~memreader.stores.scoring.DEFAULT_GAMMA`).
        importance_weight: how much a memory's importance moves its search score, in [0, 2)
            (:data:`~memreader.stores.scoring.DEFAULT_IMPORTANCE_WEIGHT`).
        timeout: seconds any call waits for another process's lock.

    Raises:
        ConfigError: an option is out of range.
        StoreError: the file cannot be opened or is not a memreader store.
    """

    def __init__(
        self,
        path: str,
        *,
        embedder: QueryEmbedder | None = None,
        near_duplicate: float = DEFAULT_NEAR_DUPLICATE,
        gamma: float = DEFAULT_GAMMA,
        importance_weight: float = DEFAULT_IMPORTANCE_WEIGHT,
        timeout: float = DEFAULT_TIMEOUT,
    ) -> None:
        if embedder is not None and not isinstance(embedder, QueryEmbedder):
            raise ConfigError(f"store embedder must have embed(texts), got {type(embedder)!r}")
        self.path = path
        self.embedder = embedder
        self.near_duplicate = _option("near_duplicate", near_duplicate, 0.0, 1.0)
        self.gamma = _option("gamma", gamma, 0.0, 1.0)
        self.importance_weight = check_importance_weight(importance_weight)
        self.timeout = _option("timeout", timeout, 0.0, 86_400.0)
        self._lock = threading.RLock()
        self._conn = self._connect()
        self._ops = StoreOps(self._conn, self.gamma, self.importance_weight)

    @classmethod
    def from_url(
        cls, url: str, *, embedder: QueryEmbedder | None = None, **options: Any
    ) -> SQLiteStore:
        """Open ``sqlite:///path.db`` (options: ``near_duplicate``, ``gamma``,
        ``importance_weight``, ``timeout``)."""
        known = {"near_duplicate", "gamma", "importance_weight", "timeout"}
        unknown = sorted(set(options) - known)
        if unknown:
            raise ConfigError(
                f"unknown sqlite store option(s) {', '.join(unknown)}; known: "
                + ", ".join(sorted(known))
            )
        return cls(path_of_url(url), embedder=embedder, **options)

    def _connect(self) -> sqlite3.Connection:
        try:
            conn = sqlite3.connect(
                self.path, timeout=self.timeout, isolation_level=None, check_same_thread=False
            )
        except sqlite3.Error as exc:
            raise StoreError(f"cannot open the sqlite store {self.path}: {exc}") from exc
        try:
            conn.execute(f"PRAGMA busy_timeout = {int(self.timeout * 1000)}")
            conn.execute("PRAGMA journal_mode = WAL")
            conn.execute("PRAGMA synchronous = NORMAL")
            # One immediate transaction: two processes opening a new file create it once.
            conn.executescript(f"BEGIN IMMEDIATE;\n{SCHEMA}\nCOMMIT;")
        except sqlite3.Error as exc:
            conn.close()
            raise StoreError(f"{self.path} is not a usable memreader store: {exc}") from exc
        try:
            self._check_version(conn)
        except BaseException:
            conn.close()
            raise
        return conn

    def _check_version(self, conn: sqlite3.Connection) -> None:
        with self._transaction(conn):
            row = conn.execute("SELECT value FROM memreader_meta WHERE key = 'schema'").fetchone()
            if row is None:
                conn.execute(
                    "INSERT INTO memreader_meta (key, value) VALUES ('schema', ?)",
                    (SCHEMA_VERSION,),
                )
            elif row[0] != SCHEMA_VERSION:
                raise StoreError(
                    f"{self.path} has store schema {row[0]}; this memreader reads {SCHEMA_VERSION}"
                )

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
                    raise StoreError(f"sqlite store {self.path}: {exc}") from exc
                raise

    def _write(
        self,
        items: Sequence[TextualMemoryItem],
        source: SourceSelector | None,
        user_id: str | None,
        now: datetime | None,
        *,
        in_parts: bool,
    ) -> list[WriteEvent]:
        at = aware(now, "now") if now is not None else datetime.now(timezone.utc)
        key = selector_key(source) if source is not None else None
        checked = self._embed_missing(validate_items(items, user_id))
        prepared = [prepare(index, item, key) for index, item in enumerate(checked)]
        with self._transaction() as conn:
            changes = Changes(conn, at, self._ops.vectors, self.near_duplicate, key, in_parts)
            changes.expect(prepared)
            events = [changes.apply(p) for p in prepared]
            if key is not None and not in_parts:
                owners = {p.user_id for p in prepared} | ({user_id} if user_id else set())
                reason = f"{key} was written again without this memory"
                for owner in sorted(owners):
                    events += changes.drop_source(
                        owner, key, retire_as="superseded", event="SUPERSEDE", reason=reason
                    )
            changes.bump_versions()
        return events

    def _embed_missing(self, items: list[TextualMemoryItem]) -> list[TextualMemoryItem]:
        """``items``, the new ones that came without a vector given one (stored ones are
        skipped: their ids and hashes are checked before anything is embedded)."""
        bare = [i for i, item in enumerate(items) if item.metadata.embedding is None]
        if self.embedder is None or not bare:
            return items
        with self._transaction(write=False):
            todo = [bare[i] for i in self._ops.unstored([items[i] for i in bare])]
        if not todo:
            return items
        try:
            vectors = self.embedder.embed([items[i].memory for i in todo])
        except MemReaderError:
            raise
        except Exception as exc:
            raise StoreError(f"the store's embedder failed: {type(exc).__name__}: {exc}") from exc
        if len(vectors) != len(todo):
            raise StoreError(f"the store's embedder gave {len(vectors)} vectors for {len(todo)}")
        name = getattr(self.embedder, "name", None)
        model = name if isinstance(name, str) else None
        out = list(items)
        for i, vector in zip(todo, vectors, strict=True):
            meta = items[i].metadata.model_copy(
                update={"embedding": [float(x) for x in vector], "embedding_model": model}
            )
            out[i] = items[i].model_copy(update={"metadata": meta})
        return out

    def get(self, memory_id: str, *, user_id: str) -> StoredMemory | None:
        """See :meth:`MemoryStore.get`."""
        with self._transaction(write=False) as conn:
            row = conn.execute(
                f"SELECT {MEMORY_COLUMNS} FROM memories WHERE user_id = ? AND id = ?",
                (_owner(user_id), memory_id),
            ).fetchone()
        return memory_from_row(row) if row else None

    def search(
        self,
        query: str,
        *,
        user_id: str,
        k: int = 10,
        types: Sequence[str] | None = None,
        since: datetime | None = None,
        until: datetime | None = None,
        session_id: str | None = None,
        include_inactive: bool = False,
        now: datetime | None = None,
        mode: SearchMode = "hybrid",
        category: str | None = None,
    ) -> list[SearchHit]:
        """See :meth:`MemoryStore.search`."""
        if mode not in SEARCH_MODES:
            raise InputError(f"mode must be one of {', '.join(SEARCH_MODES)}, got {mode!r}")
        if not isinstance(query, str):
            raise InputError(f"query must be a string, got {type(query).__name__}")
        if isinstance(k, bool) or not isinstance(k, int) or k < 1:
            raise InputError(f"k must be a positive integer, got {k!r}")
        if types is not None and (isinstance(types, str) or not isinstance(types, Sequence)):
            raise InputError(f"types must be a list of memory types, got {types!r}")
        filters = Filters(
            types=tuple(types) if types is not None else None,
            since=aware(since, "since") if since is not None else None,
            until=aware(until, "until") if until is not None else None,
            session_id=session_id,
            include_inactive=include_inactive,
            category=check_category(category) if category is not None else None,
        )
        at = aware(now, "now") if now is not None else datetime.now(timezone.utc)
        vector = self._query_vector(query) if mode != "text" else None
        text = query if mode != "vector" else ""
        with self._transaction(write=False):
            return self._ops.search(text, _owner(user_id), k, filters, vector, at)

    def _query_vector(self, query: str) -> list[float] | None:
        if self.embedder is None or not query.strip():
            return None
        try:
            return list(self.embedder.embed([query])[0])
        except MemReaderError:
            raise
        except Exception as exc:
            raise StoreError(f"the store's embedder failed: {type(exc).__name__}: {exc}") from exc

    def history(self, memory_id: str, *, user_id: str) -> list[HistoryEntry]:
        """See :meth:`MemoryStore.history`."""
        with self._transaction(write=False) as conn:
            rows = conn.execute(
                "SELECT memory_id, event, old_memory, new_memory, at, reason, source_ids "
                "FROM history WHERE user_id = ? AND memory_id = ? ORDER BY id",
                (_owner(user_id), memory_id),
            ).fetchall()
        return [history_from_row(row) for row in rows]

    def _forget(
        self, source: SourceSelector, user_id: str, now: datetime | None
    ) -> list[WriteEvent]:
        owner = _owner(user_id)
        at = aware(now, "now") if now is not None else datetime.now(timezone.utc)
        key = selector_key(source)
        with self._transaction() as conn:
            changes = Changes(conn, at, self._ops.vectors, self.near_duplicate)
            events = changes.drop_source(
                owner, key, retire_as="expired", event="EXPIRE", reason=f"{key} was forgotten"
            )
            changes.bump_versions()
        return events

    def _retire_unseen(
        self, source: SourceSelector, seen: Mapping[str, Collection[str]], now: datetime | None
    ) -> list[WriteEvent]:
        at = aware(now, "now") if now is not None else datetime.now(timezone.utc)
        key = selector_key(source)
        reason = f"{key} was written again without this memory"
        with self._transaction() as conn:
            changes = Changes(conn, at, self._ops.vectors, self.near_duplicate)
            events: list[WriteEvent] = []
            for owner in self._ops.owners_of(key):
                changes.touched = self._ops.seen_rows(key, owner, seen.get(owner, ()))
                events += changes.drop_source(
                    owner, key, retire_as="superseded", event="SUPERSEDE", reason=reason
                )
            changes.bump_versions()
        return events

    def lookup(
        self, items: Sequence[TextualMemoryItem], *, user_id: str
    ) -> list[WriteEvent | None]:
        """See :meth:`MemoryStore.lookup`."""
        checked = validate_items(items, _owner(user_id))
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


def _owner(user_id: str) -> str:
    if not isinstance(user_id, str) or not user_id.strip():
        raise InputError(f"user_id must be a non-empty string, got {user_id!r}")
    return user_id

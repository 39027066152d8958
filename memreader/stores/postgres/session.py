"""The PostgreSQL store's connection: one transaction per call, retried after a lost conflict,
with every driver failure turned into a :class:`~memreader.errors.StoreError` that names the
store without its password; and the schema and vector dimension set up under advisory locks.
"""

from __future__ import annotations

import random
import threading
import time
from collections.abc import Callable, Sequence
from typing import TypeVar

import psycopg
from psycopg import errors as pg_errors

from memreader.errors import ConfigError, InputError, InternalError, MemReaderError, StoreError
from memreader.items import TextualMemoryItem
from memreader.stores.postgres.operations import Connection
from memreader.stores.postgres.passages import ensure_passages
from memreader.stores.postgres.schema import (
    DIMENSION_LOCK,
    HNSW_MAX_DIMENSION,
    SCHEMA,
    SCHEMA_LOCK,
    SCHEMA_OBJECTS,
    SCHEMA_VERSION,
    UPGRADES_FROM,
    index_sql,
    safe_url,
    scrub,
)
from memreader.stores.postgres.upgrade import upgrade_schema
from memreader.stores.postgres.usage import ensure_use

__all__ = [
    "RETRIES",
    "Session",
    "check_dimensions",
    "fix_dimension",
    "schema_is_current",
    "stored_dimension",
]

#: How many times a transaction that lost a conflict is run again before the call fails.
RETRIES = 5

_RETRYABLE = (pg_errors.SerializationFailure, pg_errors.DeadlockDetected, pg_errors.UniqueViolation)
T = TypeVar("T")


class Session:
    """One connection to ``url`` (calls from threads take turns); ``timeout`` bounds the
    connection and every lock wait (``lock_timeout``)."""

    def __init__(self, url: str, timeout: float) -> None:
        self._url = url
        self.url = safe_url(url)
        self.timeout = timeout
        self._lock = threading.RLock()
        self._closed = False
        #: Writes committed through this session (caches of what they change key on it).
        self.writes = 0
        self._conn = self._connect()

    def _connect(self) -> Connection:
        try:
            conn = psycopg.connect(
                self._url, autocommit=True, connect_timeout=max(1, round(self.timeout))
            )
        except psycopg.Error as exc:
            message = scrub(str(exc), self._url)
            raise StoreError(f"cannot open the postgresql store {self.url}: {message}") from None
        try:
            conn.execute("SET TIME ZONE 'UTC'")
            conn.execute("SELECT set_config('lock_timeout', %s, false)", (f"{self.timeout}s",))
        except psycopg.Error as exc:
            conn.close()
            raise StoreError(f"postgresql store {self.url}: {scrub(str(exc), self._url)}") from None
        return conn

    def run(self, work: Callable[[Connection], T], *, write: bool) -> T:
        """Run ``work`` in one transaction, again after a conflict (at most :data:`RETRIES`
        times); driver failures become :class:`StoreError`, unexpected ones
        :class:`InternalError`, and any failure rolls back. Reads (``write=False``) see one
        REPEATABLE READ, READ ONLY snapshot."""
        with self._lock:
            for attempt in range(1, RETRIES + 1):
                try:
                    result = self._attempt(work, write)
                    self.writes += 1 if write else 0
                    return result
                except _RETRYABLE as exc:
                    if attempt == RETRIES:
                        lost = f"conflict still lost after {RETRIES} tries"
                        raise self._error(exc, lost) from exc
                    time.sleep(random.uniform(0.01, 0.05) * 2**attempt)
                except pg_errors.LockNotAvailable as exc:
                    waited = f"busy: a lock was not granted within {self.timeout:g}s; retry later"
                    raise self._error(exc, waited) from exc
                except psycopg.Error as exc:
                    raise self._error(exc) from exc
                except MemReaderError:
                    raise
                except Exception as exc:
                    raise InternalError(
                        f"postgresql store {self.url}: {type(exc).__name__}: {exc}"
                    ) from exc
        raise AssertionError("unreachable")  # pragma: no cover

    def _attempt(self, work: Callable[[Connection], T], write: bool) -> T:
        if self._closed:
            raise StoreError(f"the postgresql store {self.url} is closed")
        if self._conn.broken:
            self._conn = self._connect()  # the server restarted or the network dropped
        with self._conn.transaction():
            if not write:
                self._conn.execute("SET TRANSACTION ISOLATION LEVEL REPEATABLE READ, READ ONLY")
            return work(self._conn)

    def _error(self, exc: psycopg.Error, what: str = "") -> StoreError:
        detail = scrub(str(exc).strip(), self._url)
        return StoreError(f"postgresql store {self.url}: {what + ': ' if what else ''}{detail}")

    def close(self) -> None:
        """Close the connection (further calls fail with :class:`StoreError`)."""
        with self._lock:
            self._closed = True
            self._conn.close()

    def setup(self, conn: Connection, dimension: int | None) -> int | None:
        """Create the schema when a table or index is missing (once, under a lock), check its
        version and ``dimension`` against the stored one; return the store's dimension
        (``None``: not fixed yet). A current schema is only read: ``CREATE ... IF NOT
        EXISTS`` locks the tables it names, so opening would wait for every writer."""
        if not schema_is_current(conn):
            conn.execute("SELECT pg_advisory_xact_lock(%s)", (SCHEMA_LOCK,))
            try:
                conn.execute(SCHEMA)
            except psycopg.errors.InsufficientPrivilege as exc:
                raise StoreError(
                    f"postgresql store {self.url}: cannot create the memreader tables or the "
                    f"vector extension ({exc.diag.message_primary}); ask an administrator to "
                    "run CREATE EXTENSION vector"
                ) from None
            conn.execute(
                "INSERT INTO memreader_meta VALUES ('schema', %s) ON CONFLICT DO NOTHING",
                (SCHEMA_VERSION,),
            )
        ensure_passages(conn, SCHEMA_LOCK)  # its own step: an older database gains it here
        ensure_use(conn, SCHEMA_LOCK)  # likewise (memreader.stores.postgres.usage)
        meta = dict(conn.execute("SELECT key, value FROM memreader_meta").fetchall())
        if meta.get("schema") in UPGRADES_FROM:
            meta["schema"] = upgrade_schema(conn)
        if meta.get("schema") != SCHEMA_VERSION:
            raise StoreError(
                f"{self.url} has store schema {meta.get('schema', '(none)')}; this memreader "
                f"reads {SCHEMA_VERSION}"
            )
        stored = int(meta["dimension"]) if "dimension" in meta else None
        if stored is not None and dimension is not None and stored != dimension:
            raise ConfigError(
                f"store option dimension={dimension}, but {self.url} holds {stored}-dimension "
                "vectors"
            )
        if stored is None and dimension is not None:
            return fix_dimension(conn, dimension)
        return stored


def schema_is_current(conn: Connection) -> bool:
    """Whether the database holds the vector extension, every table and index of
    :data:`SCHEMA` and a schema version (read, without a lock)."""
    row = conn.execute(
        "SELECT (SELECT count(*) FROM pg_extension WHERE extname = 'vector'), "
        "(SELECT count(*) FROM unnest(%s::text[]) AS o(name) WHERE to_regclass(o.name) IS NULL)",
        (sorted(SCHEMA_OBJECTS),),
    ).fetchone()
    if row is None or row[0] == 0 or row[1] > 0:
        return False
    found = conn.execute("SELECT 1 FROM memreader_meta WHERE key = 'schema'").fetchone()
    return found is not None


def stored_dimension(conn: Connection) -> int | None:
    """The store's vector dimension, if fixed."""
    row = conn.execute("SELECT value FROM memreader_meta WHERE key = 'dimension'").fetchone()
    return int(row[0]) if row else None


def fix_dimension(conn: Connection, wanted: int) -> int:
    """The store's dimension: the stored one, else ``wanted``, made the column's type and
    indexed (under a lock, so two first writers agree). Call it first in a transaction: the
    ``ALTER TABLE`` waits for every other transaction on the table, and one waiting on this one
    while holding the table would deadlock (PostgreSQL then fails one, which is retried)."""
    conn.execute("SELECT pg_advisory_xact_lock(%s)", (DIMENSION_LOCK,))
    stored = stored_dimension(conn)
    if stored is not None:
        return stored
    for statement in index_sql(wanted):
        conn.execute(statement)
    conn.execute("INSERT INTO memreader_meta VALUES ('dimension', %s)", (str(wanted),))
    return wanted


def check_dimensions(
    conn: Connection, items: Sequence[TextualMemoryItem], known: int | None
) -> int | None:
    """The store's dimension (``known``, or fixed now by the first vector of ``items``).

    Raises:
        InputError: an item's vector has another length (or more than HNSW indexes).
    """
    lengths = [(i, len(item.metadata.embedding or ())) for i, item in enumerate(items)]
    lengths = [(i, n) for i, n in lengths if n]
    dimension = known
    if lengths and dimension is None:
        index, first = lengths[0]
        if first > HNSW_MAX_DIMENSION:
            raise InputError(
                f"item {index} (id {items[index].id!r}): the embedding has {first} "
                f"dimensions; pgvector's HNSW index takes at most {HNSW_MAX_DIMENSION}"
            )
        dimension = fix_dimension(conn, first)
    for index, length in lengths:
        if length != dimension:
            raise InputError(
                f"item {index} (id {items[index].id!r}): the embedding has {length} "
                f"dimensions; this store holds {dimension}-dimension vectors"
            )
    return dimension

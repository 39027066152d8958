"""The shared state in PostgreSQL: the store's database, for replicas on many machines behind a
load balancer. The same tables as SQLite's; a decision about one key (its slots, one
``Idempotency-Key``, its jobs) holds a transaction-scoped advisory lock on the key's name, so
two replicas never both take the last slot.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from typing import Any

from memreader.errors import StoreError
from memreader.service.shared.base import SharedState
from memreader.service.shared.tables import IDEM, JOBS, RATES, SLOTS, WORKERS, Run
from memreader.stores.urls import public_url

__all__ = ["PostgresSharedState"]

logger = logging.getLogger(__name__)

SCHEMA = (
    f"CREATE TABLE IF NOT EXISTS {WORKERS} (id TEXT PRIMARY KEY, seen DOUBLE PRECISION NOT NULL)",
    f"CREATE TABLE IF NOT EXISTS {SLOTS} (token TEXT PRIMARY KEY, key TEXT NOT NULL, "
    "worker TEXT NOT NULL)",
    f"CREATE INDEX IF NOT EXISTS {SLOTS}_key ON {SLOTS} (key)",
    f"CREATE TABLE IF NOT EXISTS {IDEM} (principal TEXT NOT NULL, route TEXT NOT NULL, "
    "key TEXT NOT NULL, digest TEXT NOT NULL, created DOUBLE PRECISION NOT NULL, "
    "worker TEXT NOT NULL, status INTEGER, body BYTEA, media_type TEXT, "
    "PRIMARY KEY (principal, route, key))",
    f"CREATE INDEX IF NOT EXISTS {IDEM}_created ON {IDEM} (created)",
    f"CREATE TABLE IF NOT EXISTS {JOBS} (id TEXT PRIMARY KEY, owner TEXT NOT NULL, "
    "status TEXT NOT NULL, worker TEXT NOT NULL, cancel INTEGER NOT NULL, "
    "updated DOUBLE PRECISION NOT NULL, data TEXT NOT NULL)",
    f"CREATE INDEX IF NOT EXISTS {JOBS}_owner ON {JOBS} (owner, status)",
    f"CREATE TABLE IF NOT EXISTS {RATES} (key TEXT PRIMARY KEY, "
    "tokens DOUBLE PRECISION NOT NULL, updated DOUBLE PRECISION NOT NULL)",
)

#: The advisory lock every replica takes to create the tables (two at once would collide).
_SCHEMA_LOCK = "memreader_service_schema"


class PostgresSharedState(SharedState):
    """The shared state in the PostgreSQL database ``url`` (one connection per process,
    behind a lock; reconnected once after a dropped connection).

    Raises:
        StoreError: the database cannot be reached or its tables cannot be made.
    """

    body_holds = "position(? in body) > 0"

    def __init__(self, url: str, timeout_s: float = 10.0) -> None:
        super().__init__()
        self.url = url
        self.timeout_s = timeout_s
        self._lock = threading.Lock()
        self._conn: Any = self._connect()
        with self.transaction(_SCHEMA_LOCK) as run:
            for statement in SCHEMA:
                run(statement, ())

    def _connect(self) -> Any:
        import psycopg

        try:
            conn = psycopg.connect(
                self.url, autocommit=True, connect_timeout=max(1, round(self.timeout_s))
            )
            conn.execute("SELECT set_config('lock_timeout', %s, false)", (f"{self.timeout_s}s",))
        except psycopg.Error as exc:
            raise StoreError(
                f"cannot open the service state in {public_url(self.url)}: {type(exc).__name__}"
            ) from None
        return conn

    @contextmanager
    def transaction(self, lock: str | None = None) -> Iterator[Run]:
        """One transaction, holding the advisory lock ``lock`` when named."""
        import psycopg

        def run(sql: str, params: Sequence[Any]) -> list[tuple[Any, ...]]:
            cursor = self._conn.execute(sql.replace("?", "%s"), tuple(params))
            return cursor.fetchall() if cursor.description is not None else []

        with self._lock:
            if self._conn.closed or self._conn.broken:
                self._conn = self._connect()
            try:
                with self._conn.transaction():
                    if lock is not None:
                        run("SELECT pg_advisory_xact_lock(hashtext(?))", (lock,))
                    yield run
            except psycopg.Error as exc:
                raise StoreError(
                    f"service state in {public_url(self.url)}: {type(exc).__name__}: "
                    f"{str(exc).splitlines()[0] if str(exc) else ''}"
                ) from None

    def scrub(self) -> None:
        """``VACUUM`` the answers' table: the old row versions of replaced answers are
        removed from its pages (the server's write-ahead log keeps them until it is recycled,
        and a base backup taken meanwhile keeps them: PostgreSQL gives no stronger erase).
        A failure is logged: the answers are replaced already."""
        import psycopg

        with self._lock:
            try:
                self._conn.execute(f"VACUUM {IDEM}")
            except psycopg.Error as exc:
                logger.warning("service state: VACUUM of the answers failed: %s", exc)

    def _close_connections(self) -> None:
        with self._lock:
            self._conn.close()

"""The shared state in SQLite: a state file beside the store, for the workers of one machine
(WAL, one short ``BEGIN IMMEDIATE`` transaction per decision; a key's slot taken and given
back in one statement each, every request), or in memory for one process.

>>> state = SqliteSharedState(":memory:").start()
>>> token, held = state.slot_take("alice-app", limit=1)
>>> held, state.slot_take("alice-app", limit=1)
(1, (None, 1))
>>> state.slot_free(token); state.slots_held("alice-app")
0
>>> state.close()
"""

from __future__ import annotations

import logging
import os
import secrets
import sqlite3
import threading
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from typing import Any

from memreader.errors import StoreError
from memreader.service.shared.base import SharedState
from memreader.service.shared.tables import IDEM, JOBS, RATES, SLOTS, WORKERS, Run

__all__ = ["SqliteSharedState"]

logger = logging.getLogger(__name__)

#: Seconds a transaction waits for another worker's to end before failing.
BUSY_TIMEOUT_S = 10.0

SCHEMA = f"""
CREATE TABLE IF NOT EXISTS {WORKERS} (id TEXT PRIMARY KEY, seen REAL NOT NULL);
CREATE TABLE IF NOT EXISTS {SLOTS} (
    token TEXT PRIMARY KEY, key TEXT NOT NULL, worker TEXT NOT NULL);
CREATE INDEX IF NOT EXISTS {SLOTS}_key ON {SLOTS} (key);
CREATE TABLE IF NOT EXISTS {IDEM} (
    principal TEXT NOT NULL, route TEXT NOT NULL, key TEXT NOT NULL, digest TEXT NOT NULL,
    created REAL NOT NULL, worker TEXT NOT NULL, status INTEGER, body BLOB, media_type TEXT,
    PRIMARY KEY (principal, route, key));
CREATE INDEX IF NOT EXISTS {IDEM}_created ON {IDEM} (created);
CREATE TABLE IF NOT EXISTS {JOBS} (
    id TEXT PRIMARY KEY, owner TEXT NOT NULL, status TEXT NOT NULL, worker TEXT NOT NULL,
    cancel INTEGER NOT NULL, updated REAL NOT NULL, data TEXT NOT NULL);
CREATE INDEX IF NOT EXISTS {JOBS}_owner ON {JOBS} (owner, status);
CREATE TABLE IF NOT EXISTS {RATES} (
    key TEXT PRIMARY KEY, tokens REAL NOT NULL, updated REAL NOT NULL);
"""


def _opened(path: str) -> sqlite3.Connection:
    """A connection to the state file ``path`` with its tables, in WAL mode.

    Several workers start at once on a fresh file: switching it to WAL or creating its tables
    while another worker does the same can fail at once with "database is locked" (SQLite
    skips the busy wait where waiting could deadlock). The whole opening is tried again
    until :data:`BUSY_TIMEOUT_S` has passed; the tables are created in one ``BEGIN
    IMMEDIATE`` transaction (the write lock first: no read that must then become a write).

    Raises:
        sqlite3.Error: the file cannot be opened, or stayed locked past the timeout.
    """
    deadline = time.monotonic() + BUSY_TIMEOUT_S
    pause = 0.01
    while True:
        conn = sqlite3.connect(
            path, timeout=BUSY_TIMEOUT_S, isolation_level=None, check_same_thread=False
        )
        try:
            # Erased text in a replaced answer must not stay in free pages (idem_withdraw).
            conn.execute("PRAGMA secure_delete=ON")
            if path != ":memory:":
                conn.execute("PRAGMA journal_mode=WAL")
                # Durable enough: a power cut may lose the last answers, not corrupt the file.
                conn.execute("PRAGMA synchronous=NORMAL")
            conn.execute("BEGIN IMMEDIATE")
            for statement in SCHEMA.split(";"):
                if statement.strip():
                    conn.execute(statement)
            conn.execute("COMMIT")
            return conn
        except sqlite3.OperationalError as exc:
            conn.close()
            if not _busy(exc) or time.monotonic() + pause > deadline:
                raise
            logger.info("service state file %s busy while opening (%s); trying again", path, exc)
            time.sleep(pause)
            pause = min(pause * 2, 0.2)
        except BaseException:
            conn.close()
            raise


def _busy(exc: sqlite3.OperationalError) -> bool:
    message = str(exc).lower()
    return "locked" in message or "busy" in message


class SqliteSharedState(SharedState):
    """The shared state in the SQLite file ``path`` (``":memory:"``: this process only).

    One connection per process, behind a lock: the transactions are microseconds long, and
    the workers of a machine are processes, each with its own.

    Raises:
        StoreError: the file cannot be opened or is not a state file.
    """

    def __init__(self, path: str) -> None:
        super().__init__()
        self.path = path
        self.shared = path != ":memory:"
        self._lock = threading.Lock()
        try:
            if self.shared and os.path.dirname(path):
                os.makedirs(os.path.dirname(path), exist_ok=True)  # a new store's folder
            self._conn = _opened(path)
        except (OSError, sqlite3.Error) as exc:
            raise StoreError(f"cannot open the service state file {path}: {exc}") from None

    @contextmanager
    def transaction(self, lock: str | None = None) -> Iterator[Run]:
        """One ``BEGIN IMMEDIATE`` transaction (it takes the file's write lock at once: a
        read-then-write never fails half way); ``lock`` is not needed."""

        def run(sql: str, params: Sequence[Any]) -> list[tuple[Any, ...]]:
            try:
                return self._conn.execute(sql, tuple(params)).fetchall()
            except sqlite3.Error as exc:
                raise StoreError(f"service state file {self.path}: {exc}") from None

        with self._lock:
            try:
                self._conn.execute("BEGIN IMMEDIATE")
            except sqlite3.Error as exc:
                raise StoreError(f"service state file {self.path}: {exc}") from None
            try:
                yield run
            except BaseException:
                self._conn.execute("ROLLBACK")
                raise
            try:
                self._conn.execute("COMMIT")
            except sqlite3.Error as exc:
                raise StoreError(f"service state file {self.path}: {exc}") from None

    # -- per-key slots: one statement each --------------------------------------------------
    #
    # Taken and given back on every request. A statement on its own is its own transaction,
    # run whole inside SQLite: the file's write lock is held only while SQLite runs it. In a
    # BEGIN ... COMMIT of several statements, the worker's thread needs the interpreter lock
    # back between each, and while a search held it (up to its 5 ms switch interval) the
    # other workers waited on the file, their event loops blocked (issue 31).

    def slot_take(self, key: str, limit: int) -> tuple[str | None, int]:
        """Take one of ``key``'s ``limit`` slots: ``(token, in flight now)``, or ``(None, in
        flight)`` when all are taken (counted and taken in one statement, then counted)."""
        with self._lock:
            token = self._try(key, limit)
            held = self._held(lambda sql, params: self._alone(sql, params).fetchall(), key)
        return token, held

    def slot_try(self, key: str, limit: int) -> str | None:
        """Take one of ``key``'s ``limit`` slots: its token, or ``None`` when all are taken:
        one statement, which counts and takes (a request's slot costs this and the
        :meth:`slot_free`, nothing more: issue 42)."""
        with self._lock:
            return self._try(key, limit)

    def _try(self, key: str, limit: int) -> str | None:
        """The statement of :meth:`slot_try` (the caller holds ``self._lock``)."""
        token = secrets.token_hex(16)  # unique, as a uuid4, for less
        taken = self._alone(
            f"INSERT INTO {SLOTS} (token, key, worker) SELECT ?, ?, ? "
            f"WHERE (SELECT count(*) FROM {SLOTS} WHERE key = ? AND {self._live()}) < ?",
            (token, key, self.worker, key, *self._live_params(), limit),
        ).rowcount
        return token if taken == 1 else None

    def slot_free(self, token: str) -> None:
        """Give a slot back."""
        with self._lock:
            self._alone(f"DELETE FROM {SLOTS} WHERE token = ?", (token,))

    def _alone(self, sql: str, params: Sequence[Any]) -> sqlite3.Cursor:
        """One statement, its own transaction (the caller holds ``self._lock``)."""
        try:
            return self._conn.execute(sql, tuple(params))
        except sqlite3.Error as exc:
            raise StoreError(f"service state file {self.path}: {exc}") from None

    def scrub(self) -> None:
        """Checkpoint the write-ahead log into the file and truncate it: the old pages of
        replaced answers leave the log (the file zeroes freed space: ``secure_delete``). A
        checkpoint that other workers' readers keep from finishing is logged; the next one
        finishes it."""
        with self._lock:
            try:
                busy, _, _ = self._alone("PRAGMA wal_checkpoint(TRUNCATE)", ()).fetchone()
            except StoreError as exc:
                logger.warning("service state file %s: checkpoint failed: %s", self.path, exc)
                return
        if busy:
            logger.warning(
                "service state file %s: the log could not be truncated yet (readers)", self.path
            )

    def _close_connections(self) -> None:
        with self._lock:
            self._conn.close()

"""What the embedded store's hook functions (:mod:`~memreader.stores.sqlite.categories`,
:mod:`~memreader.stores.sqlite.lifecycle`, :mod:`~memreader.stores.sqlite.erasing`,
:mod:`~memreader.stores.sqlite.usage`) use of the store: its connection, lock and caches, and
one transaction at a time. :class:`~memreader.stores.sqlite.store.SQLiteStore` is the one
class that has them; the functions are bound to it by name, as its hooks of
:class:`~memreader.stores.contract.StoreBackend`."""

from __future__ import annotations

import sqlite3
import threading
from contextlib import AbstractContextManager
from datetime import datetime
from typing import Protocol

from memreader.errors import StoreError
from memreader.stores.sqlite.vectors import OwnerVectors
from memreader.stores.sqlite.writes import Changes

__all__ = ["SQLiteHandle", "VectorSource", "changes"]


class VectorSource(Protocol):
    """Where a transaction's change rules read an owner's cached vectors (the store's
    :class:`~memreader.stores.sqlite.operations.StoreOps`)."""

    def vectors(self, owner: str) -> OwnerVectors:
        """``owner``'s vectors, as cached (read on first use)."""
        ...


class SQLiteHandle(Protocol):
    """The embedded store as its hook functions see it."""

    #: The file (or ``":memory:"``), named by errors.
    path: str
    #: The cosine at which a new memory reinforces a stored one.
    near_duplicate: float
    #: The store's queries and caches: its cached vectors, here.
    _ops: VectorSource
    #: Held by every transaction: one connection, one transaction at a time.
    _lock: threading.RLock
    #: The store's connection.
    _conn: sqlite3.Connection

    def _transaction(
        self, conn: sqlite3.Connection | None = None, *, write: bool = True
    ) -> AbstractContextManager[sqlite3.Connection]:
        """One transaction under the store's lock (see
        :class:`~memreader.stores.sqlite.store.SQLiteStore`)."""
        ...

    def _error(self, exc: sqlite3.Error, *, opening: bool = False) -> StoreError:
        """``exc`` as a :class:`StoreError` naming the store."""
        ...


def changes(store: SQLiteHandle, conn: sqlite3.Connection, now: datetime) -> Changes:
    """The change rules of one transaction on ``conn`` (what a write, a forget or a budget
    expiry applies), over the store's cached vectors."""
    return Changes(conn, now, store._ops.vectors, store.near_duplicate)

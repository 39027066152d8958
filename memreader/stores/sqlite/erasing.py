"""The embedded store's erasing calls (:class:`SQLiteErasing`): ``delete`` and ``forget``, each
one write transaction under the store's lock that walks every place a memory's text lives
(:mod:`memreader.stores.erase_rules`), then, when it erased, the file-level steps of
:mod:`memreader.stores.sqlite.erase`."""

from __future__ import annotations

import sqlite3
import threading
from abc import abstractmethod
from contextlib import AbstractContextManager
from datetime import datetime
from typing import TYPE_CHECKING

from memreader.errors import StoreError
from memreader.stores.base import MemoryStore, SourceSelector
from memreader.stores.checks import moment
from memreader.stores.erasure import Tally
from memreader.stores.events import WriteEvent
from memreader.stores.sqlite.erase import optimize_text_index, settle_file
from memreader.stores.sqlite.writes import Changes
from memreader.stores.write_decisions import selector_key

if TYPE_CHECKING:
    from memreader.stores.sqlite.operations import StoreOps

__all__ = ["SQLITE_RESIDUE", "SQLiteErasing"]

#: What an erasure of the embedded store cannot reach (the receipt's ``residue``).
SQLITE_RESIDUE = (
    "copies made outside this file: backups, file-system snapshots, and a file written by "
    "an older memreader without secure_delete may hold freed bytes until VACUUM",
)


class SQLiteErasing(MemoryStore):
    """``delete`` and ``forget`` of the embedded store (see the module docstring)."""

    erase_residue = SQLITE_RESIDUE
    near_duplicate: float
    path: str
    _ops: StoreOps
    _lock: threading.RLock
    _conn: sqlite3.Connection

    @abstractmethod
    def _transaction(
        self, conn: sqlite3.Connection | None = None, *, write: bool = True
    ) -> AbstractContextManager[sqlite3.Connection]:
        """One transaction under the store's lock (see
        :class:`~memreader.stores.sqlite.store.SQLiteStore`)."""

    @abstractmethod
    def _error(self, exc: sqlite3.Error, *, opening: bool = False) -> StoreError:
        """``exc`` as a :class:`StoreError`."""

    def _forget(
        self, source: SourceSelector, user_id: str, now: datetime | None, erase: bool
    ) -> tuple[list[WriteEvent], Tally]:
        at = moment(now)
        key = selector_key(source)
        with self._transaction() as conn:
            changes = Changes(conn, at, self._ops.vectors, self.near_duplicate)
            events = changes.expire_from(user_id, key, erase=erase)
            if changes.tally.erased:
                optimize_text_index(conn, changes.tally)
            changes.bump_versions()
        self._settle_file(changes.tally)
        return events, changes.tally

    def _delete(
        self, memory_id: str, owner: str, *, erase: bool, now: datetime
    ) -> tuple[WriteEvent, Tally] | None:
        with self._transaction() as conn:
            changes = Changes(conn, now, self._ops.vectors, self.near_duplicate)
            event = changes.delete_one(owner, memory_id, erase=erase)
            if changes.tally.erased:
                optimize_text_index(conn, changes.tally)
            changes.bump_versions()
        self._settle_file(changes.tally)
        return None if event is None else (event, changes.tally)

    def _settle_file(self, tally: Tally) -> None:
        """After an erasing commit, the WAL is checkpointed and truncated (see
        :func:`~memreader.stores.sqlite.erase.settle_file`)."""
        if not tally.erased:
            return
        with self._lock:
            try:
                settle_file(self._conn, self.path, tally)
            except sqlite3.Error as exc:
                raise self._error(exc) from exc

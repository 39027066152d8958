"""The embedded store's erasing hooks: ``_delete`` and ``_forget``, each
one write transaction under the store's lock that walks every place a memory's text lives
(:mod:`memreader.stores.erase_rules`), then, when it erased, the file-level steps of
:mod:`memreader.stores.sqlite.erase`."""

from __future__ import annotations

import sqlite3
from datetime import datetime

from memreader.stores.checks import SourceSelector, moment
from memreader.stores.erasure import Tally
from memreader.stores.events import WriteEvent
from memreader.stores.sqlite.erase import optimize_text_index, settle_file
from memreader.stores.sqlite.handle import SQLiteHandle
from memreader.stores.sqlite.handle import changes as handle_changes
from memreader.stores.write_decisions import selector_key

__all__ = ["SQLITE_RESIDUE", "delete", "forget", "settle_after_erasure"]

#: What an erasure of the embedded store cannot reach (the receipt's ``residue``).
SQLITE_RESIDUE = (
    "copies made outside this file: backups, file-system snapshots, and a file written by "
    "an older memreader without secure_delete may hold freed bytes until VACUUM",
)


def forget(
    store: SQLiteHandle, source: SourceSelector, user_id: str, now: datetime | None, erase: bool
) -> tuple[list[WriteEvent], Tally]:
    at = moment(now)
    key = selector_key(source)
    with store._transaction() as conn:
        changes = handle_changes(store, conn, at)
        events = changes.expire_from(user_id, key, erase=erase)
        if changes.tally.erased:
            optimize_text_index(conn, changes.tally)
        changes.bump_versions()
    settle_after_erasure(store, changes.tally)
    return events, changes.tally


def delete(
    store: SQLiteHandle, memory_id: str, owner: str, *, erase: bool, now: datetime
) -> tuple[WriteEvent, Tally] | None:
    with store._transaction() as conn:
        changes = handle_changes(store, conn, now)
        event = changes.delete_one(owner, memory_id, erase=erase)
        if changes.tally.erased:
            optimize_text_index(conn, changes.tally)
        changes.bump_versions()
    settle_after_erasure(store, changes.tally)
    return None if event is None else (event, changes.tally)


def settle_after_erasure(store: SQLiteHandle, tally: Tally) -> None:
    """After an erasing commit, the WAL is checkpointed and truncated (see
    :func:`~memreader.stores.sqlite.erase.settle_file`)."""
    if not tally.erased:
        return
    with store._lock:
        try:
            settle_file(store._conn, store.path, tally)
        except sqlite3.Error as exc:
            raise store._error(exc) from exc

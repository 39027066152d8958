"""Where a session's items live: the SDK's own ``SQLiteSession`` in two tables of their own,
in the file :func:`items_file` picks, with deleted rows overwritten (SQLite's
``secure_delete``) and, after an erasure, the write-ahead log emptied (:func:`scrub`), so a
popped or cleared item's text does not linger in the file.

memreader's stores have no table for raw transcripts: the items are kept beside the memories
(in the store's own file when it is a SQLite file), never inside the store's tables.
"""

from __future__ import annotations

import asyncio
import logging
import os
import sqlite3
from contextlib import closing
from typing import Any

from agents.memory.sqlite_session import SQLiteSession

from memreader.front.async_memory import AsyncMemory
from memreader.integrations.openai_agents.binding import AgentsMemoryError
from memreader.stores.urls import public_url, sqlite_file

__all__ = ["ITEM_TABLES", "KeptItems", "items_file", "scrub"]

_log = logging.getLogger(__name__)

#: The tables the kept items live in (the sessions', the items').
ITEM_TABLES = ("memreader_agents_sessions", "memreader_agents_items")
#: How long a checkpoint waits for the file's other writers.
_BUSY_S = 5.0


class KeptItems(SQLiteSession):
    """The SDK's ``SQLiteSession`` in :data:`ITEM_TABLES`, overwriting what it deletes."""

    def __init__(self, key: str, path: str) -> None:
        super().__init__(key, path, sessions_table=ITEM_TABLES[0], messages_table=ITEM_TABLES[1])

    @staticmethod
    def _configure_connection(conn: sqlite3.Connection) -> None:
        SQLiteSession._configure_connection(conn)
        # A popped or cleared item's bytes are zeroed, not left in free pages.
        conn.execute("PRAGMA secure_delete = ON")


def items_file(memory: AsyncMemory, items_db: Any) -> str:
    """Where the items are kept: ``items_db``, else the store's SQLite file, else (a
    ``sqlite://:memory:`` store) memory.

    Raises:
        AgentsMemoryError: a bad ``items_db``, or none and the store is not SQLite.
    """
    if items_db is not None:
        if not isinstance(items_db, (str, os.PathLike)) or not os.fspath(items_db):
            raise AgentsMemoryError(f"items_db must be a SQLite file path, got {items_db!r}")
        return os.fspath(items_db)
    url = memory.memory.store_url
    found = sqlite_file(url)
    if found is not None:
        return found
    if url.lower().startswith("sqlite://:memory:"):
        return ":memory:"
    raise AgentsMemoryError(
        f"the store {public_url(url)} is not a SQLite file: pass items_db= (a SQLite file "
        "path) to say where the session's items are kept"
    )


async def scrub(path: str) -> None:
    """Move the write-ahead log of ``path`` into the file and empty it, so deleted items'
    earlier versions leave the log (a log still read by another connection is logged)."""
    if path == ":memory:":
        return

    def checkpoint() -> None:
        with closing(sqlite3.connect(path, timeout=_BUSY_S)) as conn:
            busy, _, _ = conn.execute("PRAGMA wal_checkpoint(TRUNCATE)").fetchone()
        if busy:
            _log.warning("%s: the write-ahead log is in use; erased items stay in it for now", path)

    await asyncio.to_thread(checkpoint)

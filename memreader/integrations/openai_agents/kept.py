"""Where a session's items live: the SDK's own ``SQLiteSession`` in two tables of their own,
in the file :func:`items_file` picks, with deleted rows overwritten (SQLite's
``secure_delete``) and, after an erasure, the write-ahead log emptied (:func:`scrub`), so a
popped or cleared item's text does not linger in the file.

memreader's stores have no table for raw transcripts: the items are kept beside the memories
(in the store's own file when it is a SQLite file), never inside the store's tables.
"""

from __future__ import annotations

import asyncio
import json
import logging
import os
import sqlite3
from contextlib import closing
from typing import Any

from agents.memory.sqlite_session import SQLiteSession

from memreader.front.async_memory import AsyncMemory
from memreader.integrations.openai_agents.binding import AgentsMemoryError
from memreader.integrations.openai_agents.items import item_digest
from memreader.stores.urls import public_url, sqlite_file

__all__ = ["ITEM_TABLES", "KeptItems", "items_file", "scrub", "scrub_now"]

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

    # An erasure by memreader (``Memory.forget(..., erase=True)``) runs in its caller's thread:
    # these two are synchronous, under the SDK's own lock, as its async methods' threads are.

    def erase_all(self) -> int:
        """Remove every item of this session now; how many there were."""
        with self._write_connection() as conn:
            query = f"DELETE FROM {self.messages_table} WHERE session_id = ?"
            removed = conn.execute(query, (self.session_id,)).rowcount
            conn.execute(
                f"DELETE FROM {self.sessions_table} WHERE session_id = ?", (self.session_id,)
            )
            conn.commit()
        return max(removed, 0)

    def erase_item(self, position: int, digest: str) -> int:
        """Remove the item whose content has ``digest`` (a message id's), the one nearest
        ``position`` when several have (positions shift once an earlier item is gone); how
        many were removed (0 or 1)."""
        with self._write_connection() as conn:
            rows = conn.execute(
                f"SELECT id, message_data FROM {self.messages_table} "
                "WHERE session_id = ? ORDER BY id",
                (self.session_id,),
            ).fetchall()
            found = [
                (abs(index - position), row_id)
                for index, (row_id, data) in enumerate(rows)
                if _digest(data) == digest
            ]
            if not found:
                return 0
            conn.execute(f"DELETE FROM {self.messages_table} WHERE id = ?", (min(found)[1],))
            conn.commit()
        return 1


def _digest(data: str) -> str | None:
    try:
        return item_digest(json.loads(data))
    except (ValueError, TypeError, AttributeError):  # not an item the SDK wrote: no id names it
        return None


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
    """:func:`scrub_now` off the event loop."""
    await asyncio.to_thread(scrub_now, path)


def scrub_now(path: str) -> None:
    """Move the write-ahead log of ``path`` into the file and empty it, so deleted items'
    earlier versions leave the log (a log still read by another connection is logged)."""
    if path == ":memory:":
        return
    with closing(sqlite3.connect(path, timeout=_BUSY_S)) as conn:
        busy, _, _ = conn.execute("PRAGMA wal_checkpoint(TRUNCATE)").fetchone()
    if busy:
        _log.warning("%s: the write-ahead log is in use; erased items stay in it for now", path)

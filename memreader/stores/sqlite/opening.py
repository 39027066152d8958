"""Opening the embedded store's file: one connection, its pragmas, its schema created or
upgraded when (and only when) it needs it, and its version checked."""

from __future__ import annotations

import sqlite3
from collections.abc import Callable

from memreader.errors import StoreError
from memreader.stores.sqlite.folder import make_folder
from memreader.stores.sqlite.passages import PASSAGE_SCHEMA, passages_current
from memreader.stores.sqlite.schema import (
    SCHEMA_VERSION,
    create_or_upgrade,
    is_wal,
    schema_is_current,
)
from memreader.stores.sqlite.usage import USE_SCHEMA, use_current
from memreader.stores.sqlite.vectors import unusable_blob

__all__ = ["CACHE_KIB", "connect"]

#: The connection's page cache, KiB (SQLite's default is 2 MB). A row of the memories table
#: (its item and vector) fills most of a 4 KB page, so a search joining a few hundred
#: full-text matches to their rows read that many pages: with the default cache, again from
#: the file each time (0.96 ms of a 3.4 ms search of 2,000 memories; 0.61 ms with the file's
#: pages kept, issue 31). Pages are held only as they are read, up to this bound.
CACHE_KIB = 65_536


def connect(path: str, timeout: float, error: Callable[..., StoreError]) -> sqlite3.Connection:
    """Open the store file ``path`` (``timeout``: seconds to wait for another process's
    lock; ``error`` turns a sqlite failure into the store's :class:`StoreError`); write only
    when it needs it (a new file, a table or index added since it was made): opening a
    current store reads its schema, so it never waits for another process's write lock
    (readers never wait for the writer). The file's folder is made first when missing."""
    make_folder(path)
    try:
        conn = sqlite3.connect(path, timeout=timeout, isolation_level=None, check_same_thread=False)
    except sqlite3.Error as exc:
        raise StoreError(f"cannot open the sqlite store {path}: {exc}") from exc
    try:
        conn.execute(f"PRAGMA busy_timeout = {int(timeout * 1000)}")
        conn.execute("PRAGMA synchronous = NORMAL")
        # What a delete frees is overwritten with zeros (erase: memreader.stores.sqlite.erase).
        conn.execute("PRAGMA secure_delete = ON")
        conn.execute(f"PRAGMA cache_size = -{CACHE_KIB}")
        conn.create_function("memreader_unusable_vector", 1, unusable_blob, deterministic=True)
        if not (schema_is_current(conn) and passages_current(conn) and use_current(conn)):
            if path != ":memory:" and not is_wal(conn):
                conn.execute("PRAGMA journal_mode = WAL")
            # One immediate transaction: two processes opening a new (or older) file
            # create (or upgrade) it once; the passage index and the use records are
            # their own steps (an older file gains them here).
            create_or_upgrade(conn, also=PASSAGE_SCHEMA + USE_SCHEMA)
        _check_version(conn, path)
    except sqlite3.Error as exc:
        conn.close()
        raise error(exc, opening=True) from exc
    except BaseException:
        conn.close()
        raise
    return conn


def _check_version(conn: sqlite3.Connection, path: str) -> None:
    row = conn.execute("SELECT value FROM memreader_meta WHERE key = 'schema'").fetchone()
    if row is None or row[0] != SCHEMA_VERSION:
        found = row[0] if row else "(none)"
        raise StoreError(f"{path} has store schema {found}; this memreader reads {SCHEMA_VERSION}")

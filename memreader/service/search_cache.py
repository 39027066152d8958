"""A short-lived cache of search answers: the same search of the same user within
``search_cache_s`` (1 s) is answered from the first one, unless the store changed in between.

What keeps it honest:

- **Never another user's results.** The key is the searched ``user_id`` with every search
  parameter; a request reaches the cache only after its key was checked against that user
  (403 otherwise), so a hit serves a user's results to a key allowed to read them.
- **Never older than a write.** Each answer is kept with the store's data version read
  *before* its search ran (SQLite's ``PRAGMA data_version`` on a connection of the cache's
  own: it changes when any connection, in any process, commits to the store). A lookup whose
  version differs is a miss: a write committed (by this worker, another worker, a job or
  another program) since the answer's search began. Only SQLite stores are cached; for others
  the store's version cannot be read across replicas, and every search runs.
- **Bounded.** At most ``max_entries`` answers; older than ``ttl_s`` they are not served.

>>> cache = SearchCache(lambda: 7, ttl_s=60)
>>> version = cache.version()
>>> cache.put(("alice", "{}"), version, b'{"hits": []}'); cache.get(("alice", "{}"))
b'{"hits": []}'
>>> cache.get(("bob", "{}")) is None
True
"""

from __future__ import annotations

import itertools
import logging
import sqlite3
import threading
import time
from collections import OrderedDict
from collections.abc import Callable, Hashable
from pathlib import Path

__all__ = ["SearchCache", "sqlite_version"]

logger = logging.getLogger(__name__)


class SearchCache:
    """Answers by key, each with the store version and time its search began (see the module
    docstring); ``store_version`` ``None``: nothing is cached."""

    def __init__(
        self,
        store_version: Callable[[], int] | None,
        ttl_s: float = 1.0,
        max_entries: int = 1024,
    ) -> None:
        self._store_version = store_version if ttl_s > 0 else None
        self.ttl_s = ttl_s
        self.max_entries = max_entries
        self._entries: OrderedDict[Hashable, tuple[int, float, bytes]] = OrderedDict()
        self._lock = threading.Lock()
        self.hits = 0

    @property
    def enabled(self) -> bool:
        """Whether answers are kept at all."""
        return self._store_version is not None

    def version(self) -> int | None:
        """The store's version now (read it before the search runs), or ``None``."""
        return None if self._store_version is None else self._store_version()

    def get(self, key: Hashable) -> bytes | None:
        """The kept answer of ``key``, if its search began under the store's current version
        less than ``ttl_s`` ago."""
        if self._store_version is None:
            return None
        with self._lock:
            entry = self._entries.get(key)
        if entry is None:
            return None
        version, began, body = entry
        if time.monotonic() - began >= self.ttl_s or version != self._store_version():
            return None
        self.hits += 1
        return body

    def put(
        self, key: Hashable, version: int | None, body: bytes, began: float | None = None
    ) -> None:
        """Keep ``body``, the answer of a search that began at ``began`` (monotonic; default
        now) under store ``version``."""
        if version is None:
            return
        began = time.monotonic() if began is None else began
        with self._lock:
            self._entries[key] = (version, began, body)
            self._entries.move_to_end(key)
            while len(self._entries) > self.max_entries:
                self._entries.popitem(last=False)

    def close(self) -> None:
        """Forget every answer."""
        with self._lock:
            self._entries.clear()


def sqlite_version(path: str) -> Callable[[], int] | None:
    """A reader of the data version of the SQLite file ``path`` (a read-only connection of its
    own), or ``None`` when it cannot be opened (then nothing is cached). A version that cannot
    be read is one never seen before (every lookup misses)."""
    uri = Path(path).absolute().as_uri() + "?mode=ro"
    try:
        conn = sqlite3.connect(uri, uri=True, isolation_level=None, check_same_thread=False)
        conn.execute("PRAGMA data_version").fetchone()
    except sqlite3.Error as exc:
        logger.info("search cache off: cannot watch %s for writes (%s)", path, exc)
        return None
    lock = threading.Lock()
    unseen = itertools.count(-1, -1)

    def version() -> int:
        with lock:
            try:
                return int(conn.execute("PRAGMA data_version").fetchone()[0])
            except sqlite3.Error:
                return next(unseen)

    return version

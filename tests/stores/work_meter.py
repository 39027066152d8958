"""How much work a store call does inside its database, counted rather than timed (a test on a
loaded machine cannot time anything): :func:`database_work` counts, for SQLite, the virtual
machine's instructions run on the store's connection (its progress handler, every
:data:`STEP` instructions); for PostgreSQL, the index entries and table rows that the call's
``SELECT`` statements read, replayed in a transaction of their own and counted by the server's
per-transaction statistics (``pg_stat_get_xact_*``: exact, and visible before any flush)."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

import pytest

from memreader.stores import MemoryStore

#: SQLite instructions per count of its progress handler.
STEP = 100

_READ = (
    "SELECT COALESCE(SUM(pg_stat_get_xact_tuples_returned(c.oid) "
    "+ pg_stat_get_xact_tuples_fetched(c.oid)), 0) FROM pg_class c "
    "WHERE c.relname LIKE 'memreader%%'"
)


@dataclass
class Work:
    """What :func:`database_work` counted (``units``), once its block has ended."""

    units: int = 0
    statements: list[tuple[Any, Any]] = field(default_factory=list)


@contextmanager
def database_work(store: MemoryStore, monkeypatch: pytest.MonkeyPatch) -> Iterator[Work]:
    """Count the database work of the calls on ``store`` inside the block."""
    work = Work()
    conn = getattr(store, "_conn", None)
    if conn is not None:  # SQLite

        def count() -> int:
            work.units += 1
            return 0

        conn.set_progress_handler(count, STEP)
        try:
            yield work
        finally:
            conn.set_progress_handler(None, STEP)
        return
    import psycopg

    execute = psycopg.Cursor.execute

    def captured(self: Any, query: Any, params: Any = None, **options: Any) -> Any:
        work.statements.append((query, params))
        return execute(self, query, params, **options)

    with monkeypatch.context() as patch:
        patch.setattr(psycopg.Cursor, "execute", captured)
        yield work
    url = store._session._url  # type: ignore[attr-defined]
    with psycopg.connect(url) as replay:  # one transaction, rolled back at the end
        before = replay.execute(_READ).fetchone()[0]
        for query, params in work.statements:
            text = query if isinstance(query, str) else query.as_string(replay)
            if text.lstrip().upper().startswith("SELECT"):
                replay.execute(query, params)
        work.units = int(replay.execute(_READ).fetchone()[0] - before)
        replay.rollback()

"""What the memory store tests share: items built by hand, raw SQL on a store's database, and
the fixtures that run one test on both backends (a SQLite file in ``tmp_path``, a fresh
PostgreSQL database on a server started once per module by tests/pg_server.py).

A test module takes the fixtures by assignment
(``pg_admin, backend, new_url, url, store = FIXTURES``), so that pytest finds them there:
``backend`` ("sqlite" or "postgresql"), ``new_url`` (a factory of fresh, empty stores of that
backend), ``url`` (one such store) and ``store`` (it, opened with the ``hash`` embedder).
"""

from __future__ import annotations

import itertools
import sqlite3
from collections.abc import Callable, Iterator
from contextlib import closing
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

import pytest

from memreader.items import SourceMessage, TextualMemoryItem, TextualMemoryItemMetadata
from memreader.stores import MemoryStore, open_store
from memreader.testing import HashEmbedder
from tests.pg_server import create_database, running_server

T0 = datetime(2026, 1, 10, 12, 0, tzinfo=timezone.utc)
BACKENDS = ["sqlite", "postgresql"]
_NAMES = itertools.count()

#: The PostgreSQL tables and their SQLite names (the columns are the same).
_SQLITE_TABLES = {
    "memreader_memories": "memories",
    "memreader_history": "history",
    "memreader_keys": "memory_keys",
}


def item(
    item_id: str,
    text: str,
    *,
    user: str = "u1",
    session: str = "s1",
    doc: str | None = None,
    message: str | None = None,
    at: datetime | None = None,
    vector: list[float] | None = None,
    model: str | None = None,
    memory_type: str = "LongTermMemory",
) -> TextualMemoryItem:
    """A memory item citing one source (the whole text of message 0)."""
    source = SourceMessage(
        scene_index=0,
        message_index=0,
        span=(0, len(text)),
        content=text,
        doc_path=doc,
        message_id=message,
        timestamp=at,
    )
    meta = TextualMemoryItemMetadata(
        user_id=user,
        session_id=session,
        memory_type=memory_type,
        sources=[source],
        embedding=vector,
        embedding_model=model,
    )
    return TextualMemoryItem(id=item_id, memory=text, metadata=meta)


def events(result: list[Any]) -> list[tuple[str, str]]:
    return [(e.event, e.memory_id) for e in result]


def sql(url: str, query: str, *params: Any) -> list[tuple[Any, ...]]:
    """Rows of ``query`` on the store's database (none for a statement without a result).
    The query is PostgreSQL's (``%s`` parameters, ``memreader_*`` tables); on a SQLite store
    it runs with SQLite's names."""
    if url.startswith("sqlite:///"):
        for table, name in _SQLITE_TABLES.items():
            query = query.replace(table, name)
        query = query.replace("%s", "?").replace("%%", "%")
        with closing(sqlite3.connect(url.removeprefix("sqlite:///"))) as conn:
            rows = conn.execute(query, params).fetchall()
            conn.commit()
            return rows
    import psycopg

    with psycopg.connect(url, autocommit=True) as conn:
        cursor = conn.execute(query, params)
        return cursor.fetchall() if cursor.description is not None else []


# -- fixtures (assigned into the test modules) ---------------------------------------------------


@pytest.fixture(scope="module")
def pg_admin() -> Iterator[str]:
    """The admin URL of a PostgreSQL server for this module (started only if a test needs it)."""
    with running_server() as admin_url:
        yield admin_url


@pytest.fixture(params=BACKENDS)
def backend(request: pytest.FixtureRequest) -> str:
    return str(request.param)


@pytest.fixture
def new_url(backend: str, tmp_path: Path, request: pytest.FixtureRequest) -> Callable[[str], str]:
    """Make a new, empty store of this test's backend, named ``name``; return its URL."""
    admin = request.getfixturevalue("pg_admin") if backend == "postgresql" else ""

    def make(name: str) -> str:
        if backend == "sqlite":
            return f"sqlite:///{tmp_path / name}.db"
        return create_database(admin, f"{name}{next(_NAMES)}")

    return make


@pytest.fixture
def url(new_url: Callable[[str], str]) -> str:
    return new_url("m")


@pytest.fixture
def store(url: str) -> Iterator[MemoryStore]:
    with open_store(url, embedder=HashEmbedder()) as opened:
        yield opened


FIXTURES = (pg_admin, backend, new_url, url, store)

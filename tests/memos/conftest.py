"""``url``: a fresh, empty memory store of each backend (a SQLite file in ``tmp_path``, or a new
database on the PostgreSQL server that ``pg_admin`` starts once for the run, by
tests/pg_server.py), for the tests of a MemOS ``graph_db`` that is a store and of stored memories
written in MemOS's shape."""

from __future__ import annotations

import itertools
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.pg_server import create_database, running_server

_NAMES = itertools.count()


@pytest.fixture(scope="session")
def pg_admin() -> Iterator[str]:
    """The admin URL of one PostgreSQL server for these tests (started only if one needs it)."""
    with running_server() as admin_url:
        yield admin_url


@pytest.fixture(params=["sqlite", "postgresql"])
def url(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    if request.param == "sqlite":
        return f"sqlite:///{tmp_path / 'memos'}.db"
    return create_database(request.getfixturevalue("pg_admin"), f"memos{next(_NAMES)}")

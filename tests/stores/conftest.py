"""The fixtures that run one store test on both backends: ``backend`` ("sqlite" or
"postgresql"), ``new_url`` (a factory of fresh, empty stores of that backend: a SQLite file in
``tmp_path``, or a new database on the PostgreSQL server that ``pg_admin`` starts once for the
run, by tests/pg_server.py), ``url`` (one such store) and ``store`` (it, opened with the
``hash`` embedder). A module that defines a fixture of the same name uses its own."""

from __future__ import annotations

import itertools
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from memreader.stores import MemoryStore, open_store
from memreader.testing import HashEmbedder
from tests.pg_server import create_database, running_server

BACKENDS = ["sqlite", "postgresql"]
_NAMES = itertools.count()


@pytest.fixture(scope="session")
def pg_admin() -> Iterator[str]:
    """The admin URL of one PostgreSQL server for the whole run (started only if a test needs
    it: starting one costs seconds); every test gets a database of its own on it."""
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

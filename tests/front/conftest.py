"""Fixtures of the front door's tests: ``memory`` (a :class:`~memreader.Memory` on a SQLite file in
``tmp_path``, with the ``hash`` embedder: the model is not the point there) and ``fast_config``
(the reader config it is built from), and ``home`` (``MEMREADER_HOME`` set to a fresh folder, so
no test touches the real per-user data folder)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from memreader import Memory


@pytest.fixture
def home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    folder = tmp_path / "home"
    monkeypatch.setenv("MEMREADER_HOME", str(folder))
    return folder


@pytest.fixture
def fast_config() -> dict[str, Any]:
    return {"backend": "simple_struct", "config": {"embedder": {"backend": "hash"}}}


@pytest.fixture
def memory(tmp_path: Path, fast_config: dict[str, Any], home: Path) -> Iterator[Memory]:
    with Memory(fast_config, store=f"sqlite:///{tmp_path / 'm.db'}") as m:
        yield m


@pytest.fixture(scope="module")
def pg_url() -> Iterator[str]:
    """A fresh database on a PostgreSQL server of this module's own (tests/pg_server.py)."""
    from tests.pg_server import create_database, running_server

    with running_server() as admin_url:
        yield create_database(admin_url, "front")

"""The store fixtures of tests/stores (both backends: SQLite and PostgreSQL via pgserver), for the
tests of a MemOS ``graph_db`` that is a store and of items written in MemOS's shape."""

from __future__ import annotations

from tests.stores.conftest import backend, new_url, pg_admin, url

__all__ = ["backend", "new_url", "pg_admin", "url"]

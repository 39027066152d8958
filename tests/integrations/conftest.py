"""What the adapters' tests share: an empty in-memory ``Memory`` on the ``hash`` embedder."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from memreader import Memory
from tests.common import HASH_MEMORY


@pytest.fixture
def memory() -> Iterator[Memory]:
    """An empty Memory on an in-memory SQLite store (a test module may define its own)."""
    with Memory(HASH_MEMORY, store="sqlite://:memory:") as m:
        yield m

"""What a write costs as an owner's memories grow (issue 41, class 4), on both backends: every
check a write makes per item goes through an index, so writing (or looking up) the same number
of new items costs the same work at 150 memories as at ten times as many. Work is counted
inside the database (tests/stores/work_meter.py), never timed; the wall-clock growth is
measured by ``benchmarks/ingest_growth.py``."""

from __future__ import annotations

import pytest

from memreader.items import TextualMemoryItem
from memreader.stores import MemoryStore
from tests.stores.store_backends import T0, item, sql
from tests.stores.work_meter import database_work

pytestmark = pytest.mark.timeout(300)

SMALL, LARGE = 150, 1500
#: New items per measured write (and lookup).
NEW = 40


def _items(start: int, count: int) -> list[TextualMemoryItem]:
    return [
        item(f"m{i}", f"memory {i} of topic {i % 37}, word{i % 101}")
        for i in range(start, start + count)
    ]


def _grow(store: MemoryStore, url: str, backend: str, to: int, held: int) -> None:
    for start in range(held, to, 500):
        store.write(_items(start, min(500, to - start)), now=T0)
    if backend == "postgresql":  # the statistics autovacuum keeps; plans rest on them
        sql(url, "ANALYZE memreader_memories")


def _measured(store: MemoryStore, monkeypatch: pytest.MonkeyPatch, start: int) -> tuple[int, int]:
    store.write(_items(start, 5), now=T0)  # warm: the cached vectors follow the writes
    with database_work(store, monkeypatch) as write:
        events = store.write(_items(start + 5, NEW), now=T0)
    assert [e.event for e in events] == ["ADD"] * NEW
    with database_work(store, monkeypatch) as lookup:
        found = store.lookup(_items(start + 100, NEW) + _items(0, 2), user_id="u1")
    assert [f is None for f in found] == [True] * NEW + [False] * 2
    return write.units, lookup.units


def test_a_write_and_a_lookup_cost_the_same_at_ten_times_the_memories(
    store: MemoryStore, url: str, backend: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    _grow(store, url, backend, SMALL, 0)
    small = _measured(store, monkeypatch, 100_000)
    _grow(store, url, backend, LARGE, SMALL)
    large = _measured(store, monkeypatch, 200_000)
    # Today's per-item checks read every active row of the owner: ten times the rows, about
    # ten times the work. Through the indexes it stays within a few percent.
    assert large[0] <= 1.5 * small[0], (small, large)
    assert large[1] <= 1.5 * small[1] + 20, (small, large)

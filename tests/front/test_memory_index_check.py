"""The index checked when ``Memory`` opens its store (the reader config's ``index:``): one
warning per store naming the counts and the command (not for a text-only ``Memory``), a
repair on open that leaves nothing missing and is bounded by its deadline, ``ignore``, and a
bad setting refused by name."""

from __future__ import annotations

import logging
from pathlib import Path
from typing import Any

import pytest

from memreader import AsyncMemory, Memory
from memreader.errors import ConfigError
from memreader.stores import open_store
from tests.common import HASH_MEMORY

LOGGER = "memreader.stores.lifecycle.index_check"


def _memory_config(**index: Any) -> dict[str, Any]:
    return {"config": {**HASH_MEMORY["config"], "index": index}}


@pytest.fixture
def bare(tmp_path: Path) -> str:
    """A store of three memories of ana written text only (no vectors)."""
    url = f"sqlite:///{tmp_path / 'bare.db'}"
    with open_store(url, text_only=True) as store:
        for i in range(3):
            store.add_memory(f"Ana's fact {i}: the tram {i} leaves at {i}", user_id="ana")
    return url


def _warnings(caplog: pytest.LogCaptureFixture) -> list[str]:
    return [r.getMessage() for r in caplog.records if r.name == LOGGER and r.levelno >= 30]


def test_memory_warns_once_per_store_with_the_counts_and_the_command(
    bare: str, caplog: pytest.LogCaptureFixture
) -> None:
    with caplog.at_level(logging.WARNING, logger=LOGGER):
        with Memory(HASH_MEMORY, store=bare) as m:
            assert m.index_health().missing == 3
        with Memory(HASH_MEMORY, store=bare):
            pass  # the same store again: no second warning
    [warning] = _warnings(caplog)
    assert "3 of 3 active memories are not in the vector index (3 without a vector)" in warning
    assert f"`memreader maintain --store {bare} --config READER.yaml`" in warning
    assert "index: {on_open: repair}" in warning


def test_a_store_warned_about_is_not_counted_again_on_the_next_open(
    bare: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    from memreader.stores.lifecycle import index_check

    counted: list[str] = []
    count = index_check.index_health

    def counting(store: Any, **options: Any) -> Any:
        counted.append(index_check.store_name(store))
        return count(store, **options)

    monkeypatch.setattr(index_check, "index_health", counting)
    for _ in range(3):
        with Memory(HASH_MEMORY, store=bare):
            pass
    assert counted == [bare]  # counted and warned on the first open only


def test_a_text_only_memory_does_not_warn(bare: str, caplog: pytest.LogCaptureFixture) -> None:
    with caplog.at_level(logging.WARNING, logger=LOGGER):
        words_only = Memory({"config": {"embedder": None}}, store=bare)
    with words_only as m:
        health = m.index_health()
    assert health.text_only and health.ok and _warnings(caplog) == []


def test_ignore_counts_nothing_on_open(bare: str, caplog: pytest.LogCaptureFixture) -> None:
    with caplog.at_level(logging.WARNING, logger=LOGGER):
        m = Memory(_memory_config(on_open="ignore"), store=bare)
    with m:
        assert m.index_health().unindexed == 3  # still there when asked
    assert _warnings(caplog) == []


def test_repair_on_open_leaves_none_missing_and_search_finds_them_by_vector(bare: str) -> None:
    with Memory(_memory_config(on_open="repair"), store=bare) as m:
        assert m.index_health().ok and m.store.embedding_models() == {"hash:16": 3}
        query = "Ana's fact 1: the tram 1 leaves at 1"  # the hash embedder: its own vector
        hits = m.store.search(query, user_id="ana", mode="vector", k=1)
        assert [h.memory.item.memory for h in hits] == [query]


def test_a_repair_on_open_past_its_deadline_still_opens_and_says_what_to_run(
    bare: str, caplog: pytest.LogCaptureFixture
) -> None:
    config = _memory_config(on_open="repair", repair_within_s=1e-9)
    with caplog.at_level(logging.WARNING, logger=LOGGER), Memory(config, store=bare) as m:
        assert m.index_health().missing == 3  # nothing repaired, the store open
    [warning] = _warnings(caplog)
    assert "the repair on open stopped" in warning and "memreader maintain --store" in warning


def test_async_memory_reports_the_index(bare: str) -> None:
    import asyncio

    async def health() -> int:
        async with AsyncMemory(_memory_config(on_open="ignore"), store=bare) as m:
            return (await m.index_health()).missing

    assert asyncio.run(health()) == 3


@pytest.mark.parametrize(
    ("index", "field"),
    [({"on_open": "sometimes"}, "on_open"), ({"repair_within_s": 0}, "repair_within_s")],
)
def test_a_bad_index_setting_is_refused_by_name(
    tmp_path: Path, index: dict[str, Any], field: str
) -> None:
    with pytest.raises(ConfigError, match=field):
        Memory(_memory_config(**index), store=f"sqlite:///{tmp_path / 'm.db'}")


def test_postgresql_warns_with_its_masked_url_and_repairs_on_open(
    pg_url: str, caplog: pytest.LogCaptureFixture
) -> None:
    from memreader.stores import public_url

    with open_store(pg_url, text_only=True, dimension=16) as store:
        store.add_memory("Ana's fact: the tram leaves at nine", user_id="ana")
    with caplog.at_level(logging.WARNING, logger=LOGGER), Memory(HASH_MEMORY, store=pg_url):
        pass
    [warning] = _warnings(caplog)
    assert f"memreader maintain --store {public_url(pg_url)} --config" in warning
    with Memory(_memory_config(on_open="repair"), store=pg_url) as m:
        assert m.index_health().ok and m.store.embedding_models() == {"hash:16": 1}

"""The life cycle through ``Memory``: the reader config's ``lifecycle:`` budget, pins,
restores and ``maintain``."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest

from memreader import AsyncMemory, Memory
from memreader.errors import ConfigError, InputError
from memreader.stores import UnknownMemoryError


def _config(**lifecycle: Any) -> dict[str, Any]:
    return {
        "backend": "simple_struct",
        "config": {"embedder": {"backend": "hash"}, "lifecycle": lifecycle},
    }


def test_the_config_budget_keeps_an_owner_under_its_watermark(tmp_path: Path, home: Path) -> None:
    with Memory(_config(max_active=5), store=f"sqlite:///{tmp_path / 'm.db'}") as m:
        first = m.add_memory("I keep bees on the roof.", user_id="ana").memory_id
        assert m.pin([first], user_id="ana") == 1
        for i in range(8):
            m.add_memory(f"fact {i}: the tram {i} leaves at {i} o'clock", user_id="ana")
        active = [h.id for h in m.search("tram bees roof", user_id="ana", k=50)]
        assert first in active and len(active) <= 4  # watermark 4, target 3
        report = m.maintain(dry_run=True)
        assert report.expired == {} and report.repaired == {}
        hits = m.search("tram", user_id="ana", k=50, include_inactive=True)
        gone = next(h.id for h in hits if h.memory.status == "expired")
        assert m.restore(gone, user_id="ana").event == "ADD"
        assert m.get(gone, user_id="ana").status == "active"  # type: ignore[union-attr]


def test_restore_and_unpin_need_an_owner(memory: Memory) -> None:
    with pytest.raises(InputError, match=r"restore\(\)"):
        memory.restore("m1")
    with pytest.raises(UnknownMemoryError, match="user 'ana' has no memory 'nope'"):
        memory.pin(["nope"], user_id="ana")
    assert memory.unpin(["nope"], user_id="ana") == 0


def test_a_bad_lifecycle_in_the_reader_config_is_a_config_error(tmp_path: Path, home: Path) -> None:
    with pytest.raises(ConfigError, match=r"lifecycle\.max_active: Input should be greater than"):
        Memory(_config(max_active=-1), store=f"sqlite:///{tmp_path / 'm.db'}")


def test_async_memory_pins_restores_and_maintains(tmp_path: Path, home: Path) -> None:
    async def run() -> None:
        store = f"sqlite:///{tmp_path / 'a.db'}"
        async with AsyncMemory(_config(max_active=5), store=store) as m:
            ids = [
                (await m.add_memory(f"fact {i}: the ferry {i} at {i}", user_id="ana")).memory_id
                for i in range(2)
            ]
            assert await m.pin(ids[:1], user_id="ana") == 1
            for i in range(2, 5):
                await m.add_memory(f"fact {i}: the bus {i} at {i}", user_id="ana")
            assert (await m.restore(ids[1], user_id="ana")).event == "ADD"
            assert await m.unpin(ids[:1], user_id="ana") == 1
            report = await m.maintain(dry_run=True)
            assert report.dry_run and report.expired == {}

    asyncio.run(run())

"""``AsyncMemory``: the same API as ``Memory``, as coroutines, with the same results and errors."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest

from memreader import AsyncMemory, InputError, Memory, StoreError

CHAT = [{"role": "user", "content": "I moved to Lisbon and want piano lessons."}]


def test_async_memory_does_what_memory_does(
    tmp_path: Path, fast_config: dict[str, Any], home: Path
) -> None:
    async def run() -> None:
        async with AsyncMemory(fast_config, store=f"sqlite:///{tmp_path / 'a.db'}") as m:
            added = await m.add(CHAT, user_id="emily")
            assert added.counts == {"ADD": 1} and added.session_generated
            assert (await m.add(CHAT, user_id="emily")).counts == {"NONE": 1}
            hits = await m.search("piano", user_id="emily", mode="vector")
            memory_id = hits[0].memory.id
            assert (await m.get(memory_id, user_id="emily")) is not None
            assert [e.event for e in await m.history(memory_id, user_id="emily")] == ["ADD"]
            assert await m.categories("emily")
            written = await m.export_markdown(tmp_path / "md", user_id="emily")
            assert any(path.endswith("index.md") for path in written)
            events = await m.forget(f"session:{added.session_id}", user_id="emily")
            assert [e.event for e in events] == ["EXPIRE"]
            with pytest.raises(InputError, match=r"^search\(\) needs user_id="):
                await m.search("piano")
        with pytest.raises(StoreError, match="this Memory is closed"):
            await m.search("piano", user_id="emily")
        await m.aclose()  # again: nothing happens

    asyncio.run(run())
    # the same input read by the sync object gives the same items
    with Memory(fast_config, store=f"sqlite:///{tmp_path / 's.db'}") as sync:
        assert (
            sync.add(CHAT, user_id="emily").session_id == sync.add(CHAT, user_id="emily").session_id
        )


def test_async_add_checks_its_arguments_before_any_work(
    tmp_path: Path, fast_config: dict[str, Any], home: Path
) -> None:
    async def run() -> None:
        async with AsyncMemory(fast_config, store=f"sqlite:///{tmp_path / 'a.db'}") as m:
            with pytest.raises(InputError) as caught:
                await m.add(CHAT)
            assert str(caught.value) == "add() needs user_id= (every memory has an owner)"
            assert m.memory.store.search("piano", user_id="emily") == []

    asyncio.run(run())

"""Use through the front door (issue 34, part 1) on both backends: ``Memory.context`` and
``Memory.get`` record it, ``Memory.search`` never does, ``Memory.mark_used`` and
``AsyncMemory.mark_used`` name it; ``heat_weight`` is a search filter."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator

import pytest

from memreader import AsyncMemory, Memory
from memreader.errors import InputError

pytestmark = pytest.mark.timeout(120)

CONFIG = {"backend": "simple_struct", "config": {"embedder": {"backend": "hash"}}}


@pytest.fixture
def memory(url: str) -> Iterator[Memory]:
    with Memory(CONFIG, store=url) as m:
        yield m


def test_context_and_get_record_use_and_search_does_not(memory: Memory) -> None:
    tea = memory.add_memory("Ana drinks green tea every morning.", user_id="ana").memory_id
    chess = memory.add_memory("Ana plays chess on Sundays.", user_id="ana").memory_id
    ids = [tea, chess]
    assert memory.search("tea", user_id="ana") and memory.store.usage(ids, user_id="ana") == {}
    block = memory.context("what does Ana drink, tea?", user_id="ana", max_tokens=200)
    shown = {p.memory_id for p in block.parts}
    assert tea in shown
    assert memory.store.usage(ids, user_id="ana").keys() == shown
    count = memory.store.usage([tea], user_id="ana")[tea].access_count
    found = memory.get(tea, user_id="ana")
    assert found is not None and found.id == tea
    assert memory.store.usage([tea], user_id="ana")[tea].access_count == count + 1
    memory.get(tea, user_id="ana", used=False)  # an audit: not a use
    assert memory.get("nope", user_id="ana") is None
    assert memory.store.usage([tea], user_id="ana")[tea].access_count == count + 1
    assert memory.mark_used([chess, chess, "nope"], user_id="ana") == 1
    assert memory.mark_used([chess], user_id="bob") == 0  # another owner's id
    hits = memory.search("Ana", user_id="ana", heat_weight=0.3)
    assert {h.id for h in hits} == {tea, chess} and all(h.score.heat > 0 for h in hits)
    heated = memory.context("Ana", user_id="ana", max_tokens=200, heat_weight=0.3)
    assert {p.memory_id for p in heated.parts} == {tea, chess}
    with pytest.raises(InputError, match="heat_weight must be a number"):
        memory.context("Ana", user_id="ana", heat_weight=-1)


def test_mark_used_bad_input_is_typed(memory: Memory) -> None:
    with pytest.raises(InputError, match="mark_used\\(\\): ids must be a list of memory ids"):
        memory.mark_used("abc", user_id="ana")
    with pytest.raises(InputError, match=r"mark_used\(\) needs user_id="):
        memory.mark_used(["abc"])


def test_async_memory_marks_use(url: str) -> None:
    async def main() -> tuple[int, int]:
        async with AsyncMemory(CONFIG, store=url) as m:
            event = await m.add_memory("Ana drinks green tea.", user_id="ana")
            marked = await m.mark_used([event.memory_id], user_id="ana")
            await m.get(event.memory_id, user_id="ana")
            used = m.memory.store.usage([event.memory_id], user_id="ana")
            return marked, used[event.memory_id].access_count

    assert asyncio.run(main()) == (1, 2)

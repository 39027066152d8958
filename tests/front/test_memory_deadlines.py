"""``Memory.within``: every call of the block bounded by one deadline (a call past it never
starts, a read answered past it is dropped, an ``add`` it stops stores nothing, a write that
committed is returned), through ``Memory`` and ``AsyncMemory``. Time never passes here: the
deadline is cancelled at the point the test wants it to be over (the same check)."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from memreader import AsyncMemory, Memory
from memreader.calls.deadlines import Deadline
from memreader.errors import DeadlineExceeded, InputError
from memreader.front.call_deadline import current
from tests.common import over_after


def test_a_call_past_its_deadline_never_starts(memory: Memory) -> None:
    with memory.within(0), pytest.raises(DeadlineExceeded, match=r"stopped before add\(\)"):
        memory.add("I live in Porto.", user_id="ana")
    lookup = Deadline.after(0, what="the lookup")
    with memory.within(lookup), pytest.raises(DeadlineExceeded, match=r"the lookup .* search\(\)"):
        memory.search("Porto", user_id="ana")
    assert memory.search("Porto", user_id="ana") == []  # outside the block: unbounded


def test_a_read_answered_past_its_deadline_is_dropped(memory: Memory) -> None:
    memory.add("I live in Porto.", user_id="ana")
    ran = over_after(memory.store, "search")
    with memory.within(Deadline(None)), pytest.raises(DeadlineExceeded) as late:
        memory.search("Porto", user_id="ana")
    assert ran == [1] and late.value.where == "after search()"
    assert "late answer was dropped" in str(late.value)


def test_an_add_its_deadline_stops_stores_nothing(memory: Memory) -> None:
    ran = over_after(memory.reader, "get_memory")  # the read ends, then time is up
    with memory.within(Deadline(None)), pytest.raises(DeadlineExceeded, match="store"):
        memory.add("I live in Porto.", user_id="ana")
    assert ran == [1]
    assert memory.search("Porto", user_id="ana") == []


def test_a_write_that_committed_is_returned_however_late(memory: Memory) -> None:
    ran = over_after(memory.store, "add_memory")
    with memory.within(Deadline(None)):
        event = memory.add_memory("Ana is vegetarian.", user_id="ana")
    assert ran == [1] and event.event == "ADD"
    assert memory.get(event.memory_id, user_id="ana") is not None


def test_blocks_nest_and_end(memory: Memory) -> None:
    outer = Deadline(None, what="the outer block")
    with memory.within(outer):
        with memory.within(0), pytest.raises(DeadlineExceeded):
            memory.history("m1", user_id="ana")
        assert current() is outer
        assert memory.history("m1", user_id="ana") == []
    assert current() is None


@pytest.mark.parametrize("bad", ["5", True, -1, None])
def test_within_takes_a_deadline_or_seconds(memory: Memory, bad: Any) -> None:
    with pytest.raises(InputError, match=r"deadline|seconds"), memory.within(bad):
        pass


def test_async_memory_within_reaches_its_threads(tmp_path: Any, home: Any) -> None:
    config = {"config": {"embedder": {"backend": "hash"}}}

    async def main() -> None:
        async with AsyncMemory(config, store=f"sqlite:///{tmp_path / 'a.db'}") as m:
            with m.within(30):
                assert (await m.add("I live in Porto.", user_id="ana")).counts == {"ADD": 1}
            ran = over_after(m.memory.store, "search")
            with m.within(Deadline(None)), pytest.raises(DeadlineExceeded, match="while search"):
                await m.search("Porto", user_id="ana")
            assert ran == [1]
            with m.within(0), pytest.raises(DeadlineExceeded, match=r"before pinned\(\)"):
                await m.pinned(user_id="ana")

    asyncio.run(main())

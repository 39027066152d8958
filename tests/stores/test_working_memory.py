"""Working memory (issue 34, part 5) on both backends, through ``Memory``: held items are
searched first and named ``working``, promoted into the store exactly once (session end,
close, reinforcement, overflow, a change by id or source), and the option is checked."""

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
    with Memory(CONFIG, store=url, working_memory=5) as m:
        yield m


def _stored(m: Memory, query: str) -> list[str]:
    return [h.text for h in m.store.search(query, user_id="ana", mode="text")]


def test_off_by_default_add_writes_at_once(url: str) -> None:
    with Memory(CONFIG, store=url) as m:
        result = m.add("I live in Porto.", user_id="ana", session_id="s1")
        assert result.counts == {"ADD": 1} and result.working == []
        assert m.working is None and m.end_session("s1", user_id="ana") == []
        assert [h.tier for h in m.search("Porto", user_id="ana")] == ["store"]


def test_held_items_are_searched_first_and_promoted_exactly_once(memory: Memory, url: str) -> None:
    memory.add("I adopted a cat named Miso.", user_id="ana", session_id="old")
    memory.end_session("old", user_id="ana")
    result = memory.add("My cat Miso likes tuna.", user_id="ana", session_id="s1")
    assert result.events == [] and len(result.working) == 1
    held = result.working[0]
    assert _stored(memory, "tuna") == []  # not in the store yet
    hits = memory.search("cat Miso", user_id="ana")
    assert (hits[0].id, hits[0].tier) == (held, "working")
    assert [h.tier for h in hits[1:]] == ["store"]
    found = memory.get(held, user_id="ana")
    assert found is not None and found.item.memory == "user: My cat Miso likes tuna."
    block = memory.context("what does the cat like?", user_id="ana", max_tokens=300)
    assert held in {p.memory_id for p in block.parts}
    promoted = memory.end_session("s1", user_id="ana")
    assert [(e.event, e.memory_id) for e in promoted] == [("ADD", held)]
    assert memory.end_session("s1", user_id="ana") == []  # a session ends once
    assert {h.tier for h in memory.search("tuna", user_id="ana")} == {"store"}
    memory.close()  # nothing held: closing writes nothing more
    with Memory(CONFIG, store=url) as again:
        assert [e.event for e in again.history(held, user_id="ana")] == ["ADD"]


def test_close_promotes_what_is_held_once(url: str) -> None:
    with Memory(CONFIG, store=url, working_memory=True) as m:
        held = m.add("I play the cello.", user_id="ana", session_id="s1").working
        assert len(held) == 1
    with Memory(CONFIG, store=url) as again:
        assert _stored(again, "cello") == ["user: I play the cello."]
        assert [e.event for e in again.history(held[0], user_id="ana")] == ["ADD"]


def test_reinforced_and_overflowing_items_are_promoted(url: str) -> None:
    with Memory(CONFIG, store=url, working_memory=2) as m:
        first = m.add("I live in Porto.", user_id="ana", session_id="s1").working[0]
        again = m.add("I live in Porto.", user_id="ana", session_id="s2")
        # The same fact again: the held one is promoted and the new one reinforces it.
        assert [e.event for e in again.events] == ["ADD", "REINFORCE"] and again.working == []
        assert again.events[0].memory_id == first
        m.add("I like tea.", user_id="ana", session_id="s1")
        m.add("I like jazz.", user_id="ana", session_id="s1")
        pushed = m.add("I like chess.", user_id="ana", session_id="s1")
        assert [e.event for e in pushed.events] == ["ADD"]  # the oldest of three, over 2
        assert _stored(m, "tea") == ["user: I like tea."] and _stored(m, "chess") == []
        # Already stored: written at once (reinforced there), never held.
        back = m.add("I like tea.", user_id="ana", session_id="s3")
        assert back.working == [] and [e.event for e in back.events] == ["REINFORCE"]
        assert len(m.working.held("ana")) == 2 if m.working else False


def test_a_change_by_source_sees_held_items(memory: Memory) -> None:
    held = memory.add("I live in Porto.", user_id="ana", session_id="s1").working[0]
    events = memory.forget("session:s1", user_id="ana")
    assert [(e.event, e.memory_id) for e in events] == [("EXPIRE", held)]
    assert [e.event for e in memory.history(held, user_id="ana")] == ["ADD", "EXPIRE"]
    assert memory.end_session("s1", user_id="ana") == []


@pytest.mark.parametrize(
    ("value", "message"),
    [
        (-1, "working_memory must be true, false or a number of items in [0, 1000], got -1"),
        ("3", "working_memory must be true, false or a number of items in [0, 1000], got '3'"),
        (1001, "working_memory must be true, false or a number of items in [0, 1000], got 1001"),
    ],
)
def test_bad_working_memory_is_an_input_error(url: str, value: object, message: str) -> None:
    with pytest.raises(InputError) as caught:
        Memory(CONFIG, store=url, working_memory=value)  # type: ignore[arg-type]
    assert str(caught.value) == message


def test_end_session_checks_its_arguments(memory: Memory) -> None:
    memory.add("I live in Porto.", user_id="ana", session_id="s1")
    with pytest.raises(InputError, match="k must be a positive integer of at most 1000, got 0"):
        memory.search("Porto", user_id="ana", k=0)  # checked even when the tier answers
    with pytest.raises(InputError, match="end_session\\(\\): session_id must be a non-empty"):
        memory.end_session("", user_id="ana")
    with pytest.raises(InputError, match=r"end_session\(\) needs user_id="):
        memory.end_session("s1")


def test_async_memory_holds_and_promotes(url: str) -> None:
    async def main() -> list[str]:
        async with AsyncMemory(CONFIG, store=url, working_memory=3) as m:
            held = (await m.add("I live in Porto.", user_id="ana", session_id="s1")).working
            promoted = await m.end_session("s1", user_id="ana")
            return [e.memory_id for e in promoted] + held

    ids = asyncio.run(main())
    assert len(ids) == 2 and ids[0] == ids[1]


def test_the_longest_open_session_is_promoted_past_the_session_cap(memory: Memory) -> None:
    assert memory.working is not None
    memory.working.max_sessions = 2
    memory.add("I live in Porto.", user_id="ana", session_id="s1")
    memory.add("I play chess on Sundays.", user_id="ana", session_id="s2")
    assert _stored(memory, "Porto chess") == []
    result = memory.add("I drink green tea.", user_id="ana", session_id="s3")
    assert result.counts == {"ADD": 1}  # s1, the longest open, went to the store whole
    assert _stored(memory, "Porto chess tea") == ["user: I live in Porto."]
    assert [h.tier for h in memory.search("chess", user_id="ana")][:1] == ["working"]


def test_a_failed_promotion_keeps_the_items_held(memory: Memory) -> None:
    from memreader.errors import StoreError

    memory.add("I live in Porto.", user_id="ana", session_id="s1")
    write = memory.store.write

    def broken(*args: object, **kwargs: object) -> object:
        raise StoreError("the disk is full")

    memory.store.write = broken  # type: ignore[method-assign]
    with pytest.raises(StoreError, match="the disk is full"):
        memory.end_session("s1", user_id="ana")
    memory.store.write = write  # type: ignore[method-assign]
    assert [h.tier for h in memory.search("Porto", user_id="ana")] == ["working"]
    assert [e.event for e in memory.end_session("s1", user_id="ana")] == ["ADD"]
    assert _stored(memory, "Porto") == ["user: I live in Porto."]

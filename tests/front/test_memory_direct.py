"""``Memory.add_memory``, ``update`` and ``delete``: direct writes through the one object (the
store's own methods, with its owner walls and typed errors), and their async twins."""

from __future__ import annotations

import asyncio
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

import pytest

from memreader import AsyncMemory, InputError, Memory
from memreader.stores import UnknownMemoryError


def test_add_memory_stores_text_as_given_and_searchable(memory: Memory) -> None:
    event = memory.add_memory(
        "Ana is vegetarian.",
        user_id="ana",
        importance=0.9,
        valid_from=datetime(2026, 1, 2, tzinfo=timezone.utc),
        metadata={"app": "tutor"},
    )
    assert event.event == "ADD"
    stored = memory.get(event.memory_id, user_id="ana")
    assert stored is not None and stored.item.memory == "Ana is vegetarian."
    assert stored.importance == pytest.approx(0.9)
    assert stored.item.metadata.info == {"app": "tutor"}
    hits = memory.search("vegetarian", user_id="ana", mode="vector")
    assert [h.memory.id for h in hits] == [event.memory_id]
    assert memory.add_memory("Ana is vegetarian.", user_id="ana", importance=0.9).event == "NONE"
    assert memory.get(event.memory_id, user_id="bob") is None  # owners are walls


def test_update_supersedes_and_delete_expires_or_erases(memory: Memory) -> None:
    first = memory.add_memory("Ana is vegetarian.", user_id="ana")
    new = memory.update(first.memory_id, "Ana is vegan.", user_id="ana")
    assert new.event == "UPDATE" and new.memory_id != first.memory_id
    old = memory.get(first.memory_id, user_id="ana")
    assert old is not None and old.status == "superseded"
    assert memory.delete(new.memory_id, user_id="ana").event == "EXPIRE"
    expired = memory.get(new.memory_id, user_id="ana")
    assert expired is not None and expired.status == "expired"
    assert memory.delete(new.memory_id, user_id="ana", erase=True)[0].event == "EXPIRE"
    assert memory.get(new.memory_id, user_id="ana") is None
    assert memory.history(new.memory_id, user_id="ana") == []


@pytest.mark.parametrize(
    ("call", "error", "message"),
    [
        (
            lambda m: m.add_memory("x"),
            InputError,
            "add_memory() needs user_id= (every memory has an owner)",
        ),
        (
            lambda m: m.update("id", "x"),
            InputError,
            "update() needs user_id= (every memory has an owner)",
        ),
        (
            lambda m: m.delete("id"),
            InputError,
            "delete() needs user_id= (every memory has an owner)",
        ),
        (
            lambda m: m.update("nope", "x", user_id="ana"),
            UnknownMemoryError,
            "user 'ana' has no memory 'nope'",
        ),
        (
            lambda m: m.delete("nope", user_id="ana"),
            UnknownMemoryError,
            "user 'ana' has no memory 'nope'",
        ),
        (
            lambda m: m.delete("nope", user_id="ana", erase="yes"),
            InputError,
            "erase must be true or false, got 'yes'",
        ),
    ],
)
def test_bad_direct_writes_are_typed_errors(
    memory: Memory, call: Any, error: type[Exception], message: str
) -> None:
    with pytest.raises(error) as caught:
        call(memory)
    assert caught.value.args[0] == message  # KeyError's str() quotes it


def test_another_owners_memory_cannot_be_updated_or_deleted(memory: Memory) -> None:
    event = memory.add_memory("Ana is vegetarian.", user_id="ana")
    with pytest.raises(UnknownMemoryError):
        memory.update(event.memory_id, "Bob says so.", user_id="bob")
    with pytest.raises(UnknownMemoryError):
        memory.delete(event.memory_id, user_id="bob", erase=True)
    stored = memory.get(event.memory_id, user_id="ana")
    assert stored is not None and stored.status == "active"


def test_async_direct_writes(tmp_path: Path, fast_config: dict[str, Any], home: Path) -> None:
    async def run() -> None:
        async with AsyncMemory(fast_config, store=f"sqlite:///{tmp_path / 'a.db'}") as m:
            first = await m.add_memory("Ana is vegetarian.", user_id="ana")
            new = await m.update(first.memory_id, "Ana is vegan.", user_id="ana")
            assert (await m.delete(new.memory_id, user_id="ana", erase=True))[0].event == "EXPIRE"
            assert await m.get(new.memory_id, user_id="ana") is None
            with pytest.raises(InputError, match=r"^add_memory\(\) needs user_id="):
                await m.add_memory("x")

    asyncio.run(run())

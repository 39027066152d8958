"""Scopes through the front door (memreader.scopes): ``Memory.add(agent_id=, task_id=,
visibility=)`` scopes what a read stores, ``search``/``context``/``get`` filter by scope, on
SQLite and PostgreSQL; bad scopes are refused with the exact error."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest

from memreader import AsyncMemory, Memory
from memreader.errors import InputError, InvalidInfoError
from memreader.scopes import MAX_SCOPE_ID_CHARS


def _texts(hits: list[Any]) -> set[str]:
    return {h.text for h in hits}


def check_scopes(m: Memory) -> None:
    """What every backend must do with one owner's memories in tasks A and B."""
    a = m.add("I keep the deploy key in vault A.", user_id="ana", task_id="A")
    shared = m.add("The team meets on Mondays.", user_id="ana", task_id="A", visibility="shared")
    b = m.add("I keep the deploy key in vault B.", user_id="ana", task_id="B", agent_id="bot")
    m.add("I keep the deploy key in vault C.", user_id="bo", task_id="B")  # another owner
    in_b = _texts(m.search("deploy key vault Mondays", user_id="ana", task_id="B", k=20))
    assert in_b == {"user: I keep the deploy key in vault B.", "user: The team meets on Mondays."}
    in_a = _texts(m.search("deploy key vault", user_id="ana", task_id="A", k=20))
    assert "user: I keep the deploy key in vault B." not in in_a
    owner_wide = _texts(m.search("deploy key vault", user_id="ana", k=20))
    assert len(owner_wide) == 3  # every memory of ana, none of bo's
    other_agent = _texts(m.search("deploy key vault", user_id="ana", agent_id="other", k=20))
    assert "user: I keep the deploy key in vault B." not in other_agent
    block = m.context("deploy key", user_id="ana", task_id="A", max_tokens=500)
    assert "vault A" in block.text and "vault B" not in block.text
    b_id, a_id = b.items[0].id, a.items[0].id
    assert m.get(b_id, user_id="ana", task_id="A") is None  # another task's private memory
    found = m.get(b_id, user_id="ana", task_id="B")
    assert found is not None and found.item.metadata.agent_id == "bot"
    assert m.get(shared.items[0].id, user_id="ana", task_id="B") is not None
    assert m.get(a_id, user_id="ana") is not None  # the owner-wide view
    event = m.add_memory("Ana's build runs on Fridays.", user_id="ana", task_id="B")
    assert m.get(event.memory_id, user_id="ana", task_id="A") is None


def test_scopes_through_memory_on_sqlite(memory: Memory) -> None:
    check_scopes(memory)


def test_scopes_through_memory_on_postgresql(
    pg_url: str, fast_config: dict[str, Any], home: Path
) -> None:
    with Memory(fast_config, store=pg_url) as m:
        check_scopes(m)


def test_the_same_chat_in_two_tasks_is_two_memories(memory: Memory) -> None:
    first = memory.add("I moved to Porto.", user_id="ana", task_id="A")
    second = memory.add("I moved to Porto.", user_id="ana", task_id="B")
    assert first.counts == second.counts == {"ADD": 1}
    assert first.items[0].id != second.items[0].id
    again = memory.add("I moved to Porto.", user_id="ana")  # unscoped: its id as before scopes
    assert again.counts == {"ADD": 1}


def test_async_memory_takes_the_scopes(memory: Memory, fast_config: dict[str, Any]) -> None:
    async def main() -> tuple[set[str], bool]:
        async with AsyncMemory(fast_config, store=memory.store_url) as m:
            added = await m.add("I like green tea.", user_id="ana", task_id="A")
            hits = await m.search("green tea", user_id="ana", task_id="B")
            got = await m.get(added.items[0].id, user_id="ana", task_id="B")
            return _texts(hits), got is None

    assert asyncio.run(main()) == (set(), True)


@pytest.mark.parametrize(
    ("kwargs", "error", "message"),
    [
        (
            {"visibility": "public"},
            InputError,
            "visibility must be one of private, shared, got 'public'",
        ),
        (
            {"task_id": "t" * (MAX_SCOPE_ID_CHARS + 1)},
            InputError,
            f"task_id must be at most {MAX_SCOPE_ID_CHARS} characters, got "
            f"{MAX_SCOPE_ID_CHARS + 1}",
        ),
        (
            {"metadata": {"task_id": "A"}},
            InputError,
            "add(metadata=...) may not hold 'task_id': pass it as an argument",
        ),
    ],
)
def test_a_bad_scope_on_add_is_refused(
    memory: Memory, kwargs: dict[str, Any], error: type[Exception], message: str
) -> None:
    with pytest.raises(error) as caught:
        memory.add("I like tea.", user_id="ana", **kwargs)
    assert type(caught.value) is error and str(caught.value) == message


def test_a_bad_scope_in_a_readers_info_is_refused(memory: Memory) -> None:
    scenes = [[{"role": "user", "content": "hi"}]]
    info = {"user_id": "ana", "session_id": "s1", "visibility": "everyone"}
    with pytest.raises(InvalidInfoError) as caught:
        memory.reader.get_memory(scenes, "chat", info, "fast")
    assert str(caught.value) == (
        "info['visibility'] must be one of private, shared, got 'everyone'"
    )


def test_search_and_get_refuse_a_bad_scope(memory: Memory) -> None:
    with pytest.raises(InputError) as caught:
        memory.search("tea", user_id="ana", agent_id="")
    assert str(caught.value) == "agent_id must be a non-empty string or null, got ''"
    with pytest.raises(InputError) as caught:
        memory.get("x", user_id="ana", session_id="s1")
    assert str(caught.value) == "get() takes agent_id and task_id, not 'session_id'"

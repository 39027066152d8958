"""The OpenAI Agents SDK session (memreader.integrations.openai_agents.session) through the
real SDK: items kept exactly and in order, read into the user's memories with the session and
message they came from, popped and cleared as documented, walled by user, and a bad item or id
refused with the adapter's typed error."""

from __future__ import annotations

import asyncio
import logging
import sqlite3
from pathlib import Path
from typing import Any

import pytest
from agents.exceptions import UserError
from agents.memory import SessionABC, SessionSettings

from memreader import AsyncMemory, Memory
from memreader.errors import InputError
from memreader.integrations.openai_agents import AgentsMemoryError, MemreaderSession
from memreader.integrations.openai_agents.items import message_id
from memreader.integrations.openai_agents.kept import ITEM_TABLES
from memreader.testing import ScriptedLLM, ScriptedRequest
from tests.common import HASH_MEMORY as CONFIG

USER = {"role": "user", "content": "I moved to Lisbon in March."}
ASSISTANT = {
    "id": "msg_1",
    "type": "message",
    "role": "assistant",
    "status": "completed",
    "content": [{"type": "output_text", "text": "Lisbon suits you!", "annotations": []}],
}
PARTS = {
    "role": "user",
    "content": [{"type": "input_text", "text": "My cat is called Miso; 猫はミソ."}],
}
CALL = {
    "type": "function_call",
    "id": "fc_1",
    "call_id": "call_1",
    "name": "weather",
    "arguments": '{"city": "Lisbon", "nested": {"days": [1, 2]}}',
    "status": "completed",
}
OUTPUT = {"type": "function_call_output", "call_id": "call_1", "output": "Sunny in Lisbon, 24 C."}
REASONING = {"type": "reasoning", "id": "rs_1", "summary": [{"type": "summary_text", "text": "x"}]}
ITEMS = [USER, ASSISTANT, CALL, OUTPUT, REASONING, PARTS]


def run(coroutine: Any) -> Any:
    return asyncio.run(coroutine)


def texts(memory: Memory, query: str, user_id: str = "ana") -> list[str]:
    return [hit.text for hit in memory.search(query, user_id=user_id)]


def test_items_come_back_equal_and_in_order_with_the_sdks_limits(memory: Memory) -> None:
    session = MemreaderSession("chat-1", memory, user_id="ana")
    assert isinstance(session, SessionABC)

    async def scenario() -> None:
        await session.add_items(ITEMS[:3])
        await session.add_items(ITEMS[3:])
        assert await session.get_items() == ITEMS
        assert await session.get_items(limit=2) == [REASONING, PARTS]
        session.session_settings = SessionSettings(limit=1)
        assert await session.get_items() == [PARTS]  # the settings' limit, as SQLiteSession
        assert await session.get_items(limit=3) == ITEMS[-3:]  # an explicit one wins

    run(scenario())


def test_the_text_is_found_by_a_memory_search_with_its_session_and_message(
    memory: Memory,
) -> None:
    session = MemreaderSession("chat-1", memory, user_id="ana")
    run(session.add_items(ITEMS))
    (hit,) = memory.search("where did I move? Lisbon", user_id="ana", k=1)
    assert "I moved to Lisbon in March." in hit.text and "猫はミソ" in hit.text
    assert hit.memory.item.metadata.session_id == "chat-1"
    by_id = {s.message_id: s for s in hit.memory.item.metadata.sources}
    # Each read item names its place in the session: get_items()[position].
    assert by_id[message_id("chat-1", 0, USER)].content == USER["content"]
    assert by_id[message_id("chat-1", 5, PARTS)].role == "user"
    # Tool calls, their outputs and reasoning are kept, not read (by default).
    assert session.last_read is not None and len(session.last_read.results) == 1
    assert [(u.position, u.reason.split(" is kept")[0]) for u in session.last_read.unread] == [
        (2, "item type 'function_call'"),
        (3, "item type 'function_call_output'"),
        (4, "item type 'reasoning'"),
    ]
    assert "Sunny" not in hit.text


def test_a_unicode_session_id_keeps_and_names_its_items(memory: Memory) -> None:
    session = MemreaderSession("对话 😀 #1", memory, user_id="émilie")
    run(session.add_items([PARTS]))
    assert run(session.get_items()) == [PARTS]
    (hit,) = memory.search("Miso", user_id="émilie", k=1)
    assert hit.memory.item.metadata.session_id == "对话 😀 #1"
    assert hit.memory.item.metadata.sources[0].message_id == message_id("对话 😀 #1", 0, PARTS)
    with pytest.raises(AgentsMemoryError, match="session_id"):
        MemreaderSession("lone \ud800", memory, user_id="émilie")


def test_read_tools_reads_calls_and_their_outputs(memory: Memory) -> None:
    session = MemreaderSession("chat-1", memory, user_id="ana", read_tools=True)
    run(session.add_items([CALL, OUTPUT]))
    assert any("Sunny in Lisbon, 24 C." in text for text in texts(memory, "sunny weather"))


def test_pop_returns_the_newest_item_and_forgets_what_it_alone_said(memory: Memory) -> None:
    session = MemreaderSession("chat-1", memory, user_id="ana")

    async def scenario() -> None:
        await session.add_items([USER])
        await session.add_items([PARTS])
        assert await session.pop_item() == PARTS
        assert await session.get_items() == [USER]
        assert await session.pop_item() == USER
        assert await session.pop_item() is None  # empty

    run(scenario())
    assert texts(memory, "cat Miso") == []  # both expired: only the popped items said them
    (expired,) = memory.get_all(user_id="ana", include_inactive=True, session_id="chat-1")[:1]
    assert expired.status == "expired"  # forgotten, its history kept


def test_pop_keeps_the_memories_when_told(memory: Memory) -> None:
    session = MemreaderSession("chat-1", memory, user_id="ana", on_pop="keep")

    async def scenario() -> None:
        await session.add_items([PARTS])
        assert await session.pop_item() == PARTS

    run(scenario())
    assert texts(memory, "cat Miso") == ["user: My cat is called Miso; 猫はミソ."]


def test_an_item_added_after_a_pop_is_a_message_of_its_own(memory: Memory) -> None:
    # The popped item's position is taken again: the message ids differ by the item's digest,
    # so popping the new item never forgets what another item at that place said.
    session = MemreaderSession("chat-1", memory, user_id="ana", on_pop="keep")

    async def scenario() -> None:
        await session.add_items([USER])
        await session.pop_item()
        await session.add_items([PARTS])
        session.on_pop = "forget"
        await session.pop_item()

    run(scenario())
    assert texts(memory, "Lisbon") == ["user: I moved to Lisbon in March."]  # Miso's: gone


@pytest.mark.parametrize(("on_clear", "left"), [("keep", 1), ("forget", 0), ("erase", 0)])
def test_clear_removes_the_items_and_keeps_the_memories_unless_told(
    memory: Memory, on_clear: Any, left: int
) -> None:
    session = MemreaderSession("chat-1", memory, user_id="ana", on_clear=on_clear)

    async def scenario() -> None:
        await session.add_items([USER])
        await session.clear_session()
        assert await session.get_items() == []

    run(scenario())
    assert len(texts(memory, "Lisbon")) == left


def test_one_users_session_never_reaches_another_users_items_or_memories(
    memory: Memory,
) -> None:
    ana = MemreaderSession("shared-id", memory, user_id="ana")
    bob = MemreaderSession("shared-id", memory, user_id="bob", on_clear="forget")

    async def scenario() -> None:
        await ana.add_items([USER])
        assert await bob.get_items() == []
        assert await bob.pop_item() is None
        await bob.clear_session()
        assert await ana.get_items() == [USER]

    run(scenario())
    assert texts(memory, "Lisbon", "bob") == []
    assert texts(memory, "Lisbon", "ana") == ["user: I moved to Lisbon in March."]


def test_items_are_kept_in_the_stores_own_file(tmp_path: Path) -> None:
    store = f"sqlite:///{tmp_path / 'memories.db'}"
    with Memory(CONFIG, store=store) as first:
        session = MemreaderSession("chat-1", first, user_id="ana")
        run(session.add_items(ITEMS))
        session.close()
    with Memory(CONFIG, store=store) as again:
        reopened = MemreaderSession("chat-1", again, user_id="ana")
        assert run(reopened.get_items()) == ITEMS
        reopened.close()
    with sqlite3.connect(tmp_path / "memories.db") as conn:
        names = {row[0] for row in conn.execute("SELECT name FROM sqlite_master")}
    assert set(ITEM_TABLES) <= names and "memories" in names
    assert sorted(path.name for path in tmp_path.glob("*.db")) == ["memories.db"]


def test_an_erasing_clear_leaves_no_byte_of_the_items_in_the_file(tmp_path: Path) -> None:
    secret = {"role": "user", "content": "My door code is zebra-4417."}
    with Memory(CONFIG, store=f"sqlite:///{tmp_path / 'memories.db'}") as memory:
        session = MemreaderSession("chat-1", memory, user_id="ana", on_clear="erase")
        run(session.add_items([secret]))
        run(session.add_items([USER]))
        run(session.clear_session())
        assert run(session.get_items()) == []
        assert texts(memory, "door code") == []
        # Checked while everything is open: closing the last connection checkpoints anyway.
        for path in tmp_path.iterdir():  # the file, its write-ahead log, anything beside it
            assert b"zebra-4417" not in path.read_bytes(), path.name
        session.close()


def test_an_erasing_forget_through_the_memory_reaches_the_kept_items(tmp_path: Path) -> None:
    secret = {"role": "user", "content": "My door code is zebra-4417."}
    with Memory(CONFIG, store=f"sqlite:///{tmp_path / 'memories.db'}") as memory:
        session = MemreaderSession("chat-1", memory, user_id="ana")
        other = MemreaderSession("chat-2", memory, user_id="ana")
        run(session.add_items([secret, USER]))
        run(other.add_items([USER]))
        kept_without_erase = memory.forget("session:chat-1", user_id="ana")
        assert "transcripts" not in kept_without_erase.removed
        assert len(run(session.get_items())) == 2  # a forget without erase keeps the record
        receipt = memory.forget("session:chat-1", user_id="ana", erase=True)
        assert receipt.removed["transcripts"] == 2
        assert not [line for line in receipt.residue if "transcript" in line]
        assert run(session.get_items()) == [] and run(other.get_items()) == [USER]
        for path in tmp_path.iterdir():  # the file, its write-ahead log, anything beside it
            assert b"zebra-4417" not in path.read_bytes(), path.name
        session.close()
        other.close()


def test_an_erasing_forget_of_one_message_removes_that_item_only(memory: Memory) -> None:
    session = MemreaderSession("chat-1", memory, user_id="ana")
    run(session.add_items([USER, PARTS, USER]))
    named = message_id("chat-1", 1, PARTS)
    receipt = memory.forget(f"message:{named}", user_id="ana", erase=True)
    assert receipt.removed["transcripts"] == 1
    assert run(session.get_items()) == [USER, USER]
    # A position that shifted since (an earlier item gone) still finds the item by content.
    later = message_id("chat-1", 2, USER)
    assert memory.forget(f"message:{later}", user_id="ana", erase=True).removed["transcripts"] == 1
    assert run(session.get_items()) == [USER]


def test_an_erasing_forget_of_another_user_or_session_leaves_the_items(memory: Memory) -> None:
    session = MemreaderSession("chat-1", memory, user_id="ana")
    run(session.add_items([USER]))
    for source, user in (("session:chat-1", "bob"), ("session:chat-9", "ana")):
        assert "transcripts" not in memory.forget(source, user_id=user, erase=True).removed
    assert run(session.get_items()) == [USER]


def test_an_erasing_pop_removes_only_the_newest_item(memory: Memory) -> None:
    session = MemreaderSession("chat-1", memory, user_id="ana", on_pop="erase")
    run(session.add_items([USER, PARTS]))
    assert run(session.pop_item()) == PARTS  # the session removes it, the memory's erase not
    assert run(session.get_items()) == [USER]


def test_items_db_names_another_file(tmp_path: Path, memory: Memory) -> None:
    session = MemreaderSession("chat-1", memory, user_id="ana", items_db=tmp_path / "items.db")
    run(session.add_items([USER]))
    session.close()
    reopened = MemreaderSession("chat-1", memory, user_id="ana", items_db=tmp_path / "items.db")
    assert run(reopened.get_items()) == [USER]


def test_a_store_that_is_not_sqlite_needs_items_db(memory: Memory) -> None:
    memory.store_url = "postgresql://ana:s3cret@db.example/memories"
    with pytest.raises(AgentsMemoryError, match="pass items_db=") as caught:
        MemreaderSession("chat-1", memory, user_id="ana")
    assert "s3cret" not in str(caught.value)


def test_an_async_memory_serves_as_well() -> None:
    async def scenario() -> list[str]:
        async with AsyncMemory(CONFIG, store="sqlite://:memory:") as memory:
            session = MemreaderSession("chat-1", memory, user_id="ana")
            await session.add_items([USER])
            assert await session.get_items() == [USER]
            return [hit.text for hit in await memory.search("Lisbon", user_id="ana")]

    assert run(scenario()) == ["user: I moved to Lisbon in March."]


def test_fine_mode_reads_the_items_with_the_llm_and_names_the_message() -> None:
    def answer(request: ScriptedRequest) -> dict[str, Any]:
        if request.schema_name == "memory_extraction":
            fact = {"key": "home", "memory_type": "UserMemory", "value": "Ana lives in Lisbon."}
            return {"memory_list": [{**fact, "source_ids": [1]}], "summary": "Ana's home."}
        if request.schema_name == "category_summary":
            return {"sentences": []}
        return {"results": [{"id": 1, "supported": True}]}  # filter; rewrite: no changes

    llm = ScriptedLLM(answer)
    config = {"config": {"embedder": {"backend": "hash"}, "llm": llm.config()}}
    with Memory(config, store="sqlite://:memory:") as memory:
        session = MemreaderSession("chat-1", memory, user_id="ana", mode="fine")
        run(session.add_items([USER, ASSISTANT]))
        (hit,) = memory.search("where does Ana live", user_id="ana", k=1)
    assert hit.text == "Ana lives in Lisbon."
    (source,) = hit.memory.item.metadata.sources
    assert source.message_id == message_id("chat-1", 0, USER) and source.role == "user"
    assert "memory_extraction" in [request.schema_name for request in llm.requests]


def test_concurrent_adds_keep_every_item_in_a_place_of_its_own(memory: Memory) -> None:
    session = MemreaderSession("chat-1", memory, user_id="ana")
    batches = [[{"role": "user", "content": f"Fact number {n}."}] for n in range(4)]

    async def scenario() -> list[Any]:
        await asyncio.gather(*(session.add_items(batch) for batch in batches))
        return await session.get_items()

    kept = run(scenario())
    assert sorted(item["content"] for item in kept) == [b[0]["content"] for b in batches]
    ids = {
        s.message_id
        for page in [memory.get_all(user_id="ana")]
        for stored in page
        for s in stored.item.metadata.sources
    }
    assert ids == {message_id("chat-1", n, item) for n, item in enumerate(kept)}


@pytest.mark.parametrize(
    ("refused", "why"),
    [
        # A part no parser reads: memreader names the message.
        ({"role": "user", "content": [{"type": "input_video", "url": "x"}]}, "input_video"),
        # A NUL the store cannot keep: memreader names the memory, not the message.
        ({"role": "user", "content": "a NUL \u0000 here"}, "NUL"),
    ],
)
def test_an_item_memreader_cannot_read_is_kept_unread_and_the_rest_read(
    memory: Memory, caplog: pytest.LogCaptureFixture, refused: dict[str, Any], why: str
) -> None:
    session = MemreaderSession("chat-1", memory, user_id="ana")
    with caplog.at_level(logging.WARNING, logger="memreader.integrations.openai_agents"):
        run(session.add_items([refused, USER, PARTS]))
    assert run(session.get_items()) == [refused, USER, PARTS]
    assert session.last_read is not None
    ((position, reason),) = [(u.position, u.reason) for u in session.last_read.unread]
    assert position == 0 and "memreader cannot read it" in reason and why in reason
    assert "item 0 kept, not read" in caplog.text
    found = " ".join(texts(memory, "Lisbon cat"))
    assert "I moved to Lisbon in March." in found and "Miso" in found


@pytest.mark.parametrize(
    ("items", "match"),
    [
        ("not a list", "takes a list of items, got str"),
        ([USER, "hello"], "item 1 must be a dict"),
        ([{"role": "user", "content": ("a", "tuple")}], "item 0 would not come back equal"),
        ([{"role": "user", "content": "x", 1: "non-string key"}], "item 0 would not come"),
        ([{"role": "user", "content": float("nan")}], "item 0 is not JSON"),
        ([{"role": "user", "content": object()}], "item 0 is not JSON"),
    ],
)
def test_an_item_that_cannot_be_kept_is_refused_and_nothing_is_kept(
    memory: Memory, items: Any, match: str
) -> None:
    session = MemreaderSession("chat-1", memory, user_id="ana")
    with pytest.raises(AgentsMemoryError, match=match) as caught:
        run(session.add_items(items))
    assert isinstance(caught.value, UserError) and isinstance(caught.value, InputError)
    assert run(session.get_items()) == []
    assert texts(memory, "Lisbon") == []


@pytest.mark.parametrize(
    ("arguments", "match"),
    [
        ({"session_id": ""}, "session_id must be a non-empty string"),
        ({"session_id": "a\0b"}, "session_id must be a non-empty string"),
        ({"session_id": 7}, "session_id must be a non-empty string"),
        ({"session_id": "x" * 1001}, "session_id is longer than 1000"),
        ({"user_id": None}, "user_id must be a non-empty string"),
        ({"memory": "sqlite://:memory:"}, "memory must be a memreader Memory"),
        ({"on_pop": "drop"}, "on_pop must be one of"),
        ({"on_clear": True}, "on_clear must be one of"),
        ({"roles": "user"}, "roles must be a collection"),
        ({"timeout_s": 0}, "timeout_s must be a positive number"),
        ({"mode": "refine"}, "mode must be one of"),
        ({"mode": "fine"}, "mode 'fine' needs an LLM"),
        ({"items_db": 3}, "items_db must be a SQLite file path"),
        ({"agent_id": ""}, "agent_id must be a non-empty string or null"),
        ({"task_id": "t\0"}, "task_id holds a NUL character"),
    ],
)
def test_bad_arguments_are_refused_by_name(
    memory: Memory, arguments: dict[str, Any], match: str
) -> None:
    given: dict[str, Any] = {"session_id": "chat-1", "memory": memory, "user_id": "ana"}
    given.update(arguments)
    with pytest.raises(AgentsMemoryError, match=match):
        MemreaderSession(given.pop("session_id"), given.pop("memory"), **given)

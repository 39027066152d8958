"""The MCP tool list an agent loads every session (issue 42): at most 1,500 cl100k tokens for the
whole ``tools/list`` answer as a client gets it (5,526 before); ``recall`` without a query lists
the newest memories a page at a time, with the declared filters; ``get_memory`` with
``history`` answers a memory's changes. In-process, through the MCP SDK's own client."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import mcp_types as types
import pytest
from mcp import Client

from memreader.mcp.arguments import MCP_FILTERS
from memreader.mcp.server import INSTRUCTIONS, MemoryServer
from memreader.mcp.tools import TOOLS, Workbench
from memreader.mcp.users import stdio_caller
from memreader.stores.filters import FILTER_NAMES
from memreader.windowing.tokens import get_tokenizer
from tests.mcp.mcp_servers import answer, error, run

pytestmark = pytest.mark.timeout(120)

#: The most tokens the tool list may cost an agent's context.
TOOL_LIST_BUDGET = 1500


@pytest.fixture
def bench(tmp_path: Path) -> Iterator[Workbench]:
    opened = Workbench.open(
        {"config": {"embedder": {"backend": "hash"}}}, f"sqlite:///{tmp_path}/m.db"
    )
    try:
        yield opened
    finally:
        opened.close()


def test_the_tool_list_costs_at_most_1500_tokens(bench: Workbench) -> None:
    async def listed() -> str:
        async with Client(MemoryServer(bench, lambda ctx: stdio_caller("ana")).server) as client:
            tools = (await client.list_tools()).tools
        # The JSON a client receives for tools/list: names, titles, descriptions, schemas, hints.
        return types.ListToolsResult(tools=tools).model_dump_json(by_alias=True, exclude_none=True)

    wire = run(listed())
    tokens = get_tokenizer("cl100k_base")
    assert tokens.count(wire) <= TOOL_LIST_BUDGET
    # Also as Python's json writes it (a space after each , and :), which costs more tokens.
    assert tokens.count(json.dumps(json.loads(wire))) <= TOOL_LIST_BUDGET
    assert sorted(tool["name"] for tool in json.loads(wire)["tools"]) == sorted(TOOLS)


def test_what_the_tools_leave_undescribed_is_said_once_in_the_instructions() -> None:
    for shared in ("user_id", "agent_id", "task_id", "erase"):
        assert shared in INSTRUCTIONS
    assert set(MCP_FILTERS) <= set(FILTER_NAMES)  # a declared subset of SearchFilters


def test_recall_without_a_query_lists_the_newest_a_page_at_a_time(bench: Workbench) -> None:
    async def talk() -> None:
        async with Client(MemoryServer(bench, lambda ctx: stdio_caller("ana")).server) as client:
            for fact in ("Ana lives in Porto.", "Ana plays chess.", "Ana drinks green tea."):
                answer(await client.call_tool("remember", {"fact": fact, "session_id": "s1"}))
            first = answer(await client.call_tool("recall", {"k": 2}))
            assert [m["memory"] for m in first["memories"]] == [
                "Ana drinks green tea.",
                "Ana plays chess.",
            ]
            rest = answer(
                await client.call_tool("recall", {"k": 2, "cursor": first["next_cursor"]})
            )
            assert [m["memory"] for m in rest["memories"]] == ["Ana lives in Porto."]
            assert rest["next_cursor"] is None
            later = answer(await client.call_tool("recall", {"since": "2999-01-01T00:00:00Z"}))
            assert later["memories"] == []
            until = {"query": "chess", "until": "2999-01-01T00:00:00Z"}
            found = answer(await client.call_tool("recall", until))
            assert found["memories"][0]["memory"] == "Ana plays chess."
            text = error(await client.call_tool("recall", {"cursor": "nonsense"}))
            assert text.startswith(
                "InvalidCursorError: cursor 'nonsense' is not one a listing gave"
            )
            text = error(await client.call_tool("recall", {"query": "tea", "cursor": "x"}))
            assert text.startswith("InputError: recall: cursor pages a listing (no query)")

    run(talk())


def test_get_memory_with_history_answers_its_changes(bench: Workbench) -> None:
    async def talk() -> None:
        async with Client(MemoryServer(bench, lambda ctx: stdio_caller("ana")).server) as client:
            added = answer(await client.call_tool("remember", {"fact": "Ana is vegetarian."}))
            first = added["changes"][0]["memory_id"]
            args = {"memory_id": first, "text": "Ana is vegan."}
            answer(await client.call_tool("update_memory", args))
            asked = {"memory_id": first, "history": True}
            shown = answer(await client.call_tool("get_memory", asked))
            assert shown["status"] == "superseded"
            assert shown["history"][0]["event"] == "ADD"
            plain = answer(await client.call_tool("get_memory", {"memory_id": first}))
            assert "history" not in plain and plain["id"] == first

    run(talk())


def test_forget_takes_a_memory_or_a_source_never_a_scoped_source(bench: Workbench) -> None:
    async def talk() -> None:
        async with Client(MemoryServer(bench, lambda ctx: stdio_caller("ana")).server) as client:
            added = answer(await client.call_tool("remember", {"fact": "Ana is vegetarian."}))
            memory_id = added["changes"][0]["memory_id"]
            both = {"memory_id": memory_id, "session_id": "s1"}
            text = error(await client.call_tool("forget", both))
            assert "give exactly one of memory_id, session_id, doc_path or message_id" in text
            scoped = {"session_id": "s1", "task_id": "t1"}
            text = error(await client.call_tool("forget", scoped))
            assert "agent_id and task_id scope a forget of one memory_id, not a source" in text
            gone = answer(await client.call_tool("forget", {"memory_id": memory_id}))
            assert gone["event"]["event"] == "EXPIRE"

    run(talk())

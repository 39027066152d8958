"""Use over MCP (issue 34, part 1), in-process: ``context`` and ``get_memory`` record it,
``recall`` and ``get_memory`` with ``history`` do not, ``mark_used`` names it."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from mcp import Client

from memreader.mcp.server import MemoryServer
from memreader.mcp.tools import Workbench
from memreader.mcp.users import stdio_caller
from tests.mcp.mcp_servers import answer, error, run

pytestmark = pytest.mark.timeout(120)


@pytest.fixture
def bench(tmp_path: Path) -> Iterator[Workbench]:
    opened = Workbench.open(
        {"config": {"embedder": {"backend": "hash"}}}, f"sqlite:///{tmp_path}/m.db"
    )
    try:
        yield opened
    finally:
        opened.close()


def test_mcp_tools_record_use(bench: Workbench) -> None:
    def used(memory_id: str) -> int:
        found = bench.memory.memory.store.usage([memory_id], user_id="ana")
        return found[memory_id].access_count if found else 0

    async def talk() -> None:
        async with Client(MemoryServer(bench, lambda ctx: stdio_caller("ana")).server) as client:
            added = answer(await client.call_tool("remember", {"fact": "Ana drinks green tea."}))
            memory_id = added["changes"][0]["memory_id"]
            answer(await client.call_tool("recall", {"query": "tea"}))
            assert used(memory_id) == 0
            block = await client.call_tool("context", {"query": "what does Ana drink, tea?"})
            assert not block.is_error, block.content[0].text
            assert [p["memory_id"] for p in block.structured_content["parts"]] == [memory_id]
            assert used(memory_id) == 1
            answer(await client.call_tool("get_memory", {"memory_id": memory_id}))
            answer(await client.call_tool("get_memory", {"memory_id": memory_id, "history": True}))
            assert used(memory_id) == 2
            marked = answer(await client.call_tool("mark_used", {"memory_ids": [memory_id, "x"]}))
            assert marked == {"marked": 1} and used(memory_id) == 3
            text = error(await client.call_tool("mark_used", {"memory_ids": "abc"}))
            assert text.startswith("InputError: invalid arguments for mark_used: memory_ids")

    run(talk())

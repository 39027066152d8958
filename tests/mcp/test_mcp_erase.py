"""Erase over MCP (issue 41), through ``memreader mcp`` over stdio: ``forget`` of a memory and
``forget`` with ``erase: true`` answer the erase ``receipt``; an ``erase`` that is not a boolean
is a tool error naming it."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.mcp.mcp_servers import answer, error, hash_config, run, stdio_client


@pytest.mark.timeout(180)
def test_delete_and_forget_erase_answer_the_receipt(tmp_path: Path) -> None:
    config = hash_config(tmp_path)
    home = tmp_path / "home"

    async def talk() -> None:
        async with stdio_client(home, "--user-id", "emily", "--config", str(config)) as client:
            added = answer(await client.call_tool("remember", {"fact": "Emily's PIN is 4321."}))
            first = added["changes"][0]["memory_id"]
            text = error(await client.call_tool("forget", {"memory_id": first, "erase": "yes"}))
            assert text.startswith("InputError: invalid arguments for forget: erase:")
            erased = answer(await client.call_tool("forget", {"memory_id": first, "erase": True}))
            assert erased["event"]["event"] == "EXPIRE"
            receipt = erased["receipt"]
            assert (receipt["erased"], receipt["removed"]["memories"]) == ([first], 1)
            assert "events" not in receipt and receipt["residue"]

            told = {"message": "I moved to Lisbon.", "session_id": "s1"}
            second = answer(await client.call_tool("remember", told))["changes"][0]["memory_id"]
            forgot = answer(await client.call_tool("forget", {"session_id": "s1", "erase": True}))
            assert [e["memory_id"] for e in forgot["events"]] == [second]
            assert forgot["receipt"]["erased"] == [second]
            assert forgot["receipt"]["erased_total"] == 1
            gone = error(await client.call_tool("get_memory", {"memory_id": second}))
            assert gone.startswith("UnknownMemoryError: ")

    run(talk())

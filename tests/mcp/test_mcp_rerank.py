"""``recall`` over MCP with ``rerank``: the hits in the order the server's LLM (the
``scripted`` backend) gives, each with its LLM rank; no LLM, or a listing, is a tool error."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest
from mcp import Client

from memreader.mcp.server import MemoryServer
from memreader.mcp.tools import Workbench
from memreader.mcp.users import stdio_caller
from memreader.testing import ScriptedLLM, ScriptedRequest
from tests.mcp.mcp_servers import answer, error, run

pytestmark = pytest.mark.timeout(120)

FACTS = ("Ana lives in Porto.", "Ana's flat in Porto is small.", "Ana drinks tea in Porto.")


def reverse(request: ScriptedRequest) -> Any:
    return {"order": [int(n) for n in re.findall(r"^\[(\d+)\]", request.prompt, re.M)][::-1]}


def talk(bench: Workbench, calls: list[dict[str, Any]]) -> list[Any]:
    async def conversation() -> list[Any]:
        async with Client(MemoryServer(bench, lambda ctx: stdio_caller("ana")).server) as client:
            for fact in FACTS:
                answer(await client.call_tool("remember", {"fact": fact}))
            return [await client.call_tool("recall", call) for call in calls]

    return run(conversation())


def test_recall_reranks_by_the_servers_llm(tmp_path: Path) -> None:
    llm = ScriptedLLM(reverse)
    config = {"config": {"embedder": {"backend": "hash"}, "llm": llm.config()}}
    bench = Workbench.open(config, f"sqlite:///{tmp_path}/m.db")
    try:
        plain, ranked, listing = talk(
            bench,
            [{"query": "Porto"}, {"query": "Porto", "rerank": True}, {"rerank": True}],
        )
    finally:
        bench.close()
    ids = [m["id"] for m in answer(plain)["memories"]]
    shown = answer(ranked)["memories"]
    assert [m["id"] for m in shown] == ids[::-1] and [m["rerank"] for m in shown] == [1, 2, 3]
    assert "rerank" not in answer(plain)["memories"][0] and len(llm.requests) == 1
    assert error(listing).startswith("InputError: recall: rerank orders a search's hits")


def test_rerank_without_an_llm_is_a_tool_error(tmp_path: Path) -> None:
    bench = Workbench.open(
        {"config": {"embedder": {"backend": "hash"}}}, f"sqlite:///{tmp_path}/m.db"
    )
    try:
        (refused,) = talk(bench, [{"query": "Porto", "rerank": True}])
    finally:
        bench.close()
    assert error(refused).startswith("LLMRequiredError: search(): rerank=True needs an LLM")

"""What bounds an MCP call, in-process (the SDK's client connected to the server object): the
size of arguments and answers, and the user a key of several users must name."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from mcp import Client

from memreader.answers.sizes import MAX_MEMORY_CHARS, MAX_SOURCES, MAX_TEXT_CHARS
from memreader.mcp.server import MemoryServer
from memreader.mcp.tools import Workbench
from memreader.mcp.users import stdio_caller
from memreader.service.keys import Principal
from tests.mcp.mcp_servers import answer, error, run

pytestmark = pytest.mark.timeout(120)


@pytest.fixture
def bench(tmp_path: Path) -> Iterator[Workbench]:
    config = {"config": {"embedder": {"backend": "hash"}}}
    opened = Workbench.open(config, f"sqlite:///{tmp_path / 'm.db'}")
    try:
        yield opened
    finally:
        opened.close()


def _client(bench: Workbench, caller: Principal) -> Client:
    return Client(MemoryServer(bench, lambda ctx: caller).server)


def test_long_memories_and_many_sources_come_back_clipped(bench: Workbench) -> None:
    long_fact = "Ana keeps a diary. " + "word " * 10_000
    chat = [{"role": "user", "content": f"I visited city number {i}."} for i in range(30)]

    async def talk() -> None:
        async with _client(bench, stdio_caller("ana")) as client:
            answer(await client.call_tool("remember", {"fact": long_fact}))
            answer(await client.call_tool("remember", {"messages": chat}))
            hits = answer(await client.call_tool("recall", {"query": "diary", "k": 10}))
            texts = {len(hit["memory"]) for hit in hits["memories"]}
            assert max(texts) <= MAX_MEMORY_CHARS
            clipped = [h for h in hits["memories"] if "clipped" in h["memory"]]
            assert clipped and clipped[0]["memory"].startswith("Ana keeps a diary.")
            many = [h for h in hits["memories"] if h["sources_total"] == 30]
            assert many and len(many[0]["sources"]) == MAX_SOURCES

    run(talk())


def test_an_argument_over_its_limit_is_refused_by_name(bench: Workbench) -> None:
    async def talk() -> None:
        async with _client(bench, stdio_caller("ana")) as client:
            text = error(await client.call_tool("remember", {"fact": "x" * (MAX_TEXT_CHARS + 1)}))
            assert text.startswith("InputError: invalid arguments for remember: fact: String ")
            many = [{"role": "user", "content": "hi"}] * 501
            text = error(await client.call_tool("remember", {"messages": many}))
            assert "messages: List should have at most 500 items" in text
            big = [{"role": "user", "content": "y" * 90_000}] * 12
            text = error(await client.call_tool("remember", {"messages": big}))
            assert "messages hold 1,080,000 characters; at most 1,000,000 per call" in text

    run(talk())


def test_a_key_of_several_users_names_one_and_reaches_only_those(bench: Workbench) -> None:
    key = Principal("team-app", frozenset({"ana", "ben"}))

    async def talk() -> dict[str, Any]:
        async with _client(bench, key) as client:
            text = error(await client.call_tool("recall", {"query": "tea"}))
            assert text.startswith("InputError: user_id is required")
            for user in ("ana", "ben"):
                fact = {"fact": f"{user} drinks tea.", "user_id": user}
                answer(await client.call_tool("remember", fact))
            text = error(await client.call_tool("recall", {"query": "tea", "user_id": "cy"}))
            assert text.startswith("ForbiddenUserError: this key may not")
            listed = [r.uri for r in (await client.list_resources()).resources]
            assert {uri.split("/")[3] for uri in listed} == {"ana", "ben"}
            found = await client.call_tool("recall", {"query": "tea", "user_id": "ben"})
            return json.loads(found.content[0].text)

    hits = run(talk())
    assert [hit["memory"] for hit in hits["memories"]] == ["ben drinks tea."]

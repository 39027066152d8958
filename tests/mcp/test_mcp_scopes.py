"""Scopes over MCP (memreader.mcp.scoping): ``remember`` writes into a task, ``recall``,
``context`` and ``get_memory`` filter by ``agent_id``/``task_id``, and a key limited to a task
(the service's keys, over ``memreader mcp --http``) never reads another task's private
memories, never writes into another task and never gets what spans the user's tasks."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
import yaml

from memreader.service.keys import hash_key
from tests.mcp.mcp_servers import answer, error, hash_config, http_client, http_server, run

pytestmark = pytest.mark.timeout(240)


@pytest.fixture
def url(tmp_path: Path) -> Iterator[str]:
    entries = [
        {"name": "alice-app", "sha256": hash_key("mr_test_alice-app"), "users": ["alice"]},
        {"name": "task-a", "sha256": hash_key("mr_test_task-a"), "users": ["alice"],
         "tasks": ["A"]},
    ]  # fmt: skip
    keys = tmp_path / "keys.yaml"
    keys.write_text(yaml.safe_dump({"keys": entries}), encoding="utf-8")
    config = hash_config(tmp_path, {"keys_file": str(keys)})
    with http_server(tmp_path / "home", "--config", str(config)) as found:
        yield found


def test_tools_filter_by_scope_and_a_task_key_stays_in_its_task(url: str) -> None:
    async def as_owner() -> dict[str, str]:
        async with http_client(url, "mr_test_alice-app") as client:
            ids = {}
            for name, args in {
                "a": {"fact": "Vault A holds the deploy key.", "task_id": "A"},
                "b": {"fact": "Vault B holds the deploy key.", "task_id": "B"},
                "shared": {"fact": "Deploys are on Mondays.", "task_id": "B",
                           "visibility": "shared"},
            }.items():  # fmt: skip
                stored = answer(await client.call_tool("remember", args))
                ids[name] = stored["changes"][0]["memory_id"]
            query = {"query": "deploy key vault Mondays", "k": 10}
            in_a = answer(await client.call_tool("recall", {**query, "task_id": "A"}))
            assert {m["id"] for m in in_a["memories"]} == {ids["a"], ids["shared"]}
            everything = answer(await client.call_tool("recall", query))
            assert len(everything["memories"]) == 3
            block = await client.call_tool("context", {"query": "vault", "task_id": "B"})
            text = block.content[0].text  # the context tool answers with the block itself
            assert not block.is_error and "Vault B" in text and "Vault A" not in text
            hidden = error(
                await client.call_tool("get_memory", {"memory_id": ids["b"], "task_id": "A"})
            )
            assert hidden.startswith("UnknownMemoryError: ")
            bad = error(await client.call_tool("remember", {"fact": "x", "visibility": "public"}))
            assert bad.startswith("InputError: invalid arguments for remember: visibility")
            return ids

    async def as_task_a(ids: dict[str, str]) -> None:
        async with http_client(url, "mr_test_task-a") as client:
            found = answer(await client.call_tool("recall", {"query": "deploy key vault"}))
            assert ids["b"] not in {m["id"] for m in found["memories"]}
            assert ids["a"] in {m["id"] for m in found["memories"]}
            text = error(await client.call_tool("recall", {"query": "vault", "task_id": "B"}))
            assert text == (
                "ForbiddenScopeError: this key may not use task_id 'B': it is limited to tasks 'A'"
            )
            text = error(await client.call_tool("get_memory", {"memory_id": ids["b"]}))
            assert text.startswith("UnknownMemoryError: ")
            # Another task's private memory: refused word for word as an unknown id.
            for tool, extra in (("forget", {}), ("update_memory", {"text": "changed"})):
                for memory_id in (ids["b"], "no-such-memory"):
                    text = error(await client.call_tool(tool, {"memory_id": memory_id, **extra}))
                    assert text == f"UnknownMemoryError: user 'alice' has no memory '{memory_id}'"
            text = error(await client.call_tool("remember", {"fact": "x", "task_id": "B"}))
            assert text.startswith("ForbiddenScopeError: ")
            stored = answer(await client.call_tool("remember", {"fact": "A's build is green."}))
            mine = answer(
                await client.call_tool(
                    "get_memory", {"memory_id": stored["changes"][0]["memory_id"]}
                )
            )
            assert mine["task_id"] == "A" and mine["visibility"] == "private"
            # mark_used counts only what the key sees (no probing another task's ids).
            marked = await client.call_tool(
                "mark_used", {"memory_ids": [ids["a"], ids["b"], ids["shared"]]}
            )
            assert answer(marked) == {"marked": 2}
            text = error(await client.call_tool("forget", {"session_id": "direct"}))
            assert text.startswith("ForbiddenScopeError: forgetting a source spans")
            assert (await client.list_resources()).resources == []
            with pytest.raises(Exception, match="ForbiddenScopeError"):
                await client.read_resource("memreader://users/alice/memory/index.md")

    ids = run(as_owner())
    run(as_task_a(ids))

"""``memreader mcp --http``: the SDK's streamable HTTP transport behind the keys of
``memreader serve`` (issue 32): a key of one user cannot read or write another's memories."""

from __future__ import annotations

from pathlib import Path

import httpx2
import pytest

from tests.mcp.mcp_servers import (
    answer,
    error,
    hash_config,
    http_client,
    http_server,
    keys_file,
    run,
)

pytestmark = pytest.mark.timeout(240)


@pytest.fixture
def url(tmp_path: Path) -> object:
    keys = keys_file(tmp_path, {"alice-app": ["alice"], "bob-app": ["bob"], "ops": ["*"]})
    config = hash_config(tmp_path, {"keys_file": str(keys)})
    with http_server(tmp_path / "home", "--config", str(config)) as found:
        yield found


def test_a_request_without_a_key_is_401_before_the_sdk_reads_it(url: str) -> None:
    body = {"jsonrpc": "2.0", "id": 1, "method": "tools/list", "params": {}}
    for headers in ({}, {"Authorization": "Bearer mr_test_nobody"}):
        answered = httpx2.post(url, json=body, headers=headers, timeout=30)
        assert answered.status_code == 401
        assert answered.headers["www-authenticate"] == 'Bearer realm="memreader"'
        assert "Authorization: Bearer KEY" in answered.json()["detail"]


def test_a_key_of_one_user_cannot_reach_another(url: str) -> None:
    async def as_alice() -> str:
        async with http_client(url, "mr_test_alice-app") as client:
            stored = answer(await client.call_tool("remember", {"fact": "Alice's PIN is 4321."}))
            hits = answer(await client.call_tool("recall", {"query": "PIN", "user_id": "alice"}))
            assert [hit["id"] for hit in hits["memories"]] == [stored["changes"][0]["memory_id"]]
            listed = [r.uri for r in (await client.list_resources()).resources]
            assert "memreader://users/alice/memory/index.md" in listed
            memory_id: str = stored["changes"][0]["memory_id"]
            return memory_id

    async def as_bob(memory_id: str) -> None:
        async with http_client(url, "mr_test_bob-app") as client:
            for name, args in [
                ("recall", {"query": "PIN", "user_id": "alice"}),
                ("get_memory", {"memory_id": memory_id, "user_id": "alice"}),
                ("delete_memory", {"memory_id": memory_id, "user_id": "alice"}),
                ("remember", {"fact": "x", "user_id": "alice"}),
            ]:
                text = error(await client.call_tool(name, args))
                assert text == (
                    "ForbiddenUserError: this key may not read or write the memories of "
                    "user_id 'alice'"
                )
            # His own user (the key's only one, so user_id may be left out) has none of hers.
            assert answer(await client.call_tool("recall", {"query": "PIN"}))["memories"] == []
            text = error(await client.call_tool("get_memory", {"memory_id": memory_id}))
            assert text.startswith("UnknownMemoryError: ")
            with pytest.raises(Exception, match="ForbiddenUserError"):
                await client.read_resource("memreader://users/alice/memory/index.md")
            listed = [r.uri for r in (await client.list_resources()).resources]
            assert listed == ["memreader://users/bob/memory/index.md"]

    async def as_ops(memory_id: str) -> None:
        async with http_client(url, "mr_test_ops") as client:
            text = error(await client.call_tool("recall", {"query": "PIN"}))
            assert text.startswith("InputError: user_id is required")
            found = answer(
                await client.call_tool("get_memory", {"memory_id": memory_id, "user_id": "alice"})
            )
            assert found["status"] == "active"

    memory_id = run(as_alice())
    run(as_bob(memory_id))
    run(as_ops(memory_id))

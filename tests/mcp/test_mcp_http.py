"""``memreader mcp --http``: the SDK's streamable HTTP transport behind the keys of
``memreader serve`` (issue 32): a key of one user cannot read or write another's memories."""

from __future__ import annotations

import socket
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
                ("forget", {"memory_id": memory_id, "user_id": "alice"}),
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
            assert listed == [
                "memreader://users/bob/memory/index.md",
                "memreader://users/bob/memu/memory.md",
                "memreader://users/bob/memu/skill.md",
            ]

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


INITIALIZE = {
    "jsonrpc": "2.0",
    "id": 1,
    "method": "initialize",
    "params": {
        "protocolVersion": "2025-06-18",
        "capabilities": {},
        "clientInfo": {"name": "test", "version": "0"},
    },
}
ACCEPT = {"Accept": "application/json, text/event-stream"}


def _post(url: str, who: str) -> httpx2.Response:
    headers = {**ACCEPT, "Authorization": f"Bearer mr_test_{who}"}
    return httpx2.post(url, json=INITIALIZE, headers=headers, timeout=30)


def test_the_keys_limits_hold_and_no_stream_stays_open(tmp_path: Path) -> None:
    keys = keys_file(tmp_path, {name: [name] for name in ("alice", "bob", "carol")})
    limits = {"keys_file": str(keys), "requests_per_minute_per_key": 3}
    config = hash_config(tmp_path, {**limits, "max_concurrent_per_key": 1})
    with http_server(tmp_path / "home", "--config", str(config)) as url:
        port = int(url.rsplit(":", 1)[1].split("/")[0])
        # GET would open the SDK's event stream for ever: a stateless server refuses it.
        stream = httpx2.get(url, headers={**ACCEPT, "Authorization": "Bearer mr_test_bob"})
        assert stream.status_code == 405 and stream.headers["allow"] == "POST"
        # A call of alice whose body never comes holds her one slot: her next is 429.
        with socket.create_connection(("127.0.0.1", port)) as held:
            held.sendall(
                b"POST /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
                b"Accept: application/json, text/event-stream\r\n"
                b"Authorization: Bearer mr_test_alice\r\nContent-Length: 100\r\n\r\n{"
            )
            busy = _post(url, "alice")
            assert busy.status_code == 429 and busy.headers["retry-after"] == "1"
            assert "max_concurrent_per_key is 1" in busy.json()["detail"]
            assert _post(url, "bob").status_code == 200  # another key has its own
        # carol sends her 3 requests of the minute; the 4th is 429, saying when to retry.
        assert [_post(url, "carol").status_code for _ in range(3)] == [200, 200, 200]
        limited = _post(url, "carol")
        assert limited.status_code == 429 and int(limited.headers["retry-after"]) >= 1
        assert limited.json()["type"].endswith("rate-limited")

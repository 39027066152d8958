"""``memreader mcp`` over stdio, as a desktop client starts it: a subprocess driven by the MCP
SDK's own client (issue 32)."""

from __future__ import annotations

import json
import os
import queue
import re
import subprocess
import sys
import threading
from pathlib import Path
from typing import Any

import pytest

from tests.mcp.mcp_servers import answer, environment, error, hash_config, run, stdio_client

TOOLS = {
    "remember",
    "recall",
    "context",
    "get_memory",
    "mark_used",
    "forget",
    "update_memory",
    "list_categories",
}
CHAT = [
    {"role": "user", "content": "I moved to Lisbon and I want piano lessons."},
    {"role": "assistant", "content": "Classical or jazz?"},
]


@pytest.fixture
def home(tmp_path: Path) -> Path:
    return tmp_path / "home"


@pytest.mark.timeout(180)
def test_tools_and_resources_are_listed_with_schemas(tmp_path: Path, home: Path) -> None:
    config = hash_config(tmp_path)

    async def talk() -> None:
        async with stdio_client(home, "--user-id", "emily", "--config", str(config)) as client:
            tools = {tool.name: tool for tool in (await client.list_tools()).tools}
            assert set(tools) == TOOLS
            for tool in tools.values():
                assert tool.description and len(tool.description) > 40
                schema = tool.input_schema
                assert schema["type"] == "object"
                assert schema.get("additionalProperties") is False
                assert "title" not in json.dumps(schema)  # pydantic's titles cost tokens
            assert "required" not in tools["recall"].input_schema  # no query: a listing
            assert tools["context"].input_schema["required"] == ["query"]
            assert tools["recall"].annotations.read_only_hint is True
            # MCP's defaults are left out: not read only, destructive.
            hints = tools["forget"].annotations
            assert hints.read_only_hint is None and hints.destructive_hint is None
            templates = (await client.list_resource_templates()).resource_templates
            assert {t.uri_template for t in templates} == {
                "memreader://users/{user_id}/memory/index.md",
                "memreader://users/{user_id}/memory/{file}",
                "memreader://users/{user_id}/memu/{+path}",
            }
            listed = [r.uri for r in (await client.list_resources()).resources]
            assert listed == [
                "memreader://users/emily/memory/index.md",
                "memreader://users/emily/memu/memory.md",
                "memreader://users/emily/memu/skill.md",
            ]

    run(talk())


@pytest.mark.timeout(180)
def test_remember_recall_context_then_forget(tmp_path: Path, home: Path) -> None:
    config = hash_config(tmp_path)

    async def talk() -> None:
        async with stdio_client(home, "--user-id", "emily", "--config", str(config)) as client:
            stored = answer(
                await client.call_tool("remember", {"messages": CHAT, "session_id": "s1"})
            )
            assert stored["session_id"] == "s1" and stored["counts"] == {"ADD": 1}
            (change,) = stored["changes"]
            assert change["event"] == "ADD" and "Lisbon" in change["memory"]
            memory_id = change["memory_id"]
            again = answer(
                await client.call_tool("remember", {"messages": CHAT, "session_id": "s1"})
            )
            assert again["counts"] == {"NONE": 1}

            hits = answer(await client.call_tool("recall", {"query": "Lisbon piano", "k": 3}))
            (hit,) = hits["memories"]
            assert hit["id"] == memory_id and hit["status"] == "active"
            assert hit["score"] > 0
            quotes = [(s["role"], s["message_index"], s["quote"]) for s in hit["sources"]]
            assert quotes == [
                ("user", 0, CHAT[0]["content"]),
                ("assistant", 1, CHAT[1]["content"]),
            ]
            start, end = hit["sources"][0]["span"]
            assert CHAT[0]["content"][start:end] == hit["sources"][0]["quote"]

            block = await client.call_tool("context", {"query": "Lisbon", "max_tokens": 200})
            assert not block.is_error, block.content[0].text
            text = block.content[0].text
            assert text.startswith("<memories") and "I moved to Lisbon" in text
            shown = block.structured_content
            assert shown["text"] == text and shown["tokens"] <= 200
            assert {part["memory_id"] for part in shown["parts"]} == {memory_id}
            assert {part["speaker"] for part in shown["parts"]} <= {"user", "assistant"}
            assert [part["messages"] for part in shown["parts"]] == [[0], [1]]

            forgot = answer(await client.call_tool("forget", {"session_id": "s1"}))
            assert [e["event"] for e in forgot["events"]] == ["EXPIRE"]
            assert forgot["events"][0]["memory_id"] == memory_id
            after = answer(await client.call_tool("recall", {"query": "Lisbon piano"}))
            assert after["memories"] == []
            gone = answer(await client.call_tool("get_memory", {"memory_id": memory_id}))
            assert gone["status"] == "expired"

    run(talk())


@pytest.mark.timeout(180)
def test_facts_update_delete_history_categories_and_markdown(tmp_path: Path, home: Path) -> None:
    config = hash_config(tmp_path)

    async def talk() -> None:
        async with stdio_client(home, "--user-id", "emily", "--config", str(config)) as client:
            added = answer(await client.call_tool("remember", {"fact": "Emily is vegetarian."}))
            assert added["counts"] == {"ADD": 1}
            first = added["changes"][0]["memory_id"]
            updated = answer(
                await client.call_tool(
                    "update_memory",
                    {"memory_id": first, "text": "Emily is vegan.", "reason": "she said so"},
                )
            )
            second = updated["event"]["memory_id"]
            assert second != first and updated["event"]["previous_id"] == first
            history = answer(
                await client.call_tool("get_memory", {"memory_id": first, "history": True})
            )
            assert history["status"] == "superseded" and history["superseded_by"] == second
            assert "ADD" in [entry["event"] for entry in history["history"]]

            categories = answer(await client.call_tool("list_categories", {}))
            filed = [c for c in categories["categories"] if c.get("resource")]
            assert filed, categories
            index_uri = categories["index"]
            assert index_uri == "memreader://users/emily/memory/index.md"
            listed = [r.uri for r in (await client.list_resources()).resources]
            assert index_uri in listed and filed[0]["resource"] in listed
            index = (await client.read_resource(index_uri)).contents[0]
            assert index.mime_type == "text/markdown" and "# Memory of emily" in index.text
            page = (await client.read_resource(filed[0]["resource"])).contents[0]
            assert "Emily is vegan." in page.text
            # memU's layout: the entry's relative links resolve to resources of the server.
            entry_uri = "memreader://users/emily/memu/memory.md"
            assert entry_uri in listed
            entry = (await client.read_resource(entry_uri)).contents[0]
            assert entry.text.startswith("# Memory of emily")
            link = re.search(r"\]\((memory/[^)]+)\)", entry.text)
            assert link is not None
            linked_uri = entry_uri.rsplit("/", 1)[0] + "/" + link.group(1)
            linked = (await client.read_resource(linked_uri)).contents[0]
            assert linked.text.startswith("# ") and "## Memories" in linked.text

            deleted = answer(await client.call_tool("forget", {"memory_id": second}))
            assert deleted["event"]["event"] == "EXPIRE"
            hits = answer(await client.call_tool("recall", {"query": "vegan"}))
            assert hits["memories"] == []

    run(talk())


@pytest.mark.timeout(180)
def test_bad_arguments_are_tool_errors_with_the_typed_message(tmp_path: Path, home: Path) -> None:
    config = hash_config(tmp_path)

    async def talk() -> None:
        async with stdio_client(home, "--user-id", "emily", "--config", str(config)) as client:
            text = error(await client.call_tool("recall", {"query": "tea", "k": 0}))
            assert text.startswith("InputError: invalid arguments for recall: k:")
            text = error(await client.call_tool("recall", {"query": "x" * 3000}))
            assert "query:" in text and "xxxxxxxx" not in text  # the value is not echoed
            text = error(await client.call_tool("recall", {"query": "tea", "limit": 3}))
            assert "limit: Extra inputs are not permitted" in text
            text = error(await client.call_tool("remember", {"fact": "a", "message": "b"}))
            assert "exactly one of fact, message or messages" in text
            text = error(await client.call_tool("get_memory", {"memory_id": "nope"}))
            assert text == "UnknownMemoryError: user 'emily' has no memory 'nope'"
            text = error(await client.call_tool("forget", {"memory_id": "nope"}))
            assert text.startswith("UnknownMemoryError: ")
            text = error(await client.call_tool("no_such_tool", {}))
            assert text.startswith("InputError: no tool 'no_such_tool'")

    run(talk())


@pytest.mark.timeout(180)
def test_content_reaches_no_local_file_unless_the_operator_allows_it(
    tmp_path: Path, home: Path
) -> None:
    notes = tmp_path / "notes.txt"
    notes.write_text("tea at four", encoding="utf-8")
    content = [{"type": "text", "text": "my notes"}, {"type": "file", "file": {"path": str(notes)}}]
    chat = [{"role": "user", "content": content}]
    # The reader config allows the folder, as a trusted CLI run would; tool arguments are
    # content, so the service's switch decides (off by default), exactly as over HTTP.
    reader = {"allow_local_paths": True, "allowed_roots": [str(tmp_path)]}

    async def remember(config: Path) -> dict[str, Any]:
        async with stdio_client(home, "--user-id", "emily", "--config", str(config)) as client:
            return answer(await client.call_tool("remember", {"messages": chat}))

    walled = run(remember(hash_config(tmp_path, backend="multimodal_struct", **reader)))
    assert "tea at four" not in walled["changes"][0]["memory"]
    (problem,) = walled["problems"]
    assert problem["status"] == "error" and "local paths are disabled" in problem["error"]
    allowed = {"content": {"allow_local_paths": True}}
    config = hash_config(tmp_path, allowed, backend="multimodal_struct", **reader)
    opened = run(remember(config))
    assert "tea at four" in opened["changes"][0]["memory"] and opened["problems"] == []


@pytest.mark.timeout(180)
def test_no_tool_argument_reaches_another_user(tmp_path: Path, home: Path) -> None:
    config = hash_config(tmp_path)

    async def as_bob() -> None:
        async with stdio_client(home, "--user-id", "bob", "--config", str(config)) as client:
            answer(await client.call_tool("remember", {"fact": "Bob's PIN is 4321."}))

    async def as_emily() -> None:
        async with stdio_client(home, "--user-id", "emily", "--config", str(config)) as client:
            mine = answer(await client.call_tool("recall", {"query": "Bob's PIN is 4321."}))
            assert mine["memories"] == []
            for name, args in [
                ("recall", {"query": "PIN", "user_id": "bob"}),
                ("remember", {"fact": "x", "user_id": "bob"}),
                ("forget", {"session_id": "s1", "user_id": "bob"}),
                ("list_categories", {"user_id": "bob"}),
            ]:
                text = error(await client.call_tool(name, args))
                assert text == (
                    "ForbiddenUserError: this MCP server serves user 'emily' only; "
                    "user_id 'bob' is not allowed"
                )
            with pytest.raises(Exception, match="ForbiddenUserError"):
                await client.read_resource("memreader://users/bob/memory/index.md")

    run(as_bob())
    run(as_emily())


@pytest.mark.timeout(120)
def test_a_call_past_its_deadline_stops_and_stores_nothing(tmp_path: Path, home: Path) -> None:
    config = hash_config(tmp_path)
    args = ["--user-id", "emily", "--config", str(config)]

    async def talk() -> None:
        async with stdio_client(home, *args, "--timeout", "0.000001") as client:
            text = error(await client.call_tool("remember", {"message": "I like oolong tea."}))
            assert text.startswith("DeadlineExceeded: the remember call did not finish")
        async with stdio_client(home, *args) as client:
            found = answer(await client.call_tool("recall", {"query": "oolong tea"}))
            assert found["memories"] == []

    run(talk())


@pytest.mark.slow
@pytest.mark.timeout(300)
def test_the_default_config_serves_the_local_embedder(tmp_path: Path, home: Path) -> None:
    async def talk() -> None:
        async with stdio_client(home, "--user-id", "emily") as client:
            answer(await client.call_tool("remember", {"message": "I adopted a cat named Miso."}))
            hits = answer(await client.call_tool("recall", {"query": "what pet does she have?"}))
            assert "Miso" in hits["memories"][0]["memory"]

    run(talk(), timeout=240)
    assert (home / "memories.db").exists()


@pytest.mark.timeout(120)
def test_a_line_that_is_not_a_message_gets_an_error_answer(tmp_path: Path, home: Path) -> None:
    config = hash_config(tmp_path)
    server = subprocess.Popen(
        [sys.executable, "-m", "memreader.cli", "mcp", "--user-id", "u1", "--config", str(config)],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        env={**os.environ, **environment(home)},
        cwd=str(tmp_path),
    )
    assert server.stdin is not None and server.stdout is not None
    try:
        server.stdin.write(b"this is not json\n")
        server.stdin.write(b'{"jsonrpc": "2.0", "id": 7, "method": 5}\n')
        server.stdin.flush()
        answers = [json.loads(line) for line in _lines(server.stdout, 2)]
    finally:
        server.stdin.close()
        assert server.wait(60) == 0
    assert answers == [
        {
            "jsonrpc": "2.0",
            "id": None,
            "error": {"code": -32700, "message": "Parse error: not JSON"},
        },
        {
            "jsonrpc": "2.0",
            "id": 7,
            "error": {"code": -32600, "message": "Invalid request: not a JSON-RPC 2.0 message"},
        },
    ]


def _lines(stream: Any, n: int, timeout_s: float = 60.0) -> list[bytes]:
    """The first ``n`` lines the server wrote, each waited for within ``timeout_s`` (read in
    a thread: a buffered read may take several lines at once)."""
    lines: queue.Queue[bytes] = queue.Queue()
    threading.Thread(target=lambda: [lines.put(line) for line in stream], daemon=True).start()
    return [lines.get(timeout=timeout_s) for _ in range(n)]

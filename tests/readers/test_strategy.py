"""The strategy reader through its public API: grouping by messages or characters, the
attributing prompt in English and Chinese, documents, refinement, async, config errors and the
CLI."""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from memreader import ConfigError, MemReaderConfigFactory, MemReaderFactory, ReadReport
from memreader.readers import StrategyStructMemReader, StrategyStructMemReaderConfig
from tests.common import HASH_EMBEDDER, INFO
from tests.llm_server import LLMTestServer, RecordedRequest, Reply, llm_server, openai_completion

__all__ = ["llm_server"]

pytestmark = pytest.mark.timeout(120)

CHAT = [
    {"role": "user" if i % 2 == 0 else "assistant", "content": f"Message number {i} about Lisbon."}
    for i in range(10)
]


def reader(**config: Any) -> StrategyStructMemReader:
    config.setdefault("embedder", HASH_EMBEDDER)
    return StrategyStructMemReader(StrategyStructMemReaderConfig(**config))


def messages_of(item: Any) -> list[int]:
    return sorted({s.message_index for s in item.metadata.sources})


def test_session_groups_share_whole_messages() -> None:
    mm = reader(strategy={"chunk_by": "session", "chunk_session": 4, "chunk_overlap": 1})
    (items,) = mm.get_memory([CHAT], type="chat", info=INFO)
    assert [messages_of(i) for i in items] == [[0, 1, 2, 3], [3, 4, 5, 6], [6, 7, 8, 9]]
    for item in items:  # whole messages, exact spans
        for source in item.metadata.sources:
            content = CHAT[source.message_index]["content"]
            assert source.span == (0, len(content)) and source.content == content


def test_content_length_groups_and_a_message_longer_than_the_budget() -> None:
    long_text = "word " * 200  # 1,000 characters
    chat = [*CHAT[:3], {"role": "user", "content": long_text}, *CHAT[3:6]]
    mm = reader(strategy={"content_length": 200, "chunk_overlap": 1})
    report = ReadReport()
    (items,) = mm.get_memory([chat], type="chat", info=INFO, report=report)
    for item in items:
        assert len(item.memory) <= 200
    pieces = [s for i in items for s in i.metadata.sources if s.message_index == 3]
    # The long message is split exactly: its pieces tile it, in order, each re-extracting.
    assert "".join(s.content for s in pieces) == long_text
    assert pieces[0].span[0] == 0 and pieces[-1].span[1] == len(long_text)
    assert all(long_text[s.span[0] : s.span[1]] == s.content for s in pieces)
    assert {s.message_index for i in items for s in i.metadata.sources} == set(range(7))


def test_invalid_grouping_is_a_config_error_naming_the_fields() -> None:
    with pytest.raises(
        ConfigError, match=r"chunk_overlap \(20\) must be at most half of chunk_session \(20\)"
    ):
        StrategyStructMemReaderConfig(strategy={"chunk_by": "session", "chunk_overlap": 20})
    with pytest.raises(ConfigError, match=r"strategy\.content_length"):
        StrategyStructMemReaderConfig(strategy={"content_length": 10})
    with pytest.raises(ConfigError, match=r"strategy\.chunk_overlap"):
        MemReaderConfigFactory(
            backend="strategy_struct", config={"strategy": {"chunk_overlap": -1}}
        )


def test_documents_are_chunked_as_in_the_simple_reader() -> None:
    text = "A paragraph about tea. " * 200
    mm = reader(window={"max_tokens": 128, "overlap_tokens": 16})
    (items,) = mm.get_memory([text], type="doc", info=INFO)
    assert len(items) > 3
    for position, item in enumerate(items):
        for source in item.metadata.sources:
            assert text[source.span[0] : source.span[1]] == source.content
            assert (source.chunk_index, source.chunk_count) == (position, len(items))


def schema_name(request: RecordedRequest) -> str:
    fmt = (request.json or {}).get("response_format") or {}
    return str(fmt.get("json_schema", {}).get("name", ""))


def responder(request: RecordedRequest) -> Reply:
    if schema_name(request) == "memory_extraction":
        answer = {
            "memory_list": [
                {
                    "key": "Lisbon",
                    "memory_type": "UserMemory",
                    "value": "[user viewpoint] The user likes Lisbon.",
                    "tags": ["user"],
                    "source_ids": [1],
                }
            ],
            "summary": "Lisbon",
        }
        return Reply(body=openai_completion(json.dumps(answer)))
    return Reply(body=openai_completion(json.dumps({"results": []})))


def fine_reader(server: LLMTestServer, **config: Any) -> StrategyStructMemReader:
    llm = {"backend": "openai", "model": "m", "base_url": server.url, "api_key": "sk-test-1234"}
    return reader(llm=llm, **config)


def test_fine_mode_uses_the_attributing_prompt(llm_server: LLMTestServer) -> None:
    llm_server.responder = responder
    mm = fine_reader(
        llm_server, strategy={"chunk_by": "session", "chunk_session": 5, "chunk_overlap": 1}
    )
    report = ReadReport()
    (items,) = mm.get_memory([CHAT], type="chat", info=INFO, mode="fine", report=report)
    extraction = [r for r in llm_server.requests if schema_name(r) == "memory_extraction"]
    assert len(extraction) == len(report.windows) == 3
    system = extraction[0].messages[0]["content"]
    assert "[user viewpoint]" in system and "[assistant viewpoint]" in system
    assert items[0].memory == "[user viewpoint] The user likes Lisbon."
    assert items[0].metadata.sources[0].message_index == 0
    assert any(schema_name(r) == "memory_filter" for r in llm_server.requests)


SPEAKERS = [
    {"role": "user", "name": "Anna", "content": "I moved to Porto in May."},
    {"role": "user", "name": "Ben", "content": "I still live in Lisbon."},
    {"role": "user", "name": "Carl", "content": "I am moving to Berlin next year."},
    {"role": "assistant", "content": "Noted, all three of you."},
]


def test_speakers_who_share_a_role_stay_apart(llm_server: LLMTestServer) -> None:
    llm_server.responder = responder
    mm = fine_reader(llm_server)
    (fast,) = mm.get_memory([SPEAKERS], type="chat", info=INFO)
    (item,) = fast
    assert item.memory.splitlines() == [
        "user (Anna): I moved to Porto in May.",
        "user (Ben): I still live in Lisbon.",
        "user (Carl): I am moving to Berlin next year.",
        "assistant: Noted, all three of you.",
    ]
    assert [(s.role, s.name) for s in item.metadata.sources] == [
        ("user", "Anna"), ("user", "Ben"), ("user", "Carl"), ("assistant", None),
    ]  # fmt: skip
    mm.get_memory([SPEAKERS], type="chat", info=INFO, mode="fine")
    (request,) = [r for r in llm_server.requests if schema_name(r) == "memory_extraction"]
    prompt = request.messages[-1]["content"]
    for line in ("user (Anna): I moved", "user (Ben): I still", "user (Carl): I am moving"):
        assert line in prompt
    # Refinement re-renders stored items' lines with their speakers too.
    llm_server.requests.clear()
    mm.fine_transfer_simple_mem(fast)
    (request,) = [r for r in llm_server.requests if schema_name(r) == "memory_extraction"]
    assert "user (Ben): I still live in Lisbon." in request.messages[-1]["content"]


def test_fine_mode_in_chinese_and_fallbacks(llm_server: LLMTestServer) -> None:
    llm_server.responder = lambda request: Reply(status=500, body={"error": {"message": "down"}})
    chat = [{"role": "user", "content": "我下周要去上海出差，想住在外滩附近。"}]
    report = ReadReport()
    (items,) = fine_reader(llm_server, llm_max_concurrency=1).get_memory(
        [chat], type="chat", info=INFO, mode="fine", report=report
    )
    system = llm_server.requests[0].messages[0]["content"]
    assert "[用户观点]" in system
    (fallback,) = items
    assert "fallback:llm_error" in fallback.metadata.tags
    assert fallback.metadata.sources[0].content == chat[0]["content"]


def test_refinement_and_async(llm_server: LLMTestServer) -> None:
    llm_server.responder = responder
    mm = fine_reader(
        llm_server, strategy={"chunk_by": "session", "chunk_session": 5, "chunk_overlap": 1}
    )
    fast = mm.get_memory([CHAT], type="chat", info=INFO)
    async_items = asyncio.run(mm.aget_memory([CHAT], type="chat", info=INFO))
    assert [i.id for i in async_items[0]] == [i.id for i in fast[0]]
    refined = mm.fine_transfer_simple_mem(fast[0])
    assert [i.memory for i in refined[0]] == ["[user viewpoint] The user likes Lisbon."]
    assert refined[0][0].metadata.sources[0].message_index == 0


def test_factory_and_cli(tmp_path: Path) -> None:
    config = MemReaderConfigFactory.from_dict(
        {
            "backend": "strategy_struct",
            "config": {
                "embedder": None,
                "strategy": {"chunk_by": "session", "chunk_session": 3, "chunk_overlap": 1},
            },
        }
    )
    assert isinstance(MemReaderFactory.from_config(config), StrategyStructMemReader)
    (tmp_path / "chat.json").write_text(json.dumps([CHAT]))
    (tmp_path / "strategy.yaml").write_text(
        "config:\n  embedder: null\n"
        "  strategy: {chunk_by: session, chunk_session: 4, chunk_overlap: 1}\n"
    )
    result = subprocess.run(
        [
            sys.executable,
            "-m",
            "memreader.cli",
            "read",
            "chat.json",
            "--reader",
            "strategy_struct",
            "--config",
            "strategy.yaml",
            "--json",
        ],
        cwd=tmp_path,
        env={**os.environ, "HF_HUB_OFFLINE": "1"},
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert result.returncode == 0, result.stderr
    items = [json.loads(line) for line in result.stdout.splitlines()]
    assert [sorted({s["message_index"] for s in i["metadata"]["sources"]}) for i in items] == [
        [0, 1, 2, 3],
        [3, 4, 5, 6],
        [6, 7, 8, 9],
    ]

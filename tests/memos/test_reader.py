"""MemOS's call shapes on a reader built from a MemOS config, against the scripted LLM server
(real HTTP): fine by default without filter and rewrite, ``info`` keys honoured, MemOS's
keywords accepted, fast items with MemOS's key and confidence, MemOS items refined, and a
``graph_db`` store URL used as the reader's store on both backends."""

from __future__ import annotations

import logging
from typing import Any

import pytest

from memreader.errors import ConfigError, InvalidInfoError
from memreader.memos import (
    MEMREADER_CALL_DEFAULTS,
    MemOSReader,
    MemReaderConfigFactory,
    MemReaderFactory,
)
from memreader.memos.reader import MAX_WINDOW_READERS
from memreader.steps.report import ReadReport
from memreader.stores import open_store
from memreader.testing import HashEmbedder
from tests.fine_script import CHAT, kind, scripted_responder
from tests.llm_server import LLMTestServer, llm_server
from tests.memos import memos_model
from tests.memos.shapes import INFO, memos_fast_item, memos_reader_config

__all__ = ["llm_server"]

LONG_CHAT = [
    [
        {"role": "user" if i % 2 == 0 else "assistant", "content": f"Message {i}: " + "tea " * 40}
        for i in range(12)
    ]
]


class UserContext:
    """Stands for MemOS's ``UserContext`` (an object with these attributes)."""

    manager_user_id = "boss"
    project_id = "p9"
    user_id = "u1"


def memos_reader(server: LLMTestServer, **extra: Any) -> MemOSReader:
    config = MemReaderConfigFactory.model_validate(memos_reader_config(server.url, **extra))
    return MemReaderFactory.from_config(config)


def test_a_memos_config_reads_fine_by_default_without_filter_and_rewrite(
    llm_server: LLMTestServer,
) -> None:
    llm_server.responder = scripted_responder()
    reader = memos_reader(llm_server)
    items = reader.get_memory(CHAT, "chat", dict(INFO))
    assert [i.memory for i in items[0]] == [
        "Emily moved to Lisbon in the week before 2026-05-10.",
        "Emily has a cat named Tom.",  # MemOS runs no hallucination filter by default
        "She starts piano lessons tomorrow.",  # ... and no rewrite
    ]
    assert [kind(r) for r in llm_server.requests] == ["memory_extraction"]
    assert llm_server.requests[0].json["model"] == "test-model"


def test_a_memos_config_dict_goes_straight_to_from_config(llm_server: LLMTestServer) -> None:
    llm_server.responder = scripted_responder()
    reader = MemReaderFactory.from_config(memos_reader_config(llm_server.url), None, None)
    assert isinstance(reader, MemOSReader)
    assert len(reader.get_memory(CHAT, type="chat", info=dict(INFO), mode="fine")[0]) == 3


def test_info_custom_tags_reach_the_prompt_and_not_the_items(llm_server: LLMTestServer) -> None:
    llm_server.responder = scripted_responder()
    reader = memos_reader(llm_server)
    info = {**INFO, "custom_tags": ["relocation-tag"], "channel": "web"}
    items = reader.get_memory(CHAT, "chat", info)
    prompt = " ".join(str(m["content"]) for m in llm_server.requests[0].messages)
    assert "relocation-tag" in prompt
    assert all(i.metadata.info == {"channel": "web"} for i in items[0])
    assert info["custom_tags"] == ["relocation-tag"]  # the caller's info is left as it was


def test_user_context_name_and_other_keywords_are_accepted(
    llm_server: LLMTestServer, caplog: pytest.LogCaptureFixture
) -> None:
    llm_server.responder = scripted_responder()
    reader = memos_reader(llm_server)
    with caplog.at_level(logging.WARNING, logger="memreader.memos"):
        for _ in range(2):
            items = reader.get_memory(
                CHAT, "chat", dict(INFO), user_name="cube-1", user_context=UserContext(), sync="x"
            )
    assert items[0][0].metadata.info == {"manager_user_id": "boss", "project_id": "p9"}
    memos = items[0][0].to_memos_dict()["metadata"]
    assert (memos["manager_user_id"], memos["project_id"]) == ("boss", "p9")
    said = [r.getMessage() for r in caplog.records]
    assert sum("user_name" in m for m in said) == 1 and sum("sync" in m for m in said) == 1


def test_fast_items_get_memos_key_and_confidence_unless_told_otherwise(
    llm_server: LLMTestServer,
) -> None:
    reader = memos_reader(llm_server)
    chat = [[{"role": "user", "content": "I love green tea! It calms me."}]]
    item = reader.get_memory(chat, "chat", dict(INFO), mode="fast")[0][0]
    assert (item.metadata.key, item.metadata.confidence) == ("user: I love green tea", 0.99)
    plain = MemOSReader(reader.reader, defaults=MEMREADER_CALL_DEFAULTS)
    item = plain.get_memory(chat, "chat", dict(INFO))[0][0]  # memreader's default: fast
    assert (item.metadata.key, item.metadata.confidence) == (None, None)
    assert llm_server.requests == []


def test_info_chunk_size_and_overlap_set_the_calls_window(llm_server: LLMTestServer) -> None:
    reader = memos_reader(llm_server)

    def windows(info: dict[str, Any]) -> int:
        report = ReadReport()
        reader.get_memory(LONG_CHAT, "chat", {**INFO, **info}, mode="fast", report=report)
        return len(report.windows)

    default = windows({})
    small = windows({"chunk_size": 128, "chunk_overlap": 0})
    topic = windows({"chunk_size": 128, "chunk_overlap": 0, "topic_chunk_size": 512})
    assert small > default > topic
    assert reader.reader.config.window.max_tokens == 256  # the reader itself is unchanged
    with pytest.raises(ConfigError, match="overlap_tokens"):
        windows({"chunk_size": 128, "chunk_overlap": 100})
    # A window per call's info: the readers kept for them stay bounded, the same one reused.
    counts = [windows({"chunk_size": 100 + n, "chunk_overlap": 0}) for n in range(12)]
    assert len(reader._siblings) == MAX_WINDOW_READERS and all(c >= small for c in counts)
    assert windows({"chunk_size": 111, "chunk_overlap": 0}) == counts[11]
    assert len(reader._siblings) == MAX_WINDOW_READERS


def test_bad_info_is_the_readers_typed_error(llm_server: LLMTestServer) -> None:
    reader = memos_reader(llm_server)
    with pytest.raises(InvalidInfoError, match=r"info\['session_id'\] must be a non-empty string"):
        reader.get_memory(CHAT, "chat", {"user_id": "u1"}, mode="fast")


def test_memos_items_and_their_dicts_are_refined(llm_server: LLMTestServer) -> None:
    llm_server.responder = scripted_responder()
    reader = memos_reader(llm_server)
    raw = memos_fast_item()
    as_object = memos_model.TextualMemoryItem.from_dict(memos_fast_item())
    refined = reader.fine_transfer_simple_mem(
        [raw, as_object], "chat", custom_tags=["moving"], user_context={"project_id": "p2"}
    )
    assert [len(group) for group in refined] == [3, 3]
    first = refined[0][0]
    assert first.metadata.refined_from == raw["id"]
    assert first.metadata.sources[0].message_index == 4
    assert first.metadata.info["project_id"] == "p2"
    assert (
        "span: a MemOS source has no character span" in first.metadata.info["memos"]["unrecovered"]
    )
    prompt = " ".join(str(m["content"]) for m in llm_server.requests[0].messages)
    assert "moving" in prompt and "I moved to Lisbon last week." in prompt
    # A refined item is a new memory: it does not inherit the stored one's lifecycle.
    out = memos_model.TextualMemoryItem.from_dict(first.to_memos_dict())
    assert out.metadata.version == 1 and out.metadata.visibility == "private"


def test_graph_db_and_searcher(llm_server: LLMTestServer, url: str) -> None:
    reader = memos_reader(llm_server)
    chat = [[{"role": "user", "content": "I love green tea."}]]
    first = reader.get_memory(chat, "chat", dict(INFO), mode="fast")
    with open_store(url, embedder=HashEmbedder()) as store:
        store.write(first[0])
    searcher = object()
    with_store = MemReaderFactory.from_config(
        MemReaderConfigFactory(**memos_reader_config(llm_server.url)), url, searcher
    )
    assert with_store.graph_db == url and with_store.searcher is searcher
    report = ReadReport()
    again = with_store.get_memory(chat, "chat", dict(INFO), mode="fast", report=report)
    assert report.resources["already_stored"] == 1
    assert again[0][0].metadata.embedding is None  # the store has its vector
    other = object()
    with_store.set_graph_db(other)  # not a store URL: kept, unused
    assert with_store.graph_db is other
    with_store.close()


def test_a_memos_item_that_cannot_be_read_is_its_own_error_record(
    llm_server: LLMTestServer,
) -> None:
    llm_server.responder = scripted_responder()
    reader = memos_reader(llm_server)
    bad = memos_fast_item()
    bad["metadata"]["created_at"] = "last tuesday"
    report = ReadReport()
    refined = reader.fine_transfer_simple_mem([bad, memos_fast_item()], "chat", report=report)
    assert [len(group) for group in refined] == [0, 3]
    errors = [w.error for w in report.windows if w.status == "error"]
    assert errors == [
        "item 0 is not a valid memory item: MemOSItemError: a MemOS item's created_at "
        "'last tuesday' is not an ISO 8601 time"
    ]

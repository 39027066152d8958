"""One window's failure is that window's result: unexpected errors, schema re-asks, cut-off
answers, oversize values and failed embedding batches, through the public API."""

from __future__ import annotations

import asyncio
import hashlib
import json
import math
from collections.abc import Iterator, Sequence
from typing import Any

import pytest
from pydantic import BaseModel, ConfigDict

from memreader import ReadReport, SimpleStructMemReader, SimpleStructMemReaderConfig
from memreader.embedders import register_embedder
from memreader.errors import InternalError
from memreader.extraction.contract import MAX_MEMORIES, MAX_VALUE_CHARS
from memreader.pipeline import FunctionStep
from tests.common import INFO
from tests.fine_script import CHAT, EXTRACTION, kind, make_reader, scripted_responder
from tests.llm_server import LLMTestServer, RecordedRequest, Reply, llm_server, openai_completion

__all__ = ["llm_server"]

NO_CHECKS = {"hallucination_filter": False, "rewrite": "off"}


def scenes_with(n: int, marker_at: int | None = None) -> list[list[dict[str, str]]]:
    scenes = []
    for i in range(n):
        text = f"I planted tree number {i} in my garden."
        if i == marker_at:
            text += " BOOM"
        scenes.append([{"role": "user", "content": text}])
    return scenes


@pytest.mark.parametrize("use_async", [False, True])
def test_an_unexpected_error_in_one_window_is_that_windows_fallback(
    llm_server: LLMTestServer, monkeypatch: pytest.MonkeyPatch, use_async: bool
) -> None:
    from memreader.steps import fine as steps

    llm_server.responder = scripted_responder()
    reader = make_reader(llm_server, fine=NO_CHECKS)
    real_plan = steps.extract_plan

    def plan(window: Any, *args: Any) -> Iterator[Any]:
        if any("BOOM" in line for _, line in window.lines):
            raise KeyError("a bug in one window")
        return (yield from real_plan(window, *args))

    monkeypatch.setattr(steps, "extract_plan", plan)
    report = ReadReport()
    scenes = scenes_with(5, marker_at=2)
    if use_async:
        result = asyncio.run(
            reader.aget_memory(scenes, type="chat", info=INFO, mode="fine", report=report)
        )
    else:
        result = reader.get_memory(scenes, type="chat", info=INFO, mode="fine", report=report)
    assert [w.status for w in report.windows] == ["ok", "ok", "fallback", "ok", "ok"]
    broken = report.windows[2]
    assert broken.fallback_reason == "internal_error" and "KeyError" in (broken.error or "")
    [fallback] = result[2]
    assert "fallback:internal_error" in fallback.metadata.tags
    assert fallback.memory.endswith("BOOM") and fallback.metadata.embedding is not None
    assert all(result[i] for i in (0, 1, 3, 4)), "the other windows keep their items"


def test_a_schema_violation_is_reasked_with_the_error(llm_server: LLMTestServer) -> None:
    llm_server.script([openai_completion(json.dumps({"summary": "no list"}))])
    llm_server.responder = scripted_responder()
    reader = make_reader(llm_server, fine=NO_CHECKS)
    report = ReadReport()
    [items] = reader.get_memory(CHAT, type="chat", info=INFO, mode="fine", report=report)
    assert report.windows[0].status == "ok" and len(items) == 3
    assert len(llm_server.requests) == 2
    reask = llm_server.requests[1].messages
    assert reask[-2]["role"] == "assistant" and "no list" in reask[-2]["content"]
    assert "memory_list" in reask[-1]["content"], "the model is told what was wrong"


def test_entries_without_a_usable_value_are_a_schema_violation(
    llm_server: LLMTestServer,
) -> None:
    llm_server.responder = scripted_responder(
        extraction={"memory_list": [{"text": "Emily lives in Lisbon"}], "summary": ""}
    )
    reader = make_reader(llm_server, fine=NO_CHECKS)
    report = ReadReport()
    [items] = reader.get_memory(CHAT, type="chat", info=INFO, mode="fine", report=report)
    assert len(llm_server.requests) == 3, "re-asked within max_retries=2"
    assert report.windows[0].fallback_reason == "parse_error"
    assert "fallback:parse_error" in items[0].metadata.tags


def cut_off(extraction: dict[str, Any], before: str) -> Reply:
    text = json.dumps(extraction)
    return Reply(body=openai_completion(text[: text.index(before)], finish_reason="length"))


def test_a_cut_off_answer_is_reasked(llm_server: LLMTestServer) -> None:
    llm_server.script([cut_off(EXTRACTION, '"Emily has a cat')])
    llm_server.responder = scripted_responder()
    reader = make_reader(llm_server, fine=NO_CHECKS)
    report = ReadReport()
    [items] = reader.get_memory(CHAT, type="chat", info=INFO, mode="fine", report=report)
    assert len(llm_server.requests) == 2
    assert len(items) == 3 and not report.windows[0].truncated


def test_an_answer_cut_off_every_time_keeps_its_complete_part(llm_server: LLMTestServer) -> None:
    llm_server.responder = lambda request: cut_off(EXTRACTION, '"Emily has a cat')
    reader = make_reader(llm_server, fine=NO_CHECKS)
    report = ReadReport()
    [items] = reader.get_memory(CHAT, type="chat", info=INFO, mode="fine", report=report)
    assert len(llm_server.requests) == 3
    assert [i.memory for i in items] == [EXTRACTION["memory_list"][0]["value"]]
    assert report.windows[0].truncated and report.windows[0].status == "ok"


def test_an_answer_cut_off_before_any_memory_is_a_truncated_fallback(
    llm_server: LLMTestServer,
) -> None:
    llm_server.responder = lambda request: cut_off(EXTRACTION, '"value": "Emily moved')
    reader = make_reader(llm_server, fine=NO_CHECKS)
    report = ReadReport()
    [items] = reader.get_memory(CHAT, type="chat", info=INFO, mode="fine", report=report)
    assert len(llm_server.requests) == 3
    assert report.windows[0].fallback_reason == "truncated", "not reported as empty"
    assert "fallback:truncated" in items[0].metadata.tags


def test_oversize_values_are_clipped_and_tagged(llm_server: LLMTestServer) -> None:
    huge = "Emily likes " + "very " * 200_000 + "long walks."
    memories = [
        {"key": "k" * 500, "memory_type": "UserMemory", "value": huge, "tags": ["t" * 300]}
    ] + [
        {"key": f"fact {i}", "memory_type": "UserMemory", "value": f"Fact {i}.", "tags": []}
        for i in range(MAX_MEMORIES + 7)
    ]

    def respond(request: RecordedRequest) -> Reply:
        if kind(request) == "memory_extraction":
            return Reply(body=openai_completion(json.dumps({"memory_list": memories})))
        rewritten = {"results": [{"id": 2, "value": "Fact zero, " + "again " * 1000}]}
        return Reply(body=openai_completion(json.dumps(rewritten)))

    llm_server.responder = respond
    reader = make_reader(llm_server, fine={"hallucination_filter": False})
    report = ReadReport()
    [items] = reader.get_memory(CHAT, type="chat", info=INFO, mode="fine", report=report)
    assert len(items) == MAX_MEMORIES and report.windows[0].memories_over_limit == 8
    first, second = items[0], items[1]
    assert len(first.memory) <= MAX_VALUE_CHARS and first.memory.startswith("Emily likes very")
    assert "repaired:value_clipped" in first.metadata.tags
    assert len(first.metadata.key or "") <= 120 and "repaired:clipped" in first.metadata.tags
    assert all(len(tag) <= 64 for tag in first.metadata.tags)
    assert (
        len(second.memory) <= MAX_VALUE_CHARS and "repaired:value_clipped" in second.metadata.tags
    )


# -- embedding batches --------------------------------------------------------------------------


class FlakyEmbedderConfig(BaseModel):
    model_config = ConfigDict(extra="forbid")
    batch_size: int = 2


@register_embedder("flaky-test")
class FlakyEmbedder:
    """Fails (untyped, as a careless plugin would) on any batch holding the word BOOM."""

    config_class = FlakyEmbedderConfig
    name = "flaky-test"
    dimension = 4
    max_input_tokens = 10_000

    def __init__(self, config: FlakyEmbedderConfig) -> None:
        self.batch_size = config.batch_size

    def count_tokens(self, text: str) -> int:
        return len(text.split())

    def embed(self, texts: Sequence[str]) -> list[list[float]]:
        if any("BOOM" in text for text in texts):
            raise RuntimeError("the plugin fell over")
        out = []
        for text in texts:
            digest = hashlib.sha256(text.encode()).digest()[:4]
            norm = math.sqrt(sum(b * b for b in digest)) or 1.0
            out.append([b / norm for b in digest])
        return out


@pytest.mark.parametrize("mode", ["fast", "fine"])
def test_a_failed_embedding_batch_costs_only_its_items(
    llm_server: LLMTestServer, mode: str
) -> None:
    def echo(request: RecordedRequest) -> Reply:
        # One memory per window that repeats the prompt, so BOOM is in the same items as in
        # fast mode.
        value = request.messages[-1]["content"]
        memory = {"key": "k", "memory_type": "UserMemory", "value": value, "tags": []}
        return Reply(body=openai_completion(json.dumps({"memory_list": [memory]})))

    llm_server.responder = echo
    config = SimpleStructMemReaderConfig(
        embedder={"backend": "flaky-test", "config": {"batch_size": 2}},
        llm={"model": "m", "base_url": llm_server.url, "max_retries": 0},
        fine=NO_CHECKS,
    )
    reader = SimpleStructMemReader(config)
    report = ReadReport()
    result = reader.get_memory(
        scenes_with(6, marker_at=4), type="chat", info=INFO, mode=mode, report=report
    )
    items = [items[0] for items in result]
    assert len(items) == 6
    failed = [i for i, item in enumerate(items) if item.metadata.embedding is None]
    assert failed == [4, 5], "the batch of two holding BOOM, and only it"
    assert all("embedding:failed" in items[i].metadata.tags for i in failed)
    assert [bool(w.embedding_error) for w in report.windows] == [False] * 4 + [True] * 2
    assert "RuntimeError" in (report.windows[4].embedding_error or "")
    assert report.errors == report.windows[4:]


def test_public_calls_raise_only_typed_errors() -> None:
    def broken(state: Any, runtime: Any) -> None:
        raise AttributeError("a broken user step")

    reader = SimpleStructMemReader(SimpleStructMemReaderConfig(embedder=None))
    reader.pipeline.insert_after("parse", FunctionStep("broken", broken, requires=["units"]))
    with pytest.raises(InternalError, match="step 'broken' failed: AttributeError"):
        reader.get_memory(CHAT, type="chat", info=INFO)
    with pytest.raises(InternalError) as info:
        asyncio.run(reader.aget_memory(CHAT, type="chat", info=INFO))
    assert isinstance(info.value.__cause__, AttributeError)


def test_lone_surrogates_in_model_output_never_reach_an_item(llm_server: LLMTestServer) -> None:
    # json.loads turns an unpaired "\ud800" escape into a lone surrogate, which UTF-8 refuses.
    raw = (
        '{"memory_list": [{"key": "k\\ud800", "memory_type": "UserMemory", '
        '"value": "Emily \\udfff likes tea", "tags": ["t\\ud800"], "source_ids": [1]}], '
        '"summary": "s\\ud800"}'
    )
    llm_server.responder = lambda request: Reply(body=openai_completion(raw))
    reader = make_reader(llm_server, fine=NO_CHECKS)
    [items] = reader.get_memory(CHAT, type="chat", info=INFO, mode="fine")
    [item] = items
    assert item.memory == "Emily \ufffd likes tea"
    json.dumps(item.to_dict(), ensure_ascii=False).encode("utf-8")  # writable


def test_lone_surrogates_in_tags_and_refined_items_are_input_errors(
    llm_server: LLMTestServer,
) -> None:
    from memreader.errors import InputError

    reader = make_reader(llm_server)
    with pytest.raises(InputError, match=r"custom_tags\[1\] holds a lone surrogate"):
        reader.get_memory(CHAT, type="chat", info=INFO, custom_tags=["ok", "bad\ud800"])
    [fast] = reader.get_memory(CHAT, type="chat", info=INFO)
    stored = fast[0].to_dict()
    stored["metadata"]["sources"][1]["content"] = "Welcome\ud800"
    stored["metadata"]["sources"][1]["span"] = None
    report = ReadReport()
    assert reader.fine_transfer_simple_mem([stored], report=report) == [[]]
    (record,) = report.windows
    assert record.status == "error" and record.error is not None
    assert "item 0 (" in record.error and "source 1 holds a lone surrogate" in record.error
    assert llm_server.requests == [], "refused before any LLM call"

"""Fine mode through a real HTTP server speaking the OpenAI (and Ollama) API: extraction,
hallucination filter, rewrite, fallbacks, concurrency, usage, language, refinement, async;
importance and valid_from from the answer."""

from __future__ import annotations

import asyncio
import json
import re
from datetime import datetime, timedelta, timezone
from typing import Any

import pytest

from memreader import (
    MemoryType,
    SimpleStructMemReader,
    SimpleStructMemReaderConfig,
    TextualMemoryItem,
)
from memreader.errors import LLMRequiredError
from memreader.extraction.importance import heuristic_importance
from memreader.steps.report import ReadReport
from tests.common import HASH_EMBEDDER, INFO
from tests.fine_script import CHAT, EXTRACTION, kind, make_reader, scripted_responder
from tests.llm_server import LLMTestServer, RecordedRequest, Reply, llm_server, openai_completion

__all__ = ["llm_server"]


def numbers(request: RecordedRequest) -> list[int]:
    return [int(n) for n in re.findall(r"^\[(\d+)\]", request.messages[-1]["content"], re.M)]


def all_message_sources(result: list[list[Any]]) -> set[tuple[int, int]]:
    return {
        (s.scene_index, s.message_index)
        for items in result
        for i in items
        for s in i.metadata.sources
    }


def test_extract_filter_rewrite(llm_server: LLMTestServer) -> None:
    llm_server.responder = scripted_responder()
    reader = make_reader(llm_server)
    report = ReadReport()
    [items] = reader.get_memory(
        CHAT, type="chat", info=INFO, mode="fine", custom_tags=["onboarding"], report=report
    )
    # The filter dropped the unsupported cat; the rewrite made "tomorrow" a date.
    assert [i.memory for i in items] == [
        "Emily moved to Lisbon in the week before 2026-05-10.",
        "Emily starts piano lessons on 2026-05-11.",
    ]
    first, second = items
    assert [s.message_index for s in first.metadata.sources] == [0]
    assert [s.message_index for s in second.metadata.sources] == [2]
    assert second.metadata.sources[0].content == CHAT[0][2]["content"]
    assert second.metadata.sources[0].span == (0, len(CHAT[0][2]["content"]))
    assert first.metadata.memory_type is MemoryType.USER
    assert first.metadata.key == "Emily's city"
    assert first.metadata.tags == ["mode:fine", "relocation", "onboarding"]
    assert first.metadata.background == EXTRACTION["summary"]
    assert first.metadata.embedding is not None
    [window] = report.windows
    assert (window.status, window.filter_status, window.filter_dropped) == ("ok", "ok", 1)
    assert (window.rewrite_status, window.rewrite_changed) == ("ok", 1)
    assert window.uncited_messages == [1], "the assistant turn is cited by no kept memory"
    assert report.usage is not None and report.usage.requests == 3
    assert report.usage.total.prompt_tokens == 300 and report.usage.total.completion_tokens == 60
    assert set(report.usage.by_slot) == {"llm", "general_llm"}
    # What the model saw: numbered, time-stamped lines and the custom tags.
    extraction = next(r for r in llm_server.requests if kind(r) == "memory_extraction")
    prompt = extraction.messages[-1]["content"]
    assert (
        prompt.splitlines()[0]
        == "[1] user: [2026-05-10T09:00:00]: I'm Emily. I moved to Lisbon last week."
    )
    assert "onboarding" in extraction.messages[0]["content"]
    assert (
        extraction.json["response_format"]["json_schema"]["schema"]["properties"]["memory_list"][
            "maxItems"
        ]
        > 0
    )


def test_ids_are_deterministic_and_async_matches_sync(llm_server: LLMTestServer) -> None:
    llm_server.responder = scripted_responder()
    reader = make_reader(llm_server)
    sync_ids = [i.id for i in reader.get_memory(CHAT, type="chat", info=INFO, mode="fine")[0]]
    again = [i.id for i in reader.get_memory(CHAT, type="chat", info=INFO, mode="fine")[0]]
    async_ids = [
        i.id for i in asyncio.run(reader.aget_memory(CHAT, type="chat", info=INFO, mode="fine"))[0]
    ]
    assert sync_ids == again == async_ids and len(sync_ids) == 2


@pytest.mark.parametrize(
    ("reply", "reason", "requests"),
    [
        (Reply(body=openai_completion("I'd rather not answer in JSON.")), "parse_error", 3),
        (Reply(status=500, body={"error": {"message": "boom"}}), "llm_error", 3),
        (Reply(body=openai_completion("")), "empty_response", 3),
        # The wrong schema is re-asked within max_retries (was: one request).
        (Reply(body=openai_completion('{"summary": "no list"}')), "parse_error", 3),
        (Reply(status=400, body={"error": {"message": "bad request"}}), "llm_error", 1),
    ],
)
def test_failed_extraction_falls_back_to_the_raw_window(
    llm_server: LLMTestServer, reply: Reply, reason: str, requests: int
) -> None:
    llm_server.responder = lambda request: reply
    reader = make_reader(llm_server)
    report = ReadReport()
    [items] = reader.get_memory(CHAT, type="chat", info=INFO, mode="fine", report=report)
    assert len(items) == 1
    item = items[0]
    assert f"fallback:{reason}" in item.metadata.tags
    assert "mode:fine" in item.metadata.tags
    assert item.memory.startswith("user: [2026-05-10T09:00:00]: I'm Emily")
    assert all_message_sources([items]) == {(0, 0), (0, 1), (0, 2)}, "no message lost"
    assert item.metadata.embedding is not None
    assert [w.status for w in report.windows] == ["fallback"]
    assert report.windows[0].fallback_reason == reason and report.windows[0].error
    assert len(llm_server.requests) == requests


def test_timeout_falls_back(llm_server: LLMTestServer) -> None:
    llm_server.responder = lambda request: Reply(body=openai_completion("{}"), delay=1.0)
    reader = make_reader(llm_server, llm={"timeout": 0.2, "max_retries": 1})
    report = ReadReport()
    [items] = reader.get_memory(CHAT, type="chat", info=INFO, mode="fine", report=report)
    assert "fallback:timeout" in items[0].metadata.tags
    assert len(llm_server.requests) == 2, "one retry"


def test_retry_then_success(llm_server: LLMTestServer) -> None:
    llm_server.script(
        [
            Reply(
                status=429, headers={"Retry-After": "0"}, body={"error": {"message": "slow down"}}
            ),
            Reply(status=503, body={"error": {"message": "busy"}}),
        ]
    )
    llm_server.responder = scripted_responder()
    reader = make_reader(llm_server, fine={"hallucination_filter": False, "rewrite": "off"})
    report = ReadReport()
    [items] = reader.get_memory(CHAT, type="chat", info=INFO, mode="fine", report=report)
    assert len(items) == 3 and report.windows[0].status == "ok"
    assert len(llm_server.requests) == 3


def test_model_output_is_repaired_not_dropped(llm_server: LLMTestServer) -> None:
    answer = (
        "<think>Let me see.</think>\nHere you go:\n```json\n"
        + json.dumps(
            {
                "memory list": [
                    {
                        "key": "城市",
                        "memory_type": "用户记忆",
                        "value": "Emily lives in Lisbon.",
                        "tags": ["city", 3],
                        "source_ids": [1, 9],
                    },
                    {
                        "key": "x",
                        "memory_type": "Gossip",
                        "value": "Lisbon is sunny.",
                        "tags": [],
                        "source_ids": [],
                    },
                ],
                "summary": "s",
            }
        )
        + "\n```"
    )
    llm_server.responder = scripted_responder(extraction=answer)
    reader = make_reader(llm_server, fine={"hallucination_filter": False, "rewrite": "off"})
    [items] = reader.get_memory(CHAT, type="chat", info=INFO, mode="fine")
    first, second = items
    assert first.metadata.memory_type is MemoryType.USER
    assert [s.message_index for s in first.metadata.sources] == [0], "source 9 does not exist"
    assert "repaired:source_ids" in first.metadata.tags and "repaired:tags" in first.metadata.tags
    assert second.metadata.memory_type is MemoryType.LONG_TERM
    assert "repaired:memory_type" in second.metadata.tags
    assert "sources:window" in second.metadata.tags and len(second.metadata.sources) == 3


def test_truncated_answer_keeps_complete_memories(llm_server: LLMTestServer) -> None:
    full = json.dumps(EXTRACTION)
    cut = full[: full.index('"Emily has a cat')]  # cut inside the second memory
    llm_server.responder = scripted_responder(extraction=cut)
    reader = make_reader(llm_server, fine={"hallucination_filter": False, "rewrite": "off"})
    report = ReadReport()
    [items] = reader.get_memory(CHAT, type="chat", info=INFO, mode="fine", report=report)
    assert items and items[0].memory == EXTRACTION["memory_list"][0]["value"]
    assert report.windows[0].truncated


def test_filter_and_rewrite_failures_keep_items(llm_server: LLMTestServer) -> None:
    def respond(request: RecordedRequest) -> Reply:
        if kind(request) == "memory_extraction":
            return Reply(body=openai_completion(json.dumps(EXTRACTION)))
        return Reply(status=500, body={"error": {"message": "down"}})

    llm_server.responder = respond
    reader = make_reader(llm_server, llm={"max_retries": 0})
    report = ReadReport()
    [items] = reader.get_memory(CHAT, type="chat", info=INFO, mode="fine", report=report)
    assert [i.memory for i in items] == [m["value"] for m in EXTRACTION["memory_list"]]
    window = report.windows[0]
    assert (window.status, window.filter_status, window.rewrite_status) == (
        "ok",
        "failed",
        "failed",
    )
    assert len(window.pass_errors) == 2


def test_filter_omission_keeps_memories(llm_server: LLMTestServer) -> None:
    def respond(request: RecordedRequest) -> Reply:
        if kind(request) == "memory_extraction":
            return Reply(body=openai_completion(json.dumps(EXTRACTION)))
        return Reply(body=openai_completion(json.dumps({"results": []})))

    llm_server.responder = respond
    [items] = make_reader(llm_server).get_memory(CHAT, type="chat", info=INFO, mode="fine")
    assert len(items) == 3


def test_empty_extraction_is_kept_as_raw_or_reported(llm_server: LLMTestServer) -> None:
    llm_server.responder = scripted_responder(
        extraction={"memory_list": [], "summary": "small talk"}
    )
    [items] = make_reader(llm_server).get_memory(CHAT, type="chat", info=INFO, mode="fine")
    assert len(items) == 1 and "fallback:empty" in items[0].metadata.tags
    report = ReadReport()
    [items] = make_reader(llm_server, fine={"empty_window": "drop"}).get_memory(
        CHAT, type="chat", info=INFO, mode="fine", report=report
    )
    assert items == []
    assert report.windows[0].status == "empty" and report.windows[0].uncited_messages == [0, 1, 2]


def test_language_is_chosen_per_window(llm_server: LLMTestServer) -> None:
    llm_server.responder = scripted_responder(extraction={"memory_list": [], "summary": ""})
    reader = make_reader(llm_server, fine={"hallucination_filter": False, "rewrite": "off"})
    scenes = [CHAT[0], [{"role": "user", "content": "我下周要去上海出差，顺便想去看看外滩。"}]]
    report = ReadReport()
    reader.get_memory(scenes, type="chat", info=INFO, mode="fine", report=report)
    systems = [r.messages[0]["content"] for r in llm_server.requests]
    assert [w.language for w in report.windows] == ["en", "zh"]
    assert any(s.startswith("你为个人助理") for s in systems)
    assert any(s.startswith("You extract") for s in systems)


@pytest.mark.parametrize("use_async", [False, True])
def test_concurrency_never_exceeds_the_budget(llm_server: LLMTestServer, use_async: bool) -> None:
    llm_server.latency = 0.05
    llm_server.responder = scripted_responder()
    reader = make_reader(llm_server, llm_max_concurrency=3)
    scenes = [[{"role": "user", "content": f"Fact number {i}: I like tea {i}."}] for i in range(12)]
    if use_async:
        result = asyncio.run(reader.aget_memory(scenes, type="chat", info=INFO, mode="fine"))
    else:
        result = reader.get_memory(scenes, type="chat", info=INFO, mode="fine")
    assert len(result) == 12 and all(result)
    assert len(llm_server.requests) == 36
    assert llm_server.max_in_flight == 3


def test_refinement_of_fast_items(llm_server: LLMTestServer) -> None:
    llm_server.responder = scripted_responder()
    reader = make_reader(llm_server)
    info = {**INFO, "app": "demo"}
    [fast] = reader.get_memory(CHAT, type="chat", info=info, mode="fast")
    report = ReadReport()
    refined = reader.fine_transfer_simple_mem(fast, type="chat", report=report)
    assert len(refined) == len(fast) == 1
    items = refined[0]
    assert [i.memory for i in items] == [
        "Emily moved to Lisbon in the week before 2026-05-10.",
        "Emily starts piano lessons on 2026-05-11.",
    ]
    for item in items:
        assert (item.metadata.user_id, item.metadata.session_id, item.metadata.info) == (
            "u1",
            "s1",
            {"app": "demo"},
        )
        for source in item.metadata.sources:
            start, end = source.span  # type: ignore[misc]
            assert CHAT[0][source.message_index]["content"][start:end] == source.content
    again = reader.fine_transfer_simple_mem([i.to_dict() for i in fast], type="chat")
    assert [i.id for i in again[0]] == [i.id for i in items], "idempotent, and dicts are accepted"
    async_ids = [i.id for i in asyncio.run(reader.afine_transfer_simple_mem(fast))[0]]
    assert async_ids == [i.id for i in items]
    assert report.mode == "refine" and report.usage is not None and report.usage.requests == 3


def test_fine_mode_through_ollama(llm_server: LLMTestServer) -> None:
    llm_server.responder = scripted_responder(usage=(7, 3))
    reader = make_reader(llm_server, llm={"backend": "ollama", "base_url": llm_server.ollama_host})
    report = ReadReport()
    [items] = reader.get_memory(CHAT, type="chat", info=INFO, mode="fine", report=report)
    assert len(items) == 2
    assert {r.api for r in llm_server.requests} == {"ollama"}
    assert report.usage is not None and report.usage.total.prompt_tokens == 21


def test_fine_needs_an_llm() -> None:
    reader = SimpleStructMemReader(SimpleStructMemReaderConfig(embedder=HASH_EMBEDDER))
    with pytest.raises(LLMRequiredError, match="needs an LLM"):
        reader.get_memory(CHAT, type="chat", info=INFO, mode="fine")
    with pytest.raises(LLMRequiredError):
        reader.fine_transfer_simple_mem([])


def test_secret_never_in_reprs_or_errors(llm_server: LLMTestServer) -> None:
    llm_server.responder = lambda request: Reply(status=500, body={"error": {"message": "boom"}})
    reader = make_reader(llm_server)
    report = ReadReport()
    reader.get_memory(CHAT, type="chat", info=INFO, mode="fine", report=report)
    assert "sk-test-secret" not in repr(reader.config)
    assert "sk-test-secret" not in json.dumps(report.to_dict())


def test_hooks_observe_every_call_of_a_factory_reader(llm_server: LLMTestServer) -> None:
    from memreader import MemReaderConfigFactory, MemReaderFactory

    llm_server.script([Reply(status=500, body={"error": {"message": "once"}})])
    llm_server.responder = scripted_responder()
    cfg = MemReaderConfigFactory.from_dict(
        {
            "config": {
                "embedder": {"backend": "hash"},
                "llm": {"model": "m", "base_url": llm_server.url, "backoff_base": 0.01},
            }
        }
    )
    reader = MemReaderFactory.from_config(cfg)
    seen: list[tuple[str, str]] = []
    reader.hooks.before_call.append(lambda e: seen.append(("before", e.slot)))  # type: ignore[attr-defined]
    reader.hooks.after_call.append(lambda e: seen.append(("after", e.slot)))  # type: ignore[attr-defined]
    reader.hooks.on_error.append(lambda e: seen.append(("error", e.slot)))  # type: ignore[attr-defined]
    reader.hooks.after_call.append(lambda e: 1 / 0)  # type: ignore[attr-defined]  # a broken hook
    reader.get_memory(CHAT, type="chat", info=INFO, mode="fine")
    assert seen[:4] == [("before", "llm"), ("error", "llm"), ("before", "llm"), ("after", "llm")]
    assert seen.count(("after", "general_llm")) == 2


SCORED = {
    "memory_list": [
        {
            **EXTRACTION["memory_list"][0],
            "importance": 8,
            "importance_reason": "where she lives",
            "valid_from": "2026-05-03",
        },
        {**EXTRACTION["memory_list"][1], "importance": 2},
        # No score, and a date the contract cannot read: the heuristic and the source's time.
        {**EXTRACTION["memory_list"][2], "valid_from": "tomorrow"},
    ],
    "summary": EXTRACTION["summary"],
}


def test_fine_items_carry_the_models_importance_and_valid_from(llm_server: LLMTestServer) -> None:
    llm_server.responder = scripted_responder(extraction=SCORED)
    reader = make_reader(llm_server)
    [home, piano] = reader.get_memory(CHAT, type="chat", info=INFO, mode="fine")[0]
    # The filter dropped the cat and the rewrite changed the piano memory: both kept the fields.
    assert (home.metadata.importance, home.metadata.importance_reason) == (
        0.8,
        "model: where she lives",
    )
    assert home.metadata.valid_from == datetime(2026, 5, 3, tzinfo=timezone.utc)
    assert piano.memory == "Emily starts piano lessons on 2026-05-11."
    assert piano.metadata.importance_reason == heuristic_importance(piano.memory).reason
    assert piano.metadata.importance_reason.startswith("heuristic: ")
    assert piano.metadata.valid_from == datetime(2026, 5, 10, 9, 2, tzinfo=timezone.utc)
    assert "repaired:valid_from" in piano.metadata.tags
    assert TextualMemoryItem.from_dict(json.loads(json.dumps(home.to_dict()))) == home
    # The fields never reach the ids.
    llm_server.responder = scripted_responder()
    plain = reader.get_memory(CHAT, type="chat", info=INFO, mode="fine")[0]
    assert [i.id for i in plain] == [home.id, piano.id]
    assert plain[0].metadata.importance_reason is not None
    assert plain[0].metadata.importance_reason.startswith("heuristic: ")
    # What the model was asked for.
    extraction = next(r for r in llm_server.requests if kind(r) == "memory_extraction")
    schema = extraction.json["response_format"]["json_schema"]["schema"]
    assert "importance" in schema["properties"]["memory_list"]["items"]["properties"]
    assert '"valid_from"' in extraction.messages[0]["content"]


def test_a_dated_answer_takes_the_zone_of_the_messages(llm_server: LLMTestServer) -> None:
    chat = [[{**m, "chat_time": "2024-05-02T10:00:00+02:00"} for m in CHAT[0]]]
    answer = {"memory_list": [{**EXTRACTION["memory_list"][0], "valid_from": "2024-05-01"}]}
    llm_server.responder = scripted_responder(extraction=answer)
    reader = make_reader(llm_server, fine={"hallucination_filter": False, "rewrite": "off"})
    [[item]] = reader.get_memory(chat, type="chat", info=INFO, mode="fine")
    assert item.metadata.valid_from == datetime(2024, 5, 1, tzinfo=timezone(timedelta(hours=2)))


def test_a_fallback_item_is_scored_by_the_heuristic(llm_server: LLMTestServer) -> None:
    llm_server.responder = lambda request: Reply(status=400, body={"error": {"message": "no"}})
    [[item]] = make_reader(llm_server).get_memory(CHAT, type="chat", info=INFO, mode="fine")
    assert "fallback:llm_error" in item.metadata.tags
    assert item.metadata.importance is not None
    assert item.metadata.importance_reason is not None
    assert item.metadata.importance_reason.startswith("heuristic: ")
    assert item.metadata.valid_from == datetime(2026, 5, 10, 9, 0, tzinfo=timezone.utc)


def test_refinement_reads_items_stored_before_the_new_fields(llm_server: LLMTestServer) -> None:
    llm_server.responder = scripted_responder(extraction=SCORED)
    reader = make_reader(llm_server)
    [fast] = reader.get_memory(CHAT, type="chat", info=INFO, mode="fast")
    assert fast[0].metadata.importance is not None, "fast mode's importance step"
    old = [i.to_dict() for i in fast]
    for data in old:
        for key in ("importance", "importance_reason", "valid_from"):
            del data["metadata"][key]
    [refined] = reader.fine_transfer_simple_mem(old, type="chat")
    assert refined[0].metadata.importance == 0.8
    assert refined[0].metadata.valid_from == datetime(2026, 5, 3, tzinfo=timezone.utc)

"""Category summaries: the deterministic list, and the LLM's answer checked against what it
was shown (through a real HTTP server scripted as the model)."""

from __future__ import annotations

import json
from datetime import datetime, timedelta, timezone
from typing import Any

import pytest

from memreader.categories.llm_summary import llm_summary, read_answer
from memreader.categories.summaries import (
    Sentence,
    cited_ids,
    deterministic_summary,
    parse,
    render,
    without_refs,
)
from memreader.items import TextualMemoryItem, TextualMemoryItemMetadata
from memreader.llms import LLMRouter
from memreader.llms.config import LLMSlots
from memreader.stores.category_types import StoredCategory
from memreader.stores.records import StoredMemory
from tests.llm_server import LLMTestServer, Reply, llm_server, openai_completion

__all__ = ["llm_server"]

pytestmark = pytest.mark.timeout(60)

T0 = datetime(2026, 5, 1, tzinfo=timezone.utc)


def memory(memory_id: str, text: str, day: int) -> StoredMemory:
    item = TextualMemoryItem(
        id=memory_id,
        memory=text,
        metadata=TextualMemoryItemMetadata(user_id="u", session_id="s"),
    )
    when = T0 + timedelta(days=day)
    return StoredMemory(
        item=item, status="active", content_hash=memory_id, recorded_at=when, valid_from=when
    )


CATEGORY = StoredCategory(user_id="u", name="health", description="Illness, allergies, diet.")


def test_summaries_round_trip_and_cite() -> None:
    sentences = [Sentence("Ana is allergic to peanuts.", ("m1", "m2")), Sentence("x", ("m3",))]
    text = render(sentences)
    assert parse(text) == sentences
    assert cited_ids(text) == {"m1", "m2", "m3"}
    assert without_refs(text.splitlines()[0]) == "Ana is allergic to peanuts."
    assert parse("a line without citations\nkept [ref:m9]") == [Sentence("kept", ("m9",))]


def test_deterministic_summary_is_newest_first_within_the_limit() -> None:
    memories = [memory(f"m{d}", f"fact of day {d}", d) for d in range(10)]
    summary = deterministic_summary(memories, max_chars=10_000)
    lines = summary.splitlines()
    assert lines[0] == "- fact of day 9 [ref:m9]" and lines[-1] == "- fact of day 0 [ref:m0]"
    short = deterministic_summary(memories, max_chars=80)
    assert len(short) <= 80 and short.splitlines()[0].endswith("[ref:m9]")
    assert deterministic_summary(list(reversed(memories)), 10_000) == summary


def test_read_answer_maps_numbers_and_refuses_forgeries() -> None:
    ids = ["m1", "m2"]
    sentences, notes = read_answer(
        {"sentences": [{"text": "A.", "refs": [1, 7]}, {"text": "B.", "refs": [99]}]}, ids
    )
    assert sentences == [Sentence("A.", ("m1",))]
    assert notes == [
        "dropped 2 citation(s) of items not shown",
        "dropped 1 sentence(s) citing no listed item",
    ]
    for bad in ({"sentences": [{"text": "A.", "refs": ["m1"]}]}, {"answer": "x"}, [], None):
        with pytest.raises(ValueError):
            read_answer(bad, ids)


def router(server: LLMTestServer) -> LLMRouter:
    llm = {
        "backend": "openai",
        "model": "m",
        "base_url": server.url,
        "api_key": "sk-x",
        "max_retries": 0,
        "timeout": 5,
    }
    return LLMRouter(LLMSlots(llm=llm))


def answer(sentences: list[dict[str, Any]]) -> Reply:
    return Reply(body=openai_completion(json.dumps({"sentences": sentences})))


def test_llm_summary_merges_cites_and_keeps_old_facts(llm_server: LLMTestServer) -> None:
    shown = [
        memory("m2", "Ana now avoids dairy too.", 2),
        memory("m1", "Ana is allergic to peanuts.", 1),
    ]
    old = [Sentence("Ana is allergic to peanuts.", ("m1",))]
    # The answer merges the new item, forges item 5, and drops the old peanut fact.
    llm_server.script([answer([{"text": "Ana avoids dairy.", "refs": [1, 5]}])])
    result = llm_summary(router(llm_server), CATEGORY, shown, old, max_chars=2000)
    assert result.kind == "llm"
    assert parse(result.summary) == [
        Sentence("Ana avoids dairy.", ("m2",)),
        Sentence("Ana is allergic to peanuts.", ("m1",)),
    ]
    assert "dropped 1 citation(s) of items not shown" in result.notes
    assert "re-added 1 fact(s) of the old summary the answer left out" in result.notes
    prompt = llm_server.requests[0].messages[-1]["content"]
    assert "[1] (2026-05-03) Ana now avoids dairy too." in prompt
    assert "Ana is allergic to peanuts. (2)" in prompt and "m1" not in prompt
    assert result.prompt_chars > len(prompt)


def test_llm_summary_falls_back_when_the_answer_cites_nothing(llm_server: LLMTestServer) -> None:
    shown = [memory("m1", "Ana is allergic to peanuts.", 1)]
    bad = answer([{"text": "Something.", "refs": [9]}])
    llm_server.script([bad, bad, bad, bad])
    result = llm_summary(router(llm_server), CATEGORY, shown, [], max_chars=2000)
    assert result.kind == "deterministic"
    assert result.summary == "- Ana is allergic to peanuts. [ref:m1]"
    assert result.notes and "refused" in result.notes[0]


def test_llm_summary_falls_back_when_the_server_fails(llm_server: LLMTestServer) -> None:
    llm_server.script([Reply(status=500, body={"error": {"message": "boom"}})] * 4)
    shown = [memory("m1", "Ana is allergic to peanuts.", 1)]
    result = llm_summary(router(llm_server), CATEGORY, shown, [], max_chars=2000)
    assert result.kind == "deterministic" and "refused" in result.notes[0]

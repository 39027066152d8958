"""Fine mode's prompts carry what each pass needs and no more: the extraction prompt names the
categories (descriptions only when asked), the filter and the rewrite see the lines the memories
cite (with their window numbers), and with that the filter still drops what the messages do not
back and the rewrite still finds the names and dates it needs. The model here is scripted: it
reads only what its prompt shows, so a line left out of a prompt is evidence the pass lacks."""

from __future__ import annotations

import re
from typing import Any

import pytest

from memreader import SimpleStructMemReader, SimpleStructMemReaderConfig, TextualMemoryItem
from memreader.categories.config import DEFAULT_CATEGORIES, CategoriesConfig
from memreader.extraction.agent_prompts import STRATEGY_EXTRACT_SYSTEM
from memreader.extraction.prompts import EXTRACT_SYSTEM, extraction_messages
from memreader.steps.categorize import category_menu
from memreader.testing import ScriptedLLM, ScriptedRequest
from tests.common import HASH_EMBEDDER, INFO

CHAT = [
    [
        {"role": "user", "content": "Hi there!", "chat_time": "2026-05-10T09:00:00"},
        {"role": "user", "content": "I'm Emily, a nurse.", "chat_time": "2026-05-10T09:01:00"},
        {"role": "assistant", "content": "Nice to meet you!", "chat_time": "2026-05-10T09:02:00"},
        {
            "role": "user",
            "content": "I start piano lessons tomorrow.",
            "chat_time": "2026-05-10T09:03:00",
        },
        {"role": "assistant", "content": "Have fun at the lessons.", "chat_time": "2026-05-10"},
    ]
]


def memory(value: str, *source_ids: int) -> dict[str, Any]:
    return {
        "key": value[:20],
        "memory_type": "UserMemory",
        "value": value,
        "tags": [],
        "source_ids": list(source_ids),
    }


def section(request: ScriptedRequest, heading: str) -> list[str]:
    """The lines under ``heading`` ("Messages:" or "Memories:") of a filter or rewrite prompt."""
    messages, _, memories = request.prompt.partition("\n\n")
    part = messages if heading == "Messages:" else memories
    head, *lines = part.splitlines()
    assert head == heading
    return lines


def read(
    memories: list[dict[str, Any]], judge: Any = None, **fine: Any
) -> tuple[list[TextualMemoryItem], dict[str, ScriptedRequest]]:
    """A fine read of CHAT whose extraction answers ``memories``; the filter and the rewrite
    answer ``judge(request)`` (nothing by default). Returns the items and each pass's request."""

    def answer(request: ScriptedRequest) -> Any:
        if request.schema_name == "memory_extraction":
            return {"memory_list": memories, "summary": "Emily's day."}
        return judge(request) if judge else {"results": []}

    llm = ScriptedLLM(answer)
    config = SimpleStructMemReaderConfig(embedder=HASH_EMBEDDER, llm=llm.config(), fine=fine)
    [items] = SimpleStructMemReader(config).get_memory(CHAT, type="chat", info=INFO, mode="fine")
    return items, {r.schema_name: r for r in llm.requests}


@pytest.mark.parametrize("language", ["en", "zh"])
def test_the_extraction_prompt_names_the_categories_without_their_descriptions(
    language: str,
) -> None:
    menu = category_menu(CategoriesConfig())
    [system, _] = extraction_messages(language, [(1, "user: hi")], [], categories=menu)  # type: ignore[arg-type]
    text = system["content"]
    assert text.startswith(EXTRACT_SYSTEM[language])  # type: ignore[index]
    names = [c.name for c in DEFAULT_CATEGORIES]
    assert ", ".join(names) in text and "other" not in text.split('"categories"')[1]
    assert not any(c.description in text for c in DEFAULT_CATEGORIES)
    # The ten names cost a few hundred characters, not the 1,465 the descriptions did.
    assert len(text) - len(EXTRACT_SYSTEM[language]) < 300  # type: ignore[index]


def test_the_filter_and_rewrite_see_the_cited_lines_with_their_numbers() -> None:
    _, requests = read([memory("Emily is a nurse.", 2), memory("Emily starts piano.", 4)])
    for name in ("memory_filter", "memory_rewrite"):
        request = requests[name]
        assert section(request, "Messages:") == [
            "[2] user: [2026-05-10T09:01:00]: I'm Emily, a nurse.",
            "[4] user: [2026-05-10T09:03:00]: I start piano lessons tomorrow.",
        ], name
        assert section(request, "Memories:") == ["[1] Emily is a nurse.", "[2] Emily starts piano."]
        # What no memory came from is not resent: the greeting and the assistant's replies.
        assert "Hi there!" not in request.prompt and "Nice to meet you" not in request.prompt


def test_a_memory_citing_a_message_gets_that_messages_text() -> None:
    _, requests = read([memory("Emily starts piano lessons on 2026-05-11.", 4)])
    [line] = section(requests["memory_filter"], "Messages:")
    assert line.startswith("[4] ") and "I start piano lessons tomorrow." in line


def test_a_memory_citing_nothing_is_checked_against_the_whole_window() -> None:
    items, requests = read([memory("Emily is a nurse.", 2), memory("Emily is cheerful.", 9)])
    numbers = [line.split("]")[0] for line in section(requests["memory_filter"], "Messages:")]
    assert numbers == ["[1", "[2", "[3", "[4", "[5"]
    assert "sources:window" in items[1].metadata.tags  # and its item cites the whole window


def test_the_user_only_rewrite_sees_the_cited_lines_of_the_user() -> None:
    memories = [memory("Emily is a nurse.", 2, 3), memory("The lessons are fun.", 5)]
    _, requests = read(memories, rewrite="user_only")
    assert [line[:3] for line in section(requests["memory_rewrite"], "Messages:")] == ["[2]"]
    # The filter judges against every cited line, the assistant's too.
    assert [line[:3] for line in section(requests["memory_filter"], "Messages:")] == [
        "[2]",
        "[3]",
        "[5]",
    ]


def test_the_user_only_rewrite_is_skipped_when_no_user_message_is_cited() -> None:
    _, requests = read([memory("The assistant was glad to meet Emily.", 3)], rewrite="user_only")
    assert "memory_rewrite" not in requests and "memory_filter" in requests


def reading_model(request: ScriptedRequest) -> dict[str, Any]:
    """A filter that supports a memory only when its words are in a message it was shown, and a
    rewrite that names "She" from an "I'm NAME" line it was shown and turns "tomorrow" into the
    day after the shown line that says it."""
    shown = "\n".join(section(request, "Messages:"))
    memories = [line.split("] ", 1)[1] for line in section(request, "Memories:")]
    if request.schema_name == "memory_filter":
        words = [re.findall(r"[a-z]{4,}", m.lower()) for m in memories]
        return {
            "results": [
                {"id": i + 1, "supported": all(w in shown.lower() for w in ws)}
                for i, ws in enumerate(words)
            ]
        }
    name = re.search(r"I'm (\w+)", shown)
    day = re.search(r"\[(\d{4}-\d\d)-(\d\d)T[^]]*\]: [^\n]*tomorrow", shown)
    results = []
    for i, text in enumerate(memories):
        if name and text.startswith("She "):
            text = name.group(1) + text[3:]
        if day and "tomorrow" in text:
            text = text.replace("tomorrow", f"on {day.group(1)}-{int(day.group(2)) + 1:02d}")
        results.append({"id": i + 1, "value": text})
    return {"results": results}


def test_the_filter_still_drops_what_the_cited_messages_do_not_say() -> None:
    memories = [
        memory("Emily is a nurse", 2),
        memory("Emily owns a yacht", 2),  # invented, citing a real message
        memory("Emily is a surgeon", 3),  # contradicts the messages
    ]
    items, _ = read(memories, reading_model, passes=["extract", "filter"])
    assert [item.memory for item in items] == ["Emily is a nurse"]
    assert [s.message_index for s in items[0].metadata.sources] == [1]


def test_a_memory_its_cited_messages_do_not_back_is_dropped() -> None:
    # "nurse" is in message 2, but the memory cites message 4 only: the filter is shown message
    # 4 alone, and an item citing it would have the wrong provenance.
    memories = [memory("Emily is a nurse", 4), memory("Lessons start tomorrow", 4)]
    items, _ = read(memories, reading_model, passes=["extract", "filter"])
    assert [item.memory for item in items] == ["Lessons start tomorrow"]


def test_the_rewrite_finds_the_name_and_the_date_in_the_cited_lines() -> None:
    memories = [memory("Emily is a nurse.", 2), memory("She starts piano lessons tomorrow.", 4)]
    items, _ = read(memories, reading_model, passes=["extract", "rewrite"])
    assert [item.memory for item in items][1] == "Emily starts piano lessons on 2026-05-11."


@pytest.mark.parametrize(
    ("system", "asks"),
    [
        (EXTRACT_SYSTEM["en"], "those that give its names and dates too"),
        (EXTRACT_SYSTEM["zh"], "包括给出其中名字和日期的消息"),
        (STRATEGY_EXTRACT_SYSTEM["en"], "those that give its names and dates too"),
        (STRATEGY_EXTRACT_SYSTEM["zh"], "包括给出其中名字和日期的消息"),
    ],
)
def test_the_extraction_asks_to_cite_where_names_and_dates_come_from(
    system: str, asks: str
) -> None:
    # The filter and the rewrite see only the cited lines: "Emily" from the assistant's
    # "Hello, Emily" is evidence only when the memory cites that message.
    assert asks in system.split('"source_ids"')[1].split('"importance"')[0]

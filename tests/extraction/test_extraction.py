"""Units of fine extraction: language choice and the repair of the JSON contract (importance
and valid_from included)."""

from __future__ import annotations

from datetime import datetime, timedelta, timezone

import pytest

from memreader.extraction import (
    EXTRACTION_SCHEMA,
    ContractError,
    ExtractedMemory,
    detect_language,
    read_extraction,
)
from memreader.extraction.agent_prompts import STRATEGY_EXTRACT_SYSTEM
from memreader.extraction.image_pass import IMAGE_SYSTEM
from memreader.extraction.importance import MAX_VALID_FROM_CHARS, Importance
from memreader.extraction.prompts import EXTRACT_SYSTEM
from memreader.items import MAX_IMPORTANCE_REASON_CHARS, MemoryType


@pytest.mark.parametrize(
    ("text", "language"),
    [
        ("我下周要去上海出差，顺便想去看看外滩。", "zh"),
        ("user: [2023-04-27]: 你好，我叫张曼婷，很高兴认识你。\nassistant: 你好！", "zh"),
        ("I will visit Shanghai (上海) next week for work.", "en"),
        ("", "en"),
        ("12345 !!!", "en"),
        ("Café crème, naïve façade", "en"),
    ],
)
def test_language(text: str, language: str) -> None:
    assert detect_language(text) == language


def test_contract_repairs() -> None:
    parsed = {
        "memory list": [
            {
                "key": "k",
                "memory_type": "长期记忆",
                "value": " v1 ",
                "tags": ["a", 1],
                "source_ids": ["2", "[3]", 7],
            },
            {"memory_type": "user memory", "value": "v2", "source_ids": 1},
            "a bare string memory",
            {"value": ""},
            42,
        ],
        "summary": " s ",
    }
    extraction = read_extraction(parsed, valid_ids=[1, 2, 3])
    first, second, third = extraction.memories
    assert (first.value, first.memory_type, first.tags, first.source_ids) == (
        "v1",
        MemoryType.LONG_TERM,
        ["a"],
        [2, 3],
    )
    assert set(first.repairs) == {"tags", "source_ids"}
    assert (second.memory_type, second.source_ids, second.key) == (MemoryType.USER, [1], "v2")
    assert "key" in second.repairs
    assert third.value == "a bare string memory" and "memory_type" in third.repairs
    assert extraction.summary == "s"


@pytest.mark.parametrize("parsed", [[], "text", {"summary": "x"}, {"memory_list": "x"}])
def test_contract_errors(parsed: object) -> None:
    with pytest.raises(ContractError):
        read_extraction(parsed, valid_ids=[1])


def _one(memory: dict[str, object]) -> ExtractedMemory:
    parsed = {"memory_list": [{"value": "Ana moved to Porto.", "source_ids": [1], **memory}]}
    [extracted] = read_extraction(parsed, valid_ids=[1]).memories
    return extracted


def test_importance_and_valid_from_are_read() -> None:
    memory = _one(
        {
            "importance": 8,
            "importance_reason": "where the user\nlives",
            "valid_from": "2024-05-01",
        }
    )
    assert memory.importance == Importance(0.8, "model: where the user lives")
    assert memory.valid_from == datetime(2024, 5, 1)
    assert memory.repairs == ["memory_type", "key"], "the new fields need no repair"
    aware = _one({"importance": "7/10", "valid_from": "2024-05-01T09:30:00+02:00"})
    assert aware.importance == Importance(0.7, "model: no reason given")
    assert aware.valid_from == datetime(2024, 5, 1, 9, 30, tzinfo=timezone(timedelta(hours=2)))
    assert _one({"importance": 0, "valid_from": "2024-05-01Z"}).importance == Importance(
        0.0, "model: no reason given"
    )
    reason = _one({"importance": 10, "importance_reason": "x " * 500}).importance
    assert reason is not None and len(reason.reason) <= MAX_IMPORTANCE_REASON_CHARS


def test_missing_importance_and_valid_from_are_none_without_repair() -> None:
    for fields in (
        {},
        {"importance": None, "valid_from": None},
        {"importance": "", "valid_from": " "},
    ):
        memory = _one({"key": "k", "memory_type": "UserMemory", **fields})
        assert (memory.importance, memory.valid_from, memory.repairs) == (None, None, [])
    reason_only = _one({"key": "k", "memory_type": "UserMemory", "importance_reason": "why"})
    assert reason_only.importance is None, "a reason without a score is no score"


@pytest.mark.parametrize(
    ("importance", "valid_from"),
    [
        (11, "yesterday"),  # out of range: dropped, not clamped
        (-1, "2024-13-01"),
        (True, 20240501),
        ("very", "x" * 100),
        (float("nan"), ["2024-05-01"]),
        ({"score": 5}, "2024-05-01 or so"),
    ],
)
def test_malformed_importance_and_valid_from_are_dropped_and_tagged(
    importance: object, valid_from: object
) -> None:
    memory = _one(
        {
            "key": "k",
            "memory_type": "UserMemory",
            "importance": importance,
            "valid_from": valid_from,
        }
    )
    assert memory.value == "Ana moved to Porto.", "the memory itself is kept"
    assert (memory.importance, memory.valid_from) == (None, None)
    assert memory.repairs == ["importance", "valid_from"]


def test_a_zh_answer_with_the_new_fields() -> None:
    parsed = {
        "memory_list": [
            {
                "key": "住址",
                "memory_type": "用户记忆",
                "value": "张曼婷昨天搬到了上海。",
                "tags": ["搬家"],
                "source_ids": [1],
                "importance": 9,
                "importance_reason": "用户的住址",
                "valid_from": "2024-05-01",
            }
        ],
        "summary": "搬家",
    }
    [memory] = read_extraction(parsed, valid_ids=[1]).memories
    assert memory.memory_type is MemoryType.USER
    assert memory.importance == Importance(0.9, "model: 用户的住址")
    assert memory.valid_from == datetime(2024, 5, 1)


@pytest.mark.parametrize(
    "system",
    [
        EXTRACT_SYSTEM["en"],
        EXTRACT_SYSTEM["zh"],
        *STRATEGY_EXTRACT_SYSTEM.values(),
        *IMAGE_SYSTEM.values(),
    ],
)
def test_every_prompt_of_the_contract_asks_for_the_new_fields(system: str) -> None:
    assert all(f'"{name}"' in system for name in ("importance", "importance_reason", "valid_from"))
    assert "0-10" in system and "YYYY-MM-DD" in system


def test_the_schema_holds_the_new_fields_with_their_limits() -> None:
    item = EXTRACTION_SCHEMA["properties"]["memory_list"]["items"]
    properties = item["properties"]
    assert properties["importance"] == {"type": "integer", "minimum": 0, "maximum": 10}
    assert properties["importance_reason"]["maxLength"] == MAX_IMPORTANCE_REASON_CHARS
    assert properties["valid_from"]["maxLength"] == MAX_VALID_FROM_CHARS
    assert not {"importance", "importance_reason", "valid_from"} & set(item["required"])

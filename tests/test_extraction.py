"""Units of fine extraction: language choice and the repair of the JSON contract."""

from __future__ import annotations

import pytest

from memreader.extraction import ContractError, detect_language, read_extraction
from memreader.items import MemoryType


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

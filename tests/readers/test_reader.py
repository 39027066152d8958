"""The simple reader through its public API: provenance, coverage, determinism, ids, errors."""

from __future__ import annotations

import json
import threading
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from memreader import (
    InvalidInfoError,
    InvalidSceneError,
    LLMRequiredError,
    MemoryType,
    SimpleStructMemReader,
    SimpleStructMemReaderConfig,
    TextualMemoryItem,
    UnknownRoleError,
    UnsupportedModeError,
)
from memreader.categories.config import CategoriesConfig
from memreader.errors import InputError
from memreader.scenes.memorybank import load_memorybank
from memreader.windowing.tokens import get_tokenizer
from tests.common import HASH_EMBEDDER, INFO, MEMORYBANK_CN, MEMORYBANK_EN


def original_text(scene_data: list[list[dict[str, Any]]], source: Any) -> str:
    message = scene_data[source.scene_index][source.message_index]
    content = message["content"]
    if source.part_index is None:
        return content
    part = content[source.part_index]
    return part if isinstance(part, str) else part["text"]


def assert_provenance(
    scene_data: list[list[dict[str, Any]]], result: list[list[TextualMemoryItem]]
) -> None:
    seen: set[tuple[int, int]] = set()
    for scene_index, items in enumerate(result):
        for item in items:
            for source in item.metadata.sources:
                assert source.scene_index == scene_index
                if source.span is not None:
                    start, end = source.span
                    assert original_text(scene_data, source)[start:end] == source.content
                    assert source.content in item.memory
                seen.add((source.scene_index, source.message_index))
    expected = {(s, m) for s, scene in enumerate(scene_data) for m in range(len(scene))}
    assert seen == expected, "every message is in some item's sources"


def test_memorybank_fast_mode_provenance_and_coverage(reader: SimpleStructMemReader) -> None:
    users = load_memorybank(MEMORYBANK_EN)
    scenes = users["Emily"]
    result = reader.get_memory(scenes, type="chat", info=INFO, mode="fast")
    assert len(result) == len(scenes)
    assert_provenance(scenes, result)
    tokenizer = get_tokenizer()
    for items in result:
        for item in items:
            assert tokenizer.count(item.memory) <= 256
            assert item.metadata.embedding is not None and len(item.metadata.embedding) == 16
            assert "mode:fast" in item.metadata.tags
            assert item.metadata.sources[0].chat_time is not None
            assert item.metadata.sources[0].timestamp is not None


def test_chinese_memorybank_spans_are_exact(reader: SimpleStructMemReader) -> None:
    users = load_memorybank(MEMORYBANK_CN)
    scenes = next(iter(users.values()))
    result = reader.get_memory(scenes, type="chat", info=INFO)
    assert_provenance(scenes, result)
    assert all("\ufffd" not in item.memory for items in result for item in items)


def test_oversize_message_is_split_and_fully_covered(reader: SimpleStructMemReader) -> None:
    long_text = "今天我去了公园，看到了樱花和松鼠。🌸 " * 400
    scenes = [[{"role": "user", "content": long_text}, {"role": "assistant", "content": "Lovely!"}]]
    result = reader.get_memory(scenes, type="chat", info=INFO)
    assert len(result[0]) > 5
    assert_provenance(scenes, result)
    spans = sorted(
        s.span
        for item in result[0]
        for s in item.metadata.sources
        if s.message_index == 0 and s.span
    )
    covered = 0
    for start, end in spans:
        assert start <= covered
        covered = max(covered, end)
    assert covered == len(long_text)


roles = st.sampled_from(["user", "assistant", "system", "tool"])
pieces = [*list("abc xyz 123.,!\n"), "记忆", "🎉", "é", "👨\u200d👩\u200d👧"]
contents = st.lists(st.sampled_from(pieces), max_size=300).map("".join)
messages = st.fixed_dictionaries({"role": roles, "content": contents})


@settings(
    max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(scenes=st.lists(st.lists(messages, min_size=1, max_size=8), min_size=1, max_size=4))
def test_any_chat_keeps_exact_provenance(
    reader: SimpleStructMemReader, scenes: list[list[dict[str, Any]]]
) -> None:
    result = reader.get_memory(scenes, type="chat", info=INFO)
    assert_provenance(scenes, result)


def test_content_part_lists_have_part_spans(reader: SimpleStructMemReader) -> None:
    scenes = [
        [
            {
                "role": "user",
                "content": [
                    {"type": "text", "text": "first part"},
                    {"type": "image_url", "image_url": {"url": "https://x.test/cat.png"}},
                    {"type": "text", "text": "second part"},
                ],
            }
        ]
    ]
    [[item]] = reader.get_memory(scenes, type="chat", info=INFO)
    kinds = [(s.type, s.part_index, s.span) for s in item.metadata.sources]
    assert kinds == [("chat", 0, (0, 10)), ("image_url", 1, None), ("chat", 2, (0, 11))]
    assert "[image: https://x.test/cat.png]" in item.memory


def test_deterministic_items_and_stable_ids() -> None:
    scenes = load_memorybank(MEMORYBANK_EN)["Frank"]
    config = SimpleStructMemReaderConfig(
        embedder=HASH_EMBEDDER, window={"max_tokens": 128, "overlap_tokens": 16}
    )
    first = SimpleStructMemReader(config).get_memory(scenes, type="chat", info=INFO)
    second = SimpleStructMemReader(config).get_memory(scenes, type="chat", info=INFO)

    def strip(result: list[list[TextualMemoryItem]]) -> list[Any]:
        return [
            [
                {**i.to_dict(), "metadata": {**i.to_dict()["metadata"], "created_at": None}}
                for i in items
            ]
            for items in result
        ]

    assert strip(first) == strip(second)
    ids = [i.id for items in first for i in items]
    assert len(ids) == len(set(ids))
    # Ids do not depend on how scenes are batched into calls.
    alone = SimpleStructMemReader(config).get_memory(scenes[3:4], type="chat", info=INFO)
    assert [i.id for i in alone[0]] == [i.id for i in first[3]]
    # ...but they do depend on the owner.
    other = SimpleStructMemReader(config).get_memory(
        scenes[3:4], type="chat", info={"user_id": "u2", "session_id": "s1"}
    )
    assert {i.id for i in other[0]}.isdisjoint(ids)


def test_memory_types_tags_and_info(reader: SimpleStructMemReader) -> None:
    scenes = [
        [{"role": "user", "content": "I love hiking."}, {"role": "user", "content": "Also tea."}],
        [{"role": "user", "content": "Hi"}, {"role": "assistant", "content": "Hello"}],
    ]
    info = {**INFO, "app": "demo", "tenant": 7}
    result = reader.get_memory(scenes, type="chat", info=info, custom_tags=["travel"])
    assert result[0][0].metadata.memory_type is MemoryType.USER
    assert result[1][0].metadata.memory_type is MemoryType.LONG_TERM
    item = result[0][0]
    assert item.metadata.tags == ["mode:fast", "travel"]
    assert item.metadata.info == {"app": "demo", "tenant": 7}
    assert (item.metadata.user_id, item.metadata.session_id) == ("u1", "s1")
    assert item.metadata.created_at.tzinfo is not None
    assert TextualMemoryItem.from_dict(json.loads(json.dumps(item.to_dict()))) == item


def test_docs_fast_mode(tmp_path) -> None:  # type: ignore[no-untyped-def]
    path = tmp_path / "guide.md"
    body = "# Tea guide\n\n" + "Green tea is steamed or pan-fired. " * 200
    path.write_text(body, encoding="utf-8")
    config = SimpleStructMemReaderConfig(
        embedder=HASH_EMBEDDER,
        window={"max_tokens": 256, "overlap_tokens": 32},
        allow_local_paths=True,  # off by default: input may come from strangers
        allowed_roots=[str(tmp_path)],
    )
    reader = SimpleStructMemReader(config)
    result = reader.get_memory(["A short note.", str(path)], type="doc", info=INFO)
    assert next(len(r) for r in result) == 1 and len(result[1]) > 3
    assert result[0][0].metadata.sources[0].type == "doc"
    for item in result[1]:
        source = item.metadata.sources[-1]
        assert source.type == "file" and source.doc_path == str(path)
        assert source.span is not None and body[source.span[0] : source.span[1]] == source.content
        assert item.metadata.file_ids == [str(path)]


def test_errors(reader: SimpleStructMemReader) -> None:
    good = [[{"role": "user", "content": "x"}]]
    with pytest.raises(LLMRequiredError, match="needs an LLM"):
        reader.get_memory(good, type="chat", info=INFO, mode="fine")
    with pytest.raises(UnsupportedModeError):
        reader.get_memory(good, type="chat", info=INFO, mode="turbo")
    with pytest.raises(UnsupportedModeError):
        reader.get_memory(good, type="video", info=INFO)
    with pytest.raises(InvalidInfoError):
        reader.get_memory(good, type="chat", info={"user_id": "u"})
    with pytest.raises(InvalidSceneError):
        reader.get_memory([], type="chat", info=INFO)
    with pytest.raises(UnknownRoleError, match="scene 1, message 0"):
        reader.get_memory([good[0], [{"role": "robot", "content": "x"}]], type="chat", info=INFO)
    with pytest.raises(InputError):
        reader.get_memory(good, type="chat", info=INFO, custom_tags="travel")  # type: ignore[arg-type]


def test_embeddings_are_batched_and_deduplicated(reader: SimpleStructMemReader) -> None:
    scene = [{"role": "user", "content": "same"}]
    reader.get_memory([scene, scene, scene], type="chat", info=INFO)
    inner = reader.embedder.inner  # type: ignore[attr-defined]
    # Fast mode embeds the messages without their "role: [time]: " prefixes (embed_prefixes).
    # Then the categorize step embeds the category descriptions, once per reader.
    descriptions = [c.description for c in CategoriesConfig().all()[:-1]]
    assert inner.calls == [["same"], descriptions], "one call, one unique text"
    reader.get_memory([scene], type="chat", info=INFO)
    assert len(inner.calls) == 2, "cached"


def test_reader_is_thread_safe(reader: SimpleStructMemReader) -> None:
    scenes = load_memorybank(MEMORYBANK_EN)["Emily"][:5]
    expected = [
        [i.id for i in items] for items in reader.get_memory(scenes, type="chat", info=INFO)
    ]
    results: list[Any] = []

    def work() -> None:
        results.append(
            [[i.id for i in items] for items in reader.get_memory(scenes, type="chat", info=INFO)]
        )

    threads = [threading.Thread(target=work) for _ in range(6)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert results == [expected] * 6


def test_no_embedder_means_no_embedding() -> None:
    reader = SimpleStructMemReader(SimpleStructMemReaderConfig(embedder=None))
    [[item]] = reader.get_memory([[{"role": "user", "content": "x"}]], type="chat", info=INFO)
    assert item.metadata.embedding is None

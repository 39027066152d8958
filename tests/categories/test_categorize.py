"""The ``categorize`` step through ``get_memory``: fast mode by similarity (the real local
embedder where meaning matters), the catch-all, ``max_per_item``, ``enabled: false``, custom
categories, and fine mode's ``categories`` field (kept, dropped and recorded, clipped, the
similarity fallback, the prompt and schema)."""

from __future__ import annotations

import json
from typing import Any

import pytest

from memreader import SimpleStructMemReader, SimpleStructMemReaderConfig, TextualMemoryItem
from memreader.categories.config import DEFAULT_CATEGORIES
from memreader.extraction import CategoryMenu, read_extraction
from tests.common import HASH_EMBEDDER, INFO
from tests.llm_server import LLMTestServer, RecordedRequest, Reply, llm_server, openai_completion

__all__ = ["llm_server"]

DEFAULT_NAMES = [c.name for c in DEFAULT_CATEGORIES]


def read_fast(reader: SimpleStructMemReader, *texts: str) -> list[TextualMemoryItem]:
    """One item per text, each read as a one-message chat."""
    scenes = [[{"role": "user", "content": text}] for text in texts]
    result = reader.get_memory(scenes, type="chat", info=INFO, mode="fast")
    return [item for items in result for item in items]


@pytest.fixture(scope="module")
def local_reader() -> SimpleStructMemReader:
    return SimpleStructMemReader(SimpleStructMemReaderConfig())


@pytest.mark.slow
def test_fast_mode_links_by_meaning(local_reader: SimpleStructMemReader) -> None:
    allergy, sister, nurse = read_fast(
        local_reader,
        "I am allergic to peanuts, my throat swells up if I eat them.",
        "My older sister just had a baby boy.",
        "I work as a nurse at the city hospital.",
    )
    assert allergy.metadata.categories[0] == "health"
    assert sister.metadata.categories[0] == "relationships"
    assert nurse.metadata.categories[0] == "work"


@pytest.mark.slow
def test_nothing_fits_goes_to_the_catch_all(local_reader: SimpleStructMemReader) -> None:
    [item] = read_fast(local_reader, "Okay, sounds good.")
    assert item.metadata.categories == ["other"]


@pytest.mark.slow
def test_max_per_item(local_reader: SimpleStructMemReader) -> None:
    text = "My sister Anna is my best friend, we talk on the phone every day."
    [wide] = read_fast(local_reader, text)
    assert wide.metadata.categories[:2] == ["relationships", "personal_info"]
    narrow = SimpleStructMemReader(SimpleStructMemReaderConfig(categories={"max_per_item": 1}))
    [item] = read_fast(narrow, text)
    assert item.metadata.categories == ["relationships"]


def hash_reader(**categories: Any) -> SimpleStructMemReader:
    config = SimpleStructMemReaderConfig(embedder=HASH_EMBEDDER, categories=categories)
    return SimpleStructMemReader(config)


def test_disabled_leaves_no_step_and_no_categories() -> None:
    reader = hash_reader(enabled=False)
    assert "categorize" not in reader.pipeline.names
    [item] = read_fast(reader, "I love green tea.")
    assert item.metadata.categories == []
    assert "categorize" in hash_reader().pipeline.names
    assert hash_reader().pipeline.names[-2:] == ("embed", "categorize")


def test_custom_categories_are_the_ones_matched() -> None:
    define = [
        {"name": "tea", "description": "Tea, green tea, black tea."},
        {"name": "coffee", "description": "Coffee and espresso."},
    ]
    # Every category at or above -1: all of them, best first, at most max_per_item.
    reader = hash_reader(defaults=False, define=define, threshold=-1.0, max_per_item=5)
    [item] = read_fast(reader, "I love green tea.")
    assert sorted(item.metadata.categories) == ["coffee", "tea"]
    # None reaches 1.0: the catch-all, which is never matched by similarity.
    [item] = read_fast(hash_reader(defaults=False, define=define, threshold=1.0), "Tea.")
    assert item.metadata.categories == ["other"]


def test_items_without_a_vector_are_left_to_the_store() -> None:
    reader = SimpleStructMemReader(SimpleStructMemReaderConfig(embedder=None))
    [item] = read_fast(reader, "I love green tea.")
    assert item.metadata.embedding is None
    assert item.metadata.categories == []


def test_contract_reads_categories() -> None:
    menu = CategoryMenu((("health", "Illness."), ("work", "Job."), ("goals", "Plans.")), 2)
    answer = {
        "memory_list": [
            {"value": "Emily is allergic to peanuts.", "categories": ["Health", "hobbies"]},
            {"value": "Emily is a nurse.", "categories": ["work", "health", "goals"]},
            {"value": "Emily likes tea.", "categories": "nonsense"},
        ],
        "summary": "",
    }
    first, second, third = read_extraction(answer, [1], menu).memories
    assert (first.categories, "categories" in first.repairs) == (["health"], True)
    assert (second.categories, "clipped" in second.repairs) == (["work", "health"], True)
    assert (third.categories, "categories" in third.repairs) == ([], True)
    # Without a menu (categories off) the field is ignored, and nothing is repaired.
    [plain] = read_extraction({"memory_list": answer["memory_list"][:1]}, [1]).memories
    assert (plain.categories, plain.repairs) == ([], ["memory_type", "key"])


EXTRACTION = {
    "memory_list": [
        {
            "key": "allergy",
            "memory_type": "UserMemory",
            "value": "Emily is allergic to peanuts.",
            "tags": [],
            "source_ids": [1],
            "categories": ["health", "Preferences"],
        },
        {
            "key": "hobby",
            "memory_type": "UserMemory",
            "value": "Emily knits.",
            "tags": [],
            "source_ids": [1],
            "categories": ["hobbies"],
        },
        {
            "key": "job",
            "memory_type": "UserMemory",
            "value": "Emily is a nurse.",
            "tags": [],
            "source_ids": [1],
            "categories": ["work", "health", "goals", "education"],
        },
    ],
    "summary": "Emily.",
}


def fine_reader(server: LLMTestServer, **categories: Any) -> SimpleStructMemReader:
    def respond(request: RecordedRequest) -> Reply:
        return Reply(body=openai_completion(json.dumps(EXTRACTION)))

    server.responder = respond
    config = SimpleStructMemReaderConfig(
        embedder=HASH_EMBEDDER,
        llm={"backend": "openai", "model": "m", "base_url": server.url, "api_key": "sk-t"},
        fine={"passes": ["extract"]},
        categories=categories,
    )
    return SimpleStructMemReader(config)


CHAT = [[{"role": "user", "content": "I'm Emily, a nurse; peanuts make me ill and I knit."}]]


def test_fine_mode_takes_the_answers_categories(llm_server: LLMTestServer) -> None:
    reader = fine_reader(llm_server, threshold=1.0)
    [[allergy, hobby, job]] = reader.get_memory(CHAT, type="chat", info=INFO, mode="fine")
    assert allergy.metadata.categories == ["health", "preferences"]
    assert "repaired:categories" not in allergy.metadata.tags
    # An unknown name is dropped and recorded; none left: similarity (nothing reaches 1.0).
    assert "repaired:categories" in hobby.metadata.tags
    assert hobby.metadata.categories == ["other"]
    assert job.metadata.categories == ["work", "health", "goals"]
    assert "repaired:clipped" in job.metadata.tags
    # The prompt names every category but the catch-all; the descriptions stay out (they
    # cost ~1,250 more characters a call, and the names say what the defaults hold).
    [request] = llm_server.requests
    system = request.messages[0]["content"]
    assert ", ".join(DEFAULT_NAMES) in system
    assert not any(category.description in system for category in DEFAULT_CATEGORIES)
    assert "other" not in system.split('"categories"')[1]
    schema = request.json["response_format"]["json_schema"]["schema"]
    field = schema["properties"]["memory_list"]["items"]["properties"]["categories"]
    assert field["items"]["enum"] == DEFAULT_NAMES and field["maxItems"] == 3


def test_fine_mode_describes_categories_when_asked(llm_server: LLMTestServer) -> None:
    recipes = {"name": "recipes", "description": "Dishes the user cooks, ingredients."}
    reader = fine_reader(llm_server, prompt_descriptions=True, define=[recipes])
    reader.get_memory(CHAT, type="chat", info=INFO, mode="fine")
    [request] = llm_server.requests
    system = request.messages[0]["content"]
    for category in DEFAULT_CATEGORIES:
        assert f"- {category.name}: {category.description}" in system
    assert "- recipes: Dishes the user cooks, ingredients." in system
    assert "- other:" not in system


def test_fine_mode_without_categories(llm_server: LLMTestServer) -> None:
    reader = fine_reader(llm_server, enabled=False)
    [items] = reader.get_memory(CHAT, type="chat", info=INFO, mode="fine")
    assert [i.metadata.categories for i in items] == [[], [], []]
    assert not any("repaired:categories" in i.metadata.tags for i in items)
    [request] = llm_server.requests
    assert '"categories"' not in request.messages[0]["content"]
    schema = request.json["response_format"]["json_schema"]["schema"]
    field = schema["properties"]["memory_list"]["items"]["properties"]["categories"]
    assert "enum" not in field["items"]

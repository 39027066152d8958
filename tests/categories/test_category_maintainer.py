"""Categories kept by a real store on every write and forget: links, summaries that cite and
evolve (deterministic, and by a model served over real HTTP), walls between owners."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from memreader.categories.config import CategoriesConfig
from memreader.categories.maintainer import CategoryMaintainer, SummaryUpdate, maintainer_for
from memreader.categories.summaries import cited_ids
from memreader.factory import MemReaderConfigFactory
from memreader.items import TextualMemoryItem, TextualMemoryItemMetadata
from memreader.llms import LLMRouter
from memreader.llms.config import LLMSlots
from memreader.stores import SourceSelector, open_store
from memreader.stores.base import MemoryStore
from tests.llm_server import LLMTestServer, Reply, llm_server, openai_completion

__all__ = ["llm_server"]

pytestmark = pytest.mark.timeout(60)


def item(
    memory_id: str,
    text: str,
    categories: list[str],
    *,
    user: str = "u1",
    doc: str = "a.md",
    tags: list[str] | None = None,
) -> TextualMemoryItem:
    return TextualMemoryItem(
        id=memory_id,
        memory=text,
        metadata=TextualMemoryItemMetadata(
            user_id=user,
            session_id="s1",
            categories=categories,
            tags=tags or ["mode:fast"],
            sources=[
                {
                    "type": "doc",
                    "doc_path": doc,
                    "content": text,
                    "scene_index": 0,
                    "message_index": 0,
                }
            ],
        ),
    )


@pytest.fixture
def store(tmp_path: Path) -> Any:
    with open_store(f"sqlite:///{tmp_path / 'm.db'}", text_only=True) as opened:
        yield opened


def keep(store: MemoryStore, **kwargs: Any) -> list[SummaryUpdate]:
    updates: list[SummaryUpdate] = []
    store.category_keeper = CategoryMaintainer(
        CategoriesConfig(), on_update=updates.append, **kwargs
    )
    return updates


def test_writes_link_items_and_summaries_cite_them(store: MemoryStore) -> None:
    updates = keep(store)
    store.write(
        [
            item("m1", "Ana is allergic to peanuts.", ["health"]),
            item("m2", "Ana works at Acme.", ["work", "relationships"]),
            item("m3", "A passing remark.", []),  # no categories, no vector: the catch-all
        ]
    )
    by_name = {c.name: c for c in store.categories("u1")}
    assert len(by_name) == 11
    assert by_name["health"].item_ids == ("m1",)
    assert by_name["work"].item_ids == by_name["relationships"].item_ids == ("m2",)
    assert by_name["other"].item_ids == ("m3",)
    assert by_name["health"].summary == "- Ana is allergic to peanuts. [ref:m1]"
    assert by_name["health"].summary_kind == "deterministic"
    assert by_name["goals"].summary_kind == "empty"
    assert sorted(u.category for u in updates) == ["health", "other", "relationships", "work"]
    # The same write again changes nothing: no summary is rewritten.
    updates.clear()
    store.write([item("m1", "Ana is allergic to peanuts.", ["health"])])
    assert updates == []
    assert {c.name: c.summary for c in store.categories("u1")}["health"].endswith("[ref:m1]")


def test_forgotten_and_superseded_items_leave_the_summary_in_the_same_call(
    store: MemoryStore,
) -> None:
    keep(store)
    store.write(
        [
            item("m1", "Ana is allergic to peanuts.", ["health"], doc="a.md"),
            item("m2", "Ana sleeps badly.", ["health"], doc="b.md"),
        ]
    )
    store.forget(SourceSelector(doc_path="a.md"), user_id="u1")
    health = store.category("u1", "health")
    assert health is not None and health.item_ids == ("m2",)
    assert cited_ids(health.summary) == {"m2"}
    # Re-reading b.md with a new fact supersedes the old one: it leaves too.
    store.write(
        [item("m3", "Ana sleeps well now.", ["health"], doc="b.md")],
        replaces=SourceSelector(doc_path="b.md"),
    )
    health = store.category("u1", "health")
    assert health is not None and health.item_ids == ("m3",)
    assert cited_ids(health.summary) == {"m3"}
    store.forget(SourceSelector(doc_path="b.md"), user_id="u1")
    health = store.category("u1", "health")
    assert health is not None and (health.summary, health.summary_kind) == ("", "empty")


def test_owners_are_walled(store: MemoryStore) -> None:
    keep(store)
    store.write([item("a1", "Ana likes tea.", ["preferences"], user="ana")])
    store.write([item("b1", "Ben likes coffee.", ["preferences"], user="ben")])
    ana = store.category("ana", "preferences")
    ben = store.category("ben", "preferences")
    assert ana is not None and ben is not None
    assert (ana.item_ids, ben.item_ids) == (("a1",), ("b1",))
    assert "Ben" not in ana.summary and "Ana" not in ben.summary


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


def test_fine_items_get_an_llm_summary_that_evolves(
    store: MemoryStore, llm_server: LLMTestServer
) -> None:
    updates = keep(store, llm=router(llm_server))
    fine = ["mode:fine"]
    llm_server.script([answer([{"text": "Ana has a peanut allergy.", "refs": [1]}])])
    store.write([item("m1", "Ana is allergic to peanuts.", ["health"], tags=fine)])
    health = store.category("u1", "health")
    assert health is not None and health.summary == "Ana has a peanut allergy. [ref:m1]"
    assert health.summary_kind == "llm" and updates[-1].llm_calls == 1
    # A second fine item: the old summary is merged; a forged citation (item 9) is dropped, and
    # the fact the answer left out comes back as its item's line.
    llm_server.script([answer([{"text": "Ana avoids dairy.", "refs": [1, 9]}])])
    store.write([item("m2", "Ana now avoids dairy too.", ["health"], tags=fine, doc="b.md")])
    health = store.category("u1", "health")
    assert health is not None and cited_ids(health.summary) == {"m1", "m2"}
    assert health.summary_note is not None and "not shown" in health.summary_note
    prompt = llm_server.requests[-1].messages[-1]["content"]
    assert "Ana has a peanut allergy. (2)" in prompt, "the old summary, cited by number"
    # Fast items keep the deterministic list, even with an LLM at hand.
    calls = len(llm_server.requests)
    store.write([item("m3", "Ana runs on Sundays.", ["health"], doc="c.md")])
    assert len(llm_server.requests) == calls


def test_a_failing_model_falls_back_to_the_list(
    store: MemoryStore, llm_server: LLMTestServer
) -> None:
    keep(store, llm=router(llm_server))
    llm_server.script([Reply(status=500, body={"error": {"message": "down"}})] * 4)
    store.write([item("m1", "Ana is allergic to peanuts.", ["health"], tags=["mode:fine"])])
    health = store.category("u1", "health")
    assert health is not None and health.summary_kind == "deterministic"
    assert health.summary == "- Ana is allergic to peanuts. [ref:m1]"
    assert health.summary_note is not None and "refused" in health.summary_note


def test_maintainer_for_a_reader() -> None:
    off = MemReaderConfigFactory.from_dict(
        {"config": {"embedder": None, "categories": {"enabled": False}}}
    )
    assert maintainer_for(off.build()) is None
    on = MemReaderConfigFactory.from_dict({"config": {"embedder": None}}).build()
    maintainer = maintainer_for(on)
    assert maintainer is not None and maintainer.llm is None

"""A write refreshes the summaries of the categories it changed and of no other (issue 41,
class 4), on both backends: one fine memory added to an owner whose memories fill every
category asks the model once per category the memory joined; the same memory written again asks
nothing; a memory leaving a category refreshes that category's list (no model: it came from
no fine item)."""

from __future__ import annotations

import re
from typing import Any

import pytest

from memreader.categories.config import CategoriesConfig
from memreader.categories.maintainer import CategoryMaintainer
from memreader.items import SourceMessage, TextualMemoryItem, TextualMemoryItemMetadata
from memreader.llms import LLMRouter
from memreader.llms.config import LLMSlots
from memreader.stores import MemoryStore, SourceSelector
from memreader.testing import ScriptedLLM, ScriptedRequest

pytestmark = pytest.mark.timeout(120)

NAMES = [c.name for c in CategoriesConfig().all()]


def _item(memory_id: str, text: str, categories: list[str], *, fine: bool) -> TextualMemoryItem:
    source = SourceMessage(
        scene_index=0, message_index=0, span=(0, len(text)), content=text, doc_path=memory_id
    )
    meta = TextualMemoryItemMetadata(
        user_id="u1",
        session_id="s1",
        categories=categories,
        tags=["mode:fine" if fine else "mode:fast"],
        sources=[source],
    )
    return TextualMemoryItem(id=memory_id, memory=text, metadata=meta)


def _answer(request: ScriptedRequest) -> dict[str, Any]:
    return {"sentences": [{"text": "What the newest item says.", "refs": [1]}]}


def _asked(llm: ScriptedLLM) -> list[str]:
    """The categories the model was asked to summarise, in order."""
    found = [re.search(r"CATEGORY: (\w+)", r.messages[-1]["content"]) for r in llm.requests]
    return [m.group(1) for m in found if m]


def test_one_fine_memory_refreshes_only_the_categories_it_joined(store: MemoryStore) -> None:
    llm = ScriptedLLM(_answer)
    store.category_keeper = CategoryMaintainer(
        CategoriesConfig(), llm=LLMRouter(LLMSlots(llm=llm.config()))
    )
    every = [
        _item(f"f{i}", f"fact {i} of {name}", [name], fine=False) for i, name in enumerate(NAMES)
    ]
    store.write(every)
    assert llm.requests == []  # fast memories: the deterministic list
    assert all(c.item_ids for c in store.categories("u1"))

    store.write([_item("n1", "Ana works as a night nurse.", ["work", "health"], fine=True)])
    assert sorted(_asked(llm)) == ["health", "work"] and len(llm.requests) == 2

    llm.requests.clear()
    store.write([_item("n1", "Ana works as a night nurse.", ["work", "health"], fine=True)])
    assert llm.requests == []  # nothing changed

    before = {c.name: c.summary for c in store.categories("u1")}
    store.forget(SourceSelector(doc_path="f3"), user_id="u1")  # NAMES[3] loses its item
    after = {c.name: c.summary for c in store.categories("u1")}
    assert llm.requests == []
    assert [name for name in NAMES if before[name] != after[name]] == [NAMES[3]]

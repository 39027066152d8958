"""The store backend contract (memreader/stores/contract.py) and the after-write list
(memreader/stores/after_write.py): every backend implements every hook as one class, and each
committed change runs the list once, the budget before the category keeper."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import pytest

from memreader.errors import InternalError
from memreader.stores import LifecycleConfig, MemoryStore, SourceSelector, open_store
from memreader.stores.after_write import AFTER_WRITE
from memreader.stores.contract import HOOKS, StoreBackend
from memreader.stores.events import WriteEvent
from memreader.stores.postgres.store import PostgresStore
from memreader.stores.sqlite.store import SQLiteStore


class Keeper:
    """A category keeper that records what each call hands it."""

    def __init__(self) -> None:
        self.calls: list[list[str]] = []

    def after_change(self, store: Any, events: Sequence[WriteEvent], items: Sequence[Any]) -> None:
        self.calls.append(sorted(e.event for e in events))


@pytest.mark.parametrize("store_class", [SQLiteStore, PostgresStore])
def test_each_backend_is_one_class_implementing_every_hook(store_class: type[MemoryStore]) -> None:
    assert store_class.__bases__ == (MemoryStore,)
    assert MemoryStore.__bases__ == (StoreBackend,)
    assert not store_class.__abstractmethods__
    # Every abstract hook is the backend's own; none is left to the contract's body.
    for hook in StoreBackend.__abstractmethods__:
        assert getattr(store_class, hook) is not getattr(StoreBackend, hook), hook
    assert {"_write", "_search", "_set_pins", "_link_categories", "_mark_used"} <= HOOKS


def test_a_backend_without_a_hook_cannot_be_opened() -> None:
    class Partial(MemoryStore):
        def close(self) -> None:
            return None

    with pytest.raises(TypeError, match="_write"):
        Partial()  # type: ignore[abstract]


def test_the_after_write_list_is_the_budget_then_the_keeper() -> None:
    assert [step.__name__ for step in AFTER_WRITE] == [
        "expire_over_budget",
        "tell_category_keeper",
    ]


def test_the_keeper_sees_the_budgets_expiries_with_the_write_that_caused_them(url: str) -> None:
    keeper = Keeper()
    budget = LifecycleConfig(max_active=5)  # watermark 4, target 3
    with open_store(url, text_only=True, category_keeper=keeper, lifecycle=budget) as store:
        for text in ["I like tea.", "I play chess.", "I live in Porto.", "I swim."]:
            store.add_memory(text, user_id="u1")
        assert keeper.calls == [["ADD"]] * 4
        fifth = store.add_memory("I have a cat.", user_id="u1")
        assert fifth.event == "ADD"
        assert keeper.calls[-1] == ["ADD", "EXPIRE", "EXPIRE"]
        assert len(store.search("tea chess Porto swim cat", user_id="u1", mode="text")) == 3


def test_each_committed_call_runs_the_list_once(url: str) -> None:
    keeper = Keeper()
    with open_store(url, text_only=True, category_keeper=keeper) as store:
        kept = store.add_memory("I like tea.", user_id="u1", session_id="s1")
        gone = store.add_memory("I play chess.", user_id="u1", session_id="s2")
        store.delete(gone.memory_id, user_id="u1")
        store.forget(SourceSelector(session_id="s1"), user_id="u1")
        assert keeper.calls == [["ADD"], ["ADD"], ["EXPIRE"], ["EXPIRE"]]
        assert store.get(kept.memory_id, user_id="u1").status == "expired"  # type: ignore[union-attr]


def test_a_failing_keeper_is_an_internal_error_after_the_commit(url: str) -> None:
    class Broken:
        def after_change(self, store: Any, events: Any, items: Any) -> None:
            raise RuntimeError("boom")

    with open_store(url, text_only=True, category_keeper=Broken()) as store:
        with pytest.raises(InternalError, match="Broken failed after the memories were committed"):
            store.add_memory("I like tea.", user_id="u1")
        store.category_keeper = None
        assert [h.text for h in store.search("tea", user_id="u1", mode="text")] == ["I like tea."]

"""Direct writes (issue 29) on both backends: ``add_memory``, ``update`` and ``delete`` through
the public API ``open_store(url)`` (tests/stores/conftest.py runs each test on SQLite and
PostgreSQL)."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime, timedelta, timezone

import pytest

from memreader.errors import ConflictError, InputError, StoreError
from memreader.items import TextualMemoryItem
from memreader.stores import (
    CategoryDef,
    MemoryStore,
    SearchMode,
    SourceSelector,
    UnknownMemoryError,
    WriteEvent,
)
from tests.stores.store_backends import T0, item, sql

pytestmark = pytest.mark.timeout(120)


class RecordingKeeper:
    """Records each call of the category keeper: events as (event, memory_id), item ids."""

    def __init__(self) -> None:
        self.calls: list[tuple[list[tuple[str, str]], list[str]]] = []

    def after_change(
        self, store: MemoryStore, events: Sequence[WriteEvent], items: Sequence[TextualMemoryItem]
    ) -> None:
        self.calls.append(([(e.event, e.memory_id) for e in events], [i.id for i in items]))


def test_add_memory_stores_an_embedded_memory_with_history(store: MemoryStore) -> None:
    valid = datetime(2024, 5, 1, tzinfo=timezone.utc)
    event = store.add_memory(
        "Ana is vegetarian.",
        user_id="u1",
        importance=0.9,
        valid_from=valid,
        metadata={"origin": "form"},
        tags=["diet"],
        now=T0,
    )
    assert event.event == "ADD" and event.reason == "new memory"
    stored = store.get(event.memory_id, user_id="u1")
    assert stored is not None and stored.status == "active"
    meta = stored.item.metadata
    assert (meta.session_id, meta.memory_type.value, meta.tags) == (
        "direct",
        "LongTermMemory",
        ["diet"],
    )
    assert meta.info == {"origin": "form"} and stored.importance == 0.9
    assert stored.valid_from == valid
    assert meta.embedding is not None and meta.embedding_model == "hash:16"
    assert [h.event for h in store.history(event.memory_id, user_id="u1")] == ["ADD"]
    assert [h.memory.id for h in store.search("vegetarian", user_id="u1")] == [event.memory_id]


def test_add_memory_deduplicates_by_content(store: MemoryStore) -> None:
    first = store.add_memory("Ana is vegetarian.", user_id="u1", now=T0)
    assert store.add_memory("ana is  VEGETARIAN", user_id="u1", now=T0).event == "NONE"
    again = store.add_memory("Ana is vegetarian", user_id="u1", session_id="s2", now=T0)
    assert (again.event, again.memory_id) == ("REINFORCE", first.memory_id)
    other = store.add_memory("Ana is vegetarian.", user_id="u2", now=T0)
    assert other.event == "ADD"  # owners are walls: another owner's memory is not a duplicate


def test_add_memory_is_categorised_through_the_keeper(store: MemoryStore) -> None:
    keeper = RecordingKeeper()
    store.category_keeper = keeper
    event = store.add_memory("Ana is vegetarian.", user_id="u1", now=T0)
    store.delete(event.memory_id, user_id="u1", now=T0)
    assert keeper.calls == [
        ([("ADD", event.memory_id)], [event.memory_id]),
        ([("EXPIRE", event.memory_id)], []),
    ]


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"text": ""}, "a memory's text must be a non-empty string"),
        ({"memory_type": "Nope"}, "memory_type must be one of WorkingMemory"),
        (
            {"importance": 1.5},
            "invalid memory: importance: Input should be less than or equal to 1",
        ),
        ({"valid_from": datetime(2024, 1, 1)}, "valid_from must be timezone-aware"),
        ({"metadata": ["x"]}, "metadata must be a mapping, got list"),
        ({"user_id": ""}, "user_id"),
    ],
)
def test_add_memory_refuses_bad_input(
    store: MemoryStore, kwargs: dict[str, object], message: str
) -> None:
    args: dict[str, object] = {"text": "Ana is vegetarian.", "user_id": "u1", **kwargs}
    with pytest.raises(InputError, match=message):
        store.add_memory(**args)  # type: ignore[arg-type]


def test_update_supersedes_with_a_new_version(store: MemoryStore, url: str) -> None:
    store.write([item("a", "Ana lives in Porto.", message="m1")], now=T0)
    later = T0 + timedelta(days=1)
    new = store.update("a", "Ana lives in Lisbon.", user_id="u1", reason="she moved", now=later)
    assert (new.event, new.previous_id) == ("UPDATE", "a") and new.memory_id != "a"
    assert "she moved" in new.reason
    old = store.get("a", user_id="u1")
    assert old is not None and (old.status, old.superseded_by) == ("superseded", new.memory_id)
    assert old.item.memory == "Ana lives in Porto."  # never edited in place
    fresh = store.get(new.memory_id, user_id="u1")
    assert fresh is not None and fresh.status == "active"
    assert [s.message_id for s in fresh.item.metadata.sources] == ["m1"]  # keeps the sources
    assert fresh.item.metadata.embedding_model == "hash:16"
    assert [h.event for h in store.history("a", user_id="u1")] == ["ADD", "UPDATE"]
    assert [h.event for h in store.history(new.memory_id, user_id="u1")] == ["UPDATE"]
    assert [h.memory.id for h in store.search("Lisbon", user_id="u1")] == [new.memory_id]
    rows = sql(url, "SELECT count(*) FROM memreader_memories")
    assert rows == [(2,)]


def test_update_with_the_same_text_changes_nothing(store: MemoryStore) -> None:
    store.write([item("a", "Ana lives in Porto.")], now=T0)
    event = store.update("a", "ana lives in porto", user_id="u1", now=T0)
    assert (event.event, event.memory_id) == ("NONE", "a")
    assert [h.event for h in store.history("a", user_id="u1")] == ["ADD"]


def test_update_refuses_retired_unknown_and_taken_text(store: MemoryStore) -> None:
    store.write([item("a", "Ana lives in Porto."), item("b", "Ana likes tea.")], now=T0)
    with pytest.raises(InputError, match="'Ana likes tea' is already stored as memory 'b'"):
        store.update("a", "Ana likes tea", user_id="u1", now=T0)
    new = store.update("a", "Ana lives in Lisbon.", user_id="u1", now=T0)
    with pytest.raises(
        ConflictError, match=f"memory 'a' was superseded by '{new.memory_id}' \\(another change"
    ):
        store.update("a", "Ana lives in Braga.", user_id="u1", now=T0)
    with pytest.raises(UnknownMemoryError, match="user 'u1' has no memory 'zzz'"):
        store.update("zzz", "x", user_id="u1")
    with pytest.raises(UnknownMemoryError, match="user 'u2' has no memory 'b'"):
        store.update("b", "Ana likes coffee.", user_id="u2")  # another owner's memory
    with pytest.raises(InputError, match="a memory's text must be a non-empty string"):
        store.update("b", "  ", user_id="u1")
    stored = store.get("b", user_id="u1")
    assert stored is not None and stored.item.memory == "Ana likes tea."


def test_delete_expires_now_and_keeps_history(store: MemoryStore) -> None:
    event = store.add_memory("Ana is vegetarian.", user_id="u1", now=T0)
    gone = store.delete(event.memory_id, user_id="u1", now=T0)
    assert (gone.event, gone.memory_id, gone.reason) == (
        "EXPIRE",
        event.memory_id,
        "deleted by the caller",
    )
    stored = store.get(event.memory_id, user_id="u1")
    assert stored is not None and stored.status == "expired" and stored.retired_at == T0
    assert [h.event for h in store.history(event.memory_id, user_id="u1")] == ["ADD", "EXPIRE"]
    assert store.search("vegetarian", user_id="u1") == []
    again = store.delete(event.memory_id, user_id="u1", now=T0)
    assert (again.event, again.reason) == ("NONE", "already expired")
    # Added again, the expired memory comes back (its history goes on).
    assert store.add_memory("Ana is vegetarian.", user_id="u1", now=T0).event == "ADD"


def test_delete_with_erase_removes_the_row_and_its_history(store: MemoryStore, url: str) -> None:
    store.write([item("a", "Ana lives in Porto."), item("b", "Ana likes tea.")], now=T0)
    store.upsert_categories("u1", [CategoryDef(name="home", description="Where Ana lives.")])
    store.link_categories("u1", {"a": ["home"]})
    assert store.categories_of("u1", ["a"]) == {"a": ["home"]}
    new = store.update("a", "Ana lives in Lisbon.", user_id="u1", now=T0)
    receipt = store.delete("a", user_id="u1", erase=True)
    (erased,) = receipt
    assert (erased.event, erased.memory_id, receipt.erased) == ("EXPIRE", "a", ("a",))
    assert erased.reason.startswith("erased")
    assert store.get("a", user_id="u1") is None and store.history("a", user_id="u1") == []
    assert sql(url, "SELECT count(*) FROM memreader_history WHERE memory_id = 'a'") == [(0,)]
    assert store.categories_of("u1", ["a"]).get("a", []) == []
    assert store.get(new.memory_id, user_id="u1") is not None  # its successor keeps its row
    with pytest.raises(UnknownMemoryError, match="user 'u1' has no memory 'a'"):
        store.delete("a", user_id="u1", erase=True)
    hits = store.search("Ana", user_id="u1", mode="text", include_inactive=True)
    assert sorted(h.memory.id for h in hits) == sorted([new.memory_id, "b"])


def test_delete_refuses_unknown_ids_and_other_owners(store: MemoryStore) -> None:
    store.write([item("a", "Ana lives in Porto.")], now=T0)
    with pytest.raises(UnknownMemoryError, match="user 'u2' has no memory 'a'") as caught:
        store.delete("a", user_id="u2", erase=True)
    assert isinstance(caught.value, StoreError) and isinstance(caught.value, KeyError)
    with pytest.raises(UnknownMemoryError, match="user 'u1' has no memory 'nope'"):
        store.delete("nope", user_id="u1")
    with pytest.raises(InputError, match="erase must be true or false, got 'yes'"):
        store.delete("a", user_id="u1", erase="yes")  # type: ignore[arg-type]
    stored = store.get("a", user_id="u1")
    assert stored is not None and stored.status == "active"


def test_forgetting_the_direct_session_forgets_direct_writes(store: MemoryStore) -> None:
    event = store.add_memory("Ana is vegetarian.", user_id="u1", now=T0)
    result = store.forget(SourceSelector(session_id="direct"), user_id="u1", now=T0)
    assert [(e.event, e.memory_id) for e in result] == [("EXPIRE", event.memory_id)]


def test_an_erased_or_deleted_memory_leaves_every_search(store: MemoryStore) -> None:
    kept = store.add_memory("Ana likes green tea.", user_id="u1", now=T0)
    gone = store.add_memory("Ana likes black tea.", user_id="u1", now=T0)
    done = store.add_memory("Ana likes white tea.", user_id="u1", now=T0)
    modes: tuple[SearchMode, ...] = ("vector", "text", "hybrid")
    for mode in modes:  # the first searches also fill any vector cache
        assert len(store.search("Ana likes tea", user_id="u1", mode=mode)) == 3
    store.delete(gone.memory_id, user_id="u1", erase=True)
    store.delete(done.memory_id, user_id="u1")
    for mode in modes:
        hits = store.search("Ana likes tea", user_id="u1", mode=mode)
        assert [h.memory.id for h in hits] == [kept.memory_id], mode
    every = store.search("Ana likes tea", user_id="u1", mode="vector", include_inactive=True)
    assert sorted(h.memory.id for h in every) == sorted([kept.memory_id, done.memory_id])


def test_erasing_removes_its_text_from_its_neighbours_history(store: MemoryStore) -> None:
    first = store.add_memory("Ana lives in Porto.", user_id="u1", now=T0)
    middle = store.update(first.memory_id, "Ana lives in Faro.", user_id="u1", now=T0)
    last = store.update(middle.memory_id, "Ana lives in Lisbon.", user_id="u1", now=T0)
    store.delete(middle.memory_id, user_id="u1", erase=True)
    seen = [
        (h.event, h.old_memory, h.new_memory)
        for memory_id in (first.memory_id, last.memory_id)
        for h in store.history(memory_id, user_id="u1")
    ]
    assert seen == [
        ("ADD", None, "Ana lives in Porto."),
        ("UPDATE", "Ana lives in Porto.", None),  # Faro was here
        ("UPDATE", None, "Ana lives in Lisbon."),  # and here
    ]

"""Categories in the memory stores (issue 21), on both backends through the public API: a SQLite
file in ``tmp_path`` and a fresh PostgreSQL database (tests/pg_server.py) per test.

Definitions (``upsert_categories``), links (``link_categories``), reads (``categories``,
``category``, ``categories_of``), summaries (``save_summary``), search by category, purge,
owners as walls, the keeper hook after each change, and a store from before categories.
"""

from __future__ import annotations

import itertools
import json
import sqlite3
from collections.abc import Iterator, Sequence
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Any

import psycopg
import pytest

from memreader.cli import main
from memreader.errors import ConfigError, InputError, InternalError
from memreader.items import SourceMessage, TextualMemoryItem, TextualMemoryItemMetadata
from memreader.stores import (
    CategoryDef,
    MemoryStore,
    SourceSelector,
    WriteEvent,
    open_store,
)
from memreader.testing import HashEmbedder
from tests.pg_server import create_database

pytestmark = pytest.mark.timeout(120)

T0 = datetime(2026, 1, 10, 12, 0, tzinfo=timezone.utc)
_NAMES = itertools.count()
FOOD = CategoryDef(name="food", description="What the user eats and drinks.")
WORK = CategoryDef(name="work", description="The user's job and colleagues.")


def item(
    item_id: str, text: str, *, user: str = "u1", doc: str | None = None, message: str | None = None
) -> TextualMemoryItem:
    """A memory item citing one source (the whole text of message 0)."""
    source = SourceMessage(
        scene_index=0,
        message_index=0,
        span=(0, len(text)),
        content=text,
        doc_path=doc,
        message_id=message,
    )
    meta = TextualMemoryItemMetadata(
        user_id=user, session_id="s1", memory_type="LongTermMemory", sources=[source]
    )
    return TextualMemoryItem(id=item_id, memory=text, metadata=meta)


@pytest.fixture(params=["sqlite", "postgresql"])
def url(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    """A new, empty store of each backend."""
    if request.param == "sqlite":
        return f"sqlite:///{tmp_path / 'memories.db'}"
    admin: str = request.getfixturevalue("pg_admin")
    return create_database(admin, f"cat{next(_NAMES)}")


@pytest.fixture
def store(url: str) -> Iterator[MemoryStore]:
    with open_store(url, embedder=HashEmbedder()) as opened:
        yield opened


class RecordingKeeper:
    """A keeper that records each call: (events as (event, memory_id), the items' ids)."""

    def __init__(self) -> None:
        self.calls: list[tuple[list[tuple[str, str]], list[str]]] = []

    def after_change(
        self,
        store: MemoryStore,
        events: Sequence[WriteEvent],
        items: Sequence[TextualMemoryItem],
    ) -> None:
        self.calls.append(([(e.event, e.memory_id) for e in events], [i.id for i in items]))


class LinkingKeeper:
    """A keeper that links each written memory to its item's ``metadata.categories`` (through
    the store it is given: the keeper runs after the commit, outside the write)."""

    def after_change(
        self,
        store: MemoryStore,
        events: Sequence[WriteEvent],
        items: Sequence[TextualMemoryItem],
    ) -> None:
        by_item = {i.id: i.metadata.categories for i in items}
        links = {e.memory_id: by_item[e.item_id] for e in events if e.item_id in by_item}
        if links:
            owner = items[0].metadata.user_id
            store.link_categories(owner, links)


class FailingKeeper:
    def __init__(self, error: Exception) -> None:
        self.error = error

    def after_change(self, store: Any, events: Any, items: Any) -> None:
        raise self.error


# -- definitions -------------------------------------------------------------------------------


def test_upsert_is_idempotent_and_leaves_summaries_and_links(store: MemoryStore) -> None:
    store.write([item("a", "Ana likes green tea")], now=T0)
    store.upsert_categories("u1", [FOOD, WORK], [[0.5, 0.25], None])
    first = store.categories("u1")
    store.upsert_categories("u1", [FOOD, WORK], [[0.5, 0.25], None])
    assert store.categories("u1") == first
    assert [(c.name, c.summary_kind, c.item_ids, c.updated_at) for c in first] == [
        ("food", "empty", (), None),
        ("work", "empty", (), None),
    ]
    assert first[0].embedding == [0.5, 0.25] and first[1].embedding is None
    store.link_categories("u1", {"a": ["food"]})
    store.save_summary("u1", "food", summary="Ana likes tea [ref:a]", kind="llm", note=None, now=T0)
    # The same description and no vector: the vector stays; a new description drops it.
    store.upsert_categories("u1", [FOOD])
    food = store.category("u1", "food")
    assert food is not None and food.embedding == [0.5, 0.25]
    assert (food.summary, food.summary_kind, food.item_ids, food.updated_at) == (
        "Ana likes tea [ref:a]",
        "llm",
        ("a",),
        T0,
    )
    store.upsert_categories("u1", [CategoryDef(name="food", description="Meals.")])
    food = store.category("u1", "food")
    assert food is not None and food.description == "Meals." and food.embedding is None
    assert food.item_ids == ("a",) and food.summary == "Ana likes tea [ref:a]"
    assert store.category("u1", "nothing") is None


def test_bad_definitions_and_summaries_are_refused(store: MemoryStore) -> None:
    with pytest.raises(InputError, match="'food' is defined twice"):
        store.upsert_categories("u1", [FOOD, FOOD])
    with pytest.raises(InputError, match="1 embeddings for 2 category defs"):
        store.upsert_categories("u1", [FOOD, WORK], [[1.0]])
    with pytest.raises(InputError, match="embedding of category 'food' is empty or not finite"):
        store.upsert_categories("u1", [FOOD], [[float("nan")]])
    with pytest.raises(InputError, match="not a CategoryDef"):
        store.upsert_categories("u1", [{"name": "food"}])  # type: ignore[list-item]
    with pytest.raises(InputError, match="user_id"):
        store.upsert_categories("", [FOOD])
    with pytest.raises(InputError, match="owner 'u1' has no category 'food'"):
        store.save_summary("u1", "food", summary="x", kind="llm", note=None)
    store.upsert_categories("u1", [FOOD])
    with pytest.raises(InputError, match="kind must be one of llm, deterministic, empty"):
        store.save_summary("u1", "food", summary="x", kind="smart", note=None)  # type: ignore[arg-type]
    assert store.categories("u1")[0].summary_kind == "empty"


# -- links -------------------------------------------------------------------------------------


def test_links_are_replaced_per_memory_in_one_transaction(store: MemoryStore) -> None:
    store.write([item("a", "Ana likes tea at work"), item("b", "Bo drinks coffee")], now=T0)
    store.upsert_categories("u1", [FOOD, WORK])
    store.link_categories("u1", {"a": ["food", "work"], "b": ["food"]})
    assert store.categories_of("u1", ["a", "b", "zz"]) == {
        "a": ["food", "work"],
        "b": ["food"],
        "zz": [],
    }
    store.link_categories("u1", {"a": ["work"]})  # b is not named: its links stay
    assert [(c.name, c.item_ids) for c in store.categories("u1")] == [
        ("food", ("b",)),
        ("work", ("a",)),
    ]
    with pytest.raises(InputError, match="category 'nope' is not defined for owner 'u1'"):
        store.link_categories("u1", {"b": [], "a": ["nope"]})
    with pytest.raises(InputError, match="owner 'u1' has no memory 'zz'"):
        store.link_categories("u1", {"b": [], "zz": ["food"]})
    with pytest.raises(InputError, match="category name"):
        store.link_categories("u1", {"b": ["Not A Name"]})
    assert store.categories_of("u1", ["a", "b"]) == {"a": ["work"], "b": ["food"]}  # unchanged
    store.link_categories("u1", {"b": []})
    assert store.categories_of("u1", ["b"]) == {"b": []}


def test_item_ids_list_active_memories_and_links_keep_history(store: MemoryStore) -> None:
    store.write([item("a", "Ana likes green tea", doc="d1")], now=T0)
    store.write([item("b", "Bo drinks coffee", message="m1")], now=T0)
    store.write([item("c", "Cy eats rice", message="m2"), item("d", "Di eats figs")], now=T0)
    store.upsert_categories("u1", [FOOD])
    store.link_categories("u1", {m: ["food"] for m in "abcd"})
    # a is superseded (its document re-read without it), b expires (its message forgotten).
    store.write([], replaces=SourceSelector(doc_path="d1"), user_id="u1", now=T0)
    store.forget(SourceSelector(message_id="m1"), user_id="u1", now=T0)
    food = store.category("u1", "food")
    assert food is not None and food.item_ids == ("c", "d")
    assert store.categories_of("u1", ["a", "b"]) == {"a": ["food"], "b": ["food"]}
    # purge removes the links of what it removes, and only those.
    assert store.purge(older_than=T0 + timedelta(days=1)) == 2
    assert store.categories_of("u1", ["a", "b", "c"]) == {"a": [], "b": [], "c": ["food"]}
    store.forget(SourceSelector(message_id="m2"), user_id="u1", now=T0)
    food = store.category("u1", "food")
    assert food is not None and food.item_ids == ("d",)


def test_category_memories_are_the_newest_active_ones_bounded(store: MemoryStore) -> None:
    for day in range(5):
        store.write(
            [item(f"m{day}", f"meal of day {day}", message=f"x{day}")], now=T0 + timedelta(days=day)
        )
    store.write([item("other", "Other owner's meal", user="u2")], now=T0)
    store.upsert_categories("u1", [FOOD])
    store.upsert_categories("u2", [FOOD])
    store.link_categories("u1", {f"m{day}": ["food"] for day in range(5)})
    store.link_categories("u2", {"other": ["food"]})
    store.forget(SourceSelector(message_id="x4"), user_id="u1", now=T0 + timedelta(days=9))
    newest = store.category_memories("u1", "food", limit=2)
    assert [m.id for m in newest] == ["m3", "m2"]  # m4 expired; newest first; at most 2
    assert [m.id for m in store.category_memories("u1", "food", limit=99)] == [
        "m3",
        "m2",
        "m1",
        "m0",
    ]
    assert [m.id for m in store.category_memories("u2", "food", limit=9)] == ["other"]
    assert store.category_memories("u1", "work", limit=9) == []
    with pytest.raises(InputError, match="limit"):
        store.category_memories("u1", "food", limit=0)


# -- search ------------------------------------------------------------------------------------


@pytest.mark.parametrize("mode", ["hybrid", "vector", "text"])
def test_search_keeps_the_memories_of_a_category(store: MemoryStore, mode: Any) -> None:
    store.write(
        [
            item("a", "Ana likes green tea"),
            item("b", "Bo drinks black tea"),
            item("c", "Cy sells tea sets at work"),
        ],
        now=T0,
    )
    store.upsert_categories("u1", [FOOD, WORK])
    store.link_categories("u1", {"a": ["food"], "b": ["food"], "c": ["work"]})

    def found(category: str | None, **more: Any) -> set[str]:
        hits = store.search("tea", user_id="u1", mode=mode, category=category, now=T0, **more)
        return {h.memory.id for h in hits}

    assert found(None) == {"a", "b", "c"}
    assert found("food") == {"a", "b"}
    assert found("work") == {"c"}
    assert found("nothing") == set()
    store.write([item("b2", "Bo drinks black tea daily")], now=T0)
    store.link_categories("u1", {"b2": ["food"]})
    assert found("food", k=1) <= {"a", "b", "b2"}
    with pytest.raises(InputError, match="category must be a category name"):
        found("Food!")


def test_search_by_category_from_the_command_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    url = f"sqlite:///{tmp_path / 'm.db'}"
    with open_store(url, text_only=True) as store:
        store.write([item("a", "Ana likes green tea"), item("c", "Cy sells tea at work")])
        store.upsert_categories("u1", [FOOD, WORK])
        store.link_categories("u1", {"a": ["food"], "c": ["work"]})
    common = ["--store", url, "--user-id", "u1", "--no-embedding", "--json"]
    assert main(["search", "tea", *common, "--category", "work"]) == 0
    hits = json.loads(capsys.readouterr().out)["hits"]
    assert [h["id"] for h in hits] == ["c"]


# -- owners ------------------------------------------------------------------------------------


def test_owners_are_walls(store: MemoryStore) -> None:
    store.write([item("a", "Ana likes tea"), item("b", "Bo likes tea", user="u2")], now=T0)
    store.upsert_categories("u1", [FOOD], [[1.0, 0.0]])
    store.upsert_categories("u2", [CategoryDef(name="food", description="Other owner's.")])
    store.link_categories("u1", {"a": ["food"]})
    store.save_summary("u1", "food", summary="tea [ref:a]", kind="deterministic", note=None)
    with pytest.raises(InputError, match="owner 'u2' has no memory 'a'"):
        store.link_categories("u2", {"a": ["food"]})
    store.upsert_categories("u2", [WORK])
    with pytest.raises(InputError, match="category 'work' is not defined for owner 'u1'"):
        store.link_categories("u1", {"a": ["work"]})
    other = store.category("u2", "food")
    assert other is not None
    assert (other.description, other.item_ids, other.summary, other.embedding) == (
        "Other owner's.",
        (),
        "",
        None,
    )
    assert [c.name for c in store.categories("u2")] == ["food", "work"]
    assert [c.name for c in store.categories("u1")] == ["food"]
    assert store.categories_of("u2", ["a"]) == {"a": []}
    assert store.search("tea", user_id="u2", category="food") == []
    store.link_categories("u2", {"b": ["food"]})
    mine = store.category("u1", "food")
    assert mine is not None and mine.item_ids == ("a",) and mine.summary == "tea [ref:a]"
    assert [h.memory.id for h in store.search("tea", user_id="u1", category="food")] == ["a"]


# -- the keeper --------------------------------------------------------------------------------


def test_the_keeper_is_called_once_per_change(url: str) -> None:
    keeper = RecordingKeeper()
    source = SourceSelector(input_key="job/in.json")
    a, b = item("a", "Ana likes tea", message="m1"), item("b", "Bo likes chess")
    with open_store(url, category_keeper=keeper, text_only=True) as store:
        store.write([a, b], now=T0)
        store.write([a], now=T0)
        store.write_part([item("c", "Cy plays go")], source=source, now=T0)
        store.retire_unseen(source, seen={"u1": []}, now=T0)
        store.forget(SourceSelector(message_id="m1"), user_id="u1", now=T0)
        store.upsert_categories("u1", [FOOD])
        store.link_categories("u1", {"b": ["food"]})
        store.save_summary("u1", "food", summary="", kind="empty", note=None)
    assert keeper.calls == [
        ([("ADD", "a"), ("ADD", "b")], ["a", "b"]),
        ([("NONE", "a")], ["a"]),
        ([("ADD", "c")], ["c"]),
        ([("SUPERSEDE", "c")], []),
        ([("EXPIRE", "a")], []),
    ]


def test_a_keeper_set_on_an_open_store_links_through_the_store(store: MemoryStore) -> None:
    store.upsert_categories("u1", [FOOD, WORK])
    store.category_keeper = LinkingKeeper()
    tagged = item("a", "Ana drinks tea at work")
    meta = tagged.metadata.model_copy(update={"categories": ["food", "work"]})
    store.write([tagged.model_copy(update={"metadata": meta})], now=T0)
    assert store.categories_of("u1", ["a"]) == {"a": ["food", "work"]}


def test_keeper_failures_come_after_the_commit(store: MemoryStore) -> None:
    store.category_keeper = FailingKeeper(RuntimeError("boom"))
    with pytest.raises(InternalError, match=r"category keeper FailingKeeper failed .*boom"):
        store.write([item("a", "Ana likes tea", message="m1")], now=T0)
    stored = store.get("a", user_id="u1")
    assert stored is not None and stored.status == "active"  # committed all the same
    store.category_keeper = FailingKeeper(InputError("no such category"))
    with pytest.raises(InputError, match="no such category"):
        store.forget(SourceSelector(message_id="m1"), user_id="u1", now=T0)
    stored = store.get("a", user_id="u1")
    assert stored is not None and stored.status == "expired"


def test_a_keeper_without_after_change_is_refused(url: str) -> None:
    with pytest.raises(ConfigError, match="category_keeper must have after_change"):
        open_store(url, category_keeper=object(), text_only=True)  # type: ignore[arg-type]


# -- stores from before categories ---------------------------------------------------------------


def _drop_category_tables(url: str) -> None:
    if url.startswith("sqlite"):
        with sqlite3.connect(url.removeprefix("sqlite:///")) as conn:
            conn.executescript("DROP TABLE category_links; DROP TABLE categories;")
        return
    with psycopg.connect(url, autocommit=True) as conn:
        conn.execute("DROP TABLE memreader_category_links")
        conn.execute("DROP TABLE memreader_categories")


def test_a_store_from_before_categories_opens_and_gets_them(url: str) -> None:
    with open_store(url, text_only=True) as store:
        store.write([item("a", "Ana likes tea")], now=T0)
    _drop_category_tables(url)
    with open_store(url, text_only=True) as store:
        assert store.categories("u1") == []
        store.upsert_categories("u1", [FOOD])
        store.link_categories("u1", {"a": ["food"]})
        assert [h.memory.id for h in store.search("tea", user_id="u1", category="food")] == ["a"]
    with open_store(url, text_only=True) as store:  # and opens again as it is
        food = store.category("u1", "food")
        assert food is not None and food.item_ids == ("a",)

"""One typed value for a search's arguments (issue 42, part filters): ``SearchFilters`` is
checked on construction with the errors the store's checks raise, is taken by the store as
``filters=`` (a value or a mem0-style dict) or as keywords, and ``get_all`` lists an owner's
memories without a query, newest first, a page at a time, on both backends."""

from __future__ import annotations

from datetime import datetime, timedelta, timezone
from typing import Any

import pytest

from memreader.errors import InputError, InvalidCursorError
from memreader.stores import MemoryStore
from memreader.stores.filters import DEFAULT_MIN_SCORE, FILTER_NAMES, SearchFilters
from memreader.stores.paging import write_cursor
from tests.stores.store_backends import T0, item

pytestmark = pytest.mark.timeout(120)


@pytest.mark.parametrize(
    ("given", "message"),
    [
        ({"mode": "fuzzy"}, "mode must be one of hybrid, vector, text, got 'fuzzy'"),
        ({"types": ["Nope"]}, "types[0] must be a memory type"),
        ({"types": "LongTermMemory"}, "types must be a list of memory types"),
        ({"since": datetime(2026, 1, 1)}, "since must be a timezone-aware datetime"),
        ({"until": "2026-01-01"}, "until must be a timezone-aware datetime"),
        ({"session_id": ""}, "session_id must be a non-empty string"),
        ({"min_score": 1.5}, "min_score must be a number in [0, 1] or null, got 1.5"),
        ({"min_score": True}, "min_score must be a number in [0, 1] or null, got True"),
        ({"heat_weight": -0.1}, "heat_weight"),
        ({"include_inactive": "yes"}, "include_inactive must be true or false, got 'yes'"),
        ({"agent_id": ""}, "agent_id"),
        ({"category": ""}, "category"),
    ],
)
def test_a_bad_filter_is_refused_on_construction(given: dict[str, Any], message: str) -> None:
    with pytest.raises(InputError) as caught:
        SearchFilters(**given)
    assert message in str(caught.value)


def test_filters_come_as_a_value_a_dict_or_keywords() -> None:
    since = datetime(2030, 1, 1, tzinfo=timezone.utc)
    assert SearchFilters.of({"since": since}, types=["UserMemory"]) == SearchFilters(
        since=since, types=("UserMemory",)
    )
    assert SearchFilters.of(SearchFilters(mode="text"), mode="vector").mode == "vector"
    with pytest.raises(InputError, match="search\\(\\) got 'since' both in filters and as a"):
        SearchFilters.of({"since": since}, since=since)
    with pytest.raises(InputError, match="search\\(\\) has no filter 'user_id'; known: agent_id"):
        SearchFilters.of({"user_id": "ana"})
    with pytest.raises(InputError, match="filters must be a SearchFilters or a mapping, got list"):
        SearchFilters.of(["since"])  # type: ignore[arg-type]
    assert set(FILTER_NAMES) == {
        "types", "since", "until", "session_id", "category", "agent_id", "task_id",
        "include_inactive", "min_score", "heat_weight", "mode",
    }  # fmt: skip
    assert SearchFilters().min_score is DEFAULT_MIN_SCORE is None


def _fill(store: MemoryStore) -> None:
    store.write(
        [
            item("old", "I lived in Lisbon in 2024.", at=datetime(2024, 3, 1, tzinfo=timezone.utc)),
            item("tea", "I drink green tea.", session="s2", memory_type="UserMemory"),
            item("porto", "I moved to Porto."),
        ],
        now=T0,
    )


def test_the_store_takes_filters_as_a_value_a_dict_or_keywords(store: MemoryStore) -> None:
    _fill(store)
    since_2025 = datetime(2025, 1, 1, tzinfo=timezone.utc)
    by_value = store.search("lived", user_id="u1", filters=SearchFilters(since=since_2025))
    by_dict = store.search("lived", user_id="u1", filters={"since": since_2025})
    by_keyword = store.search("lived", user_id="u1", since=since_2025)
    assert "old" not in {h.id for h in by_value}
    assert [h.id for h in by_value] == [h.id for h in by_dict] == [h.id for h in by_keyword]
    only_tea = store.search("tea", user_id="u1", filters={"types": ["UserMemory"]})
    assert [h.id for h in only_tea] == ["tea"]
    with pytest.raises(InputError, match="has no filter 'sesion_id'"):
        store.search("tea", user_id="u1", sesion_id="s2")


def test_get_all_lists_newest_first_a_page_at_a_time(store: MemoryStore) -> None:
    for n in range(5):
        store.write([item(f"m{n}", f"memory number {n} about chess")], now=T0 + timedelta(n))
    store.write([item("x", "another owner's memory", user="u2")], now=T0)
    first = store.get_all(user_id="u1", limit=2)
    assert [m.id for m in first] == ["m4", "m3"] and first.next_cursor is not None
    second = store.get_all(user_id="u1", limit=2, cursor=first.next_cursor)
    third = store.get_all(user_id="u1", limit=2, cursor=second.next_cursor)
    assert [m.id for m in second] == ["m2", "m1"]
    assert [m.id for m in third] == ["m0"] and third.next_cursor is None
    assert [m.id for m in store.get_all(user_id="u2")] == ["x"]  # owners are walls


def test_get_all_keeps_the_filters_and_the_walls(store: MemoryStore) -> None:
    _fill(store)
    store.delete("porto", user_id="u1")
    assert [m.id for m in store.get_all(user_id="u1")] == ["tea", "old"]
    assert {m.id for m in store.get_all(user_id="u1", include_inactive=True)} == {
        "tea",
        "old",
        "porto",
    }
    assert [m.id for m in store.get_all(user_id="u1", filters={"session_id": "s2"})] == ["tea"]
    until_2025 = datetime(2025, 1, 1, tzinfo=timezone.utc)
    assert [m.id for m in store.get_all(user_id="u1", until=until_2025)] == ["old"]
    assert [m.id for m in store.get_all(user_id="u1", types=["UserMemory"])] == ["tea"]
    assert list(store.get_all(user_id="u1", category="food")) == []


def test_get_all_sees_a_task_as_a_search_does(store: MemoryStore) -> None:
    store.add_memory("mine", user_id="u1", task_id="t1")
    store.add_memory("theirs", user_id="u1", task_id="t2")
    store.add_memory("shared", user_id="u1", task_id="t2", visibility="shared")
    store.add_memory("everyone's", user_id="u1")
    seen = {m.item.memory for m in store.get_all(user_id="u1", task_id="t1")}
    assert seen == {"mine", "shared", "everyone's"}


@pytest.mark.parametrize(
    ("cursor", "error", "message"),
    [
        ("garbage", InvalidCursorError, "cursor 'garbage' is not one a listing gave"),
        (write_cursor(3)[:-2], InvalidCursorError, "is not one a listing gave"),
        (42, InvalidCursorError, "cursor 42 is not one a listing gave"),
        ("x" * 500, InvalidCursorError, "is not one a listing gave"),
    ],
)
def test_a_bad_cursor_is_a_typed_error(
    store: MemoryStore, cursor: Any, error: type[Exception], message: str
) -> None:
    with pytest.raises(error, match=message):
        store.get_all(user_id="u1", cursor=cursor)


@pytest.mark.parametrize(
    ("given", "message"),
    [
        ({"limit": 0}, "limit must be an integer in [1, 1000], got 0"),
        ({"limit": 1001}, "limit must be an integer in [1, 1000], got 1001"),
        ({"min_score": 0.1}, "get_all() takes no min_score: a listing scores nothing"),
        ({"mode": "text"}, "get_all() takes no mode: a listing scores nothing"),
        ({"sesion_id": "s1"}, "get_all() has no filter 'sesion_id'"),
    ],
)
def test_get_all_refuses_what_a_listing_cannot_do(
    store: MemoryStore, given: dict[str, Any], message: str
) -> None:
    with pytest.raises(InputError) as caught:
        store.get_all(user_id="u1", **given)
    assert message in str(caught.value)

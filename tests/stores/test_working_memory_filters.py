"""Working memory honours every filter the store honours (issue 41, part 2), on both backends:
for any combination of ``types``, ``session_id``, ``since``, ``until``, ``agent_id``,
``task_id``, ``category``, ``include_inactive`` and ``mode``, a search finds among the held
items exactly the memories the store finds once the same input is stored."""

from __future__ import annotations

from collections.abc import Callable
from datetime import datetime, timezone
from typing import Any

import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from memreader import Memory
from memreader.errors import InputError

pytestmark = pytest.mark.timeout(300)

CONFIG = {"backend": "simple_struct", "config": {"embedder": {"backend": "hash"}}}


def _at(day: str) -> str:
    return f"{day}T09:00:00+00:00"


#: (session, messages, scope): each says "tea", so every memory is a candidate for the query.
INPUTS: list[tuple[str, list[dict[str, str]], dict[str, str]]] = [
    (
        "s1",
        [{"role": "user", "content": "I drink green tea.", "chat_time": _at("2026-01-05")}],
        {"agent_id": "a1", "task_id": "t1"},
    ),
    (
        "s2",
        [
            {"role": "user", "content": "Do you like tea?", "chat_time": _at("2026-02-01")},
            {"role": "assistant", "content": "I like tea.", "chat_time": _at("2026-02-01")},
        ],
        {"task_id": "t2", "visibility": "shared"},
    ),
    (
        "s3",
        [{"role": "user", "content": "Tea at the harbour.", "chat_time": _at("2026-03-10")}],
        {"agent_id": "a2", "task_id": "t2"},
    ),
    ("s4", [{"role": "user", "content": "Ana bought tea.", "chat_time": _at("2025-12-20")}], {}),
    ("s5", [{"role": "user", "content": "Tea without a date."}], {}),
]

INSTANTS = [
    datetime(2025, 12, 1, tzinfo=timezone.utc),
    datetime(2026, 1, 5, 9, tzinfo=timezone.utc),  # the first memory's own time: kept
    datetime(2026, 2, 15, tzinfo=timezone.utc),
    datetime(2026, 4, 1, tzinfo=timezone.utc),
]

FILTERS = st.fixed_dictionaries(
    {},
    optional={
        "types": st.lists(st.sampled_from(["UserMemory", "LongTermMemory"]), unique=True),
        "session_id": st.sampled_from(["s1", "s2", "s3", "s5", "nope"]),
        "since": st.sampled_from(INSTANTS),
        "until": st.sampled_from(INSTANTS),
        "agent_id": st.sampled_from(["a1", "a2", "a9"]),
        "task_id": st.sampled_from(["t1", "t2", "t9"]),
        "category": st.just("food"),
        "include_inactive": st.booleans(),
        "mode": st.sampled_from(["hybrid", "text", "vector"]),
    },
)


def _fill(m: Memory) -> None:
    for session, chat, scope in INPUTS:
        m.add(chat, user_id="ana", session_id=session, **scope)


def test_held_items_are_found_by_the_filters_that_find_them_stored(
    new_url: Callable[[str], str],
) -> None:
    with (
        Memory(CONFIG, store=new_url("held"), working_memory=50) as held,
        Memory(CONFIG, store=new_url("plain")) as plain,
    ):
        _fill(held)
        _fill(plain)
        assert held.working is not None and len(held.working.held("ana")) == 5

        @settings(max_examples=60, deadline=None)
        @given(FILTERS)
        @example({"since": INSTANTS[2]})  # the time range that the tier once ignored
        @example({"until": INSTANTS[1], "types": ["UserMemory"]})
        def same_as_the_store(filters: dict[str, Any]) -> None:
            found = held.search("tea", user_id="ana", k=50, min_score=0.0, **filters)
            wanted = plain.search("tea", user_id="ana", k=50, min_score=0.0, **filters)
            assert {h.tier for h in found} <= {"working"}
            assert sorted(h.id for h in found) == sorted(h.id for h in wanted), filters

        same_as_the_store()


def test_a_bad_filter_is_refused_even_when_held_items_fill_k(url: str) -> None:
    with Memory(CONFIG, store=url, working_memory=5) as m:
        m.add("I drink green tea.", user_id="ana", session_id="s1")
        with pytest.raises(InputError, match="since must be a timezone-aware datetime"):
            m.search("tea", user_id="ana", k=1, since=datetime(2026, 1, 1))
        with pytest.raises(InputError, match="mode must be one of hybrid, vector, text"):
            m.search("tea", user_id="ana", k=1, mode="fuzzy")
        with pytest.raises(InputError, match="min_score"):
            m.context("tea", user_id="ana", k=1, min_score=2.0)


def test_a_text_only_store_finds_no_held_item_by_vector(url: str) -> None:
    text_only = {"backend": "simple_struct", "config": {"embedder": None}}
    with Memory(text_only, store=url, working_memory=5) as m:
        m.add("I drink green tea.", user_id="ana", session_id="s1")
        assert m.search("tea", user_id="ana", mode="vector") == []  # as the store answers
        assert [h.tier for h in m.search("tea", user_id="ana", mode="text")] == ["working"]

"""Issue 42 through ``Memory``: one ``SearchFilters`` from every surface, honoured by the
working tier as by the store (each filter tested with held items), one default ``min_score``
on every surface, and ``get_all`` (a page at a time, working memory included)."""

from __future__ import annotations

import argparse
import asyncio
from collections.abc import Iterator
from datetime import datetime, timezone
from pathlib import Path

import pytest

from memreader import AsyncMemory, Memory
from memreader.cli.filter_flags import add_filter_flags, filters_of
from memreader.errors import InputError, InvalidCursorError
from memreader.mcp import arguments as mcp_arguments
from memreader.service.models import SearchRequest
from memreader.stores.filters import DEFAULT_MIN_SCORE, SearchFilters

pytestmark = pytest.mark.timeout(120)

CONFIG = {"backend": "simple_struct", "config": {"embedder": {"backend": "hash"}}}
SPRING_2024 = "2024-04-02T09:00:00+00:00"


@pytest.fixture
def held(tmp_path: Path) -> Iterator[Memory]:
    """A memory whose one item is held in working memory, not stored: Ana's 2024 move."""
    with Memory(CONFIG, store=f"sqlite:///{tmp_path}/m.db", working_memory=5) as m:
        chat = [{"role": "user", "content": "I moved to Porto.", "chat_time": SPRING_2024}]
        m.add(chat, user_id="ana", session_id="s1", agent_id="a1", task_id="t1")
        assert m.working is not None and len(m.working.held("ana")) == 1
        yield m


def _found(m: Memory, **filters: object) -> list[str]:
    return [h.tier for h in m.search("Porto", user_id="ana", **filters)]


def test_a_search_since_2030_never_returns_a_2024_memory_held(held: Memory) -> None:
    assert _found(held) == ["working"]
    assert _found(held, since=datetime(2030, 1, 1, tzinfo=timezone.utc)) == []
    assert _found(held, until=datetime(2024, 1, 1, tzinfo=timezone.utc)) == []
    assert _found(held, until=datetime(2024, 12, 31, tzinfo=timezone.utc)) == ["working"]


@pytest.mark.parametrize(
    ("filters", "kept"),
    [
        ({"types": ["LongTermMemory"]}, False),
        ({"types": ["UserMemory", "LongTermMemory"]}, True),
        ({"session_id": "s2"}, False),
        ({"session_id": "s1"}, True),
        ({"category": "travel"}, False),  # a held item has no category yet
        ({"agent_id": "a2"}, False),
        ({"agent_id": "a1"}, True),
        ({"task_id": "t2"}, False),
        ({"task_id": "t1"}, True),
        ({"include_inactive": True}, True),  # held items are active
        ({"mode": "text"}, True),
    ],
)
def test_the_working_tier_honours_every_filter(
    held: Memory, filters: dict[str, object], kept: bool
) -> None:
    memory_type = held.working.held("ana")[0].metadata.memory_type.value  # type: ignore[union-attr]
    if "types" in filters and kept:
        assert memory_type in filters["types"]  # type: ignore[operator]
    assert _found(held, **filters) == (["working"] if kept else [])
    # The same filters as one value, or as mem0's dict.
    assert _found(held, filters=SearchFilters(**filters)) == _found(held, filters=filters)


def test_the_working_tier_cuts_at_min_score_as_the_store(held: Memory) -> None:
    (unrelated,) = held.search("what city", user_id="ana")  # no cut by default: kept
    assert unrelated.tier == "working" and unrelated.score.relevance < 0.5
    assert held.search("what city", user_id="ana", min_score=0.5) == []
    assert _found(held, min_score=0.5) == ["working"]  # "Porto" matches it well


def test_every_surface_uses_one_default_min_score() -> None:
    assert DEFAULT_MIN_SCORE is None and SearchFilters().min_score is DEFAULT_MIN_SCORE
    assert SearchRequest.model_fields["min_score"].default is DEFAULT_MIN_SCORE  # HTTP
    parser = argparse.ArgumentParser()
    add_filter_flags(parser, ranking=True)
    assert filters_of(parser.parse_args([])).min_score is DEFAULT_MIN_SCORE  # CLI
    # MCP gives no min_score: Memory's default applies.
    for model in (mcp_arguments.Recall, mcp_arguments.Context):
        assert "min_score" not in model.model_fields
    # The service's page sends none: the body's default applies.
    page = Path(__file__).parents[2] / "memreader/service/static/search.js"
    assert "min_score" not in page.read_text(encoding="utf-8")


def test_filters_and_keywords_are_one_value(held: Memory) -> None:
    with pytest.raises(InputError, match="search\\(\\) got 'session_id' both in filters and"):
        held.search("Porto", user_id="ana", filters={"session_id": "s1"}, session_id="s1")
    with pytest.raises(InputError, match="context\\(\\) has no filter 'include_inactive'"):
        held.context("Porto", user_id="ana", filters=SearchFilters(include_inactive=True))


def test_get_all_pages_through_what_is_stored_and_held(tmp_path: Path) -> None:
    with Memory(CONFIG, store=f"sqlite:///{tmp_path}/m.db", working_memory=5) as m:
        for text in ("I live in Porto.", "I play chess.", "I drink green tea."):
            m.add(text, user_id="ana", session_id="s1")
        first = m.get_all(user_id="ana", limit=2)  # the held items are stored first
        assert [s.item.memory for s in first] == ["user: I drink green tea.", "user: I play chess."]
        rest = m.get_all(user_id="ana", limit=2, cursor=first.next_cursor)
        assert [s.item.memory for s in rest] == ["user: I live in Porto."]
        assert rest.next_cursor is None
        assert list(m.get_all(user_id="bob")) == []
        with pytest.raises(InvalidCursorError):
            m.get_all(user_id="ana", cursor="garbage")
        with pytest.raises(InputError, match="get_all\\(\\) takes no min_score"):
            m.get_all(user_id="ana", min_score=0.2)
        with pytest.raises(InputError, match=r"get_all\(\) needs user_id= \(every memory"):
            m.get_all()


def test_async_memory_lists_and_searches_with_filters(tmp_path: Path) -> None:
    async def run() -> None:
        async with AsyncMemory(CONFIG, store=f"sqlite:///{tmp_path}/m.db") as m:
            await m.add("I live in Porto.", user_id="ana", session_id="s1")
            page = await m.get_all(user_id="ana", filters={"session_id": "s1"})
            assert [s.item.memory for s in page] == ["user: I live in Porto."]
            hits = await m.search("Porto", user_id="ana", filters={"session_id": "s2"})
            assert hits == []

    asyncio.run(run())

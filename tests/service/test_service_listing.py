"""Issue 42 over HTTP: ``GET /v1/memories`` lists a user's memories without a query, newest
first, a page at a time, with the search's filters and walls; the search body is one model
whose filters are :class:`~memreader.stores.filters.SearchFilters`' and whose default
``min_score`` is every surface's (no cut), so the README's search finds what it stored."""

from __future__ import annotations

import httpx

from memreader.service.models import FilterFields, ListQuery, SearchRequest
from memreader.service.routes_context import ContextRequest
from memreader.stores.filters import DEFAULT_MIN_SCORE, FILTER_NAMES
from memreader.stores.scoring import RECOMMENDED_MIN_SCORE
from tests.service.http_client import Start, auth, problem


def test_the_search_body_holds_the_filters_of_searchfilters() -> None:
    assert set(FilterFields.model_fields) == set(FILTER_NAMES)
    asked = {"user_id", "query", "k", "rerank"}  # what a search is asked, beside its filters
    assert set(SearchRequest.model_fields) == set(FILTER_NAMES) | asked
    assert set(ListQuery.model_fields) == set(FILTER_NAMES) | {"user_id", "limit", "cursor"}
    assert SearchRequest.model_fields["min_score"].default is DEFAULT_MIN_SCORE
    assert set(FILTER_NAMES) <= set(ContextRequest.model_fields)


def _add(url: str, text: str, **extra: str) -> str:
    body = {"user_id": "alice", "text": text, **extra}
    answer = httpx.post(f"{url}/v1/memories", json=body, headers=auth("alice"))
    assert answer.status_code == 201, answer.text
    memory_id: str = answer.json()["event"]["memory_id"]
    return memory_id


def test_memories_are_listed_newest_first_a_page_at_a_time(start: Start) -> None:
    url = start()
    alice = auth("alice")
    ids = [_add(url, text) for text in ("Alice lives in Lisbon.", "Alice plays the cello.")]
    ids.append(_add(url, "Alice's trip notes.", task_id="trip"))
    first = httpx.get(f"{url}/v1/memories", params={"user_id": "alice", "limit": 2}, headers=alice)
    assert first.status_code == 200, first.text
    page = first.json()
    assert [m["id"] for m in page["memories"]] == [ids[2], ids[1]]
    query = {"user_id": "alice", "limit": 2, "cursor": page["next_cursor"]}
    rest = httpx.get(f"{url}/v1/memories", params=query, headers=alice).json()
    assert [m["id"] for m in rest["memories"]] == [ids[0]] and rest["next_cursor"] is None
    scoped = {"user_id": "alice", "task_id": "other"}
    seen = httpx.get(f"{url}/v1/memories", params=scoped, headers=alice).json()["memories"]
    assert [m["id"] for m in seen] == [ids[1], ids[0]]  # another task's private one is not
    typed = {"user_id": "alice", "types": ["UserMemory", "WorkingMemory"]}
    assert httpx.get(f"{url}/v1/memories", params=typed, headers=alice).json()["memories"] == []
    typed["types"] = ["LongTermMemory"]
    listed = httpx.get(f"{url}/v1/memories", params=typed, headers=alice).json()["memories"]
    assert len(listed) == 3
    bad = {"user_id": "alice", "cursor": "not-a-cursor"}
    refused = problem(httpx.get(f"{url}/v1/memories", params=bad, headers=alice), 422)
    assert "cursor 'not-a-cursor' is not one a listing gave" in refused["detail"]
    ranking = {"user_id": "alice", "min_score": 0.5}
    refused = problem(httpx.get(f"{url}/v1/memories", params=ranking, headers=alice), 422)
    assert "get_all() takes no min_score" in refused["detail"]
    other = httpx.get(f"{url}/v1/memories", params={"user_id": "bob"}, headers=alice)
    assert other.status_code == 403


def test_a_search_without_min_score_finds_what_python_finds(start: Start) -> None:
    url = start()
    _add(url, "I moved to Lisbon and want piano lessons.")
    # The README's example: a query whose words the memory does not hold scores low, and the
    # default (no cut) keeps it, as Memory.search, MCP's recall and the CLI do.
    search = {"user_id": "alice", "query": "where does she live?", "k": 5}
    hits = httpx.post(f"{url}/v1/memories/search", json=search, headers=auth("alice")).json()
    assert [h["memory"]["memory"] for h in hits["hits"]] == [
        "I moved to Lisbon and want piano lessons."
    ]
    assert hits["hits"][0]["score"]["relevance"] < RECOMMENDED_MIN_SCORE  # what a cut drops


def test_context_takes_the_search_filters_but_include_inactive(start: Start) -> None:
    url = start()
    alice = auth("alice")
    _add(url, "Alice lives in Lisbon.", session_id="s1")
    body = {"user_id": "alice", "query": "Lisbon", "session_id": "s2"}
    empty = httpx.post(f"{url}/v1/context", json=body, headers=alice).json()
    assert empty["parts"] == []
    body["session_id"] = "s1"
    found = httpx.post(f"{url}/v1/context", json=body, headers=alice).json()
    assert [p["text"] for p in found["parts"]] == ["Alice lives in Lisbon."]
    body["include_inactive"] = True
    refused = problem(httpx.post(f"{url}/v1/context", json=body, headers=alice), 422)
    assert [e["loc"] for e in refused["errors"]] == ["body.include_inactive"]

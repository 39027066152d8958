"""``rerank`` in ``POST /v1/memories/search`` and ``/v1/context``, and ``POST /v1/recall``,
through a running service whose LLM is a real HTTP server scripted as the model."""

from __future__ import annotations

import json
import re
from typing import Any

import httpx
import pytest

from tests.llm_server import LLMTestServer, Reply, fault, llm_server, openai_completion
from tests.llm_server import RecordedRequest as LLMRequest
from tests.service.http_client import Start, auth, problem

__all__ = ["llm_server"]

pytestmark = pytest.mark.timeout(120)

FACTS = ["I play the piano in Lisbon.", "I teach piano to kids.", "Piano lessons on Monday."]


def answer(request: LLMRequest) -> Reply:
    """The model: candidates in reverse order; a recall is sufficient after its items."""
    prompt = request.messages[-1]["content"]
    numbers = [int(n) for n in re.findall(r"^\[(\d+)\]", prompt, flags=re.M)]
    said = {"order": numbers[::-1]} if numbers else {"sufficient": 'tier="item"' in prompt}
    return Reply(body=openai_completion(json.dumps(said)))


def post(url: str, path: str, who: str, **body: Any) -> httpx.Response:
    return httpx.post(f"{url}{path}", json=body, headers=auth(who), timeout=60)


def seeded(start: Start, llm_server: LLMTestServer | None) -> str:
    llm = None
    if llm_server is not None:
        llm = {"backend": "openai", "model": "m", "base_url": llm_server.url, "api_key": "sk-x"}
        llm_server.responder = answer
    url = start(config={"llm": {**llm, "max_retries": 0}} if llm else None)
    for who in ("alice", "bob"):
        for fact in FACTS:
            added = post(url, "/v1/memories", who, user_id=who, text=f"{who}: {fact}")
            assert added.status_code in (200, 201), added.text
    return url


def test_search_and_context_rerank(start: Start, llm_server: LLMTestServer) -> None:
    url = seeded(start, llm_server)
    plain = post(url, "/v1/memories/search", "alice", user_id="alice", query="piano", k=3)
    ranked = post(url, "/v1/memories/search", "alice", user_id="alice", query="piano", rerank=True)
    assert ranked.status_code == 200, ranked.text
    ids = [hit["memory"]["id"] for hit in plain.json()["hits"]]
    hits = ranked.json()["hits"]
    assert [hit["memory"]["id"] for hit in hits] == ids[::-1]
    assert [hit["rerank"]["rank"] for hit in hits] == [1, 2, 3]
    assert "rerank" not in plain.json()["hits"][0]
    assert all("bob" not in hit["memory"]["memory"] for hit in hits)
    block = post(url, "/v1/context", "alice", user_id="alice", query="piano", rerank=True).json()
    assert block["reranked"] is True and block["rerank_fallback"] is None
    assert len(llm_server.requests) == 2


def test_a_failing_llm_is_the_store_order_flagged(start: Start, llm_server: LLMTestServer) -> None:
    url = seeded(start, llm_server)
    plain = post(url, "/v1/memories/search", "alice", user_id="alice", query="piano", k=3)
    llm_server.script([fault("http_500")])
    ranked = post(url, "/v1/memories/search", "alice", user_id="alice", query="piano", rerank=True)
    assert ranked.status_code == 200, ranked.text
    hits = ranked.json()["hits"]
    assert [h["memory"]["id"] for h in hits] == [h["memory"]["id"] for h in plain.json()["hits"]]
    assert all("LLMServerError" in hit["rerank"]["fallback"] for hit in hits)


def test_recall_stops_when_sufficient(start: Start, llm_server: LLMTestServer) -> None:
    url = seeded(start, llm_server)
    found = post(url, "/v1/recall", "alice", user_id="alice", query="piano lessons")
    assert found.status_code == 200, found.text
    data = found.json()
    assert [t["tier"] for t in data["tiers"]] == ["category", "item"] and data["stopped_early"]
    assert data["items"] and data["resources"] == []
    assert all(hit["memory"]["user_id"] == "alice" for hit in data["items"])
    body = {"user_id": "bob", "query": "piano"}
    assert problem(post(url, "/v1/recall", "alice", **body), 403)["type"].endswith("forbidden-user")
    bad = post(url, "/v1/recall", "alice", user_id="alice", query="piano", tiers=["everything"])
    assert any(e["loc"].startswith("body.tiers") for e in problem(bad, 422)["errors"])


def test_rerank_without_an_llm_is_422(start: Start) -> None:
    url = seeded(start, None)
    for path in ("/v1/memories/search", "/v1/context", "/v1/recall"):
        refused = post(url, path, "alice", user_id="alice", query="piano", rerank=True)
        assert "rerank=True needs an LLM" in problem(refused, 422)["detail"]
    plain = post(url, "/v1/recall", "alice", user_id="alice", query="piano").json()
    assert [t["tier"] for t in plain["tiers"]] == ["category", "item", "resource"]

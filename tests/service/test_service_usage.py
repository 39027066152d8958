"""Use over HTTP (issue 34, part 1), through a running service: ``POST /v1/context`` and
``GET /v1/memories/{id}`` record it, search never does, ``POST /v1/memories:used`` names it,
and ``heat_weight`` is a search field; bad bodies are 422, another user's 403."""

from __future__ import annotations

from typing import Any

import httpx

from memreader.stores import open_store
from tests.service.http_client import Start, auth, problem


def _use(tmp: str, user: str, ids: list[str]) -> dict[str, int]:
    with open_store(f"sqlite:///{tmp}/memories.db", text_only=True) as store:
        return {i: u.access_count for i, u in store.usage(ids, user_id=user).items()}


def test_use_is_recorded_over_http(start: Start, tmp_path: Any) -> None:
    url = start()
    alice = auth("alice")
    ids = [
        httpx.post(f"{url}/v1/memories", json={"text": text}, headers=alice).json()["event"][
            "memory_id"
        ]
        for text in ("Alice drinks green tea.", "Alice drinks black tea.")
    ]
    search = {"user_id": "alice", "query": "Alice tea", "mode": "text"}
    hits = httpx.post(f"{url}/v1/memories/search", json=search, headers=alice).json()["hits"]
    assert len(hits) == 2 and all(h["score"]["heat"] == 0.0 for h in hits)
    assert _use(tmp_path, "alice", ids) == {}  # a search never writes
    body = {"user_id": "alice", "query": "what does Alice drink, tea?", "max_tokens": 300}
    shown = httpx.post(f"{url}/v1/context", json=body, headers=alice).json()["parts"]
    assert {p["memory_id"] for p in shown} == set(ids)
    assert _use(tmp_path, "alice", ids) == {ids[0]: 1, ids[1]: 1}
    assert httpx.get(f"{url}/v1/memories/{ids[1]}", headers=alice).status_code == 200
    assert httpx.get(f"{url}/v1/memories/{ids[1]}/history", headers=alice).status_code == 200
    assert _use(tmp_path, "alice", ids) == {ids[0]: 1, ids[1]: 2}  # history is not a use
    marked = httpx.post(
        f"{url}/v1/memories:used", json={"user_id": "alice", "ids": [ids[1], "nope"]}, headers=alice
    )
    assert marked.status_code == 200 and marked.json() == {"marked": 1}
    hot = httpx.post(
        f"{url}/v1/memories/search", json={**search, "heat_weight": 0.5}, headers=alice
    ).json()["hits"]
    heat = {h["memory"]["id"]: h["score"]["heat"] for h in hot}
    assert heat[ids[1]] > heat[ids[0]] > 0  # three uses against one
    final = {h["memory"]["id"]: h["score"]["final"] for h in hits}
    assert [h["score"]["final"] for h in hot if h["memory"]["id"] == ids[1]] == [
        min(1.0, final[ids[1]] * (1 + 0.5 * heat[ids[1]]))
    ]


def test_bad_use_requests_are_refused(start: Start) -> None:
    url = start()
    alice = auth("alice")
    used = f"{url}/v1/memories:used"
    body = problem(httpx.post(used, json={"user_id": "alice", "ids": "abc"}, headers=alice), 422)
    assert "ids" in body["detail"]
    problem(httpx.post(used, json={"user_id": "alice", "ids": []}, headers=alice), 422)
    problem(httpx.post(used, json={"user_id": "bob", "ids": ["x"]}, headers=alice), 403)
    search = {"user_id": "alice", "query": "tea", "heat_weight": 2}
    body = problem(httpx.post(f"{url}/v1/memories/search", json=search, headers=alice), 422)
    assert "heat_weight" in body["detail"]

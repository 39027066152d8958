"""The search cache: the same search of the same user soon after is answered from the first,
never for another user, and never once the store changed (a write through this worker,
another worker, or anything else that commits to the store)."""

from __future__ import annotations

from typing import Any

import httpx
import pytest

from tests.service.http_client import auth, problem
from tests.service.worker_apps import Workers

pytestmark = pytest.mark.timeout(120)

#: Long enough that no test depends on how fast it runs.
TTL = {"search_cache_s": 3600}


def search(url: str, who: str = "alice", user: str | None = None, **body: Any) -> httpx.Response:
    payload = {"user_id": user or who, "query": "piano lessons", **body}
    return httpx.post(f"{url}/v1/memories/search", json=payload, headers=auth(who))


def add(url: str, who: str, text: str) -> None:
    added = httpx.post(f"{url}/v1/memories", json={"user_id": who, "text": text}, headers=auth(who))
    assert added.status_code == 201, added.text


def test_a_repeated_search_is_answered_once(workers: Workers) -> None:
    ((url, state),) = workers(1, **TTL)
    add(url, "alice", "Alice takes piano lessons on Tuesdays.")
    first, again = search(url), search(url)
    assert first.status_code == again.status_code == 200
    assert again.content == first.content and first.json()["hits"]
    assert state.search_cache.hits == 1
    search(url, k=3)  # another parameter is another search
    assert state.search_cache.hits == 1


def test_one_users_results_never_reach_another(workers: Workers) -> None:
    ((url, state),) = workers(1, **TTL)
    add(url, "alice", "Alice takes piano lessons on Tuesdays.")
    add(url, "bob", "Bob sold his piano.")
    alices = search(url)
    bobs = search(url, "bob")
    assert {h["memory"]["user_id"] for h in alices.json()["hits"]} == {"alice"}
    assert {h["memory"]["user_id"] for h in bobs.json()["hits"]} == {"bob"}
    assert state.search_cache.hits == 0
    # alice's key may not read bob's memories, cached or not.
    problem(search(url, "alice", user="bob"), 403)
    assert search(url, "admin", user="bob").content == bobs.content  # admin may: a hit
    assert state.search_cache.hits == 1


def test_a_write_anywhere_ends_the_cached_answer(workers: Workers) -> None:
    (a, state_a), (b, _) = workers(2, **TTL)
    add(a, "alice", "Alice takes piano lessons on Tuesdays.")
    before = search(a).json()["hits"]
    add(a, "alice", "Alice moved her piano lessons to Fridays.")  # this worker
    after_own = search(a).json()["hits"]
    assert len(after_own) == len(before) + 1
    add(b, "alice", "Alice's piano teacher is called Ines.")  # another worker
    after_other = search(a).json()["hits"]
    assert len(after_other) == len(after_own) + 1
    assert state_a.search_cache.hits == 0
    assert search(a).json()["hits"] == after_other  # unchanged since: a hit
    assert state_a.search_cache.hits == 1


def test_the_cache_can_be_off(workers: Workers) -> None:
    ((url, state),) = workers(1, search_cache_s=0)
    add(url, "alice", "Alice takes piano lessons on Tuesdays.")
    ids = [[h["memory"]["id"] for h in search(url).json()["hits"]] for _ in range(2)]
    assert ids[0] == ids[1] and ids[0]
    assert not state.search_cache.enabled and state.search_cache.hits == 0

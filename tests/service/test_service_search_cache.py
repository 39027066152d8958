"""The search cache: the same search of the same user soon after is answered from the first,
never for another user, and never once the store changed (a write through this worker,
another worker, or anything else that commits to the store)."""

from __future__ import annotations

from typing import Any

import httpx
import pytest

from memreader.service.keys import hash_key
from tests.service.http_client import auth, key_entries, problem
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


def test_a_task_keys_scope_is_part_of_what_an_answer_is_kept_by(workers: Workers) -> None:
    # The task-A key's body names no task: it searches as task A all the same (its only one),
    # so the admin's answer to the very same body (the owner-wide view) is not its answer.
    task_key = "mr_alice_task_a_key"
    keys = [*key_entries(), {"name": "a", "sha256": hash_key(task_key), "users": ["alice"]}]
    keys[-1]["tasks"] = ["A"]
    ((url, state),) = workers(1, keys=keys, **TTL)
    as_task_a = {"Authorization": f"Bearer {task_key}"}
    for text, task in (("Alice plays piano in task A.", "A"), ("Alice's piano in B.", "B")):
        body = {"user_id": "alice", "text": text, "task_id": task, "visibility": "private"}
        added = httpx.post(f"{url}/v1/memories", json=body, headers=auth("admin"))
        assert added.status_code == 201, added.text
    owner_wide = search(url, "admin", user="alice")
    payload = {"user_id": "alice", "query": "piano lessons"}
    in_task_a = httpx.post(f"{url}/v1/memories/search", json=payload, headers=as_task_a)
    assert state.search_cache.hits == 0
    assert {h["memory"]["memory"] for h in in_task_a.json()["hits"]} == {
        "Alice plays piano in task A."
    }
    assert len(owner_wide.json()["hits"]) == 2
    again = httpx.post(f"{url}/v1/memories/search", json=payload, headers=as_task_a)
    assert again.content == in_task_a.content and state.search_cache.hits == 1

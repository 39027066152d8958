"""Direct writes over HTTP (issue 29), through a running service: ``POST /v1/memories``,
``PATCH /v1/memories/{id}``, ``DELETE /v1/memories/{id}`` (``?erase=true``), their walls and
problems, and ``category`` in the search route."""

from __future__ import annotations

import httpx

from tests.service.http_client import Start, auth, problem, read


def test_add_update_delete_over_http(start: Start) -> None:
    url = start()
    alice = auth("alice")
    body = {"text": "Alice is vegetarian.", "importance": 0.8, "metadata": {"origin": "form"}}
    added = httpx.post(f"{url}/v1/memories", json=body, headers=alice)  # the key's one user
    assert added.status_code == 201, added.text
    event = added.json()["event"]
    assert event["event"] == "ADD"
    first = event["memory_id"]
    again = httpx.post(f"{url}/v1/memories", json=body, headers=alice)
    assert again.status_code == 200 and again.json()["event"]["event"] == "NONE"
    stored = httpx.get(f"{url}/v1/memories/{first}", headers=alice).json()
    assert (stored["memory"], stored["status"], stored["importance"]) == (
        "Alice is vegetarian.",
        "active",
        0.8,
    )
    patch = {"text": "Alice is vegan.", "reason": "she said so"}
    updated = httpx.patch(f"{url}/v1/memories/{first}", json=patch, headers=alice)
    assert updated.status_code == 200, updated.text
    new = updated.json()["event"]
    assert (new["event"], new["previous_id"]) == ("UPDATE", first)
    old = httpx.get(f"{url}/v1/memories/{first}/history", headers=alice).json()
    assert (old["status"], old["superseded_by"]) == ("superseded", new["memory_id"])
    assert [h["event"] for h in old["history"]] == ["ADD", "UPDATE"]
    search = {"user_id": "alice", "query": "vegan"}
    hits = httpx.post(f"{url}/v1/memories/search", json=search, headers=alice).json()["hits"]
    assert [h["memory"]["id"] for h in hits][:1] == [new["memory_id"]]
    gone = httpx.delete(f"{url}/v1/memories/{new['memory_id']}", headers=alice)
    assert gone.status_code == 200 and gone.json()["event"]["event"] == "EXPIRE"
    expired = httpx.get(f"{url}/v1/memories/{new['memory_id']}", headers=alice).json()
    assert expired["status"] == "expired"
    erased = httpx.delete(f"{url}/v1/memories/{first}?erase=true", headers=alice)
    assert erased.status_code == 200 and erased.json()["event"]["reason"].startswith("erased")
    problem(httpx.get(f"{url}/v1/memories/{first}", headers=alice), 404)


def test_direct_writes_are_walled_and_typed(start: Start) -> None:
    url = start()
    alice, bob = auth("alice"), auth("bob")
    bobs = httpx.post(f"{url}/v1/memories", json={"text": "Bob plays chess."}, headers=bob)
    bob_id = bobs.json()["event"]["memory_id"]
    # Alice's key naming bob: 403 on every direct write.
    named = {"text": "x", "user_id": "bob"}
    problem(httpx.post(f"{url}/v1/memories", json=named, headers=alice), 403)
    problem(httpx.patch(f"{url}/v1/memories/{bob_id}", json=named, headers=alice), 403)
    problem(httpx.delete(f"{url}/v1/memories/{bob_id}?user_id=bob", headers=alice), 403)
    # Bob's id under her own user is no memory of hers: 404, and bob's memory is untouched.
    body = problem(httpx.delete(f"{url}/v1/memories/{bob_id}", headers=alice), 404)
    assert body["error"] == "UnknownMemoryError" and body["type"].endswith("not-found")
    assert f"user 'alice' has no memory '{bob_id}'" in body["detail"]
    text = {"text": "Bob plays go."}
    problem(httpx.patch(f"{url}/v1/memories/{bob_id}", json=text, headers=alice), 404)
    assert httpx.get(f"{url}/v1/memories/{bob_id}", headers=bob).json()["status"] == "active"
    # Bad bodies: 422 naming what is wrong.
    empty = problem(httpx.post(f"{url}/v1/memories", json={"text": ""}, headers=alice), 422)
    assert any(e["loc"] == "body.text" for e in empty["errors"])
    unknown = {"text": "x", "colour": "red"}
    problem(httpx.post(f"{url}/v1/memories", json=unknown, headers=alice), 422)
    high = {"text": "x", "importance": 2}
    problem(httpx.post(f"{url}/v1/memories", json=high, headers=alice), 422)
    kind = {"text": "x", "memory_type": "Nope"}
    body = problem(httpx.post(f"{url}/v1/memories", json=kind, headers=alice), 422)
    assert body["error"] == "InputError" and "memory_type must be one of" in body["detail"]
    # The admin key may use many users: it must name one.
    no_user = problem(httpx.post(f"{url}/v1/memories", json=text, headers=auth("admin")), 422)
    assert "user_id is required" in no_user["detail"]
    # A superseded memory cannot be updated to another text: 409 saying what replaced it.
    new = httpx.patch(f"{url}/v1/memories/{bob_id}", json=text, headers=bob).json()["event"]
    other = {"text": "Bob plays shogi."}
    twice = problem(httpx.patch(f"{url}/v1/memories/{bob_id}", json=other, headers=bob), 409)
    assert f"superseded by '{new['memory_id']}'" in twice["detail"]


def test_search_filters_by_category(start: Start) -> None:
    url = start()
    alice = auth("alice")
    assert read(url, store=True).status_code == 200
    found = httpx.get(f"{url}/v1/users/alice/categories", headers=alice).json()["categories"]
    held = [c for c in found if c["item_ids"]]
    assert held
    search = {"user_id": "alice", "query": "Lisbon piano cello", "category": held[0]["name"]}
    hits = httpx.post(f"{url}/v1/memories/search", json=search, headers=alice).json()["hits"]
    assert hits and {h["memory"]["id"] for h in hits} <= set(held[0]["item_ids"])
    search["category"] = "no_such_category"
    none = httpx.post(f"{url}/v1/memories/search", json=search, headers=alice)
    assert none.status_code == 200 and none.json()["hits"] == []
    search["category"] = "Not A Name"
    bad = problem(httpx.post(f"{url}/v1/memories/search", json=search, headers=alice), 422)
    assert "category must be a category name" in bad["detail"]


def test_search_min_score_cuts_and_hits_name_their_passages(start: Start) -> None:
    url = start()
    alice = auth("alice")
    assert read(url, store=True).status_code == 200
    search = {"user_id": "alice", "query": "Lisbon piano cello"}
    hits = httpx.post(f"{url}/v1/memories/search", json=search, headers=alice).json()["hits"]
    assert hits and all(0 <= h["score"]["final"] <= 1 for h in hits)
    for hit in hits:
        text, best = hit["memory"]["memory"], hit["passages"][0]
        assert 0 <= best["start"] < best["end"] <= len(text) and 0 <= best["score"] <= 1
    cut = {**search, "min_score": 1.0}
    kept = httpx.post(f"{url}/v1/memories/search", json=cut, headers=alice).json()["hits"]
    assert all(h["score"]["relevance"] >= 1.0 for h in kept) and len(kept) < len(hits)
    problem(
        httpx.post(f"{url}/v1/memories/search", json={**search, "min_score": 2}, headers=alice), 422
    )


def test_a_retried_update_with_its_idempotency_key_is_replayed(start: Start) -> None:
    url = start()
    alice = auth("alice")
    added = httpx.post(f"{url}/v1/memories", json={"text": "Alice rows."}, headers=alice)
    memory_id = added.json()["event"]["memory_id"]
    retry = {**alice, "Idempotency-Key": "patch-1"}
    text = {"text": "Alice rows and swims."}
    first = httpx.patch(f"{url}/v1/memories/{memory_id}", json=text, headers=retry)
    second = httpx.patch(f"{url}/v1/memories/{memory_id}", json=text, headers=retry)
    assert first.status_code == second.status_code == 200
    assert second.headers["idempotent-replayed"] == "true" and first.content == second.content
    # Without the key (a retry whose kept answer is gone) the same update is found applied:
    # 200, naming the version it made; another text for that old version is a conflict.
    again = httpx.patch(f"{url}/v1/memories/{memory_id}", json=text, headers=alice)
    assert again.status_code == 200, again.text
    made = first.json()["event"]["memory_id"]
    assert again.json()["event"] | {"reason": ""} == {
        **first.json()["event"],
        "event": "NONE",
        "reason": "",
    }
    assert again.json()["event"]["memory_id"] == made
    other = httpx.patch(f"{url}/v1/memories/{memory_id}", json={"text": "x y"}, headers=alice)
    assert problem(other, 409)["error"] == "ConflictError"

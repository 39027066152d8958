"""Erase over HTTP (issue 41), through a running service: ``DELETE /v1/memories/{id}?erase=true``
answers the erase ``receipt`` beside its event; ``POST /v1/memories:forget`` answers one too,
and with ``"erase": true`` erases what only that source supports (a non-boolean is a 422)."""

from __future__ import annotations

import httpx

from tests.service.http_client import Start, auth, problem


def test_delete_with_erase_answers_the_receipt(start: Start) -> None:
    url = start()
    alice = auth("alice")
    added = httpx.post(f"{url}/v1/memories", json={"text": "Alice's PIN is 4321."}, headers=alice)
    memory_id = added.json()["event"]["memory_id"]
    erased = httpx.delete(f"{url}/v1/memories/{memory_id}?erase=true", headers=alice)
    assert erased.status_code == 200, erased.text
    body = erased.json()
    assert body["event"]["event"] == "EXPIRE" and body["event"]["memory_id"] == memory_id
    receipt = body["receipt"]
    assert (receipt["target"], receipt["erased"]) == (f"memory:{memory_id}", [memory_id])
    assert receipt["removed"]["memories"] == 1 and receipt["removed"]["history"] == 1
    assert "sqlite: FTS5 optimize (the text index rewritten without it)" in receipt["file_steps"]
    problem(httpx.get(f"{url}/v1/memories/{memory_id}", headers=alice), 404)


def test_forget_answers_a_receipt_and_erases_when_asked(start: Start) -> None:
    url = start()
    alice = auth("alice")
    for text in ("Alice likes tea.", "Alice likes chess."):
        body = {"text": text, "session_id": "s1"}
        assert httpx.post(f"{url}/v1/memories", json=body, headers=alice).status_code == 201
    forget = {"user_id": "alice", "session_id": "s1"}
    plain = httpx.post(f"{url}/v1/memories:forget", json=forget, headers=alice).json()
    assert len(plain["receipt"]["expired"]) == 2 and plain["receipt"]["erased"] == []
    bad = httpx.post(f"{url}/v1/memories:forget", json={**forget, "erase": "yes"}, headers=alice)
    assert "erase" in problem(bad, 422)["detail"]
    erased = httpx.post(f"{url}/v1/memories:forget", json={**forget, "erase": True}, headers=alice)
    answer = erased.json()
    assert sorted(answer["receipt"]["erased"]) == sorted(plain["receipt"]["expired"])
    assert [e["event"] for e in answer["events"]] == ["EXPIRE", "EXPIRE"]
    for memory_id in answer["receipt"]["erased"]:
        problem(httpx.get(f"{url}/v1/memories/{memory_id}", headers=alice), 404)

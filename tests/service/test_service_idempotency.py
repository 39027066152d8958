"""``Idempotency-Key`` over HTTP (issue 41): a key names one request (its method, path, query
and body: anything else is 422, never another request's answer), a retry that finds its first
worker dead after the commit is answered as done, and an erase withdraws the kept answers that
hold its text, leaving no copy in the state file or its write-ahead log."""

from __future__ import annotations

import json
from pathlib import Path

import httpx
import pytest

from memreader.service.idempotency import KeyedRequest
from memreader.service.shared import open_shared_state
from memreader.service.shared.tables import WORKERS
from memreader.stores import open_store
from memreader.testing import HashEmbedder
from tests.service.http_client import Start, auth, problem, read

pytestmark = pytest.mark.timeout(120)


def _add(url: str, text: str, who: str = "alice") -> str:
    added = httpx.post(f"{url}/v1/memories", json={"text": text}, headers=auth(who))
    assert added.status_code == 201, added.text
    return str(added.json()["event"]["memory_id"])


def _status(url: str, memory_id: str, who: str = "alice") -> str:
    return str(httpx.get(f"{url}/v1/memories/{memory_id}", headers=auth(who)).json()["status"])


def test_a_key_names_one_method_path_query_and_body(start: Start) -> None:
    url = start()
    x, y = _add(url, "Alice rows."), _add(url, "Alice swims.")
    keyed = {**auth("alice"), "Idempotency-Key": "k-1"}
    assert httpx.delete(f"{url}/v1/memories/{x}", headers=keyed).status_code == 200
    # The same key on another memory, with ?erase=true, or as a PATCH: 422, Y untouched.
    for reused in (
        httpx.delete(f"{url}/v1/memories/{y}?erase=true", headers=keyed),
        httpx.delete(f"{url}/v1/memories/{x}?erase=true", headers=keyed),
        httpx.patch(f"{url}/v1/memories/{y}", json={"text": "Alice dives."}, headers=keyed),
        httpx.post(f"{url}/v1/memories", json={"text": "Alice runs."}, headers=keyed),
    ):
        assert problem(reused, 422)["type"].endswith("idempotency-key-reused")
    assert _status(url, y) == "active"
    again = httpx.delete(f"{url}/v1/memories/{x}", headers=keyed)  # the same request: replayed
    assert again.status_code == 200 and again.headers["idempotent-replayed"] == "true"
    # An admin key's DELETE naming another user with the same key is another request.
    bobs = _add(url, "Bob plays chess.", "bob")
    admin = {**auth("admin"), "Idempotency-Key": "k-2"}
    first = httpx.delete(f"{url}/v1/memories/{x}?user_id=alice&erase=true", headers=admin)
    assert first.status_code == 200, first.text
    other = httpx.delete(f"{url}/v1/memories/{bobs}?user_id=bob&erase=true", headers=admin)
    problem(other, 422)
    assert _status(url, bobs, "bob") == "active"
    # The query's order does not make another request.
    swapped = httpx.delete(f"{url}/v1/memories/{x}?erase=true&user_id=alice", headers=admin)
    assert swapped.status_code == 200 and swapped.headers["idempotent-replayed"] == "true"


def test_a_retry_after_its_worker_died_past_the_commit_is_answered_as_done(
    start: Start, tmp_path: Path
) -> None:
    url = start()
    memory_id = _add(url, "Alice rows.")
    body = json.dumps({"text": "Alice rows and swims."}).encode()
    path = f"/v1/memories/{memory_id}"
    # Another worker took the request, committed the update and died before answering.
    state_url = f"sqlite:///{tmp_path / 'memories.db.service-state'}"
    dead = open_shared_state(state_url)
    dead._stop.set()  # its heartbeat stops: it crashed
    digest = KeyedRequest("PATCH", path, "", body).digest()
    assert dead.idem_begin(("alice-app", "request", "p-1"), digest, 3600, 100).kind == "new"
    with open_store(f"sqlite:///{tmp_path / 'memories.db'}", embedder=HashEmbedder()) as store:
        made = store.update(memory_id, "Alice rows and swims.", user_id="alice")
    with dead.transaction() as run:
        run(f"UPDATE {WORKERS} SET seen = 0 WHERE id = ?", (dead.worker,))
    headers = {**auth("alice"), "Idempotency-Key": "p-1", "Content-Type": "application/json"}
    retry = httpx.patch(f"{url}{path}", content=body, headers=headers)
    assert retry.status_code == 200, retry.text
    event = retry.json()["event"]
    assert (event["event"], event["memory_id"], event["previous_id"]) == (
        "NONE",
        made.memory_id,
        memory_id,
    )


def test_an_erase_withdraws_the_kept_answers_holding_its_text(start: Start, tmp_path: Path) -> None:
    url = start()
    keyed = {"Idempotency-Key": "read-1"}
    first = read(url, store=True, headers=keyed)
    assert first.status_code == 200 and "cello" in first.text
    held = [e["memory_id"] for e in first.json()["events"] if "cello" in _text(url, e)]
    assert held
    for memory_id in held:
        erased = httpx.delete(f"{url}/v1/memories/{memory_id}?erase=true", headers=auth("alice"))
        assert erased.status_code == 200, erased.text
    retry = read(url, store=True, headers=keyed)
    assert problem(retry, 410)["type"].endswith("answer-withdrawn")
    assert "cello" not in retry.text
    # No copy in the state file, nor in its write-ahead log.
    state = tmp_path / "memories.db.service-state"
    for file in (state, Path(f"{state}-wal")):
        if file.exists():
            assert b"cello" not in file.read_bytes(), file


def _text(url: str, event: dict[str, str]) -> str:
    found = httpx.get(f"{url}/v1/memories/{event['memory_id']}", headers=auth("alice"))
    return str(found.json()["memory"])

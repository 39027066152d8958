"""The service's background ``maintain`` (``maintain_every_s``): off by default, one worker at
a time under the shared lease, and running on its own in a live service."""

from __future__ import annotations

import asyncio
import time
from datetime import datetime, timedelta, timezone
from pathlib import Path

import httpx
import pytest

from memreader.errors import DeadlineExceeded
from memreader.factory import MemReaderConfigFactory
from memreader.service import ServiceConfig, ServiceSettings
from memreader.service.maintenance import LEASE_KEY, LeaseDeadline
from memreader.service.shared.tables import WORKERS
from memreader.service.state import ServiceState
from memreader.stores import open_store
from memreader.testing import HashEmbedder
from tests.common import HASH_EMBEDDER
from tests.service.http_client import Start, auth, problem

OLD = datetime.now(timezone.utc) - timedelta(days=40)


def _store_with_an_old_expiry(path: Path) -> str:
    url = f"sqlite:///{path}"
    with open_store(url, embedder=HashEmbedder()) as store:
        kept = store.add_memory("Ana keeps bees.", user_id="ana", now=OLD)
        gone = store.add_memory("Ana rents a flat.", user_id="ana", now=OLD)
        store.delete(gone.memory_id, user_id="ana", now=OLD)
        store.pin([kept.memory_id], user_id="ana")
    return url


def _rows(url: str) -> int:
    with open_store(url, text_only=True) as store:
        return len(store.search("Ana", user_id="ana", k=10, mode="text", include_inactive=True))


def _state(tmp_path: Path, url: str, **settings: float) -> ServiceState:
    factory = MemReaderConfigFactory.from_dict(
        {"config": {"embedder": HASH_EMBEDDER, "store": url, "lifecycle": {"max_active": 10}}}
    )
    config = ServiceConfig(factory, ServiceSettings(**settings), base_dir=str(tmp_path))
    return ServiceState(config)


def test_one_worker_at_a_time_runs_maintain(tmp_path: Path) -> None:
    url = _store_with_an_old_expiry(tmp_path / "m.db")
    state = _state(tmp_path, url, maintain_every_s=3600)
    try:
        task = state.maintenance()
        assert task is not None and task.every_s == 3600
        other, _ = state.shared.slot_take(LEASE_KEY, 1)  # another worker holds the lease
        assert other is not None
        assert asyncio.run(task.run_once()) is None
        assert _rows(url) == 2  # nothing purged while the other one holds it
        state.shared.slot_free(other)
        report = asyncio.run(task.run_once())
        assert report is not None and report.purged == {"ana": 1}
        assert _rows(url) == 1
        assert state.store.lifecycle is not None and state.store.lifecycle.max_active == 10
        assert state.shared.slots_held(LEASE_KEY) == 0  # the lease was given back
    finally:
        state.close()


def test_a_maintainer_paused_past_its_heartbeat_stops_once_its_lease_is_taken(
    tmp_path: Path,
) -> None:
    url = _store_with_an_old_expiry(tmp_path / "m.db")
    paused, other = (_state(tmp_path, url, maintain_every_s=3600) for _ in range(2))
    try:
        token = paused.shared.lease_take(LEASE_KEY)
        assert token is not None
        lease = LeaseDeadline(paused.shared, token, every_s=0.0)
        task = other.maintenance()
        assert task is not None and asyncio.run(task.run_once()) is None  # held: skipped
        # The holder is paused (no beats) past its heartbeat: the other worker takes over.
        paused.shared._stop.set()
        with paused.shared.transaction() as run:
            run(f"UPDATE {WORKERS} SET seen = 0 WHERE id = ?", (paused.shared.worker,))
        report = asyncio.run(task.run_once())
        assert report is not None and report.purged == {"ana": 1}
        # It resumes: its run stops at its first check, before doing anything.
        paused.shared.beat()
        with pytest.raises(DeadlineExceeded, match="whose lease was lost, was cancelled"):
            paused.store.maintain(deadline=lease)
        assert not paused.shared.lease_held(token)  # its token is useless for good
    finally:
        paused.close()
        other.close()


def test_background_maintain_is_off_by_default(tmp_path: Path) -> None:
    state = _state(tmp_path, f"sqlite:///{tmp_path / 'm.db'}")
    try:
        assert state.maintenance() is None
    finally:
        state.close()


def test_a_live_service_maintains_on_its_own(tmp_path: Path, start: Start) -> None:
    url = _store_with_an_old_expiry(tmp_path / "memories.db")
    start(maintain_every_s=0.2)
    deadline = time.monotonic() + 30
    while _rows(url) != 1 and time.monotonic() < deadline:
        time.sleep(0.2)
    assert _rows(url) == 1


def test_pins_and_restores_over_http(start: Start, tmp_path: Path) -> None:
    url = start(config={"lifecycle": {"max_active": 5}})  # watermark 4, target 3
    alice = auth("alice")
    ids = [
        httpx.post(
            f"{url}/v1/memories", json={"text": f"Alice fact {i}: tram {i}"}, headers=alice
        ).json()["event"]["memory_id"]
        for i in range(2)
    ]
    pinned = httpx.post(
        f"{url}/v1/memories:pin", json={"user_id": "alice", "ids": ids[:1]}, headers=alice
    )
    assert pinned.status_code == 200 and pinned.json() == {"changed": 1, "pinned": ids[:1]}
    for i in range(2, 5):  # the 5th write passes the watermark: down to 3, the pinned one kept
        httpx.post(f"{url}/v1/memories", json={"text": f"Alice fact {i}: bus {i}"}, headers=alice)
    with open_store(f"sqlite:///{tmp_path}/memories.db", text_only=True) as store:
        states = {i: store.get(i, user_id="alice").status for i in ids}  # type: ignore[union-attr]
    assert states == {ids[0]: "active", ids[1]: "expired"}
    back = httpx.post(f"{url}/v1/memories/{ids[1]}:restore?user_id=alice", headers=alice)
    assert back.status_code == 200 and back.json()["event"]["event"] == "ADD"
    again = httpx.post(f"{url}/v1/memories/{ids[1]}:restore?user_id=alice", headers=alice)
    assert "only an expired memory is restored" in problem(again, 422)["detail"]
    unknown = {"user_id": "alice", "ids": ["nope"]}
    problem(httpx.post(f"{url}/v1/memories:pin", json=unknown, headers=alice), 404)
    other = {"user_id": "bob", "ids": ids[:1]}
    problem(httpx.post(f"{url}/v1/memories:pin", json=other, headers=alice), 403)

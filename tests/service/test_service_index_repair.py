"""The service's index repair at start-up (``repair_index_on_start``, on by default, even
with periodic ``maintain`` off): one worker at a time under the maintain lease, the others
skipping it; its outcome in ``/metrics``; and a live service repairing on its own."""

from __future__ import annotations

import asyncio
import time
from pathlib import Path

import httpx

from memreader.factory import MemReaderConfigFactory
from memreader.service import ServiceConfig, ServiceSettings
from memreader.service.maintenance import LEASE_KEY
from memreader.service.state import ServiceState
from memreader.stores import open_store
from memreader.testing import HashEmbedder
from tests.common import HASH_EMBEDDER
from tests.service.http_client import Start


def _bare_store(path: Path, n: int = 3) -> str:
    """A store of ``n`` memories of ana written text only: none has a vector."""
    url = f"sqlite:///{path}"
    with open_store(url, text_only=True) as store:
        for i in range(n):
            store.add_memory(f"Ana's fact {i}: the tram {i}", user_id="ana")
    return url


def _missing(url: str) -> int:
    with open_store(url, embedder=HashEmbedder()) as store:
        return store.index_health().missing


def _state(tmp_path: Path, url: str, **settings: object) -> ServiceState:
    factory = MemReaderConfigFactory.from_dict(
        {"config": {"embedder": HASH_EMBEDDER, "store": url}}
    )
    config = ServiceConfig(factory, ServiceSettings(**settings), base_dir=str(tmp_path))
    return ServiceState(config)


def test_one_worker_repairs_the_index_and_the_other_skips_it(tmp_path: Path) -> None:
    url = _bare_store(tmp_path / "m.db")
    first, second = (_state(tmp_path, url) for _ in range(2))
    try:
        first_task, second_task = first.index_repair(), second.index_repair()
        assert first_task is not None and second_task is not None
        held = first.shared.lease_take(LEASE_KEY)  # the first worker holds the lease
        assert held is not None
        assert asyncio.run(second_task.run_once()) == "skipped"
        assert _missing(url) == 3  # nothing repaired beside the holder
        first.shared.slot_free(held)
        assert asyncio.run(second_task.run_once()) == "repaired"
        assert _missing(url) == 0
        assert asyncio.run(first_task.run_once()) == "ok"  # nothing left for the other
        assert second.shared.slots_held(LEASE_KEY) == 0  # the lease was given back
        metrics = second.metrics.render().decode()
        assert 'memreader_index_checks_total{outcome="skipped"} 1.0' in metrics
        assert 'memreader_index_checks_total{outcome="repaired"} 1.0' in metrics
        assert "memreader_index_repaired_total 3.0" in metrics
        assert 'memreader_index_unindexed{cause="missing"} 0.0' in metrics
    finally:
        first.close()
        second.close()


def test_the_start_up_repair_can_be_switched_off(tmp_path: Path) -> None:
    state = _state(tmp_path, f"sqlite:///{tmp_path / 'm.db'}", repair_index_on_start=False)
    try:
        assert state.index_repair() is None
    finally:
        state.close()


def test_a_live_service_repairs_the_index_on_start_with_maintain_off(
    tmp_path: Path, start: Start
) -> None:
    url = _bare_store(tmp_path / "memories.db")
    base = start()  # maintain_every_s: off
    deadline = time.monotonic() + 30
    while _missing(url) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert _missing(url) == 0
    text = ""
    while "repaired" not in text and time.monotonic() < deadline:
        text = httpx.get(f"{base}/metrics").text  # the outcome is counted after the recount
    assert 'memreader_index_checks_total{outcome="repaired"} 1.0' in text

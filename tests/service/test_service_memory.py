"""The service holds one :class:`~memreader.Memory` (its reader, store, keeper and budget wired
there, not here), calls it within each request's deadline (``Memory.within``: a read answered
past it is 504, a write that committed is answered), takes who calls, the owner, the deadline
and the memory as FastAPI dependencies (the OpenAPI schema shows only what a client sends),
and ``memreader serve`` without a store serves the data folder's, which ``Memory()`` fills."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
from fastapi import FastAPI

from memreader import Memory
from memreader.factory import MemReaderConfigFactory
from memreader.service import ServiceConfig, ServiceSettings, create_app
from memreader.service.state import ServiceState
from tests.common import HASH_EMBEDDER, over_after
from tests.service.http_client import auth, key_entries, problem
from tests.service_server import free_port, running


@pytest.fixture
def app(tmp_path: Path) -> FastAPI:
    config = {"embedder": HASH_EMBEDDER, "store": "sqlite:///m.db", "lifecycle": {"max_active": 50}}
    factory = MemReaderConfigFactory.from_dict({"config": config})
    settings = ServiceSettings(keys=key_entries())
    return create_app(ServiceConfig(factory, settings, base_dir=str(tmp_path)))


def _state(app: FastAPI) -> ServiceState:
    state: ServiceState = app.state.service
    return state


def test_the_service_holds_one_memory_wired_by_memory(app: FastAPI) -> None:
    state = _state(app)
    memory = state.memory
    assert isinstance(memory, Memory) and memory.reader is state.reader
    assert state.store is memory.store and state.memory is memory  # opened once
    assert memory.store.lifecycle is not None and memory.store.lifecycle.max_active == 50


def test_a_read_answered_past_the_request_deadline_is_504(app: FastAPI) -> None:
    memory = _state(app).memory
    added = memory.add_memory("Alice plays the cello.", user_id="alice")
    ran = over_after(memory.store, "search")
    body = {"user_id": "alice", "query": "cello", "mode": "text"}
    with running(app) as url:
        late = httpx.post(f"{url}/v1/memories/search", json=body, headers=auth("alice"))
        detail = problem(late, 504)["detail"]
        assert ran == [1] and "the search" in detail and "late answer was dropped" in detail
        # The lookup of one memory too (its use was recorded, its answer dropped).
        ran = over_after(memory.store, "get")
        lookup = httpx.get(
            f"{url}/v1/memories/{added.memory_id}",
            params={"user_id": "alice"},
            headers=auth("alice"),
        )
        assert "the lookup" in problem(lookup, 504)["detail"] and ran == [1]


def test_a_write_committed_past_the_request_deadline_is_answered(app: FastAPI) -> None:
    memory = _state(app).memory
    ran = over_after(memory.store, "add_memory")
    with running(app) as url:
        body = {"user_id": "alice", "text": "Alice is vegetarian."}
        added = httpx.post(f"{url}/v1/memories", json=body, headers=auth("alice"))
        assert added.status_code == 201, added.text
        assert ran == [1]
        memory_id = added.json()["event"]["memory_id"]
        found = httpx.get(
            f"{url}/v1/memories/{memory_id}", params={"user_id": "alice"}, headers=auth("alice")
        )
        assert found.status_code == 200 and found.json()["memory"] == "Alice is vegetarian."


def test_the_schema_shows_what_a_client_sends_not_the_dependencies(app: FastAPI) -> None:
    paths = app.openapi()["paths"]

    def params(path: str, method: str) -> list[tuple[str, str]]:
        return [(p["in"], p["name"]) for p in paths[path][method].get("parameters", [])]

    assert params("/v1/memories/{memory_id}", "get") == [
        ("path", "memory_id"),
        ("query", "user_id"),
        ("query", "agent_id"),
        ("query", "task_id"),
    ]
    assert params("/v1/users/{user_id}/categories", "get") == [("path", "user_id")]
    assert params("/v1/memories/search", "post") == []
    body = paths["/v1/memories/search"]["post"]["requestBody"]["content"]["application/json"]
    assert body["schema"] == {"$ref": "#/components/schemas/SearchRequest"}
    for path, operations in paths.items():
        for method, operation in operations.items():
            names = {p["name"] for p in operation.get("parameters", [])}
            assert not names & {"request", "state", "principal", "deadline", "memory", "body"}, (
                method,
                path,
            )


def test_the_owner_and_the_store_are_checked_before_any_work(tmp_path: Path) -> None:
    # No store configured: a store route is 409; another key's user is 403 before that.
    factory = MemReaderConfigFactory.from_dict({"config": {"embedder": None}})
    settings = ServiceSettings(keys=key_entries())
    app = create_app(ServiceConfig(factory, settings, base_dir=str(tmp_path)))
    with running(app) as url:
        body = {"user_id": "alice", "query": "x"}
        problem(httpx.post(f"{url}/v1/memories/search", json=body, headers=auth("alice")), 409)
        forbidden = httpx.get(f"{url}/v1/memories/m1?user_id=bob", headers=auth("alice"))
        assert problem(forbidden, 403)["type"].endswith("forbidden-user")
        # A key of one user may leave user_id out; the admin key may not.
        assert httpx.get(f"{url}/v1/memories/m1", headers=auth("alice")).status_code == 409
        vague = httpx.get(f"{url}/v1/memories/m1", headers=auth("admin"))
        assert "user_id is required" in problem(vague, 422)["detail"]


@pytest.fixture
def served_home(tmp_path: Path) -> Iterator[tuple[str, dict[str, str]]]:
    """``memreader serve`` of a config without a store, with ``MEMREADER_HOME`` in
    ``tmp_path``; its URL and environment."""
    config = tmp_path / "service.yaml"
    config.write_text("config:\n  embedder: {backend: hash}\nservice: {ui: false}\n")
    env = {**os.environ, "MEMREADER_HOME": str(tmp_path / "home"), "HF_HUB_OFFLINE": "1"}
    port = free_port()
    argv = [sys.executable, "-m", "memreader.cli", "serve", "--config", str(config)]
    argv += ["--port", str(port), "--workers", "1", "--log-level", "warning"]
    log = (tmp_path / "serve.log").open("w")
    server = subprocess.Popen(argv, env=env, stdout=log, stderr=subprocess.STDOUT)
    url = f"http://127.0.0.1:{port}"
    try:
        for _ in range(600):  # bounded: ~60 s of polls
            if server.poll() is not None:
                raise AssertionError((tmp_path / "serve.log").read_text())
            try:
                if httpx.get(f"{url}/healthz", timeout=1).status_code == 200:
                    break
            except httpx.TransportError:
                pass
            time.sleep(0.1)
        yield url, env
    finally:
        server.terminate()
        server.wait(timeout=30)
        log.close()


def test_serve_without_a_store_serves_the_home_memory_fills(
    served_home: tuple[str, dict[str, str]], tmp_path: Path
) -> None:
    url, env = served_home
    # What Python adds to the default store (the same MEMREADER_HOME) the service finds.
    script = (
        "from memreader import Memory\n"
        "with Memory({'config': {'embedder': {'backend': 'hash'}}}) as m:\n"
        "    m.add_memory('Emily lives in Lisbon.', user_id='emily')\n"
    )
    subprocess.run([sys.executable, "-c", script], env=env, check=True, timeout=120)
    assert (tmp_path / "home" / "memories.db").is_file()
    body = {"user_id": "emily", "query": "Lisbon", "mode": "text"}
    hits = httpx.post(f"{url}/v1/memories/search", json=body, timeout=30).json()["hits"]
    assert [hit["memory"]["memory"] for hit in hits] == ["Emily lives in Lisbon."]

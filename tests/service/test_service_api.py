"""The HTTP service through a real uvicorn server on 127.0.0.1 and a real HTTP client (httpx):
every endpoint, problem documents, limits, keys that wall off users, idempotent retries,
NDJSON streaming and metrics."""

from __future__ import annotations

import json
import re
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from memreader.errors import ConfigError
from memreader.factory import MemReaderConfigFactory
from memreader.service import ServiceConfig, ServiceSettings
from tests.fine_script import scripted_responder
from tests.llm_server import LLMTestServer, llm_server
from tests.service.http_client import CHAT, Start, auth, problem, read, wait_for_job

__all__ = ["llm_server"]

pytestmark = pytest.mark.timeout(120)


def test_read_store_search_get_history(start: Start) -> None:
    url = start()
    answer = read(url, store=True)
    assert answer.status_code == 200, answer.text
    data = answer.json()
    [items] = data["items"]
    assert items and data["report"]["windows"][0]["status"] == "ok"
    for item in items:
        assert len(item["metadata"]["embedding"]) > 0
        for source in item["metadata"]["sources"]:
            start_, end = source["span"]
            assert CHAT[source["message_index"]]["content"][start_:end] == source["content"]
    assert [e["event"] for e in data["events"]] == ["ADD"] * len(items)
    again = read(url, store=True).json()
    assert [e["event"] for e in again["events"]] == ["NONE"] * len(items)

    found = httpx.post(
        f"{url}/v1/memories/search",
        json={"user_id": "alice", "query": "piano lessons"},
        headers=auth("alice"),
    ).json()["hits"]
    assert found[0]["memory"]["id"] == items[0]["id"]
    assert set(found[0]["score"]) == {
        "final",
        "relevance",
        "fused",
        "similarity",
        "text_rank",
        "importance",
        "decay",
        "passage",
        "heat",
    }
    assert found[0]["passages"] and 0 <= found[0]["score"]["final"] <= 1
    # A hit is the stored memory without its vector (the item otherwise whole).
    shown = found[0]["memory"]["item"]
    assert "embedding" not in shown["metadata"] and shown["metadata"]["embedding_model"]
    assert {k: v for k, v in items[0].items() if k != "metadata"} == {
        k: v for k, v in shown.items() if k != "metadata"
    }
    memory_id = items[0]["id"]
    got = httpx.get(f"{url}/v1/memories/{memory_id}", headers=auth("alice")).json()
    assert got["status"] == "active" and got["item"]["metadata"]["sources"]
    assert "embedding" not in got["item"]["metadata"]
    history = httpx.get(f"{url}/v1/memories/{memory_id}/history", headers=auth("alice")).json()
    assert history["history"][0]["event"] == "ADD"

    forgotten = httpx.post(
        f"{url}/v1/memories:forget",
        json={"user_id": "alice", "session_id": "s1"},
        headers=auth("alice"),
    ).json()["events"]
    assert [e["event"] for e in forgotten] == ["EXPIRE"] * len(items)
    after = httpx.get(f"{url}/v1/memories/{memory_id}", headers=auth("alice")).json()
    assert after["status"] == "expired"


def test_keys_wall_off_users(start: Start) -> None:
    url = start()
    bobs = read(url, "bob", store=True).json()["items"][0]
    bob_id = bobs[0]["id"]
    alice = auth("alice")
    # Alice's key names bob: 403, whatever the route.
    assert problem(read(url, "bob", headers=alice), 403)["type"].endswith("forbidden-user")
    search = {"user_id": "bob", "query": "piano"}
    problem(httpx.post(f"{url}/v1/memories/search", json=search, headers=alice), 403)
    problem(httpx.get(f"{url}/v1/memories/{bob_id}?user_id=bob", headers=alice), 403)
    problem(httpx.get(f"{url}/v1/memories/{bob_id}/history?user_id=bob", headers=alice), 403)
    forget = {"user_id": "bob", "session_id": "s1"}
    problem(httpx.post(f"{url}/v1/memories:forget", json=forget, headers=alice), 403)
    # Guessing bob's memory id under her own user finds nothing.
    problem(httpx.get(f"{url}/v1/memories/{bob_id}", headers=alice), 404)
    # Refining bob's items with alice's key: 403 before any work.
    refine = {"items": bobs}
    problem(httpx.post(f"{url}/v1/refine", json=refine, headers=alice), 403)
    # No key, or a wrong one: 401 with a challenge.
    missing = httpx.post(f"{url}/v1/memories/search", json=search)
    assert problem(missing, 401) and missing.headers["www-authenticate"].startswith("Bearer")
    wrong = {"Authorization": "Bearer mr_guess"}
    problem(httpx.post(f"{url}/v1/memories/search", json=search, headers=wrong), 401)
    # The admin key sees bob's memory.
    admin = httpx.get(f"{url}/v1/memories/{bob_id}?user_id=bob", headers=auth("admin"))
    assert admin.status_code == 200 and admin.json()["user_id"] == "bob"


def test_bad_input_is_a_problem_document(start: Start) -> None:
    url = start(max_request_bytes=4096)
    headers = {**auth("alice"), "content-type": "application/json"}
    malformed = httpx.post(f"{url}/v1/read", content=b"{bad", headers=headers)
    assert problem(malformed, 400)["type"].endswith("malformed-json")
    scenes = [[{"role": "user", "content": "hi"}, {"role": "wizard", "content": "x"}]]
    bad_role = httpx.post(
        f"{url}/v1/read",
        headers=auth("alice"),
        json={"scenes": scenes, "info": {"user_id": "alice", "session_id": "s"}},
    )
    body = problem(bad_role, 422)
    assert (body["error"], body["scene_index"], body["message_index"]) == ("UnknownRoleError", 0, 1)
    no_info = httpx.post(f"{url}/v1/read", json={"scenes": [CHAT]}, headers=auth("alice"))
    assert any(e["loc"] == "body.info" for e in problem(no_info, 422)["errors"])
    bad_mode = read(url, mode="slow")
    problem(bad_mode, 422)
    no_session = httpx.post(
        f"{url}/v1/read",
        headers=auth("alice"),
        json={"scenes": [CHAT], "info": {"user_id": "alice"}},
    )
    assert problem(no_session, 422)["error"] == "InvalidInfoError"
    # Over max_request_bytes: 413, whether the length is declared or the body is chunked.
    big = json.dumps({"scenes": [[{"role": "user", "content": "x" * 5000}]]}).encode()
    problem(httpx.post(f"{url}/v1/read", content=big, headers=headers), 413)

    def chunks() -> Iterator[bytes]:
        for _ in range(10):
            yield b" " * 1000

    problem(httpx.post(f"{url}/v1/read", content=chunks(), headers=headers), 413)
    problem(httpx.get(f"{url}/v1/nothing-here"), 404)
    fine = read(url, mode="fine")
    assert problem(fine, 422)["error"] == "LLMRequiredError"


def test_per_key_limit_and_deadline(start: Start, llm_server: LLMTestServer) -> None:
    llm_server.responder = scripted_responder()
    llm_server.latency = 1.5
    llm = {"backend": "openai", "model": "m", "base_url": llm_server.url, "api_key": "sk-x"}
    url = start(config={"llm": llm}, max_concurrent_per_key=1, request_timeout_s=10)
    results: dict[str, httpx.Response] = {}
    slow = threading.Thread(target=lambda: results.setdefault("slow", read(url, mode="fine")))
    slow.start()
    try:
        for _ in range(500):  # until the slow read is at the LLM, holding alice's slot
            if llm_server.requests:
                break
            time.sleep(0.01)
        busy = read(url, include_embeddings=False)
        assert problem(busy, 429)["type"].endswith("too-many-requests")
        assert busy.headers["retry-after"] == "1"
        # Another key is not held back by alice's.
        assert read(url, "bob").status_code == 200
    finally:
        slow.join(60)
    assert results["slow"].status_code == 200, results["slow"].text
    metrics = httpx.get(f"{url}/metrics").text
    assert 'memreader_llm_calls_total{slot="llm"}' in metrics
    assert 'memreader_http_requests_total{method="POST",route="/v1/read",status="429"}' in metrics
    assert 'memreader_windows_total{mode="fine",status="ok"}' in metrics

    quick = start(config={"llm": llm}, request_timeout_s=0.5)
    late = read(quick, mode="fine")
    assert problem(late, 504)["type"].endswith("deadline")


def test_idempotent_retries_write_once(start: Start) -> None:
    url = start()
    retry = {"Idempotency-Key": "order-17"}
    first = read(url, store=True, headers=retry)
    second = read(url, store=True, headers=retry)
    assert first.status_code == second.status_code == 200
    assert second.headers["idempotent-replayed"] == "true"
    assert first.content == second.content
    assert {e["event"] for e in first.json()["events"]} == {"ADD"}
    other = read(url, store=True, headers=retry, custom_tags=["changed"])
    assert problem(other, 422)["type"].endswith("idempotency-key-reused")
    # The same key from another API key is another request.
    bob = read(url, "bob", store=True, headers=retry)
    assert bob.status_code == 200 and "idempotent-replayed" not in bob.headers


def test_ndjson_streams_one_scene_per_line(start: Start) -> None:
    url = start()
    scenes = [CHAT, [{"role": "wizard", "content": "x"}], CHAT[:1]]
    lines = []
    with httpx.stream(
        "POST",
        f"{url}/v1/read",
        headers={**auth("alice"), "Accept": "application/x-ndjson"},
        json={
            "scenes": scenes,
            "info": {"user_id": "alice", "session_id": "s"},
            "include_embeddings": False,
            "store": True,
        },
    ) as response:
        assert response.headers["content-type"].startswith("application/x-ndjson")
        lines = [json.loads(line) for line in response.iter_lines() if line]
    assert [line.get("scene") for line in lines[:3]] == [0, 1, 2]
    assert lines[1]["problem"]["status"] == 422
    assert all(s["scene_index"] == 2 for i in lines[2]["items"] for s in i["metadata"]["sources"])
    assert lines[-1]["done"] is True and lines[-1]["events"]


def test_jobs_run_report_progress_and_cancel(start: Start, tmp_path: Path) -> None:
    data = tmp_path / "data"
    data.mkdir()
    for n in range(3):
        (data / f"chat{n}.json").write_text(json.dumps([CHAT]))
    url = start(jobs={"input_roots": ["data"]})
    spec = {"inputs": [{"path": "."}]}
    started = httpx.post(f"{url}/v1/jobs", json=spec, headers=auth("alice"))
    assert started.status_code == 202, started.text
    job_id = started.json()["id"]
    job = wait_for_job(url, job_id, "alice")
    assert job["status"] == "succeeded", job
    progress = job["progress"]
    assert (progress["inputs_total"], progress["inputs_done"]) == (3, 3)
    assert progress["items"] >= 3 and progress["windows"] >= 3
    hits = httpx.post(
        f"{url}/v1/memories/search",
        json={"user_id": "alice", "query": "cello"},
        headers=auth("alice"),
    ).json()["hits"]
    assert hits and hits[0]["memory"]["user_id"] == "alice"
    # Bob cannot see alice's job; paths outside the root and other users are refused.
    problem(httpx.get(f"{url}/v1/jobs/{job_id}", headers=auth("bob")), 404)
    outside = {"inputs": [{"path": "../secrets"}]}
    problem(httpx.post(f"{url}/v1/jobs", json=outside, headers=auth("alice")), 403)
    other = {"inputs": [{"path": ".", "user_id": {"from": "constant", "value": "bob"}}]}
    problem(httpx.post(f"{url}/v1/jobs", json=other, headers=auth("alice")), 403)
    by_field = {"inputs": [{"path": ".", "user_id": {"from": "field", "field": "u"}}]}
    problem(httpx.post(f"{url}/v1/jobs", json=by_field, headers=auth("alice")), 403)


def test_job_cancel(start: Start, tmp_path: Path) -> None:
    data = tmp_path / "data"
    data.mkdir()
    for n in range(40):
        (data / f"chat{n:02d}.json").write_text(json.dumps([CHAT] * 20))
    url = start(jobs={"input_roots": ["data"]})
    job_id = httpx.post(
        f"{url}/v1/jobs",
        json={"inputs": [{"path": "."}], "scenes_per_call": 2},
        headers=auth("alice"),
    ).json()["id"]
    assert (
        httpx.post(
            f"{url}/v1/jobs", json={"inputs": [{"path": "."}]}, headers=auth("alice")
        ).status_code
        == 429
    )
    cancelled = httpx.delete(f"{url}/v1/jobs/{job_id}", headers=auth("alice"))
    assert cancelled.status_code == 202
    job = wait_for_job(url, job_id, "alice")
    assert job["status"] == "cancelled", job
    assert job["progress"]["inputs_done"] < 40


def test_content_over_http_cannot_name_local_files(start: Start, tmp_path: Path) -> None:
    secret = tmp_path / "secret.txt"
    secret.write_text("the launch code is 0000")
    url = start(config={"allow_local_paths": True})
    answer = read(url, type="doc", scenes=[str(secret)])
    assert answer.status_code == 200, answer.text
    texts = [item["memory"] for item in answer.json()["items"][0]]
    assert not any("launch code" in text for text in texts)
    part = {"type": "file", "file": {"path": str(secret)}}
    refused = read(url, type="doc", scenes=[part])
    assert problem(refused, 422)["error"] == "DocumentError"


def test_health_openapi_and_home(start: Start) -> None:
    url = start()
    assert httpx.get(f"{url}/healthz").json()["status"] == "ok"
    paths = httpx.get(f"{url}/openapi.json").json()["paths"]
    assert {"/v1/read", "/v1/memories/search", "/v1/memories:forget", "/v1/jobs"} <= set(paths)
    assert httpx.get(f"{url}/").headers["location"] == "/ui/"
    page = httpx.get(f"{url}/ui/")
    assert page.status_code == 200 and "<html" in page.text.lower()
    assert "script-src" not in page.headers["content-security-policy"]
    assert page.headers["content-security-policy"].startswith("default-src 'self'")


def test_no_keys_refuses_public_address() -> None:
    config = ServiceConfig(MemReaderConfigFactory(config={"embedder": None}))
    config.check_listen("127.0.0.1")
    with pytest.raises(ConfigError, match="without API keys"):
        config.check_listen("0.0.0.0")


def test_plain_keys_are_refused_in_configs() -> None:
    with pytest.raises(ConfigError, match="sha256"):
        ServiceSettings(keys=[{"name": "a", "sha256": "mr_plain_key", "users": ["a"]}])


def test_ndjson_flat_chat_is_one_scene(start: Start) -> None:
    url = start()
    answer = httpx.post(
        f"{url}/v1/read",
        headers={**auth("alice"), "Accept": "application/x-ndjson"},
        json={"scenes": CHAT, "info": {"user_id": "alice", "session_id": "s"}},
    )
    lines = [json.loads(line) for line in answer.text.splitlines()]
    assert [line.get("scene") for line in lines] == [0, None]
    assert lines[0]["items"] and lines[1]["done"] is True


@pytest.mark.parametrize(
    ("path", "why"),
    [
        ("/etc", "relative"),
        (".hidden/chat.json", "hidden"),
        ("*.json", "globs"),
        ("sub/../../x", "'..'"),
        ("link", "outside"),
    ],
)
def test_job_paths_stay_inside_the_roots(start: Start, tmp_path: Path, path: str, why: str) -> None:
    (tmp_path / "data").mkdir()
    (tmp_path / "data" / "link").symlink_to(tmp_path)
    url = start(jobs={"input_roots": ["data"]})
    refused = httpx.post(f"{url}/v1/jobs", json={"inputs": [{"path": path}]}, headers=auth("admin"))
    assert why in problem(refused, 403)["detail"]


def test_jobs_off_without_roots(start: Start) -> None:
    url = start()
    off = httpx.post(f"{url}/v1/jobs", json={"inputs": [{"path": "x"}]}, headers=auth("admin"))
    assert problem(off, 403)["type"].endswith("jobs-disabled")


def test_cli_key_and_serve_refusal(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    from memreader.cli import main
    from memreader.service.keys import KeyRing, load_keys_file

    assert main(["key", "--name", "app", "--users", "alice,bob"]) == 0
    out, err = capsys.readouterr()
    key = err.rsplit(" ", 1)[-1].strip()
    keys_file = tmp_path / "keys.yaml"
    keys_file.write_text(out)
    principal = KeyRing(load_keys_file(keys_file)).find(key)
    assert principal is not None and principal.users == {"alice", "bob"}
    assert key not in out, "the config entry holds the hash, never the key"
    config = tmp_path / "service.yaml"
    config.write_text("config: {embedder: null}\n")
    assert main(["serve", "--config", str(config), "--host", "0.0.0.0"]) == 2
    assert "without API keys" in capsys.readouterr().err


def test_categories_and_memory_files_are_walled(start: Start) -> None:
    url = start()
    assert read(url, store=True).status_code == 200
    found = httpx.get(f"{url}/v1/users/alice/categories", headers=auth("alice")).json()
    held = [c for c in found["categories"] if c["item_ids"]]
    assert held and all("[ref:" in c["summary"] for c in held)
    index = httpx.get(f"{url}/v1/users/alice/memory/index.md", headers=auth("alice"))
    assert index.status_code == 200 and index.headers["content-type"].startswith("text/markdown")
    first = held[0]["name"]
    assert f"({first}.md)" in index.text
    page = httpx.get(f"{url}/v1/users/alice/memory/{first}.md", headers=auth("alice"))
    assert page.status_code == 200 and held[0]["item_ids"][0] in page.text
    problem(httpx.get(f"{url}/v1/users/alice/memory/nothing.md", headers=auth("alice")), 404)
    problem(httpx.get(f"{url}/v1/users/alice/memory/index.md", headers=auth("bob")), 403)
    problem(httpx.get(f"{url}/v1/users/alice/categories", headers=auth("bob")), 403)


def test_memory_files_in_memus_layout_link_each_other(start: Start) -> None:
    url = start()
    assert read(url, store=True).status_code == 200
    entry = httpx.get(f"{url}/v1/users/alice/memu/memory.md", headers=auth("alice"))
    assert entry.status_code == 200 and entry.headers["content-type"].startswith("text/markdown")
    links = re.findall(r"\]\(([^)\s]+)\)", entry.text)
    assert "skill.md" in links and "index/sources.md" in links
    for link in links:  # relative links resolve under the same prefix
        page = httpx.get(f"{url}/v1/users/alice/memu/{link}", headers=auth("alice"))
        assert page.status_code == 200, link
    assert any(link.startswith("memory/") for link in links)
    problem(httpx.get(f"{url}/v1/users/alice/memu/../memory.md", headers=auth("alice")), 404)
    problem(httpx.get(f"{url}/v1/users/alice/memu/nothing.md", headers=auth("alice")), 404)
    problem(httpx.get(f"{url}/v1/users/alice/memu/memory.md", headers=auth("bob")), 403)


def test_a_new_store_gets_its_folder(start: Start, tmp_path: Path) -> None:
    url = start(config={"store": "sqlite:///new/folder/m.db"})
    assert read(url, store=True).status_code == 200
    assert (tmp_path / "new" / "folder" / "m.db").is_file()


def test_a_symlink_in_a_job_root_does_not_lead_out(start: Start, tmp_path: Path) -> None:
    data = tmp_path / "data"
    data.mkdir()
    (data / "chat.json").write_text(json.dumps([CHAT]))
    secret = tmp_path / "secret.json"
    secret.write_text(json.dumps([[{"role": "user", "content": "the vault code is 0000"}]]))
    (data / "link.json").symlink_to(secret)
    url = start(jobs={"input_roots": ["data"]})
    job_id = httpx.post(
        f"{url}/v1/jobs", json={"inputs": [{"path": "."}]}, headers=auth("alice")
    ).json()["id"]
    job = wait_for_job(url, job_id, "alice")
    assert job["status"] == "succeeded", job
    assert (job["progress"]["inputs_total"], job["summary"]["hidden"]) == (1, 1)
    hits = httpx.post(
        f"{url}/v1/memories/search",
        json={"user_id": "alice", "query": "vault code"},
        headers=auth("alice"),
    ).json()["hits"]
    assert not any("vault" in hit["memory"]["memory"] for hit in hits)

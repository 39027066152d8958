"""What the service answers, through a real server: text that cannot be encoded is a 422 naming
the field (never a 500), echoed input is capped, answers carry no absolute server paths,
``/metrics`` labels stay bounded, and every user id the store accepts works on every route."""

from __future__ import annotations

import json
import logging
from pathlib import Path
from typing import Any
from urllib.parse import quote

import httpx
import pytest

from tests.service.http_client import CHAT, Start, auth, problem, read, wait_for_job

pytestmark = pytest.mark.timeout(120)

#: JSON bodies with a lone surrogate (``\udfff``, as JSON's escape), by route and the field named.
SURROGATE_BODIES = [
    ("/v1/memories:forget", '{"user_id": "alice", "session_id": "s\\udfff"}', "session_id"),
    ("/v1/memories/search", '{"user_id": "alice", "query": "tea \\udfff"}', "query"),
    (
        "/v1/read",
        '{"scenes": [[{"role": "user", "content": "hi \\ud800"}]], '
        '"info": {"user_id": "alice", "session_id": "s1"}}',
        "scenes[0][0].content",
    ),
    (
        "/v1/read",
        '{"scenes": [], "info": {"user_id": "alice", "session_id": "s1", "k\\udc80": 1}}',
        "info.",
    ),
    ("/v1/refine", '{"items": [{"memory": "\\udfff"}]}', "items[0].memory"),
    ("/v1/jobs", '{"inputs": [{"path": "a\\udfff.json"}]}', "inputs[0].path"),
]


@pytest.mark.parametrize(("route", "body", "field"), SURROGATE_BODIES)
def test_text_that_cannot_be_encoded_is_422_naming_the_field(
    start: Start, route: str, body: str, field: str, caplog: pytest.LogCaptureFixture
) -> None:
    url = start(jobs={"input_roots": ["."]})
    headers = {**auth("alice"), "Content-Type": "application/json"}
    with caplog.at_level(logging.ERROR, logger="memreader"):
        answer = httpx.post(f"{url}{route}", content=body.encode(), headers=headers)
    found = problem(answer, 422)
    assert field in found["detail"] and "lone surrogate" in found["detail"]
    assert not [r for r in caplog.records if r.exc_info], "a traceback was logged"


def test_paths_and_queries_that_are_not_utf8_are_never_500(start: Start) -> None:
    url = start()
    bad = "%ED%BF%BF"  # the UTF-8 bytes of a lone surrogate
    for path in (
        f"/v1/memories/{bad}?user_id=alice",
        f"/v1/memories/x?user_id={bad}",
        f"/v1/users/{bad}/categories",
        f"/v1/users/alice/memory/{bad}.md",
    ):
        answer = httpx.get(f"{url}{path}", headers=auth("admin"))
        assert answer.status_code < 500, (path, answer.text)


USER_IDS = ["team/ana", "a b", "ünï çø 🎻", "50%", "x/categories", "a/memory/b", "tail/"]


def test_every_user_id_works_on_every_route(start: Start) -> None:
    url = start()
    for user in USER_IDS:
        stored = read(url, "admin", info={"user_id": user, "session_id": "s1"}, store=True)
        assert stored.status_code == 200, stored.text
        hits = httpx.post(
            f"{url}/v1/memories/search",
            json={"user_id": user, "query": "cello"},
            headers=auth("admin"),
        ).json()["hits"]
        assert hits and {h["memory"]["user_id"] for h in hits} == {user}
        memory_id = hits[0]["memory"]["id"]
        one = httpx.get(
            f"{url}/v1/memories/{memory_id}", params={"user_id": user}, headers=auth("admin")
        )
        assert one.status_code == 200, one.text
        for quoted in (quote(user, safe=""), quote(user, safe="/")):
            found = httpx.get(f"{url}/v1/users/{quoted}/categories", headers=auth("admin"))
            assert found.status_code == 200, (user, found.text)
            assert found.json()["user_id"] == user
            held = [c for c in found.json()["categories"] if c["item_ids"]]
            assert held, user
            base = f"{url}/v1/users/{quoted}/memory"
            index = httpx.get(f"{base}/index.md", headers=auth("admin"))
            assert index.status_code == 200, (user, index.text)
            page = httpx.get(f"{base}/{held[0]['name']}.md", headers=auth("admin"))
            assert page.status_code == 200 and held[0]["item_ids"][0] in page.text
    # The walls hold on the new routes: alice may not read "team/ana".
    walled = httpx.get(f"{url}/v1/users/team/ana/categories", headers=auth("alice"))
    problem(walled, 403)


def test_echoed_input_is_capped(start: Start) -> None:
    url = start()
    long_id = "x" * 10_000
    missing = problem(
        httpx.get(f"{url}/v1/memories/{long_id}?user_id=alice", headers=auth("alice")), 404
    )
    assert len(json.dumps(missing)) < 1_000 and "…" in missing["detail"]
    forbidden = problem(
        httpx.post(
            f"{url}/v1/memories/search",
            json={"user_id": "y" * 10_000, "query": "tea"},
            headers=auth("alice"),
        ),
        403,
    )
    assert len(json.dumps(forbidden)) < 1_000
    # Thousands of unknown fields, each named by a long key: a bounded problem.
    many = {f"{'k' * 300}{n}": n for n in range(2_000)}
    invalid = problem(
        httpx.post(
            f"{url}/v1/memories/search",
            json={"user_id": "alice", "query": "tea", **many},
            headers=auth("alice"),
        ),
        422,
    )
    assert len(json.dumps(invalid)) < 20_000 and len(invalid["errors"]) <= 50


def test_metrics_labels_stay_bounded(start: Start) -> None:
    url = start()
    with httpx.Client() as client:
        for n in range(40):
            client.request(f"INVENT{n}", f"{url}/healthz")
        metrics = client.get(f"{url}/metrics").text
    methods = {
        line.split('method="', 1)[1].split('"', 1)[0]
        for line in metrics.splitlines()
        if line.startswith("memreader_http_requests_total{")
    }
    assert "OTHER" in methods and len(methods) <= 8
    assert "INVENT" not in metrics


def _job(url: str, who: str = "alice") -> dict[str, Any]:
    started = httpx.post(f"{url}/v1/jobs", json={"inputs": [{"path": "."}]}, headers=auth(who))
    assert started.status_code == 202, started.text
    return wait_for_job(url, started.json()["id"], who)


def test_jobs_answer_without_server_paths(start: Start, tmp_path: Path) -> None:
    data = tmp_path / "data"
    data.mkdir()
    (data / "chat.json").write_text(json.dumps([CHAT]))
    url = start(jobs={"input_roots": ["data"]})
    job = _job(url)
    assert job["status"] == "succeeded", job
    assert str(tmp_path) not in json.dumps(job)
    assert any("chat.json" in output for output in job["summary"]["outputs"])
    # A job that fails names no server path either.
    (tmp_path / "blocker").write_text("a file where the state folder should be")
    url = start(jobs={"input_roots": ["data"], "state_dir": "blocker/state"})
    failed = _job(url)
    assert failed["status"] == "failed" and failed["problem"] is not None, failed
    assert str(tmp_path) not in json.dumps(failed)


def test_store_failures_name_no_server_path(start: Start, tmp_path: Path) -> None:
    (tmp_path / "blocker").write_text("a file where the store's folder should be")
    url = start(config={"store": "sqlite:///blocker/deeper/m.db"})
    failed = problem(read(url, store=True), 503)
    assert str(tmp_path) not in json.dumps(failed) and "m.db" in failed["detail"], failed

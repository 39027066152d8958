"""``POST /v1/context`` through a running service: the block within its budget and its parts
as JSON, the key walls search has, and 422 for a bad budget, tokenizer or query."""

from __future__ import annotations

import httpx
import pytest

from memreader.windowing.tokens import get_tokenizer
from tests.service.http_client import Start, auth, problem, read

pytestmark = pytest.mark.timeout(120)


def context(url: str, who: str, **body: object) -> httpx.Response:
    return httpx.post(f"{url}/v1/context", json=body, headers=auth(who), timeout=60)


def test_the_block_and_its_parts(start: Start) -> None:
    url = start()
    items = read(url, store=True).json()["items"][0]
    answer = context(url, "alice", user_id="alice", query="piano lessons", max_tokens=200)
    assert answer.status_code == 200, answer.text
    data = answer.json()
    shown = {"text", "tokens", "max_tokens", "tokenizer", "searched", "cold_start", "parts"}
    assert set(data) == shown and data["cold_start"] is False
    assert data["tokens"] == get_tokenizer("cl100k_base").count(data["text"]) <= 200
    assert data["max_tokens"] == 200 and data["tokenizer"] == "cl100k_base"
    assert data["text"].startswith("<memories ") and "piano lessons" in data["text"]
    by_id = {item["id"]: item["memory"] for item in items}
    assert data["parts"]
    for part in data["parts"]:
        assert by_id[part["memory_id"]][part["start"] : part["end"]] == part["text"]
        assert 0 <= part["score"] <= 1 and part["session_id"] == "s1"
        assert part["when"].startswith("2026-05-03") and part["source"].startswith("session s1")
    by_score = context(url, "alice", user_id="alice", query="cello", order="score", k=3)
    assert by_score.status_code == 200 and "cello" in by_score.json()["text"]


def test_a_key_reads_only_its_users(start: Start) -> None:
    url = start()
    read(url, "bob", store=True)
    body = {"user_id": "bob", "query": "piano", "max_tokens": 300}
    assert problem(context(url, "alice", **body), 403)["type"].endswith("forbidden-user")
    missing = httpx.post(f"{url}/v1/context", json=body)
    problem(missing, 401)
    mine = context(url, "alice", user_id="alice", query="piano", max_tokens=300)
    assert mine.status_code == 200 and mine.json()["parts"] == []  # bob's stay his
    assert "piano" in context(url, "admin", **body).json()["text"]


@pytest.mark.parametrize(
    ("body", "field"),
    [
        ({"max_tokens": 10}, "max_tokens"),
        ({"max_tokens": 10_000_000}, "max_tokens"),
        ({"max_tokens": "many"}, "max_tokens"),
        ({"query": ""}, "query"),
        ({"order": "random"}, "order"),
        ({"include_inactive": True}, "include_inactive"),
    ],
)
def test_bad_input_is_422_naming_the_field(
    start: Start, body: dict[str, object], field: str
) -> None:
    url = start()
    answer = context(url, "alice", **{"user_id": "alice", "query": "piano", **body})
    errors = problem(answer, 422)["errors"]
    assert any(error["loc"] == f"body.{field}" for error in errors), errors


def test_an_unknown_tokenizer_is_422_naming_it(start: Start) -> None:
    url = start()
    answer = context(url, "alice", user_id="alice", query="piano", tokenizer="o200k_nope")
    assert "tokenizer" in problem(answer, 422)["detail"]


def test_the_route_is_documented_and_refuses_text_that_is_not_unicode(start: Start) -> None:
    url = start()
    assert "/v1/context" in httpx.get(f"{url}/openapi.json").json()["paths"]
    body = '{"user_id": "alice", "query": "tea \\udfff"}'
    headers = {**auth("alice"), "content-type": "application/json"}
    answer = httpx.post(f"{url}/v1/context", content=body.encode(), headers=headers)
    assert "query" in problem(answer, 422)["detail"]

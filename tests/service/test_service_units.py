"""The service's parts on their own: keys, idempotency answers, per-key slots, problem
documents, the JSON of every answer, the config file, and what content over HTTP may reach
(a real URL server and a real service)."""

from __future__ import annotations

import asyncio
import json
import math
from pathlib import Path

import httpx
import pytest

from memreader.errors import (
    BlockedAddressError,
    ConfigError,
    DeadlineExceeded,
    EmbeddingError,
    InternalError,
    LLMRequiredError,
    StoreError,
)
from memreader.factory import MemReaderConfigFactory
from memreader.service import ServiceConfig, create_app, load_service_config
from memreader.service.config import ContentAccess
from memreader.service.idempotency import IdempotencyCache, KeyedRequest, StoredAnswer
from memreader.service.keys import ApiKey, KeyRing, hash_key
from memreader.service.limits import KeySlots
from memreader.service.problems import ProblemError, problem_for
from memreader.service.reading import http_reader_config
from memreader.service.state import json_body
from tests.common import HASH_EMBEDDER
from tests.http_fixtures import FetchTestServer, answer
from tests.service_server import running

pytestmark = pytest.mark.timeout(60)


def test_keys_match_by_hash_only() -> None:
    ring = KeyRing([ApiKey(name="a", sha256=hash_key("k1"), users=["u1"])])
    found = ring.find("k1")
    assert found is not None and found.name == "a" and found.only_user() == "u1"
    assert ring.find("k2") is None and ring.find("") is None
    admin = KeyRing([ApiKey(name="ops", sha256=hash_key("k"), users=["*"])]).find("k")
    assert admin is not None and admin.is_admin and admin.may_use("anyone")
    assert admin.only_user() is None


def test_idempotency_replays_refuses_and_expires() -> None:
    cache = IdempotencyCache(ttl_s=3600, max_entries=2)
    body = KeyedRequest("POST", "/v1/read", "", b"body")
    assert cache.begin("key", "k1", body) is None
    with pytest.raises(ProblemError) as running_:
        cache.begin("key", "k1", body)
    assert running_.value.status == 409
    cache.finish("key", "k1", StoredAnswer(200, b"{}", "application/json"))
    assert cache.begin("key", "k1", body) == StoredAnswer(200, b"{}", "application/json")
    # A key names one request: another body, path, query, method or route is 422.
    for other in (
        KeyedRequest("POST", "/v1/read", "", b"other body"),
        KeyedRequest("POST", "/v1/memories:forget", "", b"body"),
        KeyedRequest("POST", "/v1/read", "erase=true", b"body"),
        KeyedRequest("PUT", "/v1/read", "", b"body"),
    ):
        with pytest.raises(ProblemError) as reused:
            cache.begin("key", "k1", other)
        assert reused.value.status == 422 and "method, path, query or body" in reused.value.detail
    # Another API key with the same Idempotency-Key is another request.
    assert cache.begin("key2", "k1", body) is None
    # At most max_entries answers: the oldest went.
    assert cache.begin("key", "k2", body) is None
    assert cache.begin("key", "k1", body) is None
    with pytest.raises(ProblemError) as bad:
        cache.begin("key", "x" * 300, body)
    assert bad.value.status == 400
    # A failed first request is forgotten: the retry runs.
    cache.abandon("key", "k1")
    assert cache.begin("key", "k1", body) is None
    expired = IdempotencyCache(ttl_s=1e-9, max_entries=10)
    expired.begin("key", "k", body)
    expired.finish("key", "k", StoredAnswer(200, b"", ""))
    assert expired.begin("key", "k", body) is None


def test_an_erase_withdraws_the_kept_answers_holding_its_text() -> None:
    cache = IdempotencyCache(ttl_s=3600, max_entries=10)
    said = 'Ana said "I\'m pregnant" — tell nobody'
    for key, text in (("k1", said), ("k2", "Bob plays chess")):
        cache.begin("key", key, KeyedRequest("POST", "/v1/read", "", key.encode()))
        body = json.dumps({"items": [{"memory": text}]}, ensure_ascii=False).encode()
        cache.finish("key", key, StoredAnswer(200, body, "application/json"))
    assert cache.withdraw([said]) == 1  # found as the answer spells it (JSON-escaped)
    gone = cache.begin("key", "k1", KeyedRequest("POST", "/v1/read", "", b"k1"))
    assert gone is not None and gone.status == 410 and b"pregnant" not in gone.body
    assert json.loads(gone.body)["type"].endswith("answer-withdrawn")
    kept = cache.begin("key", "k2", KeyedRequest("POST", "/v1/read", "", b"k2"))
    assert kept is not None and kept.status == 200 and b"chess" in kept.body
    assert cache.withdraw([said]) == 0 and cache.withdraw([""]) == 0


def test_key_slots_limit_and_release() -> None:
    slots = KeySlots(2)

    async def scenario() -> None:
        async with slots.hold("a"), slots.hold("a"):
            with pytest.raises(ProblemError) as full:
                async with slots.hold("a"):
                    pass
            assert full.value.status == 429 and full.value.headers["Retry-After"] == "1"
            async with slots.hold("b"):
                assert slots.in_flight("b") == 1
        assert slots.in_flight("a") == 0
        release = slots.acquire("a")
        release()
        release()  # twice is once
        assert slots.in_flight("a") == 0

    asyncio.run(scenario())


@pytest.mark.parametrize(
    ("error", "status", "kind"),
    [
        (LLMRequiredError("no LLM"), 422, "unsupported"),
        (ConfigError("bad"), 422, "invalid-config"),
        (StoreError("locked"), 503, "store-unavailable"),
        (EmbeddingError("down"), 503, "embedder-unavailable"),
        (DeadlineExceeded("the read passed its deadline", where="before embed"), 504, "deadline"),
        (BlockedAddressError("private address", scene_index=1), 422, "invalid-input"),
        (InternalError("bug"), 500, "internal"),
        (RuntimeError("secret detail"), 500, "internal"),
    ],
)
def test_errors_map_to_problems(error: Exception, status: int, kind: str) -> None:
    problem = problem_for(error)
    body = problem.body()
    assert (body["status"], body["type"]) == (status, f"urn:memreader:problem:{kind}")
    if status == 500:
        assert "secret detail" not in body["detail"] and "bug" not in body["detail"]


def test_service_config_file(tmp_path: Path) -> None:
    (tmp_path / "keys.yaml").write_text(
        f"keys:\n  - name: app\n    sha256: {hash_key('k')}\n    users: [u1]\n"
    )
    (tmp_path / "service.yaml").write_text(
        "config:\n  embedder: null\n  store: sqlite:///m.db\n"
        "service:\n  keys_file: keys.yaml\n  port: 9000\n  jobs: {input_roots: [data]}\n"
    )
    config = load_service_config(tmp_path / "service.yaml")
    assert [key.name for key in config.keys] == ["app"]
    assert config.settings.port == 9000
    assert config.store_url == f"sqlite:///{tmp_path / 'm.db'}"
    assert config.job_roots() == [(tmp_path / "data").resolve()]
    (tmp_path / "bad.yaml").write_text(
        "service:\n  keys: [{name: a, sha256: nothex, users: [u]}]\n"
    )
    with pytest.raises(ConfigError, match="sha256"):
        load_service_config(tmp_path / "bad.yaml")
    (tmp_path / "typo.yaml").write_text("service:\n  max_requst_bytes: 10\n")
    with pytest.raises(ConfigError, match="max_requst_bytes"):
        load_service_config(tmp_path / "typo.yaml")


def test_http_reader_config_switches_off_what_content_may_reach() -> None:
    factory = MemReaderConfigFactory.from_dict(
        {
            "backend": "multimodal_struct",
            "config": {
                "embedder": None,
                "allow_local_paths": True,
                "fetch": {"allow_hosts": ["127.0.0.1"], "s3": {"allow_buckets": ["docs"]}},
            },
        }
    )
    closed = http_reader_config(factory, ContentAccess(), None).config
    assert not closed.allow_local_paths
    assert closed.fetch.allowed_schemes == [] and closed.fetch.s3.allow_buckets == []
    opened = http_reader_config(
        factory, ContentAccess(allow_local_paths=True, allow_urls=True, allow_s3=True), None
    ).config
    assert opened.allow_local_paths and opened.fetch.s3.allow_buckets == ["docs"]
    assert set(opened.fetch.allowed_schemes) == {"http", "https", "s3"}


def test_a_url_in_content_is_not_fetched_over_http(tmp_path: Path) -> None:
    with FetchTestServer() as web:
        url = web.route(
            "/notes.txt", answer(b"Emily keeps the spare key under the mat.", "text/plain")
        )
        reader_config = {
            "backend": "multimodal_struct",
            "config": {"embedder": HASH_EMBEDDER, "fetch": {"allow_hosts": ["127.0.0.1"]}},
        }
        doc = {"type": "file", "file": {"url": url, "filename": "notes.txt"}}
        info = {"user_id": "u", "session_id": "s"}
        # The library itself, as configured, fetches it (the operator allowed the host) ...
        direct = MemReaderConfigFactory.from_dict(reader_config).build()
        items = direct.get_memory([doc], type="doc", info=info)
        assert any("spare key" in item.memory for item in items[0])
        # ... but content arriving over HTTP does not reach it.
        for allow_urls, fetched in ((False, False), (True, True)):
            config = ServiceConfig(
                MemReaderConfigFactory.from_dict(reader_config), base_dir=str(tmp_path)
            )
            config.settings = config.settings.model_copy(
                update={"content": ContentAccess(allow_urls=allow_urls)}
            )
            before = web.hits["/notes.txt"]
            with running(create_app(config)) as base:
                reply = httpx.post(
                    f"{base}/v1/read",
                    json={"scenes": [doc], "type": "doc", "info": info},
                    timeout=30,
                )
            texts = " ".join(
                item["memory"] for scene in reply.json().get("items", []) for item in scene
            )
            assert ("spare key" in texts) is fetched, reply.text
            assert (web.hits["/notes.txt"] > before) is fetched, "refused before any request"


def test_json_body_escapes_text_as_json_dumps_does() -> None:
    # Every answer goes through json_body: a client (and the kept answers an erase withdraws,
    # found by their JSON-escaped text) sees strings escaped exactly as before.
    text = "".join(chr(c) for c in range(0x250)) + '"\\ \u2028\u2029 \U0001f600 Åsa\x7f'
    assert json_body(text) == json.dumps(text, ensure_ascii=False).encode("utf-8")
    data = {
        "memory": text,
        "score": {"final": 0.1 + 0.2, "tiny": 1e-05, "big": 1e16, "none": None},
        "count": 10**30,
        "passages": [{"start": 0, "end": 3, "score": -0.5}],
        "flags": [True, False],
    }
    assert json.loads(json_body(data)) == data
    assert list(json.loads(json_body(data))) == list(data)  # key order kept
    odd = json.loads(json_body({"nan": float("nan"), "inf": float("-inf")}))
    assert math.isnan(odd["nan"]) and odd["inf"] == float("-inf")  # as json.dumps writes them


def test_json_body_refuses_what_json_cannot_hold() -> None:
    with pytest.raises(ValueError, match="unknown type"):
        json_body({"memory": object()})
    with pytest.raises(ValueError, match="surrogates not allowed"):
        json_body({"memory": "tea \udfff"})

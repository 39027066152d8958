"""A request's deadline stops its work, through a real uvicorn server and a deliberately slow
embedder that counts its calls: after a 504 no more work is done, the key's slot is held until
the work stopped, nothing a client was told failed is stored, a request without a valid key is
401 before its body is read, and one key's flood of reads does not hold up another key's
searches. Counts only: every wait is a bounded timeout, never an assertion on elapsed time."""

from __future__ import annotations

import json
import os
import socket
import sqlite3
import threading
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import httpx
import pytest

from memreader import ConfigError, SimpleStructMemReader, SimpleStructMemReaderConfig
from memreader.factory import MemReaderConfigFactory
from memreader.service import ServiceConfig, ServiceSettings, create_app
from memreader.service.keys import hash_key
from memreader.stores import MemoryStore, open_store
from memreader.testing import HashEmbedder
from tests.service_server import running

pytestmark = pytest.mark.timeout(120)

KEYS = {"alice": "mr_alice_key", "bob": "mr_bob_key"}
AUTH = {who: {"Authorization": f"Bearer {key}"} for who, key in KEYS.items()}


class SlowEmbedder(HashEmbedder):
    """One text per call, each call sleeping ``pause`` seconds; counts the texts it embedded
    (thread-safe: reads run concurrently)."""

    batch_size = 1

    def __init__(self, pause: float) -> None:
        super().__init__()
        self.pause = pause
        self.lock = threading.Lock()
        self.texts = 0

    def embed(self, texts: Sequence[str]) -> list[list[float]]:
        out = []
        for text in texts:
            time.sleep(self.pause)
            with self.lock:
                self.texts += 1
            out.extend(super().embed([text]))
        return out

    def count(self) -> int:
        with self.lock:
            return self.texts


def chat(words: int, tag: str = "w") -> list[dict[str, str]]:
    return [{"role": "user", "content": " ".join(f"{tag}{n}" for n in range(words))}]


@contextmanager
def service(
    tmp_path: Path,
    *,
    reader: SimpleStructMemReader | None = None,
    store: MemoryStore | None = None,
    **settings: Any,
) -> Iterator[str]:
    keys = [
        {"name": f"{who}-app", "sha256": hash_key(key), "users": [who]} for who, key in KEYS.items()
    ]
    factory = MemReaderConfigFactory.from_dict(
        {"config": {"embedder": None, "store": "sqlite:///memories.db"}}
    )
    config = ServiceConfig(factory, ServiceSettings(keys=keys, **settings), base_dir=str(tmp_path))
    # The tokenizer and the splitter of long messages load on first use (a second or more on
    # a loaded machine): before any deadline starts, so a read's deadline is spent on its work.
    small_windows(None).get_memory([chat(300, "warm")], info={"user_id": "u", "session_id": "s"})
    with running(create_app(config, reader=reader, store=store)) as url:
        yield url


def small_windows(embedder: Any) -> SimpleStructMemReader:
    config = SimpleStructMemReaderConfig(
        embedder=None, window={"max_tokens": 64, "overlap_tokens": 8}
    )
    return SimpleStructMemReader(config, embedder=embedder)


def wait_until(condition: Any, what: str, timeout: float = 30.0) -> None:
    end = time.monotonic() + timeout
    while not condition():
        if time.monotonic() > end:
            raise AssertionError(f"timed out waiting for {what}")
        time.sleep(0.01)


def test_a_504_read_has_stopped_its_work_and_held_its_slot(tmp_path: Path) -> None:
    # Few windows to cut, each slow to embed: the deadline passes while embedding, even on a
    # loaded machine.
    embedder = SlowEmbedder(pause=0.1)
    reader = small_windows(embedder)
    body: dict[str, Any] = {"scenes": [chat(1500)], "info": {"user_id": "alice", "session_id": "s"}}
    with service(tmp_path, reader=reader, request_timeout_s=3, max_concurrent_per_key=1) as url:
        answers: dict[str, httpx.Response] = {}

        def slow_read() -> None:
            answers["slow"] = httpx.post(
                f"{url}/v1/read", json=body, headers=AUTH["alice"], timeout=60
            )

        thread = threading.Thread(target=slow_read)
        thread.start()
        wait_until(lambda: embedder.count() > 0 or "slow" in answers, "the read to embed")
        assert "slow" not in answers, answers["slow"].text
        # While its work runs the key's one slot is taken, whatever the other request is.
        busy = httpx.post(
            f"{url}/v1/memories/search",
            json={"user_id": "alice", "query": "w1", "mode": "text"},
            headers=AUTH["alice"],
        )
        assert busy.status_code == 429 and busy.headers["retry-after"] == "1"
        thread.join(60)
        answer = answers["slow"]
        assert answer.status_code == 504, answer.text
        at_answer = embedder.count()
        # The work had stopped when the 504 was sent: no text is embedded after it.
        time.sleep(0.3)
        assert embedder.count() == at_answer
        [whole] = small_windows(None).get_memory(body["scenes"], info=body["info"])
        assert 0 < at_answer < len(whole)  # stopped before the read had embedded its items

        # And the slot is free again at once: the next request is never refused 429. (On a
        # loaded CI machine the tiny search itself once passed its own 3 s deadline, a 504
        # that says nothing of the slot: a second try must then be answered.)
        def search_again() -> httpx.Response:
            return httpx.post(
                f"{url}/v1/memories/search",
                json={"user_id": "alice", "query": "w1", "mode": "text"},
                headers=AUTH["alice"],
            )

        again = search_again()
        assert again.status_code != 429, again.text
        if again.status_code == 504:
            again = search_again()
        assert again.status_code == 200, again.text
        assert "its work was stopped" in answer.json()["detail"]


def test_a_client_that_goes_away_mid_stream_stops_the_work(tmp_path: Path) -> None:
    embedder = SlowEmbedder(pause=0.02)
    reader = small_windows(embedder)
    body: dict[str, Any] = {
        "scenes": [chat(50), chat(4000)],
        "info": {"user_id": "alice", "session_id": "s"},
        "include_embeddings": False,
    }
    search = {"user_id": "alice", "query": "w1", "mode": "text"}
    with service(tmp_path, reader=reader, request_timeout_s=60, max_concurrent_per_key=1) as url:
        with httpx.stream(
            "POST",
            f"{url}/v1/read",
            json=body,
            headers={**AUTH["alice"], "Accept": "application/x-ndjson"},
            timeout=60,
        ) as response:
            lines = response.iter_lines()  # kept: a dropped iterator closes the connection
            assert json.loads(next(lines))["scene"] == 0
            first = embedder.count()
            wait_until(lambda: embedder.count() > first + 5, "the second scene to embed")
        # The client is gone: the slot comes back once the second scene's work has stopped.
        statuses = []
        for _ in range(200):
            statuses.append(
                httpx.post(f"{url}/v1/memories/search", json=search, headers=AUTH["alice"])
            )
            if statuses[-1].status_code != 429:
                break
            time.sleep(0.02)
        assert statuses[-1].status_code == 200
        stopped_at = embedder.count()
        time.sleep(0.3)
        assert embedder.count() == stopped_at  # nothing embedded after the slot came back
        [whole] = small_windows(None).get_memory([chat(4000)], info=body["info"])
        assert stopped_at < len(whole) // 2


def settled(embedder: SlowEmbedder, timeout: float = 30.0) -> None:
    """Wait (bounded) until ``embedder`` has embedded nothing for a while."""
    end = time.monotonic() + timeout
    seen = embedder.count()
    while time.monotonic() < end:
        time.sleep(0.3)
        now = embedder.count()
        if now == seen:
            return
        seen = now
    raise AssertionError("the embedder never went quiet")


def stored_ids(path: Path, user_id: str) -> set[str]:
    with sqlite3.connect(path) as conn:
        rows = conn.execute("SELECT id FROM memories WHERE user_id = ?", (user_id,)).fetchall()
    return {row[0] for row in rows}


def test_an_ndjson_read_stores_only_what_it_reported(tmp_path: Path) -> None:
    # The reader makes items without vectors; the store embeds them while writing, slowly, so
    # the deadline passes in the middle of a scene's write.
    embedder = SlowEmbedder(pause=0.01)
    db = tmp_path / "memories.db"
    store = open_store(f"sqlite:///{db}", embedder=embedder)
    reader = small_windows(None)
    scenes = [chat(400, tag=f"s{n}x") for n in range(8)]
    body = {
        "scenes": scenes,
        "info": {"user_id": "alice", "session_id": "s"},
        "store": True,
        "include_embeddings": False,
    }
    with service(tmp_path, reader=reader, store=store, request_timeout_s=1.5) as url:
        with httpx.stream(
            "POST",
            f"{url}/v1/read",
            json=body,
            headers={**AUTH["alice"], "Accept": "application/x-ndjson"},
            timeout=60,
        ) as response:
            assert response.status_code == 200
            lines = [json.loads(line) for line in response.iter_lines() if line]
        done = lines[-1]
        assert done["done"] is True
        problems = [line for line in lines[:-1] if "problem" in line]
        assert problems, "the deadline passed: some scene must be a 504 line"
        assert {line["problem"]["status"] for line in problems} == {504}
        reported = {event["memory_id"] for event in done["events"]}
        read_ok = {item["id"] for line in lines[:-1] for item in line.get("items", [])}
        settled(embedder)  # whatever work might go on behind the answer has ended
        stored = stored_ids(db, "alice")
        # Every stored row is in the answer's events, and belongs to a scene that was a success.
        assert stored <= reported, f"{len(stored - reported)} stored rows nobody was told of"
        assert stored <= read_ok
        # A second read of the same key is admitted: the slot came back with the last line.
        ok = httpx.post(
            f"{url}/v1/memories/search",
            json={"user_id": "alice", "query": "s0x1", "mode": "text"},
            headers=AUTH["alice"],
        )
        assert ok.status_code == 200


def test_max_concurrent_reads_is_checked() -> None:
    assert ServiceSettings(max_concurrent_reads=3).max_concurrent_reads == 3
    assert ServiceSettings().max_concurrent_reads is None  # the CPU count
    with pytest.raises(ConfigError, match="max_concurrent_reads"):
        ServiceSettings(max_concurrent_reads=0)


def raw_request(url: str, head: str, body: bytes, *, send_all: bool = True) -> bytes:
    """Send ``head`` and (part of) ``body`` on a raw socket; the server's first answer bytes."""
    host, port = url.removeprefix("http://").split(":")
    with socket.create_connection((host, int(port)), timeout=10) as sock:
        sock.sendall(head.encode() + b"\r\n\r\n")
        sock.sendall(body if send_all else body[:1000])
        answer = b""
        while b"\r\n\r\n" not in answer:
            chunk = sock.recv(65536)
            if not chunk:
                break
            answer += chunk
        return answer


def test_no_valid_key_is_401_before_the_body_is_read(tmp_path: Path) -> None:
    with service(tmp_path) as url:
        big = 7 * 1024 * 1024
        head = (
            "POST /v1/read HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
            f"Content-Length: {big}"
        )
        # The body is never sent whole: the answer comes while the client is still "sending".
        for auth in ("", "\r\nAuthorization: Bearer wrong-key", "\r\nAuthorization: Basic eA=="):
            answer = raw_request(url, head + auth, b"{" * big, send_all=False)
            assert answer.startswith(b"HTTP/1.1 401"), answer[:200]
            assert b"www-authenticate: bearer" in answer.lower()
        # A malformed or invalid body without a key: 401, not 400 or 422.
        for content in (b"{not json", b'{"scenes": 5}', b""):
            bad = httpx.post(
                f"{url}/v1/read", content=content, headers={"Content-Type": "application/json"}
            )
            assert bad.status_code == 401, bad.text
            assert bad.json()["type"].endswith("unauthorized")
        forget = httpx.post(f"{url}/v1/memories:forget", content=b"[")
        assert forget.status_code == 401
        # With a valid key the body is read as before: malformed is 400.
        mine = httpx.post(
            f"{url}/v1/read",
            content=b"{not json",
            headers={**AUTH["alice"], "Content-Type": "application/json"},
        )
        assert mine.status_code == 400
        # Paths no route serves stay 404, key or none; operations need no key.
        assert httpx.get(f"{url}/v1/nothing-here").status_code == 404
        assert httpx.get(f"{url}/healthz").status_code == 200


def test_one_keys_flood_of_reads_does_not_hold_up_anothers_searches(tmp_path: Path) -> None:
    embedder = SlowEmbedder(pause=0.02)
    reader = small_windows(embedder)
    # More reads than the loop's default executor has threads (min(32, CPUs + 4)), and than
    # the service's default max_concurrent_reads (the CPU count).
    flood = min(32, (os.cpu_count() or 1) + 4) + 1
    body = {"scenes": [chat(3000)], "info": {"user_id": "alice", "session_id": "s"}}
    with service(tmp_path, reader=reader, request_timeout_s=4, max_concurrent_per_key=flood) as url:
        seed = httpx.post(
            f"{url}/v1/read",
            json={"scenes": [chat(20, "b")], "info": {"user_id": "bob", "session_id": "s"}},
            headers=AUTH["bob"],
            timeout=60,
        )
        assert seed.status_code == 200
        statuses: list[int] = []
        lock = threading.Lock()

        def read() -> None:
            answer = httpx.post(f"{url}/v1/read", json=body, headers=AUTH["alice"], timeout=60)
            with lock:
                statuses.append(answer.status_code)

        threads = [threading.Thread(target=read) for _ in range(flood)]
        for thread in threads:
            thread.start()
        wait_until(lambda: embedder.count() > 0, "alice's reads to run")
        searches = []
        for n in range(5):
            hit = httpx.post(
                f"{url}/v1/memories/search",
                json={"user_id": "bob", "query": f"b{n}", "mode": "text"},
                headers=AUTH["bob"],
                timeout=60,
            )
            searches.append(hit.status_code)
        with lock:
            finished_before = len(statuses)
        for thread in threads:
            thread.join(60)
        assert searches == [200] * 5
        # Bob was answered while alice's flood was still in flight.
        assert finished_before < flood
        assert set(statuses) <= {200, 504} and 504 in statuses


def test_a_late_search_is_504_and_holds_its_slot_until_it_returned(tmp_path: Path) -> None:
    store = open_store(f"sqlite:///{tmp_path / 'memories.db'}", embedder=HashEmbedder())
    release = threading.Event()
    entered = threading.Event()
    plain_search = store.search

    def stuck_search(*args: Any, **kwargs: Any) -> Any:
        entered.set()
        release.wait(30)  # a store call cannot be stopped: the request waits for it
        return plain_search(*args, **kwargs)

    store.search = stuck_search  # type: ignore[method-assign]
    search = {"user_id": "alice", "query": "tea", "mode": "text"}
    with service(tmp_path, store=store, request_timeout_s=0.5, max_concurrent_per_key=1) as url:
        answers: list[httpx.Response] = []
        thread = threading.Thread(
            target=lambda: answers.append(
                httpx.post(f"{url}/v1/memories/search", json=search, headers=AUTH["alice"])
            )
        )
        thread.start()
        assert entered.wait(30)
        time.sleep(0.7)  # past the deadline, the call still running: the slot is still taken
        busy = httpx.post(f"{url}/v1/memories/search", json=search, headers=AUTH["alice"])
        assert busy.status_code == 429
        release.set()
        thread.join(30)
        [late] = answers
        assert late.status_code == 504
        assert "its late answer was dropped" in late.json()["detail"]
        store.search = plain_search  # type: ignore[method-assign]
        ok = httpx.post(f"{url}/v1/memories/search", json=search, headers=AUTH["alice"])
        assert ok.status_code == 200

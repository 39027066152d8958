"""What the service's HTTP tests send and check: the test keys, the example chat, a read, a
problem document, a job waited for. The ``start`` fixture (a running service) is in this
folder's conftest.py."""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

import httpx

from memreader.service.keys import hash_key

KEYS = {"alice": "mr_alice_key", "bob": "mr_bob_key", "admin": "mr_admin_key"}

CHAT = [
    {
        "role": "user",
        "content": "I moved to Lisbon and I want piano lessons.",
        "chat_time": "2026-05-03T09:12:00",
    },
    {"role": "assistant", "content": "Classical or jazz?", "chat_time": "2026-05-03T09:13:00"},
    {
        "role": "user",
        "content": "Jazz, and my sister Ana plays the cello.",
        "chat_time": "2026-05-03T09:14:00",
    },
]


def key_entries() -> list[dict[str, Any]]:
    return [
        {"name": "alice-app", "sha256": hash_key(KEYS["alice"]), "users": ["alice"]},
        {"name": "bob-app", "sha256": hash_key(KEYS["bob"]), "users": ["bob"]},
        {"name": "admin", "sha256": hash_key(KEYS["admin"]), "users": ["*"]},
    ]


def auth(who: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {KEYS[who]}"}


Start = Callable[..., str]


def read(url: str, who: str = "alice", **body: Any) -> httpx.Response:
    extra = body.pop("headers", {})
    payload = {"scenes": [CHAT], "info": {"user_id": who, "session_id": "s1"}, **body}
    headers = {**auth(who if who in KEYS else "admin"), **extra}
    return httpx.post(f"{url}/v1/read", json=payload, headers=headers, timeout=60)


def problem(response: httpx.Response, status: int) -> dict[str, Any]:
    assert response.status_code == status, response.text
    assert response.headers["content-type"].startswith("application/problem+json")
    body: dict[str, Any] = response.json()
    assert body["status"] == status and body["type"].startswith("urn:memreader:problem:")
    assert "Traceback" not in response.text
    return body


def wait_for_job(url: str, job_id: str, who: str, timeout_s: float = 60.0) -> dict[str, Any]:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        job: dict[str, Any] = httpx.get(f"{url}/v1/jobs/{job_id}", headers=auth(who)).json()
        if job["status"] not in ("running", "cancelling"):
            return job
        time.sleep(0.05)
    raise AssertionError(f"job {job_id} did not end")

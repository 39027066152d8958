"""``Idempotency-Key`` on writes: a retried request gets the first answer, and nothing is
written twice.

An answer is kept per (API key, route, ``Idempotency-Key``) with a digest of the request body,
for ``ttl_s`` seconds and at most ``max_entries`` answers (the oldest go first). A retry with
the same body gets the kept answer (header ``Idempotent-Replayed: true``); one with another
body is 422; one while the first is still running is 409 (retry later). Answers live in the
process: after a restart a retried write runs again, and the store's own idempotence (the same
items give ``NONE`` events) keeps it from writing anything twice.
"""

from __future__ import annotations

import hashlib
import threading
import time
from collections import OrderedDict
from dataclasses import dataclass

from memreader.service.problems import ProblemError

__all__ = ["IdempotencyCache", "StoredAnswer"]

MAX_KEY_CHARS = 255


@dataclass(frozen=True)
class StoredAnswer:
    """A finished request's answer, as it is replayed."""

    status: int
    body: bytes
    media_type: str


@dataclass
class _Entry:
    digest: str
    created: float
    answer: StoredAnswer | None = None


class IdempotencyCache:
    """The kept answers (thread-safe)."""

    def __init__(self, ttl_s: float, max_entries: int) -> None:
        self.ttl_s = ttl_s
        self.max_entries = max_entries
        self._entries: OrderedDict[tuple[str, str, str], _Entry] = OrderedDict()
        self._lock = threading.Lock()

    def begin(self, principal: str, route: str, key: str, body: bytes) -> StoredAnswer | None:
        """The kept answer of a retry, or ``None`` when this request is the first (it must
        then :meth:`finish` or :meth:`abandon`).

        Raises:
            ProblemError: 400 for a bad key, 422 when the key came with another body, 409
                while the first request with the key is still running.
        """
        if not key or len(key) > MAX_KEY_CHARS or not key.isprintable():
            raise ProblemError(
                400,
                "bad-idempotency-key",
                "Bad Idempotency-Key",
                f"Idempotency-Key must be 1 to {MAX_KEY_CHARS} printable characters",
            )
        digest = hashlib.sha256(body).hexdigest()
        slot = (principal, route, key)
        now = time.monotonic()
        with self._lock:
            self._expire(now)
            entry = self._entries.get(slot)
            if entry is None:
                self._entries[slot] = _Entry(digest, now)
                while len(self._entries) > self.max_entries:
                    self._entries.popitem(last=False)
                return None
            if entry.digest != digest:
                raise ProblemError(
                    422,
                    "idempotency-key-reused",
                    "Idempotency-Key reused",
                    "this Idempotency-Key was used with a different request body; use a new "
                    "key for a new request",
                )
            if entry.answer is None:
                raise ProblemError(
                    409,
                    "request-in-progress",
                    "Request in progress",
                    "the first request with this Idempotency-Key is still running; retry "
                    "when it has answered",
                    headers={"Retry-After": "1"},
                )
            return entry.answer

    def finish(self, principal: str, route: str, key: str, answer: StoredAnswer) -> None:
        """Keep ``answer`` for retries."""
        with self._lock:
            entry = self._entries.get((principal, route, key))
            if entry is not None:
                entry.answer = answer

    def abandon(self, principal: str, route: str, key: str) -> None:
        """Forget a request that failed before it changed anything, so a retry runs it."""
        with self._lock:
            entry = self._entries.get((principal, route, key))
            if entry is not None and entry.answer is None:
                del self._entries[(principal, route, key)]

    def _expire(self, now: float) -> None:
        while self._entries:
            oldest = next(iter(self._entries.values()))
            if now - oldest.created < self.ttl_s:
                return
            self._entries.popitem(last=False)
